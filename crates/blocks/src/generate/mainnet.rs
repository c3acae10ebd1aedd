//! A mainnet-shaped regtest chain streamed to Core-style block files, for
//! the chainstate benchmark: valid blocks whose transactions spend real
//! earlier outputs, shaped like Bitcoin's main chain, written out of order,
//! XORed, in 128 MiB files, with stale forks, without holding the chain.
//!
//! The chain's `blocks` heights stand for mainnet's history (about 880,000
//! blocks) compressed: block `i` takes the shape of mainnet at height
//! `i * 880,000 / blocks`. The shapes, all approximate, from well-known
//! public statistics (blockchain.com's and transactionfee.info's charts of
//! transactions a block, inputs and outputs a transaction and output
//! types; the UTXO-set studies of Delgado-Segura et al., "Analysis of the
//! Bitcoin UTXO set", 2018, and the spent-output-age charts of on-chain
//! analytics firms for the age of what is spent):
//!
//! - **Transactions a block**: a handful before 2011 (mainnet height
//!   100k), hundreds by 2013 (250k), about 2,000 from 2016 (400k), 3,000
//!   and more since 2023 (780k); each block ±50% around its era's mean
//!   (times [`MainnetShape::tx_scale`]), one in 50 nearly empty. Blocks stay
//!   under the 4M weight limit.
//! - **Inputs a transaction**: 1 for 62%, 2 for 20%, 3 for 7%, 4–10 for
//!   10%, 11–50 (consolidations) for 1%: a mean near 2.2.
//! - **Outputs a transaction**: 1 for 15%, 2 for 72.5%, 3–5 for 8%, 6–20
//!   for 4%, 21–100 (batched payouts) for 0.5%: a mean near 2.7.
//! - **Output scripts** by era: P2PK then P2PKH in 2009–2011; P2SH and
//!   bare multisig from 2012; P2WPKH and P2WSH from 2017; P2TR from 2021
//!   (a quarter of outputs since 2023); `OP_RETURN` 3–5% since 2014.
//!   Inputs carry the scriptSig and witness sizes of what they spend (a
//!   P2PKH signature and key, 107 bytes; a P2WPKH witness; a P2TR key-path
//!   signature; 1% of P2TR spends carry an inscription-like witness of 1 to
//!   40 kB, as mainnet's blocks have since 2023).
//! - **Values**: each spend pays one output a log-uniform share of its
//!   inputs and the change the rest, less a small fee; coinbases pay 50.
//! - **Age of what is spent**: 8% an output of the same block (chains of
//!   unconfirmed transactions), 30% 1–6 blocks old (the hour), 27% up to
//!   144 blocks (the day), 35% older: a random coin of a bounded reservoir
//!   sampled across the whole history (the long tail of old coins).
//! - **A growing UTXO set**: an output is kept forever (never offered to a
//!   spend, as lost and long-held coins are) with probability
//!   [`MainnetShape::keep`]; and when the reservoir is full, a coin pushed
//!   out of it stays unspent. Mainnet leaves about one UTXO a 6 transactions
//!   (180 million for 1.1 billion); the target (50 million UTXOs in
//!   20 GB) asks for a denser set: `keep` 0.35 gave 2.3 coins a kB of block
//!   files (1.3 million in 573 MB), so about 0.4.
//!
//! What the generator keeps in memory is bounded: the last 144 blocks'
//! spendable outputs, the reservoir ([`MainnetShape::reservoir`] coins,
//! about 56 bytes each), and the blocks of the current write window.
//!
//! The layout is Core's: records (magic, size, block) in `blkNNNNN.dat`
//! files of at most [`MainnetShape::file_size`] bytes, XORed with the key
//! in `xor.dat` (Core 28+), the blocks of each window of up to 1,024
//! blocks or [`MainnetShape::window_bytes`] shuffled as headers-first
//! download stores them (most before their parent), and a one-block stale
//! fork every [`MainnetShape::stale_every`] blocks.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use sha2::{Digest, Sha256};

