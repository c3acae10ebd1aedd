//! The usual lines of a range answer taken without a call or a loop over
//! bytes: the suffix's last 32 digits decoded in one SIMD register (AVX2 on
//! x86-64, NEON on aarch64, picked at run time), the count's digits found
//! and added up in one 64-bit word. Every line it does not take (another
//! shape, a long count, the last bytes of the body, a suffix out of order)
//! is left to the scalar path of `parse`, which then names what is wrong:
//! the two give the same pairs and the same errors on any body.

use crate::format::hash::{Key, Kind, hex8_parts};
use crate::range::PREFIX_DIGITS;

/// The bytes from a line's start that a line taken here must have in the
/// body: the suffix (at most 35 digits), `:`, the 8 bytes read for the
/// count (a count taken here has at most 7 digits) and the two after them.
pub(super) const WINDOW: usize = 48;

/// Which decoder takes the usual lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lines {
    /// None: every line goes the scalar way.
    Scalar,
    /// 32 digits in one AVX2 register.
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// 32 digits in two NEON registers.
    #[cfg(target_arch = "aarch64")]
    Neon,
}

impl Lines {
    /// The widest this processor has.
    pub(crate) fn detect() -> Lines {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            return Lines::Avx2;
        }
        #[cfg(target_arch = "aarch64")]
        if std::arch::is_aarch64_feature_detected!("neon") {
            return Lines::Neon;
        }
        Lines::Scalar
    }
}

/// Where a parse stands: the next line's start, the lines read and the
/// last suffix.
pub(super) struct Cursor {
    pub(super) pos: usize,
    pub(super) number: u64,
    pub(super) previous: Option<Key>,
}

