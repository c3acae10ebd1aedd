//! Range answers rendered from an index's pairs, one line at a time
//! (SSE2 digits where there is SSE2), written as a page decodes; the
//! AVX-512 renderer ([`super::render_avx512`]) writes eight at a time
//! through the same [`put_count`], as does the AVX2 one (`render_avx2`,
//! four at a time, or a line at a time with [`Digits`] of its own); the
//! NEON one (`render_neon`) writes a line at a time with its own
//! [`Digits`]. [`super::renderer`] picks one.

use crate::format::hash::{Key, Kind};
use crate::format::page::Visit;
use crate::range::PREFIX_DIGITS;

/// The 16 uppercase hex digits of `x`, most significant first, as two
/// words whose little-endian bytes are the digits in order (where there
/// is no SSE2 for [`put_digits`]).
#[cfg(any(test, not(target_arch = "x86_64")))]
#[inline]
pub(super) fn hex16(x: u64) -> [u64; 2] {
    [hex8((x >> 32) as u32), hex8(x as u32)]
}

/// The 8 uppercase hex digits of `x`, most significant first, as the
/// little-endian bytes of the result: every nibble at once, in one 64-bit
/// register (SWAR).
#[cfg(any(test, not(target_arch = "x86_64")))]
#[inline]
pub(super) fn hex8(x: u32) -> u64 {
    const LOW: u64 = 0x000F_000F_000F_000F;
    const ONES: u64 = 0x0101_0101_0101_0101;
    // Byte i (from the top) to byte 2i (from the bottom).
    let x = u64::from(x.swap_bytes());
    let x = (x | x << 16) & 0x0000_FFFF_0000_FFFF;
    let x = (x | x << 8) & 0x00FF_00FF_00FF_00FF;
    // Each byte's high nibble first, its low nibble after it.
    let n = (x >> 4) & LOW | (x & LOW) << 8;
    // 0..=9 to '0'..='9', 10..=15 to 'A'..='F': add '0', and 7 more where
    // the nibble is above 9 (adding 6 carries into bit 4 there).
    n + 0x30 * ONES + ((n + 6 * ONES) >> 4 & ONES) * 7
}

/// The longest line: CRLF, suffix, colon, 20 digits (NTLM's is shorter).
pub(super) const LONGEST_LINE: usize = 2 + 35 + 1 + 20;

/// Digits of `n` in decimal.
#[inline]
pub(super) fn decimal_len(n: u64) -> usize {
    // From the bit length, then one comparison: 10^(digits - 1) ≤ n.
    const POWERS: [u64; 20] = {
        let mut p = [1u64; 20];
        let mut i = 1;
        while i < 20 {
            p[i] = p[i - 1] * 10;
            i += 1;
        }
        p
    };
    let bits = 64 - (n | 1).leading_zeros() as usize;
    // ⌊bits · log10(2)⌋ + 1 digits, or one fewer.
    let guess = ((bits * 1233) >> 12) + 1;
    guess - usize::from((n | 1) < POWERS[guess - 1])
}

/// How a line's hex digits are written: [`put_digits`] ([`Portable`]), or
/// by a wider instruction set. Each writes the same bytes.
pub(crate) trait Digits: Copy {
    /// Writes the first 40 bytes of `out` (48 or more) as [`put_digits`]
    /// does: the hash's hex digits from digit `SKIP` on (CRLF before them
    /// when `SKIP` is 3), and whatever after them, up to 48 bytes touched.
    fn put<const SKIP: usize>(self, key: Key, out: &mut [std::mem::MaybeUninit<u8>]);
}

/// What a [`Digits`] writer of 16 digits a register starts from: the 35
/// digits after the prefix as `s0` (16), `s1` (16) and the top 12 bits of
/// `s2` (3; NTLM's 27 end in `s1`, the rest is overwritten by the colon and
/// the count), and where they start in `out`, after the CRLF it writes
/// first unless this is the body's first line.
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code)
)]
#[inline(always)]
pub(crate) fn line_start<const SKIP: usize>(
    key: Key,
    out: &mut [std::mem::MaybeUninit<u8>],
) -> (u64, u64, u16, usize) {
    let s0 = key.hi << 20 | key.mid >> 44;
    let s1 = key.mid << 20 | u64::from(key.lo) >> 12;
    let s2 = ((key.lo & 0xFFF) << 4) as u16;
    if SKIP == PREFIX_DIGITS {
        return (s0, s1, s2, 0);
    }
    out[0].write(b'\r');
    out[1].write(b'\n');
    (s0, s1, s2, 2)
}

/// [`put_digits`]: SSE2 on x86-64, words elsewhere.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Portable;

