//! Bencode as BitTorrent uses it: a zero-copy decoder into one flat, reusable
//! token buffer (8 bytes a token, like libtorrent's `bdecode`), borrowed node
//! views with the raw bytes of any value, an encoder, serde support, and
//! torrent metainfo (BEP 3 v1, BEP 52 v2 and hybrid) with info-hashes, magnet
//! links, verification and creation.
//!
//! ```
//! let doc = seekless_bencode::decode(b"d3:cow3:moo4:spaml1:a1:bee").unwrap();
//! let root = doc.root();
//! assert_eq!(root.get(b"cow").unwrap().as_str(), Some("moo"));
//! assert_eq!(root.get(b"spam").unwrap().raw(), b"l1:a1:be");
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod encoder;
mod error;
mod hex;
mod json;
mod lint;
mod node;
mod parser;
mod serde_support;
mod token;
pub mod torrent;

pub use encoder::Encoder;
pub use error::{Error, ErrorKind, Result};
pub use json::{from_json, to_json};
pub use node::{Dict, DictIter, List, ListIter, Node};
pub use parser::{Document, Limits, Parser, decode, decode_strict};
#[doc(hidden)]
pub use parser::{RawTokens, fast_and_reference};
pub use serde_support::{SerdeError, from_bytes, from_node, to_bytes};
pub use token::Kind;
