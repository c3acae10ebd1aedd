//! Decoding never panics; its shortcuts for string prefixes and integers give
//! the same tokens and errors as its byte-at-a-time reference, in both modes
//! and under tight limits; whatever strict mode accepts re-encodes to the
//! identical bytes; every node of an accepted document can be read; the JSON
//! dump of whatever default mode accepts encodes back to the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use seekless_bencode::{
    Encoder, Limits, Parser, decode, decode_strict, fast_and_reference, from_json, to_json,
};

fuzz_target!(|data: &[u8]| {
    let tight = Limits {
        depth: 3,
        tokens: 6,
        input: 40,
        length_digits: 2,
    };
    for limits in [Limits::default(), tight] {
        for strict in [false, true] {
            let (fast, reference) = fast_and_reference(data, strict, &limits);
            assert_eq!(fast, reference, "strict {strict}, {limits:?}");
        }
    }
    if let Ok(doc) = decode_strict(data) {
        let mut e = Encoder::new();
        e.node(doc.root());
        assert_eq!(e.finish().expect("balanced"), data);
        assert!(doc.root().warnings().is_empty());
    }
    if let Ok(doc) = decode(data) {
        let root = doc.root();
        let mut json = String::new();
        to_json(root, &mut json);
        assert_eq!(
            from_json(json.as_bytes()).expect("the dump reads back"),
            data
        );
        let _ = root.warnings();
        let mut stack = vec![root];
        while let Some(node) = stack.pop() {
            let _ = node.raw();
            let _ = node.as_int();
            let _ = node.as_str();
            if let Some(list) = node.as_list() {
                stack.extend(list.iter());
            }
            if let Some(dict) = node.as_dict() {
                for (k, v) in dict.iter() {
                    assert!(dict.get(k).is_some());
                    stack.push(v);
                }
            }
        }
    }
    // The reusable parser agrees with the one-shot decoder.
    let mut parser = Parser::new();
    assert_eq!(
        parser
            .parse(data)
            .map(|n| n.raw().len())
            .map_err(|e| e.to_string()),
        decode(data)
            .map(|d| d.root().raw().len())
            .map_err(|e| e.to_string())
    );
});
