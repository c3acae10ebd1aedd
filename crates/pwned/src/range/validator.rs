//! Strong validators (`ETag`s) of range answers, from their content alone:
//! what the server sends and what update compares.

use crate::format::hash::{Key, Kind};

#[cfg(any(test, feature = "test-util"))]
/// A strong validator (`ETag`) for a range, computed from its content
/// alone: the same for the same (hash, count) pairs whatever index or
/// process serves them, different when any pair differs (the first 128 bits
/// of SHA-1 over the kind and every pair, hash bytes then count as 8
/// big-endian bytes).
pub fn range_etag(kind: Kind, items: &[(Key, u64)]) -> String {
    let tag = quoted_etag(range_digest(kind, items));
    String::from_utf8(tag.to_vec()).expect("hex in quotes is ASCII")
}

#[cfg(any(test, feature = "serve", feature = "test-util"))]
/// A range digest as its `ETag` value: lowercase hex in double quotes.
pub(crate) fn quoted_etag(digest: [u8; 16]) -> [u8; 34] {
    let mut hex = Vec::with_capacity(32);
    crate::format::hash::push_hex(&digest, b"0123456789abcdef", &mut hex);
    let mut quoted = [b'"'; 34];
    quoted[1..33].copy_from_slice(&hex);
    quoted
}

/// The 128 bits [`range_etag`] writes in hex.
pub(crate) fn range_digest(kind: Kind, items: &[(Key, u64)]) -> [u8; 16] {
    use sha1::{Digest, Sha1};
    let mut sha = Sha1::new();
    sha.update([kind.hex_len() as u8]);
    let mut block = [0u8; 28 * 64];
    for chunk in items.chunks(64) {
        for (slot, &(key, count)) in block.chunks_exact_mut(28).zip(chunk) {
            slot[..20].copy_from_slice(&key.to_bytes());
            slot[20..].copy_from_slice(&count.to_be_bytes());
        }
        sha.update(&block[..28 * chunk.len()]);
    }
    let digest = sha.finalize();
    let mut tag = [0u8; 16];
    tag.copy_from_slice(&digest[..16]);
    tag
}
