//! Full block checks for `--verify`: every transaction parses, the merkle
//! root matches (and the tree is not mutated), the witness commitment
//! matches the witness data (BIP 141), weight and proof of work.

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
/// every transaction, coinbase placement, weight, merkle root and, in a
/// block with witness data, its witness commitment.
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
    let mut wtxids = Vec::with_capacity(tx_count as usize);
    let mut coinbase = None;
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
        let txid = tx.txid();
        txids.push(txid);
        // The coinbase's wtxid counts as zero (BIP 141); a legacy
        // transaction's is its txid, hashed once.
        wtxids.push(match (i, tx.is_segwit()) {
            (0, _) => [0; 32],
            (_, true) => tx.wtxid(),
            (_, false) => txid,
        });
        if i == 0 {
            coinbase = Some(tx);
        }
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
    if segwit_txs > 0 {
        check_witness_commitment(&coinbase.expect("a block has a coinbase"), wtxids)?;
    }
    Ok(BlockSummary {
        tx_count,
        segwit_txs,
        weight,
    })
}

/// The start of a witness commitment output's script: OP_RETURN, a push of
/// 36 bytes, and the commitment header `aa21a9ed` (BIP 141).
const COMMITMENT_HEADER: [u8; 6] = [0x6a, 0x24, 0xaa, 0x21, 0xa9, 0xed];

/// BIP 141's check of a block with witness data: the coinbase's last output
/// whose script begins with [`COMMITMENT_HEADER`] (and is at least 38 bytes)
/// holds the double SHA-256 of the witness merkle root (of `wtxids`, the
/// coinbase's as zero) and the coinbase's one 32-byte witness item, the
/// reserved value.
///
/// Called only for blocks with witness data: before segwit's activation
/// (mainnet height 481,824) a coinbase output may happen to look like a
/// commitment and no rule applies to it; after it, a block without witness
/// data needs no commitment. A commitment in a block without witness data
/// is therefore not checked (nor is its reserved value).
fn check_witness_commitment(coinbase: &Transaction, wtxids: Vec<[u8; 32]>) -> Result<()> {
    let Some(output) = coinbase
        .outputs()
        .filter(|o| o.script_pubkey.len() >= 38 && o.script_pubkey.starts_with(&COMMITMENT_HEADER))
        .last()
    else {
        return Err(ErrorKind::UnexpectedWitness.into());
    };
    let reserved = match coinbase.witnesses().next().as_deref() {
        Some([item]) if item.len() == 32 => <[u8; 32]>::try_from(*item).expect("32 bytes"),
        _ => return Err(ErrorKind::BadWitnessReservedValue.into()),
    };
    let (root, _) = merkle_root(wtxids);
    let mut h = Sha256::new();
    h.update(root);
    h.update(reserved);
    let commitment: [u8; 32] = Sha256::digest(h.finalize()).into();
    if output.script_pubkey[6..38] != commitment {
        return Err(ErrorKind::BadWitnessCommitment.into());
    }
    Ok(())
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

    /// `header`'s block with the transactions `txs`: the merkle root
    /// recomputed and the header mined again.
    fn mined(header: &[u8], txs: &[Vec<u8>]) -> Vec<u8> {
        let limit = crate::Network::Regtest.pow_limit();
        let mut header = crate::BlockHeader::parse(header[..HEADER_LEN].try_into().unwrap());
        header.merkle_root = merkle_root(
            txs.iter()
                .map(|t| crate::Transaction::parse(t, 0).unwrap().0.txid())
                .collect(),
        )
        .0;
        while !check_pow(&header_hash(&header.serialize()), header.bits, limit) {
            header.nonce += 1;
        }
        generate::assemble(&header, txs)
    }

    /// The transactions of a serialized block.
    fn transactions(block: &[u8]) -> Vec<Vec<u8>> {
        let mut c = Cursor::new(block, 0);
        c.take(HEADER_LEN, "header").unwrap();
        let n = c.count(MIN_TX_LEN, "count").unwrap();
        (0..n)
            .map(|_| {
                let at = c.pos();
                let (_, len) = crate::Transaction::parse(&block[at..], at).unwrap();
                c.take(len, "tx").unwrap().to_vec()
            })
            .collect()
    }

    #[test]
    fn the_witness_commitment_covers_every_witness_byte() {
        let limit = crate::Network::Regtest.pow_limit();
        let mut builder = ChainBuilder::new(5, SizeMix::Realistic);
        let mut tip = 0;
        let block = loop {
            tip = builder.extend(tip);
            let block = builder.blocks[tip].bytes.clone();
            if check_block(&block, limit).unwrap().segwit_txs > 2 {
                break block;
            }
        };
        let txs = transactions(&block);
        // The coinbase carries the commitment and the reserved value.
        let coinbase = crate::Transaction::parse(&txs[0], 0).unwrap().0;
        assert!(coinbase.is_segwit());
        let segwit = txs
            .iter()
            .position(|t| t[4..6] == [0, 1] && t != &txs[0])
            .unwrap();
        let tx = crate::Transaction::parse(&txs[segwit], 0).unwrap().0;
        let witness = tx.raw().len() - 4 - 5; // a byte of the last witness item
        // One witness byte changed: the txids and the merkle root stay, the
        // commitment does not.
        let mut altered = txs.clone();
        altered[segwit][witness] ^= 0x01;
        let altered = mined(&block, &altered);
        assert_eq!(
            altered[36..68],
            block[36..68],
            "the merkle root ignores witnesses"
        );
        assert!(matches!(
            check_block(&altered, limit).unwrap_err().kind(),
            ErrorKind::BadWitnessCommitment
        ));
        // The reserved value changed, or two items in its place.
        let mut other = txs.clone();
        let len = other[0].len();
        other[0][len - 5] ^= 0x80;
        assert!(matches!(
            check_block(&mined(&block, &other), limit)
                .unwrap_err()
                .kind(),
            ErrorKind::BadWitnessCommitment
        ));
        let mut two = txs.clone();
        let at = two[0].len() - 4 - 34;
        two[0].splice(at..at + 2, [2, 31]);
        assert!(matches!(
            check_block(&mined(&block, &two), limit).unwrap_err().kind(),
            ErrorKind::BadWitnessReservedValue
        ));
        // The commitment output made something else: witness data with no
        // commitment.
        let mut none = txs.clone();
        let at = none[0]
            .windows(6)
            .position(|w| w == COMMITMENT_HEADER)
            .unwrap();
        none[0][at + 2] = 0xab;
        assert!(matches!(
            check_block(&mined(&block, &none), limit)
                .unwrap_err()
                .kind(),
            ErrorKind::UnexpectedWitness
        ));
        // The same block verifies as generated.
        check_block(&mined(&block, &txs), limit).unwrap();
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
        let swapped = mined(&block, &txs);
        let err = check_block(&swapped, limit).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::BadCoinbase { offset: 81 }),
            "{err}"
        );
    }
}
