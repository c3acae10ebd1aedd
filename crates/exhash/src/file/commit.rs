//! A commit: the changes since the last one appended to the journal in one
//! block and one sync, or, when the journal cannot take them, a
//! checkpoint: the pages changed since the last checkpoint to free slots,
//! then the metadata, a sync, and one header copy, whose write makes it all
//! durable.

use super::header::Header;
use super::journal::BLOCK_ALIGN;
use super::{FileStore, io};
use crate::device::Device;
use crate::error::Error;
use crate::format::{HEADER_SIZE, SLOT_SIZE, VERSION};
use crate::layout::slot_page;
use crate::store::PageStore;
use crate::table::ExHash;

impl<D: Device> ExHash<FileStore<D>> {
    /// Start an empty table on an empty device and commit it.
    pub fn create_on(dev: D) -> Result<ExHash<FileStore<D>>, Error> {
        let mut table = ExHash::with_store(FileStore::new(dev));
        table.commit()?;
        Ok(table)
    }

    /// The metadata bytes of the current state (slots must be assigned).
    fn metadata(&self) -> Vec<u8> {
        let s = &self.store;
        let n = self.meta.len();
        let mut b = Vec::with_capacity(24 + 16 * n + 4 * self.dir.len() + 16 * self.spill.len());
        b.push(self.global_depth);
        b.extend_from_slice(&[0; 7]);
        b.extend_from_slice(&self.len.to_le_bytes());
        b.extend_from_slice(&(n as u32).to_le_bytes());
        b.extend_from_slice(&(self.spill.len() as u32).to_le_bytes());
        for (id, m) in self.meta.iter().enumerate() {
            let live = m.depth != 0;
            b.extend_from_slice(&(if live { s.slots[id] } else { 0 }).to_le_bytes());
            b.push(m.depth);
            b.extend_from_slice(&[0; 3]);
            b.extend_from_slice(&(if live { s.crcs[id] } else { 0 }).to_le_bytes());
        }
        for &slot in &self.dir {
            b.extend_from_slice(&slot_page(slot).to_le_bytes());
        }
        for (&k, &v) in &self.spill {
            b.extend_from_slice(&k.to_le_bytes());
            b.extend_from_slice(&v.to_le_bytes());
        }
        b
    }

    /// Make the current state durable. When this returns Ok, a crash at any
    /// later moment reopens to exactly this state.
    ///
    /// The changes go into the file's journal (one write and one sync, a
    /// record of 9 or 17 bytes a change) while it has room for them and
    /// they were made key by key; otherwise, and once the journal is full,
    /// the commit is a [`checkpoint`](ExHash::checkpoint).
    pub fn commit(&mut self) -> Result<(), Error> {
        let journal = &mut self.store.journal;
        if journal.is_clean() && journal.extent.1 != 0 {
            return Ok(());
        }
        let seq = self.store.seq + 1;
        let Some(block) = journal.block(seq, self.len) else {
            return self.checkpoint();
        };
        let at = journal.next_offset();
        let written = self
            .store
            .dev
            .write_at(at, &block)
            .map_err(io("writing to the journal"))
            .and_then(|()| self.store.dev.sync().map_err(io("syncing the journal")));
        match written {
            Ok(()) => {
                self.store.journal.appended(&block);
                self.store.seq = seq;
                Ok(())
            }
            Err(e) => {
                // Whether the block reached the disk is unknown: the next
                // commit writes everything anew, by a checkpoint.
                self.store.journal.close();
                Err(e)
            }
        }
    }

    /// Make the current state durable by writing every page changed since
    /// the last checkpoint and the metadata, and start the journal afresh
    /// (`commit` does it when the journal is full or cannot take the
    /// changes). Afterwards the file's pages alone hold the table.
    pub fn checkpoint(&mut self) -> Result<(), Error> {
        self.store.hear_write_behind(true);
        let store = &mut self.store;
        // Early copies that changed since are written again; so are all
        // of them when a sync of them failed, as its error is not
        // reported again to this commit's own sync.
        let failed = std::mem::take(&mut store.write_behind_failed);
        let live = |i: &usize| self.meta[*i].depth != 0;
        for i in (0..self.meta.len()).filter(live) {
            if failed && store.staged[i].0 != 0 {
                store.dirty[i] = true;
            }
            if store.dirty[i] {
                store.unstage(i);
            }
        }
        let ids: Vec<usize> = (0..self.meta.len())
            .filter(live)
            .filter(|&i| self.store.dirty[i])
            .collect();
        let saved = (self.store.free.clone(), self.store.next_slot);
        let result = self.write_commit(&ids);
        if result.is_err() {
            // Nothing the durable state refers to was touched; forget the
            // slot assignments of the failed attempt. Its header may have
            // reached the disk: the journal of the last checkpoint is not
            // added to, the next commit is a checkpoint again.
            (self.store.free, self.store.next_slot) = saved;
            self.store.journal.close();
        }
        result
    }

