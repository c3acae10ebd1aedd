//! Valid regtest chains whose transactions spend real earlier outputs, for
//! the UTXO set's tests: every transaction is also described field by
//! field ([`GenTx`]), so a test can build its own model of the set from the
//! same transactions and compare it with the engine's, coin by coin.
//!
//! Spends reach back to outputs of every age (most of them young, as on
//! mainnet), to outputs of earlier transactions in the same block, and to
//! mature coinbases; outputs take the common script shapes (P2PKH, P2SH,
//! P2WPKH, P2PK), some are `OP_RETURN`, a rare one is over 10,000 bytes;
//! about half the spends use the segwit serialization, so txid and wtxid
//! differ, with the coinbase committing to their witnesses (BIP 141).

use std::path::Path;

use super::{ChainBuilder, GenBlock, Rng, SizeMix};
use crate::block::merkle_root;
use crate::coin::{OutPoint, is_unspendable};
use crate::hash::sha256d;
use crate::tx::{Transaction, write_compact_size};
use crate::xor::XorKey;

/// One generated transaction, as the bytes say it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenTx {
    /// Its txid (internal byte order).
    pub txid: [u8; 32],
    /// Whether it is the block's coinbase.
    pub coinbase: bool,
    /// The outputs it spends (none for a coinbase).
    pub inputs: Vec<OutPoint>,
    /// Its outputs: value and script.
    pub outputs: Vec<(i64, Vec<u8>)>,
    /// Its serialization.
    pub bytes: Vec<u8>,
}

impl GenTx {
    /// A transaction spending `inputs` into `outputs`, legacy serialization
    /// unless `witness` (then each input carries one 33-byte item).
    pub fn spend(inputs: &[OutPoint], outputs: &[(i64, Vec<u8>)], witness: bool) -> GenTx {
        let mut tx = Vec::new();
        tx.extend_from_slice(&2i32.to_le_bytes());
        if witness {
            tx.extend_from_slice(&[0, 1]);
        }
        write_compact_size(&mut tx, inputs.len() as u64);
        for input in inputs {
            tx.extend_from_slice(&input.txid);
            tx.extend_from_slice(&input.vout.to_le_bytes());
            let script_sig: &[u8] = if witness { &[] } else { &[0x51; 3] };
            write_compact_size(&mut tx, script_sig.len() as u64);
            tx.extend_from_slice(script_sig);
            tx.extend_from_slice(&0xffff_fffdu32.to_le_bytes());
        }
        write_outputs(&mut tx, outputs);
        if witness {
            for input in inputs {
                tx.extend_from_slice(&[1, 33]);
                tx.extend_from_slice(&input.txid);
                tx.push(input.vout as u8);
            }
        }
        tx.extend_from_slice(&0u32.to_le_bytes());
        GenTx::from_bytes(tx, false, inputs.to_vec(), outputs.to_vec())
    }

    /// A coinbase with `script_sig` and `outputs`; with `commit_to`, a last
    /// output commits to those transactions' witnesses (BIP 141).
    pub fn coinbase(
        script_sig: &[u8],
        outputs: &[(i64, Vec<u8>)],
        commit_to: Option<&[GenTx]>,
    ) -> GenTx {
        let mut outputs = outputs.to_vec();
        if let Some(others) = commit_to {
            let wtxids = std::iter::once([0; 32])
                .chain(others.iter().map(|tx| sha256d(&tx.bytes)))
                .collect();
            let mut root_and_reserved = merkle_root(wtxids).0.to_vec();
            root_and_reserved.extend_from_slice(&[0; 32]);
            let mut commitment = vec![0x6a, 0x24, 0xaa, 0x21, 0xa9, 0xed];
            commitment.extend_from_slice(&sha256d(&root_and_reserved));
            outputs.push((0, commitment));
        }
        let witness = commit_to.is_some();
        let mut tx = Vec::new();
        tx.extend_from_slice(&2i32.to_le_bytes());
        if witness {
            tx.extend_from_slice(&[0, 1]);
        }
        tx.push(1);
        tx.extend_from_slice(&[0; 32]);
        tx.extend_from_slice(&u32::MAX.to_le_bytes());
        write_compact_size(&mut tx, script_sig.len() as u64);
        tx.extend_from_slice(script_sig);
        tx.extend_from_slice(&u32::MAX.to_le_bytes());
        write_outputs(&mut tx, &outputs);
        if witness {
            tx.extend_from_slice(&[1, 32]);
            tx.extend_from_slice(&[0; 32]);
        }
        tx.extend_from_slice(&0u32.to_le_bytes());
        GenTx::from_bytes(tx, true, Vec::new(), outputs)
    }

