//! A brotli stream (RFC 7932) of meta-blocks holding one command each:
//! every byte of the block inserted as a literal under a prefix code
//! fitted to the block.

use super::{Bits, byte_table, canonical_codes, code_lengths, histogram, sampled_histogram};

/// The most bytes a meta-block holds.
const MAX_BLOCK: usize = 1 << 24;

/// Code-length symbols in the order their lengths are sent.
const ORDER: [usize; 18] = [1, 2, 3, 4, 0, 5, 17, 6, 16, 7, 8, 9, 10, 11, 12, 13, 14, 15];

/// `data` as a brotli stream (window 2^16 - 16; no back-references, so the
/// window holds nothing to refer to).
pub fn brotli(data: &[u8]) -> Vec<u8> {
    brotli_with(data, sampled_histogram)
        .or_else(|| brotli_with(data, histogram))
        .expect("a code fitted to every byte codes every byte")
}

/// [`brotli`] with each block's code fitted to `counts` of the block;
/// `None` when a byte is not among them.
fn brotli_with(data: &[u8], counts: fn(&[u8]) -> [u32; 256]) -> Option<Vec<u8>> {
    // Each block's code first, so that the output is allocated once (the
    // headers take at most 2,200 bits a block).
    let mut bound = 0;
    let blocks: Vec<(&[u8], [u8; 256])> = data
        .chunks(MAX_BLOCK)
        .map(|block| {
            let mut lengths = [0u8; 256];
            code_lengths(&counts(block), 15, &mut lengths);
            let longest = lengths.iter().copied().max().unwrap_or(0);
            bound += 4096 + block.len() as u64 * u64::from(longest);
            (block, lengths)
        })
        .collect();
    let mut bits = Bits::with_capacity(8 + bound);
    bits.put(0, 1); // WBITS = 16
    if data.is_empty() {
        bits.put(1, 1); // ISLAST
        bits.put(1, 1); // ISLASTEMPTY
        return Some(bits.finish());
    }
    let last = blocks.len() - 1;
    for (i, (block, lengths)) in blocks.iter().enumerate() {
        meta_block(&mut bits, block, lengths, i == last)?;
    }
    Some(bits.finish())
}

/// One compressed meta-block of `block` (1 to 2^24 bytes) coded with
/// `lengths`; `None` when a byte has no code.
fn meta_block(bits: &mut Bits, block: &[u8], lengths: &[u8; 256], is_last: bool) -> Option<()> {
    let codes = canonical_codes(lengths);
    bits.put(u32::from(is_last), 1); // ISLAST
    if is_last {
        bits.put(0, 1); // ISLASTEMPTY
    }
    // MLEN - 1 in the fewest nibbles (at least 4) that hold it.
    let mlen = block.len() as u32 - 1;
    let nibbles = (32 - mlen.leading_zeros()).div_ceil(4).max(4);
    bits.put(nibbles - 4, 2);
    bits.put(mlen, 4 * nibbles);
    if !is_last {
        bits.put(0, 1); // ISUNCOMPRESSED
    }
    bits.put(0, 1); // one literal block type
    bits.put(0, 1); // one insert-and-copy block type
    bits.put(0, 1); // one distance block type
    bits.put(0, 2); // NPOSTFIX
    bits.put(0, 4); // NDIRECT
    bits.put(0, 2); // the literal context mode (one tree: no matter)
    bits.put(0, 1); // one literal prefix code
    bits.put(0, 1); // one distance prefix code

    complex_code(bits, lengths);
    // The insert-and-copy and distance codes hold one symbol each (simple
    // codes of zero bits a symbol): the command below, and distance 0,
    // never read (the block ends after the command's literals).
    let (command, extra_bits, extra) = insert_command(block.len() as u32);
    simple_code(bits, command, 10);
    simple_code(bits, 0, 6);

    // The command: its symbol takes no bits; the insert length's extra
    // bits, the copy length's (none: code 0), then the literals.
    bits.put(extra, extra_bits);
    let table = byte_table(lengths, &codes);
    let longest = u32::from(lengths.iter().copied().max().unwrap_or(0));
    bits.put_coded(block, &table, longest).then_some(())
}

/// A simple prefix code of one symbol (`width` bits to name it).
fn simple_code(bits: &mut Bits, symbol: u32, width: u32) {
    bits.put(1, 2); // HSKIP 1: simple
    bits.put(0, 2); // NSYM - 1
    bits.put(symbol, width);
}

