//! Block hashes: double SHA-256, shown as reversed hex like Bitcoin Core.

use std::fmt;

use sha2::{Digest, Sha256};

use crate::error::Result;

/// Double SHA-256 of `data`.
pub fn sha256d(data: &[u8]) -> [u8; 32] {
    let first = Sha256::digest(data);
    Sha256::digest(first).into()
}

/// A 32-byte hash in internal byte order; displayed reversed, as Core does.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct BlockHash(pub [u8; 32]);

impl BlockHash {
    /// Parses the usual reversed hex form (64 hex digits).
    pub fn from_hex(text: &str) -> Result<BlockHash> {
        let bytes = crate::hex::parse_hex::<32>(text)?;
        let mut out = bytes;
        out.reverse();
        Ok(BlockHash(out))
    }
}

impl fmt::Display for BlockHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in self.0.iter().rev() {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for BlockHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BlockHash({self})")
    }
}
