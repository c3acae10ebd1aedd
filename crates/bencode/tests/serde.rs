//! serde round trips, borrowing, and encoder properties.

use std::collections::BTreeMap;

use proptest::prelude::*;
use seekless_bencode::{
    Encoder, ErrorKind, decode, decode_strict, from_bytes, from_node, to_bytes,
};
use serde::{Deserialize, Serialize};

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Info<'a> {
    name: &'a str,
    #[serde(rename = "piece length")]
    piece_length: u64,
    #[serde(borrow)]
    pieces: &'a [u8],
    length: Option<u64>,
    files: Option<Vec<FileEntry<'a>>>,
    private: Option<bool>,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct FileEntry<'a> {
    length: u64,
    #[serde(borrow)]
    path: Vec<&'a str>,
    attr: Option<&'a str>,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Metainfo<'a> {
    announce: Option<String>,
    #[serde(borrow)]
    info: Info<'a>,
}

#[test]
fn deserializes_a_real_torrent_borrowing_from_the_input() {
    let data = include_bytes!("data/sample.torrent");
    let meta: Metainfo = from_bytes(data).unwrap();
    assert_eq!(meta.info.name, "sample");
    assert_eq!(meta.info.piece_length, 16384);
    assert_eq!(meta.info.pieces.len(), 40);
    let range = data.as_ptr_range();
    assert!(
        range.contains(&meta.info.pieces.as_ptr()),
        "pieces borrowed"
    );
    assert!(range.contains(&meta.info.name.as_ptr()), "name borrowed");
    let files = meta.info.files.as_ref().unwrap();
    assert_eq!(files[1].attr, Some("p"));
    let doc = decode(data).unwrap();
    let info = doc.root().get(b"info").unwrap();
    let again: Info = from_node(info).unwrap();
    assert_eq!(again, meta.info);
    // Serialized back: canonical, and equal once read again (the file's
    // per-file sha1 fields are not in the struct).
    let bytes = to_bytes(&meta).unwrap();
    assert!(decode_strict(&bytes).is_ok());
    let back: Metainfo = from_bytes(&bytes).unwrap();
    assert_eq!(back, meta);
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
enum Message {
    Ping,
    Get(u32),
    Pair(i64, String),
    Put { key: String, value: Vec<u8> },
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Everything {
    z: i8,
    a: bool,
    m: BTreeMap<String, i64>,
    big: u64,
    neg: i64,
    bytes: Vec<u8>,
    tuple: (u8, String),
    messages: Vec<Message>,
    nothing: Option<u32>,
    c: char,
}

#[test]
fn round_trips_every_shape_with_sorted_keys() {
    let value = Everything {
        z: -5,
        a: true,
        m: [("b".to_string(), 2), ("a".to_string(), 1)]
            .into_iter()
            .collect(),
        big: u64::MAX,
        neg: i64::MIN,
        bytes: vec![0, 255, 7],
        tuple: (9, "nine".into()),
        messages: vec![
            Message::Ping,
            Message::Get(3),
            Message::Pair(-1, "x".into()),
            Message::Put {
                key: "k".into(),
                value: b"v".to_vec(),
            },
        ],
        nothing: None,
        c: 'é',
    };
    let bytes = to_bytes(&value).unwrap();
    assert!(decode_strict(&bytes).is_ok(), "canonical output");
    assert!(
        bytes.starts_with(b"d1:ai1e3:bigi18446744073709551615e5:bytes3:\x00\xff\x071:c2:\xc3\xa9"),
        "{}",
        String::from_utf8_lossy(&bytes)
    );
    assert!(!bytes.windows(7).any(|w| w == b"nothing"), "None omitted");
    let back: Everything = from_bytes(&bytes).unwrap();
    assert_eq!(back, value);
}

#[test]
fn serde_errors_are_clear() {
    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Needs {
        n: u8,
    }
    let err = from_bytes::<Needs>(b"d1:ni300ee").unwrap_err();
    assert_eq!((err.offset(), err.decode_error()), (Some(4), None), "{err}");
    let err = from_bytes::<Needs>(b"d1:n3:abce").unwrap_err();
    let decode = err.decode_error().expect("a wrong type");
    assert!(
        matches!(decode.kind(), ErrorKind::WrongType { .. }) && decode.offset() == 4,
        "{err}"
    );
    let err = from_bytes::<Needs>(b"de").unwrap_err();
    assert_eq!(err.to_string(), "missing field `n`");
    let err = from_bytes::<Needs>(b"d1:n").unwrap_err();
    let decode = err.decode_error().expect("not bencode");
    assert_eq!(
        (decode.kind(), decode.offset()),
        (ErrorKind::UnexpectedEof, 4)
    );
    assert!(from_bytes::<f64>(b"i1e").is_err());
    assert!(to_bytes(&1.5f64).is_err());
    assert!(to_bytes(&None::<u8>).is_err());
    let mut dup = BTreeMap::new();
    dup.insert(1u8, 1u8);
    assert_eq!(to_bytes(&dup).unwrap(), b"d1:1i1ee");
}

/// A bencode value model for property tests.
#[derive(Debug, Clone)]
enum Model {
    Int(i64),
    Bytes(Vec<u8>),
    List(Vec<Model>),
    Dict(BTreeMap<Vec<u8>, Model>),
}

fn model() -> impl Strategy<Value = Model> {
    let leaf = prop_oneof![
        any::<i64>().prop_map(Model::Int),
        proptest::collection::vec(any::<u8>(), 0..20).prop_map(Model::Bytes),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Model::List),
            proptest::collection::btree_map(
                proptest::collection::vec(any::<u8>(), 0..6),
                inner,
                0..6
            )
            .prop_map(Model::Dict),
        ]
    })
}

