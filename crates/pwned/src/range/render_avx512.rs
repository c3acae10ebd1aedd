//! A range's answer written eight hashes at a time with AVX-512: the
//! lines of whole SHA-1 hashes from a page, where the processor has
//! AVX-512 with VBMI and VBMI2 (checked once, at run time). Every other
//! index and processor takes a one-hash-at-a-time path
//! ([`Page::visit_within`] into [`Lines`], with AVX2 or portable digits);
//! all write the same bytes.
//!
//! For eight hashes at once:
//!
//! 1. their buckets and counts: the next eight ones of the buckets and of
//!    the count lengths from one `vpcompressb` of the 64 bits at each
//!    cursor, the mantissas from one 64-byte window by `vpermb` (one hash
//!    at a time where the eight do not fit so, as the cursors must);
//! 2. their remainders' three chunks from two 64-byte windows by
//!    `vpermi2b`, shifted into place;
//! 3. each hash as three big-endian words (bits 0..64, 64..128,
//!    128..160), and from them five 64-bit windows each holding the 5 to 8
//!    hex digits of one 8-byte piece of the line;
//! 4. each piece's digits picked out of its window by `vpmultishiftqb`
//!    (one nibble to a byte) and made ASCII by `vpermb` on a table; CRLF
//!    and the colon laid over;
//! 5. the five pieces of each hash brought together (a transpose) and
//!    stored as one 64-byte line, its count's digits after them.

use std::arch::x86_64::*;
use std::sync::OnceLock;

use crate::format::bits::{BYTES, Words};
use crate::format::hash::Kind;
use crate::format::layout::{CHUNK, Layout};
use crate::format::page::{Cursor, Page};
use crate::range::render::{Lines, put_count};

/// Hashes a batch.
pub(crate) const BATCH: usize = 8;

/// Bytes of a line before its count (CRLF, 35 digits, colon).
const HEAD: usize = 38;

/// Whether the processor has what [`write_lines`] needs, and it was not
/// turned off (`SEEKLESS_NO_AVX512=1` in the environment: for measuring
/// the portable path on a processor that has AVX-512).
pub(super) fn has_avx512() -> bool {
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| {
        !crate::range::render::turned_off("SEEKLESS_NO_AVX512")
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vbmi")
            && std::arch::is_x86_feature_detected!("avx512vbmi2")
            && std::arch::is_x86_feature_detected!("bmi2")
    })
}

/// Whether [`write_lines`] writes the ranges of an index of `layout`
/// here: whole SHA-1 hashes with 20 to 40 bucket bits (every index of
/// 2^19 hashes or more: a range is then whole buckets, and the remainder
/// three chunks, the last of 8 to 28 bits), on a processor with AVX-512.
pub(crate) fn usable(layout: Layout) -> bool {
    fits(layout) && has_avx512()
}

/// Whether [`write_lines`] can write the ranges of `layout`.
fn fits(layout: Layout) -> bool {
    layout.kind == Kind::Sha1 && !layout.is_compact() && (20..=40).contains(&layout.h)
}

/// The constants of a batch's lines, made once a page.
struct Shape {
    /// Bits a remainder.
    l: usize,
    /// Bit offset of hashes 0..4's remainders from the first's, and of
    /// 4..8's from the fifth's.
    offsets: __m512i,
    /// Shifts that make the hash's words of the bucket and the chunks.
    bucket_up: __m512i,
    c0_down: __m512i,
    c0_up: __m512i,
    c1_down: __m512i,
    c1_up: __m512i,
    /// Mask of a 56-bit chunk, and of the last one.
    whole: __m512i,
    last: __m512i,
}

