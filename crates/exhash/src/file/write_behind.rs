//! Pages written ahead of a commit: while [`ExHash::load`] goes on, a
//! thread of its own writes and checksums copies of the pages the load has
//! finished, on a second handle of the file store's device
//! ([`Device::behind`]), and another syncs them on a third, so that the
//! commit is left with little more than naming them. Writing and syncing
//! apart keeps the writes going while a sync waits for storage: at 1M
//! pairs, a load's commit then waited 3-4 ms for what was behind instead
//! of 6-12. Pages reach their slots by [`write_runs`], which the
//! commit's own writes use too.
//!
//! [`ExHash::load`]: crate::ExHash::load

use std::sync::mpsc::{Receiver, Sender, SyncSender, TryRecvError, channel, sync_channel};

use crate::device::Device;
use crate::format::SLOT_SIZE;
use crate::page::PAGE_SIZE;

/// Batches queued at most (each about 1 MiB of copies): the table waits
/// when the device falls this far behind.
const QUEUE: usize = 4;

/// Pages written at most in one call: 4 MiB.
const WRITE_RUN: usize = 512;

/// Write `pages[i]` to slot `slots[i]`: pages whose slots follow one
/// another in one vectored write of up to [`WRITE_RUN`] pages, each handed
/// to writeback as soon as it is written.
pub(crate) fn write_runs<D: Device + ?Sized>(
    dev: &mut D,
    mut pages: &[&[u8]],
    mut slots: &[u64],
) -> std::io::Result<()> {
    while let Some(&first) = slots.first() {
        let len = slots
            .iter()
            .take(WRITE_RUN)
            .zip(first..)
            .take_while(|&(&slot, expected)| slot == expected)
            .count();
        let (offset, bytes) = (first * SLOT_SIZE, len as u64 * SLOT_SIZE);
        dev.write_vectored_at(offset, &pages[..len])?;
        dev.start_writeback(offset, bytes);
        (pages, slots) = (&pages[len..], &slots[len..]);
    }
    Ok(())
}

/// Copies of pages for their slots.
struct Batch {
    ids: Vec<usize>,
    slots: Vec<u64>,
    bytes: Vec<u8>,
}

/// What became of a batch.
pub(crate) struct Outcome {
    pub ids: Vec<usize>,
    pub slots: Vec<u64>,
    /// The batch's buffer, for the next batch (fresh memory for every
    /// batch cost a page fault each 4 KiB).
    bytes: Vec<u8>,
    /// The pages' checksums, if they were written.
    pub crcs: Option<Vec<u32>>,
    /// Whether the sync after them succeeded: if not, no write made on the
    /// second handle so far can be counted on.
    pub synced: bool,
}

/// The writing thread, as its store sees it. Dropping it waits for the
/// thread to finish the batches queued: it never writes to a device its
/// store has given up (whose free slots a later store may reuse).
#[derive(Debug)]
pub(crate) struct Writer {
    batches: SyncSender<Batch>,
    outcomes: Receiver<Outcome>,
    in_flight: usize,
    spare: Vec<u8>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Writer {
    /// Start a thread writing on `dev`.
    pub fn start(dev: Box<dyn Device + Send>) -> Option<Writer> {
        let (batches, queued) = sync_channel(QUEUE);
        let (done, outcomes) = channel();
        let thread = std::thread::Builder::new()
            .name("exhash-behind".into())
            .spawn(move || run(dev, queued, done))
            .ok()?;
        Some(Writer {
            batches,
            outcomes,
            in_flight: 0,
            spare: Vec::new(),
            thread: Some(thread),
        })
    }

    /// Queue copies of `pages` for `slots` (page `ids`). Gives `ids` and
    /// `slots` back if the thread is gone.
    pub fn send(
        &mut self,
        ids: Vec<usize>,
        slots: Vec<u64>,
        pages: &[&[u8]],
    ) -> Result<(), (Vec<usize>, Vec<u64>)> {
        let mut bytes = std::mem::take(&mut self.spare);
        bytes.clear();
        pages.iter().for_each(|page| bytes.extend_from_slice(page));
        match self.batches.send(Batch { ids, slots, bytes }) {
            Ok(()) => {
                self.in_flight += 1;
                Ok(())
            }
            Err(e) => Err((e.0.ids, e.0.slots)),
        }
    }

    /// The outcome of the next finished batch: waiting for it when `wait`,
    /// None when none is left (or, not waiting, none is finished yet).
    pub fn next(&mut self, wait: bool) -> Option<Outcome> {
        if self.in_flight == 0 {
            return None;
        }
        let outcome = if wait {
            self.outcomes.recv().ok()
        } else {
            match self.outcomes.try_recv() {
                Ok(outcome) => Some(outcome),
                Err(TryRecvError::Empty) => return None,
                Err(TryRecvError::Disconnected) => None,
            }
        };
        self.in_flight -= 1;
        // A thread that is gone reports nothing more: its batches count as
        // failed.
        let mut outcome = outcome.unwrap_or_else(|| Outcome {
            ids: Vec::new(),
            slots: Vec::new(),
            bytes: Vec::new(),
            crcs: None,
            synced: false,
        });
        self.spare = std::mem::take(&mut outcome.bytes);
        Some(outcome)
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Closing the queue ends the thread once it has written the rest.
        drop(std::mem::replace(&mut self.batches, sync_channel(0).0));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The writing thread: batches written and checksummed as they come, until
/// its store is gone. A third handle of the device syncs them on a thread
/// of its own meanwhile, so that the writes go on while a sync waits for
/// storage; without one, this thread syncs after each batch.
fn run(mut dev: Box<dyn Device + Send>, batches: Receiver<Batch>, done: Sender<Outcome>) {
    let (written, unsynced) = channel();
    let (syncer, inline) = match dev.behind() {
        Some(mut handle) => {
            let syncer = std::thread::Builder::new()
                .name("exhash-sync".into())
                .spawn(move || while sync(&mut *handle, &unsynced, &done) {});
            // Without it, nothing is reported: the store counts every
            // batch as failed.
            (syncer.ok(), None)
        }
        None => (None, Some((unsynced, done))),
    };
    for Batch { ids, slots, bytes } in batches {
        let pages: Vec<&[u8]> = bytes.chunks_exact(PAGE_SIZE).collect();
        let crcs = write_runs(&mut *dev, &pages, &slots)
            .is_ok()
            .then(|| pages.iter().map(|page| crc32c::crc32c(page)).collect());
        let outcome = Outcome {
            ids,
            slots,
            bytes,
            crcs,
            synced: false,
        };
        if written.send(outcome).is_err() {
            break;
        }
        if let Some((unsynced, done)) = &inline
            && !sync(&mut *dev, unsynced, done)
        {
            break;
        }
    }
    drop(written);
    if let Some(syncer) = syncer {
        let _ = syncer.join();
    }
}

/// Wait for written batches, sync once for all of them (each was written
/// before the sync starts) and report them. False once there is nothing
/// more to wait for or no one to report to.
fn sync(dev: &mut dyn Device, unsynced: &Receiver<Outcome>, done: &Sender<Outcome>) -> bool {
    let Ok(first) = unsynced.recv() else {
        return false;
    };
    let mut these = vec![first];
    these.extend(unsynced.try_iter());
    let synced = these.iter().all(|o| o.crcs.is_some()) && dev.sync().is_ok();
    these.into_iter().all(|mut outcome| {
        outcome.synced = synced;
        done.send(outcome).is_ok()
    })
}
