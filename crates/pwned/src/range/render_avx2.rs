//! A range's answer written with x86-64-v3 (AVX2, BMI1 and BMI2, LZCNT),
//! where the processor has it (checked once, at run time) and AVX-512 does
//! not write the index's ranges. Two ways, both writing the same bytes as
//! the portable path:
//!
//! - [`write_lines`], four hashes at a time, for whole SHA-1 and NTLM
//!   hashes of 20 to 40 bucket bits (indexes of 2^19 hashes or more): each
//!   hash decoded as the portable loop decodes it, but not made into a
//!   [`Key`]; the four hashes' chunks go into one register each, one lane a
//!   hash, and become the words of their lines' digits there (`vpsllvq`,
//!   `vpsrlvq`); each word's bytes split into nibbles (`vpshufb`,
//!   `vpunpck*bw`) give a register holding 16 digits of two hashes, made
//!   ASCII by a table and stored as they are, 16 bytes a store.
//! - Otherwise a line at a time: the page decoded by the same loop as
//!   everywhere ([`Page::visit_within_inlined`]), compiled here with those
//!   instructions, each line's 35 (SHA-1) or 27 (NTLM) hex digits made by
//!   [`Avx2`]: the hash after its 5-digit prefix as two 64-bit words and
//!   12 bits; the words' 16 bytes widened to 16 bits (`vpmovzxbw`), the
//!   high nibble to the low byte and the low one to the high byte, then
//!   each nibble to its digit by a table (`vpshufb`), one 32-byte store;
//!   the last 12 bits the same way in an SSE register, one 4-byte store.

use std::arch::x86_64::*;
use std::mem::MaybeUninit;
use std::sync::OnceLock;

use crate::format::hash::{Key, Kind};
use crate::format::layout::Layout;
use crate::format::page::{Page, Visit};
use crate::range::render::{Digits, Lines, line_start, put_count, turned_off};

/// Whether the processor has x86-64-v3's instructions used here, and they
/// were not turned off (`SEEKLESS_NO_AVX2=1` in the environment: for
/// measuring the portable path on a processor that has them).
pub(super) fn has_avx2() -> bool {
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| {
        !turned_off("SEEKLESS_NO_AVX2")
            && std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("bmi1")
            && std::arch::is_x86_feature_detected!("bmi2")
            && std::arch::is_x86_feature_detected!("lzcnt")
            && std::arch::is_x86_feature_detected!("popcnt")
    })
}

/// AVX2 digits ([`Digits`]); made only where [`has_avx2`] says so.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Avx2(());

impl Avx2 {
    /// The digits, where the processor has what they need.
    pub(crate) fn here() -> Option<Avx2> {
        has_avx2().then_some(Avx2(()))
    }
}

/// Hex digits by a nibble (`vpshufb` reads the low 4 bits of a byte).
const HEX: [u8; 16] = *b"0123456789ABCDEF";

impl Digits for Avx2 {
    #[inline(always)]
    fn put<const SKIP: usize>(self, key: Key, out: &mut [MaybeUninit<u8>]) {
        let out = &mut out[..48];
        let (s0, s1, s2, d) = line_start::<SKIP>(key, out);
        // SAFETY: an `Avx2` exists only where the processor has AVX2
        // (SSE4.1 and SSSE3 with it); the stores write bytes d..d + 32
        // and d + 32..d + 36 of `out`, 48 bytes long.
        unsafe {
            let table = _mm_loadu_si128(HEX.as_ptr().cast());
            let low = _mm256_set1_epi16(0x0F);
            // Byte b of each 16-bit lane to (b >> 4) | (b & 15) << 8: its
            // high nibble first in memory.
            let wide = _mm256_cvtepu8_epi16(_mm_set_epi64x(
                s1.swap_bytes() as i64,
                s0.swap_bytes() as i64,
            ));
            let nibbles = _mm256_or_si256(
                _mm256_srli_epi16::<4>(wide),
                _mm256_slli_epi16::<8>(_mm256_and_si256(wide, low)),
            );
            let digits = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(table), nibbles);
            _mm256_storeu_si256(out.as_mut_ptr().add(d).cast(), digits);
            let tail = _mm_cvtepu8_epi16(_mm_cvtsi32_si128(i32::from(s2.swap_bytes())));
            let nibbles = _mm_or_si128(
                _mm_srli_epi16::<4>(tail),
                _mm_slli_epi16::<8>(_mm_and_si128(tail, _mm256_castsi256_si128(low))),
            );
            let tail = _mm_cvtsi128_si32(_mm_shuffle_epi8(table, nibbles)) as u32;
            for (slot, byte) in out[d + 32..d + 36].iter_mut().zip(tail.to_le_bytes()) {
                slot.write(byte);
            }
        }
    }
}

