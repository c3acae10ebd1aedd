//! Synthetic regtest chains for tests and benchmarks: real legacy and segwit
//! transaction serialization, correct merkle roots, mined headers (regtest's
//! nBits 0x207fffff takes a couple of hashes), forks, and the out-of-order,
//! split, obfuscated file layouts Core produces.

use crate::block::merkle_root;
use crate::hash::BlockHash;
use crate::header::{BlockHeader, HEADER_LEN, check_pow, header_hash};
use crate::network::Network;
use crate::tx::{Transaction, write_compact_size};
use crate::xor::XorKey;

pub mod mainnet;
pub mod spends;

/// Regtest's compact target.
pub const REGTEST_BITS: u32 = 0x207f_ffff;

/// A small deterministic random generator (SplitMix64).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// Fills `out` with random bytes.
    pub fn fill(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(8) {
            let word = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
    }

    /// Shuffles a slice.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i as u64 + 1) as usize);
        }
    }
}

/// The regtest genesis block, byte for byte.
pub fn regtest_genesis() -> Vec<u8> {
    const TIMES: &[u8] = b"The Times 03/Jan/2009 Chancellor on brink of second bailout for banks";
    const PUBKEY: &str = "04678afdb0fe5548271967f1a67130b7105cd6a828e03909a67962e0ea1f61deb6\
                          49f6bc3f4cef38c4f35504e51ec112de5c384df7ba0b8d578a4c702b6bf11d5f";
    let mut script_sig = vec![0x04, 0xff, 0xff, 0x00, 0x1d, 0x01, 0x04, TIMES.len() as u8];
    script_sig.extend_from_slice(TIMES);
    let mut script_pubkey = vec![0x41];
    script_pubkey
        .extend((0..65).map(|i| u8::from_str_radix(&PUBKEY[2 * i..2 * i + 2], 16).expect("hex")));
    script_pubkey.push(0xac);
    let coinbase = coinbase_tx(&script_sig, 50 * 100_000_000, &script_pubkey, 1);
    let header = BlockHeader {
        version: 1,
        prev: BlockHash::default(),
        merkle_root: txid(&coinbase),
        time: 1_296_688_602,
        bits: REGTEST_BITS,
        nonce: 2,
    };
    assemble(&header, &[coinbase])
}

fn txid(tx: &[u8]) -> [u8; 32] {
    Transaction::parse(tx, 0)
        .expect("generated transactions parse")
        .0
        .txid()
}

fn coinbase_tx(script_sig: &[u8], value: u64, script_pubkey: &[u8], version: i32) -> Vec<u8> {
    let mut tx = Vec::new();
    tx.extend_from_slice(&version.to_le_bytes());
    tx.push(1);
    tx.extend_from_slice(&[0; 32]);
    tx.extend_from_slice(&u32::MAX.to_le_bytes());
    write_compact_size(&mut tx, script_sig.len() as u64);
    tx.extend_from_slice(script_sig);
    tx.extend_from_slice(&u32::MAX.to_le_bytes());
    tx.push(1);
    tx.extend_from_slice(&value.to_le_bytes());
    write_compact_size(&mut tx, script_pubkey.len() as u64);
    tx.extend_from_slice(script_pubkey);
    tx.extend_from_slice(&0u32.to_le_bytes());
    tx
}

