//! Compressed answers made of literals alone: a gzip member or a brotli
//! stream whose only compression is one prefix (Huffman) code fitted to the
//! body.
//!
//! A range answer is random hex with short counts: LZ77 finds nothing in it
//! worth a back-reference, and the entropy of its bytes is the whole of
//! what can be saved (libdeflate's level 1, which searches for matches,
//! packs an answer to 54%; a code fitted to the byte counts alone packs it
//! to 54% too). So the search is all cost: counting the bytes, fitting a
//! code and writing one code a byte takes a fraction of the time. Any bytes
//! are valid input; a body with repeats is still right, only larger than a
//! matcher would make it.

mod brotli;
mod deflate;

pub use brotli::brotli;
pub use deflate::gzip;

/// How often each byte value occurs in `data`.
fn histogram(data: &[u8]) -> [u32; 256] {
    let mut tables = Tables::new();
    tables.count(data);
    tables.sum()
}

/// [`histogram`] of a sample of `data` when it is long: a quarter of it,
/// in blocks of 1 KiB spread over the whole. A code fitted to the sample
/// codes the rest nearly as well, unless a byte occurs only outside it: the
/// coders then say so and start again from the whole histogram.
fn sampled_histogram(data: &[u8]) -> [u32; 256] {
    const BLOCK: usize = 1024;
    if data.len() <= 16 * BLOCK {
        return histogram(data);
    }
    let mut tables = Tables::new();
    for block in data.chunks(BLOCK).step_by(4) {
        tables.count(block);
    }
    tables.sum()
}

/// Byte counts in four tables, summed at the end, so that runs of one
/// byte do not wait on their own increments.
struct Tables([[u32; 256]; 4]);

impl Tables {
    fn new() -> Tables {
        Tables([[0; 256]; 4])
    }

    fn count(&mut self, data: &[u8]) {
        let [t0, t1, t2, t3] = &mut self.0;
        let mut chunks = data.chunks_exact(4);
        for c in &mut chunks {
            t0[usize::from(c[0])] += 1;
            t1[usize::from(c[1])] += 1;
            t2[usize::from(c[2])] += 1;
            t3[usize::from(c[3])] += 1;
        }
        for &b in chunks.remainder() {
            t0[usize::from(b)] += 1;
        }
    }

    fn sum(&self) -> [u32; 256] {
        let [t0, t1, t2, t3] = &self.0;
        std::array::from_fn(|i| t0[i] + t1[i] + t2[i] + t3[i])
    }
}

/// Code lengths of a prefix code for symbols occurring `freqs` times (0:
/// unused, length 0), none longer than `limit`. The code is always
/// complete, as inflaters require: when one symbol occurs, a second one
/// (the first other symbol) gets a code too, and when none does, the first
/// two symbols do.
fn code_lengths(freqs: &[u32], limit: u32, lengths: &mut [u8]) {
    debug_assert!(freqs.len() >= 2 && lengths.len() == freqs.len());
    debug_assert!((1 << limit) >= freqs.len());
    let mut weights: Vec<u64> = freqs.iter().map(|&f| u64::from(f)).collect();
    let used = weights.iter().filter(|&&w| w > 0).count();
    if used < 2 {
        for w in weights.iter_mut().filter(|w| **w == 0).take(2 - used) {
            *w = 1;
        }
    }
    // Halving every weight (keeping each above zero) flattens the tree;
    // at equal weights its depth is log2 of the symbols, within any limit
    // the callers ask for.
    while !huffman(&weights, limit, lengths) {
        for w in weights.iter_mut().filter(|w| **w > 0) {
            *w = w.div_ceil(2);
        }
    }
}