impl Digits for Portable {
    #[inline(always)]
    fn put<const SKIP: usize>(self, key: Key, out: &mut [std::mem::MaybeUninit<u8>]) {
        put_digits::<SKIP>(key, out)
    }
}

/// Whether `name` is set in the environment to anything but empty or `0`
/// (a fast path turned off).
pub(super) fn turned_off(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty() && v != "0")
}

/// Writes one line at the start of `out` and returns its length: CRLF
/// unless it is the first (`SKIP` 3 for a line after another, 5 for the
/// first), the hex after the 5-digit prefix, the colon and the count.
/// Writes whole words, so up to [`LONGEST_LINE`] + 8 bytes may be
/// touched; the bytes past the line are left for what comes after it.
///
/// The digits go straight to `out`: building a line in a buffer and
/// copying it read each line back over the smaller stores that had just
/// made it, which the processor cannot forward (perf put half of the
/// rendering's samples on that read).
#[inline(always)]
fn put_line<const SKIP: usize, D: Digits>(
    digits: D,
    kind: Kind,
    key: Key,
    count: u64,
    out: &mut [std::mem::MaybeUninit<u8>],
) -> usize {
    const { assert!(SKIP == PREFIX_DIGITS || SKIP == PREFIX_DIGITS - 2) };
    // Forty bytes from the hash's digit SKIP on (CRLF first when SKIP is
    // 3); past the hash's end (NTLM's 32 digits) they are overwritten by
    // the colon and the count below, or lie past the line.
    digits.put::<SKIP>(key, out);
    let colon = kind.hex_len() - SKIP;
    out[colon].write(b':');
    let digits = colon + 1;
    digits + put_count(count, &mut out[digits..digits + 20])
}

/// Writes the decimal digits of `count` at the start of `out` (20 bytes
/// or more) and returns how many: whole words, so up to 8 bytes may be
/// touched, and the bytes past the digits are left for what comes after.
#[inline(always)]
pub(crate) fn put_count(count: u64, out: &mut [std::mem::MaybeUninit<u8>]) -> usize {
    if count < SMALL.len() as u64 {
        // Most counts: their digits from a table, one store.
        let entry = SMALL[count as usize];
        copy_into(&mut out[..4], &entry.to_le_bytes());
        return (entry >> 24) as usize;
    }
    if count < 100_000_000 {
        // The usual count: its digits in one word, one store.
        let (word, len) = decimal8(count as u32);
        copy_into(&mut out[..8], &word.to_le_bytes());
        return len;
    }
    let len = decimal_len(count);
    let mut n = count;
    for slot in out[..len].iter_mut().rev() {
        slot.write(b'0' + (n % 10) as u8);
        n /= 10;
    }
    len
}

/// Writes `out[..40]`: the 40 hex digits of `key` from digit `SKIP` on,
/// then whatever follows, with the first two bytes CRLF when `SKIP` is 3
/// (the prefix's last two digits make room for it). With SSE2 (every
/// x86-64): the 20 bytes' nibbles in three registers, each line three
/// stores.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn put_digits<const SKIP: usize>(key: Key, out: &mut [std::mem::MaybeUninit<u8>]) {
    use std::arch::x86_64::{
        __m128i, _mm_add_epi8, _mm_and_si128, _mm_cmpgt_epi8, _mm_cvtsi32_si128, _mm_cvtsi64_si128,
        _mm_or_si128, _mm_set1_epi8, _mm_slli_si128, _mm_srli_epi16, _mm_srli_si128,
        _mm_storel_epi64, _mm_storeu_si128, _mm_unpackhi_epi8, _mm_unpacklo_epi8,
        _mm_unpacklo_epi64,
    };
    let out = &mut out[..40];
    // SAFETY: SSE2 is part of x86-64 itself; the three stores write bytes
    // 0..16, 16..32 and 32..40 of `out`, which is 40 bytes long.
    unsafe {
        let low = _mm_set1_epi8(0x0F);
        // Bytes to their nibbles, high one first, as uppercase hex digits:
        // '0' + n, and 7 more for 'A'..='F'.
        let ascii = |n: __m128i| {
            let letters = _mm_and_si128(_mm_cmpgt_epi8(n, _mm_set1_epi8(9)), _mm_set1_epi8(7));
            _mm_add_epi8(_mm_add_epi8(n, _mm_set1_epi8(b'0' as i8)), letters)
        };
        let bytes = _mm_unpacklo_epi64(
            _mm_cvtsi64_si128(key.hi.swap_bytes() as i64),
            _mm_cvtsi64_si128(key.mid.swap_bytes() as i64),
        );
        let high = _mm_and_si128(_mm_srli_epi16::<4>(bytes), low);
        let a = ascii(_mm_unpacklo_epi8(high, _mm_and_si128(bytes, low)));
        let b = ascii(_mm_unpackhi_epi8(high, _mm_and_si128(bytes, low)));
        let last = _mm_cvtsi32_si128(key.lo.swap_bytes() as i32);
        let c = ascii(_mm_unpacklo_epi8(
            _mm_and_si128(_mm_srli_epi16::<4>(last), low),
            _mm_and_si128(last, low),
        ));
        // Digits SKIP.. of a, b, c run on: each store joins the top of one
        // register to the bottom of the next.
        let (first, second, third) = if SKIP == PREFIX_DIGITS {
            (
                _mm_or_si128(_mm_srli_si128::<5>(a), _mm_slli_si128::<11>(b)),
                _mm_or_si128(_mm_srli_si128::<5>(b), _mm_slli_si128::<11>(c)),
                _mm_srli_si128::<5>(c),
            )
        } else {
            // Digits 3 and 4 are zeroed and become CRLF.
            let crlf = _mm_cvtsi32_si128(i32::from(u16::from_le_bytes(*b"\r\n")));
            let a = _mm_slli_si128::<2>(_mm_srli_si128::<5>(a));
            (
                _mm_or_si128(_mm_or_si128(a, crlf), _mm_slli_si128::<13>(b)),
                _mm_or_si128(_mm_srli_si128::<3>(b), _mm_slli_si128::<13>(c)),
                _mm_srli_si128::<3>(c),
            )
        };
        let at = out.as_mut_ptr().cast::<__m128i>();
        _mm_storeu_si128(at, first);
        _mm_storeu_si128(at.byte_add(16), second);
        _mm_storel_epi64(at.byte_add(32), third);
    }
}

