//! Torrent metainfo parsing never panics and, when it succeeds, its derived
//! values (magnet link, JSON, piece count) can be computed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use seekless_bencode::torrent::{Torrent, magnet_link, summary_json};

fuzz_target!(|data: &[u8]| {
    if let Ok(t) = Torrent::from_bytes(data) {
        let _ = magnet_link(&t);
        let _ = summary_json(&t);
        let _ = t.piece_count();
    }
});
