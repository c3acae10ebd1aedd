//! A torrent's metadata as JSON (for `seekless torrent info --json`).

use super::{Torrent, hex, magnet_link};
use crate::json::push_string as string;

fn opt_hex(out: &mut String, bytes: Option<&[u8]>) {
    match bytes {
        Some(b) => string(out, &hex(b)),
        None => out.push_str("null"),
    }
}

/// The torrent's metadata as one JSON object.
pub fn to_json(t: &Torrent) -> String {
    let mut o = String::from("{\"name\":");
    string(&mut o, &t.name);
    o.push_str(",\"version\":");
    string(&mut o, t.version.name());
    o.push_str(",\"info_hash_v1\":");
    opt_hex(&mut o, t.info_hash_v1.as_ref().map(|h| &h[..]));
    o.push_str(",\"info_hash_v2\":");
    opt_hex(&mut o, t.info_hash_v2.as_ref().map(|h| &h[..]));
    o.push_str(&format!(
        ",\"piece_length\":{},\"piece_count\":{},\"total_size\":{},\"private\":{}",
        t.piece_length,
        t.piece_count(),
        t.total_size,
        t.private
    ));
    o.push_str(",\"creation_date\":");
    match t.creation_date {
        Some(d) => o.push_str(&d.to_string()),
        None => o.push_str("null"),
    }
    for (key, value) in [("comment", &t.comment), ("created_by", &t.created_by)] {
        o.push_str(&format!(",\"{key}\":"));
        match value {
            Some(v) => string(&mut o, v),
            None => o.push_str("null"),
        }
    }
    o.push_str(",\"trackers\":[");
    for (i, tier) in t.trackers.iter().enumerate() {
        if i > 0 {
            o.push(',');
        }
        o.push('[');
        for (j, url) in tier.iter().enumerate() {
            if j > 0 {
                o.push(',');
            }
            string(&mut o, url);
        }
        o.push(']');
    }
    o.push_str("],\"web_seeds\":[");
    for (i, url) in t.web_seeds.iter().enumerate() {
        if i > 0 {
            o.push(',');
        }
        string(&mut o, url);
    }
    o.push_str("],\"files\":[");
    for (i, f) in t.files.iter().enumerate() {
        if i > 0 {
            o.push(',');
        }
        o.push_str("{\"path\":");
        string(&mut o, &f.display_path());
        o.push_str(&format!(",\"length\":{},\"pad\":{}", f.length, f.pad));
        o.push_str(",\"pieces_root\":");
        opt_hex(&mut o, f.pieces_root.as_ref().map(|h| &h[..]));
        o.push('}');
    }
    o.push_str("],\"magnet\":");
    string(&mut o, &magnet_link(t));
    o.push('}');
    o
}
