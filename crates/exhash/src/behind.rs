//! Pages written ahead of a commit: while [`ExHash::load`] goes on, a
//! thread of its own writes, checksums and syncs copies of the pages the
//! load has finished, on a second handle of the file store's device
//! ([`Device::behind`]), so that the commit is left with little more than
//! naming them.
//!
//! [`ExHash::load`]: crate::ExHash::load

use std::sync::mpsc::{Receiver, Sender, SyncSender, TryRecvError, channel, sync_channel};

use crate::device::Device;
use crate::file::write_runs;
use crate::store::PAGE_SIZE;

/// Batches queued at most (each about 1 MiB of copies): the table waits
/// when the device falls this far behind.
const QUEUE: usize = 4;

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

/// The thread: batches written and checksummed as they come, and synced
/// once the queue is empty (one sync for all that queued meanwhile), until
/// its store is gone.
fn run(mut dev: Box<dyn Device + Send>, batches: Receiver<Batch>, done: Sender<Outcome>) {
    let mut written = Vec::new();
    while let Ok(mut batch) = batches.recv() {
        loop {
            let Batch { ids, slots, bytes } = batch;
            let pages: Vec<&[u8]> = bytes.chunks_exact(PAGE_SIZE).collect();
            let crcs = write_runs(&mut *dev, &pages, &slots)
                .is_ok()
                .then(|| pages.iter().map(|page| crc32c::crc32c(page)).collect());
            written.push(Outcome {
                ids,
                slots,
                bytes,
                crcs,
                synced: false,
            });
            match batches.try_recv() {
                Ok(next) => batch = next,
                Err(_) => break,
            }
        }
        let synced = written.iter().all(|o| o.crcs.is_some()) && dev.sync().is_ok();
        for mut outcome in written.drain(..) {
            outcome.synced = synced;
            if done.send(outcome).is_err() {
                return;
            }
        }
    }
}