/// Appends to `lines` the line of each hash of `page` (whose first bucket
/// is `first`) with its bucket in `window`; `None` when the page is
/// inconsistent (a caller drops what was written then). Callable only
/// where [`usable`] says so (the processor's features are this
/// function's); any other layout is refused by a panic.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vbmi2,bmi2")]
pub(crate) fn write_lines(
    page: &Page,
    layout: Layout,
    first: u64,
    window: std::ops::RangeInclusive<u64>,
    lines: &mut Lines,
) -> Option<()> {
    assert!(fits(layout), "wide lines for this layout");
    let h = u64::from(layout.h);
    let l = u64::from(layout.l());
    let last = layout.l() - 2 * CHUNK;
    let shape = Shape {
        l: layout.l() as usize,
        offsets: from_u64s([0, l, 2 * l, 3 * l, 0, l, 2 * l, 3 * l]),
        // The hash is bucket | c0 | c1 | c2 from the top, of h, 56, 56 and
        // 48 - h bits; 20 ≤ h ≤ 40, so every shift is 4 to 60.
        bucket_up: _mm512_set1_epi64((64 - h) as i64),
        c0_down: _mm512_set1_epi64((h - 8) as i64),
        c0_up: _mm512_set1_epi64((72 - h) as i64),
        c1_down: _mm512_set1_epi64((h - 16) as i64),
        c1_up: _mm512_set1_epi64((80 - h) as i64),
        whole: _mm512_set1_epi64(((1u64 << CHUNK) - 1) as i64),
        last: _mm512_set1_epi64(((1u64 << last) - 1) as i64),
    };
    let Some(mut at) = page.cursor(layout, first, &window)? else {
        return Some(());
    };
    let end = *window.end();
    page.with_words(|words| {
        while at.j < at.keys {
            let low = at.low;
            // Eight hashes by vectors where they can be taken so, else one
            // at a time.
            let (bucket, counts, n) = match vector_batch(words, &mut at, first, &shape) {
                Some(batch) => batch,
                None => scalar_batch(words, &mut at, first, &shape)?,
            };
            // Those past the window are dropped, and end the page.
            let within = _mm512_cmple_epu64_mask(bucket, _mm512_set1_epi64(end as i64));
            let n = n.min(within.trailing_ones() as usize);
            if n > 0 {
                // SAFETY: the features are this function's; the `n`
                // hashes' remainders start at `low`, one after the other.
                unsafe { write_batch(&shape, words, low, bucket, counts, n, lines) };
            }
            if n < BATCH {
                break;
            }
        }
        Some(())
    })
}

/// Positions 0 to 63, a byte each.
const IOTA: [u8; 64] = {
    let mut v = [0u8; 64];
    let mut i = 0;
    while i < 64 {
        v[i] = i as u8;
        i += 1;
    }
    v
};

/// The next eight hashes' buckets and counts, taken by vectors, and `at`
/// moved past them; `None` (and `at` as it was) where they cannot be so:
/// fewer than eight left in the page, the next eight ones of the count
/// lengths or of the buckets not within 64 bits, or a count of over 58
/// bits.
///
/// The positions of the ones in the 64 bits from each cursor come from one
/// `vpcompressb`; a count's length is the zeros before its one, its
/// mantissa where the lengths before it put it, all eight read from one
/// 64-byte window (eight mantissas of at most 57 bits are at most 57 bytes
/// after the first's byte).
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vbmi2,bmi2")]
#[inline]
fn vector_batch(
    words: &Words,
    at: &mut Cursor,
    first: u64,
    shape: &Shape,
) -> Option<(__m512i, __m512i, usize)> {
    if at.keys - at.j < BATCH {
        return None;
    }
    let (lengths, buckets) = (words.word(at.length_at), words.word(at.bucket_at));
    if lengths.count_ones() < BATCH as u32 || buckets.count_ones() < BATCH as u32 {
        return None;
    }
    let iota = from_bytes(IOTA);
    let ones = |word: u64| {
        _mm512_cvtepu8_epi64(_mm512_castsi512_si128(_mm512_maskz_compress_epi8(
            word, iota,
        )))
    };
    let (p, q) = (ones(lengths), ones(buckets));
    // Each hash's one in the lengths, and the one before it (-1 for the
    // first: the cursor stands just after the last hash's).
    let before = _mm512_mask_permutexvar_epi64(
        _mm512_set1_epi64(-1),
        0xFE,
        from_u64s([0, 0, 1, 2, 3, 4, 5, 6]),
        p,
    );
    let lanes = from_u64s([0, 1, 2, 3, 4, 5, 6, 7]);
    let e = _mm512_sub_epi64(_mm512_sub_epi64(p, before), _mm512_set1_epi64(1));
    if _mm512_cmpgt_epu64_mask(e, _mm512_set1_epi64(57)) != 0 {
        return None;
    }
    // Hash k's mantissa: after the lengths of those before it, the ones
    // before its one's predecessor less their number.
    let mantissa = _mm512_sub_epi64(
        _mm512_add_epi64(_mm512_set1_epi64(at.mantissa as i64 + 1), before),
        lanes,
    );
    let from = at.mantissa / 8;
    let byte = _mm512_sub_epi64(
        _mm512_srli_epi64::<3>(mantissa),
        _mm512_set1_epi64(from as i64),
    );
    let bytes = _mm512_add_epi8(
        _mm512_shuffle_epi8(byte, from_bytes(FIRST_BYTE)),
        from_bytes(STEPS),
    );
    let raw = _mm512_permutexvar_epi8(bytes, load(words, from));
    let one = _mm512_set1_epi64(1);
    let top = _mm512_sllv_epi64(one, e);
    let bits = _mm512_and_si512(
        _mm512_srlv_epi64(raw, _mm512_and_si512(mantissa, _mm512_set1_epi64(7))),
        _mm512_sub_epi64(top, one),
    );
    let counts = _mm512_or_si512(top, bits);
    // Hash k's bucket: the zeros before its one in the buckets.
    let zeros = first + (at.bucket_at - at.upper - at.j) as u64;
    let bucket = _mm512_sub_epi64(_mm512_add_epi64(_mm512_set1_epi64(zeros as i64), q), lanes);
    // Past the eighth ones.
    let eighth = |word: u64| (1 + _pdep_u64(1 << (BATCH - 1), word).trailing_zeros()) as usize;
    let (p8, q8) = (eighth(lengths), eighth(buckets));
    at.mantissa += p8 - BATCH;
    at.length_at += p8;
    at.bucket_at += q8;
    at.low += BATCH * shape.l;
    at.j += BATCH;
    Some((bucket, counts, BATCH))
}