/// [`Page::visit_within`] compiled with x86-64-v3's instructions, `f`
/// (lines of [`Avx2`] digits, maybe behind a filter) inlined into it.
/// Callable only where [`has_avx2`] says so.
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
pub(crate) fn visit_page(
    page: &Page,
    layout: Layout,
    first: u64,
    window: std::ops::RangeInclusive<u64>,
    f: impl Visit,
) -> Option<()> {
    page.visit_within_inlined(layout, first, window, f)
}

/// [`super::render::write_range_body`] of `items` with [`Avx2`] digits.
/// Callable only where [`has_avx2`] says so.
#[cfg(any(test, feature = "test-util"))]
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
pub(super) fn write_pairs(kind: Kind, items: &[(Key, u64)], out: &mut Vec<u8>) {
    crate::range::render::push_all(Lines::with(Avx2(()), kind, out), items)
}

/// Hashes a batch of [`write_lines`]: one a 64-bit lane of a 256-bit
/// register.
const BATCH: usize = 4;

/// Whether [`write_lines`] writes the ranges of an index of `layout`:
/// whole hashes with 20 to 40 bucket bits (every index of 2^19 hashes or
/// more: a range is then whole buckets), a SHA-1 remainder in chunks of
/// 56, 56 and 8 to 28 bits, an NTLM one in chunks of 56 and 32 to 52.
pub(crate) fn batches(layout: Layout) -> bool {
    !layout.is_compact() && (20..=40).contains(&layout.h)
}

/// The shifts that make a hash's words of its bucket and chunks, for a
/// layout [`batches`] takes: the hash is bucket | c0 | c1 | c2 from the
/// top (h, 56, 56 and 48 − h bits for SHA-1; h, 56 and 72 − h for NTLM,
/// no c2), its bits 0..64 `w0`, 64..128 `w1`, 128..160 the top of `w2`.
/// A shift of 64 or more makes 0 (`vpsllvq`, `vpsrlvq`).
struct Shifts {
    bucket_up: __m256i,
    c0_down: __m256i,
    c0_up: __m256i,
    c1_down: __m256i,
    c1_up: __m256i,
}

/// Appends to `lines` the line of each hash of `page` (whose first bucket
/// is `first`) with its bucket in `window`, four at a time; `None` when
/// the page is inconsistent (a caller drops what was written then), at the
/// same hash as [`Page::visit_within`]. Callable only where [`has_avx2`]
/// says so, for a layout [`batches`] takes (any other is refused by a
/// panic).
///
/// Each hash is decoded as [`Page::visit_within`] decodes it (its bucket,
/// count and remainder chunks), but not made into a [`Key`]: the four
/// hashes' chunks go into registers, one lane a hash, and become the
/// words of the lines' digits there; each register of digits then holds
/// 16 digits of two hashes, stored as they are.
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
pub(crate) fn write_lines(
    page: &Page,
    layout: Layout,
    first: u64,
    window: std::ops::RangeInclusive<u64>,
    lines: &mut Lines,
) -> Option<()> {
    assert!(batches(layout), "batches for this layout");
    match layout.kind {
        Kind::Sha1 => write_page::<true>(page, layout, first, window, lines),
        Kind::Ntlm => write_page::<false>(page, layout, first, window, lines),
    }
}

