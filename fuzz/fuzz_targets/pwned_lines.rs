//! Arbitrary corpus text: prepare must give an index or a clear error,
//! never a panic, and an index built with --skip-invalid must verify, with
//! whole hashes or kept to their top bits (the last byte chooses how many),
//! every hash or those seen at least 2 to 4 times (the first byte chooses).
#![no_main]

use libfuzzer_sys::fuzz_target;
use seekless_pwned::test_util::build_to_vec;
use seekless_pwned::{BuildOptions, Index, Input};

fuzz_target!(|data: &[u8]| {
    let key_bits = match data.last() {
        Some(&b) if b >= 0x80 => Some(32 + u32::from(b & 0x7f)),
        _ => None,
    };
    let min_count = data.first().map_or(1, |&b| 1 + u64::from(b % 4));
    for skip_invalid in [false, true] {
        let mut options = BuildOptions::default();
        options.threads = 2;
        options.memory = 1 << 16;
        options.skip_invalid = skip_invalid;
        options.key_bits = key_bits;
        options.min_count = min_count;
        let input = Input::Bytes {
            name: "fuzz".into(),
            data: data.to_vec(),
        };
        if let Ok((bytes, summary)) = build_to_vec(vec![input], &options) {
            let index = Index::from_bytes(bytes).expect("a fresh index opens");
            index.verify().expect("a fresh index verifies");
            assert_eq!(index.len(), summary.hashes);
            assert_eq!(index.stats().min_count, min_count);
        }
    }
});
