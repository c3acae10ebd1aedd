//! The JSON we print (`bencode dump`, `torrent info --json`) is valid JSON
//! with the documented shapes.

mod common;

use common::torrents;
use seekless_bencode::torrent::{Torrent, summary_json};
use seekless_bencode::{decode, to_json};
use serde_json::Value;

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
            let hex = pieces["hex"].as_str().expect("pieces are binary");
            assert_eq!(hex.len() % 40, 0, "{name}");
        }
    }
    let mut out = String::new();
    to_json(decode(b"d2:\xff\xfei1ee").unwrap().root(), &mut out);
    let json: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["hex:fffe"], 1);
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