/// [`write_lines`] for SHA-1 hashes or NTLM ones (a constant: fewer
/// registers live in the loop).
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
#[inline]
fn write_page<const SHA1: bool>(
    page: &Page,
    layout: Layout,
    first: u64,
    window: std::ops::RangeInclusive<u64>,
    lines: &mut Lines,
) -> Option<()> {
    let h = u64::from(layout.h);
    let sha1 = SHA1;
    let l = layout.l() as usize;
    // The last chunk's bits: SHA-1's third, NTLM's second.
    let (len1, len2) = if sha1 {
        (56, layout.l() - 112)
    } else {
        (layout.l() - 56, 0)
    };
    let shifts = Shifts {
        bucket_up: _mm256_set1_epi64x((64 - h) as i64),
        c0_down: _mm256_set1_epi64x((h - 8) as i64),
        c0_up: _mm256_set1_epi64x((72 - h) as i64),
        c1_down: _mm256_set1_epi64x(if sha1 { h - 16 } else { 0 } as i64),
        c1_up: _mm256_set1_epi64x(if sha1 { 80 - h } else { 64 } as i64),
    };
    let Some(at) = page.cursor(layout, first, &window)? else {
        return Some(());
    };
    let end = *window.end();
    page.with_words(|words| {
        // As `Page::visit_chunks`: three cursors side by side.
        let mut buckets = words.ones(at.bucket_at, at.buckets_end);
        let mut lengths = words.ones(at.length_at, at.upper);
        let (mut after, mut mantissa, mut low, mut j) = (at.length_at, at.mantissa, at.low, at.j);
        loop {
            let mut batch = Batch::default();
            let mut done = false;
            // Unrolled, each hash's values in registers (a loop kept them
            // in memory, read back as vectors: the stores not forwarded).
            'batch: {
                macro_rules! one {
                    ($k:literal) => {
                        if j == at.keys {
                            done = true;
                            break 'batch;
                        }
                        let bucket = first + (buckets.next()? - at.upper - j) as u64;
                        let length = lengths.next()?;
                        let e = length - after;
                        after = length + 1;
                        if e >= 64 {
                            return None;
                        }
                        if bucket > end {
                            done = true;
                            break 'batch;
                        }
                        let bits = if e <= 57 {
                            words.read57(mantissa, e as u32)
                        } else {
                            words.word(mantissa) & ((1u64 << e) - 1)
                        };
                        batch.counts[$k] = (1u64 << e) | bits;
                        batch.buckets[$k] = bucket;
                        batch.c0[$k] = words.read57(low, 56);
                        batch.c1[$k] = words.read57(low + 56, len1);
                        batch.c2[$k] = if sha1 {
                            words.read57(low + 112, len2)
                        } else {
                            0
                        };
                        batch.n = $k + 1;
                        mantissa += e;
                        low += l;
                        j += 1;
                    };
                }
                one!(0);
                one!(1);
                one!(2);
                one!(3);
            }
            if batch.n > 0 {
                write_batch(&shifts, sha1, &batch, lines);
            }
            if done {
                return Some(());
            }
        }
    })
}

/// Up to [`BATCH`] hashes decoded: their buckets, remainder chunks and
/// counts, the first `n` of each.
#[derive(Default)]
struct Batch {
    n: usize,
    buckets: [u64; BATCH],
    c0: [u64; BATCH],
    c1: [u64; BATCH],
    c2: [u64; BATCH],
    counts: [u64; BATCH],
}

/// Bytes of a line before its count: CRLF, 35 digits (SHA-1) or 27
/// (NTLM), the colon.
const fn head(sha1: bool) -> usize {
    if sha1 { 2 + 35 + 1 } else { 2 + 27 + 1 }
}

