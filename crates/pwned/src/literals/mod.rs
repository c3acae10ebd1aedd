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

/// How often each byte value occurs in `data` (four tables, summed at the
/// end, so that runs of one byte do not wait on their own increments).
fn histogram(data: &[u8]) -> [u32; 256] {
    let mut tables = [[0u32; 256]; 4];
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        tables[0][usize::from(c[0])] += 1;
        tables[1][usize::from(c[1])] += 1;
        tables[2][usize::from(c[2])] += 1;
        tables[3][usize::from(c[3])] += 1;
    }
    for &b in chunks.remainder() {
        tables[0][usize::from(b)] += 1;
    }
    std::array::from_fn(|i| tables[0][i] + tables[1][i] + tables[2][i] + tables[3][i])
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
    let mut counts = [0u32; 256];
    for block in data.chunks(BLOCK).step_by(4) {
        for (c, n) in counts.iter_mut().zip(histogram(block)) {
            *c += n;
        }
    }
    counts
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

    /// One code of `table` for every byte of `data`; `false` when a byte
    /// has none (what was written is then of no use). `K` codes go in
    /// between flushes: `K` times the longest code plus 7 must fit 64 bits.
    #[inline(always)]
    fn put_bytes<const K: usize>(&mut self, data: &[u8], table: &[u32; 256]) -> bool {
        self.put_units::<K, 1>(data, table, |unit| table[usize::from(unit[0])])
    }

    /// The codes `code` gives each `W` bytes of `data` (a table entry:
    /// code, length above it, bit 31 set when there is a code), `K` units
    /// between flushes; bytes left over by `table`, one at a time; `false`
    /// when a unit or byte has no code. The writer's state is held in
    /// locals, in registers, for the loop.
    #[inline(always)]
    fn put_units<const K: usize, const W: usize>(
        &mut self,
        data: &[u8],
        table: &[u32; 256],
        code: impl Fn(&[u8]) -> u32,
    ) -> bool {
        let (mut acc, mut n, mut at) = (self.acc, self.n, self.at);
        let mut coded = u32::MAX;
        let out = &mut self.out[..];
        let mut chunks = data.chunks_exact(W * K);
        for chunk in &mut chunks {
            for unit in chunk.chunks_exact(W) {
                let e = code(unit);
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
            // SAFETY: the CPU has BMI2, checked just above.
            return unsafe { self.put_coded_bmi2(data, table, max_len) };
        }
        self.put_coded_here(data, table, max_len)
    }

    /// [`Bits::put_coded`] with BMI2's shifts by a register (one
    /// micro-op where a plain x86-64 shift by `cl` takes three): 10–25%
    /// less time a body.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "bmi2")]
    fn put_coded_bmi2(&mut self, data: &[u8], table: &[u32; 256], max_len: u32) -> bool {
        self.put_coded_here(data, table, max_len)
    }

    #[inline(always)]
    fn put_coded_here(&mut self, data: &[u8], table: &[u32; 256], max_len: u32) -> bool {
        // Two bytes a lookup when codes are short, the alphabet small (a
        // range answer has about 20 byte values) and the data long enough
        // to repay the pair table.
        if data.len() >= 4096 {
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
    /// other. `K` pairs go in between flushes; `None` (nothing written)
    /// when more than 31 bytes have codes.
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
        // Entries of number 0 keep bit 31 clear: the pair has no code.
        let mut pairs = [0u32; 32 * 32];
        for (i, &a) in entries.iter().enumerate().take(symbols).skip(1) {
            let a_len = (a >> 16) & 0xff;
            for (j, &b) in entries.iter().enumerate().take(symbols).skip(1) {
                let b_len = (b >> 16) & 0xff;
                let code = (a & 0xffff) | (b & 0xffff) << a_len;
                pairs[i << 5 | j] = code | (a_len + b_len) << 16 | 1 << 31;
            }
        }
        let coded = self.put_units::<K, 2>(data, table, |pair| {
            let i = usize::from(number[usize::from(pair[0])]);
            let j = usize::from(number[usize::from(pair[1])]);
            pairs[i << 5 | j]
        });
        Some(coded)
    }

    /// Pads the last byte with zero bits and returns the bytes.
    fn finish(mut self) -> Vec<u8> {
        self.n = self.n.next_multiple_of(8);
        self.flush();
        self.out.truncate(self.at);
        self.out
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
