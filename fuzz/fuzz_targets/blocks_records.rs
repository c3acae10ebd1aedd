//! The record scanner never panics, reports strictly ordered, in-bounds
//! events, and finds the same records whatever the read boundaries.
#![no_main]

use libfuzzer_sys::fuzz_target;
use seekless_blocks::{Event, Network, RecordScanner, XorKey};

#[derive(Debug, PartialEq)]
enum Seen {
    Block(u64, u32, [u8; 32]),
    Bad(u64, u64, String),
}

fn run(network: Network, key: XorKey, data: &[u8], thorough: bool, pieces: &[u8]) -> Vec<Seen> {
    let mut seen = Vec::new();
    let mut scanner = RecordScanner::new(network).padding(key);
    if thorough {
        scanner = scanner.thorough();
    }
    let mut keep = 0usize;
    let mut end = 0usize;
    let mut step = 0;
    loop {
        let piece = if pieces.is_empty() {
            data.len()
        } else {
            1 + pieces[step % pieces.len()] as usize * 17
        };
        step += 1;
        end = (end + piece).min(data.len());
        let eof = end == data.len();
        let next = scanner.feed(
            &data[keep..end],
            keep as u64,
            eof,
            &mut |event| match event {
                Event::Block(b) => {
                    assert_eq!(b.bytes.len(), b.size as usize);
                    seen.push(Seen::Block(b.offset, b.size, b.hash.0));
                }
                Event::Bad(bad) => seen.push(Seen::Bad(
                    bad.offset,
                    bad.skipped,
                    bad.kind.name().to_string(),
                )),
            },
        );
        assert!(next as usize >= keep && next as usize <= end);
        keep = next as usize;
        if eof {
            return seen;
        }
    }
}

fuzz_target!(|input: &[u8]| {
    if input.len() < 2 {
        return;
    }
    let network = Network::ALL[input[0] as usize % Network::ALL.len()];
    // The high bit of the first byte selects a padding key (an obfuscated file).
    let key = if input[0] & 0x80 != 0 {
        XorKey([input[1], 0, 0xff, 1, input[1], 7, 0, 0x80])
    } else {
        XorKey::default()
    };
    let split = (input[1] as usize).min(input.len() - 2);
    let (pieces, data) = input[2..].split_at(split);
    for thorough in [false, true] {
        let whole = run(network, key, data, thorough, &[]);
        let mut last_end = 0u64;
        for event in &whole {
            let (offset, len) = match event {
                Seen::Block(offset, size, _) => (*offset, 8 + *size as u64),
                Seen::Bad(offset, skipped, _) => (*offset, *skipped),
            };
            assert!(
                offset >= last_end && offset + len <= data.len() as u64,
                "{whole:?}"
            );
            last_end = offset + len;
        }
        assert_eq!(run(network, key, data, thorough, pieces), whole);
    }
});
