//! Hash kinds, hashes as sortable integers, and fast hex decoding.

use std::fmt;

use md4::Md4;
use sha1::{Digest, Sha1};

/// Which hash the corpus (and an index) holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// SHA-1 of the UTF-8 password: 20 bytes, 40 hex digits.
    Sha1,
    /// NTLM: MD4 of the UTF-16LE password: 16 bytes, 32 hex digits.
    Ntlm,
}

impl Kind {
    /// Length of the hash in bytes.
    pub const fn bytes(self) -> usize {
        match self {
            Kind::Sha1 => 20,
            Kind::Ntlm => 16,
        }
    }

    /// Length of the hash in bits.
    pub const fn bits(self) -> u32 {
        self.bytes() as u32 * 8
    }

    /// Length of the hash in hex digits.
    pub const fn hex_len(self) -> usize {
        self.bytes() * 2
    }

    /// The kind whose hex form has `len` digits.
    pub const fn from_hex_len(len: usize) -> Option<Kind> {
        match len {
            40 => Some(Kind::Sha1),
            32 => Some(Kind::Ntlm),
            _ => None,
        }
    }

    /// Hashes a password the way the corpus of this kind does.
    pub fn hash_password(self, password: &str) -> Key {
        match self {
            Kind::Sha1 => Key::from_bytes(&Sha1::digest(password.as_bytes())),
            Kind::Ntlm => {
                let mut md4 = Md4::new();
                for unit in password.encode_utf16() {
                    md4.update(unit.to_le_bytes());
                }
                Key::from_bytes(&md4.finalize())
            }
        }
    }

    pub(crate) const fn code(self) -> u8 {
        match self {
            Kind::Sha1 => 1,
            Kind::Ntlm => 2,
        }
    }

    pub(crate) const fn from_code(code: u8) -> Option<Kind> {
        match code {
            1 => Some(Kind::Sha1),
            2 => Some(Kind::Ntlm),
            _ => None,
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Sha1 => "SHA-1",
            Kind::Ntlm => "NTLM",
        })
    }
}

/// A [`Key`]'s three words, open for tests that make keys bit by bit
/// (feature `test-util`).
#[cfg(feature = "test-util")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Words {
    /// Bytes 0..8 of the hash, big-endian.
    pub hi: u64,
    /// Bytes 8..16.
    pub mid: u64,
    /// Bytes 16..20 (zero for NTLM).
    pub lo: u32,
}

#[cfg(feature = "test-util")]
impl Words {
    /// The key of these words.
    pub fn key(self) -> Key {
        let Words { hi, mid, lo } = self;
        Key { hi, mid, lo }
    }
}

#[cfg(feature = "test-util")]
impl From<Key> for Words {
    fn from(key: Key) -> Words {
        let Key { hi, mid, lo } = key;
        Words { hi, mid, lo }
    }
}

/// A hash as a big-endian integer of up to 160 bits, in three words so that
/// the derived order is the order of the hash bytes. An NTLM hash leaves the
/// last word zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Key {
    /// Bytes 0..8.
    pub(crate) hi: u64,
    /// Bytes 8..16.
    pub(crate) mid: u64,
    /// Bytes 16..20 (zero for NTLM).
    pub(crate) lo: u32,
}

impl Key {
    /// The key of a 16- or 20-byte hash (shorter input is zero-extended).
    pub fn from_bytes(bytes: &[u8]) -> Key {
        let mut buf = [0u8; 20];
        let n = bytes.len().min(20);
        buf[..n].copy_from_slice(&bytes[..n]);
        Key {
            hi: u64::from_be_bytes(buf[0..8].try_into().expect("8 bytes")),
            mid: u64::from_be_bytes(buf[8..16].try_into().expect("8 bytes")),
            lo: u32::from_be_bytes(buf[16..20].try_into().expect("4 bytes")),
        }
    }

    /// The hash bytes (20; an NTLM key uses the first 16).
    pub fn to_bytes(self) -> [u8; 20] {
        let mut out = [0u8; 20];
        out[0..8].copy_from_slice(&self.hi.to_be_bytes());
        out[8..16].copy_from_slice(&self.mid.to_be_bytes());
        out[16..20].copy_from_slice(&self.lo.to_be_bytes());
        out
    }

