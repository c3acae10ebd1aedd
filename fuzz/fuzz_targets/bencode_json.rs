//! Reading JSON never panics, and what it builds, once decoded and dumped,
//! reads back to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use seekless_bencode::{decode, from_json, to_json};

fuzz_target!(|data: &[u8]| {
    let Ok(bytes) = from_json(data) else {
        return;
    };
    if let Ok(doc) = decode(&bytes) {
        let mut json = String::new();
        to_json(doc.root(), &mut json);
        assert_eq!(
            from_json(json.as_bytes()).expect("the dump reads back"),
            bytes
        );
    }
});
