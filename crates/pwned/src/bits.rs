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
    let shift = pos % 8;
    let low = load8(buf, pos / 8) >> shift;
    if shift == 0 {
        low
    } else {
        low | (load8(buf, pos / 8 + 8) << (64 - shift))
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

/// Index of the `n`-th set bit (`1 ≤ n ≤ popcount`) of `word`.
#[inline]
fn nth_set_bit(mut word: u64, n: u32) -> usize {
    for _ in 1..n {
        word &= word - 1;
    }
    word.trailing_zeros() as usize
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

/// Appends bits LSB-first to a byte vector.
#[derive(Debug, Default)]
pub(crate) struct Writer {
    bytes: Vec<u8>,
    acc: u64,
    pending: u32,
}

impl Writer {
    pub(crate) fn with_capacity(bytes: usize) -> Self {
        Writer {
            bytes: Vec::with_capacity(bytes),
            acc: 0,
            pending: 0,
        }
    }

    /// Bits written so far.
    pub(crate) fn len(&self) -> usize {
        self.bytes.len() * 8 + self.pending as usize
    }

    /// Appends the low `len` (0..=57) bits of `value`.
    #[inline]
    pub(crate) fn push(&mut self, value: u64, len: u32) {
        debug_assert!(len <= 57 && (len == 64 || value >> len == 0));
        self.acc |= value << self.pending;
        self.pending += len;
        while self.pending >= 8 {
            self.bytes.push(self.acc as u8);
            self.acc >>= 8;
            self.pending -= 8;
        }
    }

    /// Appends `n` zero bits.
    pub(crate) fn zeros(&mut self, mut n: u64) {
        while n > 0 {
            let step = n.min(56) as u32;
            self.push(0, step);
            n -= u64::from(step);
        }
    }

    /// Clears the writer, keeping its buffer.
    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.acc = 0;
        self.pending = 0;
    }

    /// The bytes written, the last one zero-padded.
    pub(crate) fn finish(&mut self) -> &[u8] {
        if self.pending > 0 {
            self.bytes.push(self.acc as u8);
            self.acc = 0;
            self.pending = 0;
        }
        &self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_then_read_and_select() {
        let mut w = Writer::default();
        // zeros/ones pattern: 0 0 1 1 0 1, then values.
        w.zeros(2);
        w.push(1, 1);
        w.push(1, 1);
        w.zeros(1);
        w.push(1, 1);
        w.push(0x1_2345_6789_abcd, 49);
        w.zeros(100);
        w.push(1, 1);
        let len = w.len();
        let buf = w.finish().to_vec();
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