/// The lines of `batch`'s hashes.
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
#[inline]
fn write_batch(shifts: &Shifts, sha1: bool, batch: &Batch, lines: &mut Lines) {
    let v =
        |a: &[u64; BATCH]| _mm256_set_epi64x(a[3] as i64, a[2] as i64, a[1] as i64, a[0] as i64);
    let (bucket, c0, c1, c2) = (v(&batch.buckets), v(&batch.c0), v(&batch.c1), v(&batch.c2));
    // The hash's bits 0..64, 64..128 and 128..160 (at the top of w2).
    let w0 = _mm256_or_si256(
        _mm256_sllv_epi64(bucket, shifts.bucket_up),
        _mm256_srlv_epi64(c0, shifts.c0_down),
    );
    let w1 = _mm256_or_si256(
        _mm256_sllv_epi64(c0, shifts.c0_up),
        _mm256_srlv_epi64(c1, shifts.c1_down),
    );
    let w2 = _mm256_or_si256(
        _mm256_sllv_epi64(c1, shifts.c1_up),
        _mm256_slli_epi64::<32>(c2),
    );
    // The hash after its 5-digit prefix: bits 20..84, 84..148, and
    // 148..160 at the top of s2.
    let s0 = _mm256_or_si256(_mm256_slli_epi64::<20>(w0), _mm256_srli_epi64::<44>(w1));
    let s1 = _mm256_or_si256(_mm256_slli_epi64::<20>(w1), _mm256_srli_epi64::<44>(w2));
    let s2 = _mm256_slli_epi64::<20>(w2);
    // Each lane's bytes most significant first, split into nibbles, high
    // one first: digits of lanes 0 and 2 (`unpacklo`, in the two halves)
    // and of lanes 1 and 3 (`unpackhi`).
    let swap = _mm256_broadcastsi128_si256(_mm_set_epi8(
        8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7,
    ));
    // SAFETY: 16 bytes read from `HEX`, 16 bytes long.
    let table = _mm256_broadcastsi128_si256(unsafe { _mm_loadu_si128(HEX.as_ptr().cast()) });
    let low = _mm256_set1_epi8(0x0F);
    let digits = |s: __m256i| {
        let bytes = _mm256_shuffle_epi8(s, swap);
        let high = _mm256_and_si256(_mm256_srli_epi16::<4>(bytes), low);
        let low = _mm256_and_si256(bytes, low);
        (
            _mm256_shuffle_epi8(table, _mm256_unpacklo_epi8(high, low)),
            _mm256_shuffle_epi8(table, _mm256_unpackhi_epi8(high, low)),
        )
    };
    let (a0, a1) = digits(s0);
    let (b0, b1) = digits(s1);
    let (c0, c1) = if sha1 { digits(s2) } else { (a0, a1) };
    // Hash k's 16 digits of `a`, `b` or `c`: lane k / 2 of the first of
    // the pair for even k, of the second for odd k.
    let half = |pair: (__m256i, __m256i), k: usize| {
        let v = if k.is_multiple_of(2) { pair.0 } else { pair.1 };
        if k < 2 {
            _mm256_castsi256_si128(v)
        } else {
            _mm256_extracti128_si256::<1>(v)
        }
    };
    let head = head(sha1);
    let (out, first) = lines.parts();
    let room = BATCH * (head + 20) + 64;
    if out.capacity() - out.len() < room {
        out.reserve(out.len().max(64 * (head + 20)));
    }
    let spare = &mut out.spare_capacity_mut()[..room];
    let mut pos = 0;
    // Unrolled, each line's halves known when compiled.
    macro_rules! line {
        ($k:literal) => {
            if batch.n > $k {
                // The body's first line has no CRLF.
                let d = if *first {
                    *first = false;
                    0
                } else {
                    spare[pos].write(b'\r');
                    spare[pos + 1].write(b'\n');
                    2
                };
                let at = &mut spare[pos + d..pos + d + 48];
                let ptr = at.as_mut_ptr().cast::<__m128i>();
                // SAFETY: 16 bytes at each of 0, 16 and 32 of `at`, 48
                // bytes.
                unsafe {
                    _mm_storeu_si128(ptr, half((a0, a1), $k));
                    _mm_storeu_si128(ptr.byte_add(16), half((b0, b1), $k));
                    if sha1 {
                        _mm_storeu_si128(ptr.byte_add(32), half((c0, c1), $k));
                    }
                }
                let colon = pos + d + head - 3;
                spare[colon].write(b':');
                pos = colon + 1 + put_count(batch.counts[$k], &mut spare[colon + 1..colon + 25]);
            }
        };
    }
    line!(0);
    line!(1);
    line!(2);
    line!(3);
    // SAFETY: the lines written fill the first `pos` bytes of the spare
    // capacity, in order.
    unsafe { out.set_len(out.len() + pos) };
}
