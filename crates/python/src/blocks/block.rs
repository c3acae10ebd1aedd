//! The blocks `Blocks.iter` hands to Python: owned (the bytes, where each
//! transaction, input and output lies in them, the coins spent) and
//! shown through small frozen classes that make their Python objects when
//! asked.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use seekless_blocks::{
    BlockFile, BlockHash, BlockInfo, Coin as CoreCoin, ConnectedBlock, ErrorKind,
};
use sha2::{Digest, Sha256};

use super::error::io;

/// What the thread hands over: a block, or why the blocks end early.
pub(super) type Item = Result<OwnedBlock, seekless_blocks::Error>;

/// Hex in the order Core shows hashes and txids (reversed).
pub(super) fn hex(hash: [u8; 32]) -> String {
    BlockHash(hash).to_string()
}

/// A block as the Python side holds it: its bytes and where its parts are.
pub(super) struct OwnedBlock {
    height: u32,
    hash: [u8; 32],
    bytes: Vec<u8>,
    txs: Vec<OwnedTx>,
}

struct OwnedTx {
    txid: [u8; 32],
    raw: Range<usize>,
    coinbase: bool,
    inputs: Vec<OwnedInput>,
    /// Each output's value and script (in the block's bytes).
    outputs: Vec<(i64, Range<usize>)>,
}

struct OwnedInput {
    prev_txid: [u8; 32],
    vout: u32,
    prevout: Option<Arc<CoreCoin>>,
}

/// Where `part`, a slice of `whole`, lies in it.
fn range_in(whole: &[u8], part: &[u8]) -> Range<usize> {
    let start = part.as_ptr() as usize - whole.as_ptr() as usize;
    start..start + part.len()
}

/// The block `connect_each` shows, owned, with the coin each input spent
/// when `prevouts`.
pub(super) fn owned(block: &ConnectedBlock<'_>, prevouts: bool) -> OwnedBlock {
    let bytes = block.bytes();
    let mut spent = block.spent().map(|(_, coin)| coin);
    let txs = block
        .transactions()
        .map(|(tx, txid)| {
            let coinbase = tx.is_coinbase();
            let inputs = tx
                .inputs()
                .map(|input| OwnedInput {
                    prev_txid: input.prev_txid,
                    vout: input.prev_index,
                    // Every input but the coinbase's spent one coin, in order.
                    prevout: match coinbase {
                        true => None,
                        false => spent
                            .next()
                            .filter(|_| prevouts)
                            .map(|coin| Arc::new(coin.clone())),
                    },
                })
                .collect();
            let outputs = tx
                .outputs()
                .map(|out| (out.value, range_in(bytes, out.script_pubkey)))
                .collect();
            OwnedTx {
                txid,
                raw: range_in(bytes, tx.raw()),
                coinbase,
                inputs,
                outputs,
            }
        })
        .collect();
    OwnedBlock {
        height: block.info().height.unwrap_or(0),
        hash: block.info().hash.0,
        bytes: bytes.to_vec(),
        txs,
    }
}

/// A block file record's prefix before the block: network magic and size.
const RECORD_PREFIX: u64 = 8;

fn sha256d(data: &[u8]) -> [u8; 32] {
    Sha256::digest(Sha256::digest(data)).into()
}