/// Up to eight hashes' buckets and counts taken one at a time (as
/// [`Page::visit_within`] does), and `at` moved past them; `None` when the
/// page is inconsistent.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vbmi2,bmi2")]
#[inline]
fn scalar_batch(
    words: &Words,
    at: &mut Cursor,
    first: u64,
    shape: &Shape,
) -> Option<(__m512i, __m512i, usize)> {
    let mut buckets = words.ones(at.bucket_at, at.buckets_end);
    let mut lengths = words.ones(at.length_at, at.upper);
    let (mut batch_buckets, mut counts) = ([u64::MAX; BATCH], [0u64; BATCH]);
    let mut n = 0;
    while n < BATCH && at.j < at.keys {
        let one = buckets.next()?;
        let bucket = first + (one - at.upper - at.j) as u64;
        let length = lengths.next()?;
        let e = length - at.length_at;
        if e >= 64 {
            return None;
        }
        let bits = if e <= 57 {
            words.read57(at.mantissa, e as u32)
        } else {
            words.word(at.mantissa) & ((1u64 << e) - 1)
        };
        batch_buckets[n] = bucket;
        counts[n] = (1u64 << e) | bits;
        at.bucket_at = one + 1;
        at.length_at = length + 1;
        at.mantissa += e;
        at.low += shape.l;
        at.j += 1;
        n += 1;
    }
    // Lanes past `n` are past every window (u64::MAX).
    Some((from_u64s(batch_buckets), from_u64s(counts), n))
}

/// A vector of eight `u64`s.
#[inline(always)]
fn from_u64s(values: [u64; 8]) -> __m512i {
    // SAFETY: 64 bytes are read from an array of 64 bytes; AVX-512F is
    // enabled by the only caller's caller.
    unsafe { _mm512_loadu_epi64(values.as_ptr().cast()) }
}

/// A vector of 64 bytes.
#[inline(always)]
fn from_bytes(values: [u8; 64]) -> __m512i {
    // SAFETY: as in `from_u64s`.
    unsafe { _mm512_loadu_epi64(values.as_ptr().cast()) }
}

