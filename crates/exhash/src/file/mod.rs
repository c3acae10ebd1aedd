//! The file backend: every page is kept in memory and written by shadow
//! paging on `commit`, which becomes durable by one checksummed header
//! write (`docs/format-exhash.md`).

//!
//! - this file: [`FileStore`], the pages in memory and what is known of
//!   their copies in the file;
//! - `header.rs`: the two checksummed header copies in slot 0;
//! - `commit.rs`: a commit, to the journal or by a checkpoint: the changed
//!   pages, the metadata and a header;
//! - `journal.rs`: the journal's blocks of changes, key by key;
//! - `lock.rs`: the writer's lock, on a file beside the table;
//! - `open.rs`: reading the last commit back, checking every part of it;
//! - `write_behind.rs`: pages written ahead of a commit while a load goes on,
//!   and `write_runs`, how every page reaches its slot.

mod commit;
mod header;
mod journal;
mod lock;
mod open;
mod write_behind;

use std::collections::BTreeSet;
use std::fs::File;

use crate::device::Device;
use crate::error::Error;
use crate::format::SLOT_SIZE;
use crate::page::{Page, PageId};
use crate::store::fixed::Fixed;
use crate::store::noted::Noted;
use crate::store::{MemoryStore, PageStore};
use journal::Journal;
use lock::WriterLock;
pub use open::OpenOptions;
use write_behind::{Writer, write_runs};

/// Pages from which a commit checksums them on a second thread.
const PARALLEL_CHECKSUMS: usize = 256;

/// Pages in memory over a [`Device`], written out atomically by
/// [`ExHash::commit`](crate::ExHash::commit).
#[derive(Debug)]
pub struct FileStore<D: Device = File> {
    mem: MemoryStore,
    dev: D,
    /// Slot of each page id in the last commit (0: none).
    slots: Vec<u64>,
    crcs: Vec<u32>,
    dirty: Vec<bool>,
    /// Slot and checksum of each page written ahead of the next commit by
    /// [`PageStore::settled`] (slot 0: none). Such a page is not dirty
    /// unless it changed again after, when its early copy is let go.
    staged: Vec<(u64, u32)>,
    /// The thread writing early copies (`write_behind.rs`), once there are any
    /// and the device has a second handle.
    write_behind: Option<Writer>,
    /// A write or sync of early copies failed: none of them can be
    /// counted on.
    write_behind_failed: bool,
    /// Slots no committed state refers to.
    free: BTreeSet<u64>,
    /// Slots the last commit refers to but the next one will not.
    pending_free: Vec<u64>,
    /// First slot past the end of the file.
    next_slot: u64,
    /// The number of the last commit, to the journal or a checkpoint.
    seq: u64,
    /// Which header copy (0 or 1) holds the last checkpoint's header.
    header_copy: u64,
    meta_extent: (u64, u64),
    journal: Journal,
    /// The writer's lock of a table opened by its path, let go with the
    /// store.
    lock: Option<WriterLock>,
}

/// What a table's file holds besides its pages (see
/// [`FileStore::file_stats`]; `docs/format-exhash.md`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FileStats {
    /// Bytes of the file: its slots of 8 KiB, the header slot included.
    pub file_bytes: u64,
    /// Slots the last commit does not refer to, which later checkpoints
    /// fill before the file grows.
    pub free_slots: u64,
    /// The number of the last commit.
    pub sequence: u64,
    /// Bytes of the journal's extent (0: none yet).
    pub journal_bytes: u64,
    /// Bytes of it the commits since the last checkpoint fill.
    pub journal_used: u64,
}

impl<D: Device> FileStore<D> {
    fn new(dev: D) -> FileStore<D> {
        FileStore {
            mem: MemoryStore::new(),
            dev,
            slots: Vec::new(),
            crcs: Vec::new(),
            dirty: Vec::new(),
            staged: Vec::new(),
            write_behind: None,
            write_behind_failed: false,
            free: BTreeSet::new(),
            pending_free: Vec::new(),
            next_slot: 1,
            seq: 0,
            // The first header goes to copy A, at the start of the file.
            header_copy: 1,
            meta_extent: (0, 0),
            journal: Journal::default(),
            lock: None,
        }
    }

