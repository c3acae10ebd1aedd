//! The JSON we print (`bencode dump`, `torrent info --json`) is valid JSON
//! with the documented shapes, and `from_json` rebuilds the exact bytes of
//! whatever was dumped.

mod common;

use common::torrents;
use proptest::prelude::*;
use seekless_bencode::torrent::{Torrent, summary_json};
use seekless_bencode::{ErrorKind, decode, from_json, to_json};
use serde_json::Value;

fn dump(data: &[u8]) -> String {
    let doc = decode(data).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(data)));
    let mut out = String::new();
    to_json(doc.root(), &mut out);
    out
}

/// dump, then encode: the same bytes, and the dump is valid JSON.
fn assert_round_trip(data: &[u8]) {
    let json = dump(data);
    // serde_json stops at 128 levels (a `$dict` takes three a level); the
    // dump's own reader has no limit.
    if let Err(e) = serde_json::from_str::<Value>(&json) {
        assert!(e.to_string().starts_with("recursion limit"), "{e}: {json}");
    }
    let back = from_json(json.as_bytes()).unwrap_or_else(|e| panic!("{e}: {json}"));
    assert!(
        back == data,
        "{json}\n  in:  {:?}\n  out: {:?}",
        String::from_utf8_lossy(data),
        String::from_utf8_lossy(&back)
    );
}

#[test]
fn dump_is_valid_json_mirroring_the_document() {
    for (name, data) in torrents() {
        let doc = decode(data).unwrap();
        let mut out = String::new();
        to_json(doc.root(), &mut out);
        let json: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{name}: {e}"));
        let info = &json["info"];
        let piece_length = doc
            .root()
            .get(b"info")
            .unwrap()
            .get(b"piece length")
            .unwrap();
        assert_eq!(
            info["piece length"].as_i64(),
            Some(piece_length.as_int().unwrap()),
            "{name}"
        );
        // Binary hashes are marked hex.
        if let Some(pieces) = info.get("pieces") {
            let hex = pieces["$hex"].as_str().expect("pieces are binary");
            assert_eq!(hex.len() % 40, 0, "{name}");
        }
    }
    let json: Value = serde_json::from_str(&dump(b"d2:\xff\xfei1ee")).unwrap();
    assert_eq!(json["$dict"][0][0]["$hex"], "fffe");
    assert_eq!(json["$dict"][0][1], 1);
}

#[test]
fn dump_then_encode_is_the_identity_on_every_test_torrent() {
    for (_, data) in torrents() {
        assert_round_trip(data);
    }
}

#[test]
fn dump_then_encode_is_the_identity_on_what_only_the_lenient_decoder_takes() {
    let inputs: &[&[u8]] = &[
        b"i007e",
        b"i-0e",
        b"i-00e",
        b"i00000000000000000000e",
        b"i-99999999999999999999e",
        b"03:abc",
        b"00:",
        b"d1:bi1e1:ai2ee",
        b"d1:ai1e1:ai1ee",
        b"d4:$hex2:ffe",
        b"d4:$int1:1e",
        b"d9:$trailingli1e0:ee",
        b"d5:$dictlee",
        b"d1:$i1e1:$i2ee",
        b"d0:0:e",
        b"d2:\xff\xfeli1eee",
        b"d02:abi1ee",
        b"l1:\xff4:\xf0\x9f\x98\x80i-0ee",
        b"i1etrailing",
        b"de\xff\x00",
        b"3:\"\\/",
        b"5:\x00\x1f\x7f\xc3\xa9",
        b"d1:ad1:ad1:ad1:ai1eeeee",
    ];
    for data in inputs {
        assert_round_trip(data);
    }
    let mut deep = b"d1:a".repeat(99);
    deep.extend_from_slice(b"i1e");
    deep.extend(std::iter::repeat_n(b'e', 99));
    assert_round_trip(&deep);
    let mut deep = b"d01:a".repeat(99);
    deep.extend_from_slice(b"i01e");
    deep.extend(std::iter::repeat_n(b'e', 99));
    assert_round_trip(&deep);
}

