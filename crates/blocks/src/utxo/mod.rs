//! The chainstate: the best chain's blocks connected in height order into
//! a UTXO set, as Core's reindex does after loading the block index.
//!
//! [`connect()`] reads each best-chain block once at the position the scan
//! found it (`fetch.rs`) and checks it (`connect.rs`: Core's `CheckBlock`
//! and `CheckTransaction`, txids and merkle root) on a reader thread, a few
//! blocks ahead, while the calling thread connects the blocks checked
//! before (`CheckTxInputs` and `AddCoins`, scripts not executed) into a
//! [`CoinStore`] (`store.rs`). A block that breaks a rule stops the run at its parent:
//! the set and the report describe the last good height, and the report
//! names the failure. [`write_snapshot`] (`dump.rs`) then writes the set as
//! Core's snapshot with `gettxoutsetinfo`'s totals.

mod connect;
mod disk;
mod dump;
mod state;
mod store;

pub use connect::{COINBASE_MATURITY, ConnectedBlock};
pub use disk::DiskCoins;
pub use dump::write_snapshot;
#[cfg(feature = "test-util")]
pub use state::state_files;
pub use state::{ChainState, DEFAULT_UNDO_BLOCKS, StateOptions, UpdateReport};
pub use store::{CoinStore, MemoryCoins};

use std::sync::mpsc;

use crate::chain::{BlockInfo, Chain};
use crate::error::{Error, ErrorKind, Result};
use crate::fetch::BlockFetcher;
use crate::files::BlockFile;
use crate::hash::BlockHash;

/// Blocks read and checked ahead of the one connecting: enough to keep the
/// reader busy while a large block connects, a few MB at most.
const READ_AHEAD: usize = 8;

/// A block as the reader hands it over: its bytes and its transactions as
/// `CheckBlock` found them (or the rule it broke), or the read's error.
type Checked = (
    BlockInfo,
    Result<(
        Vec<u8>,
        std::result::Result<connect::CheckedTxs, connect::Broken>,
    )>,
);

/// The reader thread: each block of `best` read (into a buffer the
/// connecting thread gave back, when there is one) and checked, in order,
/// until the blocks end, a read fails, or the receiver is gone.
fn read_ahead(
    files: &[BlockFile],
    best: impl Iterator<Item = BlockInfo>,
    sender: mpsc::SyncSender<Checked>,
    buffers: mpsc::Receiver<Vec<u8>>,
) {
    let mut fetcher = BlockFetcher::new(files);
    for info in best {
        let mut block = buffers.try_recv().unwrap_or_default();
        let read = fetcher.read(&info, &mut block).map(|()| {
            let txs = connect::check_block(&block);
            (block, txs)
        });
        let failed = read.is_err();
        if sender.send((info, read)).is_err() || failed {
            return;
        }
    }
}

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

/// The height a run stops at: `height`, or the tip without one; past the
/// tip (or with no chain) an error.
pub(crate) fn stop_height(chain: &Chain, height: Option<u32>) -> Result<u32> {
    let tip = chain.tip().and_then(|tip| tip.height);
    match (height, tip) {
        (None, Some(tip)) => Ok(tip),
        (Some(height), Some(tip)) if height <= tip => Ok(height),
        (height, tip) => {
            let height = height.unwrap_or(0);
            Err(ErrorKind::HeightPastTip { height, tip }.into())
        }
    }
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
    if let Some(genesis) = chain.best_chain().next() {
        progress(genesis.size as u64);
    }
    connect_each(chain, files, height, coins, &mut |block| {
        progress(block.info().size as u64);
        Ok(())
    })
}

/// [`connect()`], showing `visit` each block once it is connected (genesis,
/// which connects nothing, is not shown): its transactions and the coin
/// each input spent, the best chain's blocks with their previous outputs
/// resolved. An error from `visit` stops the run and is returned.
pub fn connect_each(
    chain: &Chain,
    files: &[BlockFile],
    height: Option<u32>,
    coins: &mut (impl CoinStore + ?Sized),
    visit: &mut dyn FnMut(&ConnectedBlock<'_>) -> Result<()>,
) -> Result<ConnectReport> {
    let stop = stop_height(chain, height)?;
    let mut report = ConnectReport {
        height: 0,
        hash: chain.network().genesis(),
        transactions: 0,
        bytes: 0,
        failure: None,
    };
    let mut best = chain.best_chain().take(stop as usize + 1);
    if let Some(genesis) = best.next() {
        // Core's ConnectBlock returns before anything for genesis: its
        // coinbase is never spendable.
        report.hash = genesis.hash;
    }
    std::thread::scope(|scope| -> Result<()> {
        let (sender, checked) = mpsc::sync_channel(READ_AHEAD);
        let (recycle, buffers) = mpsc::channel();
        scope.spawn(move || read_ahead(files, best, sender, buffers));
        let mut changes = Vec::new();
        for (info, read) in checked {
            let (block, txs) = read?;
            let at = info.height.expect("best chain blocks have heights");
            let connected = txs.and_then(|txs| {
                let counts = connect::connect_checked(&block, &txs, at, coins, &mut changes)?;
                Ok((counts, txs))
            });
            if let Some(error) = coins.take_error() {
                return Err(error);
            }
            match connected {
                Ok((counts, txs)) => {
                    report.height = at;
                    report.hash = info.hash;
                    report.transactions += counts.transactions;
                    report.bytes += block.len() as u64;
                    visit(&ConnectedBlock {
                        info,
                        bytes: &block,
                        txs: &txs,
                        changes: &changes,
                    })?;
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
                    // Dropping `checked` stops the reader.
                    return Ok(());
                }
            }
            let _ = recycle.send(block);
        }
        Ok(())
    })?;
    Ok(report)
}
