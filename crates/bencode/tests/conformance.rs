//! Decoder conformance: every error kind with libtorrent's offset, the limits,
//! huge strings, truncation of real torrents at every byte, strict mode.
//!
//! The expected verdicts of the `LIBTORRENT` table were produced by
//! libtorrent 2.0.8's `bdecode` (Debian `libtorrent-rasterbar-dev`, via
//! `benches/libtorrent/bdecode_harness.cpp check`).

mod common;

use common::torrents;
use seekless_bencode::{Document, ErrorKind, Kind, Limits, Parser, decode, decode_strict};

type Verdict = Option<(&'static str, usize)>;

/// The error code and offset of a failed decode, `None` for a success.
fn outcome(result: seekless_bencode::Result<Document<'_>>) -> Verdict {
    result.err().map(|e| (e.code(), e.offset()))
}

fn verdict(input: &[u8]) -> Verdict {
    outcome(decode(input))
}

fn strict_verdict(input: &[u8]) -> Verdict {
    outcome(decode_strict(input))
}

const LIBTORRENT: &[(&[u8], Verdict)] = &[
    (b"", Some(("unexpected_eof", 0))),
    (b"e", Some(("unexpected_eof", 0))),
    (b"x", Some(("expected_value", 0))),
    (b"i", Some(("unexpected_eof", 1))),
    (b"i-", Some(("unexpected_eof", 2))),
    (b"ie", Some(("expected_digit", 1))),
    (b"i-e", Some(("expected_digit", 2))),
    (b"i12", Some(("unexpected_eof", 3))),
    (b"i12x", Some(("expected_digit", 3))),
    (b"i1-2e", Some(("expected_digit", 2))),
    (b"i123456789012345678901e", Some(("overflow", 22))),
    (b"i12345678901234567890e", None),
    (b"i-12345678901234567890e", None),
    (b"i99999999999999999999e", None),
    (b"i123456789012345678901", Some(("overflow", 22))),
    (b"i00e", None),
    (b"i-0e", None),
    (b"5", Some(("unexpected_eof", 1))),
    (b"5:", Some(("unexpected_eof", 1))),
    (b"5:ab", Some(("unexpected_eof", 1))),
    (b"3:abc", None),
    (b"12", Some(("expected_colon", 2))),
    (b"12a:", Some(("expected_digit", 2))),
    (b"1a", Some(("expected_digit", 1))),
    (b"3x:abc", Some(("expected_digit", 1))),
    (b"99999999999999999999:", Some(("overflow", 18))),
    (b"9223372036854775807:", Some(("unexpected_eof", 19))),
    (b"9223372036854775808:x", Some(("overflow", 18))),
    (b"00000000:", None),
    (b"000000000:", None),
    (b"123456789:x", Some(("unexpected_eof", 9))),
    (b"000000001:x", None),
    (b"00000001:x", None),
    (b"d", Some(("unexpected_eof", 1))),
    (b"de", None),
    (b"di1ei2ee", Some(("expected_digit", 1))),
    (b"d1:ae", Some(("expected_value", 4))),
    (b"d1:a", Some(("unexpected_eof", 4))),
    (b"d1:ai1e", Some(("unexpected_eof", 7))),
    (b"d1:ai1", Some(("unexpected_eof", 6))),
    (b"dxe", Some(("expected_digit", 1))),
    (b"d1:a1:b", Some(("unexpected_eof", 7))),
    (b"l", Some(("unexpected_eof", 1))),
    (b"le", None),
    (b"lee", None),
    (b"li1e", Some(("unexpected_eof", 4))),
    (b"li1ee", None),
    (b"lxe", Some(("expected_value", 1))),
    (b"l:e", Some(("expected_value", 1))),
    (b"d1:b0:1:a0:e", None),
    (b"d1:a0:1:a0:e", None),
    (b"i1ejunk", None),
    (b"lei", None),
    (b"d1:ae1", Some(("expected_value", 4))),
    (b"-", Some(("expected_value", 0))),
    (b"i-0", Some(("unexpected_eof", 3))),
    (b"1:", Some(("unexpected_eof", 1))),
    (b"0:", None),
    (b"d0:0:e", None),
    (b"d1:al", Some(("unexpected_eof", 5))),
    (b"dle", Some(("expected_digit", 1))),
];

#[test]
fn same_verdict_and_offset_as_libtorrent() {
    for (input, expected) in LIBTORRENT {
        assert_eq!(
            verdict(input),
            *expected,
            "input {:?}",
            String::from_utf8_lossy(input)
        );
    }
}

#[test]
fn every_error_kind_is_covered() {
    let kinds: std::collections::HashSet<&str> = LIBTORRENT
        .iter()
        .filter_map(|(_, v)| v.map(|(k, _)| k))
        .collect();
    for kind in [
        "expected_digit",
        "expected_colon",
        "unexpected_eof",
        "expected_value",
        "depth_exceeded",
        "limit_exceeded",
        "overflow",
    ] {
        let covered = kinds.contains(kind) || matches!(kind, "depth_exceeded" | "limit_exceeded"); // tested below
        assert!(covered, "{kind} not covered");
    }
}

#[test]
fn depth_limit_matches_libtorrent() {
    let nest = |n: usize| {
        let mut v = vec![b'l'; n];
        v.extend(std::iter::repeat_n(b'e', n));
        v
    };
    assert_eq!(verdict(&nest(99)), None);
    assert_eq!(verdict(&nest(100)), Some(("depth_exceeded", 100)));
    assert_eq!(verdict(&[b'l'; 100]), Some(("unexpected_eof", 100)));
    let dicts = |n: usize| {
        let mut v = b"d1:a".repeat(n);
        v.extend_from_slice(b"i1e");
        v.extend(std::iter::repeat_n(b'e', n));
        v
    };
    assert_eq!(verdict(&dicts(99)), None);
    assert_eq!(verdict(&dicts(100)), Some(("depth_exceeded", 397)));
    // A million levels: no recursion, so no stack overflow.
    let deep = vec![b'l'; 1_000_000];
    assert_eq!(verdict(&deep), Some(("depth_exceeded", 100)));
    let mut parser = Parser::new().with_limits(Limits {
        depth: 2_000_000,
        ..Limits::default()
    });
    let deep = nest(1_000_000);
    let root = parser.parse(&deep).expect("deep nesting within the limit");
    assert_eq!(root.raw().len(), 2_000_000);
    let mut parser = Parser::new().with_limits(Limits {
        depth: 3,
        ..Limits::default()
    });
    assert!(parser.parse(b"llee").is_ok());
    assert_eq!(
        parser.parse(b"llleee").unwrap_err().offset(),
        3,
        "third level hits a depth limit of 3"
    );
}

#[test]
fn token_limit() {
    let mut list = b"l".to_vec();
    for _ in 0..10 {
        list.extend_from_slice(b"i1e");
    }
    list.push(b'e');
    // 12 tokens: the list, ten integers, the end.
    let mut parser = Parser::new().with_limits(Limits {
        tokens: 12,
        ..Limits::default()
    });
    assert!(parser.parse(&list).is_ok());
    let mut parser = Parser::new().with_limits(Limits {
        tokens: 11,
        ..Limits::default()
    });
    let err = parser.parse(&list).unwrap_err();
    assert_eq!((err.code(), err.offset()), ("limit_exceeded", 31));
    // The default: 2,000,000 tokens.
    let mut many = b"l".to_vec();
    many.extend(b"0:".repeat(1_999_998));
    many.push(b'e');
    assert_eq!(verdict(&many), None);
    many.insert(1, b'0');
    many.insert(1, b':');
    many.swap(1, 2);
    assert_eq!(verdict(&many), Some(("limit_exceeded", many.len() - 1)));
}

#[test]
fn input_and_length_prefix_limits() {
    // Length prefixes of up to 16 digits, like libtorrent 2.0.8.
    let mut sixteen = b"0".repeat(16);
    sixteen.push(b':');
    assert_eq!(verdict(&sixteen), None);
    let mut seventeen = b"0".repeat(17);
    seventeen.push(b':');
    assert_eq!(verdict(&seventeen), Some(("limit_exceeded", 18)));
    let mut parser = Parser::new().with_limits(Limits {
        input: 10,
        ..Limits::default()
    });
    assert!(parser.parse(b"8:abcdefgh").is_ok());
    let err = parser.parse(b"9:abcdefghi").unwrap_err();
    assert_eq!((err.code(), err.offset()), ("limit_exceeded", 0));
}

#[test]
fn huge_strings() {
    // A length field far beyond the input never allocates: it is an EOF.
    assert_eq!(verdict(b"9999999999999:abc"), Some(("unexpected_eof", 13)));
    assert_eq!(
        verdict(b"9223372036854775807:"),
        Some(("unexpected_eof", 19))
    );
    // A 100 MB + 1 string decodes, without copying.
    let n = 100_000_001;
    let mut input = format!("{n}:").into_bytes();
    input.resize(input.len() + n, b'x');
    let doc = decode(&input).expect("100 MB string");
    let bytes = doc.root().as_bytes().unwrap();
    assert_eq!(bytes.len(), n);
    assert_eq!(bytes.as_ptr(), input[10..].as_ptr());
    // One byte short.
    assert_eq!(
        verdict(&input[..input.len() - 1]),
        Some(("unexpected_eof", 9))
    );
}

#[test]
fn real_torrents_decode_and_truncations_fail() {
    let mut parser = Parser::new();
    for (name, data) in torrents() {
        let root = parser.parse(data).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(root.kind(), Kind::Dict);
        assert_eq!(root.raw(), data, "{name}: the root spans the file");
        // Every byte of the small torrents; for the large ones every byte of
        // the first and last 2 KB and about 1,000 cuts in between (debug
        // builds parse slowly).
        let n = data.len();
        let cuts: Vec<usize> = if n <= 20_000 {
            (0..n).collect()
        } else {
            (0..2048)
                .chain((2048..n - 2048).step_by(n / 1000))
                .chain(n - 2048..n)
                .collect()
        };
        for cut in cuts {
            let err = parser
                .parse(&data[..cut])
                .expect_err("a truncated dictionary cannot decode");
            let offset = err.offset();
            assert!(
                matches!(err.code(), "unexpected_eof" | "expected_colon"),
                "{name} cut at {cut}: {err}"
            );
            assert!(offset <= cut, "{name} cut at {cut}: offset {offset}");
        }
    }
}

#[test]
fn corrupted_bytes_never_panic() {
    let mut parser = Parser::new();
    let mut strict = Parser::new().strict(true);
    for (_, data) in torrents() {
        let mut copy = data.to_vec();
        let step = (data.len() / 400).max(1);
        for i in (0..data.len()).step_by(step) {
            for b in [b'e', b'0', b':', b'x', b'd', b'9'] {
                let old = copy[i];
                copy[i] = b;
                if let Ok(root) = parser.parse(&copy) {
                    let _ = root.raw();
                    let _ = root.warnings();
                }
                let _ = strict.parse(&copy);
                copy[i] = old;
            }
        }
    }
}

#[test]
fn strict_mode_kinds() {
    let cases: &[(&[u8], Verdict)] = &[
        (b"d1:ai1e1:bi2ee", None),
        (b"d1:bi1e1:ai2ee", Some(("unsorted_key", 7))),
        (b"d1:ai1e1:ai2ee", Some(("duplicate_key", 7))),
        (b"d2:abi1e1:ai2ee", Some(("unsorted_key", 8))),
        (b"d1:ai1e2:abi2ee", None),
        (b"i01e", Some(("leading_zero", 1))),
        (b"i-01e", Some(("negative_zero", 1))),
        (b"i00e", Some(("leading_zero", 1))),
        (b"i0e", None),
        (b"i-0e", Some(("negative_zero", 1))),
        (b"i-10e", None),
        (b"01:a", Some(("leading_zero", 0))),
        (b"0:", None),
        (b"i1ex", Some(("trailing_data", 3))),
        (b"lei", Some(("trailing_data", 2))),
        // Default-mode errors come first within a token...
        (b"i01", Some(("unexpected_eof", 3))),
        // ...but the first problem in input order wins.
        (b"li01ei", Some(("leading_zero", 2))),
        (b"d1:b0:1:a0:", Some(("unsorted_key", 6))),
        // Key order is per dictionary.
        (b"d1:bd1:ai1ee1:cd1:ai1eee", None),
    ];
    for (input, expected) in cases {
        assert_eq!(
            strict_verdict(input),
            *expected,
            "input {:?}",
            String::from_utf8_lossy(input)
        );
        match (decode(input), expected) {
            (Ok(doc), Some((kind, offset))) => {
                // Default mode accepts these and reports them as warnings.
                let warnings = doc.root().warnings();
                let first = warnings.first().expect("a warning");
                assert_eq!((first.code(), first.offset()), (*kind, *offset));
            }
            (Ok(doc), None) => assert!(doc.root().warnings().is_empty()),
            (Err(_), _) => assert!(input.ends_with(b"i") || !input.ends_with(b"e")),
        }
    }
    for (name, data) in torrents() {
        assert!(decode(data).unwrap().root().warnings().is_empty(), "{name}");
        assert!(decode_strict(data).is_ok(), "{name}");
    }
}

#[test]
fn node_views() {
    let input = b"d4:infod6:lengthi5e4:name3:abce4:listli1ei-2e3:xyzlee5:dupesi1e5:dupesi2e3:bigi9223372036854775807e3:mini-9223372036854775808e4:overi9223372036854775808ee";
    let doc = decode(input).unwrap();
    let root = doc.root();
    let info = root.get(b"info").unwrap();
    assert_eq!(info.raw(), b"d6:lengthi5e4:name3:abce");
    assert_eq!(info.get(b"length").unwrap().as_int().unwrap(), 5);
    assert_eq!(info.get(b"name").unwrap().as_str(), Some("abc"));
    assert_eq!(info.get(b"name").unwrap().raw(), b"3:abc");
    let list = root.get(b"list").unwrap().as_list().unwrap();
    assert_eq!(list.len(), 4);
    assert_eq!(list.get(1).unwrap().as_int().unwrap(), -2);
    assert_eq!(list.get(2).unwrap().as_bytes(), Some(&b"xyz"[..]));
    assert!(list.get(3).unwrap().as_list().unwrap().is_empty());
    assert!(list.get(4).is_none());
    assert_eq!(
        root.get(b"dupes").unwrap().as_int().unwrap(),
        1,
        "first match wins"
    );
    assert_eq!(root.get(b"big").unwrap().as_int().unwrap(), i64::MAX);
    assert_eq!(root.get(b"min").unwrap().as_int().unwrap(), i64::MIN);
    let over = root.get(b"over").unwrap();
    assert_eq!(over.as_int().unwrap_err().kind(), ErrorKind::Overflow);
    assert_eq!(
        root.get(b"list").unwrap().as_int().unwrap_err().kind(),
        ErrorKind::WrongType {
            expected: Kind::Int,
            found: Kind::List,
        }
    );
    let keys: Vec<&[u8]> = root.as_dict().unwrap().iter().map(|(k, _)| k).collect();
    assert_eq!(
        keys,
        [
            &b"info"[..],
            b"list",
            b"dupes",
            b"dupes",
            b"big",
            b"min",
            b"over"
        ]
    );
    assert!(root.get(b"missing").is_none());
    assert_eq!(doc.token_count(), 27);
}

#[test]
fn parser_reuses_its_buffers() {
    let mut parser = Parser::new();
    for (_, data) in torrents() {
        let root = parser.parse(data).unwrap();
        assert!(root.get(b"info").is_some());
    }
    assert_eq!(parser.parse(b"i42e").unwrap().as_int().unwrap(), 42);
    assert!(parser.parse(b"i42").is_err());
    assert_eq!(parser.parse(b"3:abc").unwrap().as_str(), Some("abc"));
}