    /// The range the hash falls in: its first five hex digits, as a number
    /// below [`RANGES`](crate::RANGES).
    pub fn prefix(self) -> u32 {
        (self.hi >> 44) as u32
    }

    /// Parses hex of exactly `kind.hex_len()` digits, either case.
    #[inline]
    pub fn from_hex(kind: Kind, text: &[u8]) -> Option<Key> {
        if text.len() != kind.hex_len() {
            return None;
        }
        let (groups, _) = text.as_chunks::<16>();
        let (hi, hi_ok) = hex16_parts(groups[0]);
        let (mid, mid_ok) = hex16_parts(groups[1]);
        let (lo, lo_ok) = match kind {
            Kind::Sha1 => hex8_parts(text[32..40].try_into().expect("8 digits")),
            Kind::Ntlm => (0, true),
        };
        (hi_ok & mid_ok & lo_ok).then_some(Key { hi, mid, lo })
    }

    /// [`Key::from_hex`] with the first 32 digits in one AVX2 register.
    ///
    /// # Safety
    ///
    /// The CPU must have AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(crate) unsafe fn from_hex_avx2(kind: Kind, text: &[u8]) -> Option<Key> {
        if text.len() != kind.hex_len() {
            return None;
        }
        let (groups, _) = text.as_chunks::<32>();
        let (hi, mid, ok) = hex32_avx2(&groups[0]);
        let (lo, lo_ok) = match kind {
            Kind::Sha1 => hex8_parts(text[32..40].try_into().expect("8 digits")),
            Kind::Ntlm => (0, true),
        };
        (ok & lo_ok).then_some(Key { hi, mid, lo })
    }

    /// The key whose hex is a range prefix followed by `suffix`, the other
    /// `kind.hex_len() - 5` digits (either case). `prefix` holds the
    /// prefix's five ASCII digits in its low bytes, first digit lowest (see
    /// [`prefix_ascii`]). `suffix` is read where it lies: nothing is copied
    /// to a buffer and read back.
    #[inline]
    pub(crate) fn from_range_hex(kind: Kind, prefix: u64, suffix: &[u8]) -> Option<Key> {
        if suffix.len() != kind.hex_len() - 5 {
            return None;
        }
        // The first group: the prefix's 5 digits and the suffix's first 3.
        let head = u64::from(suffix[0]) | u64::from(suffix[1]) << 8 | u64::from(suffix[2]) << 16;
        let first = (prefix | head << 40).to_le_bytes();
        let (rest, _) = suffix[3..].as_chunks::<8>();
        match kind {
            Kind::Sha1 => {
                let [a, b, c, d] = <[[u8; 8]; 4]>::try_from(rest).ok()?;
                Key::from_hex_groups([first, a, b, c, d])
            }
            Kind::Ntlm => {
                let [a, b, c] = <[[u8; 8]; 3]>::try_from(rest).ok()?;
                Key::from_hex_groups([first, a, b, c])
            }
        }
    }

    /// `N` groups of 8 hex digits, decoded without a branch until the one
    /// that says whether every digit was one.
    #[inline(always)]
    fn from_hex_groups<const N: usize>(groups: [[u8; 8]; N]) -> Option<Key> {
        let mut words = [0u32; 5];
        let mut valid = true;
        for (word, group) in words.iter_mut().zip(groups) {
            let (value, ok) = hex8_parts(group);
            *word = value;
            valid &= ok;
        }
        valid.then(|| Key::from_words(words))
    }

    /// The key whose hash bytes are the five big-endian words (the last is
    /// zero for NTLM).
    pub(crate) fn from_words(w: [u32; 5]) -> Key {
        Key {
            hi: (u64::from(w[0]) << 32) | u64::from(w[1]),
            mid: (u64::from(w[2]) << 32) | u64::from(w[3]),
            lo: w[4],
        }
    }

    /// Writes the hash in uppercase hex.
    pub fn write_hex(self, kind: Kind, out: &mut Vec<u8>) {
        push_hex(&self.to_bytes()[..kind.bytes()], b"0123456789ABCDEF", out);
    }

    /// The hash in uppercase hex.
    pub fn to_hex(self, kind: Kind) -> String {
        let mut out = Vec::with_capacity(40);
        self.write_hex(kind, &mut out);
        String::from_utf8(out).expect("hex is ASCII")
    }

    /// The key with only its top `bits` bits kept (the rest zero).
    #[inline]
    pub fn truncated(self, bits: u32) -> Key {
        let keep = |word_start: u32, width: u32| -> u64 {
            match bits.saturating_sub(word_start) {
                0 => 0,
                n if n >= width => u64::MAX,
                n => !(u64::MAX >> n),
            }
        };
        Key {
            hi: self.hi & keep(0, 64),
            mid: self.mid & keep(64, 64),
            lo: self.lo & (keep(128, 32) >> 32) as u32,
        }
    }

    /// `len` bits (1..=57) starting `start` bits from the most significant
    /// end, as an integer.
    #[inline]
    pub(crate) fn bits(self, start: u32, len: u32) -> u64 {
        debug_assert!((1..=57).contains(&len) && start + len <= 160);
        bits_at(&self.words(), (start / 64) as usize, start % 64, len)
    }

    /// The hash as four 64-bit words from the top (the last one zero), for
    /// taking many bit fields out of one key with [`bits_at`].
    pub(crate) fn words(self) -> [u64; 4] {
        [self.hi, self.mid, u64::from(self.lo) << 32, 0]
    }

    /// The key with `len` bits starting at `start` (from the top) set to
    /// `value`; those bits must be zero before.
    #[cfg(test)]
    pub(crate) fn with_bits(self, start: u32, len: u32, value: u64) -> Key {
        debug_assert!((1..=57).contains(&len) && start + len <= 160);
        let mut words = [self.hi, self.mid, u64::from(self.lo) << 32];
        let w = (start / 64) as usize;
        let off = start % 64;
        // The value occupies bits [off, off + len) of the 128-bit window
        // made of words w and w + 1, counted from the top.
        let shift = 128 - off - len;
        let wide = u128::from(value) << shift;
        words[w] |= (wide >> 64) as u64;
        if w + 1 < 3 {
            words[w + 1] |= wide as u64;
        }
        Key {
            hi: words[0],
            mid: words[1],
            lo: (words[2] >> 32) as u32,
        }
    }
}