/// Huffman code lengths for `weights` (at least two non-zero) into
/// `lengths`; `false` when one would be longer than `limit`.
fn huffman(weights: &[u64], limit: u32, lengths: &mut [u8]) -> bool {
    let mut leaves: Vec<(u64, usize)> = weights
        .iter()
        .enumerate()
        .filter(|&(_, &w)| w > 0)
        .map(|(symbol, &w)| (w, symbol))
        .collect();
    leaves.sort_unstable();
    let n = leaves.len();
    // Nodes 0..n are the leaves in ascending weight, n.. the inner nodes
    // in the order they are made, which is ascending weight too: the next
    // node merges the two lightest of both queues.
    let mut weight: Vec<u64> = leaves.iter().map(|&(w, _)| w).collect();
    weight.resize(2 * n - 1, 0);
    let mut parent = vec![0usize; 2 * n - 1];
    let (mut leaf, mut inner) = (0, n);
    for next in n..2 * n - 1 {
        let mut lightest = || {
            let take_leaf = leaf < n && (inner >= next || weight[leaf] <= weight[inner]);
            if take_leaf {
                leaf += 1;
                leaf - 1
            } else {
                inner += 1;
                inner - 1
            }
        };
        let (a, b) = (lightest(), lightest());
        weight[next] = weight[a] + weight[b];
        parent[a] = next;
        parent[b] = next;
    }
    let mut depth = vec![0u32; 2 * n - 1];
    for node in (0..2 * n - 2).rev() {
        depth[node] = depth[parent[node]] + 1;
    }
    if depth[..n].iter().any(|&d| d > limit) {
        return false;
    }
    lengths.fill(0);
    for (&(_, symbol), &d) in leaves.iter().zip(&depth) {
        lengths[symbol] = d as u8;
    }
    true
}

/// The canonical codes of `lengths` (deflate's and brotli's assignment:
/// shorter codes first, then by symbol), each bit-reversed to be written
/// least significant bit first.
fn canonical_codes(lengths: &[u8]) -> Vec<u16> {
    let mut count = [0u16; 16];
    for &l in lengths {
        count[usize::from(l)] += 1;
    }
    count[0] = 0;
    let mut next = [0u16; 16];
    let mut code = 0u16;
    for bits in 1..16 {
        code = (code + count[bits - 1]) << 1;
        next[bits] = code;
    }
    lengths
        .iter()
        .map(|&l| {
            if l == 0 {
                return 0;
            }
            let code = next[usize::from(l)];
            next[usize::from(l)] += 1;
            code.reverse_bits() >> (16 - l)
        })
        .collect()
}

/// The bytes' codes as one table: code in the low 16 bits, length above,
/// and bit 31 set for the bytes that have a code.
fn byte_table(lengths: &[u8], codes: &[u16]) -> [u32; 256] {
    std::array::from_fn(|b| {
        let coded = u32::from(lengths[b] > 0) << 31;
        u32::from(codes[b]) | u32::from(lengths[b]) << 16 | coded
    })
}

/// Bits written least significant first (deflate's and brotli's order)
/// into a buffer sized beforehand.
struct Bits {
    out: Vec<u8>,
    /// Bytes of `out` complete.
    at: usize,
    /// Bits not yet in `out` (fewer than 8 between calls).
    acc: u64,
    n: u32,
}

impl Bits {
    /// A writer for at most `bits` bits.
    fn with_capacity(bits: u64) -> Bits {
        Bits {
            out: vec![0; (bits / 8) as usize + 16],
            at: 0,
            acc: 0,
            n: 0,
        }
    }

    /// Moves the complete bytes of `acc` out (eight are written, as many as
    /// are complete are kept).
    #[inline(always)]
    fn flush(&mut self) {
        self.out[self.at..self.at + 8].copy_from_slice(&self.acc.to_le_bytes());
        let bytes = self.n / 8;
        self.at += bytes as usize;
        // At most 63 bits are held, so at most 7 bytes move.
        self.acc >>= 8 * bytes;
        self.n %= 8;
    }

    /// The low `count` bits of `value` (`count` ≤ 32, higher bits zero).
    fn put(&mut self, value: u32, count: u32) {
        debug_assert!(count <= 32 && u64::from(value) >> count == 0);
        self.acc |= u64::from(value) << self.n;
        self.n += count;
        self.flush();
    }

