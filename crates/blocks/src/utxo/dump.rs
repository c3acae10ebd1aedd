//! The set written out as Core's `dumptxoutset` writes it: the coins in
//! Core's order through [`SnapshotWriter`], under a temporary name beside
//! the output renamed into place when complete, with the totals
//! `gettxoutsetinfo` prints ([`UtxoStats`], MuHash included) gathered on
//! the way, on threads beside the writer.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::sync::Mutex;

use crate::coin::{Coin, OutPoint};
use crate::error::{Error, Result};
use crate::hash::BlockHash;
use crate::network::Network;
use crate::snapshot::SnapshotWriter;
use crate::staged::Staged;
use crate::stats::UtxoStats;
use crate::utxo::store::CoinStore;

/// Writes `coins`, the UTXO set of `network` after block `base`, as a
/// snapshot at `path`; returns its totals. `progress` is called with each
/// coin written. Nothing is at `path` until the file is complete and
/// synced; a failed write leaves what was there.
pub fn write_snapshot(
    coins: &(impl CoinStore + ?Sized),
    network: Network,
    base: BlockHash,
    path: &Path,
    progress: &mut dyn FnMut(u64),
) -> Result<UtxoStats> {
    let temp = Staged::beside(path, "utxo");
    let file = File::create(temp.path()).map_err(|e| Error::io(temp.path(), "create", e))?;
    let out = BufWriter::with_capacity(1 << 20, file);
    let mut writer = SnapshotWriter::new(out, network, base, coins.len())?;
    let stats = stats_beside(|gather| {
        coins.visit_in_core_order(&mut |outpoint, coin| {
            gather(outpoint, coin);
            progress(1);
            writer.push(outpoint, coin).map_err(|e| e.in_file(path))
        })
    })?;
    let file = writer
        .finish()
        .map_err(|e| e.in_file(path))?
        .into_inner()
        .map_err(|e| Error::io(path, "write", e.into_error()))?;
    file.sync_all().map_err(|e| Error::io(path, "sync", e))?;
    drop(file);
    temp.commit(path)?;
    Ok(stats)
}

/// Coins a stats thread takes at a time.
const BATCH: usize = 4096;

/// Runs `walk`, which hands every coin to the function it is given, and
/// returns the coins' [`UtxoStats`], gathered on other threads: MuHash
/// costs a few microseconds a coin (3072-bit products), several times what
/// writing it does, and being a product it splits into parts on any
/// number of threads, combined at the end.
fn stats_beside<W>(walk: W) -> Result<UtxoStats>
where
    W: FnOnce(&mut dyn FnMut(&OutPoint, &Coin)) -> Result<()>,
{
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().clamp(1, 8));
    let (send, receive) = std::sync::mpsc::sync_channel::<Vec<(OutPoint, Coin)>>(2 * threads);
    let receive = Mutex::new(receive);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut stats = UtxoStats::new();
                    loop {
                        let next = receive.lock().expect("no thread panics holding it").recv();
                        let Ok(batch) = next else {
                            return stats;
                        };
                        for (outpoint, coin) in &batch {
                            stats.add(outpoint, coin);
                        }
                    }
                })
            })
            .collect();
        let mut batch = Vec::with_capacity(BATCH);
        let walked = walk(&mut |outpoint, coin| {
            batch.push((*outpoint, coin.clone()));
            if batch.len() == BATCH {
                let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                // The threads outlive the sender: sending cannot fail.
                let _ = send.send(full);
            }
        });
        let _ = send.send(batch);
        drop(send);
        let mut total = UtxoStats::new();
        for worker in workers {
            let part = worker
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            total.coins += part.coins;
            total.total_amount += part.total_amount;
            total.bogosize += part.bogosize;
            total.muhash.combine(&part.muhash);
        }
        walked.map(|()| total)
    })
}