/// `vpmultishiftqb`'s controls: for each byte of a line's 8-byte piece,
/// the bit (from the bottom of its 64-bit window) where its hex digit's
/// nibble starts. Piece 0 is CRLF and digits 5..=10 of the hash (window:
/// bits 0..64 from the top), pieces 1 to 3 digits 11..=18, 19..=26 and
/// 27..=34 (windows 32..96, 64..128, 96..160), piece 4 digits 35..=39 and
/// the colon (window 128..192). Digit `n` of a window starting at bit `w`
/// lies at `60 - (4n - w)`.
const fn controls(piece: usize) -> [u8; 8] {
    let (window, digit0, skip) = match piece {
        0 => (0, 5, 2),
        1 => (32, 11, 0),
        2 => (64, 19, 0),
        3 => (96, 27, 0),
        _ => (128, 35, 0),
    };
    let mut c = [0u8; 8];
    let mut i = skip;
    while i < 8 {
        let digit = digit0 + (i - skip) as i32;
        let at = 60 - (4 * digit - window);
        c[i] = if at >= 0 { at as u8 } else { 0 };
        i += 1;
    }
    c
}

/// [`controls`] of one piece in each of the eight lanes.
const fn lanes(piece: usize) -> [u8; 64] {
    let c = controls(piece);
    let mut v = [0u8; 64];
    let mut i = 0;
    while i < 64 {
        v[i] = c[i % 8];
        i += 1;
    }
    v
}

/// [`lanes`] of the five pieces, made when compiled.
const CONTROLS: [[u8; 64]; 5] = [lanes(0), lanes(1), lanes(2), lanes(3), lanes(4)];

/// Hex digits by a nibble in the low 4 bits of a byte (`vpermb` reads 6).
const HEX: [u8; 64] = *b"0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF";

/// Each lane's bytes 0 and 1 (piece 0's CRLF), and byte 5 (piece 4's colon).
const CRLF_BYTES: u64 = 0x0303_0303_0303_0303;
const COLON_BYTES: u64 = 0x2020_2020_2020_2020;

/// The 64 bytes of `words` from byte `at`: a remainder chunk's or a
/// mantissa's first byte, under 4090 (the stream's bytes; a remainder of
/// 120 bits or more ends in the stream, so its third chunk starts under
/// 4090 − 15 + 14), so they end under [`BYTES`].
#[target_feature(enable = "avx512f")]
#[inline]
fn load(words: &Words, at: usize) -> __m512i {
    assert!(at + 64 <= BYTES);
    // SAFETY: the 64 bytes read are under `BYTES` from the first, which
    // `Words` holds (checked above; the check is folded into the callers'
    // arithmetic where it can be).
    unsafe { _mm512_loadu_epi64(words.as_ptr().add(at).cast()) }
}

/// In each 16-byte lane, bytes 0..8 its byte 0 and bytes 8..16 its byte 8
/// (`vpshufb`: each 64-bit lane's low byte to all of its bytes).
const FIRST_BYTE: [u8; 64] = {
    let mut v = [0u8; 64];
    let mut i = 0;
    while i < 64 {
        v[i] = (i % 16 / 8 * 8) as u8;
        i += 1;
    }
    v
};

/// 0 to 7 in each 64-bit lane.
const STEPS: [u8; 64] = {
    let mut v = [0u8; 64];
    let mut i = 0;
    while i < 64 {
        v[i] = (i % 8) as u8;
        i += 1;
    }
    v
};

/// CRLF at the start of each lane.
const CRLF: [u8; 64] = {
    let mut v = [0u8; 64];
    let mut i = 0;
    while i < 64 {
        v[i] = b'\r';
        v[i + 1] = b'\n';
        i += 8;
    }
    v
};

/// Bytes 2.. of a line first, for the body's first line (no CRLF).
const SHIFT_2: [u8; 64] = {
    let mut v = [0u8; 64];
    let mut i = 0;
    while i < 62 {
        v[i] = (i + 2) as u8;
        i += 1;
    }
    v
};

