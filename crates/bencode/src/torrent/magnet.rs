//! Magnet links (BEP 9, with BEP 52's `btmh` for v2).

use super::{Torrent, hex};

fn percent_encode(out: &mut String, s: &str) {
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
}

/// `magnet:?xt=urn:btih:…&xt=urn:btmh:1220…&dn=…&tr=…` for `torrent`.
pub fn magnet_link(torrent: &Torrent) -> String {
    let mut out = String::from("magnet:?");
    let mut first = true;
    let mut sep = |out: &mut String| {
        if !first {
            out.push('&');
        }
        first = false;
    };
    if let Some(h) = torrent.info_hash_v1 {
        sep(&mut out);
        out.push_str("xt=urn:btih:");
        out.push_str(&hex(&h));
    }
    if let Some(h) = torrent.info_hash_v2 {
        sep(&mut out);
        // Multihash: 0x12 = SHA-256, 0x20 = 32 bytes.
        out.push_str("xt=urn:btmh:1220");
        out.push_str(&hex(&h));
    }
    sep(&mut out);
    out.push_str("dn=");
    percent_encode(&mut out, &torrent.name);
    for url in torrent.trackers.iter().flatten() {
        sep(&mut out);
        out.push_str("tr=");
        percent_encode(&mut out, url);
    }
    for url in &torrent.web_seeds {
        sep(&mut out);
        out.push_str("ws=");
        percent_encode(&mut out, url);
    }
    out
}