use super::{REGTEST_BITS, Rng, assemble, regtest_genesis};
use crate::block::merkle_root;
use crate::coin::OutPoint;
use crate::hash::{BlockHash, sha256d};
use crate::header::{BlockHeader, check_pow, header_hash};
use crate::network::Network;
use crate::tx::write_compact_size;
use crate::xor::XorKey;

/// How to generate a mainnet-shaped chain.
#[derive(Clone, Debug)]
pub struct MainnetShape {
    /// Best-chain blocks after genesis.
    pub blocks: u32,
    /// The seed: the same shape and seed give the same bytes.
    pub seed: u64,
    /// A factor on each era's transactions a block.
    pub tx_scale: f64,
    /// The probability that a new output is never spent.
    pub keep: f64,
    /// The most coins older than a day kept to be spent.
    pub reservoir: usize,
    /// The largest block file, in bytes (Core: 128 MiB).
    pub file_size: u64,
    /// The most block bytes shuffled together.
    pub window_bytes: usize,
    /// A stale block every this many blocks (0: none).
    pub stale_every: u32,
    /// The XOR key (`xor.dat`; all zero: none written).
    pub key: XorKey,
}

impl Default for MainnetShape {
    fn default() -> MainnetShape {
        MainnetShape {
            blocks: 3_000,
            seed: 2026,
            tx_scale: 1.0,
            keep: 0.12,
            reservoir: 2_000_000,
            file_size: 128 << 20,
            window_bytes: 64 << 20,
            stale_every: 500,
            key: XorKey([0x3a, 0x91, 0x0e, 0x57, 0xc4, 0x2b, 0x68, 0xfd]),
        }
    }
}

/// What [`write_mainnet_chain`] wrote, with the UTXO set it leaves.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MainnetChain {
    /// The best chain's tip height.
    pub height: u32,
    /// The tip's hash.
    pub tip: BlockHash,
    /// Stale blocks written.
    pub stale: u32,
    /// Block files written.
    pub files: u32,
    /// Bytes written (records included).
    pub bytes: u64,
    /// Best-chain transactions, coinbases included.
    pub transactions: u64,
    /// Best-chain inputs, coinbases' not counted.
    pub inputs: u64,
    /// Coins in the UTXO set at the tip (spendable outputs, genesis's not
    /// counted, as Core never adds it).
    pub utxos: u64,
    /// Their total value in satoshis.
    pub amount: u128,
}

/// Mainnet's mean transactions a block at some heights (approximate),
/// interpolated between.
const TXS_BY_HEIGHT: [(u32, f64); 9] = [
    (0, 1.0),
    (100_000, 4.0),
    (200_000, 150.0),
    (250_000, 400.0),
    (350_000, 1_000.0),
    (450_000, 2_100.0),
    (600_000, 2_300.0),
    (780_000, 2_600.0),
    (880_000, 3_500.0),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    P2pk,
    P2pkh,
    P2sh,
    P2wpkh,
    P2wsh,
    P2tr,
    Multisig,
    OpReturn,
}

/// Output script shares (percent) from a mainnet height on.
const KINDS_BY_HEIGHT: [(u32, [(Kind, u32); 4]); 7] = {
    use Kind::*;
    [
        (0, [(P2pk, 85), (P2pkh, 15), (P2sh, 0), (OpReturn, 0)]),
        (100_000, [(P2pk, 5), (P2pkh, 93), (P2sh, 2), (OpReturn, 0)]),
        (
            250_000,
            [(P2pkh, 82), (P2sh, 10), (Multisig, 2), (OpReturn, 3)],
        ),
        (
            400_000,
            [(P2pkh, 65), (P2sh, 25), (P2wpkh, 4), (OpReturn, 3)],
        ),
        (
            550_000,
            [(P2pkh, 40), (P2sh, 25), (P2wpkh, 28), (OpReturn, 3)],
        ),
        (700_000, [(P2pkh, 20), (P2wpkh, 52), (P2tr, 6), (P2sh, 16)]),
        (780_000, [(P2pkh, 12), (P2wpkh, 44), (P2tr, 25), (P2sh, 10)]),
    ]
};

#[derive(Clone, Copy, Debug)]
struct Spendable {
    outpoint: OutPoint,
    value: u64,
    height: u32,
    kind: Kind,
    coinbase: bool,
}

