//! An index's identity (docs/format-bundle.md, "Identity of an index"): a
//! digest of its content alone, the same for the same hashes and counts
//! however the index was built. It is SHA-256 over the 2^20 ranges' content
//! digests (the ones the range API's `ETag`s show) in prefix order. An
//! update records it in the index's source section; otherwise it is
//! computed from every page ([`Index::identity`]).

use sha2::{Digest, Sha256};

use crate::error::{ErrorKind, Result};
use crate::format::hash::Kind;
use crate::format::source::RANGES;
use crate::range::validator::range_digest;
use crate::read::index::Index;

const IDENTITY_DOMAIN: &[u8] = b"seekless-pwned-identity-1";

impl Index {
    /// The index's identity: as the update that wrote it recorded it, or
    /// else computed from every page (a compact index has none: it cannot
    /// list a range).
    pub fn identity(&self) -> Result<[u8; 32]> {
        match self.recorded_identity() {
            Some(identity) => Ok(identity),
            None => Ok(Digests::of(self)?.identity(self.kind())),
        }
    }

    /// The identity recorded in the index's source section, if any (read
    /// without touching a page; a damaged section records none).
    pub fn recorded_identity(&self) -> Option<[u8; 32]> {
        self.source()
            .ok()
            .flatten()
            .and_then(|source| source.identity)
    }
}

#[cfg(any(test, feature = "test-util"))]
/// The identity computed from every page, whatever the index records.
pub fn identity(index: &Index) -> Result<[u8; 32]> {
    Ok(Digests::of(index)?.identity(index.kind()))
}

/// Each range's content digest, in prefix order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Digests(Vec<[u8; 16]>);

impl Digests {
    /// The digests of every range of `index`, from one pass over its pages.
    pub(crate) fn of(index: &Index) -> Result<Digests> {
        let kind = index.kind();
        if index.stats().is_compact() {
            return Err(ErrorKind::Compact {
                key_bits: index.stats().key_bits,
            }
            .into());
        }
        let empty = range_digest(kind, &[]);
        let mut digests = vec![empty; RANGES as usize];
        let mut range = Vec::with_capacity(4096);
        let mut prefix = None;
        for pair in index.iter() {
            let pair = pair?;
            let p = pair.0.bits(0, 20) as u32;
            if prefix != Some(p) {
                if let Some(done) = prefix {
                    digests[done as usize] = range_digest(kind, &range);
                }
                range.clear();
                prefix = Some(p);
            }
            range.push(pair);
        }
        if let Some(done) = prefix {
            digests[done as usize] = range_digest(kind, &range);
        }
        Ok(Digests(digests))
    }

    #[cfg(feature = "update")]
    /// The digests of an index with no hash.
    pub(crate) fn empty(kind: Kind) -> Digests {
        Digests(vec![range_digest(kind, &[]); RANGES as usize])
    }

    #[cfg(feature = "update")]
    /// Collects digests given in prefix order.
    pub(crate) fn with_capacity() -> Digests {
        Digests(Vec::with_capacity(RANGES as usize))
    }

    #[cfg(feature = "update")]
    pub(crate) fn push(&mut self, digest: [u8; 16]) {
        self.0.push(digest);
    }

    #[cfg(feature = "update")]
    pub(crate) fn get(&self, prefix: u32) -> [u8; 16] {
        self.0[prefix as usize]
    }

    #[cfg(feature = "update")]
    /// Ranges with a digest so far.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// The identity these digests make, for `kind` (every range must have
    /// one).
    pub(crate) fn identity(&self, kind: Kind) -> [u8; 32] {
        assert_eq!(self.0.len(), RANGES as usize, "a digest for every range");
        let mut sha = Sha256::new();
        sha.update(IDENTITY_DOMAIN);
        sha.update([kind.code()]);
        for digest in &self.0 {
            sha.update(digest);
        }
        sha.finalize().into()
    }
}

/// An identity in hex (64 digits), as `/identity` and messages show it.
pub fn identity_hex(identity: &[u8; 32]) -> String {
    let mut out = Vec::with_capacity(64);
    crate::format::hash::push_hex(identity, b"0123456789abcdef", &mut out);
    String::from_utf8(out).expect("hex is ASCII")
}

/// An identity from its 64 hex digits (either case); `None` for anything
/// else.
#[cfg(feature = "update")]
pub(crate) fn parse_identity_hex(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.as_bytes();
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (byte, pair) in out.iter_mut().zip(hex.chunks_exact(2)) {
        let digit = |c: u8| (c as char).to_digit(16);
        *byte = (digit(pair[0])? * 16 + digit(pair[1])?) as u8;
    }
    Some(out)
}