/// The five ASCII digits of a range prefix in the low bytes of a `u64`,
/// first digit lowest, for [`Key::from_range_hex`].
pub(crate) fn prefix_ascii(prefix: &[u8; 5]) -> u64 {
    u64::from_le_bytes([
        prefix[0], prefix[1], prefix[2], prefix[3], prefix[4], 0, 0, 0,
    ])
}

/// `len` bits (1 to 64) of a key's [`Key::words`], starting `shift` bits
/// (0 to 63) into `words[word]` (`word` at most 2), branch-free.
#[inline(always)]
pub(crate) fn bits_at(words: &[u64; 4], word: usize, shift: u32, len: u32) -> u64 {
    // The second term is `words[word + 1] >> (64 - shift)`, and 0 for a
    // shift of 0.
    let top = (words[word] << shift) | ((words[word + 1] >> 1) >> (63 - shift));
    top >> (64 - len)
}

/// Appends `bytes` in hex with the given digits (upper- or lowercase): the
/// crate's one byte-at-a-time hex writer (ranges render through the SIMD
/// path in range.rs).
pub(crate) fn push_hex(bytes: &[u8], digits: &[u8; 16], out: &mut Vec<u8>) {
    for &byte in bytes {
        out.push(digits[usize::from(byte >> 4)]);
        out.push(digits[usize::from(byte & 15)]);
    }
}

/// Decodes 16 hex digits (either case) into a big-endian `u64`: the value,
/// meaningless unless valid, and whether all 16 bytes are hex digits. One
/// SSE2 register on x86-64 (SSE2 is part of it), two [`hex8_parts`] elsewhere.
#[inline(always)]
fn hex16_parts(digits: [u8; 16]) -> (u64, bool) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: SSE2 is part of every x86-64 processor (the target's
        // baseline), so the function's one required feature is there.
        unsafe { hex16_sse2(digits) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let (hi, hi_ok) = hex8_parts(digits[..8].try_into().expect("8 digits"));
        let (lo, lo_ok) = hex8_parts(digits[8..].try_into().expect("8 digits"));
        ((u64::from(hi) << 32) | u64::from(lo), hi_ok & lo_ok)
    }
}