const DAY: usize = 144;
const MAX_WEIGHT: usize = 3_900_000;

/// Writes a mainnet-shaped chain to `dir` (which should be empty), calling
/// `progress` with each height written.
pub fn write_mainnet_chain(
    shape: &MainnetShape,
    dir: &Path,
    progress: &mut dyn FnMut(u32),
) -> std::io::Result<MainnetChain> {
    let mut maker = Generator::new(shape);
    let mut out = Files::new(dir, shape)?;
    let genesis = regtest_genesis();
    out.push(&mut maker.rng, genesis.clone())?;
    let mut tip = header_hash(genesis[..80].try_into().expect("80 bytes"));
    let mut time = 1_296_688_602u32;
    for height in 1..=shape.blocks {
        time += 600;
        let block = maker.block(height, tip, time);
        let hash = header_hash(block[..80].try_into().expect("80 bytes"));
        let stale =
            shape.stale_every > 0 && height % shape.stale_every == 0 && height + 10 < shape.blocks;
        if stale {
            let sibling = maker.stale_block(height, tip, time + 1);
            out.push(&mut maker.rng, sibling)?;
            maker.summary.stale += 1;
        }
        out.push(&mut maker.rng, block)?;
        tip = hash;
        progress(height);
    }
    let mut summary = maker.summary;
    summary.height = shape.blocks;
    summary.tip = tip;
    (summary.files, summary.bytes) = out.finish(&mut maker.rng)?;
    Ok(summary)
}

/// The block files: a window of records shuffled, then appended.
struct Files<'a> {
    dir: &'a Path,
    shape: &'a MainnetShape,
    window: Vec<Vec<u8>>,
    window_bytes: usize,
    file: Option<BufWriter<File>>,
    number: u32,
    offset: u64,
    bytes: u64,
}

impl<'a> Files<'a> {
    fn new(dir: &'a Path, shape: &'a MainnetShape) -> std::io::Result<Files<'a>> {
        std::fs::create_dir_all(dir)?;
        if !shape.key.is_zero() {
            std::fs::write(dir.join("xor.dat"), shape.key.0)?;
        }
        Ok(Files {
            dir,
            shape,
            window: Vec::new(),
            window_bytes: 0,
            file: None,
            number: 0,
            offset: 0,
            bytes: 0,
        })
    }

    fn push(&mut self, rng: &mut Rng, block: Vec<u8>) -> std::io::Result<()> {
        let mut record = Network::Regtest.magic().to_vec();
        record.extend_from_slice(&(block.len() as u32).to_le_bytes());
        record.extend_from_slice(&block);
        self.window_bytes += record.len();
        self.window.push(record);
        if self.window.len() >= 1024 || self.window_bytes >= self.shape.window_bytes {
            self.flush(rng)?;
        }
        Ok(())
    }

    fn flush(&mut self, rng: &mut Rng) -> std::io::Result<()> {
        let mut window = std::mem::take(&mut self.window);
        self.window_bytes = 0;
        rng.shuffle(&mut window);
        for mut record in window {
            let full = self.offset > 0 && self.offset + record.len() as u64 > self.shape.file_size;
            if self.file.is_none() || full {
                if let Some(mut file) = self.file.take() {
                    file.flush()?;
                    self.number += 1;
                }
                let path = self.dir.join(format!("blk{:05}.dat", self.number));
                self.file = Some(BufWriter::with_capacity(1 << 20, File::create(path)?));
                self.offset = 0;
            }
            self.shape.key.apply(&mut record, self.offset);
            self.file.as_mut().expect("open").write_all(&record)?;
            self.offset += record.len() as u64;
            self.bytes += record.len() as u64;
        }
        Ok(())
    }

    fn finish(mut self, rng: &mut Rng) -> std::io::Result<(u32, u64)> {
        self.flush(rng)?;
        if let Some(mut file) = self.file.take() {
            file.flush()?;
            file.get_ref().sync_all()?;
        }
        Ok((self.number + 1, self.bytes))
    }
}

