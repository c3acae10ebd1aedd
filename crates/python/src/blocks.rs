//! `seekless.blocks`: Bitcoin Core's block files from Python (the blocks
//! engine). `Blocks` scans the files once; its iterator connects the best
//! chain block by block (`connect_each`) on a Rust thread of its own, the
//! GIL released, handing each block, owned, through a bounded channel to
//! the Python thread that pulls them, with the coin every input spent;
//! `read_snapshot` reads Core's UTXO snapshot as rows, lazily; `TxIndex`
//! looks transactions up by txid.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;

mod block;
mod error;
mod snapshot;

use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyString;
use seekless_blocks::{
    BlockFile, BlockInfo, Chain, CoinStore, DiskCoins, ErrorKind, MemoryCoins, ScanOptions,
    TxIndex as CoreTxIndex, TxIndexOptions, XorKey, build_txindex, connect_each, list_block_files,
    scan,
};

use block::{Block, Coin, Input, Item, Output, Transaction, genesis, owned};
use error::{CorruptBlocksError, to_py};
use snapshot::{Snapshot, SnapshotRows, TxIndex, read_snapshot};

/// What may be wrong when plain files hold no block.
const XOR_HINT: &str = "; if the files are XOR-obfuscated (Core 28 and later), is xor.dat \
                        beside them? or pass xor=KEY";

/// Blocks read and connected ahead of the one Python is at.
const AHEAD: usize = 4;

/// The paths `Blocks` and `build_txindex` take: one path, or an iterable.
fn paths_of(paths: &Bound<'_, PyAny>) -> PyResult<Vec<PathBuf>> {
    if paths.is_instance_of::<PyString>() || paths.hasattr("__fspath__")? {
        return Ok(vec![paths.extract()?]);
    }
    paths.try_iter()?.map(|p| p?.extract()).collect()
}

/// What a scan found: the chain and the files it lies in.
struct Scanned {
    chain: Chain,
    files: Vec<BlockFile>,
}

/// Bitcoin Core block files, scanned once.
#[pyclass(frozen, module = "seekless.blocks")]
pub(crate) struct Blocks {
    scanned: Arc<Scanned>,
}

#[pymethods]
impl Blocks {
    /// Scans `path` (a `blocks/` directory, a block file, or an iterable
    /// of them) with the GIL released. `xor`: the 8-byte key (default:
    /// `xor.dat` beside the files; none there means plain files).
    #[new]
    #[pyo3(signature = (path, *, xor=None))]
    fn new(py: Python<'_>, path: &Bound<'_, PyAny>, xor: Option<&[u8]>) -> PyResult<Blocks> {
        let paths = paths_of(path)?;
        let xor = xor
            .map(|key| {
                key.try_into().map(XorKey).map_err(|_| {
                    PyValueError::new_err(format!("xor is {} bytes, not 8", key.len()))
                })
            })
            .transpose()?;
        let scanned = py.detach(|| -> Result<Scanned, PyErr> {
            let files = list_block_files(&paths, xor).map_err(to_py)?;
            let plain = files.iter().all(|f| f.xor.is_zero());
            let mut output =
                scan(files, &ScanOptions::default(), &mut |_| {}).map_err(|e| match e.kind() {
                    ErrorKind::NetworkNotDetected => CorruptBlocksError::new_err(format!(
                        "no valid block record found{}",
                        if plain { XOR_HINT } else { "" }
                    )),
                    _ => to_py(e),
                })?;
            let chain = Chain::build(&mut output);
            if chain.tip().is_none() {
                return Err(CorruptBlocksError::new_err(format!(
                    "no {} genesis block found in {} block files ({} bad records)",
                    output.network,
                    output.files.len(),
                    output.bad_records.len()
                )));
            }
            Ok(Scanned {
                chain,
                files: output.files,
            })
        })?;
        Ok(Blocks {
            scanned: Arc::new(scanned),
        })
    }