/// The lines of `n` (1 to 8) hashes whose buckets and counts are the
/// first `n` lanes of `bucket` and `counts`, and whose remainders start
/// at bit `low` of `words` one after the other.
///
/// # Safety
/// The processor has the features enabled here, and `n` hashes of the
/// page do start at `low` (so that every window read lies in `words`).
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vbmi2,bmi2")]
#[inline]
unsafe fn write_batch(
    shape: &Shape,
    words: &Words,
    low: usize,
    bucket: __m512i,
    counts: __m512i,
    n: usize,
    lines: &mut Lines,
) {
    debug_assert!((1..=BATCH).contains(&n));
    // The remainders' chunks. The eight hashes' remainders lie one after
    // the other, `l` bits each: hashes 0..4 within the 64 bytes from the
    // first's byte, 4..8 within those from the fifth's (3l + 7 bits + 8
    // bytes ≤ 59 for l ≤ 140). Lane j takes the 8 bytes at its chunk's
    // first byte from these two (one `vpermi2b`), shifted by its bit
    // within that byte; a chunk's first bit is 56c bits after the
    // remainder's, so its bit within the byte is the same for all three.
    let l = shape.l;
    let (bit, bit4) = (low % 8, (low + 4 * l) % 8);
    let at = _mm512_add_epi64(
        _mm512_mask_blend_epi64(
            0xF0,
            _mm512_set1_epi64(bit as i64),
            _mm512_set1_epi64(bit4 as i64),
        ),
        shape.offsets,
    );
    let byte = _mm512_or_si512(
        _mm512_srli_epi64::<3>(at),
        from_u64s([0, 0, 0, 0, 64, 64, 64, 64]),
    );
    let bytes = _mm512_add_epi8(
        _mm512_shuffle_epi8(byte, from_bytes(FIRST_BYTE)),
        from_bytes(STEPS),
    );
    let shift = _mm512_and_si512(at, _mm512_set1_epi64(7));
    // With four hashes or fewer, the second window is never read (and
    // may lie past the stream).
    let (from, from4) = (low / 8, if n > 4 { (low + 4 * l) / 8 } else { low / 8 });
    let chunk = |c: usize, keep: __m512i| {
        let skip = 7 * c;
        let v =
            _mm512_permutex2var_epi8(load(words, from + skip), bytes, load(words, from4 + skip));
        _mm512_and_si512(_mm512_srlv_epi64(v, shift), keep)
    };
    let c0 = chunk(0, shape.whole);
    let c1 = chunk(1, shape.whole);
    let c2 = chunk(2, shape.last);
    // The hash's bits 0..64, 64..128 and 128..160 (at the top of w2).
    let w0 = _mm512_or_si512(
        _mm512_sllv_epi64(bucket, shape.bucket_up),
        _mm512_srlv_epi64(c0, shape.c0_down),
    );
    let w1 = _mm512_or_si512(
        _mm512_sllv_epi64(c0, shape.c0_up),
        _mm512_srlv_epi64(c1, shape.c1_down),
    );
    let w2 = _mm512_or_si512(
        _mm512_sllv_epi64(c1, shape.c1_up),
        _mm512_slli_epi64::<32>(c2),
    );
    let hex = from_bytes(HEX);
    let digits = |piece: usize, window: __m512i| {
        _mm512_permutexvar_epi8(
            _mm512_multishift_epi64_epi8(from_bytes(CONTROLS[piece]), window),
            hex,
        )
    };
    let p0 = _mm512_mask_mov_epi8(digits(0, w0), CRLF_BYTES, from_bytes(CRLF));
    let p1 = digits(1, _mm512_shldi_epi64::<32>(w0, w1));
    let p2 = digits(2, w1);
    let p3 = digits(3, _mm512_shldi_epi64::<32>(w1, w2));
    let p4 = _mm512_mask_mov_epi8(digits(4, w2), COLON_BYTES, from_bytes([b':'; 64]));
    // Pieces 0 and 1, and 2 and 3, of hash i side by side in lanes 2i and
    // 2i + 1 (hashes 0..4 in `lo`, 4..8 in `hi`).
    let lo01 = _mm512_permutex2var_epi64(p0, from_u64s([0, 8, 1, 9, 2, 10, 3, 11]), p1);
    let hi01 = _mm512_permutex2var_epi64(p0, from_u64s([4, 12, 5, 13, 6, 14, 7, 15]), p1);
    let lo23 = _mm512_permutex2var_epi64(p2, from_u64s([0, 8, 1, 9, 2, 10, 3, 11]), p3);
    let hi23 = _mm512_permutex2var_epi64(p2, from_u64s([4, 12, 5, 13, 6, 14, 7, 15]), p3);
    // Line i: pieces 0..4 from lane pair i of `lo`/`hi`, piece 4 from p4.
    let line = |i: usize| {
        let (a, b) = if i < 4 { (lo01, lo23) } else { (hi01, hi23) };
        let k = (i % 4) as u64;
        let four = _mm512_permutex2var_epi64(
            a,
            from_u64s([2 * k, 2 * k + 1, 8 + 2 * k, 9 + 2 * k, 0, 0, 0, 0]),
            b,
        );
        let i = i as u64;
        _mm512_permutex2var_epi64(four, from_u64s([0, 1, 2, 3, 8 + i, 0, 0, 0]), p4)
    };
    let (out, first) = lines.parts();
    let room = BATCH * (HEAD + 20) + 64;
    if out.capacity() - out.len() < room {
        out.reserve(out.len().max(64 * (HEAD + 20)));
    }
    let spare = &mut out.spare_capacity_mut()[..room];
    let mut pos = 0;
    // A line's 64 bytes, then its count's digits over the bytes after its
    // colon (a macro: as a closure called eight times, it was a call).
    macro_rules! put {
        ($v:expr, $count:expr, $head:expr) => {{
            let at = &mut spare[pos..pos + 64];
            // SAFETY: 64 bytes are written to `at`, 64 bytes of spare
            // capacity.
            unsafe { _mm512_storeu_epi64(at.as_mut_ptr().cast(), $v) };
            pos += $head + put_count($count, &mut spare[pos + $head..pos + $head + 24]);
        }};
    }
    // Count i, taken from its lane (a store of the vector read back a
    // lane at a time is not forwarded to the reads).
    macro_rules! count {
        ($i:literal) => {
            _mm_extract_epi64::<{ $i % 2 }>(_mm512_extracti32x4_epi32::<{ $i / 2 }>(counts)) as u64
        };
    }
    // The body's first line has no CRLF.
    if *first {
        *first = false;
        put!(
            _mm512_permutexvar_epi8(from_bytes(SHIFT_2), line(0)),
            count!(0),
            HEAD - 2
        );
    } else {
        put!(line(0), count!(0), HEAD);
    }
    // Unrolled, each line's permutes known when compiled.
    macro_rules! lines_from_1 {
        ($($i:literal)*) => {
            $(
                if n > $i {
                    put!(line($i), count!($i), HEAD);
                }
            )*
        };
    }
    lines_from_1!(1 2 3 4 5 6 7);
    // SAFETY: the lines written fill the first `pos` bytes of the spare
    // capacity, in order.
    unsafe { out.set_len(out.len() + pos) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::hash::Key;
    use crate::format::layout::{CONTINUED, PAGE};
    use crate::format::page::{Encoder, page_bytes};

    /// Pages of `n` SHA-1 hashes spread over `layout`'s buckets, with
    /// counts of every length (1 to 2^64 - 1) when `wide`, else mostly
    /// short ones, as in the corpus (eight lengths within 64 bits, taken by
    /// vectors), with a long one now and then.
    fn pages(layout: Layout, n: usize, seed: u64, wide: bool) -> (Vec<u8>, Vec<u64>) {
        let mut rng = seekless_testkit::Rng::xorshift64((seed) | 1);
        let mut next = || rng.next_u64();
        // About 1.5 hashes a bucket, as an index's layout makes them, from
        // a bucket near the start, the middle or the end of the space.
        let h = layout.h;
        let base = [0, 1 << (h - 1), (1 << h) - 2 * n as u64][seed as usize % 3];
        let mut keys: Vec<Key> = (0..n)
            .map(|_| {
                let bucket = base + next() % (2 * n as u64 / 3);
                Key {
                    hi: bucket << (64 - h) | next() >> h,
                    mid: next(),
                    lo: next() as u32,
                }
            })
            .collect();
        keys.sort();
        keys.dedup();
        let mut enc = Encoder::new(layout);
        for (i, &key) in keys.iter().enumerate() {
            let count = match (wide, i % 5) {
                (true, 0) => 1 + next() % 999,
                (true, 1) => 1 + next() % 100_000_000,
                (true, _) => (next() >> (next() % 64)).max(1),
                (false, _) if next().is_multiple_of(97) => (next() >> (next() % 64)).max(1),
                (false, _) => 1 + next() % 12,
            };
            enc.push(key, count);
        }
        enc.flush();
        let firsts = enc.dir.iter().map(|e| e.first & !CONTINUED).collect();
        (page_bytes(&enc.pages).to_vec(), firsts)
    }

    /// What [`Page::visit_within`] writes into [`Lines`], and what
    /// [`write_lines`] writes, from `before` on, the body's first line
    /// being the first written when `first`.
    fn both(
        page: &Page,
        layout: Layout,
        at: u64,
        window: std::ops::RangeInclusive<u64>,
        first: bool,
    ) -> [(Option<()>, Vec<u8>); 2] {
        fn start(out: &mut Vec<u8>, first: bool) -> Lines<'_> {
            let mut lines = Lines::new(Kind::Sha1, out);
            if !first {
                // A line before, as from an earlier page of the range.
                lines.push(Key::default(), 1);
            }
            lines
        }
        let mut one = b"before".to_vec();
        let lines = start(&mut one, first);
        let done_one = page.visit_within(layout, at, window.clone(), lines);
        let mut eight = b"before".to_vec();
        let mut lines = start(&mut eight, first);
        // SAFETY: called only where `wide_here` found the features.
        let done_eight = unsafe { write_lines(page, layout, at, window, &mut lines) };
        [(done_one, one), (done_eight, eight)]
    }

    /// Whether this processor writes lines eight at a time; where it does
    /// not, no index may take that path.
    fn wide_here() -> bool {
        if has_avx512() {
            return true;
        }
        assert!(!usable(Layout::whole(Kind::Sha1, 30)));
        eprintln!("no AVX-512 with VBMI and VBMI2 here: nothing to compare");
        false
    }

    #[test]
    fn lines_eight_at_a_time_are_those_one_at_a_time() {
        if !wide_here() {
            return;
        }
        for (h, wide) in [20, 21, 22, 26, 29, 30, 33, 37, 40]
            .into_iter()
            .flat_map(|h| [(h, true), (h, false)])
        {
            let layout = Layout::whole(Kind::Sha1, h);
            let (bytes, firsts) = pages(layout, 2_000, u64::from(h), wide);
            for (p, &at) in firsts.iter().enumerate() {
                let own = &bytes[p * PAGE..(p + 1) * PAGE];
                // Read in place with ones after the page, and copied.
                let mut followed = bytes[p * PAGE..].to_vec();
                followed.resize(followed.len().max(PAGE + BYTES), 0xFF);
                let last = firsts.get(p + 1).copied().unwrap_or(at + 1000);
                for page in [
                    Page::new(own, layout).unwrap(),
                    Page::with_what_follows(&followed, layout).unwrap(),
                ] {
                    let middle = at + (last - at) / 2;
                    for window in [
                        0..=u64::MAX,
                        at..=at,
                        at + 1..=middle,
                        middle..=middle + 3,
                        middle..=u64::MAX,
                        last..=u64::MAX,
                    ] {
                        for first in [true, false] {
                            let [one, eight] = both(&page, layout, at, window.clone(), first);
                            assert_eq!(one.0, Some(()));
                            assert!(
                                one == eight,
                                "h {h}, wide {wide}, page {p}, window {window:?}, first {first}:\n{}\n{}",
                                String::from_utf8_lossy(&one.1),
                                String::from_utf8_lossy(&eight.1)
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn damaged_pages_give_the_same_answer_both_ways() {
        if !wide_here() {
            return;
        }
        let layout = Layout::whole(Kind::Sha1, 24);
        let (bytes, firsts) = pages(layout, 300, 5, false);
        let good = &bytes[..PAGE];
        let mut rng = seekless_testkit::Rng::xorshift64((11) | 1);
        let mut next = || rng.next_u64();
        let mut refused = 0;
        for _ in 0..3_000 {
            let mut bad = good.to_vec();
            // Half in the first 512 bytes, where the headers and the
            // count lengths and buckets are.
            let span = if next().is_multiple_of(2) {
                512 * 8
            } else {
                PAGE * 8
            };
            for _ in 0..1 + next() % 3 {
                let at = next() as usize % span;
                bad[at / 8] ^= 1 << (at % 8);
            }
            let Some(page) = Page::new(&bad, layout) else {
                continue;
            };
            for first in [firsts[0], u64::MAX - 5_000] {
                let [one, eight] = both(&page, layout, first, 0..=u64::MAX, true);
                refused += usize::from(one.0.is_none());
                assert!(one == eight, "{:?} against {:?}", one.0, eight.0);
            }
        }
        assert!(refused >= 20, "{refused} damaged pages refused");
    }
}