/// [`put_digits`] where there is no SSE2.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(super) fn put_digits<const SKIP: usize>(key: Key, out: &mut [std::mem::MaybeUninit<u8>]) {
    put_digits_in_words::<SKIP>(key, out)
}

/// [`put_digits`] in words: the hash's digits as one little-endian run
/// over words, read from digit `SKIP` on, word i of the line the top of a
/// digit word joined to the bottom of the next.
#[cfg(any(test, not(target_arch = "x86_64")))]
#[inline(always)]
pub(super) fn put_digits_in_words<const SKIP: usize>(
    key: Key,
    out: &mut [std::mem::MaybeUninit<u8>],
) {
    let [a, b] = hex16(key.hi);
    let [c, d] = hex16(key.mid);
    let e = hex8(key.lo);
    let digits = [a, b, c, d, e, 0];
    let shift = 8 * SKIP as u32;
    for i in 0..5 {
        let mut w = (digits[i] >> shift) | (digits[i + 1] << (64 - shift));
        if i == 0 && SKIP == PREFIX_DIGITS - 2 {
            w = (w & !0xFFFF) | u64::from(u16::from_le_bytes(*b"\r\n"));
        }
        copy_into(&mut out[8 * i..8 * i + 8], &w.to_le_bytes());
    }
}

/// The decimal digits of each number below 1,000 in the low three bytes
/// (most significant first), their number in the top one: 4 KiB, and most
/// counts of the corpus are below 1,000, where [`decimal8`] takes ~30
/// instructions.
static SMALL: [u32; 1000] = {
    let mut table = [0u32; 1000];
    let mut n = 0;
    while n < 1000 {
        let (d2, d1, d0) = ((n / 100) as u32, (n / 10 % 10) as u32, (n % 10) as u32);
        table[n] = if n >= 100 {
            (b'0' as u32 + d2) | (b'0' as u32 + d1) << 8 | (b'0' as u32 + d0) << 16 | 3 << 24
        } else if n >= 10 {
            (b'0' as u32 + d1) | (b'0' as u32 + d0) << 8 | 2 << 24
        } else {
            (b'0' as u32 + d0) | 1 << 24
        };
        n += 1;
    }
    table
};

/// The decimal digits of `n` (below 10^8) as the little-endian bytes of a
/// word, most significant first, and how many there are: all eight
/// digits are found at once (SWAR: two lanes of four digits split into
/// four of two, then eight of one, by multiplying with reciprocals), then
/// the leading zeros shifted out. No branch on the number of digits,
/// whose length varies from one line to the next unpredictably.
#[inline(always)]
pub(super) fn decimal8(n: u32) -> (u64, usize) {
    debug_assert!(n < 100_000_000);
    // Lane 0 (low half) the top four digits, lane 1 the bottom four.
    let x = u64::from(n / 10_000) | (u64::from(n % 10_000) << 32);
    // Each 32-bit lane (below 10^4) to 16-bit lanes of its hundreds and
    // its rest: x / 100 = (x * 10486) >> 20 for x below 10^4.
    let hundreds = ((x * 10_486) >> 20) & 0x0000_007F_0000_007F;
    let x = hundreds | ((x - hundreds * 100) << 16);
    // Each 16-bit lane (below 100) to bytes of its tens and its units:
    // x / 10 = (x * 103) >> 10 for x below 100.
    let tens = ((x * 103) >> 10) & 0x000F_000F_000F_000F;
    let x = tens | ((x - tens * 10) << 8);
    // The leading zero digits are the low zero bytes; a count of 0 keeps
    // its one digit.
    let zeros = ((x.trailing_zeros() / 8) as usize).min(7);
    let ascii = x + 0x3030_3030_3030_3030;
    (ascii >> (8 * zeros), 8 - zeros)
}