/// Genesis, which `connect_each` does not show (it connects nothing): read
/// from its file where the scan found it, its header checked against the
/// hash the scan saw (as the engine checks every block it reads), its one
/// transaction (a legacy coinbase, as every network's) parsed here and
/// held to the header's merkle root.
pub(super) fn genesis(files: &[BlockFile], info: &BlockInfo) -> Item {
    let file = &files[info.file];
    let start = info.offset + RECORD_PREFIX;
    let mut bytes = vec![0u8; info.size as usize];
    let mut handle = File::open(&file.path).map_err(|e| io(&file.path, "open", e))?;
    handle
        .seek(SeekFrom::Start(start))
        .and_then(|_| handle.read_exact(&mut bytes))
        .map_err(|e| io(&file.path, "read", e))?;
    file.xor.apply(&mut bytes, start);
    if bytes.len() < 80 || sha256d(&bytes[..80]) != info.hash.0 {
        return Err(ErrorKind::BlockChanged {
            path: file.path.clone(),
            offset: info.offset,
        }
        .into());
    }
    let unparsable = |detail: &str| -> seekless_blocks::Error {
        ErrorKind::UnparsableBlock {
            hash: info.hash.0,
            height: 0,
            detail: detail.to_string(),
        }
        .into()
    };
    let tx = legacy_coinbase(&bytes).ok_or_else(|| unparsable("not one legacy coinbase"))?;
    if sha256d(&bytes[tx.raw.clone()]) != tx.txid {
        return Err(unparsable(
            "its transaction is not the header's merkle root",
        ));
    }
    Ok(OwnedBlock {
        height: 0,
        hash: info.hash.0,
        txs: vec![tx],
        bytes,
    })
}

/// A block of one legacy (non-witness) coinbase, as every network's
/// genesis is: `None` for anything else.
fn legacy_coinbase(block: &[u8]) -> Option<OwnedTx> {
    let mut at = 80;
    let take = |at: &mut usize, n: usize| -> Option<Range<usize>> {
        let end = at.checked_add(n).filter(|&end| end <= block.len())?;
        let range = *at..end;
        *at = end;
        Some(range)
    };
    // Counts and lengths of one byte (below 0xfd) are all genesis needs.
    let small = |at: &mut usize| -> Option<usize> {
        let byte = block[take(at, 1)?][0];
        (byte < 0xfd).then_some(byte as usize)
    };
    (small(&mut at)? == 1).then_some(())?;
    let start = at;
    take(&mut at, 4)?;
    (small(&mut at)? == 1).then_some(())?;
    let prev = take(&mut at, 36)?;
    let script = small(&mut at)?;
    take(&mut at, script + 4)?;
    let mut outputs = Vec::new();
    for _ in 0..small(&mut at)? {
        let value = i64::from_le_bytes(block[take(&mut at, 8)?].try_into().ok()?);
        let len = small(&mut at)?;
        outputs.push((value, take(&mut at, len)?));
    }
    take(&mut at, 4)?;
    (at == block.len()).then_some(())?;
    let prev = &block[prev];
    Some(OwnedTx {
        txid: block[36..68].try_into().ok()?,
        raw: start..at,
        coinbase: true,
        inputs: vec![OwnedInput {
            prev_txid: prev[..32].try_into().ok()?,
            vout: u32::from_le_bytes(prev[32..].try_into().ok()?),
            prevout: None,
        }],
        outputs,
    })
}

/// A block of the best chain.
#[pyclass(frozen, module = "seekless.blocks")]
pub(crate) struct Block {
    pub(super) block: Arc<OwnedBlock>,
}

#[pymethods]
impl Block {
    #[getter]
    fn height(&self) -> u32 {
        self.block.height
    }

    /// Its hash in hex, as Core shows it.
    #[getter]
    fn hash(&self) -> String {
        hex(self.block.hash)
    }

    /// Its serialization, header first.
    #[getter]
    fn raw<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.block.bytes)
    }

    /// Its transactions in order, the coinbase first (a new list each time).
    #[getter]
    fn transactions(&self) -> Vec<Transaction> {
        (0..self.block.txs.len())
            .map(|index| Transaction {
                block: self.block.clone(),
                index,
            })
            .collect()
    }

    fn __repr__(&self) -> String {
        format!(
            "Block(height={}, hash={:?}, {} transactions)",
            self.block.height,
            self.hash(),
            self.block.txs.len()
        )
    }
}

/// A transaction of a block.
#[pyclass(frozen, module = "seekless.blocks")]
pub(crate) struct Transaction {
    block: Arc<OwnedBlock>,
    index: usize,
}

