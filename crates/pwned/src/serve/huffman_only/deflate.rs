//! A gzip member of one dynamic-Huffman deflate block of literals
//! (RFC 1951, 1952).

use super::{Bits, byte_table, canonical_codes, code_lengths, histogram, sampled_histogram};

/// The end-of-block symbol of the literal/length alphabet.
const END: usize = 256;

/// Code-length symbols in the order their own lengths are sent.
const ORDER: [usize; 19] = [
    16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
];

/// `data` as one gzip member: one final deflate block whose literals are
/// coded by a Huffman code fitted to `data`'s bytes (no back-references).
pub fn gzip(data: &[u8]) -> Vec<u8> {
    gzip_with(data, &sampled_histogram(data))
        .or_else(|| gzip_with(data, &histogram(data)))
        .expect("a code fitted to every byte codes every byte")
}

/// [`gzip`] with a code fitted to `counts`; `None` when a byte of `data`
/// is not among them.
fn gzip_with(data: &[u8], counts: &[u32; 256]) -> Option<Vec<u8>> {
    let mut freqs = [0u32; END + 1];
    freqs[..256].copy_from_slice(counts);
    freqs[END] = 1;
    let mut lengths = [0u8; END + 1];
    code_lengths(&freqs, 15, &mut lengths);
    let codes = canonical_codes(&lengths);

    // The code lengths of the literal/length alphabet (no length symbol is
    // used, so 257 of them) then of two distance codes of one bit, which
    // no symbol uses but which keep the distance code complete.
    let mut sequence = lengths.to_vec();
    sequence.extend_from_slice(&[1, 1]);
    let runs = run_lengths(&sequence);
    let mut run_freqs = [0u32; 19];
    for &(symbol, _) in &runs {
        run_freqs[usize::from(symbol)] += 1;
    }
    let mut run_lengths = [0u8; 19];
    code_lengths(&run_freqs, 7, &mut run_lengths);
    let run_codes = canonical_codes(&run_lengths);
    let sent = ORDER
        .iter()
        .rposition(|&s| run_lengths[s] > 0)
        .map_or(4, |last| (last + 1).max(4));

    let header_bits = 10 * 8 + 3 + 14 + 3 * 19 + 14 * runs.len() as u64;
    let table = byte_table(&lengths, &codes);
    let longest = u32::from(lengths[..256].iter().copied().max().unwrap_or(0));
    let coded = data.len() as u64 * u64::from(longest);
    let mut bits = Bits::with_capacity(header_bits + coded + 64);
    for byte in [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff] {
        bits.put(byte, 8);
    }
    bits.put(1, 1); // the last block
    bits.put(2, 2); // dynamic Huffman codes
    bits.put(0, 5); // 257 literal/length codes
    bits.put(1, 5); // 2 distance codes
    bits.put(sent as u32 - 4, 4);
    for &symbol in &ORDER[..sent] {
        bits.put(u32::from(run_lengths[symbol]), 3);
    }
    for &(symbol, extra) in &runs {
        let s = usize::from(symbol);
        bits.put(u32::from(run_codes[s]), u32::from(run_lengths[s]));
        match symbol {
            16 => bits.put(u32::from(extra), 2),
            17 => bits.put(u32::from(extra), 3),
            18 => bits.put(u32::from(extra), 7),
            _ => {}
        }
    }
    if !bits.put_coded(data, &table, longest) {
        return None;
    }
    bits.put(u32::from(codes[END]), u32::from(lengths[END]));
    let mut out = bits.finish();
    out.extend_from_slice(&crate::range::gzip::crc32(data).to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    Some(out)
}

/// The code-length symbols (0–15 a length; 16 repeats the previous length
/// 3–6 times, 17 and 18 give 3–10 and 11–138 zeros) describing `lengths`,
/// each with the value of its extra bits.
fn run_lengths(lengths: &[u8]) -> Vec<(u8, u8)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lengths.len() {
        let value = lengths[i];
        let run = lengths[i..].iter().take_while(|&&l| l == value).count();
        i += run;
        let mut left = run;
        if value == 0 {
            while left >= 11 {
                let n = left.min(138);
                out.push((18, (n - 11) as u8));
                left -= n;
            }
            if left >= 3 {
                out.push((17, (left - 3) as u8));
                left = 0;
            }
        } else {
            out.push((value, 0));
            left -= 1;
            while left >= 3 {
                let n = left.min(6);
                out.push((16, (n - 3) as u8));
                left -= n;
            }
        }
        out.extend(std::iter::repeat_n((value, 0), left));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn inflate(packed: &[u8]) -> Vec<u8> {
        let mut plain = Vec::new();
        flate2::read::GzDecoder::new(packed)
            .read_to_end(&mut plain)
            .expect("a valid gzip member");
        plain
    }

    fn round_trip(data: &[u8]) -> Vec<u8> {
        let packed = gzip(data);
        assert_eq!(inflate(&packed), data, "zlib-rs");
        assert_eq!(
            crate::range::gzip::gunzip_whole(&packed, data.len()).as_deref(),
            Some(data),
            "libdeflate"
        );
        packed
    }

    #[test]
    fn any_bytes_round_trip() {
        for data in super::super::hard_inputs() {
            round_trip(&data);
        }
    }

    #[test]
    fn a_range_answer_packs_to_its_entropy() {
        use crate::format::hash::{Key, Kind};
        let mut state = 7u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            state ^ state >> 29
        };
        let mut pairs: Vec<(Key, u64)> = (0..1000)
            .map(|i| {
                let key = Key {
                    hi: 0x5baa6 << 44 | next() >> 20,
                    mid: next(),
                    lo: (next() >> 32) as u32,
                };
                (key, 1 + i * 37 % 5000)
            })
            .collect();
        pairs.sort_unstable();
        let body = crate::range::render::range_body(Kind::Sha1, &pairs);
        let packed = round_trip(&body);
        let ratio = packed.len() as f64 / body.len() as f64;
        // 16 hex digits at ~4 bits and a few rarer symbols: 52–56%.
        assert!((0.50..0.57).contains(&ratio), "{ratio}");
        // No worse than libdeflate's level 1 by more than a hundredth.
        let level1 = crate::range::gzip::gzip(&body, 1).len() as f64 / body.len() as f64;
        assert!(ratio < level1 + 0.01, "{ratio} against {level1}");
    }

    #[test]
    fn runs_cover_the_lengths_exactly() {
        let lengths: Vec<u8> = [
            vec![0; 140],
            vec![5; 9],
            vec![0; 2],
            vec![3],
            vec![0; 10],
            vec![7; 4],
        ]
        .concat();
        let mut expanded = Vec::new();
        for (symbol, extra) in run_lengths(&lengths) {
            match symbol {
                16 => {
                    let last = *expanded.last().unwrap();
                    expanded.extend(std::iter::repeat_n(last, 3 + usize::from(extra)));
                }
                17 => expanded.extend(std::iter::repeat_n(0, 3 + usize::from(extra))),
                18 => expanded.extend(std::iter::repeat_n(0, 11 + usize::from(extra))),
                length => expanded.push(length),
            }
        }
        assert_eq!(expanded, lengths);
    }

    #[test]
    fn a_byte_outside_the_sample_is_still_coded() {
        // 40 KB of four letters and one 'Z' in the second KiB, which the
        // sample (every fourth KiB) skips.
        let mut data: Vec<u8> = (0..40_000).map(|i| b"abcd"[i * 7 % 4]).collect();
        data[1500] = b'Z';
        assert!(super::super::sampled_histogram(&data)[usize::from(b'Z')] == 0);
        assert!(gzip_with(&data, &super::super::sampled_histogram(&data)).is_none());
        round_trip(&data);
    }
}