    /// The device underneath.
    pub fn device(&self) -> &D {
        &self.dev
    }

    /// Give up the store, keeping its device. Uncommitted changes are
    /// lost, and a table opened by its path lets go of its writer's lock.
    pub fn into_device(self) -> D {
        self.dev
    }

    /// The number of the last commit.
    pub fn sequence(&self) -> u64 {
        self.seq
    }

    /// What the file holds besides the table's pages: its size, its free
    /// slots, the journal.
    pub fn file_stats(&self) -> FileStats {
        FileStats {
            file_bytes: self.next_slot * SLOT_SIZE,
            free_slots: self.free.len() as u64,
            sequence: self.seq,
            journal_bytes: self.journal.extent.1 * SLOT_SIZE,
            journal_used: self.journal.end,
        }
    }

    fn grow(&mut self, id: PageId) {
        let n = id as usize + 1;
        if self.slots.len() < n {
            self.slots.resize(n, 0);
            self.crcs.resize(n, 0);
            self.dirty.resize(n, false);
            self.staged.resize(n, (0, 0));
        }
    }

    /// Take in what became of early copies: all of them, waiting for the
    /// thread, when `wait`; else those it has finished.
    fn hear_write_behind(&mut self, wait: bool) {
        while let Some(outcome) = self.write_behind.as_mut().and_then(|w| w.next(wait)) {
            self.write_behind_failed |= !outcome.synced;
            for (k, (&i, &slot)) in outcome.ids.iter().zip(&outcome.slots).enumerate() {
                if self.staged[i].0 != slot {
                    continue; // changed and let go since
                }
                match &outcome.crcs {
                    Some(crcs) => self.staged[i].1 = crcs[k],
                    None => {
                        self.unstage(i);
                        self.dirty[i] = true;
                    }
                }
            }
        }
    }

    /// Let go of page `id`'s early copy, if it has one: no committed state
    /// refers to its slot, so the slot is free at once.
    fn unstage(&mut self, id: usize) {
        let (slot, _) = std::mem::take(&mut self.staged[id]);
        if slot != 0 {
            self.free.insert(slot);
        }
    }

    /// Write page `ids[i]` to slot `slots[i]` and return the pages'
    /// checksums, computed meanwhile on a second thread when there are
    /// many (reading 8 KiB a page as the writes copy it, they took a sixth
    /// of a bulk load's commit). Pages whose slots follow one another go in
    /// one vectored write ([`write_runs`]), each handed to
    /// writeback as soon as it is written, so that the commit's sync finds
    /// most of them on their way to storage.
    fn write_pages(&mut self, ids: &[usize], slots: &[u64]) -> Result<Vec<u32>, Error> {
        let FileStore { mem, dev, .. } = self;
        let pages: Vec<&[u8]> = ids
            .iter()
            .map(|&id| &mem.page(id as PageId).0[..])
            .collect();
        let checksums = || {
            pages
                .iter()
                .map(|page| crc32c::crc32c(page))
                .collect::<Vec<u32>>()
        };
        std::thread::scope(|scope| {
            let helper = (pages.len() >= PARALLEL_CHECKSUMS)
                .then(|| {
                    std::thread::Builder::new()
                        .spawn_scoped(scope, checksums)
                        .ok()
                })
                .flatten();
            write_runs(dev, &pages, slots).map_err(io("writing a page"))?;
            Ok(match helper {
                Some(helper) => helper
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                None => checksums(),
            })
        })
    }