/// A complex prefix code: the code-length code's lengths, then each
/// symbol's length under it, up to the last non-zero one (a decoder stops
/// when the code is full).
fn complex_code(bits: &mut Bits, lengths: &[u8; 256]) {
    let last = lengths.iter().rposition(|&l| l > 0).unwrap_or(0);
    // Lengths as code-length symbols: 0–15 a length, 17 a run of 3–10
    // zeros (3 extra bits). Two 17s in a row would combine into one
    // longer run, so a literal 0 separates them.
    let mut symbols: Vec<(u8, u8)> = Vec::new();
    let mut i = 0;
    while i <= last {
        let value = lengths[i];
        if value != 0 {
            symbols.push((value, 0));
            i += 1;
            continue;
        }
        let run = lengths[i..=last].iter().take_while(|&&l| l == 0).count();
        if run >= 3 && symbols.last().is_none_or(|&(s, _)| s != 17) {
            let n = run.min(10);
            symbols.push((17, (n - 3) as u8));
            i += n;
        } else {
            symbols.push((0, 0));
            i += 1;
        }
    }
    let mut freqs = [0u32; 18];
    for &(s, _) in &symbols {
        freqs[usize::from(s)] += 1;
    }
    let mut cl_lengths = [0u8; 18];
    code_lengths(&freqs, 5, &mut cl_lengths);
    let cl_codes = canonical_codes(&cl_lengths);

    // HSKIP 0: all 18 lengths sent, up to the last non-zero one in ORDER.
    bits.put(0, 2);
    let sent = ORDER
        .iter()
        .rposition(|&s| cl_lengths[s] > 0)
        .expect("a code-length code has two symbols");
    for &s in &ORDER[..=sent] {
        // The fixed code of code-length lengths 0–5, as read LSB first.
        let (value, width) = match cl_lengths[s] {
            0 => (0b00, 2),
            1 => (0b0111, 4),
            2 => (0b011, 3),
            3 => (0b10, 2),
            4 => (0b01, 2),
            _ => (0b1111, 4),
        };
        bits.put(value, width);
    }
    for (s, extra) in symbols {
        let s16 = usize::from(s);
        bits.put(u32::from(cl_codes[s16]), u32::from(cl_lengths[s16]));
        if s == 17 {
            bits.put(u32::from(extra), 3);
        }
    }
}

/// The insert-and-copy command inserting `len` literals (copy length code
/// 0, no extra bits): (command symbol, the insert length's extra bit
/// count, their value).
fn insert_command(len: u32) -> (u32, u32, u32) {
    // Insert length codes: (first length, extra bits).
    const INSERT: [(u32, u32); 24] = [
        (0, 0),
        (1, 0),
        (2, 0),
        (3, 0),
        (4, 0),
        (5, 0),
        (6, 1),
        (8, 1),
        (10, 2),
        (14, 2),
        (18, 3),
        (26, 3),
        (34, 4),
        (50, 4),
        (66, 5),
        (98, 5),
        (130, 6),
        (194, 7),
        (322, 8),
        (578, 9),
        (1090, 10),
        (2114, 12),
        (6210, 14),
        (22594, 24),
    ];
    let code = INSERT
        .iter()
        .rposition(|&(first, _)| first <= len)
        .expect("code 0 starts at 0") as u32;
    let (first, extra_bits) = INSERT[code as usize];
    // Commands with copy code 0: insert codes 0–7 are 0, 8, …, 56;
    // 8–15 are 256 + 8k; 16–23 are 448 + 8k.
    let command = match code {
        0..=7 => code << 3,
        8..=15 => 256 + ((code - 8) << 3),
        _ => 448 + ((code - 16) << 3),
    };
    (command, extra_bits, len - first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn round_trip(data: &[u8]) -> Vec<u8> {
        let packed = brotli(data);
        let mut plain = Vec::new();
        brotli_decompressor::Decompressor::new(&packed[..], 4096)
            .read_to_end(&mut plain)
            .expect("a valid brotli stream");
        assert_eq!(plain, data);
        packed
    }

    #[test]
    fn any_bytes_round_trip() {
        for data in super::super::hard_inputs() {
            round_trip(&data);
        }
        // Lengths at the edges of the insert length codes.
        for n in [
            1, 2, 5, 6, 7, 9, 13, 97, 98, 129, 130, 6209, 6210, 22593, 22594, 70_000,
        ] {
            let data: Vec<u8> = (0..n).map(|i| (i * 7 % 23) as u8 + b'0').collect();
            round_trip(&data);
        }
        round_trip(b"ab");
    }

    #[test]
    fn more_than_one_meta_block() {
        let data: Vec<u8> = (0..MAX_BLOCK + 1000)
            .map(|i| b"0123456789ABCDEF:\r\n"[i % 19])
            .collect();
        round_trip(&data);
    }

    #[test]
    fn packs_like_gzip() {
        let body = b"0018A45C4D1DEF81644B54AB7F969B88D65:10\r\n".repeat(3);
        let packed = round_trip(&body);
        assert!(packed.len() < body.len());
    }

    #[test]
    fn a_byte_outside_the_sample_is_still_coded() {
        // 40 KB of four letters and one 'Z' in the second KiB, which the
        // sample (every fourth KiB) skips.
        let mut data: Vec<u8> = (0..40_000).map(|i| b"abcd"[i * 7 % 4]).collect();
        data[1500] = b'Z';
        assert!(super::super::sampled_histogram(&data)[usize::from(b'Z')] == 0);
        assert!(brotli_with(&data, super::super::sampled_histogram).is_none());
        round_trip(&data);
    }
}
