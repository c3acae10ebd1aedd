//! Full block checks for `--verify`: every transaction parses, the merkle
//! root matches (and the tree is not mutated), weight and proof of work.

use sha2::{Digest, Sha256};

use crate::error::{ErrorKind, Result};
use crate::header::{BlockHeader, HEADER_LEN, check_pow, header_hash};
use crate::tx::{Cursor, Transaction};
use crate::u256::U256;

/// Core's `MAX_BLOCK_WEIGHT`.
pub const MAX_BLOCK_WEIGHT: u64 = 4_000_000;
const MIN_TX_LEN: u64 = 10;

/// What a successful check learned about a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockSummary {
    /// Number of transactions.
    pub tx_count: u64,
    /// Number of segwit transactions.
    pub segwit_txs: u64,
    /// Block weight (stripped size × 3 + total size).
    pub weight: u64,
}

/// Checks a serialized block: header proof of work against `pow_limit`,
/// every transaction, coinbase placement, weight and merkle root.
pub fn check_block(bytes: &[u8], pow_limit: U256) -> Result<BlockSummary> {
    let mut c = Cursor::new(bytes, 0);
    let header_bytes: &[u8; HEADER_LEN] = c
        .take(HEADER_LEN, "block header")?
        .try_into()
        .expect("80 bytes");
    let header = BlockHeader::parse(header_bytes);
    if !check_pow(&header_hash(header_bytes), header.bits, pow_limit) {
        return Err(ErrorKind::BadProofOfWork.into());
    }
    let count_offset = c.offset();
    let tx_count = c.count(MIN_TX_LEN, "transaction count")?;
    if tx_count == 0 {
        return Err(ErrorKind::BadCoinbase {
            offset: count_offset,
        }
        .into());
    }
    let mut txids = Vec::with_capacity(tx_count as usize);
    let mut stripped = HEADER_LEN as u64 + (c.pos() - HEADER_LEN) as u64;
    let mut segwit_txs = 0;
    for i in 0..tx_count {
        let at = c.pos();
        let (tx, len) = Transaction::parse(&bytes[at..], at)?;
        c.take(len, "transaction")?;
        if tx.is_coinbase() != (i == 0) {
            return Err(ErrorKind::BadCoinbase { offset: at }.into());
        }
        segwit_txs += tx.is_segwit() as u64;
        stripped += tx.stripped_size() as u64;
        txids.push(tx.txid());
    }
    if c.remaining() != 0 {
        return Err(ErrorKind::TrailingBytes { offset: c.offset() }.into());
    }
    let weight = stripped * 3 + bytes.len() as u64;
    if weight > MAX_BLOCK_WEIGHT {
        return Err(ErrorKind::WeightTooHigh { weight }.into());
    }
    let (root, mutated) = merkle_root(txids);
    if mutated {
        return Err(ErrorKind::MutatedMerkleTree.into());
    }
    if root != header.merkle_root {
        return Err(ErrorKind::BadMerkleRoot.into());
    }
    Ok(BlockSummary {
        tx_count,
        segwit_txs,
        weight,
    })
}

/// Core's `ComputeMerkleRoot`: the root, and whether two equal hashes were
/// paired at some level (a mutated tree with the same root).
pub fn merkle_root(mut hashes: Vec<[u8; 32]>) -> ([u8; 32], bool) {
    let mut mutated = false;
    if hashes.is_empty() {
        return ([0; 32], false);
    }
    while hashes.len() > 1 {
        mutated |= hashes.chunks_exact(2).any(|pair| pair[0] == pair[1]);
        if hashes.len() % 2 == 1 {
            let last = hashes[hashes.len() - 1];
            hashes.push(last);
        }
        let next = hashes.len() / 2;
        for i in 0..next {
            let mut h = Sha256::new();
            h.update(hashes[2 * i]);
            h.update(hashes[2 * i + 1]);
            hashes[i] = Sha256::digest(h.finalize()).into();
        }
        hashes.truncate(next);
    }
    (hashes[0], mutated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::{self, ChainBuilder, SizeMix};
    use crate::tx::write_compact_size;

    #[test]
    fn duplicated_last_transaction_is_a_mutation() {
        let hashes: Vec<[u8; 32]> = (1..=3u8).map(|i| [i; 32]).collect();
        let (root, mutated) = merkle_root(hashes.clone());
        assert!(!mutated);
        let mut doubled = hashes;
        doubled.push([3; 32]);
        assert_eq!(merkle_root(doubled), (root, true));
        assert_eq!(merkle_root(vec![[7; 32]]), ([7; 32], false));
    }

    #[test]
    fn hostile_counts_and_structure_are_rejected() {
        let mut builder = ChainBuilder::new(1, SizeMix::Small);
        let tip = builder.extend(0);
        let block = builder.blocks[tip].bytes.clone();
        let limit = crate::Network::Regtest.pow_limit();
        check_block(&block, limit).unwrap();
        // A transaction count far beyond the bytes left.
        let mut huge = block[..HEADER_LEN].to_vec();
        write_compact_size(&mut huge, 0x01ff_ffff);
        huge.extend_from_slice(&block[HEADER_LEN + 1..]);
        assert!(matches!(
            check_block(&huge, limit).unwrap_err().kind(),
            ErrorKind::SizeTooLarge { offset: 80, .. }
        ));
        // No transactions at all.
        let mut empty = block[..HEADER_LEN].to_vec();
        empty.push(0);
        assert!(matches!(
            check_block(&empty, limit).unwrap_err().kind(),
            ErrorKind::BadCoinbase { .. }
        ));
        // A coinbase that is not first.
        let tx = generate::random_tx(&mut generate::Rng::new(2), false, 1, 1, 30);
        let txs = vec![tx, builder.blocks[tip].bytes[HEADER_LEN + 1..].to_vec()];
        let mut header = crate::BlockHeader::parse(block[..HEADER_LEN].try_into().unwrap());
        header.merkle_root = merkle_root(
            txs.iter()
                .map(|t| crate::Transaction::parse(t, 0).unwrap().0.txid())
                .collect(),
        )
        .0;
        while !check_pow(&header_hash(&header.serialize()), header.bits, limit) {
            header.nonce += 1;
        }
        let swapped = generate::assemble(&header, &txs);
        let err = check_block(&swapped, limit).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::BadCoinbase { offset: 81 }),
            "{err}"
        );
    }
}
