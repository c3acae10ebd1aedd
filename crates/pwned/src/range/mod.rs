//! One answer of the HIBP range API (`GET /range/{PREFIX}`): `SUFFIX:COUNT`
//! lines, checked strictly before anything of it is indexed, rendered from
//! an index's pairs, padded on request, and named by a strong validator.

#[cfg(feature = "gzip")]
pub(crate) mod gzip;
#[cfg(target_arch = "x86_64")]
pub(crate) mod render_avx512;

use crate::build::input::count_then_next;
use crate::error::{ErrorKind, Result};
use crate::format::hash::{Key, Kind, prefix_ascii};
use crate::format::page::Visit;
use crate::format::source::RANGES;

/// The largest decoded answer accepted: a real range is 30–80 KB.
pub const MAX_RANGE_BODY: usize = 8 << 20;

/// Hex digits of a range prefix.
pub const PREFIX_DIGITS: usize = 5;

/// The prefix `prefix` (below 2^20) as 5 uppercase hex digits.
pub fn prefix_hex(prefix: u32) -> String {
    format!("{prefix:05X}")
}

/// Parses one range answer for `prefix` into `out` (appended): lines
/// `SUFFIX:COUNT` with exactly 35 (NTLM: 27) hex digits in either case, a
/// decimal count, CRLF or LF between lines, suffixes strictly ascending.
/// Lines with count 0 (the padding `Add-Padding` asks for) are checked and
/// dropped. Anything else is an error naming the prefix and line, and `out`
/// is left as it was.
pub fn parse_range(kind: Kind, prefix: u32, body: &[u8], out: &mut Vec<(Key, u64)>) -> Result<()> {
    let start = out.len();
    let result = parse_into(kind, prefix, body, out);
    if result.is_err() {
        out.truncate(start);
    }
    result
}

fn parse_into(kind: Kind, prefix: u32, body: &[u8], out: &mut Vec<(Key, u64)>) -> Result<()> {
    if prefix >= RANGES {
        return Err(bad(prefix, 0, "prefix out of range".into()));
    }
    if body.len() > MAX_RANGE_BODY {
        return Err(bad(
            prefix,
            0,
            format!("answer of {} bytes is over {MAX_RANGE_BODY}", body.len()),
        ));
    }
    let suffix_len = kind.hex_len() - PREFIX_DIGITS;
    let digits: [u8; PREFIX_DIGITS] = prefix_hex(prefix).as_bytes().try_into().expect("5 digits");
    let ascii = prefix_ascii(&digits);
    out.reserve(body.len() / (suffix_len + 4));
    let mut previous: Option<Key> = None;
    let mut pos = 0;
    let mut number = 0u64;
    while pos < body.len() {
        number += 1;
        let (key, count, next) = match quick_line(kind, ascii, body, pos) {
            Some(line) => line,
            None => {
                strict_line(kind, ascii, body, pos).map_err(|what| bad(prefix, number, what))?
            }
        };
        pos = next;
        if previous.is_some_and(|p| p >= key) {
            return Err(bad(
                prefix,
                number,
                "suffixes are not strictly ascending".into(),
            ));
        }
        previous = Some(key);
        if count > 0 {
            out.push((key, count));
        }
    }
    Ok(())
}

fn bad(prefix: u32, line: u64, what: String) -> crate::error::Error {
    ErrorKind::BadRange {
        prefix: prefix_hex(prefix),
        line,
        what,
    }
    .into()
}

/// The line at `pos` when it has the usual shape: the suffix, `:`, 1 to 19
/// digits, then `\r\n`, `\n` or the end. `None` for anything else, which
/// [`strict_line`] then takes (and names what is wrong). Returns the hash,
/// the count and where the next line starts; `prefix` is the range's
/// prefix as [`prefix_ascii`] gives it.
#[inline]
fn quick_line(kind: Kind, prefix: u64, body: &[u8], pos: usize) -> Option<(Key, u64, usize)> {
    let suffix_len = kind.hex_len() - PREFIX_DIGITS;
    let line = body.get(pos..)?;
    if line.get(suffix_len) != Some(&b':') {
        return None;
    }
    let key = Key::from_range_hex(kind, prefix, &line[..suffix_len])?;
    // 19 digits never overflow 64 bits; longer counts go the strict way.
    let (count, next) = count_then_next(body, pos + suffix_len + 1, 19)?;
    Some((key, count, next))
}