/// [`hex16_parts`] in one SSE2 register.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
#[inline]
fn hex16_sse2(digits: [u8; 16]) -> (u64, bool) {
    {
        use std::arch::x86_64::{
            _mm_add_epi8, _mm_and_si128, _mm_cmpgt_epi8, _mm_cmplt_epi8, _mm_cvtsi128_si64,
            _mm_movemask_epi8, _mm_or_si128, _mm_packus_epi16, _mm_set_epi64x, _mm_set1_epi8,
            _mm_set1_epi16, _mm_slli_epi16, _mm_srli_epi16,
        };
        let word = |i: usize| i64::from_le_bytes(digits[i..i + 8].try_into().expect("8 bytes"));
        let v = _mm_set_epi64x(word(8), word(0));
        let between = |v, lo: u8, hi: u8| {
            _mm_and_si128(
                _mm_cmpgt_epi8(v, _mm_set1_epi8(lo as i8 - 1)),
                _mm_cmplt_epi8(v, _mm_set1_epi8(hi as i8 + 1)),
            )
        };
        // Bytes from 0x80 up compare as negative: neither digit nor letter.
        let digit = between(v, b'0', b'9');
        let letter = between(_mm_or_si128(v, _mm_set1_epi8(0x20)), b'a', b'f');
        let valid = _mm_movemask_epi8(_mm_or_si128(digit, letter)) == 0xffff;
        // Each digit's value: its low nibble, plus 9 for a letter.
        let nibbles = _mm_add_epi8(
            _mm_and_si128(v, _mm_set1_epi8(0x0f)),
            _mm_and_si128(letter, _mm_set1_epi8(9)),
        );
        // Each 16-bit lane holds two digits, the first in its low byte.
        let pairs = _mm_or_si128(
            _mm_slli_epi16(_mm_and_si128(nibbles, _mm_set1_epi16(0x00ff)), 4),
            _mm_srli_epi16(nibbles, 8),
        );
        let bytes = _mm_cvtsi128_si64(_mm_packus_epi16(pairs, pairs)) as u64;
        (bytes.swap_bytes(), valid)
    }
}

/// Decodes 32 hex digits (either case) into two big-endian `u64`s: the
/// values, meaningless unless valid, and whether all 32 bytes are hex
/// digits. Digits and letters are told by unsigned distance (`b - '0' <=
/// 9`, `(b | 0x20) - 'a' <= 5`), and each pair of digits is put together by
/// one multiply-add.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn hex32_avx2(digits: &[u8; 32]) -> (u64, u64, bool) {
    let (hi, mid, digit) = hex32_avx2_lanes(digits);
    (hi, mid, digit == u32::MAX)
}

/// [`hex32_avx2`] with a bit for each byte that is a hex digit (byte `i`:
/// bit `i`), for callers that need only some of the 32 to be digits.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub(crate) fn hex32_avx2_lanes(digits: &[u8; 32]) -> (u64, u64, u32) {
    use std::arch::x86_64::{
        _mm256_add_epi8, _mm256_blendv_epi8, _mm256_cmpeq_epi8, _mm256_extract_epi64,
        _mm256_loadu_si256, _mm256_maddubs_epi16, _mm256_min_epu8, _mm256_movemask_epi8,
        _mm256_or_si256, _mm256_packus_epi16, _mm256_set1_epi8, _mm256_set1_epi16, _mm256_sub_epi8,
    };
    // SAFETY: `digits` is 32 readable bytes; the load takes any alignment.
    let v = unsafe { _mm256_loadu_si256(digits.as_ptr().cast()) };
    let at_most = |x, limit: i8| _mm256_cmpeq_epi8(_mm256_min_epu8(x, _mm256_set1_epi8(limit)), x);
    let digit = _mm256_sub_epi8(v, _mm256_set1_epi8(b'0' as i8));
    let letter = _mm256_sub_epi8(
        _mm256_or_si256(v, _mm256_set1_epi8(0x20)),
        _mm256_set1_epi8(b'a' as i8),
    );
    let is_digit = at_most(digit, 9);
    let valid = _mm256_movemask_epi8(_mm256_or_si256(is_digit, at_most(letter, 5))) as u32;
    let nibbles = _mm256_blendv_epi8(
        _mm256_add_epi8(letter, _mm256_set1_epi8(10)),
        digit,
        is_digit,
    );
    // 16 × the first digit of each pair plus the second, in 16-bit lanes,
    // then packed to bytes: each 128-bit lane's 8 bytes in its low half.
    let pairs = _mm256_maddubs_epi16(nibbles, _mm256_set1_epi16(0x0110));
    let bytes = _mm256_packus_epi16(pairs, pairs);
    let hi = _mm256_extract_epi64::<0>(bytes) as u64;
    let mid = _mm256_extract_epi64::<2>(bytes) as u64;
    (hi.swap_bytes(), mid.swap_bytes(), valid)
}

