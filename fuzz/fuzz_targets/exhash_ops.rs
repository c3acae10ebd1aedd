//! Random operation sequences on an exhash table over an in-memory file,
//! replayed against `HashMap`: every answer must match, a commit (to the
//! journal or a checkpoint) followed by a reopen of the file must keep
//! every pair, and the table's
//! invariants (counts, directory, lookup directory) must hold at the end.
#![no_main]

use std::collections::HashMap;

use libfuzzer_sys::fuzz_target;
use seekless_exhash::ExHash;

fuzz_target!(|data: &[u8]| {
    let mut table = ExHash::create_on(Vec::new()).unwrap();
    let mut model = HashMap::new();
    let mut chunks = data.chunks_exact(5);
    for c in &mut chunks {
        // Keys from a few shapes: small, multiples of 4096, spread out.
        let raw = u16::from_le_bytes([c[1], c[2]]) as u64;
        let key = match c[0] >> 6 {
            0 => raw,
            1 => raw << 12,
            2 => raw.wrapping_mul(0x9E37_79B9_7F4A_7C15),
            _ => raw % 64,
        };
        let value = match c[3] >> 6 {
            0 => c[4] as u64,
            1 => (c[4] as u64) << (c[3] & 63),
            2 => u64::MAX - c[4] as u64,
            _ => raw.wrapping_mul(c[4] as u64 | 1),
        };
        match c[0] & 3 {
            0 | 1 => assert_eq!(table.insert(key, value), model.insert(key, value)),
            2 => assert_eq!(table.remove(key), model.remove(&key)),
            // One get in sixteen commits and reopens the file instead: a
            // commit to the journal, or a checkpoint when the value's low
            // bit says so.
            _ if c[0] & 0x3c == 0 => {
                if c[4] & 1 == 0 {
                    table.commit().unwrap();
                } else {
                    table.checkpoint().unwrap();
                }
                let image = table.into_store().into_device();
                table = ExHash::open_on(image).unwrap();
                table.check_invariants().unwrap();
                assert_eq!(table.len(), model.len() as u64);
            }
            _ => assert_eq!(table.get(key), model.get(&key).copied()),
        }
    }
    assert_eq!(table.len(), model.len() as u64);
    table.check_invariants().unwrap();
    let mut got: Vec<_> = table.iter().collect();
    got.sort_unstable();
    let mut want: Vec<_> = model.into_iter().collect();
    want.sort_unstable();
    assert_eq!(got, want);
});