    fn from_bytes(
        bytes: Vec<u8>,
        coinbase: bool,
        inputs: Vec<OutPoint>,
        outputs: Vec<(i64, Vec<u8>)>,
    ) -> GenTx {
        let txid = Transaction::parse(&bytes, 0)
            .expect("generated transactions parse")
            .0
            .txid();
        GenTx {
            txid,
            coinbase,
            inputs,
            outputs,
            bytes,
        }
    }
}

fn write_outputs(tx: &mut Vec<u8>, outputs: &[(i64, Vec<u8>)]) {
    write_compact_size(tx, outputs.len() as u64);
    for (value, script) in outputs {
        tx.extend_from_slice(&value.to_le_bytes());
        write_compact_size(tx, script.len() as u64);
        tx.extend_from_slice(script);
    }
}

/// An output the generator may spend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spendable {
    /// Where it is.
    pub outpoint: OutPoint,
    /// Its value.
    pub value: u64,
    /// The height of its block.
    pub height: u32,
    /// Whether a coinbase made it.
    pub coinbase: bool,
}

/// A chain of valid blocks spending each other's outputs (the best chain
/// it grows from genesis), in a [`ChainBuilder`] that may also hold other
/// blocks (stale forks, invalid blocks).
#[derive(Debug)]
pub struct SpendingChain {
    /// The blocks.
    pub builder: ChainBuilder,
    /// The transactions of each block this chain mined, by block index
    /// (empty for blocks mined otherwise, genesis included).
    pub txs: Vec<Vec<GenTx>>,
    /// What can be spent on top of [`SpendingChain::tip`].
    pub unspent: Vec<Spendable>,
    tip: usize,
    rng: Rng,
}

/// The subsidy of every generated coinbase (regtest's first halving is at
/// height 150; the generator does not check coinbase amounts, nor does
/// the engine).
pub const SUBSIDY: u64 = 50 * 100_000_000;

impl SpendingChain {
    /// Genesis alone.
    pub fn new(seed: u64) -> SpendingChain {
        SpendingChain {
            builder: ChainBuilder::new(seed, SizeMix::Small),
            txs: vec![Vec::new()],
            unspent: Vec::new(),
            tip: 0,
            rng: Rng::new(seed ^ 0x5eed),
        }
    }

    /// The last block of the chain.
    pub fn tip(&self) -> usize {
        self.tip
    }

    /// The height of the next block.
    pub fn next_height(&self) -> u32 {
        self.builder.blocks[self.tip].height + 1
    }

    /// The random generator, for choices in tests.
    pub fn rng(&mut self) -> &mut Rng {
        &mut self.rng
    }

    /// Writes every block (the stale ones too) into `dir` as Core would:
    /// in headers-first order (shuffled in windows of 12), split in
    /// `blk00000.dat`… of at most `file_size` bytes, XORed with `key`,
    /// `xor.dat` beside them. Returns each block's (file, offset) by
    /// block index.
    pub fn write_dir(
        &mut self,
        dir: &Path,
        file_size: usize,
        key: XorKey,
    ) -> std::io::Result<Vec<(usize, u64)>> {
        let blocks: Vec<&GenBlock> = self.builder.blocks.iter().collect();
        let laid = super::write_core_dir(dir, &blocks, 12, file_size, key, &mut self.rng)?;
        Ok(laid.positions)
    }

    /// A random output script: mostly the common shapes, some `OP_RETURN`,
    /// one in 200 over 10,000 bytes.
    pub fn random_script(&mut self) -> Vec<u8> {
        let rng = &mut self.rng;
        let mut body = [0u8; 33];
        rng.fill(&mut body);
        match rng.below(200) {
            0 => vec![0x51; 10_001 + rng.below(100) as usize],
            1..=15 => {
                let mut s = vec![0x6a, 0x10];
                s.extend_from_slice(&body[..16]);
                s
            }
            16..=70 => [&[0x76, 0xa9, 0x14][..], &body[..20], &[0x88, 0xac]].concat(),
            71..=110 => [&[0xa9, 0x14][..], &body[..20], &[0x87]].concat(),
            111..=170 => [&[0x00, 0x14][..], &body[..20]].concat(),
            _ => [&[0x21][..], &body[..], &[0xac]].concat(),
        }
    }