    /// One code of `table` for every byte of `data` (a table entry: code,
    /// length above it, bit 31 set when there is a code); `false` when a
    /// byte has none (what was written is then of no use). `K` codes go
    /// in between flushes: `K` times the longest code plus 7 must fit 64
    /// bits. The writer's state is held in locals, in registers, for the
    /// loop.
    #[inline(always)]
    fn put_bytes<const K: usize>(&mut self, data: &[u8], table: &[u32; 256]) -> bool {
        let (mut acc, mut n, mut at) = (self.acc, self.n, self.at);
        let mut coded = u32::MAX;
        let out = &mut self.out[..];
        let mut chunks = data.chunks_exact(K);
        for chunk in &mut chunks {
            for &b in chunk {
                let e = table[usize::from(b)];
                coded &= e;
                acc |= u64::from(e & 0xffff) << n;
                n += (e >> 16) & 0xff;
            }
            out[at..at + 8].copy_from_slice(&acc.to_le_bytes());
            at += (n / 8) as usize;
            acc >>= n & !7;
            n %= 8;
        }
        (self.acc, self.n, self.at) = (acc, n, at);
        for &b in chunks.remainder() {
            let e = table[usize::from(b)];
            coded &= e;
            self.put(e & 0xffff, (e >> 16) & 0xff);
        }
        coded >> 31 == 1
    }

    /// Every byte of `data` by its code, choosing how many codes go in
    /// between flushes from the longest one (`max_len`); `false` when a
    /// byte has no code.
    fn put_coded(&mut self, data: &[u8], table: &[u32; 256], max_len: u32) -> bool {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("bmi2") {
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has BMI2 and AVX2, checked just above.
                return unsafe { self.put_coded_avx2(data, table, max_len) };
            }
            // SAFETY: the CPU has BMI2, checked just above.
            return unsafe { self.put_coded_bmi2(data, table, max_len) };
        }
        self.put_coded_here::<false>(data, table, max_len)
    }

    /// [`Bits::put_coded`] with BMI2's shifts by a register (one
    /// micro-op where a plain x86-64 shift by `cl` takes three): 10–25%
    /// less time a body.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "bmi2")]
    fn put_coded_bmi2(&mut self, data: &[u8], table: &[u32; 256], max_len: u32) -> bool {
        self.put_coded_here::<false>(data, table, max_len)
    }

    /// [`Bits::put_coded_bmi2`] with AVX2 too: short codes go 32 bytes at
    /// a time ([`Bits::put_wide`]).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,bmi2")]
    fn put_coded_avx2(&mut self, data: &[u8], table: &[u32; 256], max_len: u32) -> bool {
        self.put_coded_here::<true>(data, table, max_len)
    }

    /// [`Bits::put_coded`]'s choice of loop; `WIDE` only when the CPU has
    /// AVX2 and BMI2.
    #[inline(always)]
    fn put_coded_here<const WIDE: bool>(
        &mut self,
        data: &[u8],
        table: &[u32; 256],
        max_len: u32,
    ) -> bool {
        // Two bytes a lookup when codes are short, the alphabet small (a
        // range answer has about 20 byte values) and the data long enough
        // to repay the pair table; with AVX2 and codes of at most 7 bits,
        // 32 bytes at a time.
        if data.len() >= 4096 {
            #[cfg(target_arch = "x86_64")]
            if WIDE
                && max_len <= 7
                && let Some(nibbles) = Nibbles::new(table)
            {
                // SAFETY: `WIDE` is only passed by callers that found AVX2
                // and BMI2.
                return unsafe { self.put_wide(data, table, &nibbles) };
            }
            let pairs = match max_len {
                0..=7 => self.put_pairs::<4>(data, table),
                8 => self.put_pairs::<3>(data, table),
                _ => None,
            };
            if let Some(coded) = pairs {
                return coded;
            }
        }
        match max_len {
            0..=8 => self.put_bytes::<7>(data, table),
            9..=14 => self.put_bytes::<4>(data, table),
            _ => self.put_bytes::<3>(data, table),
        }
    }

    /// [`Bits::put_bytes`] two bytes a lookup, for codes of at most 8 bits
    /// over at most 31 byte values: bytes are numbered (0: no code), and a
    /// table of every pair of numbers holds both codes, one after the
    /// other. The numbers of a block's pairs are found first, then coded
    /// `K` pairs between flushes. `None` (nothing written) when more than
    /// 31 bytes have codes.
    #[inline(always)]
    fn put_pairs<const K: usize>(&mut self, data: &[u8], table: &[u32; 256]) -> Option<bool> {
        let mut number = [0u8; 256];
        let mut entries = [0u32; 32];
        let mut symbols = 1;
        for (b, &e) in table.iter().enumerate() {
            if e >> 31 == 1 {
                if symbols == 32 {
                    return None;
                }
                number[b] = symbols as u8;
                entries[symbols] = e;
                symbols += 1;
            }
        }
        // A pair's entry: both codes above the sum of their lengths' byte.
        // Pairs with a number 0 are never coded: the numbering fails first.
        let mut pairs = [0u32; 32 * 32];
        for (i, &a) in entries.iter().enumerate().take(symbols).skip(1) {
            let a_len = (a >> 16) & 0xff;
            for (j, &b) in entries.iter().enumerate().take(symbols).skip(1) {
                let b_len = (b >> 16) & 0xff;
                let code = (a & 0xffff) | (b & 0xffff) << a_len;
                pairs[i | j << 5] = code << 8 | (a_len + b_len);
            }
        }
        let mut index = [0u16; PAIRS_A_BLOCK];
        let mut blocks = data.chunks_exact(2 * PAIRS_A_BLOCK);
        for block in &mut blocks {
            let block: &[u8; 2 * PAIRS_A_BLOCK] = block.try_into().expect("block size");
            if !number_pairs(&number, block, &mut index) {
                return Some(false);
            }
            self.put_indexed::<K>(&index, &pairs);
        }
        Some(self.put_bytes::<7>(blocks.remainder(), table))
    }

    /// The pairs' codes of `pairs` for each index, `K` between flushes.
    #[inline(always)]
    fn put_indexed<const K: usize>(&mut self, index: &[u16; PAIRS_A_BLOCK], pairs: &[u32; 1024]) {
        const { assert!(PAIRS_A_BLOCK.is_multiple_of(K)) };
        let (mut acc, mut n, mut at) = (self.acc, self.n, self.at);
        let out = &mut self.out[..];
        for group in index.chunks_exact(K) {
            // The group's codes joined first, apart from the writer's
            // state: only one shift, one or and one add a group then wait
            // on the group before.
            let (mut codes, mut len) = (0u64, 0u32);
            for &i in group {
                let e = pairs[usize::from(i) & 1023];
                codes |= u64::from(e >> 8) << len;
                len += e & 0xff;
            }
            acc |= codes << n;
            n += len;
            out[at..at + 8].copy_from_slice(&acc.to_le_bytes());
            at += (n / 8) as usize;
            acc >>= n & !7;
            n %= 8;
        }
        (self.acc, self.n, self.at) = (acc, n, at);
    }

    /// Pads the last byte with zero bits and returns the bytes.
    fn finish(mut self) -> Vec<u8> {
        self.n = self.n.next_multiple_of(8);
        self.flush();
        self.out.truncate(self.at);
        self.out
    }
}

