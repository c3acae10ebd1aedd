//! Core's UTXO snapshot read as rows (`read_snapshot`), and transactions
//! looked up by txid (`TxIndex`).

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use seekless_blocks::{BlockHash, SnapshotMetadata, SnapshotReader, TxIndex as CoreTxIndex};

use super::block::hex;
use super::error::{error_with, io, to_py};

/// Opens a snapshot and reads its header.
fn open_snapshot(path: &Path) -> PyResult<SnapshotReader<BufReader<File>>> {
    let file = File::open(path).map_err(|e| to_py(io(path, "open", e)))?;
    SnapshotReader::new(BufReader::with_capacity(1 << 16, file)).map_err(|e| in_file(e, path))
}

/// A snapshot reader's error, which knows no file name, as Python's, with
/// `path` in its message.
fn in_file(e: seekless_blocks::Error, path: &Path) -> PyErr {
    error_with(e, Some(path))
}

/// Reads the header of Core's UTXO snapshot (`dumptxoutset`, or `seekless
/// blocks utxo`) at `path`; its coins are read when iterated.
#[pyfunction]
pub(crate) fn read_snapshot(path: PathBuf) -> PyResult<Snapshot> {
    let reader = open_snapshot(&path)?;
    Ok(Snapshot {
        metadata: *reader.metadata(),
        path,
    })
}

/// Core's UTXO snapshot: its header, and its coins as rows when iterated.
#[pyclass(frozen, module = "seekless.blocks")]
pub(crate) struct Snapshot {
    metadata: SnapshotMetadata,
    path: PathBuf,
}

#[pymethods]
impl Snapshot {
    /// The network whose set it is.
    #[getter]
    fn network(&self) -> &'static str {
        self.metadata.network.name()
    }

    /// The hash of the block whose UTXO set it is, in hex.
    #[getter]
    fn base(&self) -> String {
        self.metadata.base.to_string()
    }

    /// How many coins it holds.
    #[getter]
    fn coins(&self) -> u64 {
        self.metadata.coins
    }

    fn __len__(&self) -> usize {
        usize::try_from(self.metadata.coins).unwrap_or(usize::MAX)
    }

    /// The coins in the file's order (Core's), read as they are asked for:
    /// rows `(txid, vout, value, coinbase, height, scriptpubkey)`, the
    /// columns of Core's utxo_to_sqlite.py.
    fn __iter__(&self) -> PyResult<SnapshotRows> {
        Ok(SnapshotRows {
            reader: open_snapshot(&self.path)?,
            path: self.path.clone(),
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "Snapshot({}, base {}, {} coins)",
            self.network(),
            self.base(),
            self.metadata.coins
        )
    }
}

/// One coin of a snapshot as utxo_to_sqlite.py's columns.
type Row<'py> = (String, u32, u64, bool, u32, Bound<'py, PyBytes>);

/// A snapshot's coins, read as they are asked for.
#[pyclass(module = "seekless.blocks")]
pub(crate) struct SnapshotRows {
    reader: SnapshotReader<BufReader<File>>,
    path: PathBuf,
}

#[pymethods]
impl SnapshotRows {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Row<'py>>> {
        let next = self
            .reader
            .next_coin()
            .map_err(|e| in_file(e, &self.path))?;
        Ok(next.map(|(outpoint, coin)| {
            (
                hex(outpoint.txid),
                outpoint.vout,
                coin.value,
                coin.coinbase,
                coin.height,
                PyBytes::new(py, &coin.script),
            )
        }))
    }
}

/// A transaction index (`seekless blocks txindex`, or
/// `Blocks.build_txindex`): transactions by txid, read from the block files.
#[pyclass(frozen, module = "seekless.blocks")]
pub(crate) struct TxIndex {
    pub(super) index: CoreTxIndex,
}

#[pymethods]
impl TxIndex {
    /// Opens the index at `path`. `blocks`: the directory that holds the
    /// block files now, if they moved since they were indexed.
    #[new]
    #[pyo3(signature = (path, *, blocks=None))]
    fn new(py: Python<'_>, path: PathBuf, blocks: Option<PathBuf>) -> PyResult<TxIndex> {
        let index = py.detach(|| CoreTxIndex::open(&path)).map_err(to_py)?;
        let index = match blocks {
            Some(dir) => index.with_blocks_dir(&dir),
            None => index,
        };
        Ok(TxIndex { index })
    }

    /// The transaction `txid` (hex, as Core shows it): its serialization,
    /// the height of its block and its position there (0: the coinbase),
    /// or `None` if the index does not hold it. One page of the index and
    /// one read of a block file, the GIL released.
    fn get<'py>(
        &self,
        py: Python<'py>,
        txid: &str,
    ) -> PyResult<Option<(Bound<'py, PyBytes>, u32, u32)>> {
        let txid = BlockHash::from_hex(txid).map_err(to_py)?;
        let found = py.detach(|| self.index.get(&txid.0)).map_err(to_py)?;
        Ok(found.map(|found| {
            (
                PyBytes::new(py, &found.raw),
                found.location.height,
                found.location.position,
            )
        }))
    }

    /// Transactions indexed.
    fn __len__(&self) -> usize {
        usize::try_from(self.index.len()).unwrap_or(usize::MAX)
    }

    /// The tip the index covers: its hash in hex and its height (`None`:
    /// no block).
    #[getter]
    fn tip(&self) -> Option<(String, u32)> {
        self.index
            .tip()
            .map(|(hash, height)| (hash.to_string(), height))
    }
}