/// Takes the usual lines from `at` on into `out` (count-0 lines dropped);
/// stops before the first one it cannot take, for the scalar path.
pub(super) fn take(
    lines: Lines,
    kind: Kind,
    prefix: u64,
    body: &[u8],
    at: &mut Cursor,
    out: &mut Vec<(Key, u64)>,
) {
    match lines {
        Lines::Scalar => {}
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Avx2` comes from `detect`, which saw AVX2.
        Lines::Avx2 => unsafe { take_avx2(kind, prefix, body, at, out) },
        #[cfg(target_arch = "aarch64")]
        // SAFETY: `Neon` comes from `detect`, which saw NEON.
        Lines::Neon => unsafe { take_neon(kind, prefix, body, at, out) },
    }
}

/// [`take`] with AVX2's decoder.
///
/// # Safety
///
/// The processor must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn take_avx2(
    kind: Kind,
    prefix: u64,
    body: &[u8],
    at: &mut Cursor,
    out: &mut Vec<(Key, u64)>,
) {
    take_with(kind, prefix, body, at, out, |digits, care| {
        let (hi, mid, digit) = crate::format::hash::hex32_avx2_lanes(digits);
        (hi, mid, digit & care == care)
    });
}

/// [`take`] with NEON's decoder.
///
/// # Safety
///
/// The processor must have NEON.
#[cfg(target_arch = "aarch64")]
#[target_feature(enable = "neon")]
unsafe fn take_neon(
    kind: Kind,
    prefix: u64,
    body: &[u8],
    at: &mut Cursor,
    out: &mut Vec<(Key, u64)>,
) {
    take_with(kind, prefix, body, at, out, |digits, care| {
        hex32_neon(digits, care)
    });
}

/// Decodes 32 hex digits (either case) in two NEON registers: the first
/// 16 as a big-endian `u64`, the next 16 likewise, and whether every byte
/// whose bit is set in `care` (byte `i`: bit `i`) is a hex digit.
#[cfg(target_arch = "aarch64")]
#[target_feature(enable = "neon")]
#[inline]
fn hex32_neon(digits: &[u8; 32], care: u32) -> (u64, u64, bool) {
    use std::arch::aarch64::{
        vaddq_u8, vandq_u8, vbslq_u8, vcleq_u8, vdupq_n_u8, vgetq_lane_u64, vld1q_u8, vminvq_u8,
        vorrq_u8, vreinterpretq_u64_u8, vshlq_n_u8, vsubq_u8, vuzp1q_u8, vuzp2q_u8,
    };
    // Bytes whose bit is clear in `care` count as digits.
    let mut free = [0u8; 32];
    for (i, byte) in free.iter_mut().enumerate() {
        *byte = if care >> i & 1 == 0 { 0xff } else { 0 };
    }
    // SAFETY: `digits` and `free` are 32 readable bytes each; the loads
    // take any alignment.
    let (first, second, free_first, free_second) = unsafe {
        (
            vld1q_u8(digits.as_ptr()),
            vld1q_u8(digits.as_ptr().add(16)),
            vld1q_u8(free.as_ptr()),
            vld1q_u8(free.as_ptr().add(16)),
        )
    };
    let decode = |v| {
        // Digits and letters by unsigned distance: b - '0' <= 9,
        // (b | 0x20) - 'a' <= 5; a letter's value is that distance + 10.
        let digit = vsubq_u8(v, vdupq_n_u8(b'0'));
        let letter = vsubq_u8(vorrq_u8(v, vdupq_n_u8(0x20)), vdupq_n_u8(b'a'));
        let is_digit = vcleq_u8(digit, vdupq_n_u8(9));
        let ok = vorrq_u8(is_digit, vcleq_u8(letter, vdupq_n_u8(5)));
        let nibbles = vbslq_u8(is_digit, digit, vaddq_u8(letter, vdupq_n_u8(10)));
        (nibbles, ok)
    };
    let (a, a_ok) = decode(first);
    let (b, b_ok) = decode(second);
    let ok = vandq_u8(vorrq_u8(a_ok, free_first), vorrq_u8(b_ok, free_second));
    let valid = vminvq_u8(ok) == 0xff;
    // Even bytes are each pair's first digit, odd ones its second.
    let bytes = vorrq_u8(vshlq_n_u8::<4>(vuzp1q_u8(a, b)), vuzp2q_u8(a, b));
    let words = vreinterpretq_u64_u8(bytes);
    (
        vgetq_lane_u64::<0>(words).swap_bytes(),
        vgetq_lane_u64::<1>(words).swap_bytes(),
        valid,
    )
}

/// The loop of [`take`], with `hex32` the decoder of the suffix's last 32
/// bytes (which of them must be digits: its second argument). Inlined into
/// each caller, so that the decoder is compiled for its features.
#[inline(always)]
fn take_with(
    kind: Kind,
    prefix: u64,
    body: &[u8],
    at: &mut Cursor,
    out: &mut Vec<(Key, u64)>,
    hex32: impl Fn(&[u8; 32], u32) -> (u64, u64, bool),
) {
    let suffix = kind.hex_len() - PREFIX_DIGITS;
    // The suffix's digits after its first 3: all 32 for SHA-1, 24 for NTLM.
    let care = u32::MAX >> (35 - suffix);
    while let Some(line) = body.get(at.pos..at.pos + WINDOW) {
        if line[suffix] != b':' {
            return;
        }
        // The first word: the prefix's 5 digits and the suffix's first 3.
        let head = u64::from(line[0]) | u64::from(line[1]) << 8 | u64::from(line[2]) << 16;
        let (first, first_ok) = hex8_parts((prefix | head << 40).to_le_bytes());
        let (hi, mid, rest_ok) = hex32(line[3..35].try_into().expect("32 bytes"), care);
        let Some((count, len)) = count_in(line[suffix + 1..suffix + 9].try_into().expect("8"))
        else {
            return;
        };
        let end = suffix + 1 + len;
        let next = match line[end..end + 2] {
            [b'\n', _] => end + 1,
            [b'\r', b'\n'] => end + 2,
            _ => return,
        };
        if !(first_ok & rest_ok) {
            return;
        }
        let key = Key {
            hi: u64::from(first) << 32 | hi >> 32,
            mid: hi << 32 | mid >> 32,
            lo: if kind == Kind::Sha1 { mid as u32 } else { 0 },
        };
        if at.previous.is_some_and(|p| p >= key) {
            return;
        }
        at.previous = Some(key);
        at.number += 1;
        at.pos += next;
        if count > 0 {
            out.push((key, count));
        }
    }
}

/// The decimal count at the start of `bytes` when it has 1 to 7 digits:
/// its value and its length. Found and added up in one 64-bit word.
#[inline(always)]
fn count_in(bytes: [u8; 8]) -> Option<(u64, usize)> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let word = u64::from_le_bytes(bytes);
    // A digit's byte becomes its value (0-9); any other byte anything else.
    let values = word ^ (0x30 * ONES);
    // The top bit of each byte that is not 0-9 (no addition carries: each
    // byte is at most 0x7f + 0x76 before its top bit is or-ed in).
    let other = (values | ((values & (0x7f * ONES)) + (0x76 * ONES))) & (0x80 * ONES);
    let len = (other.trailing_zeros() / 8) as usize;
    if len == 0 || len == 8 {
        return None;
    }
    // The digits moved to the top bytes, zeros before them, then added up
    // in pairs, quads and the eight (first digit in the lowest byte).
    let digits = values << (8 * (8 - len));
    let pairs = (digits & (0x0f * ONES)).wrapping_mul(10 << 8 | 1) >> 8;
    let quads = (pairs & 0x00ff_00ff_00ff_00ff).wrapping_mul(100 << 16 | 1) >> 16;
    let value = (quads & 0x0000_ffff_0000_ffff).wrapping_mul(10_000 << 32 | 1) >> 32;
    Some((value, len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::range::parse::parse_range_with;

    #[test]
    fn counts_of_every_length_and_every_end() {
        for value in [
            0u64, 1, 7, 9, 10, 42, 99, 100, 909, 1000, 65_535, 123_456, 9_999_999,
        ] {
            for tail in [&b"\r\n"[..], b"\n", b":", b"\x80", b"9999999"] {
                let mut bytes = format!("{value}").into_bytes();
                bytes.extend_from_slice(tail);
                bytes.resize(8, b'x');
                let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
                let want = (digits < 8).then(|| {
                    let text = std::str::from_utf8(&bytes[..digits]).unwrap();
                    (text.parse::<u64>().unwrap(), digits)
                });
                assert_eq!(count_in(bytes[..8].try_into().unwrap()), want, "{bytes:?}");
            }
        }
        assert_eq!(count_in(*b"0000001\n"), Some((1, 7)));
        assert_eq!(count_in(*b"12345678"), None, "8 digits: the scalar way");
        assert_eq!(count_in(*b":1234567"), None);
        // Bytes next to the digits' range.
        for other in [b'/', b':', b'0' | 0x80, b'9' | 0x80, 0xff, 0] {
            assert_eq!(
                count_in([b'5', other, b'1', b'1', b'1', b'1', b'1', b'1']),
                Some((5, 1))
            );
        }
    }

    #[test]
    fn the_fast_path_takes_the_usual_lines() {
        let lines = Lines::detect();
        #[cfg(target_arch = "aarch64")]
        assert_eq!(lines, Lines::Neon, "every aarch64 processor has NEON");
        if lines == Lines::Scalar {
            eprintln!("no SIMD here: nothing to take");
            return;
        }
        for (kind, suffix) in [(Kind::Sha1, 35), (Kind::Ntlm, 27)] {
            let body: String = (0..50)
                .map(|i| format!("{:0suffix$X}:{}\r\n", 0xABC_u64 * (i + 1), i * 37))
                .collect();
            let mut at = Cursor {
                pos: 0,
                number: 0,
                previous: None,
            };
            let mut out = Vec::new();
            let prefix = crate::format::hash::prefix_ascii(b"12345");
            take(lines, kind, prefix, body.as_bytes(), &mut at, &mut out);
            // All but the last line: its window runs past the body's end.
            assert_eq!(at.number, 49, "{kind:?}");
            assert_eq!(out.len(), 48, "the count-0 line is dropped");
            let mut scalar = Vec::new();
            parse_range_with(Lines::Scalar, kind, 0x12345, body.as_bytes(), &mut scalar).unwrap();
            assert_eq!(out, scalar[..48]);
        }
    }

    /// Bodies of real shape, with random damage: the fast path and the
    /// scalar one give the same pairs, or the same error.
    #[test]
    fn the_fast_path_gives_what_the_scalar_one_does() {
        let lines = Lines::detect();
        if lines == Lines::Scalar {
            eprintln!("no SIMD here: nothing to compare");
            return;
        }
        let mut rng = seekless_testkit::Rng::xorshift64(0x5EED | 1);
        let mut next = move || rng.next_u64();
        let inserts = b"0:9\r\naAfFgG \x80/@`";
        for round in 0..4_000u64 {
            let kind = if round % 3 == 2 {
                Kind::Ntlm
            } else {
                Kind::Sha1
            };
            let prefix = (next() >> 44) as u32;
            let mut keys: Vec<u128> = (0..1 + next() % 40)
                .map(|_| u128::from(next()) << 64 | u128::from(next()))
                .collect();
            keys.sort_unstable();
            let digits = kind.hex_len() - PREFIX_DIGITS;
            let mut body = Vec::new();
            for (i, key) in keys.iter().enumerate() {
                let hex = format!("{key:032x}{:08X}", next() as u32);
                let mut suffix = hex[..digits].to_string();
                if next() % 2 == 0 {
                    suffix.make_ascii_uppercase();
                }
                body.extend_from_slice(suffix.as_bytes());
                let count = match next() % 8 {
                    0 => 0,
                    1 => next() >> (next() % 64),
                    2 => 1_000_000 + next() % 99_000_000,
                    _ => next() % 5_000,
                };
                body.extend_from_slice(format!(":{count}").as_bytes());
                if i + 1 < keys.len() || next() % 2 == 0 {
                    body.extend_from_slice(if next() % 4 == 0 { b"\n" } else { b"\r\n" });
                }
            }
            for _ in 0..round % 4 {
                let at = (next() as usize) % (body.len() + 1);
                let byte = inserts[(next() as usize) % inserts.len()];
                match next() % 4 {
                    0 => body.insert(at, byte),
                    1 if at < body.len() => {
                        body.remove(at);
                    }
                    2 if at < body.len() => body[at] = byte,
                    _ => body.truncate(at),
                }
            }
            let parse = |lines| {
                let mut out = vec![(Key::default(), 1)];
                let result = parse_range_with(lines, kind, prefix, &body, &mut out);
                (result.map_err(|e| e.to_string()), out)
            };
            assert_eq!(
                parse(lines),
                parse(Lines::Scalar),
                "{kind:?} {prefix:05X} {:?}",
                String::from_utf8_lossy(&body)
            );
        }
    }
}