/// A coinbase in segwit serialization with the witness commitment of a
/// block holding `others` after it (BIP 141): a second output, of nothing,
/// `OP_RETURN` the commitment header and the double SHA-256 of the witness
/// merkle root and the reserved value, all zero bytes, which the coinbase's
/// one witness item holds.
fn committed_coinbase(
    script_sig: &[u8],
    value: u64,
    script_pubkey: &[u8],
    others: &[Vec<u8>],
) -> Vec<u8> {
    let wtxids = std::iter::once([0; 32])
        .chain(others.iter().map(|tx| crate::hash::sha256d(tx)))
        .collect();
    let mut root_and_reserved = merkle_root(wtxids).0.to_vec();
    root_and_reserved.extend_from_slice(&[0; 32]);
    let mut commitment = vec![0x6a, 0x24, 0xaa, 0x21, 0xa9, 0xed];
    commitment.extend_from_slice(&crate::hash::sha256d(&root_and_reserved));
    let mut tx = Vec::new();
    tx.extend_from_slice(&2i32.to_le_bytes());
    tx.extend_from_slice(&[0, 1, 1]);
    tx.extend_from_slice(&[0; 32]);
    tx.extend_from_slice(&u32::MAX.to_le_bytes());
    write_compact_size(&mut tx, script_sig.len() as u64);
    tx.extend_from_slice(script_sig);
    tx.extend_from_slice(&u32::MAX.to_le_bytes());
    tx.push(2);
    for (value, script) in [(value, script_pubkey), (0, &commitment[..])] {
        tx.extend_from_slice(&value.to_le_bytes());
        write_compact_size(&mut tx, script.len() as u64);
        tx.extend_from_slice(script);
    }
    tx.extend_from_slice(&[1, 32]);
    tx.extend_from_slice(&[0; 32]);
    tx.extend_from_slice(&0u32.to_le_bytes());
    tx
}

/// A random spending transaction with `inputs` inputs and `outputs`
/// outputs, in segwit serialization when `segwit` (then every input has a
/// two-item witness), legacy otherwise; `script_len` sizes the scripts.
pub fn random_tx(
    rng: &mut Rng,
    segwit: bool,
    inputs: u64,
    outputs: u64,
    script_len: usize,
) -> Vec<u8> {
    let mut tx = Vec::new();
    tx.extend_from_slice(&2i32.to_le_bytes());
    if segwit {
        tx.extend_from_slice(&[0, 1]);
    }
    let mut scratch = vec![0u8; script_len.max(72)];
    write_compact_size(&mut tx, inputs);
    for _ in 0..inputs {
        rng.fill(&mut scratch[..36]);
        tx.extend_from_slice(&scratch[..36]);
        let len = if segwit { 0 } else { script_len };
        write_compact_size(&mut tx, len as u64);
        rng.fill(&mut scratch[..len]);
        tx.extend_from_slice(&scratch[..len]);
        tx.extend_from_slice(&0xffff_fffdu32.to_le_bytes());
    }
    write_compact_size(&mut tx, outputs);
    for _ in 0..outputs {
        tx.extend_from_slice(&rng.range(546, 1 << 40).to_le_bytes());
        let len = 22 + rng.below(13) as usize;
        write_compact_size(&mut tx, len as u64);
        rng.fill(&mut scratch[..len]);
        tx.extend_from_slice(&scratch[..len]);
    }
    if segwit {
        for _ in 0..inputs {
            tx.push(2);
            let sig_len = script_len.clamp(1, 72);
            write_compact_size(&mut tx, sig_len as u64);
            rng.fill(&mut scratch[..sig_len]);
            tx.extend_from_slice(&scratch[..sig_len]);
            tx.push(33);
            rng.fill(&mut scratch[..33]);
            tx.extend_from_slice(&scratch[..33]);
        }
    }
    tx.extend_from_slice(&0u32.to_le_bytes());
    tx
}

/// A serialized block from a header and transactions.
pub fn assemble(header: &BlockHeader, txs: &[Vec<u8>]) -> Vec<u8> {
    let mut block = header.serialize().to_vec();
    write_compact_size(&mut block, txs.len() as u64);
    for tx in txs {
        block.extend_from_slice(tx);
    }
    block
}

/// How big generated blocks are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeMix {
    /// A coinbase and 0 to 4 small transactions (a few hundred bytes).
    Small,
    /// Mostly small blocks, some of tens of kilobytes, a few of hundreds,
    /// the way the early-to-busy history of a real chain mixes them.
    Realistic,
}

