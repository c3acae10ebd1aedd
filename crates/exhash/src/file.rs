//! The file backend: every page is kept in memory and written by shadow
//! paging on `commit`, which becomes durable by one checksummed header
//! write (`docs/format-exhash.md`).

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use crate::behind::Writer;
use crate::device::Device;
use crate::error::{Error, ErrorKind};
use crate::format::{HEADER_SIZE, HEADER_USED, MAGIC, SLOT_SIZE, VERSION};
use crate::group::{self, Narrow, Wide, narrow};
use crate::layout::{MAX_DEPTH, MIN_DEPTH, PageMeta, dir_slot, slot_page};
use crate::legacy;
use crate::store::fixed::Fixed;
use crate::store::{MemoryStore, PAGE_SIZE, Page, PageId, PageStore};
use crate::table::ExHash;

/// Pages a commit writes at most in one call: 4 MiB.
const WRITE_RUN: usize = 512;
/// Pages from which a commit checksums them on a second thread.
const PARALLEL_CHECKSUMS: usize = 256;

/// Pages in memory over a [`Device`], written out atomically by
/// [`ExHash::commit`].
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
    /// The thread writing early copies (`behind.rs`), once there are any
    /// and the device has a second handle.
    behind: Option<Writer>,
    /// A write or sync of early copies failed: none of them can be
    /// counted on.
    behind_failed: bool,
    /// Slots no committed state refers to.
    free: BTreeSet<u64>,
    /// Slots the last commit refers to but the next one will not.
    pending_free: Vec<u64>,
    /// First slot past the end of the file.
    next_slot: u64,
    seq: u64,
    meta_extent: (u64, u64),
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
            behind: None,
            behind_failed: false,
            free: BTreeSet::new(),
            pending_free: Vec::new(),
            next_slot: 1,
            seq: 0,
            meta_extent: (0, 0),
        }
    }

    /// The device underneath.
    pub fn device(&self) -> &D {
        &self.dev
    }

    /// Give up the store, keeping its device. Uncommitted changes are lost.
    pub fn into_device(self) -> D {
        self.dev
    }

    /// The number of the last commit.
    pub fn sequence(&self) -> u64 {
        self.seq
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
    fn hear_behind(&mut self, wait: bool) {
        while let Some(outcome) = self.behind.as_mut().and_then(|w| w.next(wait)) {
            self.behind_failed |= !outcome.synced;
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
    /// one vectored write of up to [`WRITE_RUN`] pages, each handed to
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
    /// (`behind.rs`), or else here. The next commit then only names them,
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
        if self.behind.is_none() {
            self.behind = self.dev.behind().and_then(Writer::start);
        }
        if let Some(writer) = &mut self.behind {
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
            return self.hear_behind(false);
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

fn io(action: &'static str) -> impl FnOnce(std::io::Error) -> Error {
    move |e| Error::io(action, e)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// A decoded header copy.
#[derive(Clone, Copy, Debug)]
struct Header {
    version: u32,
    seq: u64,
    meta_slot: u64,
    meta_len: u64,
    meta_crc: u32,
}

impl Header {
    fn encode(&self) -> [u8; HEADER_SIZE] {
        let mut b = [0u8; HEADER_SIZE];
        b[0..8].copy_from_slice(&MAGIC);
        b[8..12].copy_from_slice(&self.version.to_le_bytes());
        b[12..16].copy_from_slice(&(PAGE_SIZE as u32).to_le_bytes());
        b[16..24].copy_from_slice(&self.seq.to_le_bytes());
        b[24..32].copy_from_slice(&self.meta_slot.to_le_bytes());
        b[32..40].copy_from_slice(&self.meta_len.to_le_bytes());
        b[40..44].copy_from_slice(&self.meta_crc.to_le_bytes());
        let crc = crc32c::crc32c(&b[..HEADER_USED - 4]);
        b[HEADER_USED - 4..HEADER_USED].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Ok(None) for a copy that is torn or blank.
    fn decode(b: &[u8], offset: u64) -> Result<Option<Header>, Error> {
        if b[0..8] != MAGIC {
            return Ok(None);
        }
        let crc = u32_at(b, HEADER_USED - 4);
        if crc32c::crc32c(&b[..HEADER_USED - 4]) != crc {
            return Ok(None);
        }
        let version = u32_at(b, 8);
        if version > VERSION {
            return Err(ErrorKind::NewerVersion { found: version }.into());
        }
        if version == 0 || u32_at(b, 12) != PAGE_SIZE as u32 {
            return Err(Error::corrupt(
                offset + 8,
                "unsupported version or page size",
            ));
        }
        Ok(Some(Header {
            version,
            seq: u64_at(b, 16),
            meta_slot: u64_at(b, 24),
            meta_len: u64_at(b, 32),
            meta_crc: u32_at(b, 40),
        }))
    }
}

impl ExHash<FileStore<File>> {
    /// Open the table in `path`, or create an empty one there (written to a
    /// temporary name and renamed once complete).
    pub fn open_or_create(path: &Path) -> Result<ExHash<FileStore<File>>, Error> {
        if path.exists() {
            return ExHash::open(path);
        }
        let mut tmp = PathBuf::from(path);
        let mut name = path.file_name().unwrap_or_default().to_os_string();
        name.push(".tmp");
        tmp.set_file_name(name);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)
            .map_err(io("creating the table file"))?;
        let table = ExHash::create_on(file)?;
        std::fs::rename(&tmp, path).map_err(io("renaming the new table file into place"))?;
        if let Some(dir) = path.parent() {
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            if let Ok(d) = File::open(dir) {
                d.sync_all().map_err(io("syncing the directory"))?;
            }
        }
        Ok(table)
    }

    /// Open an existing table file.
    pub fn open(path: &Path) -> Result<ExHash<FileStore<File>>, Error> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(io("opening the table file"))?;
        ExHash::open_on(file)
    }
}

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
    pub fn commit(&mut self) -> Result<(), Error> {
        self.store.hear_behind(true);
        let store = &mut self.store;
        // Early copies that changed since are written again; so are all
        // of them when a sync of them failed, as its error is not
        // reported again to this commit's own sync.
        let failed = std::mem::take(&mut store.behind_failed);
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
            // slot assignments of the failed attempt.
            (self.store.free, self.store.next_slot) = saved;
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
        let result = self.write_meta_and_header(&meta);
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

    fn write_meta_and_header(&mut self, meta: &[u8]) -> Result<(), Error> {
        let nslots = (meta.len() as u64).div_ceil(SLOT_SIZE).max(1);
        let start = self.store.take_run(nslots);
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
        };
        let at = (header.seq % 2) * HEADER_SIZE as u64;
        self.store
            .dev
            .write_at(at, &header.encode())
            .map_err(io("writing the header"))?;
        self.store.dev.sync().map_err(io("syncing the header"))?;
        self.store.seq = header.seq;
        let (old_start, old_n) = std::mem::replace(&mut self.store.meta_extent, (start, nslots));
        self.store.pending_free.extend(old_start..old_start + old_n);
        Ok(())
    }

    /// Open the table on `dev`, at its last commit.
    pub fn open_on(mut dev: D) -> Result<ExHash<FileStore<D>>, Error> {
        let file_len = dev.size().map_err(io("reading the file length"))?;
        if file_len < SLOT_SIZE {
            let mut probe = vec![0u8; file_len.min(8) as usize];
            dev.read_at(0, &mut probe)
                .map_err(io("reading the header"))?;
            if probe.len() == 8 && probe != MAGIC
                || file_len > 0 && probe.len() < 8 && !MAGIC.starts_with(&probe)
            {
                return Err(ErrorKind::NotExhash.into());
            }
            return Err(ErrorKind::Truncated {
                offset: file_len,
                needed: SLOT_SIZE - file_len,
            }
            .into());
        }
        let mut slot0 = vec![0u8; SLOT_SIZE as usize];
        dev.read_at(0, &mut slot0)
            .map_err(io("reading the headers"))?;
        let a = Header::decode(&slot0[..HEADER_SIZE], 0)?;
        let b = Header::decode(&slot0[HEADER_SIZE..], HEADER_SIZE as u64)?;
        let header = match (a, b) {
            (Some(a), Some(b)) => {
                if a.seq >= b.seq {
                    a
                } else {
                    b
                }
            }
            (Some(h), None) | (None, Some(h)) => h,
            (None, None) => {
                if slot0[0..8] != MAGIC && slot0[HEADER_SIZE..HEADER_SIZE + 8] != MAGIC {
                    return Err(ErrorKind::NotExhash.into());
                }
                return Err(ErrorKind::NoValidHeader.into());
            }
        };
        let slots_in_file = file_len / SLOT_SIZE;
        let meta_off = header.meta_slot.checked_mul(SLOT_SIZE);
        let meta_end = meta_off.and_then(|o| o.checked_add(header.meta_len));
        let (meta_off, meta_end) = match (meta_off, meta_end) {
            (Some(o), Some(e)) if header.meta_slot >= 1 && header.meta_len >= 24 => (o, e),
            _ => return Err(Error::corrupt(24, "metadata extent out of range")),
        };
        if meta_end > file_len {
            return Err(ErrorKind::Truncated {
                offset: meta_off,
                needed: header.meta_len,
            }
            .into());
        }
        let mut meta = vec![0u8; header.meta_len as usize];
        dev.read_at(meta_off, &mut meta)
            .map_err(io("reading the metadata"))?;
        if crc32c::crc32c(&meta) != header.meta_crc {
            return Err(ErrorKind::BadChecksum { offset: meta_off }.into());
        }
        let corrupt = |at: usize, what| Error::corrupt(meta_off + at as u64, what);
        let gd = meta[0];
        if !(MIN_DEPTH..=MAX_DEPTH).contains(&gd) {
            return Err(corrupt(0, "global depth out of range"));
        }
        let len = u64_at(&meta, 8);
        let n = u32_at(&meta, 16) as u64;
        let nspill = u32_at(&meta, 20) as u64;
        // Bounded by the metadata's length, which the file holds: page
        // ids are not bounded by the file's slots, since ids of merged
        // pages stay in the page table unused.
        let expect = 24 + 16 * n + 4 * (1u64 << gd) + 16 * nspill;
        if header.meta_len != expect {
            return Err(corrupt(16, "metadata length does not match its counts"));
        }
        let n = n as usize;
        let dir_at = 24 + 16 * n;
        let dir: Vec<PageId> = (0..1usize << gd)
            .map(|i| u32_at(&meta, dir_at + 4 * i))
            .collect();
        let mut metas = vec![PageMeta::default(); n];
        let mut store = FileStore::new(dev);
        store.slots = vec![0; n];
        store.crcs = vec![0; n];
        store.dirty = vec![false; n];
        store.staged = vec![(0, 0); n];
        store.seq = header.seq;
        store.next_slot = slots_in_file;
        let mut used = BTreeSet::new();
        for s in header.meta_slot..header.meta_slot + header.meta_len.div_ceil(SLOT_SIZE) {
            used.insert(s);
        }
        store.meta_extent = (header.meta_slot, header.meta_len.div_ceil(SLOT_SIZE));
        for (id, m) in metas.iter_mut().enumerate() {
            let at = 24 + 16 * id;
            let slot = u64_at(&meta, at);
            if slot == 0 {
                continue;
            }
            let depth = meta[at + 8];
            if slot >= slots_in_file || !used.insert(slot) {
                return Err(corrupt(at, "page slot out of range or used twice"));
            }
            if !(MIN_DEPTH..=gd).contains(&depth) {
                return Err(corrupt(at + 8, "page depth out of range"));
            }
            m.depth = depth;
            m.prefix = u32::MAX;
            store.slots[id] = slot;
            store.crcs[id] = u32_at(&meta, at + 12);
        }
        // Directory: every slot names a live page, each page one aligned run.
        let mut seen = vec![0u64; n];
        for (i, &id) in dir.iter().enumerate() {
            let at = dir_at + 4 * i;
            let m = metas
                .get_mut(id as usize)
                .filter(|m| m.depth != 0)
                .ok_or_else(|| corrupt(at, "directory names a missing page"))?;
            let prefix = (i >> (gd - m.depth)) as u32;
            if m.prefix == u32::MAX {
                m.prefix = prefix;
            } else if m.prefix != prefix {
                return Err(corrupt(at, "directory maps a page to two ranges"));
            }
            seen[id as usize] += 1;
        }
        for (id, m) in metas.iter().enumerate() {
            if m.depth != 0 && seen[id] != 1u64 << (gd - m.depth) {
                return Err(corrupt(
                    24 + 16 * id,
                    "page not mapped over its whole directory range",
                ));
            }
        }
        let mut spill = BTreeMap::new();
        let spill_at = dir_at + 4 * (1usize << gd);
        for i in 0..nspill as usize {
            let at = spill_at + 16 * i;
            if spill
                .insert(u64_at(&meta, at), u64_at(&meta, at + 8))
                .is_some()
            {
                return Err(corrupt(at, "spill key repeated"));
            }
        }
        let mut total = spill.len() as u64;
        let mut page = Page::empty();
        let mut zs = Vec::new();
        // Pairs of the pages of a file of an earlier version, to be placed
        // again in the current layout.
        let mut old_pairs = Vec::new();
        for (id, m) in metas.iter_mut().enumerate() {
            if m.depth == 0 {
                continue;
            }
            let off = store.slots[id] * SLOT_SIZE;
            store
                .dev
                .read_at(off, &mut page.0)
                .map_err(io("reading a page"))?;
            if crc32c::crc32c(&page.0) != store.crcs[id] {
                return Err(ErrorKind::BadChecksum { offset: off }.into());
            }
            if header.version < VERSION {
                m.floor = legacy::page_pairs(
                    &page,
                    m.depth,
                    m.prefix,
                    header.version,
                    off,
                    &mut old_pairs,
                )?;
            } else {
                m.floor = if narrow(m.depth) {
                    group::check::<Narrow>(&page, m.depth, m.prefix, &mut zs)
                } else {
                    group::check::<Wide>(&page, m.depth, m.prefix, &mut zs)
                }
                .map_err(|(at, what)| Error::corrupt(off + at as u64, what))?;
                store.mem.install(id as PageId, &page);
            }
            total += m.floor as u64;
        }
        if total != len {
            return Err(corrupt(8, "entry count does not match the pages"));
        }
        store.free = (1..slots_in_file).filter(|s| !used.contains(s)).collect();
        let spill_twice = corrupt(spill_at, "spill key also stored in a page");
        if header.version < VERSION {
            let mut keys: Vec<u64> = old_pairs.iter().map(|p| p.0).collect();
            keys.extend(spill.keys());
            keys.sort_unstable();
            if keys.windows(2).any(|w| w[0] == w[1]) {
                return Err(spill_twice);
            }
            return Ok(upgrade(store, old_pairs, spill));
        }
        store.mem.rebuild_free_list();
        let dir = dir
            .into_iter()
            .map(|id| dir_slot(id, metas[id as usize].depth))
            .collect();
        // Every floor was just counted: exact at the new table's stamp.
        for m in &mut metas {
            m.counted = len as u32;
        }
        let table = ExHash::from_parts(store, dir, gd, metas, len, spill);
        if table.spill.keys().any(|&k| table.in_pages(k)) {
            return Err(spill_twice);
        }
        Ok(table)
    }
}

/// The table of a file of an earlier format version, laid out afresh in
/// the current one: every page of the last commit is let go (its slot is
/// reused only after the next commit, like any page dropped), and every
/// pair placed into new pages, all of which the next commit writes.
fn upgrade<D: Device>(
    mut store: FileStore<D>,
    pairs: Vec<(u64, u64)>,
    spill: BTreeMap<u64, u64>,
) -> ExHash<FileStore<D>> {
    store
        .pending_free
        .extend(store.slots.iter().filter(|&&s| s != 0));
    store.slots.clear();
    store.crcs.clear();
    store.dirty.clear();
    store.staged.clear();
    let mut table = ExHash::with_store(store);
    for (k, v) in pairs.into_iter().chain(spill) {
        table.insert(k, v);
    }
    table
}