    /// `"main"`, `"testnet3"`, `"testnet4"`, `"signet"` or `"regtest"`.
    #[getter]
    fn network(&self) -> &'static str {
        self.scanned.chain.network().name()
    }

    /// The best chain's tip height.
    #[getter]
    fn height(&self) -> u32 {
        self.tip_info().height.unwrap_or(0)
    }

    /// The tip's hash in hex, as Core shows it.
    #[getter]
    fn tip(&self) -> String {
        self.tip_info().hash.to_string()
    }

    /// Blocks on the best chain, genesis included.
    fn __len__(&self) -> usize {
        self.scanned.chain.best_chain().len()
    }

    /// The best chain's blocks in height order, genesis first, each read
    /// once; see `iter`.
    fn __iter__(&self) -> PyResult<BlockIterator> {
        self.iter(true, None, None, None)
    }

    /// The best chain's blocks in height order, genesis first, up to the
    /// tip or to height `stop`. Each block is read once and connected to
    /// the UTXO set (Core's rules, scripts not run) on a thread of its
    /// own, a few blocks ahead, the GIL released. `prevouts`: each input
    /// carries the coin it spent (its `prevout`). `memory`: bytes of
    /// coins kept in memory, the rest in files under `tmp_dir` (default:
    /// the system's), removed at the end; by default the whole set is in
    /// memory. A block that breaks a rule ends the iteration with
    /// `CorruptBlocksError` naming it.
    #[pyo3(signature = (*, prevouts=true, stop=None, memory=None, tmp_dir=None))]
    fn iter(
        &self,
        prevouts: bool,
        stop: Option<u32>,
        memory: Option<u64>,
        tmp_dir: Option<PathBuf>,
    ) -> PyResult<BlockIterator> {
        let tip = self.height();
        if let Some(stop) = stop.filter(|&stop| stop > tip) {
            return Err(to_py(
                ErrorKind::HeightPastTip {
                    height: stop,
                    tip: Some(tip),
                }
                .into(),
            ));
        }
        let coins: Box<dyn CoinStore + Send> = match memory {
            None => Box::new(MemoryCoins::new()),
            Some(budget) => {
                let dir = tmp_dir.unwrap_or_else(std::env::temp_dir);
                Box::new(DiskCoins::create(&scratch_dir(&dir), budget).map_err(to_py)?)
            }
        };
        let (sender, receiver) = mpsc::sync_channel(AHEAD);
        let scanned = self.scanned.clone();
        let thread = std::thread::Builder::new()
            .name("seekless-blocks".into())
            .spawn(move || produce(&scanned, stop, prevouts, coins, &sender))
            .map_err(|e| PyOSError::new_err(format!("cannot start a thread: {e}")))?;
        Ok(BlockIterator {
            receiver: Mutex::new(Some(receiver)),
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Builds a transaction index of the best chain at `output` (Core's
    /// `-txindex`, as `seekless blocks txindex` does) with the GIL
    /// released, and opens it. `memory`: bytes to sort in before spilling
    /// beside `output` (default 1 GiB).
    #[pyo3(signature = (output, *, memory=None))]
    fn build_txindex(
        &self,
        py: Python<'_>,
        output: PathBuf,
        memory: Option<u64>,
    ) -> PyResult<TxIndex> {
        let mut options = TxIndexOptions::default();
        options.memory = memory.unwrap_or(options.memory).max(1);
        let scanned = &self.scanned;
        let index = py.detach(|| {
            build_txindex(
                &scanned.chain,
                &scanned.files,
                &output,
                &options,
                &mut |_| {},
            )?;
            CoreTxIndex::open(&output)
        });
        Ok(TxIndex {
            index: index.map_err(to_py)?,
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "Blocks({}, height {}, tip {})",
            self.network(),
            self.height(),
            self.tip()
        )
    }
}

impl Blocks {
    fn tip_info(&self) -> BlockInfo {
        self.scanned.chain.tip().expect("checked when scanned")
    }
}

/// A directory of its own under `parent` for a `DiskCoins`.
fn scratch_dir(parent: &Path) -> PathBuf {
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let run = RUNS.fetch_add(1, Ordering::Relaxed);
    parent.join(format!(".seekless-coins-{}-{run}", std::process::id()))
}

/// The thread's work: genesis, then every block `connect_each` shows,
/// each sent; ends when the blocks do, at an error (sent), or when the
/// receiver is gone.
fn produce(
    scanned: &Scanned,
    stop: Option<u32>,
    prevouts: bool,
    mut coins: Box<dyn CoinStore + Send>,
    sender: &mpsc::SyncSender<Item>,
) {
    let Some(first) = scanned.chain.best_chain().next() else {
        return;
    };
    let genesis = genesis(&scanned.files, &first);
    let failed = genesis.is_err();
    if sender.send(genesis).is_err() || failed {
        return;
    }
    let mut gone = false;
    let report = connect_each(
        &scanned.chain,
        &scanned.files,
        stop,
        coins.as_mut(),
        &mut |block| {
            if sender.send(Ok(owned(block, prevouts))).is_err() {
                gone = true;
                let stopped = std::io::Error::other("the iterator was dropped");
                return Err(ErrorKind::Io {
                    path: PathBuf::new(),
                    action: "hand over a block",
                    source: stopped,
                }
                .into());
            }
            Ok(())
        },
    );
    if gone {
        return;
    }
    match report {
        Ok(report) => {
            if let Some(failure) = report.failure {
                let _ = sender.send(Err(failure));
            }
        }
        Err(e) => {
            let _ = sender.send(Err(e));
        }
    }
    // `coins` is dropped here, on this thread: a DiskCoins removes its
    // files.
}

/// The best chain's blocks, from the thread that reads and connects them.
#[pyclass(frozen, module = "seekless.blocks")]
pub(crate) struct BlockIterator {
    /// `None` once the blocks end, fail or the iterator is closed.
    receiver: Mutex<Option<mpsc::Receiver<Item>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl BlockIterator {
    /// Stops the thread (it sees the receiver gone at its next block) and
    /// waits for it, so that its files are removed; false if it panicked.
    fn stop(&self) -> bool {
        *self.receiver.lock().unwrap_or_else(|e| e.into_inner()) = None;
        let thread = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        thread.is_none_or(|thread| thread.join().is_ok())
    }
}

#[pymethods]
impl BlockIterator {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Block>> {
        // The GIL released while waiting: the thread never needs it.
        let next = py.detach(|| {
            let receiver = self.receiver.lock().unwrap_or_else(|e| e.into_inner());
            receiver.as_ref().map(|r| r.recv())
        });
        match next {
            None => Ok(None),
            Some(Ok(Ok(block))) => Ok(Some(Block {
                block: Arc::new(block),
            })),
            Some(Ok(Err(e))) => {
                py.detach(|| self.stop());
                Err(to_py(e))
            }
            // The thread ended: the blocks did, or it panicked (a bug),
            // which must not pass for the end of the chain.
            Some(Err(mpsc::RecvError)) => match py.detach(|| self.stop()) {
                true => Ok(None),
                false => Err(PyRuntimeError::new_err(
                    "the thread reading the blocks panicked",
                )),
            },
        }
    }

    /// Stops reading (the thread ends after the block it is at, its files
    /// removed); the iteration ends. Dropping the iterator does the same.
    fn close(&self, py: Python<'_>) {
        py.detach(|| self.stop());
    }
}

impl Drop for BlockIterator {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Adds the blocks engine's classes and functions to the native module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Blocks>()?;
    m.add_class::<BlockIterator>()?;
    m.add_class::<Block>()?;
    m.add_class::<Transaction>()?;
    m.add_class::<Input>()?;
    m.add_class::<Output>()?;
    m.add_class::<Coin>()?;
    m.add_class::<Snapshot>()?;
    m.add_class::<SnapshotRows>()?;
    m.add_class::<TxIndex>()?;
    m.add_function(wrap_pyfunction!(read_snapshot, m)?)?;
    m.add(
        "CorruptBlocksError",
        m.py().get_type::<CorruptBlocksError>(),
    )?;
    Ok(())
}
