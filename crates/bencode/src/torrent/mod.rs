//! Torrents: metainfo (BEP 3, BEP 52, hybrid), magnet links, verification of
//! downloaded data, and creation.

mod create;
mod error;
mod magnet;
mod merkle;
mod metainfo;
mod summary;
mod verify;

pub use create::{CreateOptions, create, write_atomically};
pub use error::{Error, ErrorKind, Result};
pub use magnet::magnet_link;
pub use metainfo::{FileEntry, Torrent, Version};
pub use summary::to_json as summary_json;
pub use verify::{FileReport, PieceState, VerifyReport, verify};

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::new();
    crate::hex::push(&mut out, bytes);
    out
}