/// The line at `pos`, checked strictly: exactly the suffix's hex digits,
/// `:`, a decimal count that fits in 64 bits, then CRLF, LF or the end.
fn strict_line(
    kind: Kind,
    prefix: u64,
    body: &[u8],
    pos: usize,
) -> std::result::Result<(Key, u64, usize), String> {
    let suffix_len = kind.hex_len() - PREFIX_DIGITS;
    let rest = &body[pos..];
    let (line, next) = match rest.iter().position(|&b| b == b'\n') {
        Some(i) => (&rest[..i], pos + i + 1),
        None => (rest, body.len()),
    };
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.len() < suffix_len + 2 || line[suffix_len] != b':' {
        return Err(format!(
            "expected {suffix_len} hex digits, ':' and a count, got {:?}",
            String::from_utf8_lossy(&line[..line.len().min(64)])
        ));
    }
    let key = Key::from_range_hex(kind, prefix, &line[..suffix_len]).ok_or("suffix is not hex")?;
    let digits = &line[suffix_len + 1..];
    let count = parse_count(digits).ok_or_else(|| {
        format!(
            "count {:?} is not a number",
            String::from_utf8_lossy(digits)
        )
    })?;
    Ok((key, count, next))
}

/// A decimal count of 1 to 20 digits that fits in 64 bits.
fn parse_count(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || digits.len() > 20 {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &d| {
        d.is_ascii_digit()
            .then(|| n.checked_mul(10)?.checked_add(u64::from(d - b'0')))?
    })
}

/// A strong validator (`ETag`) for a range, computed from its content
/// alone: the same for the same (hash, count) pairs whatever index or
/// process serves them, different when any pair differs (the first 128 bits
/// of SHA-1 over the kind and every pair, hash bytes then count as 8
/// big-endian bytes).
pub fn range_etag(kind: Kind, items: &[(Key, u64)]) -> String {
    let tag = quoted_etag(range_digest(kind, items));
    String::from_utf8(tag.to_vec()).expect("hex in quotes is ASCII")
}

/// A range digest as its `ETag` value: lowercase hex in double quotes.
pub(crate) fn quoted_etag(digest: [u8; 16]) -> [u8; 34] {
    let mut hex = Vec::with_capacity(32);
    crate::format::hash::push_hex(&digest, b"0123456789abcdef", &mut hex);
    let mut quoted = [b'"'; 34];
    quoted[1..33].copy_from_slice(&hex);
    quoted
}

/// The 128 bits [`range_etag`] writes in hex.
pub(crate) fn range_digest(kind: Kind, items: &[(Key, u64)]) -> [u8; 16] {
    use sha1::{Digest, Sha1};
    let mut sha = Sha1::new();
    sha.update([kind.hex_len() as u8]);
    let mut block = [0u8; 28 * 64];
    for chunk in items.chunks(64) {
        for (slot, &(key, count)) in block.chunks_exact_mut(28).zip(chunk) {
            slot[..20].copy_from_slice(&key.to_bytes());
            slot[20..].copy_from_slice(&count.to_be_bytes());
        }
        sha.update(&block[..28 * chunk.len()]);
    }
    let digest = sha.finalize();
    let mut tag = [0u8; 16];
    tag.copy_from_slice(&digest[..16]);
    tag
}

/// Lines a padded answer holds at least.
pub const PAD_MIN: usize = 800;
/// Extra padding lines, drawn uniformly from `0..=PAD_SPREAD`.
pub const PAD_SPREAD: usize = 200;

/// The 16 uppercase hex digits of `x`, most significant first, as two
/// words whose little-endian bytes are the digits in order (where there
/// is no SSE2 for [`put_digits`]).
#[cfg(any(test, not(target_arch = "x86_64")))]
#[inline]
fn hex16(x: u64) -> [u64; 2] {
    [hex8((x >> 32) as u32), hex8(x as u32)]
}

