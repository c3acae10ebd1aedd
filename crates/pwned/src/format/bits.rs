//! LSB-first bit streams over byte slices, as the index pages store them.

/// Reads 8 bytes at `byte` as a little-endian integer; bytes past the end of
/// `buf` read as zero.
#[inline]
fn load8(buf: &[u8], byte: usize) -> u64 {
    match buf.get(byte..byte + 8) {
        Some(b) => u64::from_le_bytes(b.try_into().expect("8 bytes")),
        None => {
            let mut tmp = [0u8; 8];
            if let Some(rest) = buf.get(byte..) {
                tmp[..rest.len()].copy_from_slice(rest);
            }
            u64::from_le_bytes(tmp)
        }
    }
}

/// `len` bits (0..=57) at bit position `pos`.
#[inline]
pub(crate) fn read(buf: &[u8], pos: usize, len: u32) -> u64 {
    debug_assert!(len <= 57);
    let raw = load8(buf, pos / 8) >> (pos % 8);
    if len == 0 {
        0
    } else {
        raw & (u64::MAX >> (64 - len))
    }
}

/// The 64 bits at bit position `pos` (bits past the end read as zero).
#[inline]
pub(crate) fn word(buf: &[u8], pos: usize) -> u64 {
    let byte = pos / 8;
    let shift = pos % 8;
    if let Some(b) = buf.get(byte..byte + 16) {
        // One 16-byte load covers the 64 bits at any shift.
        let wide = u128::from_le_bytes(b.try_into().expect("16 bytes"));
        return (wide >> shift) as u64;
    }
    let low = load8(buf, byte) >> shift;
    if shift == 0 {
        low
    } else {
        low | (load8(buf, byte + 8) << (64 - shift))
    }
}

/// Position of the bit just after the `n`-th zero bit (`n ≥ 1`) at or after
/// `start`, searching below `end`; `None` if there are fewer zeros.
#[inline]
pub(crate) fn after_nth_zero(buf: &[u8], start: usize, end: usize, mut n: u64) -> Option<usize> {
    let mut pos = start;
    while pos < end {
        let avail = (end - pos).min(64);
        let mut zeros = !word(buf, pos);
        if avail < 64 {
            zeros &= (1u64 << avail) - 1;
        }
        let count = u64::from(zeros.count_ones());
        if count >= n {
            return Some(pos + nth_set_bit(zeros, n as u32) + 1);
        }
        n -= count;
        pos += avail;
    }
    None
}

/// Position of the bit just after the `n`-th one bit (`n ≥ 1`) at or after
/// `start`, below `end`.
#[inline]
pub(crate) fn after_nth_one(buf: &[u8], start: usize, end: usize, mut n: u64) -> Option<usize> {
    let mut pos = start;
    while pos < end {
        let avail = (end - pos).min(64);
        let mut ones = word(buf, pos);
        if avail < 64 {
            ones &= (1u64 << avail) - 1;
        }
        let count = u64::from(ones.count_ones());
        if count >= n {
            return Some(pos + nth_set_bit(ones, n as u32) + 1);
        }
        n -= count;
        pos += avail;
    }
    None
}

/// Index of the `n`-th set bit (`1 ≤ n ≤ popcount`) of `word`: finds the
/// byte from prefix sums of byte popcounts (SWAR), then the bit in it.
#[inline]
fn nth_set_bit(word: u64, n: u32) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let k = u64::from(n - 1);
    let mut s = word - ((word >> 1) & 0x5555_5555_5555_5555);
    s = (s & 0x3333_3333_3333_3333) + ((s >> 2) & 0x3333_3333_3333_3333);
    s = (s + (s >> 4)) & 0x0f0f_0f0f_0f0f_0f0f;
    // Byte i of `prefix` is the number of set bits in bytes 0..=i.
    let prefix = s.wrapping_mul(ONES);
    // High bit of byte i set where prefix <= k: those bytes come before.
    let before_bytes = ((((k * ONES) | HIGH) - prefix) & HIGH).count_ones();
    let shift = 8 * before_bytes;
    let seen = if before_bytes == 0 {
        0
    } else {
        (prefix >> (shift - 8)) & 0xff
    };
    let mut byte = (word >> shift) & 0xff;
    for _ in 0..(k - seen) {
        byte &= byte - 1;
    }
    shift as usize + byte.trailing_zeros() as usize
}

