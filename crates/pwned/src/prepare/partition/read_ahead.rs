//! Spills read back ahead of the packers that sort them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, mpsc};

use super::*;
use crate::error::Result;
use crate::prepare::direct_io::Aligned;

/// Spills read back ahead of the packers that sort them. One thread reads
/// partition after partition, in the order the packers take them, each
/// into memory from a pool the packers give back to once they have sorted
/// it: the disk works while the cores sort, where a packer reading its own
/// spills left its core idle meanwhile.
#[derive(Default)]
pub(crate) struct ReadAhead {
    pub(super) slots: Mutex<Slots>,
    pub(super) ready: Condvar,
}

/// What the reader has read and not yet handed over.
#[derive(Default)]
pub(super) struct Slots {
    /// By partition: its spill and how many records it holds.
    pub(super) read: Vec<Option<Result<(Aligned, usize)>>>,
    /// Whether the reader has stopped.
    pub(super) ended: bool,
}

impl ReadAhead {
    /// Reads the spills of the partitions of `order`, in that order, each
    /// into memory taken from `pool`; returns when done, when the pool is
    /// gone (its givers, the packers, have stopped), when `stop` is set, or
    /// after an error (left for its partition's packer).
    pub(crate) fn serve(
        &self,
        spill: &Spill,
        order: impl Iterator<Item = usize>,
        pool: &mpsc::Receiver<Aligned>,
        stop: &AtomicBool,
    ) {
        for p in order {
            if spill.records[p].load(Ordering::Relaxed) == 0 {
                continue;
            }
            let Ok(mut memory) = pool.recv() else {
                break;
            };
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let read = spill.read(p, &mut memory).map(|records| records.len());
            let failed = read.is_err();
            let mut slots = self.slots.lock().expect("read-ahead lock");
            if slots.read.len() <= p {
                slots.read.resize_with(spill.parts(), || None);
            }
            slots.read[p] = Some(read.map(|n| (memory, n)));
            drop(slots);
            self.ready.notify_all();
            if failed {
                break;
            }
        }
        self.slots.lock().expect("read-ahead lock").ended = true;
        self.ready.notify_all();
    }

    /// Partition `p`'s spill once the reader has it: its memory and how
    /// many records it holds, to be given back to the pool once sorted.
    /// `None` when `p` spilled nothing, or when the reader stopped before
    /// reading it (the caller then reads it with [`Spill::read`]).
    pub(crate) fn take(&self, spill: &Spill, p: usize) -> Option<Result<(Aligned, usize)>> {
        if spill.records[p].load(Ordering::Relaxed) == 0 {
            return None;
        }
        let mut slots = self.slots.lock().expect("read-ahead lock");
        loop {
            if let Some(read) = slots.read.get_mut(p).and_then(Option::take) {
                return Some(read);
            }
            if slots.ended {
                return None;
            }
            slots = self.ready.wait(slots).expect("read-ahead lock");
        }
    }
}