#[test]
fn every_truncated_dump_is_a_clear_error() {
    let json = dump(b"d1:ali-0e3:x\"yd1:bi1eee2:\xff\xfe02:ab3:keyi12ee").into_bytes();
    assert!(json.len() > 60, "{}", String::from_utf8_lossy(&json));
    for end in 0..json.len() {
        match from_json(&json[..end]) {
            Err(e) if matches!(e.kind(), ErrorKind::Json { .. }) => {
                assert!(e.offset() <= end, "{end}: {e}")
            }
            Ok(_) => {
                // Only a prefix that is itself a whole value (a bare number).
                assert!(json[..end].iter().all(|c| c.is_ascii_digit() || *c == b'-'));
            }
            Err(e) => panic!("{end}: {e}"),
        }
    }
}

/// Bencode documents of every shape the lenient decoder takes: leading
/// zeros, `-0`, unsorted and repeated keys, `$` keys, any bytes, trailing data.
fn document() -> impl Strategy<Value = Vec<u8>> {
    let int = (any::<bool>(), 0usize..3, proptest::num::u64::ANY).prop_map(|(minus, zeros, n)| {
        let mut v = b"i".to_vec();
        if minus {
            v.push(b'-');
        }
        let digits = "0".repeat(zeros) + &n.to_string();
        // The decoder takes up to 20 digits.
        v.extend_from_slice(&digits.as_bytes()[..digits.len().min(20)]);
        v.push(b'e');
        v
    });
    let bytes = (
        0usize..2,
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..8),
            "[a-z$é]{0,6}".prop_map(String::into_bytes),
        ],
    )
        .prop_map(|(zeros, payload)| {
            let mut v = vec![b'0'; zeros];
            v.extend_from_slice(format!("{}:", payload.len()).as_bytes());
            v.extend_from_slice(&payload);
            v
        });
    let key = prop_oneof![
        bytes.clone(),
        prop_oneof![Just("a"), Just("b"), Just("$hex"), Just("$x")].prop_map(|k| format!(
            "{}:{k}",
            k.len()
        )
        .into_bytes()),
    ];
    let leaf = prop_oneof![int, bytes];
    let value = leaf.prop_recursive(6, 64, 6, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(|items| {
                let mut v = b"l".to_vec();
                items.iter().for_each(|i| v.extend_from_slice(i));
                v.push(b'e');
                v
            }),
            proptest::collection::vec((key.clone(), inner), 0..5).prop_map(|pairs| {
                let mut v = b"d".to_vec();
                for (k, i) in &pairs {
                    v.extend_from_slice(k);
                    v.extend_from_slice(i);
                }
                v.push(b'e');
                v
            }),
        ]
    });
    (value, proptest::collection::vec(any::<u8>(), 0..3)).prop_map(|(mut v, rest)| {
        v.extend_from_slice(&rest);
        v
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn dump_then_encode_is_the_identity(data in document()) {
        assert_round_trip(&data);
    }

    #[test]
    fn encode_never_panics_on_any_text(text in "[\\[\\]{}\",:0-9a-f$ -]{0,40}") {
        if let Ok(bytes) = from_json(text.as_bytes()) {
            // What it builds decodes, and dumps back to the same bytes.
            if decode(&bytes).is_ok() {
                assert_round_trip(&bytes);
            }
        }
    }
}

#[test]
fn torrent_summary_is_valid_json() {
    for (name, data) in torrents() {
        let t = Torrent::from_bytes(data).unwrap();
        let json: Value =
            serde_json::from_str(&summary_json(&t)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(json["name"], t.name.as_str(), "{name}");
        assert_eq!(json["version"], t.version.name(), "{name}");
        assert_eq!(json["piece_length"], t.piece_length, "{name}");
        assert_eq!(json["total_size"], t.total_size, "{name}");
        assert_eq!(
            json["files"].as_array().unwrap().len(),
            t.files.len(),
            "{name}"
        );
        assert!(
            json["magnet"]
                .as_str()
                .unwrap()
                .starts_with("magnet:?xt=urn:bt"),
            "{name}"
        );
    }
}