/// Decodes 8 hex digits (either case) into a big-endian `u32` at once
/// (SWAR): the value, meaningless unless valid, and whether all 8 bytes are
/// hex digits.
#[inline(always)]
pub(crate) fn hex8_parts(digits: [u8; 8]) -> (u32, bool) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let x = u64::from_le_bytes(digits);
    // For bytes below 0x80, `(b + 0x80 - k) & 0x80` is set exactly when b >= k,
    // and no addition carries into the next byte.
    let ge = |v: u64, k: u64| v.wrapping_add((0x80 - k) * ONES) & HIGH;
    let lower = x | (0x20 * ONES);
    let digit = ge(x, 0x30) & !ge(x, 0x3a);
    let letter = ge(lower, 0x61) & !ge(lower, 0x67);
    let valid = (x & HIGH == 0) & ((digit | letter) == HIGH);
    // '0'..'9' -> low nibble; 'a'/'A'.. -> low nibble + 9 (bit 6 marks letters).
    let nibbles = (x & (0x0f * ONES)) + 9 * ((x >> 6) & ONES);
    // Byte i (first digit in byte 0) holds nibble i; gather them big-endian.
    let pairs = ((nibbles & 0x000f_000f_000f_000f) << 4) | ((nibbles >> 8) & 0x000f_000f_000f_000f);
    let quads = ((pairs & 0x0000_00ff_0000_00ff) << 8) | ((pairs >> 16) & 0x0000_00ff_0000_00ff);
    let value = ((quads & 0xffff) << 16) | ((quads >> 32) & 0xffff);
    (value as u32, valid)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every byte value at every position of `base` (hex digits): the
    /// decoder gives what `from_str_radix` does, `None` where it fails.
    fn every_byte_everywhere<const N: usize>(
        base: [u8; N],
        decode: impl Fn([u8; N]) -> Option<u64>,
    ) {
        for pos in 0..N {
            for b in 0..=255u8 {
                let mut d = base;
                d[pos] = b;
                let naive = std::str::from_utf8(&d)
                    .ok()
                    .filter(|t| !t.starts_with('+'))
                    .and_then(|t| u64::from_str_radix(t, 16).ok());
                assert_eq!(decode(d), naive, "{d:?}");
            }
        }
    }

    fn hex8(digits: [u8; 8]) -> Option<u32> {
        let (value, ok) = hex8_parts(digits);
        ok.then_some(value)
    }

    #[test]
    fn range_hex_is_the_prefix_then_the_suffix() {
        let mut rng = seekless_testkit::Rng::xorshift64((0x5eed) | 1);
        let mut next = || rng.next_u64();
        for kind in [Kind::Sha1, Kind::Ntlm] {
            for _ in 0..200 {
                let wide = u128::from(next()) << 64 | u128::from(next());
                let key = Key::from_bytes(&wide.to_be_bytes()).to_hex(kind);
                let mixed: String = key
                    .chars()
                    .enumerate()
                    .map(|(i, c)| {
                        if i % 3 == 0 {
                            c.to_ascii_lowercase()
                        } else {
                            c
                        }
                    })
                    .collect();
                let (prefix, suffix) = mixed.as_bytes().split_at(5);
                let prefix = prefix_ascii(prefix.try_into().unwrap());
                let want = Key::from_hex(kind, key.as_bytes()).unwrap();
                assert_eq!(Key::from_range_hex(kind, prefix, suffix), Some(want));
                for pos in 0..suffix.len() {
                    for bad in [b'g', b':', b'\r', 0x80 | b'1', b'/'] {
                        let mut broken = suffix.to_vec();
                        broken[pos] = bad;
                        assert_eq!(Key::from_range_hex(kind, prefix, &broken), None);
                    }
                }
                assert_eq!(Key::from_range_hex(kind, prefix, &suffix[1..]), None);
                assert_eq!(Key::from_range_hex(kind, prefix, mixed.as_bytes()), None);
            }
        }
    }

    #[test]
    fn hex16_matches_naive_on_every_byte() {
        every_byte_everywhere(*b"0aF93bC7e5D1284f", |d| {
            let (value, ok) = hex16_parts(d);
            ok.then_some(value)
        });
        assert_eq!(hex16_parts(*b"ffffffffFFFFFFFF"), (u64::MAX, true));
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // Each half of the register against the SSE2 decoder, and each
            // byte of the other half changed with it.
            let base = *b"0aF93bC7e5D1284f9B8a7C6d5E4f3A2b";
            for half in [0, 16] {
                every_byte_everywhere(base[half..half + 16].try_into().unwrap(), |d: [u8; 16]| {
                    let mut all = base;
                    all[half..half + 16].copy_from_slice(&d);
                    // SAFETY: the CPU has AVX2 (checked above).
                    let (hi, mid, ok) = unsafe { hex32_avx2(&all) };
                    let value = if half == 0 { hi } else { mid };
                    ok.then_some(value)
                });
            }
            let text = b"5baa61e4c9b93f3f0682250b6cf8331b7ee68fd8";
            // SAFETY: as above.
            let wide = unsafe { Key::from_hex_avx2(Kind::Sha1, text) };
            assert_eq!(wide, Key::from_hex(Kind::Sha1, text));
            assert!(wide.is_some());
        }
        assert_eq!(
            hex16_parts(*b"0123456789abcdef"),
            (0x0123_4567_89ab_cdef, true)
        );
    }

    #[test]
    fn hex8_matches_naive_on_every_byte() {
        every_byte_everywhere(*b"0aF93bC7", |d| hex8(d).map(u64::from));
        assert_eq!(hex8(*b"ffffffff"), Some(u32::MAX));
        assert_eq!(hex8(*b"00000000"), Some(0));
        assert_eq!(hex8(*b"12345678"), Some(0x1234_5678));
    }

    #[test]
    fn known_password_hashes() {
        let sha1 = Kind::Sha1.hash_password("password");
        assert_eq!(
            sha1.to_hex(Kind::Sha1),
            "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8"
        );
        let ntlm = Kind::Ntlm.hash_password("password");
        assert_eq!(ntlm.to_hex(Kind::Ntlm), "8846F7EAEE8FB117AD06BDD830B7586C");
    }

    #[test]
    fn hex_round_trip_and_bits() {
        let key = Key::from_hex(Kind::Sha1, b"5baa61e4c9b93f3f0682250b6cf8331b7ee68fd8").unwrap();
        assert_eq!(
            key.to_hex(Kind::Sha1),
            "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8"
        );
        assert_eq!(key.bits(0, 20), 0x5BAA6);
        assert_eq!(key.bits(140, 20), 0x68FD8);
        // Rebuild the key from chunks at odd offsets.
        let mut rebuilt = Key::default().with_bits(0, 26, key.bits(0, 26));
        let mut start = 26;
        while start < 160 {
            let len = (160 - start).min(56);
            rebuilt = rebuilt.with_bits(start, len, key.bits(start, len));
            start += len;
        }
        assert_eq!(rebuilt, key);
        // Keeping the top bits: the same as rebuilding from them alone.
        for bits in 1..=160 {
            let mut kept = Key::default();
            let mut start = 0;
            while start < bits {
                let len = (bits - start).min(56);
                kept = kept.with_bits(start, len, key.bits(start, len));
                start += len;
            }
            assert_eq!(key.truncated(bits), kept, "{bits} bits");
        }
        assert_eq!(key.truncated(0), Key::default());
        assert!(Key::from_hex(Kind::Sha1, b"5baa61e4c9b93f3f0682250b6cf8331b7ee68fd").is_none());
        assert!(Key::from_hex(Kind::Ntlm, b"8846F7EAEE8FB117AD06BDD830B7586G").is_none());
    }
}
