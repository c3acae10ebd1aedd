//! Whole-buffer gzip with libdeflate. Range answers are whole bodies of
//! tens of KB of random hex: libdeflate inflates them 1.5–1.7 times as fast
//! as a streaming inflater, and at level 1 compresses them to 54% in half
//! the time zlib-rs takes at level 1 (whose fast mode leaves random hex at
//! 96%).
// The inflating half serves `update` only; `serve` alone compresses.
#![cfg_attr(not(feature = "update"), allow(dead_code))]

use std::cell::RefCell;
use std::ptr::NonNull;

use libdeflate_sys::{
    libdeflate_alloc_compressor, libdeflate_alloc_decompressor, libdeflate_compressor,
    libdeflate_decompressor, libdeflate_free_compressor, libdeflate_free_decompressor,
    libdeflate_gzip_compress, libdeflate_gzip_compress_bound, libdeflate_gzip_decompress_ex,
    libdeflate_result_LIBDEFLATE_SUCCESS,
};

/// `data` as one gzip member, compressed at `level` (1 fastest … 12
/// smallest; 6 is zlib's default).
pub fn gzip(data: &[u8], level: u32) -> Vec<u8> {
    thread_local! {
        static COMPRESSORS: RefCell<Vec<(u32, Compressor)>> = const { RefCell::new(Vec::new()) };
    }
    let level = level.clamp(1, 12);
    COMPRESSORS.with_borrow_mut(|compressors| {
        let at = match compressors.iter().position(|(l, _)| *l == level) {
            Some(at) => at,
            None => {
                compressors.push((level, Compressor::new(level)));
                compressors.len() - 1
            }
        };
        compressors[at].1.gzip(data)
    })
}

/// The CRC-32 of `data` (gzip's checksum), by libdeflate's carry-less
/// multiplication where the CPU has it.
#[cfg(feature = "serve")]
pub(crate) fn crc32(data: &[u8]) -> u32 {
    // SAFETY: `data` is valid for its length; the call only reads it.
    unsafe { libdeflate_sys::libdeflate_crc32(0, data.as_ptr().cast(), data.len()) }
}

/// One libdeflate compressor of a level, reused by one thread.
#[derive(Debug)]
struct Compressor(NonNull<libdeflate_compressor>);

impl Compressor {
    fn new(level: u32) -> Compressor {
        // SAFETY: a level in 1..=12 (clamped by the caller) is valid; null
        // means out of memory.
        let raw = unsafe { libdeflate_alloc_compressor(level as i32) };
        Compressor(NonNull::new(raw).expect("out of memory for a gzip compressor"))
    }

    fn gzip(&mut self, data: &[u8]) -> Vec<u8> {
        // SAFETY: the compressor is alive and used by this thread alone.
        let bound = unsafe { libdeflate_gzip_compress_bound(self.0.as_ptr(), data.len()) };
        let mut out = vec![0u8; bound];
        // SAFETY: `data` is valid for its length, `out` for `bound` bytes,
        // enough for any input of this length (libdeflate's bound); the
        // compressor keeps no pointer after the call.
        let n = unsafe {
            libdeflate_gzip_compress(
                self.0.as_ptr(),
                data.as_ptr().cast(),
                data.len(),
                out.as_mut_ptr().cast(),
                out.len(),
            )
        };
        assert!(n > 0, "libdeflate's bound held no gzip member");
        out.truncate(n);
        out
    }
}

impl Drop for Compressor {
    fn drop(&mut self) {
        // SAFETY: allocated by libdeflate in `new`, freed once, here.
        unsafe { libdeflate_free_compressor(self.0.as_ptr()) }
    }
}

/// One libdeflate decompressor (about 10 KB of tables), reused call after
/// call by one thread.
#[derive(Debug)]
pub(crate) struct Inflater(NonNull<libdeflate_decompressor>);

/// A one-member gzip body inflated in one call, into a buffer of the size
/// its trailer states (at most `limit`); `None` when it is anything else.
pub(crate) fn gunzip_whole(wire: &[u8], limit: usize) -> Option<Vec<u8>> {
    thread_local! {
        static INFLATER: RefCell<Option<Inflater>> = const { RefCell::new(None) };
    }
    let size = u32::from_le_bytes(wire.get(wire.len().checked_sub(4)?..)?.try_into().ok()?);
    if size as usize > limit {
        return None;
    }
    let mut out = vec![0u8; size as usize];
    let inflated = INFLATER.with_borrow_mut(|inflater| {
        if inflater.is_none() {
            *inflater = Inflater::new();
        }
        inflater.as_mut().is_some_and(|i| i.gzip(wire, &mut out))
    });
    inflated.then_some(out)
}

impl Inflater {
    /// `None` when libdeflate cannot allocate.
    pub(crate) fn new() -> Option<Inflater> {
        // SAFETY: no arguments; a null result (out of memory) is checked.
        NonNull::new(unsafe { libdeflate_alloc_decompressor() }).map(Inflater)
    }

    /// Inflates `wire`, which must be exactly one gzip member, into `out`,
    /// which it must fill exactly. libdeflate checks the member's CRC-32
    /// and size; trailing bytes, a short or long result, or any damage
    /// give `false` (and `out` holds no meaning then).
    pub(crate) fn gzip(&mut self, wire: &[u8], out: &mut [u8]) -> bool {
        let (mut read, mut written) = (0usize, 0usize);
        // SAFETY: the decompressor is alive until `self` drops and `&mut
        // self` keeps it to this call; `wire` and `out` are valid for their
        // lengths, libdeflate reads at most `wire.len()` bytes, writes at
        // most `out.len()` bytes and the two counts, and keeps no pointer.
        let result = unsafe {
            libdeflate_gzip_decompress_ex(
                self.0.as_ptr(),
                wire.as_ptr().cast(),
                wire.len(),
                out.as_mut_ptr().cast(),
                out.len(),
                &mut read,
                &mut written,
            )
        };
        result == libdeflate_result_LIBDEFLATE_SUCCESS && read == wire.len() && written == out.len()
    }
}

impl Drop for Inflater {
    fn drop(&mut self) {
        // SAFETY: allocated by libdeflate in `new`, freed once, here.
        unsafe { libdeflate_free_decompressor(self.0.as_ptr()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_round_trips_through_both_inflaters() {
        use std::io::Read;
        for data in [&b""[..], b"x", &b"0123456789ABCDEF:12\r\n".repeat(500)] {
            for level in [0, 1, 6, 12, 99] {
                let packed = gzip(data, level);
                assert_eq!(gunzip_whole(&packed, 1 << 20).as_deref(), Some(data));
                let mut plain = Vec::new();
                flate2::read::GzDecoder::new(&packed[..])
                    .read_to_end(&mut plain)
                    .unwrap();
                assert_eq!(plain, data);
            }
        }
        let packed = gzip(&[7u8; 1000], 1);
        assert_eq!(gunzip_whole(&packed, 999), None, "over the limit");
        assert_eq!(gunzip_whole(&packed[..packed.len() - 1], 1 << 20), None);
        assert_eq!(gunzip_whole(b"", 1 << 20), None);
    }
}
