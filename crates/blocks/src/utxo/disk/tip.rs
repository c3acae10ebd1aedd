//! The tip record of a kept set (`DIR/tip`, docs/format-blocks.md): the
//! block the set is at, the set's hash keys, coin count, overflow length
//! and each partition's counts, with a checksum. It is written under a
//! temporary name and renamed, and a committed journal holds the next one.

use std::path::Path;

use crate::error::{ErrorKind, Result};

/// The tip record's first bytes.
pub(crate) const TIP_MAGIC: [u8; 8] = *b"SLSTATE\0";
/// The tip record format's version.
pub(crate) const TIP_VERSION: u32 = 1;
/// Bytes before the partitions' counts.
const FIXED: usize = 84;
/// Bytes of the record: the fixed part, 256 × (used, count), the CRC-32C.
pub(crate) const TIP_LEN: usize = FIXED + 256 * 16 + 4;

/// What a tip record holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Tip {
    /// The network's magic bytes.
    pub(crate) network: [u8; 4],
    /// The height of the last block connected.
    pub(crate) height: u32,
    /// Its hash (internal byte order).
    pub(crate) hash: [u8; 32],
    /// The SipHash-1-3 keys that place coins in pages.
    pub(crate) keys: [u64; 2],
    /// Coins in the set.
    pub(crate) coins: u64,
    /// Bytes of the overflow file that belong to the set.
    pub(crate) overflow: u64,
    /// Each partition's bytes of records and records.
    pub(crate) parts: Vec<(u64, u64)>,
}

impl Tip {
    /// The record's bytes.
    pub(crate) fn encode(&self) -> [u8; TIP_LEN] {
        let mut out = [0u8; TIP_LEN];
        out[..8].copy_from_slice(&TIP_MAGIC);
        out[8..12].copy_from_slice(&TIP_VERSION.to_le_bytes());
        out[12..16].copy_from_slice(&self.network);
        out[16..20].copy_from_slice(&self.height.to_le_bytes());
        out[20..52].copy_from_slice(&self.hash);
        out[52..60].copy_from_slice(&self.keys[0].to_le_bytes());
        out[60..68].copy_from_slice(&self.keys[1].to_le_bytes());
        out[68..76].copy_from_slice(&self.coins.to_le_bytes());
        out[76..84].copy_from_slice(&self.overflow.to_le_bytes());
        for (p, (used, count)) in self.parts.iter().enumerate().take(256) {
            let at = FIXED + p * 16;
            out[at..at + 8].copy_from_slice(&used.to_le_bytes());
            out[at + 8..at + 16].copy_from_slice(&count.to_le_bytes());
        }
        let crc = crc32c::crc32c(&out[..TIP_LEN - 4]);
        out[TIP_LEN - 4..].copy_from_slice(&crc.to_le_bytes());
        out
    }

    /// Reads a record; errors name `path`.
    pub(crate) fn decode(bytes: &[u8], path: &Path) -> Result<Tip> {
        let bad = |reason: String| ErrorKind::BadState {
            path: path.to_path_buf(),
            reason,
        };
        if bytes.len() < 12 || bytes[..8] != TIP_MAGIC {
            return Err(bad("not a tip record (wrong magic)".into()).into());
        }
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4"));
        let version = u32_at(8);
        if version > TIP_VERSION {
            return Err(bad(format!(
                "version {version}, made by a newer seekless (this one reads {TIP_VERSION})"
            ))
            .into());
        }
        if version != TIP_VERSION {
            return Err(bad(format!("unknown version {version}")).into());
        }
        if bytes.len() != TIP_LEN {
            return Err(bad(format!("{} bytes, not {TIP_LEN}", bytes.len())).into());
        }
        if u32_at(TIP_LEN - 4) != crc32c::crc32c(&bytes[..TIP_LEN - 4]) {
            return Err(bad("fails its checksum".into()).into());
        }
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8"));
        let parts: Vec<(u64, u64)> = (0..256)
            .map(|p| (u64_at(FIXED + p * 16), u64_at(FIXED + p * 16 + 8)))
            .collect();
        let coins = u64_at(68);
        let sum = parts
            .iter()
            .try_fold(0u64, |sum, (_, count)| sum.checked_add(*count));
        if sum != Some(coins) {
            return Err(bad("its partitions' counts do not add up to its coins".into()).into());
        }
        Ok(Tip {
            network: bytes[12..16].try_into().expect("4 bytes"),
            height: u32_at(16),
            hash: bytes[20..52].try_into().expect("32 bytes"),
            keys: [u64_at(52), u64_at(60)],
            coins,
            overflow: u64_at(76),
            parts,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_every_flip_refused() {
        let mut parts = vec![(0, 0); 256];
        parts[3] = (400, 7);
        parts[255] = (90, 2);
        let tip = Tip {
            network: [0xfa, 0xbf, 0xb5, 0xda],
            height: 812,
            hash: [9; 32],
            keys: [1, u64::MAX],
            coins: 9,
            overflow: 12345,
            parts,
        };
        let bytes = tip.encode();
        let path = Path::new("tip");
        assert_eq!(Tip::decode(&bytes, path).unwrap(), tip);
        for at in (0..TIP_LEN).step_by(7) {
            let mut flipped = bytes;
            flipped[at] ^= 0x10;
            assert!(Tip::decode(&flipped, path).is_err(), "flip at {at}");
        }
        let error = Tip::decode(&bytes[..100], path).unwrap_err();
        assert!(error.to_string().contains("state file tip"), "{error}");
    }
}