/// One generated block.
#[derive(Clone, Debug)]
pub struct GenBlock {
    /// Its hash.
    pub hash: BlockHash,
    /// Index of its parent in [`ChainBuilder::blocks`] (`None` for genesis).
    pub parent: Option<usize>,
    /// Height.
    pub height: u32,
    /// The serialized block.
    pub bytes: Vec<u8>,
}

/// Builds a regtest block tree, starting with the real genesis block.
#[derive(Debug)]
pub struct ChainBuilder {
    rng: Rng,
    mix: SizeMix,
    /// Every block made, genesis first.
    pub blocks: Vec<GenBlock>,
}

impl ChainBuilder {
    /// A tree holding only regtest's genesis.
    pub fn new(seed: u64, mix: SizeMix) -> ChainBuilder {
        let bytes = regtest_genesis();
        let hash = header_hash(bytes[..HEADER_LEN].try_into().expect("80 bytes"));
        ChainBuilder {
            rng: Rng::new(seed),
            mix,
            blocks: vec![GenBlock {
                hash,
                parent: None,
                height: 0,
                bytes,
            }],
        }
    }

    /// The random generator, for layout decisions in tests.
    pub fn rng(&mut self) -> &mut Rng {
        &mut self.rng
    }

    /// Mines a child of block `parent` and returns its index.
    pub fn extend(&mut self, parent: usize) -> usize {
        let height = self.blocks[parent].height + 1;
        let rng = &mut self.rng;
        let mut script_sig = Vec::new();
        script_sig.push(4);
        script_sig.extend_from_slice(&height.to_le_bytes());
        let mut extra = [0u8; 8];
        rng.fill(&mut extra);
        script_sig.extend_from_slice(&extra);
        let mut txs = vec![coinbase_tx(&script_sig, 50 * 100_000_000, &[0x51], 2)];
        let (count, script_len) = match self.mix {
            SizeMix::Small => (rng.below(5), rng.range(1, 110) as usize),
            SizeMix::Realistic => match rng.below(100) {
                0..=69 => (rng.below(3), 107),
                70..=97 => (rng.range(5, 60), 107),
                _ => (rng.range(100, 500), 107),
            },
        };
        for _ in 0..count {
            let segwit = rng.below(2) == 0;
            let (inputs, outputs) = (rng.range(1, 3), rng.range(1, 3));
            txs.push(random_tx(rng, segwit, inputs, outputs, script_len));
        }
        if txs.len() > 1 && txs[1..].iter().any(|tx| tx[4..6] == [0, 1]) {
            txs[0] = committed_coinbase(&script_sig, 50 * 100_000_000, &[0x51], &txs[1..]);
        }
        self.mine(parent, txs)
    }

    /// Mines a child of block `parent` holding `txs` (the coinbase first,
    /// taken as given) and returns its index.
    pub fn mine(&mut self, parent: usize, txs: Vec<Vec<u8>>) -> usize {
        let height = self.blocks[parent].height + 1;
        let rng = &mut self.rng;
        let txids = txs.iter().map(|tx| txid(tx)).collect();
        let parent_block = &self.blocks[parent];
        let time =
            u32::from_le_bytes(parent_block.bytes[68..72].try_into().expect("4 bytes")) + 600;
        let mut header = BlockHeader {
            version: 0x2000_0000,
            prev: parent_block.hash,
            merkle_root: merkle_root(txids).0,
            time,
            bits: REGTEST_BITS,
            nonce: rng.next_u64() as u32,
        };
        let limit = Network::Regtest.pow_limit();
        let hash = loop {
            let hash = header_hash(&header.serialize());
            if check_pow(&hash, header.bits, limit) {
                break hash;
            }
            header.nonce = header.nonce.wrapping_add(1);
        };
        self.blocks.push(GenBlock {
            hash,
            parent: Some(parent),
            height,
            bytes: assemble(&header, &txs),
        });
        self.blocks.len() - 1
    }

