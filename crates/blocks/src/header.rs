//! The 80-byte block header: fields, hash, target from nBits, proof of work, work.

use crate::hash::{BlockHash, sha256d};
use crate::u256::U256;

/// Length of a serialized header.
pub const HEADER_LEN: usize = 80;

/// A parsed block header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockHeader {
    /// Block version (signed, as in Core).
    pub version: i32,
    /// Hash of the previous block.
    pub prev: BlockHash,
    /// Merkle root of the transactions.
    pub merkle_root: [u8; 32],
    /// Block time, seconds since the Unix epoch.
    pub time: u32,
    /// Compact target ("nBits").
    pub bits: u32,
    /// Nonce.
    pub nonce: u32,
}

fn le32(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

impl BlockHeader {
    /// Reads the fields of an 80-byte header.
    pub fn parse(bytes: &[u8; HEADER_LEN]) -> BlockHeader {
        let mut prev = [0u8; 32];
        prev.copy_from_slice(&bytes[4..36]);
        let mut merkle_root = [0u8; 32];
        merkle_root.copy_from_slice(&bytes[36..68]);
        BlockHeader {
            version: le32(bytes, 0) as i32,
            prev: BlockHash(prev),
            merkle_root,
            time: le32(bytes, 68),
            bits: le32(bytes, 72),
            nonce: le32(bytes, 76),
        }
    }

    /// Writes the 80-byte serialization.
    pub fn serialize(&self) -> [u8; HEADER_LEN] {
        let mut out = [0u8; HEADER_LEN];
        out[0..4].copy_from_slice(&self.version.to_le_bytes());
        out[4..36].copy_from_slice(&self.prev.0);
        out[36..68].copy_from_slice(&self.merkle_root);
        out[68..72].copy_from_slice(&self.time.to_le_bytes());
        out[72..76].copy_from_slice(&self.bits.to_le_bytes());
        out[76..80].copy_from_slice(&self.nonce.to_le_bytes());
        out
    }
}

/// Hash of a serialized header: double SHA-256.
pub fn header_hash(bytes: &[u8; HEADER_LEN]) -> BlockHash {
    BlockHash(sha256d(bytes))
}

/// The target encoded by a compact nBits, or `None` when it is negative,
/// zero or overflows 256 bits (Core's `DeriveTarget` rejects all three).
pub fn target_from_bits(bits: u32) -> Option<U256> {
    let size = bits >> 24;
    let mut word = bits & 0x007f_ffff;
    let target = if size <= 3 {
        word >>= 8 * (3 - size);
        U256::from_u64(word as u64)
    } else {
        U256::from_u64(word as u64).shift_left(8 * (size - 3))
    };
    let negative = word != 0 && bits & 0x0080_0000 != 0;
    let overflow =
        word != 0 && (size > 34 || (word > 0xff && size > 33) || (word > 0xffff && size > 32));
    if negative || overflow || target.is_zero() {
        None
    } else {
        Some(target)
    }
}

/// Core's `CheckProofOfWork`: nBits is well-formed and not easier than
/// `pow_limit`, and the hash, read as a little-endian number, is at most the target.
pub fn check_pow(hash: &BlockHash, bits: u32, pow_limit: U256) -> bool {
    match target_from_bits(bits) {
        Some(target) if target <= pow_limit => U256::from_le_bytes(&hash.0) <= target,
        _ => false,
    }
}

/// The expected number of hashes to meet nBits: 2^256 / (target + 1), as Core's
/// `GetBlockProof` computes it; zero for a malformed nBits.
pub fn block_work(bits: u32) -> U256 {
    match target_from_bits(bits) {
        // 2^256 / (t + 1) == (~t / (t + 1)) + 1, which fits in 256 bits.
        Some(target) => match target.overflowing_add(U256::ONE) {
            (divisor, false) => {
                let quotient = target
                    .complement()
                    .checked_div(divisor)
                    .unwrap_or(U256::ZERO);
                quotient.overflowing_add(U256::ONE).0
            }
            (_, true) => U256::ONE,
        },
        None => U256::ZERO,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_targets() {
        // Mainnet genesis nBits: 0x00000000ffff0000...
        let t = target_from_bits(0x1d00ffff).unwrap();
        assert_eq!(t, U256::from_u64(0xffff).shift_left(208));
        assert_eq!(
            target_from_bits(0x207fffff).unwrap(),
            U256::from_u64(0x7fffff).shift_left(232)
        );
        assert_eq!(
            target_from_bits(0x03123456).unwrap(),
            U256::from_u64(0x123456)
        );
        assert_eq!(
            target_from_bits(0x02123456).unwrap(),
            U256::from_u64(0x1234)
        );
        assert!(target_from_bits(0x04923456).is_none(), "negative");
        assert!(target_from_bits(0x23000100).is_none(), "overflow");
        assert!(target_from_bits(0x00000000).is_none(), "zero");
        assert!(target_from_bits(0xff000000).is_none(), "zero mantissa");
    }

    #[test]
    fn work_matches_core() {
        // Core: GetBlockProof for 0x1d00ffff is 0x100010001.
        assert_eq!(block_work(0x1d00ffff), U256::from_u64(0x1_0001_0001));
        // Regtest: 2^256 / (0x7fffff << 232 + 1) == 2.
        assert_eq!(block_work(0x207fffff), U256::from_u64(2));
        assert_eq!(block_work(0), U256::ZERO);
    }

    #[test]
    fn pow_limit_is_enforced() {
        let zero = BlockHash([0; 32]);
        let main_limit = crate::Network::Main.pow_limit();
        assert!(check_pow(&zero, 0x1d00ffff, main_limit));
        assert!(!check_pow(&zero, 0x207fffff, main_limit));
        assert!(check_pow(
            &zero,
            0x207fffff,
            crate::Network::Regtest.pow_limit()
        ));
        let mut high = [0u8; 32];
        high[31] = 0x80;
        assert!(!check_pow(
            &BlockHash(high),
            0x207fffff,
            crate::Network::Regtest.pow_limit()
        ));
    }
}