/// Pairs of bytes numbered at a time by [`Bits::put_pairs`]: a multiple of
/// its three and four pairs between flushes.
const PAIRS_A_BLOCK: usize = 48;

/// The index of each pair of `block` into a pair table (first number in
/// the low five bits, second above); false when a byte has number 0.
#[inline(always)]
fn number_pairs(
    number: &[u8; 256],
    block: &[u8; 2 * PAIRS_A_BLOCK],
    index: &mut [u16; PAIRS_A_BLOCK],
) -> bool {
    let mut coded = true;
    for (slot, pair) in index.iter_mut().zip(block.chunks_exact(2)) {
        let (i, j) = (number[usize::from(pair[0])], number[usize::from(pair[1])]);
        coded &= i != 0 && j != 0;
        *slot = u16::from(i) | u16::from(j) << 5;
    }
    coded
}

/// The coded bytes' high halves (at most four), for [`Bits::put_wide`]:
/// a byte's code and length are looked up by its low four bits in the
/// tables of its high four (`pshufb`). A range answer's digits, letters and
/// line ends have three.
#[cfg(target_arch = "x86_64")]
struct Nibbles {
    /// High halves; an unused one is 0xff, which no byte's high half is.
    high: [u8; 4],
    /// The codes (bit-reversed, at most 7 bits) of the 16 bytes with each
    /// high half, and their lengths (0: no code).
    codes: [[u8; 16]; 4],
    lengths: [[u8; 16]; 4],
}

