//! serde support: [`from_bytes`] deserializes straight from the token buffer,
//! borrowing `&[u8]` and `&str` from the input; [`to_bytes`] serializes with
//! sorted dictionary keys (canonical bencode).
//!
//! Mapping: integers ↔ bencode integers (`bool` as 0/1; `u64` above
//! `i64::MAX` too); strings and byte slices ↔ byte strings (a non-empty
//! sequence made only of `u8`s, such as `Vec<u8>` or `&[u8]`, is written as
//! a byte string, and sequences read from byte strings; an empty one is
//! written `le`, which reads back as empty bytes); sequences and tuples ↔ lists; maps and structs
//! ↔ dictionaries; `None` and `()` are left out (a `None` field omits its
//! key); unit enum variants ↔ their name; other variants ↔ a one-entry
//! dictionary. Floats have no bencode form and are rejected.
//!
//! ```
//! #[derive(serde::Deserialize, serde::Serialize, Debug, PartialEq)]
//! struct File<'a> {
//!     length: u64,
//!     #[serde(borrow)]
//!     path: Vec<&'a str>,
//!     md5sum: Option<&'a str>,
//! }
//! let bytes = b"d6:lengthi5e4:pathl1:a1:bee";
//! let file: File = seekless_bencode::from_bytes(bytes).unwrap();
//! assert_eq!(file, File { length: 5, path: vec!["a", "b"], md5sum: None });
//! assert_eq!(seekless_bencode::to_bytes(&file).unwrap(), bytes);
//! ```

mod de;
mod error;
mod ser;

pub use de::{from_bytes, from_node};
pub use ser::to_bytes;

pub use error::SerdeError;