/// Appends a range answer's body to `out`: one `SUFFIX:COUNT` line per
/// pair (the hex after the 5-digit prefix, uppercase, decimal count),
/// joined by CRLF, no trailing newline; nothing for no pairs.
pub fn write_range_body(kind: Kind, items: &[(Key, u64)], out: &mut Vec<u8>) {
    out.reserve(items.len() * LONGEST_LINE + ROOM);
    push_all(Lines::new(kind, out), items)
}

/// Appends the line of each of `items` to `lines`.
#[inline(always)]
pub(super) fn push_all<D: Digits>(mut lines: Lines<'_, D>, items: &[(Key, u64)]) {
    for &(key, count) in items {
        lines.push(key, count);
    }
}

/// Room a line may touch: its longest, and the whole words the last one
/// writes past its end (more than [`Digits::put`]'s 48 bytes).
pub(super) const ROOM: usize = LONGEST_LINE + 8;
const _: () = assert!(ROOM >= 48);

/// A range answer's body being written line by line into a buffer (see
/// [`write_range_body`]), straight from wherever the pairs come from: an
/// index decodes into it without holding the pairs anywhere. `D` makes
/// each line's digits.
pub(crate) struct Lines<'a, D: Digits = Portable> {
    digits: D,
    kind: Kind,
    out: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> Lines<'a, Portable> {
    pub(crate) fn new(kind: Kind, out: &'a mut Vec<u8>) -> Lines<'a, Portable> {
        Lines::with(Portable, kind, out)
    }
}

impl<'a, D: Digits> Lines<'a, D> {
    /// Room a line may touch.
    const ROOM: usize = ROOM;

    /// Lines whose digits `digits` makes.
    pub(crate) fn with(digits: D, kind: Kind, out: &'a mut Vec<u8>) -> Lines<'a, D> {
        Lines {
            digits,
            kind,
            out,
            first: true,
        }
    }

    /// Appends the line of `key` and `count` (see [`Visit`]).
    #[inline(always)]
    pub(crate) fn push(&mut self, key: Key, count: u64) {
        self.pair(key, count);
    }

    /// The buffer, and whether the next line is the body's first (for a
    /// writer of many lines at once, [`crate::range::render_avx512`]).
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn parts(&mut self) -> (&mut Vec<u8>, &mut bool) {
        (self.out, &mut self.first)
    }
}

impl<D: Digits> Visit for Lines<'_, D> {
    /// Appends the line of `key` and `count`. Lines are written in place
    /// into the spare capacity (not zeroed first: that took as long as a
    /// tenth of the rendering), the length set to what was written.
    #[inline(always)]
    fn pair(&mut self, key: Key, count: u64) {
        if self.out.capacity() - self.out.len() < Self::ROOM {
            // Doubling, so a body costs a few reservations in all.
            self.out.reserve(self.out.len().max(64 * LONGEST_LINE));
        }
        let spare = &mut self.out.spare_capacity_mut()[..Self::ROOM];
        let written = if self.first {
            self.first = false;
            put_line::<PREFIX_DIGITS, D>(self.digits, self.kind, key, count, spare)
        } else {
            put_line::<{ PREFIX_DIGITS - 2 }, D>(self.digits, self.kind, key, count, spare)
        };
        // SAFETY: `put_line` wrote the first `written` bytes of the spare
        // capacity (the line's bytes up to its end, in order).
        unsafe { self.out.set_len(self.out.len() + written) };
    }
}

/// Copies `src` into `dst` (of the same length; one fixed-size copy when
/// the length is a constant).
#[inline(always)]
fn copy_into(dst: &mut [std::mem::MaybeUninit<u8>], src: &[u8]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        d.write(s);
    }
}

/// A range answer's body (see [`write_range_body`]).
#[cfg(any(test, feature = "test-util"))]
pub fn range_body(kind: Kind, items: &[(Key, u64)]) -> Vec<u8> {
    let mut out = Vec::new();
    write_range_body(kind, items, &mut out);
    out
}