    /// Take `n` contiguous free slots (or extend the file).
    fn take_run(&mut self, n: u64) -> u64 {
        if n == 1 {
            if let Some(s) = self.free.pop_first() {
                return s;
            }
        } else {
            let mut run_start = 0;
            let mut run_len = 0;
            let mut found = None;
            for &s in &self.free {
                if run_len > 0 && s == run_start + run_len {
                    run_len += 1;
                } else {
                    run_start = s;
                    run_len = 1;
                }
                if run_len == n {
                    found = Some(run_start);
                    break;
                }
            }
            if let Some(start) = found {
                for s in start..start + n {
                    self.free.remove(&s);
                }
                return start;
            }
        }
        let start = self.next_slot;
        self.next_slot += n;
        start
    }
}

impl<D: Device> Fixed for FileStore<D> {
    #[inline]
    fn address(&self, id: PageId) -> usize {
        self.mem.address(id)
    }

    #[inline]
    unsafe fn page_mut_at(&mut self, id: PageId, address: usize) -> &mut Page {
        self.dirty[id as usize] = true;
        // SAFETY: the caller's promise, for the same page of `mem`.
        unsafe { self.mem.page_mut_at(id, address) }
    }
}

impl<D: Device> Noted for FileStore<D> {
    #[inline]
    fn noted(&mut self, key: u64, value: Option<u64>) {
        self.journal.note(key, value);
    }

    fn unjournaled(&mut self) {
        self.journal.close();
    }
}

impl<D: Device> PageStore for FileStore<D> {
    #[inline]
    fn page(&self, id: PageId) -> &Page {
        self.mem.page(id)
    }

    #[inline]
    fn page_mut(&mut self, id: PageId) -> &mut Page {
        self.dirty[id as usize] = true;
        self.mem.page_mut(id)
    }

    fn allocate(&mut self) -> PageId {
        let id = self.mem.allocate();
        self.grow(id);
        self.dirty[id as usize] = true;
        id
    }

    fn release(&mut self, id: PageId) {
        let i = id as usize;
        if self.slots[i] != 0 {
            self.pending_free.push(self.slots[i]);
        }
        self.slots[i] = 0;
        self.dirty[i] = false;
        self.unstage(i);
        self.mem.release(id);
    }

    /// Write the dirty pages among `ids` now, to slots no committed state
    /// refers to: on the device's second handle from a thread of their own
    /// (`write_behind.rs`), or else here. The next commit then only names them,
    /// unless they change again before it, when it writes them anew; so it
    /// does when a write fails.
    fn settled(&mut self, ids: &[PageId]) {
        let ids: Vec<usize> = ids
            .iter()
            .map(|&id| id as usize)
            .filter(|&i| self.dirty[i])
            .collect();
        if ids.is_empty() {
            return;
        }
        for &i in &ids {
            self.unstage(i);
        }
        let slots: Vec<u64> = ids.iter().map(|_| self.take_run(1)).collect();
        if self.write_behind.is_none() {
            self.write_behind = self.dev.behind().and_then(Writer::start);
        }
        if let Some(writer) = &mut self.write_behind {
            // Their checksums come with the batch's outcome.
            for (&i, &slot) in ids.iter().zip(&slots) {
                self.staged[i] = (slot, 0);
                self.dirty[i] = false;
            }
            let mem = &self.mem;
            let pages: Vec<&[u8]> = ids.iter().map(|&i| &mem.page(i as PageId).0[..]).collect();
            if let Err((ids, _)) = writer.send(ids, slots, &pages) {
                for i in ids {
                    self.unstage(i);
                    self.dirty[i] = true;
                }
            }
            return self.hear_write_behind(false);
        }
        match self.write_pages(&ids, &slots) {
            Ok(crcs) => {
                for ((i, slot), crc) in ids.into_iter().zip(slots).zip(crcs) {
                    self.staged[i] = (slot, crc);
                    self.dirty[i] = false;
                }
            }
            Err(_) => self.free.extend(slots),
        }
    }

    fn live_pages(&self) -> usize {
        self.mem.live_pages()
    }
}

fn io(action: &'static str) -> impl FnOnce(std::io::Error) -> Error {
    move |e| Error::io(action, e)
}