    /// Mines a valid block on the tip: a coinbase of 1 to 3 outputs and up
    /// to `max_txs` spends. Returns its index.
    pub fn extend(&mut self, max_txs: u64) -> usize {
        let height = self.next_height();
        let count = self.rng.below(max_txs + 1);
        let mut txs = Vec::new();
        for _ in 0..count {
            let Some(tx) = self.random_spend(height) else {
                break;
            };
            self.record(&tx, height);
            txs.push(tx);
        }
        let mut script_sig = height.to_le_bytes().to_vec();
        script_sig.extend_from_slice(&self.rng.next_u64().to_le_bytes());
        let count = self.rng.range(1, 3);
        let outputs = self.split(SUBSIDY, count);
        self.mine(&script_sig, &outputs, txs, true)
    }

    /// Mines a block on the tip from a coinbase (`script_sig`, `outputs`)
    /// and `txs`, valid or not, as given; what it creates becomes
    /// spendable, what it spends no longer is. Returns its index.
    pub fn extend_with(
        &mut self,
        script_sig: &[u8],
        outputs: &[(i64, Vec<u8>)],
        txs: Vec<GenTx>,
    ) -> usize {
        self.mine(script_sig, outputs, txs, false)
    }

    /// Mines the block; `recorded`: the spends are already in `unspent`.
    fn mine(
        &mut self,
        script_sig: &[u8],
        outputs: &[(i64, Vec<u8>)],
        txs: Vec<GenTx>,
        recorded: bool,
    ) -> usize {
        let height = self.next_height();
        let witness = txs.iter().any(|tx| tx.bytes[4..6] == [0, 1]);
        let coinbase = GenTx::coinbase(script_sig, outputs, witness.then_some(&txs[..]));
        self.record(&coinbase, height);
        if !recorded {
            for tx in &txs {
                self.record(tx, height);
            }
        }
        let mut all = vec![coinbase];
        all.extend(txs);
        let index = self
            .builder
            .mine(self.tip, all.iter().map(|tx| tx.bytes.clone()).collect());
        self.txs.resize(index, Vec::new());
        self.txs.push(all);
        self.tip = index;
        index
    }

    fn record(&mut self, tx: &GenTx, height: u32) {
        // A repeated coinbase replaces the coins it repeats.
        self.unspent.retain(|s| {
            let repeated = tx.coinbase && s.outpoint.txid == tx.txid;
            !(repeated || tx.inputs.contains(&s.outpoint))
        });
        for (vout, (value, script)) in tx.outputs.iter().enumerate() {
            if !is_unspendable(script) && *value > 0 {
                self.unspent.push(Spendable {
                    outpoint: OutPoint {
                        txid: tx.txid,
                        vout: vout as u32,
                    },
                    value: *value as u64,
                    height,
                    coinbase: tx.coinbase,
                });
            }
        }
    }

    /// A valid spend of 1 to 3 spendable outputs (young ones more often),
    /// or `None` when nothing is spendable at `height`.
    fn random_spend(&mut self, height: u32) -> Option<GenTx> {
        let mut inputs = Vec::new();
        let mut value = 0u64;
        for _ in 0..self.rng.range(1, 3) {
            let mature: Vec<usize> = (0..self.unspent.len())
                .filter(|&i| {
                    let s = &self.unspent[i];
                    (!s.coinbase || height - s.height >= 100) && !inputs.contains(&s.outpoint)
                })
                .collect();
            if mature.is_empty() {
                break;
            }
            let pick = if self.rng.below(3) > 0 {
                // Young: among the last tenth.
                let young = mature.len().div_ceil(10);
                mature[mature.len() - 1 - self.rng.below(young as u64) as usize]
            } else {
                mature[self.rng.below(mature.len() as u64) as usize]
            };
            inputs.push(self.unspent[pick].outpoint);
            value += self.unspent[pick].value;
        }
        if inputs.is_empty() {
            return None;
        }
        let fee = self.rng.below(value / 100 + 1);
        let count = self.rng.range(1, 4);
        let outputs = self.split(value - fee, count);
        let witness = self.rng.below(2) == 0;
        Some(GenTx::spend(&inputs, &outputs, witness))
    }

    /// `value` split into `count` outputs with random scripts; an
    /// unspendable output takes nothing or a little.
    fn split(&mut self, value: u64, count: u64) -> Vec<(i64, Vec<u8>)> {
        let mut left = value;
        let mut outputs = Vec::new();
        for i in 0..count {
            let script = self.random_script();
            let amount = if is_unspendable(&script) {
                self.rng.below(2) * left.min(1_000)
            } else if i + 1 == count {
                left
            } else {
                self.rng.below(left + 1)
            };
            left -= amount;
            outputs.push((amount as i64, script));
        }
        outputs
    }
}
