//! The chainstate: the best chain's blocks connected in height order into
//! a UTXO set, as Core's reindex does after loading the block index.
//!
//! [`connect()`] reads each best-chain block once at the position the scan
//! found it (`fetch.rs`), parses its transactions and connects them
//! (`connect.rs`: Core's `CheckBlock`, `CheckTransaction`, `CheckTxInputs`
//! and `AddCoins`, scripts not executed) into a [`CoinStore`]
//! (`store.rs`). A block that breaks a rule stops the run at its parent:
//! the set and the report describe the last good height, and the report
//! names the failure. [`write_snapshot`] (`dump.rs`) then writes the set as
//! Core's snapshot with `gettxoutsetinfo`'s totals.

mod connect;
mod disk;
mod dump;
mod state;
mod store;

pub use connect::COINBASE_MATURITY;
pub use disk::DiskCoins;
pub use dump::write_snapshot;
#[cfg(feature = "test-util")]
pub use state::state_files;
pub use state::{ChainState, DEFAULT_UNDO_BLOCKS, StateOptions, UpdateReport};
pub use store::{CoinStore, MemoryCoins};

use crate::chain::Chain;
use crate::error::{Error, ErrorKind, Result};
use crate::fetch::BlockFetcher;
use crate::files::BlockFile;
use crate::hash::BlockHash;

/// What [`connect()`] did.
#[derive(Debug)]
pub struct ConnectReport {
    /// The height the set is at: the last block connected (genesis, whose
    /// coinbase Core never adds, counts as connected).
    pub height: u32,
    /// That block's hash (Core's `bestblock`).
    pub hash: BlockHash,
    /// Transactions connected, genesis's not counted.
    pub transactions: u64,
    /// Block bytes read.
    pub bytes: u64,
    /// The block that did not connect, when one did not
    /// ([`ErrorKind::NotConnected`]): the run stopped at its parent.
    pub failure: Option<Error>,
}

/// Connects the best chain of `chain` (scanned from `files`) into `coins`,
/// from genesis up to the tip or to `height`. `coins` should be empty
/// (a set from an earlier run is not checked against the chain).
/// `progress` is called with each block's size.
///
/// Fails on an I/O error, a block that changed since the scan, or a
/// `height` past the tip; a block that breaks a rule is not an error: the
/// report names it and `coins` is the set at its parent.
pub fn connect(
    chain: &Chain,
    files: &[BlockFile],
    height: Option<u32>,
    coins: &mut (impl CoinStore + ?Sized),
    progress: &mut dyn FnMut(u64),
) -> Result<ConnectReport> {
    let tip = chain.tip().and_then(|tip| tip.height);
    let stop = match (height, tip) {
        (None, Some(tip)) => tip,
        (Some(height), Some(tip)) if height <= tip => height,
        (height, tip) => {
            return Err(ErrorKind::HeightPastTip {
                height: height.unwrap_or(0),
                tip,
            }
            .into());
        }
    };
    let mut fetcher = BlockFetcher::new(files);
    let (mut block, mut changes) = (Vec::new(), Vec::new());
    let mut report = ConnectReport {
        height: 0,
        hash: chain.network().genesis(),
        transactions: 0,
        bytes: 0,
        failure: None,
    };
    for info in chain.best_chain().take(stop as usize + 1) {
        let at = info.height.expect("best chain blocks have heights");
        if at == 0 {
            // Core's ConnectBlock returns before anything for genesis: its
            // coinbase is never spendable.
            report.hash = info.hash;
            progress(info.size as u64);
            continue;
        }
        fetcher.read(&info, &mut block)?;
        let connected = connect::connect_block(&block, at, coins, &mut changes);
        if let Some(error) = coins.take_error() {
            return Err(error);
        }
        match connected {
            Ok(counts) => {
                report.height = at;
                report.hash = info.hash;
                report.transactions += counts.transactions;
                report.bytes += block.len() as u64;
            }
            Err((txid, reject)) => {
                report.failure = Some(
                    ErrorKind::NotConnected {
                        hash: info.hash.0,
                        height: at,
                        txid,
                        reject,
                    }
                    .into(),
                );
                break;
            }
        }
        progress(info.size as u64);
    }
    Ok(report)
}
