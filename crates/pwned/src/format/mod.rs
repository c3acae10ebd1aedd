//! The index file format (docs/format-pwned.md): what is on disk and how
//! it is encoded, with no I/O policy of its own. Everything that reads or
//! writes an index goes through these modules, so the bytes they define are
//! the only format there is.
//!
//! Invariants: a page is [`PAGE`](layout::PAGE) bytes and decodes on its own;
//! hashes are stored as sortable integers ([`hash::Key`]) in ascending order;
//! every integer field is little-endian.

pub(crate) mod bits;
#[cfg(feature = "gzip")]
pub(crate) mod gzip_ranges;
pub(crate) mod hash;
pub(crate) mod layout;
pub(crate) mod page;
pub(crate) mod source;
