//! The transaction index: Core's `-txindex` from the block files alone.
//! `build` reads the best chain once and writes one file
//! (docs/format-blocks.md, "Transaction index"), `lookup` answers a txid
//! with one page of it and one read of a block file, `json` shows a
//! transaction as `getrawtransaction TXID 1` does, `format` is the bytes.

mod build;
mod format;
mod json;
mod lookup;

pub use build::{DEFAULT_TXINDEX_MEMORY, TxIndexOptions, TxIndexReport, build_txindex};
pub use json::tx_json;
pub use lookup::{FoundTx, IndexedBlock, IndexedFile, TxIndex, TxLocation};