struct Generator {
    rng: Rng,
    shape: MainnetShape,
    /// Spendable outputs of the last [`DAY`] blocks, the newest first.
    recent: VecDeque<Vec<Spendable>>,
    /// Older spendable outputs, a bounded sample.
    reservoir: Vec<Spendable>,
    /// Coins in `recent` and `reservoir`.
    available: u64,
    summary: MainnetChain,
}

impl Generator {
    fn new(shape: &MainnetShape) -> Generator {
        Generator {
            rng: Rng::new(shape.seed),
            shape: shape.clone(),
            recent: VecDeque::new(),
            reservoir: Vec::new(),
            available: 0,
            summary: MainnetChain::default(),
        }
    }

    /// The mainnet height block `height` stands for.
    fn era(&self, height: u32) -> u32 {
        (height as u64 * 880_000 / self.shape.blocks.max(1) as u64) as u32
    }

    fn kind(&mut self, era: u32, coinbase: bool) -> Kind {
        let (_, shares) = KINDS_BY_HEIGHT
            .iter()
            .rev()
            .find(|(from, _)| *from <= era)
            .expect("an era from 0");
        let roll = self.rng.below(100) as u32;
        let mut at = 0;
        for &(kind, share) in shares {
            at += share;
            if roll < at {
                return if coinbase && kind == Kind::OpReturn {
                    Kind::P2pkh
                } else {
                    kind
                };
            }
        }
        // The rest of each era's hundred: its smaller kinds.
        match (era, roll % 4) {
            (0..100_000, _) => Kind::P2pk,
            (_, 0) if era >= 550_000 => Kind::P2wsh,
            (_, 1) if !coinbase && era >= 250_000 => Kind::OpReturn,
            (_, 2) if era >= 250_000 => Kind::Multisig,
            _ => Kind::P2pkh,
        }
    }

    fn script(&mut self, kind: Kind) -> Vec<u8> {
        let mut key = [0u8; 65];
        self.rng.fill(&mut key);
        match kind {
            Kind::P2pk if self.rng.below(2) == 0 => [&[0x41][..], &key, &[0xac]].concat(),
            Kind::P2pk => [&[0x21, 0x02][..], &key[..32], &[0xac]].concat(),
            Kind::P2pkh => [&[0x76, 0xa9, 0x14][..], &key[..20], &[0x88, 0xac]].concat(),
            Kind::P2sh => [&[0xa9, 0x14][..], &key[..20], &[0x87]].concat(),
            Kind::P2wpkh => [&[0x00, 0x14][..], &key[..20]].concat(),
            Kind::P2wsh => [&[0x00, 0x20][..], &key[..32]].concat(),
            Kind::P2tr => [&[0x51, 0x20][..], &key[..32]].concat(),
            Kind::Multisig => [
                &[0x51, 0x21, 0x02][..],
                &key[..32],
                &[0x21, 0x03],
                &key[32..64],
                &[0x52, 0xae],
            ]
            .concat(),
            Kind::OpReturn => [&[0x6a, 0x14][..], &key[..20]].concat(),
        }
    }

    /// Takes a coin to spend at `height`, its age drawn from the shape.
    fn take(&mut self, height: u32) -> Option<Spendable> {
        let roll = self.rng.below(100);
        let ages = match roll {
            0..=7 => 0..1,
            8..=37 => 1..7,
            38..=64 => 7..DAY,
            _ => DAY..DAY,
        };
        for _ in 0..4 {
            let pick = if ages.is_empty() || self.recent.len() <= ages.start {
                self.take_old(height)
            } else {
                let end = ages.end.min(self.recent.len());
                let age = self.rng.range(ages.start as u64, end as u64 - 1) as usize;
                self.take_recent(age, height)
            };
            if pick.is_some() {
                return pick;
            }
        }
        // Few coins (the chain's start): any the day has.
        (0..self.recent.len()).find_map(|age| self.take_recent(age, height))
    }

    fn take_recent(&mut self, age: usize, height: u32) -> Option<Spendable> {
        let outputs = &mut self.recent[age];
        if outputs.is_empty() {
            return None;
        }
        let i = self.rng.below(outputs.len() as u64) as usize;
        let coin = outputs[i];
        if coin.coinbase && height - coin.height < 100 {
            return None;
        }
        self.available -= 1;
        Some(outputs.swap_remove(i))
    }