#[cfg(target_arch = "x86_64")]
impl Nibbles {
    /// The tables of `table`'s codes (of at most 7 bits); `None` when the
    /// coded bytes have more than four high halves.
    fn new(table: &[u32; 256]) -> Option<Nibbles> {
        let mut nibbles = Nibbles {
            high: [0xff; 4],
            codes: [[0; 16]; 4],
            lengths: [[0; 16]; 4],
        };
        let mut used = 0;
        for (high, row) in table.chunks_exact(16).enumerate() {
            if row.iter().all(|&e| e >> 31 == 0) {
                continue;
            }
            if used == 4 {
                return None;
            }
            nibbles.high[used] = high as u8;
            for (low, &e) in row.iter().enumerate() {
                debug_assert!(e >> 31 == 0 || (e >> 16) & 0xff <= 7);
                nibbles.codes[used][low] = (e & 0x7f) as u8;
                nibbles.lengths[used][low] = ((e >> 16) & 0xff) as u8 * (e >> 31) as u8;
            }
            used += 1;
        }
        Some(nibbles)
    }
}

impl Bits {
    /// [`Bits::put_bytes`] for codes of at most 7 bits over bytes of at
    /// most four high halves, 32 bytes at a time: each byte's code and
    /// length looked up by `pshufb`, then adjacent codes joined in the
    /// register (bytes to pairs by a multiply, pairs to fours and fours to
    /// eights by variable shifts), so that the writer takes one code of up
    /// to 56 bits for every four bytes. `false` when a byte has no code.
    ///
    /// # Safety
    ///
    /// The CPU must have AVX2 and BMI2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,bmi2")]
    unsafe fn put_wide(&mut self, data: &[u8], table: &[u32; 256], nibbles: &Nibbles) -> bool {
        use std::arch::x86_64::*;
        let load16 = |bytes: &[u8; 16]| {
            // SAFETY: 16 bytes are read from a 16-byte array.
            _mm256_broadcastsi128_si256(unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) })
        };
        let codes = nibbles.codes.map(|t| load16(&t));
        let lengths = nibbles.lengths.map(|t| load16(&t));
        let high = nibbles.high.map(|h| _mm256_set1_epi8(h as i8));
        // 1 << l for a length l of at most 7.
        let powers = load16(&[1, 2, 4, 8, 16, 32, 64, 128, 0, 0, 0, 0, 0, 0, 0, 0]);
        let low4 = _mm256_set1_epi8(0x0f);
        let low8 = _mm256_set1_epi16(0x00ff);
        let low16 = _mm256_set1_epi32(0xffff);
        let low32 = _mm256_set1_epi64x(0xffff_ffff);
        let zero = _mm256_setzero_si256();
        let mut missing = zero;
        let (mut acc, mut n, mut at) = (self.acc, self.n, self.at);
        let out = &mut self.out[..];
        let mut blocks = data.chunks_exact(32);
        for block in &mut blocks {
            // SAFETY: `block` is 32 bytes long.
            let v = unsafe { _mm256_loadu_si256(block.as_ptr().cast()) };
            let lo = _mm256_and_si256(v, low4);
            let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(v), low4);
            let (mut code, mut len) = (zero, zero);
            for g in 0..4 {
                let hit = _mm256_cmpeq_epi8(hi, high[g]);
                let c = _mm256_shuffle_epi8(codes[g], lo);
                let l = _mm256_shuffle_epi8(lengths[g], lo);
                code = _mm256_or_si256(code, _mm256_and_si256(hit, c));
                len = _mm256_or_si256(len, _mm256_and_si256(hit, l));
            }
            missing = _mm256_or_si256(missing, _mm256_cmpeq_epi8(len, zero));
            // Pairs (16-bit lanes, first byte low): the second code times
            // 2^(first length), added to the first.
            let first_power = _mm256_and_si256(_mm256_shuffle_epi8(powers, len), low8);
            let code = _mm256_or_si256(
                _mm256_and_si256(code, low8),
                _mm256_mullo_epi16(_mm256_srli_epi16::<8>(code), first_power),
            );
            let len = _mm256_add_epi16(_mm256_and_si256(len, low8), _mm256_srli_epi16::<8>(len));
            // Fours (32-bit lanes), then eights (64-bit lanes).
            let code = _mm256_or_si256(
                _mm256_and_si256(code, low16),
                _mm256_sllv_epi32(_mm256_srli_epi32::<16>(code), _mm256_and_si256(len, low16)),
            );
            let len = _mm256_add_epi32(_mm256_and_si256(len, low16), _mm256_srli_epi32::<16>(len));
            let code = _mm256_or_si256(
                _mm256_and_si256(code, low32),
                _mm256_sllv_epi64(_mm256_srli_epi64::<32>(code), _mm256_and_si256(len, low32)),
            );
            let len = _mm256_add_epi64(_mm256_and_si256(len, low32), _mm256_srli_epi64::<32>(len));
            let (mut codes, mut lens) = ([0u64; 4], [0u64; 4]);
            // SAFETY: each array is 32 bytes.
            unsafe {
                _mm256_storeu_si256(codes.as_mut_ptr().cast(), code);
                _mm256_storeu_si256(lens.as_mut_ptr().cast(), len);
            }
            // Four codes of at most 56 bits each, one after the other.
            for (c, l) in codes.into_iter().zip(lens) {
                acc |= c << n;
                n += l as u32;
                out[at..at + 8].copy_from_slice(&acc.to_le_bytes());
                at += (n / 8) as usize;
                acc >>= n & !7;
                n %= 8;
            }
        }
        (self.acc, self.n, self.at) = (acc, n, at);
        let rest = self.put_bytes::<7>(blocks.remainder(), table);
        rest && _mm256_testz_si256(missing, missing) == 1
    }
}