/// The 8 uppercase hex digits of `x`, most significant first, as the
/// little-endian bytes of the result: every nibble at once, in one 64-bit
/// register (SWAR).
#[cfg(any(test, not(target_arch = "x86_64")))]
#[inline]
fn hex8(x: u32) -> u64 {
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
const LONGEST_LINE: usize = 2 + 35 + 1 + 20;

/// Digits of `n` in decimal.
#[inline]
fn decimal_len(n: u64) -> usize {
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
fn put_line<const SKIP: usize>(
    kind: Kind,
    key: Key,
    count: u64,
    out: &mut [std::mem::MaybeUninit<u8>],
) -> usize {
    const { assert!(SKIP == PREFIX_DIGITS || SKIP == PREFIX_DIGITS - 2) };
    // Forty bytes from the hash's digit SKIP on (CRLF first when SKIP is
    // 3); past the hash's end (NTLM's 32 digits) they are overwritten by
    // the colon and the count below, or lie past the line.
    put_digits::<SKIP>(key, out);
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
fn put_digits<const SKIP: usize>(key: Key, out: &mut [std::mem::MaybeUninit<u8>]) {
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
fn put_digits<const SKIP: usize>(key: Key, out: &mut [std::mem::MaybeUninit<u8>]) {
    put_digits_in_words::<SKIP>(key, out)
}

/// [`put_digits`] in words: the hash's digits as one little-endian run
/// over words, read from digit `SKIP` on, word i of the line the top of a
/// digit word joined to the bottom of the next.
#[cfg(any(test, not(target_arch = "x86_64")))]
#[inline(always)]
fn put_digits_in_words<const SKIP: usize>(key: Key, out: &mut [std::mem::MaybeUninit<u8>]) {
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
fn decimal8(n: u32) -> (u64, usize) {
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
    out.reserve(items.len() * LONGEST_LINE + Lines::ROOM);
    let mut lines = Lines::new(kind, out);
    for &(key, count) in items {
        lines.push(key, count);
    }
}

/// A range answer's body being written line by line into a buffer (see
/// [`write_range_body`]), straight from wherever the pairs come from: an
/// index decodes into it without holding the pairs anywhere.
pub(crate) struct Lines<'a> {
    kind: Kind,
    out: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> Lines<'a> {
    /// Room a line may touch: its longest, and the whole words the last
    /// one writes past its end.
    const ROOM: usize = LONGEST_LINE + 8;

    pub(crate) fn new(kind: Kind, out: &'a mut Vec<u8>) -> Lines<'a> {
        Lines {
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

impl Visit for Lines<'_> {
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
            put_line::<PREFIX_DIGITS>(self.kind, key, count, spare)
        } else {
            put_line::<{ PREFIX_DIGITS - 2 }>(self.kind, key, count, spare)
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
pub fn range_body(kind: Kind, items: &[(Key, u64)]) -> Vec<u8> {
    let mut out = Vec::new();
    write_range_body(kind, items, &mut out);
    out
}

/// splitmix64: padding needs only unpredictable-looking suffixes (they
/// carry count 0, so whoever reads the body knows them anyway).
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The range `prefix` (the pairs `items`, sorted) with random count-0
/// pairs mixed in, as `Add-Padding: true` asks: `max(real, PAD_MIN) +
/// uniform(0..=PAD_SPREAD)` pairs in all, in hash order, none equal to a
/// real hash, so every range of the real corpus (≈ 800–1,100 hashes each)
/// answers with 800 to ~1,300 lines. `seed` picks the padding.
pub fn pad_range(items: &[(Key, u64)], kind: Kind, prefix: u32, seed: u64) -> Vec<(Key, u64)> {
    let mut state = seed;
    let spread = (splitmix(&mut state) % (PAD_SPREAD as u64 + 1)) as usize;
    let target = items.len().max(PAD_MIN) + spread;
    let wanted = target - items.len();
    let mut fake: Vec<Key> = Vec::with_capacity(wanted);
    // A clash with a real or another fake hash has probability ~2^-130 a
    // draw; the loop is bounded all the same.
    for _ in 0..8 {
        while fake.len() < wanted {
            let key = Key {
                hi: u64::from(prefix) << 44 | splitmix(&mut state) >> 20,
                mid: splitmix(&mut state),
                lo: match kind {
                    Kind::Sha1 => splitmix(&mut state) as u32,
                    Kind::Ntlm => 0,
                },
            };
            fake.push(key);
        }
        fake.sort_unstable();
        fake.dedup();
        fake.retain(|k| items.binary_search_by(|(real, _)| real.cmp(k)).is_err());
        if fake.len() == wanted {
            break;
        }
    }
    let mut out = Vec::with_capacity(items.len() + fake.len());
    let mut fake = fake.into_iter().peekable();
    for &(key, count) in items {
        while let Some(f) = fake.next_if(|f| *f < key) {
            out.push((f, 0));
        }
        out.push((key, count));
    }
    out.extend(fake.map(|f| (f, 0)));
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn padding_is_sorted_disjoint_and_sized() {
        for kind in [Kind::Sha1, Kind::Ntlm] {
            let prefix = 0x5BAA6u32;
            let real: Vec<(Key, u64)> = (0..1000u64)
                .map(|i| {
                    let key = Key {
                        hi: u64::from(prefix) << 44 | i << 20,
                        mid: i,
                        lo: 0,
                    };
                    (key, i + 1)
                })
                .collect();
            for n in [0, 1, 799, 800, 1000] {
                for seed in 0..20 {
                    let padded = pad_range(&real[..n], kind, prefix, seed);
                    assert!(padded.len() >= n.max(PAD_MIN));
                    assert!(padded.len() <= n.max(PAD_MIN) + PAD_SPREAD);
                    assert!(padded.windows(2).all(|w| w[0].0 < w[1].0));
                    assert!(padded.iter().all(|(k, _)| k.hi >> 44 == u64::from(prefix)));
                    let zeros: Vec<_> = padded.iter().filter(|(_, c)| *c == 0).collect();
                    assert_eq!(zeros.len(), padded.len() - n);
                    if kind == Kind::Ntlm {
                        assert!(padded.iter().all(|(k, _)| k.lo == 0));
                    }
                    // What the body says parses back to the real pairs.
                    let mut back = Vec::new();
                    parse_range(kind, prefix, &range_body(kind, &padded), &mut back).unwrap();
                    assert_eq!(back, real[..n]);
                }
            }
        }
    }

    #[test]
    fn hex_of_every_nibble() {
        let mut state = 7u64;
        let special = [
            0,
            u64::MAX,
            0x0123_4567_89AB_CDEF,
            0xFEDC_BA98_7654_3210,
            0x9A0F_F0A9_0909_AAAA,
        ];
        for x in special
            .into_iter()
            .chain((0..10_000).map(|_| splitmix(&mut state)))
        {
            let [a, b] = hex16(x);
            let mut got = a.to_le_bytes().to_vec();
            got.extend_from_slice(&b.to_le_bytes());
            assert_eq!(got, format!("{x:016X}").as_bytes(), "{x:x}");
            assert_eq!(
                hex8(x as u32).to_le_bytes(),
                format!("{:08X}", x as u32).as_bytes()
            );
        }
    }

    #[test]
    fn eight_digits_at_once() {
        let mut state = 3u64;
        let powers = (0..8).flat_map(|e| {
            let p = 10u32.pow(e);
            [p - 1, p, p + 1]
        });
        for n in powers
            .chain([0, 99_999_999, 10_000, 9_999, 12_345_678, 10_000_001])
            .chain((0..110_000).map(|i| {
                // Mostly any below 10^8, every eleventh a small one.
                let modulus = if i % 11 == 0 { 1_000 } else { 100_000_000 };
                (splitmix(&mut state) % modulus) as u32
            }))
        {
            let (word, len) = decimal8(n);
            let text = n.to_string();
            assert_eq!(len, text.len(), "{n}");
            assert_eq!(&word.to_le_bytes()[..len], text.as_bytes(), "{n}");
        }
    }

    #[test]
    fn decimal_lengths() {
        let mut state = 5u64;
        for n in (0..20)
            .flat_map(|e| {
                let p = 10u64.pow(e);
                [p - 1, p, p + 1]
            })
            .chain([u64::MAX, 0])
            .chain((0..10_000).map(|_| splitmix(&mut state) >> (state % 64)))
        {
            assert_eq!(decimal_len(n), n.to_string().len(), "{n}");
        }
    }

    #[test]
    fn bodies_match_a_plain_rendering() {
        let mut state = 11u64;
        for kind in [Kind::Sha1, Kind::Ntlm] {
            for n in [1, 2, 3, 100] {
                let items: Vec<(Key, u64)> = (0..n)
                    .map(|i| {
                        let key = Key {
                            hi: splitmix(&mut state),
                            mid: splitmix(&mut state),
                            lo: if kind == Kind::Sha1 {
                                splitmix(&mut state) as u32
                            } else {
                                0
                            },
                        };
                        let count = match i % 5 {
                            0 => u64::MAX,
                            1 => 1,
                            2 => 10u64.pow((splitmix(&mut state) % 20) as u32),
                            3 => splitmix(&mut state) >> (splitmix(&mut state) % 64),
                            _ => 9,
                        };
                        (key, count)
                    })
                    .collect();
                let want: Vec<String> = items
                    .iter()
                    .map(|(k, c)| {
                        let hex: String = k.to_bytes().iter().map(|b| format!("{b:02X}")).collect();
                        format!("{}:{c}", &hex[5..kind.hex_len()])
                    })
                    .collect();
                let mut out = b"before".to_vec();
                write_range_body(kind, &items, &mut out);
                assert_eq!(out, format!("before{}", want.join("\r\n")).as_bytes());
            }
        }
    }

    #[test]
    fn digits_in_registers_and_in_words_agree() {
        use std::mem::MaybeUninit;
        let mut state = 13u64;
        let keys = [
            Key {
                hi: 0,
                mid: 0,
                lo: 0,
            },
            Key {
                hi: u64::MAX,
                mid: u64::MAX,
                lo: u32::MAX,
            },
        ]
        .into_iter()
        .chain((0..5000).map(|_| Key {
            hi: splitmix(&mut state),
            mid: splitmix(&mut state),
            lo: splitmix(&mut state) as u32,
        }));
        let bytes = |out: &[MaybeUninit<u8>]| -> Vec<u8> {
            // SAFETY: both writers write all 40 bytes.
            out.iter().map(|b| unsafe { b.assume_init() }).collect()
        };
        for key in keys {
            let (mut a, mut b) = ([MaybeUninit::new(0); 40], [MaybeUninit::new(0); 40]);
            put_digits::<PREFIX_DIGITS>(key, &mut a);
            put_digits_in_words::<PREFIX_DIGITS>(key, &mut b);
            let hex: String = key.to_bytes().iter().map(|b| format!("{b:02X}")).collect();
            assert_eq!(bytes(&a)[..35], hex.as_bytes()[5..]);
            assert_eq!(bytes(&a)[..35], bytes(&b)[..35]);
            put_digits::<{ PREFIX_DIGITS - 2 }>(key, &mut a);
            put_digits_in_words::<{ PREFIX_DIGITS - 2 }>(key, &mut b);
            assert_eq!(bytes(&a)[..37], [b"\r\n", &hex.as_bytes()[5..]].concat());
            assert_eq!(bytes(&a)[..37], bytes(&b)[..37]);
        }
    }

    #[test]
    fn every_count_to_a_thousand_and_each_width_renders() {
        let key = Key {
            hi: 0x0123_4567_89AB_CDEF,
            mid: 0xFEDC_BA98_7654_3210,
            lo: 0x9A0F_F0A9,
        };
        let wide = (1..20).flat_map(|e| {
            let p = 10u64.pow(e);
            [p - 1, p, p + 1]
        });
        for kind in [Kind::Sha1, Kind::Ntlm] {
            let key = Key {
                lo: if kind == Kind::Sha1 { key.lo } else { 0 },
                ..key
            };
            let counts: Vec<u64> = (0..1100).chain(wide.clone()).chain([u64::MAX]).collect();
            let items: Vec<(Key, u64)> = counts.iter().map(|&c| (key, c)).collect();
            let hex: String = key.to_bytes().iter().map(|b| format!("{b:02X}")).collect();
            let suffix = &hex[5..kind.hex_len()];
            let want: Vec<String> = counts.iter().map(|c| format!("{suffix}:{c}")).collect();
            assert_eq!(
                String::from_utf8(range_body(kind, &items)).unwrap(),
                want.join("\r\n")
            );
        }
    }

    #[test]
    fn body_format() {
        let kind = Kind::Sha1;
        let a = Key::from_hex(kind, b"5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8").unwrap();
        let b = Key::from_hex(kind, b"5BAA6FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF").unwrap();
        assert_eq!(range_body(kind, &[]), b"");
        assert_eq!(
            range_body(kind, &[(a, 9_545_824), (b, u64::MAX)]),
            b"1E4C9B93F3F0682250B6CF8331B7EE68FD8:9545824\r\nFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF:18446744073709551615"
        );
        let n = Key::from_hex(Kind::Ntlm, b"8846F7EAEE8FB117AD06BDD830B7586C").unwrap();
        let mut out = b"kept".to_vec();
        write_range_body(Kind::Ntlm, &[(n, 1), (n, 10)], &mut out);
        assert_eq!(
            out,
            b"kept7EAEE8FB117AD06BDD830B7586C:1\r\n7EAEE8FB117AD06BDD830B7586C:10"
        );
    }

    use super::*;

    fn parse(kind: Kind, prefix: u32, body: &str) -> Result<Vec<(Key, u64)>> {
        let mut out = vec![(Key::default(), 1)];
        let result = parse_range(kind, prefix, body.as_bytes(), &mut out);
        if result.is_err() {
            assert_eq!(out.len(), 1, "nothing appended on error");
        }
        result.map(|()| out.split_off(1))
    }

    #[test]
    fn real_answers_parse() {
        let body = "003D68EB55068C33ACE09247EE4C639306B:3\r\n\
                    012C192B2F16F82EA0EB9EF18D9D539B0DD:0\r\n\
                    1E4C9B93F3F0682250B6CF8331B7EE68FD8:9545824";
        let got = parse(Kind::Sha1, 0x5BAA6, body).unwrap();
        assert_eq!(got.len(), 2, "the padding line is dropped");
        assert_eq!(
            got[1],
            (Kind::Sha1.hash_password("password"), 9_545_824),
            "prefix and suffix make the hash"
        );
        // LF, lowercase, a final newline; an empty answer.
        let lf = "003d68eb55068c33ace09247ee4c639306b:3\n1e4c9b93f3f0682250b6cf8331b7ee68fd8:1\n";
        assert_eq!(parse(Kind::Sha1, 0x5BAA6, lf).unwrap().len(), 2);
        assert_eq!(parse(Kind::Sha1, 0, "").unwrap(), []);
        let ntlm = "0000A6F3E1C0A8C8A3E6E7BB6C2:12";
        let got = parse(Kind::Ntlm, 0x8846F, ntlm).unwrap();
        assert_eq!(
            got[0].0.to_hex(Kind::Ntlm),
            "8846F0000A6F3E1C0A8C8A3E6E7BB6C2"
        );
    }

    #[test]
    fn etags_follow_the_content() {
        let a = parse(Kind::Sha1, 0x5BAA6, "1E4C9B93F3F0682250B6CF8331B7EE68FD8:3").unwrap();
        let b = parse(Kind::Sha1, 0x5BAA6, "1E4C9B93F3F0682250B6CF8331B7EE68FD8:4").unwrap();
        let tag = range_etag(Kind::Sha1, &a);
        assert_eq!(tag.len(), 34);
        assert!(tag.starts_with('"') && tag.ends_with('"'), "strong: {tag}");
        assert_eq!(tag, range_etag(Kind::Sha1, &a.clone()));
        assert_ne!(tag, range_etag(Kind::Sha1, &b), "a count changed");
        assert_ne!(tag, range_etag(Kind::Sha1, &[]));
        assert_ne!(range_etag(Kind::Sha1, &[]), range_etag(Kind::Ntlm, &[]));
        let many: Vec<(Key, u64)> = (0..200u64)
            .map(|i| {
                (
                    Key {
                        hi: i,
                        mid: 0,
                        lo: 0,
                    },
                    i + 1,
                )
            })
            .collect();
        let mut dropped = many.clone();
        dropped.remove(150);
        assert_ne!(
            range_etag(Kind::Sha1, &many),
            range_etag(Kind::Sha1, &dropped)
        );
    }

    /// `parse_range` with every line taken the strict way.
    fn strict_only(kind: Kind, prefix: u32, body: &[u8]) -> Option<Vec<(Key, u64)>> {
        let ascii = prefix_ascii(prefix_hex(prefix).as_bytes().try_into().unwrap());
        let (mut out, mut pos, mut previous) = (Vec::new(), 0, None);
        while pos < body.len() {
            let (key, count, next) = strict_line(kind, ascii, body, pos).ok()?;
            if previous.is_some_and(|p| p >= key) {
                return None;
            }
            previous = Some(key);
            if count > 0 {
                out.push((key, count));
            }
            pos = next;
        }
        Some(out)
    }

    #[test]
    fn the_quick_path_takes_exactly_what_the_strict_one_does() {
        let good = "003D68EB55068C33ACE09247EE4C639306B:3\r\n\
                    012C192B2F16F82EA0EB9EF18D9D539B0DD:0\r\n\
                    1E4C9B93F3F0682250B6CF8331B7EE68FD8:18446744073709551615\n\
                    1E4C9B93F3F0682250B6CF8331B7EE68FD9:1234567890123456789\r\n\
                    FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF:1\r";
        let inserts = b"0:9\r\naAfFgG \x80";
        let mut rng = crate::testing::rng(7);
        let mut next = || (rng() >> 33) as usize;
        for round in 0..20_000 {
            let mut body = good.as_bytes().to_vec();
            for _ in 0..1 + round % 3 {
                let at = next() % (body.len() + 1);
                match next() % 4 {
                    0 => body.insert(at, inserts[next() % inserts.len()]),
                    1 if at < body.len() => {
                        body.remove(at);
                    }
                    2 if at < body.len() => body[at] = inserts[next() % inserts.len()],
                    _ => body.truncate(at),
                }
            }
            let mut out = Vec::new();
            let quick = parse_range(Kind::Sha1, 0x5BAA6, &body, &mut out)
                .ok()
                .map(|()| out);
            assert_eq!(
                quick,
                strict_only(Kind::Sha1, 0x5BAA6, &body),
                "{:?}",
                String::from_utf8_lossy(&body)
            );
        }
    }

    #[test]
    fn malformed_answers_are_errors_with_the_line() {
        let good = "003D68EB55068C33ACE09247EE4C639306B:3";
        for (body, line) in [
            ("003D68EB55068C33ACE09247EE4C639306:3", 1),   // short
            ("003D68EB55068C33ACE09247EE4C639306BB:3", 1), // long
            ("003D68EB55068C33ACE09247EE4C639306G:3", 1),  // not hex
            ("003D68EB55068C33ACE09247EE4C639306B:", 1),   // no count
            ("003D68EB55068C33ACE09247EE4C639306B:-1", 1),
            ("003D68EB55068C33ACE09247EE4C639306B:3 ", 1),
            (
                "003D68EB55068C33ACE09247EE4C639306B:99999999999999999999",
                1,
            ),
            ("003D68EB55068C33ACE09247EE4C639306B 3", 1),
            (&format!("{good}\r\n{good}"), 2),          // duplicate
            (&format!("{good}\r\n\r\n{good}"), 2),      // blank line
            (&format!("1{}\r\n{good}", &good[1..]), 2), // descending
            ("<html>busy</html>", 1),
        ] {
            let e = parse(Kind::Sha1, 0x12345, body).unwrap_err();
            match e.kind() {
                ErrorKind::BadRange {
                    prefix, line: l, ..
                } => {
                    assert_eq!((prefix.as_str(), *l), ("12345", line), "{body:?}: {e}");
                }
                _ => panic!("{e}"),
            }
        }
        // An SHA-1 answer is not an NTLM one.
        assert!(parse(Kind::Ntlm, 1, good).is_err());
        assert!(parse(Kind::Sha1, RANGES, "").is_err());
        let huge = vec![b'0'; MAX_RANGE_BODY + 1];
        assert!(parse_range(Kind::Sha1, 1, &huge, &mut Vec::new()).is_err());
    }
}