    fn take_old(&mut self, height: u32) -> Option<Spendable> {
        if self.reservoir.is_empty() {
            return None;
        }
        let i = self.rng.below(self.reservoir.len() as u64) as usize;
        let coin = self.reservoir[i];
        if coin.coinbase && height - coin.height < 100 {
            return None;
        }
        self.available -= 1;
        Some(self.reservoir.swap_remove(i))
    }

    /// Records `tx`'s outputs in the current block's list.
    fn created(&mut self, txid: [u8; 32], outputs: &[(u64, Kind)], height: u32, coinbase: bool) {
        for (vout, &(value, kind)) in outputs.iter().enumerate() {
            if kind == Kind::OpReturn {
                continue;
            }
            self.summary.utxos += 1;
            self.summary.amount += value as u128;
            if self.rng.below(1_000_000) < (self.shape.keep * 1e6) as u64 {
                continue;
            }
            self.available += 1;
            self.recent[0].push(Spendable {
                outpoint: OutPoint {
                    txid,
                    vout: vout as u32,
                },
                value,
                height,
                kind,
                coinbase,
            });
        }
    }

    /// Ages the day's outputs by a block: the oldest move to the reservoir.
    fn next_block(&mut self) {
        if self.recent.len() == DAY {
            let old = self.recent.pop_back().expect("a day of blocks");
            for coin in old {
                if self.reservoir.len() < self.shape.reservoir {
                    self.reservoir.push(coin);
                } else if self.shape.reservoir == 0 {
                    self.available -= 1;
                } else {
                    // The coin pushed out stays unspent.
                    self.available -= 1;
                    let i = self.rng.below(self.reservoir.len() as u64) as usize;
                    self.reservoir[i] = coin;
                }
            }
        }
        self.recent.push_front(Vec::new());
    }

    fn tx_count(&mut self, height: u32) -> u64 {
        let era = self.era(height);
        let i = TXS_BY_HEIGHT.partition_point(|&(h, _)| h <= era).max(1) - 1;
        let (h0, t0) = TXS_BY_HEIGHT[i];
        let (h1, t1) = TXS_BY_HEIGHT[(i + 1).min(TXS_BY_HEIGHT.len() - 1)];
        let mean = if h1 > h0 {
            t0 + (t1 - t0) * (era - h0) as f64 / (h1 - h0) as f64
        } else {
            t0
        };
        if self.rng.below(50) == 0 {
            return self.rng.below(3);
        }
        let jitter = 0.5 + self.rng.below(1001) as f64 / 1000.0;
        (mean * self.shape.tx_scale * jitter) as u64
    }

    fn block(&mut self, height: u32, prev: BlockHash, time: u32) -> Vec<u8> {
        self.next_block();
        let era = self.era(height);
        let mut txs: Vec<Vec<u8>> = Vec::new();
        let mut txids = Vec::new();
        let mut wtxids = Vec::new();
        let mut weight = 4_000;
        for _ in 0..self.tx_count(height) {
            let Some(tx) = self.spend(height, era) else {
                break;
            };
            weight += tx.weight;
            txids.push(tx.txid);
            wtxids.push(sha256d(&tx.bytes));
            txs.push(tx.bytes);
            if weight > MAX_WEIGHT {
                break;
            }
        }
        let kind = self.kind(era, true);
        let script = self.script(kind);
        let segwit = txs.iter().any(|tx| tx[4..6] == [0, 1]);
        let coinbase = coinbase(height, &script, segwit.then_some(&wtxids[..]));
        let cb_txid = sha256d(&coinbase.1);
        self.created(cb_txid, &[(50 * 100_000_000, kind)], height, true);
        self.summary.transactions += 1 + txs.len() as u64;
        let mut all = vec![coinbase.0];
        all.extend(txs);
        txids.insert(0, cb_txid);
        mine(prev, merkle_root(txids).0, time, &all, &mut self.rng)
    }