/// Inputs that are hard on a coder: none, one byte, one value, every
/// value, noise, and counts that make an unlimited code deeper than 15.
#[cfg(test)]
fn hard_inputs() -> Vec<Vec<u8>> {
    let mut state = 1u64;
    let noise: Vec<u8> = (0..70_000)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 56) as u8
        })
        .collect();
    let mut skewed = Vec::new();
    let (mut a, mut b) = (1usize, 1usize);
    for byte in 0..25u8 {
        skewed.extend(std::iter::repeat_n(byte * 9, a));
        (a, b) = (b, a + b);
    }
    vec![
        Vec::new(),
        b"a".to_vec(),
        vec![0; 100_000],
        (0..=255).collect(),
        noise,
        skewed,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kraft's sum of a code, in units of 2^-limit.
    fn kraft(lengths: &[u8], limit: u32) -> u64 {
        lengths
            .iter()
            .filter(|&&l| l > 0)
            .map(|&l| 1u64 << (limit - u32::from(l)))
            .sum()
    }

    #[test]
    fn codes_are_complete_and_within_the_limit() {
        let fib: Vec<u32> = (0..30)
            .scan((1u32, 1u32), |s, _| {
                let f = s.0;
                *s = (s.1, s.0 + s.1);
                Some(f)
            })
            .collect();
        let mut one = vec![0u32; 19];
        one[7] = 5;
        let cases: Vec<(Vec<u32>, u32)> = vec![
            (fib.clone(), 15),
            (fib.clone(), 7),
            (vec![0; 19], 7),
            (one, 7),
            ((0..286).map(|i| i * 7 % 13).collect(), 15),
            (vec![1; 256], 15),
            (vec![1; 256], 8),
        ];
        for (freqs, limit) in cases {
            let mut lengths = vec![0u8; freqs.len()];
            code_lengths(&freqs, limit, &mut lengths);
            assert!(
                lengths.iter().all(|&l| u32::from(l) <= limit),
                "{lengths:?}"
            );
            assert_eq!(kraft(&lengths, limit), 1 << limit, "complete: {lengths:?}");
            for (f, l) in freqs.iter().zip(&lengths) {
                assert!(*f == 0 || *l > 0, "every used symbol has a code");
            }
        }
        // Unlimited, Fibonacci weights give the deepest tree.
        let mut lengths = vec![0u8; 30];
        code_lengths(&fib, 15, &mut lengths);
        assert_eq!(lengths.iter().max(), Some(&15));
    }

    #[test]
    fn huffman_is_optimal_on_a_known_case() {
        // Weights 1, 1, 2, 4: lengths 3, 3, 2, 1.
        let mut lengths = [0u8; 4];
        code_lengths(&[1, 1, 2, 4], 15, &mut lengths);
        assert_eq!(lengths, [3, 3, 2, 1]);
        // Canonical: the 1-bit code is 0, the 2-bit 10, the 3-bit 110, 111
        // (reversed for writing).
        assert_eq!(canonical_codes(&lengths), [0b011, 0b111, 0b01, 0]);
    }

    #[test]
    fn bits_come_out_least_significant_first() {
        let mut bits = Bits::with_capacity(64);
        bits.put(1, 1);
        bits.put(0b10, 2);
        bits.put(0x1ff, 9);
        assert_eq!(bits.finish(), [0b1111_1101, 0b1111]);
    }

    /// The bits [`Bits::put_coded`]'s loops `WIDE` (where the CPU has AVX2;
    /// else the plain ones again) or not, and one code at a time, write
    /// for `data` with a code fitted to `fitted`; and whether each found
    /// every byte coded.
    fn coded_three_ways(data: &[u8], fitted: &[u8]) -> [(Vec<u8>, bool); 3] {
        #[cfg(target_arch = "x86_64")]
        let wide = std::arch::is_x86_feature_detected!("avx2");
        #[cfg(not(target_arch = "x86_64"))]
        let wide = true;
        let mut freqs = histogram(fitted).to_vec();
        freqs.push(1);
        let mut lengths = vec![0u8; freqs.len()];
        code_lengths(&freqs, 15, &mut lengths);
        let table = byte_table(&lengths, &canonical_codes(&lengths));
        let longest = u32::from(lengths[..256].iter().copied().max().unwrap_or(0));
        let run = |how: usize| {
            let mut bits = Bits::with_capacity(data.len() as u64 * 15 + 64);
            bits.put(0b101, 3); // not byte-aligned from the start
            let coded = match how {
                // SAFETY of `WIDE`: AVX2 is present, checked above.
                0 if wide => bits.put_coded_here::<true>(data, &table, longest),
                0 | 1 => bits.put_coded_here::<false>(data, &table, longest),
                _ => bits.put_bytes::<3>(data, &table),
            };
            (bits.finish(), coded)
        };
        [run(0), run(1), run(2)]
    }

    #[test]
    fn the_wide_and_pair_coders_write_what_one_code_at_a_time_does() {
        let mut state = 5u64;
        let mut pick = |n: usize| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as usize % n
        };
        // A range answer's bytes (three high halves), a fourth and a fifth
        // high half (the last makes the AVX2 coder step aside for the
        // pairs), and lengths around the 32- and 96-byte blocks.
        let hex = b"0123456789ABCDEF:\r\n";
        let four = b"0123456789ABCDEF:\r\nabc";
        let five = b"0123456789ABCDEF:\r\nabc\xe9";
        for alphabet in [&hex[..], &four[..], &five[..]] {
            for len in [4096, 4096 + 95, 4096 + 96, 9001] {
                let data: Vec<u8> = (0..len).map(|_| alphabet[pick(alphabet.len())]).collect();
                let [wide, narrow, single] = coded_three_ways(&data, &data);
                assert!(single.1, "every byte has a code");
                assert_eq!(wide, single, "AVX2 coder, {len} bytes");
                assert_eq!(narrow, single, "pair coder, {len} bytes");
            }
        }
        // A byte the code was not fitted to, in a block and in the tail
        // after the last block: every loop says so.
        let data: Vec<u8> = (0..5000).map(|_| hex[pick(16)]).collect();
        for at in [17, 4000, 4999] {
            let mut odd = data.clone();
            odd[at] = b'z';
            for (_, coded) in coded_three_ways(&odd, &data) {
                assert!(!coded, "byte {at} has no code");
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

        /// Both streams inflate to the input under independent decoders,
        /// whatever the bytes: few symbols, many, skewed or uniform.
        #[test]
        fn both_formats_round_trip(
            alphabet in proptest::collection::vec(proptest::prelude::any::<u8>(), 1..40),
            picks in proptest::collection::vec(0usize..1000, 0..12_000),
        ) {
            use std::io::Read;
            let data: Vec<u8> = picks
                .iter()
                .map(|&p| alphabet[(p * p) % 1000 % alphabet.len()])
                .collect();
            let packed = gzip(&data);
            let mut plain = Vec::new();
            flate2::read::GzDecoder::new(&packed[..]).read_to_end(&mut plain).unwrap();
            proptest::prop_assert_eq!(&plain, &data);
            let packed = brotli(&data);
            let mut plain = Vec::new();
            brotli_decompressor::Decompressor::new(&packed[..], 4096)
                .read_to_end(&mut plain)
                .unwrap();
            proptest::prop_assert_eq!(&plain, &data);
        }
    }
}