    /// Extends block `from` by `count` blocks; returns the last one's index.
    pub fn extend_chain(&mut self, from: usize, count: usize) -> usize {
        (0..count).fold(from, |tip, _| self.extend(tip))
    }
}

/// Block indices in the order headers-first download stores them: the
/// given order shuffled within consecutive windows of `window` blocks, so
/// most blocks land before their parent.
pub fn headers_first_order(mut order: Vec<usize>, window: usize, rng: &mut Rng) -> Vec<usize> {
    for chunk in order.chunks_mut(window.max(1)) {
        rng.shuffle(chunk);
    }
    order
}

/// Writes `files` into `dir` as `blk00000.dat`…, and `key` as `xor.dat`
/// beside them when there is one; returns the files' paths.
pub fn write_block_files(
    dir: &std::path::Path,
    files: &[Vec<u8>],
    key: Option<XorKey>,
) -> std::io::Result<Vec<std::path::PathBuf>> {
    let mut paths = Vec::with_capacity(files.len());
    for (n, bytes) in files.iter().enumerate() {
        let path = dir.join(format!("blk{n:05}.dat"));
        std::fs::write(&path, bytes)?;
        paths.push(path);
    }
    if let Some(key) = key {
        std::fs::write(dir.join("xor.dat"), key.0)?;
    }
    Ok(paths)
}

/// Block files as Core lays them out: [`write_core_dir`]'s files and where
/// each block went.
#[derive(Clone, Debug)]
pub struct CoreDir {
    /// The files written, `blk00000.dat` first.
    pub paths: Vec<std::path::PathBuf>,
    /// Each block's (file, offset), in the order the blocks were given.
    pub positions: Vec<(usize, u64)>,
}

/// Writes regtest `blocks` into `dir` as Core would: in headers-first order
/// (by height, shuffled in windows of `window`), split in `blk00000.dat`…
/// of at most `file_size` bytes, XORed with `key`, `xor.dat` beside them.
pub fn write_core_dir(
    dir: &std::path::Path,
    blocks: &[&GenBlock],
    window: usize,
    file_size: usize,
    key: XorKey,
    rng: &mut Rng,
) -> std::io::Result<CoreDir> {
    let mut order: Vec<usize> = (0..blocks.len()).collect();
    order.sort_by_key(|&i| blocks[i].height);
    let order = headers_first_order(order, window, rng);
    let laid = order.iter().map(|&i| blocks[i].bytes.as_slice());
    let (files, placed) = layout_files(Network::Regtest, laid, file_size, key);
    let paths = write_block_files(dir, &files, Some(key))?;
    let mut positions = vec![(0, 0); order.len()];
    for (k, &i) in order.iter().enumerate() {
        positions[i] = placed[k];
    }
    Ok(CoreDir { paths, positions })
}

/// One file record: magic, little-endian size, block.
pub fn record(network: Network, block: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + block.len());
    out.extend_from_slice(&network.magic());
    out.extend_from_slice(&(block.len() as u32).to_le_bytes());
    out.extend_from_slice(block);
    out
}

/// Lays records out in files of at most `max_file_size` bytes (a record
/// never spans files), XORed with `key`. Returns each file's bytes and, for
/// each block in the given order, its (file, offset).
pub fn layout_files<'a>(
    network: Network,
    blocks: impl IntoIterator<Item = &'a [u8]>,
    max_file_size: usize,
    key: XorKey,
) -> (Vec<Vec<u8>>, Vec<(usize, u64)>) {
    let mut files: Vec<Vec<u8>> = vec![Vec::new()];
    let mut positions = Vec::new();
    for block in blocks {
        let rec = record(network, block);
        let last = files.last_mut().expect("one file at least");
        if !last.is_empty() && last.len() + rec.len() > max_file_size {
            files.push(Vec::new());
        }
        let index = files.len() - 1;
        positions.push((index, files[index].len() as u64));
        files[index].extend_from_slice(&rec);
    }
    for file in &mut files {
        key.apply(file, 0);
    }
    (files, positions)
}
