//! A range's answer written a line at a time with x86-64-v3 (AVX2, BMI1
//! and BMI2, LZCNT), where the processor has it (checked once, at run
//! time) and AVX-512 does not write the index's ranges: the page decoded
//! by the same loop as everywhere ([`Page::visit_within_inlined`]), compiled
//! here with those instructions, and each line's 35 (SHA-1) or 27 (NTLM)
//! hex digits made by one AVX2 register and one SSE register:
//!
//! 1. the hash after its 5-digit prefix as two 64-bit words and 12 bits;
//! 2. the words' 16 bytes each widened to 16 bits (`vpmovzxbw`), the high
//!    nibble to the low byte and the low nibble to the high one: 32
//!    nibbles in the line's order;
//! 3. each nibble to its digit by a table (`vpshufb`), one 32-byte store;
//!    the last 12 bits the same way in an SSE register, one 4-byte store.
//!
//! Both write the same bytes as [`super::render::Portable`]'s digits.

use std::arch::x86_64::*;
use std::mem::MaybeUninit;
use std::sync::OnceLock;

use crate::format::hash::{Key, Kind};
use crate::format::layout::Layout;
use crate::format::page::{Page, Visit};
use crate::range::PREFIX_DIGITS;
use crate::range::render::{Digits, Lines, push_all, turned_off};

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
        // The 35 digits after the prefix: 16 of `s0`, 16 of `s1`, 3 of
        // `s2`'s 12 bits (NTLM's 27: the rest is overwritten by the colon
        // and the count).
        let s0 = key.hi << 20 | key.mid >> 44;
        let s1 = key.mid << 20 | u64::from(key.lo) >> 12;
        let s2 = ((key.lo & 0xFFF) << 4) as u16;
        // Where the digits start: after CRLF, but on the body's first line.
        let d = if SKIP == PREFIX_DIGITS { 0 } else { 2 };
        if SKIP != PREFIX_DIGITS {
            out[0].write(b'\r');
            out[1].write(b'\n');
        }
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
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
pub(super) fn write_pairs(kind: Kind, items: &[(Key, u64)], out: &mut Vec<u8>) {
    push_all(Lines::with(Avx2(()), kind, out), items)
}