    /// A block at `height` beside the best chain's: a coinbase alone.
    fn stale_block(&mut self, height: u32, prev: BlockHash, time: u32) -> Vec<u8> {
        let (bytes, base) = coinbase(height, &[0x51], None);
        mine(prev, sha256d(&base), time, &[bytes], &mut self.rng)
    }

    fn spend(&mut self, height: u32, era: u32) -> Option<GenSpend> {
        let wanted = match self.rng.below(1000) {
            0..=619 => 1,
            620..=819 => 2,
            820..=889 => 3,
            890..=989 => self.rng.range(4, 10),
            _ => self.rng.range(11, 50),
        };
        // While coins are few (the chain's start), spends split rather
        // than gather, as the early chain's did.
        let wanted = wanted.min(self.available / 256 + 1);
        let mut inputs = Vec::new();
        for _ in 0..wanted {
            match self.take(height) {
                Some(coin) => inputs.push(coin),
                None => break,
            }
        }
        if inputs.is_empty() {
            return None;
        }
        let total: u64 = inputs.iter().map(|c| c.value).sum();
        let count = match self.rng.below(1000) {
            0..=149 => 1,
            150..=874 => 2,
            875..=954 => self.rng.range(3, 5),
            955..=994 => self.rng.range(6, 20),
            _ => self.rng.range(21, 100),
        };
        let fee = (total / 1000).min(self.rng.range(200, 20_000)).min(total);
        let mut left = total - fee;
        let mut outputs = Vec::new();
        for i in 0..count {
            let kind = self.kind(era, false);
            let value = if kind == Kind::OpReturn {
                0
            } else if i + 1 == count {
                left
            } else {
                // A log-uniform share of what is left.
                let bits = self.rng.below(64 - left.leading_zeros() as u64 + 1);
                self.rng.below((1u64 << bits.min(63)).min(left) + 1)
            };
            left -= value;
            outputs.push((value, kind));
        }
        self.summary.inputs += inputs.len() as u64;
        for coin in &inputs {
            self.summary.utxos -= 1;
            self.summary.amount -= coin.value as u128;
        }
        let tx = self.serialize(&inputs, &outputs);
        self.created(tx.txid, &outputs, height, false);
        Some(tx)
    }
}

struct GenSpend {
    txid: [u8; 32],
    bytes: Vec<u8>,
    weight: usize,
}

impl Generator {
    /// The transaction's bytes: each input with the scriptSig and witness
    /// sizes of what it spends.
    fn serialize(&mut self, inputs: &[Spendable], outputs: &[(u64, Kind)]) -> GenSpend {
        let mut body = Vec::new();
        let mut witness = Vec::new();
        let mut segwit = false;
        let mut noise = vec![0u8; 40_000];
        write_compact_size(&mut body, inputs.len() as u64);
        for coin in inputs {
            body.extend_from_slice(&coin.outpoint.txid);
            body.extend_from_slice(&coin.outpoint.vout.to_le_bytes());
            let wrapped = coin.kind == Kind::P2sh && self.rng.below(2) == 0;
            let (script_sig, items): (usize, &[usize]) = match coin.kind {
                Kind::P2pk => (73, &[]),
                Kind::P2pkh => (107, &[]),
                Kind::P2sh if wrapped => (23, &[72, 33]),
                Kind::P2sh => (253, &[]),
                Kind::Multisig => (74, &[]),
                Kind::P2wpkh => (0, &[72, 33]),
                Kind::P2wsh => (0, &[0, 72, 72, 105]),
                Kind::P2tr => (0, &[64]),
                Kind::OpReturn => unreachable!("never spendable"),
            };
            let inscription = [self.rng.range(1_000, 40_000) as usize, 40, 33];
            let items = if coin.kind == Kind::P2tr && self.rng.below(100) == 0 {
                &inscription[..]
            } else {
                items
            };
            write_compact_size(&mut body, script_sig as u64);
            self.rng.fill(&mut noise[..script_sig]);
            body.extend_from_slice(&noise[..script_sig]);
            body.extend_from_slice(&0xffff_fffdu32.to_le_bytes());
            write_compact_size(&mut witness, items.len() as u64);
            for &len in items {
                write_compact_size(&mut witness, len as u64);
                self.rng.fill(&mut noise[..len]);
                witness.extend_from_slice(&noise[..len]);
            }
            segwit |= !items.is_empty();
        }
        write_compact_size(&mut body, outputs.len() as u64);
        for &(value, kind) in outputs {
            let script = self.script(kind);
            body.extend_from_slice(&value.to_le_bytes());
            write_compact_size(&mut body, script.len() as u64);
            body.extend_from_slice(&script);
        }
        let version = 2i32.to_le_bytes();
        let lock = 0u32.to_le_bytes();
        let mut hasher = Sha256::new();
        for part in [&version[..], &body, &lock] {
            hasher.update(part);
        }
        let txid: [u8; 32] = Sha256::digest(hasher.finalize()).into();
        let base = 8 + body.len();
        let mut bytes = Vec::with_capacity(base + 2 + witness.len());
        bytes.extend_from_slice(&version);
        if segwit {
            bytes.extend_from_slice(&[0, 1]);
        }
        bytes.extend_from_slice(&body);
        if segwit {
            bytes.extend_from_slice(&witness);
        }
        bytes.extend_from_slice(&lock);
        let weight = 3 * base + bytes.len();
        GenSpend {
            txid,
            bytes,
            weight,
        }
    }
}

