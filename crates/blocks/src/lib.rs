//! Index Bitcoin Core block files (`blkNNNNN.dat`) in one sequential pass.
//!
//! Core stores blocks out of order (headers-first download fetches ahead),
//! and its reindex re-reads blocks whose parent is not yet known. This crate
//! never needs a byte twice: [`scan()`] goes through each file once and keeps
//! 88 bytes per block. By default it maps the files and hops from record
//! header to record header (de-obfuscating only those bytes), so block bodies
//! are not even read; where a record looks torn it falls back to the
//! record scanner (`record.rs`), which resyncs on corruption like Core's
//! `LoadExternalBlockFile` and also finds records hidden inside a torn one.
//! With [`ScanOptions::verify`] (or `thorough`) every byte is read on a
//! reader thread, every transaction is parsed and merkle roots are checked,
//! on every core. [`Chain::build`] then links parents, heights, chain work,
//! the best tip, stale blocks, orphans and duplicates, and [`linearize()`]
//! writes the best chain in height order. [`connect()`] connects the best
//! chain's blocks into a UTXO set (a [`CoinStore`]), as Core's reindex does
//! next, and [`write_snapshot()`] writes that set as Core's `dumptxoutset`
//! snapshot with `gettxoutsetinfo`'s totals ([`UtxoStats`]).
//!
//! For the chainstate, the crate reads and writes Core's UTXO snapshot
//! (`dumptxoutset`, [`SnapshotWriter`], [`SnapshotReader`]), with coins
//! compressed as Core's chainstate stores them ([`Coin::write_compressed`]),
//! and hashes a UTXO set as `gettxoutsetinfo` does ([`MuHash3072`],
//! [`UtxoStats`]).
//!
//! With the `export` feature, a snapshot's coins become a table in CSV,
//! SQLite (the schema of Core's `utxo_to_sqlite.py`) or Parquet
//! (`export_utxos`), and its balances per script, with each script's
//! address (`script_address`), a sorted table written in a memory budget
//! (`balances`).
//!
//! ```no_run
//! # fn main() -> seekless_blocks::Result<()> {
//! use seekless_blocks::{Chain, ScanOptions, list_block_files, scan};
//! let files = list_block_files(&["/home/me/.bitcoin/blocks".into()], None)?;
//! let mut output = scan(files, &ScanOptions::default(), &mut |_| {})?;
//! let chain = Chain::build(&mut output);
//! if let Some(tip) = chain.tip() {
//!     println!("tip {} at height {:?}", tip.hash, tip.height);
//! }
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

#[cfg(feature = "export")]
mod address;
#[cfg(feature = "export")]
mod balances;
mod block;
mod chain;
mod coin;
mod compress;
mod entry;
mod error;
#[cfg(feature = "export")]
mod export;
mod fetch;
mod files;
#[cfg(any(test, feature = "test-util"))]
pub mod generate;
mod hash;
// Without `test-util`, only the scan uses these modules: the rest of their
// API is for tests and fuzz targets (re-exported below with `test-util`).
#[cfg_attr(not(feature = "test-util"), allow(dead_code))]
mod header;
mod hex;
mod linearize;
mod mapped;
mod muhash;
mod network;
mod reader;
#[cfg_attr(not(feature = "test-util"), allow(dead_code))]
mod record;
mod scan;
mod secp256k1;
mod snapshot;
mod staged;
mod stats;
#[cfg_attr(not(feature = "test-util"), allow(dead_code))]
mod tx;
mod txindex;
mod u256;
mod utxo;
mod xor;

#[cfg(feature = "export")]
pub use address::script_address;
#[cfg(feature = "export")]
pub use balances::{BalanceOptions, BalancesReport, BalancesTo, balances};
pub use chain::{BlockInfo, Chain};
pub use coin::{Coin, MAX_SCRIPT_SIZE, OutPoint, is_unspendable};
pub use compress::{MAX_MONEY, compress_amount, decompress_amount};
pub use error::{Error, ErrorKind, Reject, Result};
#[cfg(feature = "export")]
pub use export::{ExportFormat, export_utxos};
pub use files::{BlockFile, list_block_files};
pub use hash::BlockHash;
pub use linearize::{
    DEFAULT_MAX_FILE_SIZE, LinearizeOptions, LinearizeReport, MANIFEST, check_linearize_output,
    linearize,
};
pub use muhash::{MUHASH_STATE_LEN, MuHash3072, coin_bytes};
pub use network::Network;
pub use record::{BadKind, BadRecord};
pub use scan::{FileBadRecord, InvalidBlock, ScanOptions, ScanOutput, detect_network, scan};
pub use snapshot::{
    SNAPSHOT_HEADER_LEN, SNAPSHOT_MAGIC, SNAPSHOT_VERSION, SnapshotMetadata, SnapshotReader,
    SnapshotWriter,
};
pub use stats::UtxoStats;
pub use txindex::{
    DEFAULT_TXINDEX_MEMORY, FoundTx, IndexedBlock, IndexedFile, TxIndex, TxIndexOptions,
    TxIndexReport, TxLocation, build_txindex, tx_json,
};
pub use u256::U256;
pub use utxo::{
    COINBASE_MATURITY, ChainState, CoinStore, ConnectReport, ConnectedBlock, DEFAULT_UNDO_BLOCKS,
    DiskCoins, MemoryCoins, StateOptions, UpdateReport, connect, connect_each, write_snapshot,
};
pub use xor::XorKey;

// The parts the scan is built from, for tests and fuzz targets: the record
// scanner, block, transaction and header parsing and checks.
#[cfg(feature = "test-util")]
pub use block::{BlockSummary, MAX_BLOCK_WEIGHT, check_block, merkle_root};
#[cfg(feature = "test-util")]
pub use hash::sha256d;
#[cfg(feature = "test-util")]
pub use header::{BlockHeader, HEADER_LEN, block_work, check_pow, header_hash, target_from_bits};
#[cfg(feature = "test-util")]
pub use record::{
    Event, FoundBlock, MAX_BLOCK_SIZE, MAX_KEEP, MIN_BLOCK_SIZE, RECORD_PREFIX_LEN, RecordScanner,
    scan_bytes,
};
#[cfg(feature = "test-util")]
pub use tx::{MAX_COMPACT_SIZE, Transaction, TxIn, TxOut, write_compact_size};
#[cfg(feature = "test-util")]
pub use utxo::state_files;