fn write(e: &mut Encoder, m: &Model) {
    match m {
        Model::Int(v) => {
            e.int(*v);
        }
        Model::Bytes(b) => {
            e.bytes(b);
        }
        Model::List(items) => {
            e.list();
            for i in items {
                write(e, i);
            }
            e.end();
        }
        Model::Dict(entries) => {
            e.dict();
            for (k, v) in entries {
                e.bytes(k);
                write(e, v);
            }
            e.end();
        }
    }
}

fn check(node: seekless_bencode::Node<'_>, m: &Model) {
    match m {
        Model::Int(v) => assert_eq!(node.as_int().unwrap(), *v),
        Model::Bytes(b) => assert_eq!(node.as_bytes().unwrap(), &b[..]),
        Model::List(items) => {
            let list = node.as_list().unwrap();
            assert_eq!(list.len(), items.len());
            for (n, i) in list.iter().zip(items) {
                check(n, i);
            }
        }
        Model::Dict(entries) => {
            let dict = node.as_dict().unwrap();
            assert_eq!(dict.len(), entries.len());
            for ((k, n), (mk, mv)) in dict.iter().zip(entries) {
                assert_eq!(k, &mk[..]);
                check(n, mv);
                assert_eq!(dict.get(mk).unwrap().raw(), n.raw());
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(debug_assertions) { 200 } else { 2000 }))]

    #[test]
    fn encoded_models_decode_strictly_and_read_back(m in model()) {
        let mut e = Encoder::new();
        write(&mut e, &m);
        let bytes = e.finish().unwrap();
        let doc = decode_strict(&bytes).unwrap();
        check(doc.root(), &m);
        let mut again = Encoder::new();
        again.node(doc.root());
        prop_assert_eq!(again.finish().unwrap(), bytes);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(
        prop_oneof![Just(b'd'), Just(b'l'), Just(b'e'), Just(b'i'), Just(b':'), Just(b'-'), b'0'..=b'9', any::<u8>()],
        0..64,
    )) {
        if let Ok(doc) = decode(&bytes) {
            let root = doc.root();
            let _ = root.warnings();
            let mut e = Encoder::new();
            e.node(root);
            let re = e.finish().unwrap();
            prop_assert!(decode_strict(&re).is_ok() || root.warnings().iter().any(|w| w.code() != "trailing_data"));
        }
        if let Ok(doc) = decode_strict(&bytes) {
            let mut e = Encoder::new();
            e.node(doc.root());
            prop_assert_eq!(e.finish().unwrap(), bytes);
        }
    }
}