/// Number of one bits in `start..end`.
#[inline]
pub(crate) fn count_ones(buf: &[u8], start: usize, end: usize) -> usize {
    let mut pos = start;
    let mut ones = 0;
    while pos < end {
        let avail = (end - pos).min(64);
        let mut w = word(buf, pos);
        if avail < 64 {
            w &= (1u64 << avail) - 1;
        }
        ones += w.count_ones() as usize;
        pos += avail;
    }
    ones
}

/// Bytes a [`Words`] reads from: a page's stream (at most [`SPAN`] bytes)
/// and 64 more, so that a read of 8 bytes (or 64, a vector's) at any byte
/// of the stream takes the bytes it starts in without running past the
/// end.
pub(crate) const BYTES: usize = SPAN + 64;

/// Bytes of a stream a [`Words`] reads at most.
const SPAN: usize = 4096;

/// A page's bit stream for decoding it whole: each read is one or two
/// loads and a shift, where reading the stream alone checks its end each
/// time (and reads 16 bytes to cover a shift). The bytes are the page's
/// own, with what follows it in the index file (when there are enough: a
/// file's directory follows its last page, 76 bytes or more for six
/// pages or more), or else a copy with zeros after it; bits
/// past the stream are whatever those bytes hold, and callers mask them
/// off.
pub(crate) struct Words<'a> {
    /// At least [`BYTES`] long.
    b: &'a [u8],
}