    fn write_commit(&mut self, ids: &[usize]) -> Result<(), Error> {
        let slots: Vec<u64> = ids.iter().map(|_| self.store.take_run(1)).collect();
        let crcs = self.store.write_pages(ids, &slots)?;
        let staged = (0..self.meta.len())
            .filter(|&i| self.meta[i].depth != 0 && self.store.staged[i].0 != 0)
            .map(|i| (i, self.store.staged[i].0, self.store.staged[i].1));
        let assigned: Vec<(usize, u64, u32)> = ids
            .iter()
            .zip(slots)
            .zip(crcs)
            .map(|((&id, slot), crc)| (id, slot, crc))
            .chain(staged)
            .collect();
        let old: Vec<(usize, u64, u32)> = assigned
            .iter()
            .map(|&(id, _, _)| (id, self.store.slots[id], self.store.crcs[id]))
            .collect();
        for &(id, slot, crc) in &assigned {
            self.store.slots[id] = slot;
            self.store.crcs[id] = crc;
        }
        let meta = self.metadata();
        let journal = self.journal_extent();
        let result = self.write_meta_and_header(&meta, journal);
        match result {
            Ok(()) => {
                for &(id, slot, _) in &old {
                    if slot != 0 {
                        self.store.pending_free.push(slot);
                    }
                    self.store.dirty[id] = false;
                    self.store.staged[id] = (0, 0);
                }
                let pending = std::mem::take(&mut self.store.pending_free);
                self.store.free.extend(pending);
                Ok(())
            }
            Err(e) => {
                for (id, slot, crc) in old {
                    self.store.slots[id] = slot;
                    self.store.crcs[id] = crc;
                }
                Err(e)
            }
        }
    }

    /// The journal's extent for the next checkpoint: the current one, or a
    /// new run of slots if the table has grown or shrunk far from its size.
    fn journal_extent(&mut self) -> (u64, u64) {
        let store = &mut self.store;
        let pages = store.live_pages();
        let Some(want) = store.journal.wanted_slots(pages) else {
            return store.journal.extent;
        };
        let start = store.take_run(want);
        (start, want)
    }

    fn write_meta_and_header(&mut self, meta: &[u8], journal: (u64, u64)) -> Result<(), Error> {
        let nslots = (meta.len() as u64).div_ceil(SLOT_SIZE).max(1);
        let start = self.store.take_run(nslots);
        let journal_end = (journal.0 + journal.1) * SLOT_SIZE;
        if journal != self.store.journal.extent {
            // A new extent: its last block blanked, so that the file covers
            // it when it lies past the end.
            self.store
                .dev
                .write_at(journal_end - BLOCK_ALIGN as u64, &[0; BLOCK_ALIGN])
                .map_err(io("extending the file for the journal"))?;
        }
        self.store
            .dev
            .write_at(start * SLOT_SIZE, meta)
            .map_err(io("writing the metadata"))?;
        // Pad the extent so the file always ends on a slot boundary.
        let pad = (nslots * SLOT_SIZE) as usize - meta.len();
        if pad > 0 {
            self.store
                .dev
                .write_at(start * SLOT_SIZE + meta.len() as u64, &vec![0; pad])
                .map_err(io("writing the metadata"))?;
        }
        self.store
            .dev
            .sync()
            .map_err(io("syncing pages and metadata"))?;
        let header = Header {
            version: VERSION,
            seq: self.store.seq + 1,
            meta_slot: start,
            meta_len: meta.len() as u64,
            meta_crc: crc32c::crc32c(meta),
            journal,
        };
        // The copy the last checkpoint did not write.
        let copy = 1 - self.store.header_copy;
        let at = copy * HEADER_SIZE as u64;
        self.store
            .dev
            .write_at(at, &header.encode())
            .map_err(io("writing the header"))?;
        self.store.dev.sync().map_err(io("syncing the header"))?;
        self.store.seq = header.seq;
        self.store.header_copy = copy;
        let old_journal = self.store.journal.extent;
        if journal != old_journal {
            self.store
                .pending_free
                .extend(old_journal.0..old_journal.0 + old_journal.1);
        }
        self.store.journal.restart(header.seq, journal);
        let (old_start, old_n) = std::mem::replace(&mut self.store.meta_extent, (start, nslots));
        self.store.pending_free.extend(old_start..old_start + old_n);
        Ok(())
    }
}
