//! The decoder against its byte-at-a-time reference
//! ([`fast_and_reference`]): the same tokens or the same error on real
//! torrents cut and damaged, numbers of every width around the shortcuts'
//! reads, random bencode-like bytes, in both modes and under tight limits.

use super::*;
use proptest::prelude::*;

/// Both decoders on `input` in both modes, with `limits`: equal results.
fn agree_with(input: &[u8], limits: &Limits) {
    for strict in [false, true] {
        let (fast, reference) = fast_and_reference(input, strict, limits);
        assert_eq!(
            fast,
            reference,
            "strict {strict}, input {:?}",
            String::from_utf8_lossy(input)
        );
    }
}

fn tight() -> Limits {
    Limits {
        depth: 3,
        tokens: 6,
        input: 40,
        length_digits: 2,
    }
}

fn agree(input: &[u8]) {
    agree_with(input, &Limits::default());
    agree_with(input, &tight());
}

/// libtorrent's torrents from `tests/data`.
fn torrents() -> [&'static [u8]; 6] {
    [
        include_bytes!("../../tests/data/sample.torrent"),
        include_bytes!("../../tests/data/base-v1.torrent"),
        include_bytes!("../../tests/data/base-v2.torrent"),
        include_bytes!("../../tests/data/many-pad-files.torrent"),
        include_bytes!("../../tests/data/v2_hybrid.torrent"),
        include_bytes!("../../tests/data/v2_multiple_files.torrent"),
    ]
}

#[test]
fn real_torrents_decode_to_the_same_tokens() {
    for data in torrents() {
        let (fast, reference) = fast_and_reference(data, false, &Limits::default());
        assert!(fast.as_ref().is_ok_and(|t| t.len() > 10));
        assert_eq!(fast, reference);
        // The reusable parser's buffers (grown, then reused) hold the same.
        let mut parser = Parser::new();
        for _ in 0..2 {
            parser.parse(data).expect("valid");
            let tokens: Vec<_> = parser.tokens.iter().map(|t| (t.offset, t.info)).collect();
            assert_eq!(Ok(tokens), reference);
        }
    }
}

#[test]
fn cut_and_damaged_torrents_fail_alike() {
    // many-pad-files (125 KB, 14,424 tokens) is left to the test above:
    // 150 cuts of it, decoded 16 ways, would take this test from one second
    // to ten in a debug build.
    for data in torrents().into_iter().filter(|data| data.len() < 100_000) {
        for cut in (0..data.len()).step_by((data.len() / 150).max(1)) {
            agree_with(&data[..cut], &Limits::default());
            let mut copy = data.to_vec();
            for b in [b'e', b'0', b':', b'x', b'i', b'-', b'9'] {
                copy[cut] = b;
                agree_with(&copy, &Limits::default());
            }
        }
    }
}

#[test]
fn numbers_of_every_width_around_the_word() {
    for digits in 0..=22 {
        let n = "7".repeat(digits);
        let zeros = "0".repeat(digits);
        let mut cases = vec![
            format!("i{n}e"),
            format!("i-{n}e"),
            format!("i{zeros}e"),
            format!("i{n}"),
            format!("i{n}x"),
            format!("{n}:"),
            format!("{zeros}:"),
            format!("{n}"),
            format!("{n}x"),
            format!("l{n}:e"),
            format!("d{zeros}:i1ee"),
        ];
        // A prefix whose payload fits exactly, or is one byte short.
        if (1..=4).contains(&digits) {
            let len: usize = n.parse().unwrap();
            cases.push(format!("{n}:{}", "a".repeat(len)));
            cases.push(format!("{n}:{}", "a".repeat(len - 1)));
        }
        for case in cases {
            // And with padding after it, so the 8-byte reads fit.
            agree(case.as_bytes());
            agree(format!("{case}eeeeeeee").as_bytes());
            agree(format!("l{case}ee").as_bytes());
        }
    }
}

#[test]
fn non_digits_stops_at_the_first_non_digit() {
    for (text, n) in [
        ("1:", 1),
        ("42xxxxxx", 2),
        ("0000007e", 7),
        ("99999999", 8),
        ("e", 0),
        ("9\u{7f}\u{ff}", 1),
    ] {
        let mut bytes = [b'x'; 8];
        bytes[..text.len().min(8)].copy_from_slice(&text.as_bytes()[..text.len().min(8)]);
        if text == "99999999" {
            bytes = *b"99999999";
        }
        assert_eq!(
            non_digits(u64::from_le_bytes(bytes)).trailing_zeros() / 8,
            n,
            "{text:?}"
        );
    }
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 2000,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Bytes drawn mostly from bencode's own alphabet.
fn bencode_like() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        8 => prop::sample::select(b"0123456789".to_vec()),
        6 => prop::sample::select(b"ield:-".to_vec()),
        1 => any::<u8>(),
    ];
    prop::collection::vec(byte, 0..48)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn random_bencode_like_bytes_agree(input in bencode_like()) {
        agree(&input);
    }

    #[test]
    fn valid_lists_agree(items in prop::collection::vec((any::<bool>(), 0u64..100_000_000, 0usize..12), 1..12)) {
        let mut input = b"l".to_vec();
        for (int, n, len) in items {
            if int {
                input.extend(format!("i{n}e").as_bytes());
            } else {
                input.extend(format!("{len}:").as_bytes());
                input.extend(std::iter::repeat_n(b'a', len));
            }
        }
        input.push(b'e');
        let (fast, reference) = fast_and_reference(&input, false, &Limits::default());
        prop_assert!(fast.is_ok());
        prop_assert_eq!(fast, reference);
        agree_with(&input, &tight());
    }
}
