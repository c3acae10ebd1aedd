//! Delta bundles as read (docs/format-bundle.md): the header and entry
//! types, and the readers. A bundle is untrusted input (it comes on a
//! disk from elsewhere, or from a mirror), so it is read by a
//! [`BundleDecoder`] that does no I/O of its own: the file's bytes are
//! pushed in, in any chunking, and the header, the entries and the end
//! come out, every size bounded before anything is allocated
//! ([`gunzip`] inflates the gzip members as their bytes come).
//! [`BundleReader`] is the loop that feeds it from a [`std::io::Read`].
//!
//! Writing bundles (`diff`) is `update::bundle`'s.

mod decoder;
mod gunzip;
mod reader;

pub use decoder::{BundleDecoder, BundleItem};
pub use reader::BundleReader;

use crate::error::{Error, ErrorKind};
use crate::format::hash::Kind;

/// The magic a bundle's content starts with.
pub(crate) const MAGIC: &[u8; 8] = b"SEEKBNDL";
/// The magic after the last entry.
pub(crate) const END: &[u8; 8] = b"SEEKBEND";
/// The bundle format version this build writes and reads.
pub const BUNDLE_VERSION: u16 = 1;

/// Entry flag: the range's lines follow.
pub(crate) const LINES: u8 = 1;
/// Entry flag: a validator follows.
pub(crate) const VALIDATOR: u8 = 2;

/// What a bundle's header says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleHeader {
    /// The kind of both indexes.
    pub kind: Kind,
    /// The identity of the index the bundle applies to.
    pub old_identity: [u8; 32],
    /// The identity of the index it makes.
    pub new_identity: [u8; 32],
    /// Hashes in the index it applies to.
    pub old_hashes: u64,
    /// Hashes in the index it makes.
    pub new_hashes: u64,
    /// The sum of the counts of the index it makes (saturating).
    pub new_total: u64,
    /// When the index it makes was last updated, in seconds since the Unix
    /// epoch (0: not known).
    pub updated: u64,
    /// The source URL of the index it makes (empty: not made by `update`).
    pub url: String,
}

impl BundleHeader {
    /// A header not read yet (every field zero or empty), to be filled in
    /// as its bytes come.
    pub(crate) fn unread() -> BundleHeader {
        BundleHeader {
            kind: Kind::Sha1,
            old_identity: [0; 32],
            new_identity: [0; 32],
            old_hashes: 0,
            new_hashes: 0,
            new_total: 0,
            updated: 0,
            url: String::new(),
        }
    }
}

/// One range a bundle changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleEntry {
    /// The range's prefix.
    pub prefix: u32,
    /// NEW's validator for the range (`None`: it has none).
    pub validator: Option<Vec<u8>>,
    /// The range's new lines as the range API answers them, when its
    /// content changed (empty: NEW holds no hash of the range).
    pub lines: Option<Vec<u8>>,
}

/// A bundle refused for `what`.
pub(crate) fn bad(what: impl Into<String>) -> Error {
    ErrorKind::BadBundle { what: what.into() }.into()
}
