//! One 4 KiB page of sorted hashes with counts: how it is packed and read
//! (docs/format-pwned.md, "Page").
//!
//! [`encode`] packs pages, [`decode`] reads them; here is what both use.

mod decode;
mod encode;
#[cfg(test)]
mod tests;

use crate::format::layout::{DIR_ENTRY, PAGE};

/// Bits of the Elias gamma code of `count` (≥ 1).
#[inline]
fn gamma_len(count: u64) -> usize {
    2 * (63 - count.leading_zeros() as usize) + 1
}

/// Bits of the unary length part of `count`'s gamma code (≥ 1).
#[inline]
fn length_bits(count: u64) -> usize {
    64 - count.leading_zeros() as usize
}

/// The 64 bits of `hi` then `lo` that start `shift` (0 to 63) bits into
/// `hi`, without a branch for a shift of 0.
#[inline(always)]
fn funnel(hi: u64, lo: u64, shift: u32) -> u64 {
    (hi << shift) | ((lo >> 1) >> (63 - shift))
}

/// Most chunks a remainder has (at most 160 bits, in chunks of [`CHUNK`](crate::format::layout::CHUNK)).
const MAX_CHUNKS: usize = 3;

/// One page's bytes, at an address aligned as direct I/O asks (its size):
/// packed pages go to the index file from the memory they were packed in.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(4096))]
pub(crate) struct PageBuf(pub [u8; PAGE]);

const _: () = assert!(std::mem::size_of::<PageBuf>() == PAGE);

/// The bytes of `pages`, back to back.
pub(crate) fn page_bytes(pages: &[PageBuf]) -> &[u8] {
    // SAFETY: a `PageBuf` is `PAGE` initialised bytes and no padding (its
    // size, asserted above, equals its alignment), so `pages` is
    // `PAGE * len` bytes in a row; the borrow is `pages`'.
    unsafe { std::slice::from_raw_parts(pages.as_ptr().cast(), std::mem::size_of_val(pages)) }
}

pub(crate) use decode::*;
pub(crate) use encode::*;

/// A page's directory entry: first bucket (with the continued flag) and checksum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DirEntry {
    pub first: u64,
    pub crc: u32,
}

/// A directory entry as stored: first bucket (with flags), checksum.
pub(crate) struct DirEntryBytes(pub [u8; DIR_ENTRY]);

impl From<DirEntry> for DirEntryBytes {
    fn from(e: DirEntry) -> Self {
        let mut b = [0u8; DIR_ENTRY];
        b[..8].copy_from_slice(&e.first.to_le_bytes());
        b[8..].copy_from_slice(&e.crc.to_le_bytes());
        DirEntryBytes(b)
    }
}

impl From<DirEntryBytes> for DirEntry {
    fn from(b: DirEntryBytes) -> Self {
        DirEntry {
            first: u64::from_le_bytes(b.0[..8].try_into().expect("8 bytes")),
            crc: u32::from_le_bytes(b.0[8..].try_into().expect("4 bytes")),
        }
    }
}