/// A coinbase paying 50 to `script`; with `commit_to` (the block's other
/// wtxids), in segwit serialization with the BIP 141 commitment. Returns
/// its bytes and its legacy serialization (whose hash is its txid).
fn coinbase(height: u32, script: &[u8], commit_to: Option<&[[u8; 32]]>) -> (Vec<u8>, Vec<u8>) {
    let mut script_sig = vec![4];
    script_sig.extend_from_slice(&height.to_le_bytes());
    script_sig.extend_from_slice(b"seekless");
    let mut outputs = vec![(50 * 100_000_000u64, script.to_vec())];
    if let Some(others) = commit_to {
        let wtxids = std::iter::once([0; 32])
            .chain(others.iter().copied())
            .collect();
        let mut root_and_reserved = merkle_root(wtxids).0.to_vec();
        root_and_reserved.extend_from_slice(&[0; 32]);
        let mut commitment = vec![0x6a, 0x24, 0xaa, 0x21, 0xa9, 0xed];
        commitment.extend_from_slice(&sha256d(&root_and_reserved));
        outputs.push((0, commitment));
    }
    let mut body = vec![1];
    body.extend_from_slice(&[0; 32]);
    body.extend_from_slice(&u32::MAX.to_le_bytes());
    write_compact_size(&mut body, script_sig.len() as u64);
    body.extend_from_slice(&script_sig);
    body.extend_from_slice(&u32::MAX.to_le_bytes());
    write_compact_size(&mut body, outputs.len() as u64);
    for (value, script) in &outputs {
        body.extend_from_slice(&value.to_le_bytes());
        write_compact_size(&mut body, script.len() as u64);
        body.extend_from_slice(script);
    }
    let legacy = [&2i32.to_le_bytes()[..], &body, &[0; 4]].concat();
    if commit_to.is_none() {
        return (legacy.clone(), legacy);
    }
    let bytes = [
        &2i32.to_le_bytes()[..],
        &[0, 1],
        &body,
        &[1, 32],
        &[0; 32],
        &[0; 4],
    ]
    .concat();
    (bytes, legacy)
}

/// A block of `txs` on `prev`, its header mined to regtest's target.
fn mine(prev: BlockHash, merkle: [u8; 32], time: u32, txs: &[Vec<u8>], rng: &mut Rng) -> Vec<u8> {
    let mut header = BlockHeader {
        version: 0x2000_0000,
        prev,
        merkle_root: merkle,
        time,
        bits: REGTEST_BITS,
        nonce: rng.next_u64() as u32,
    };
    let limit = Network::Regtest.pow_limit();
    while !check_pow(&header_hash(&header.serialize()), header.bits, limit) {
        header.nonce = header.nonce.wrapping_add(1);
    }
    assemble(&header, txs)
}