impl<'a> Words<'a> {
    /// The stream `bytes` with what follows it, when there are [`BYTES`].
    pub(crate) fn in_place(bytes: &'a [u8]) -> Option<Words<'a>> {
        (bytes.len() >= BYTES).then_some(Words { b: bytes })
    }

    /// `bytes` (at most 4096 of them) copied into `buf`, zeros after them.
    pub(crate) fn copied(bytes: &[u8], buf: &'a mut [u8; BYTES]) -> Words<'a> {
        let n = bytes.len().min(SPAN);
        buf[..n].copy_from_slice(&bytes[..n]);
        buf[n..].fill(0);
        Words { b: buf }
    }

    /// The first byte: [`BYTES`] of them may be read from it (a vector of
    /// 64 from any byte of the stream).
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn as_ptr(&self) -> *const u8 {
        self.b.as_ptr()
    }

    /// The 8 bytes at byte `i` (the mask keeps it in range; callers' byte
    /// positions are below 4096 already).
    #[inline(always)]
    fn load(&self, i: usize) -> u64 {
        let i = i % SPAN;
        u64::from_le_bytes(self.b[i..i + 8].try_into().expect("8 bytes"))
    }

    /// The 64 bits at bit position `pos` (below 2^15; zeros past the
    /// stream's end).
    #[inline(always)]
    pub(crate) fn word(&self, pos: usize) -> u64 {
        let shift = (pos % 8) as u32;
        // The ninth byte's part shifted in two steps, so a shift of 0
        // adds nothing (a shift by 64 would be out of range).
        (self.load(pos / 8) >> shift) | ((self.load(pos / 8 + 8) << 1) << (63 - shift))
    }

    /// The `len` bits (0..=57) at bit position `pos`: one load.
    #[inline(always)]
    pub(crate) fn read57(&self, pos: usize, len: u32) -> u64 {
        debug_assert!(len <= 57);
        (self.load(pos / 8) >> (pos % 8)) & ((1u64 << len) - 1)
    }

    /// The positions of the one bits of `start..end` (`end` below 2^15).
    pub(crate) fn ones(&self, start: usize, end: usize) -> Ones<'_, 'a> {
        let i = start / 64;
        Ones {
            words: self,
            i,
            end,
            word: self.load(8 * i) & (u64::MAX << (start % 64)),
        }
    }
}

/// The positions of the one bits of `start..end`, in order, a word at a
/// time. The ones of the last word's bits past `end` may come too: a
/// caller takes only as many ones as it knows are there ([`count_ones`]).
pub(crate) struct Ones<'w, 'a> {
    words: &'w Words<'a>,
    /// Index of `word`.
    i: usize,
    end: usize,
    /// The ones not yet taken of word `i`.
    word: u64,
}

impl Ones<'_, '_> {
    /// The next one's position, `None` when no word before `end` has one.
    #[inline(always)]
    pub(crate) fn next(&mut self) -> Option<usize> {
        while self.word == 0 {
            self.i += 1;
            if self.i * 64 >= self.end {
                return None;
            }
            self.word = self.words.load(8 * self.i);
        }
        let at = self.i * 64 + self.word.trailing_zeros() as usize;
        self.word &= self.word - 1;
        Some(at)
    }
}

/// Number of consecutive one bits starting at `pos`, stopping at `end`.
#[inline]
pub(crate) fn run_of_ones(buf: &[u8], mut pos: usize, end: usize) -> usize {
    let mut run = 0;
    while pos < end {
        let avail = (end - pos).min(64);
        let ones = (!word(buf, pos)).trailing_zeros() as usize;
        let ones = ones.min(avail);
        run += ones;
        if ones < avail {
            break;
        }
        pos += avail;
    }
    run
}

/// ORs the low `len` (0..=64) bits of `value` into `words` at bit `at`
/// (LSB-first); higher bits of `value` must be zero. Both words the bits
/// may reach are written whether they reach the second or not (its part
/// is then zero), so a write never branches on where a code ends: with
/// codes of varying length that branch is a coin toss for the CPU.
#[inline]
pub(crate) fn put(words: &mut [u64], at: usize, value: u64, len: u32) {
    debug_assert!(len == 64 || value >> len == 0);
    let word = at / 64;
    let shift = (at % 64) as u32;
    let pair = &mut words[word..word + 2];
    pair[0] |= value << shift;
    // `value >> (64 - shift)`, and 0 for a shift of 0.
    pair[1] |= (value >> 1) >> (63 - shift);
}

/// Sets bit `at` of `words` (LSB-first).
#[inline]
pub(crate) fn set(words: &mut [u64], at: usize) {
    words[at / 64] |= 1 << (at % 64);
}

/// Bits LSB-first in a fixed buffer of 64-bit words (one page's bit
/// stream), written at given positions with [`put`] and [`set`]: a page's
/// four sections are filled in one pass over its hashes, each from its own
/// cursor.
#[derive(Debug)]
pub(crate) struct Writer {
    words: Vec<u64>,
    /// Bits in use (the end of the furthest section).
    len: usize,
}

impl Writer {
    /// A writer for up to `bits` bits.
    pub(crate) fn new(bits: usize) -> Self {
        Writer {
            words: vec![0; bits.div_ceil(64) + 2],
            len: 0,
        }
    }

    /// Says that `len` bits are in use (every write must lie below).
    pub(crate) fn set_len(&mut self, len: usize) {
        debug_assert!(len <= (self.words.len() - 2) * 64);
        self.len = len;
    }

    /// The words, to write with [`put`] and [`set`] (a slice held in a
    /// local, whose address stays in a register between writes).
    pub(crate) fn words(&mut self) -> &mut [u64] {
        &mut self.words
    }

    /// Clears the writer.
    pub(crate) fn clear(&mut self) {
        let used = self.len.div_ceil(64).min(self.words.len());
        self.words[..used].fill(0);
        self.len = 0;
    }

    /// Copies the bytes in use into `out` (which must be large enough).
    pub(crate) fn copy_to(&self, out: &mut [u8]) {
        let bytes = self.len.div_ceil(8);
        let (whole, tail) = out[..bytes].as_chunks_mut::<8>();
        for (chunk, word) in whole.iter_mut().zip(&self.words) {
            *chunk = word.to_le_bytes();
        }
        let last = self.words[whole.len()].to_le_bytes();
        tail.copy_from_slice(&last[..tail.len()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ones_and_their_count_match_a_bit_list() {
        let mut rng = seekless_testkit::Rng::xorshift64((5) | 1);
        let mut next = || rng.next_u64();
        for round in 0..300 {
            let len = 1 + next() as usize % 64;
            // Sparse and dense bits, as buckets and count lengths are.
            let density = round % 4;
            let buf: Vec<u8> = (0..len)
                .map(|_| {
                    let mut b = next() as u8;
                    for _ in 0..density {
                        b &= next() as u8;
                    }
                    b
                })
                .collect();
            let bits = len * 8;
            let start = next() as usize % bits;
            let end = start + next() as usize % (bits - start + 1);
            let ones: Vec<usize> = (start..end)
                .filter(|&i| buf[i / 8] >> (i % 8) & 1 == 1)
                .collect();
            assert_eq!(count_ones(&buf, start, end), ones.len());
            let mut copy = [0; BYTES];
            let words = Words::copied(&buf, &mut copy);
            let mut cursor = words.ones(start, end);
            let got: Vec<usize> = (0..ones.len()).map_while(|_| cursor.next()).collect();
            assert_eq!(got, ones, "bits {start}..{end}");
            // Past the last word before `end`, no more ones.
            if let Some(more) = cursor.next() {
                assert!(
                    more >= end && more < end.next_multiple_of(64).max(start + 64),
                    "{more}"
                );
            }
        }
    }

    #[test]
    fn nth_set_bit_matches_a_loop() {
        let mut rng = seekless_testkit::Rng::xorshift64((0x9E37_79B9_7F4A_7C15) | 1);
        let mut next = || rng.next_u64();
        for _ in 0..2000 {
            let x = next();
            for word in [x, x & (x >> 3), x | 1, u64::MAX, 1 << 63] {
                let mut w = word;
                let mut n = 1;
                while w != 0 {
                    assert_eq!(
                        nth_set_bit(word, n),
                        w.trailing_zeros() as usize,
                        "{word:x} {n}"
                    );
                    w &= w - 1;
                    n += 1;
                }
            }
        }
    }

    #[test]
    fn writes_of_every_width_land_where_a_bit_list_says() {
        let mut rng = seekless_testkit::Rng::xorshift64((0x2545_F491_4F6C_DD1D) | 1);
        let mut next = || rng.next_u64();
        let mut w = Writer::new(8192);
        for round in 0..3 {
            // Reused after clear(): what the last round left must not show.
            w.clear();
            let mut want: Vec<bool> = Vec::new();
            let mut writes = Vec::new();
            while want.len() < 8000 {
                let len = (next() % 65) as u32;
                let value = if len == 64 {
                    next()
                } else {
                    next() & ((1 << len) - 1)
                };
                if round == 1 && len < 3 {
                    want.extend(std::iter::repeat_n(false, len as usize * 40));
                    continue;
                }
                writes.push((want.len(), value, len));
                want.extend((0..len).map(|i| value >> i & 1 == 1));
            }
            // In any order: sections are filled side by side.
            if round == 2 {
                writes.reverse();
            }
            for &(at, value, len) in &writes {
                if len == 1 && value == 1 && round == 0 {
                    set(w.words(), at);
                } else {
                    put(w.words(), at, value, len);
                }
            }
            w.set_len(want.len());
            let mut buf = vec![0xa5u8; want.len().div_ceil(8)];
            w.copy_to(&mut buf);
            for (i, &bit) in want.iter().enumerate() {
                assert_eq!(read(&buf, i, 1) == 1, bit, "round {round}, bit {i}");
            }
            // The last byte's unused bits are zero.
            assert_eq!(
                u64::from(buf[buf.len() - 1]) >> (want.len() - (buf.len() - 1) * 8),
                0
            );
        }
    }

    #[test]
    fn write_then_read_and_select() {
        let mut w = Writer::new(4096);
        // zeros/ones pattern: 0 0 1 1 0 1, then values.
        set(w.words(), 2);
        set(w.words(), 3);
        set(w.words(), 5);
        put(w.words(), 6, 0x1_2345_6789_abcd, 49);
        set(w.words(), 155);
        let len = 156;
        w.set_len(len);
        let mut buf = vec![0u8; len.div_ceil(8)];
        w.copy_to(&mut buf);
        assert_eq!(read(&buf, 6, 49), 0x1_2345_6789_abcd);
        assert_eq!(after_nth_zero(&buf, 0, 6, 1), Some(1));
        assert_eq!(after_nth_zero(&buf, 0, 6, 3), Some(5));
        assert_eq!(after_nth_zero(&buf, 0, 6, 4), None);
        assert_eq!(after_nth_one(&buf, 0, 6, 3), Some(6));
        assert_eq!(run_of_ones(&buf, 2, 6), 2);
        assert_eq!(run_of_ones(&buf, 5, 6), 1);
        assert_eq!(after_nth_one(&buf, 55, len, 1), Some(len));
        assert_eq!(read(&buf, len - 1, 1), 1);
        assert_eq!(word(&buf, len), 0);
    }
}