impl Transaction {
    fn tx(&self) -> &OwnedTx {
        &self.block.txs[self.index]
    }
}

#[pymethods]
impl Transaction {
    /// Its txid in hex, as Core shows it.
    #[getter]
    fn txid(&self) -> String {
        hex(self.tx().txid)
    }

    /// Its serialization (with its witnesses, if any).
    #[getter]
    fn raw<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.block.bytes[self.tx().raw.clone()])
    }

    /// Whether it is its block's coinbase.
    #[getter]
    fn coinbase(&self) -> bool {
        self.tx().coinbase
    }

    /// Its inputs in order (a new list each time).
    #[getter]
    fn inputs(&self) -> Vec<Input> {
        self.tx()
            .inputs
            .iter()
            .map(|input| Input {
                prev_txid: input.prev_txid,
                vout: input.vout,
                prevout: input.prevout.clone(),
            })
            .collect()
    }

    /// Its outputs in order (a new list each time).
    #[getter]
    fn outputs(&self) -> Vec<Output> {
        self.tx()
            .outputs
            .iter()
            .map(|(value, script)| Output {
                value: *value,
                script: self.block.bytes[script.clone()].to_vec(),
            })
            .collect()
    }

    fn __repr__(&self) -> String {
        let tx = self.tx();
        format!(
            "Transaction({:?}, {} inputs, {} outputs)",
            self.txid(),
            tx.inputs.len(),
            tx.outputs.len()
        )
    }
}

/// An input: the output it spends, and with prevouts the coin it was.
#[pyclass(frozen, module = "seekless.blocks")]
pub(crate) struct Input {
    prev_txid: [u8; 32],
    vout: u32,
    prevout: Option<Arc<CoreCoin>>,
}

#[pymethods]
impl Input {
    /// The txid of the output spent, in hex as Core shows it (zeros for
    /// a coinbase).
    #[getter]
    fn prev_txid(&self) -> String {
        hex(self.prev_txid)
    }

    /// The index of the output spent in its transaction.
    #[getter]
    fn vout(&self) -> u32 {
        self.vout
    }

    /// The coin spent; `None` for a coinbase or without prevouts.
    #[getter]
    fn prevout(&self) -> Option<Coin> {
        self.prevout.clone().map(|coin| Coin { coin })
    }

    fn __repr__(&self) -> String {
        format!("Input({:?}, {})", self.prev_txid(), self.vout)
    }
}

/// An output of a transaction.
#[pyclass(frozen, module = "seekless.blocks")]
pub(crate) struct Output {
    value: i64,
    script: Vec<u8>,
}

#[pymethods]
impl Output {
    /// Its value in satoshis.
    #[getter]
    fn value(&self) -> i64 {
        self.value
    }

    /// Its scriptPubKey.
    #[getter]
    fn script<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.script)
    }

    fn __repr__(&self) -> String {
        format!(
            "Output(value={}, {} script bytes)",
            self.value,
            self.script.len()
        )
    }
}

/// An unspent output as the UTXO set holds it: an output's value and
/// script, the height of its block, and whether a coinbase made it.
#[pyclass(frozen, module = "seekless.blocks")]
pub(crate) struct Coin {
    coin: Arc<CoreCoin>,
}

#[pymethods]
impl Coin {
    /// Its value in satoshis.
    #[getter]
    fn value(&self) -> u64 {
        self.coin.value
    }

    /// Its scriptPubKey.
    #[getter]
    fn script<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.coin.script)
    }

    /// The height of the block that made it.
    #[getter]
    fn height(&self) -> u32 {
        self.coin.height
    }

    /// Whether a coinbase made it.
    #[getter]
    fn coinbase(&self) -> bool {
        self.coin.coinbase
    }

    fn __repr__(&self) -> String {
        format!(
            "Coin(value={}, height={}, coinbase={}, {} script bytes)",
            self.coin.value,
            self.coin.height,
            if self.coin.coinbase { "True" } else { "False" },
            self.coin.script.len()
        )
    }
}
