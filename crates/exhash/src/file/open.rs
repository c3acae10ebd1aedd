//! Opening a file: the newer valid header, the metadata it names, every
//! page read and checked against the metadata, so that a damaged file is
//! refused at once rather than found out at a lookup. Files of earlier
//! format versions are laid out afresh (`upgrade`).

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::header::{Header, u32_at, u64_at};
use super::journal::Change;
use super::lock::{Wait, WriterLock};
use super::{FileStore, io};
use crate::device::Device;
use crate::error::{Error, ErrorKind};
use crate::format::{GROUP_PAGES, HEADER_SIZE, MAGIC, SLOT_SIZE};
use crate::group::{self, Narrow, Wide, narrow};
use crate::layout::{MAX_DEPTH, MIN_DEPTH, PageMeta, dir_slot};
use crate::legacy;
use crate::page::{Page, PageId};
use crate::table::ExHash;

impl ExHash<FileStore<File>> {
    /// Open the table in `path`, or create an empty one there (written to a
    /// temporary name and renamed once complete), for writing: refused
    /// while another process has it open ([`ErrorKind::Locked`]); see
    /// [`OpenOptions`] to wait instead.
    pub fn open_or_create(path: &Path) -> Result<ExHash<FileStore<File>>, Error> {
        OpenOptions::new().create(true).open(path)
    }

    /// Open an existing table file for writing: refused while another
    /// process has it open ([`ErrorKind::Locked`]).
    pub fn open(path: &Path) -> Result<ExHash<FileStore<File>>, Error> {
        OpenOptions::new().open(path)
    }
}

/// How to open a table file: whether to create it, and whether to wait
/// for another process that has it open.
///
/// One process at a time has a table open for writing: opening takes an
/// exclusive lock on a file beside it, `NAME.lock` (an advisory `flock` on
/// Unix, `LockFileEx` on Windows), held until the table is dropped or the
/// process ends, however it ends. Within a process, a second open of the
/// same file is refused too.
///
/// ```no_run
/// # fn main() -> Result<(), seekless_exhash::Error> {
/// use std::time::Duration;
/// use seekless_exhash::OpenOptions;
///
/// let table = OpenOptions::new()
///     .create(true)
///     .wait_at_most(Duration::from_secs(30))
///     .open("t.exh".as_ref())?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct OpenOptions {
    create: bool,
    wait: Wait,
}

impl OpenOptions {
    /// Open an existing file, refused at once while another process has
    /// it open.
    pub fn new() -> OpenOptions {
        OpenOptions::default()
    }

    /// Create an empty table if there is none.
    pub fn create(&mut self, create: bool) -> &mut OpenOptions {
        self.create = create;
        self
    }

    /// Wait for as long as another process has the table open (`true`), or
    /// not at all (`false`, the default).
    pub fn wait(&mut self, wait: bool) -> &mut OpenOptions {
        self.wait = if wait { Wait::Forever } else { Wait::No };
        self
    }

    /// Wait up to `limit` for another process to let go of the table,
    /// then give up with [`ErrorKind::Locked`].
    pub fn wait_at_most(&mut self, limit: Duration) -> &mut OpenOptions {
        self.wait = Wait::AtMost(limit);
        self
    }

    /// Open (or create) the table in `path`, at its last commit, and hold
    /// its writer's lock until the table is dropped.
    pub fn open(&self, path: &Path) -> Result<ExHash<FileStore<File>>, Error> {
        if !self.create {
            // No lock file for a table that is not there.
            fs::metadata(path).map_err(io("opening the table file"))?;
        }
        // Taken before the table is read, or made: a table is only
        // renamed into place under its lock.
        let lock = WriterLock::take(path, self.wait)?;
        let mut table = if self.create && !path.exists() {
            create_at(path)?
        } else {
            let file = fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(path)
                .map_err(io("opening the table file"))?;
            ExHash::open_on(file)?
        };
        table.store.lock = Some(lock);
        Ok(table)
    }
}

/// A new, empty table in `path`, written to `NAME.tmp` and renamed once
/// complete.
fn create_at(path: &Path) -> Result<ExHash<FileStore<File>>, Error> {
    let mut tmp = PathBuf::from(path);
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    tmp.set_file_name(name);
    let file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp)
        .map_err(io("creating the table file"))?;
    let table = ExHash::create_on(file)?;
    fs::rename(&tmp, path).map_err(io("renaming the new table file into place"))?;
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

impl<D: Device> ExHash<FileStore<D>> {
    /// Open the table on `dev`, at its last commit. No lock is taken: the
    /// caller sees to it that one writer at a time has the device.
    pub fn open_on(mut dev: D) -> Result<ExHash<FileStore<D>>, Error> {
        let file_len = dev.size().map_err(io("reading the file length"))?;
        let (header, header_copy) = latest_header(&mut dev, file_len)?;
        let meta = Metadata::read(&mut dev, &header, file_len)?;
        let slots_in_file = file_len / SLOT_SIZE;
        let Committed {
            global_depth: gd,
            len,
            dir,
            mut metas,
            slots,
            crcs,
            spill,
            used,
            spill_at,
        } = meta.decode(&header, slots_in_file)?;
        let n = metas.len();
        let mut store = FileStore::new(dev);
        store.slots = slots;
        store.crcs = crcs;
        store.dirty = vec![false; n];
        store.staged = vec![(0, 0); n];
        store.seq = header.seq;
        store.header_copy = header_copy;
        store.next_slot = slots_in_file;
        store.meta_extent = (header.meta_slot, header.meta_len.div_ceil(SLOT_SIZE));
        // Pairs of the pages of a file of an earlier version, to be placed
        // again in the current layout.
        let mut old_pairs = Vec::new();
        let in_pages = store.read_pages(&mut metas, header.version, &mut old_pairs)?;
        if spill.len() as u64 + in_pages != len {
            return Err(meta.corrupt(8, "entry count does not match the pages"));
        }
        store.free = (1..slots_in_file).filter(|s| !used.contains(s)).collect();
        let spill_twice = meta.corrupt(spill_at, "spill key also stored in a page");
        if header.version < GROUP_PAGES {
            let mut keys: Vec<u64> = old_pairs.iter().map(|p| p.0).collect();
            keys.extend(spill.keys());
            keys.sort_unstable();
            if keys.windows(2).any(|w| w[0] == w[1]) {
                return Err(spill_twice);
            }
            return Ok(upgrade(store, old_pairs, spill));
        }
        let journal = store.read_journal(&header)?;
        store.mem.rebuild_free_list();
        let dir = dir
            .into_iter()
            .map(|id| dir_slot(id, metas[id as usize].depth))
            .collect();
        // Every floor was just counted: exact at the new table's stamp.
        for m in &mut metas {
            m.counted = len as u32;
        }
        let mut table = ExHash::from_parts(store, dir, gd, metas, len, spill);
        if table.spill.keys().any(|&k| table.in_pages(k)) {
            return Err(spill_twice);
        }
        table.replay(&header, &journal)?;
        Ok(table)
    }
}

/// The newer of the two valid header copies, and which copy it is; which
/// error a file without one gets depends on whether it looks like a table
/// file at all.
fn latest_header<D: Device>(dev: &mut D, file_len: u64) -> Result<(Header, u64), Error> {
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
    match (a, b) {
        (Some(a), Some(b)) => Ok(if a.seq >= b.seq { (a, 0) } else { (b, 1) }),
        (Some(a), None) => Ok((a, 0)),
        (None, Some(b)) => Ok((b, 1)),
        (None, None) => {
            if slot0[0..8] != MAGIC && slot0[HEADER_SIZE..HEADER_SIZE + 8] != MAGIC {
                return Err(ErrorKind::NotExhash.into());
            }
            Err(ErrorKind::NoValidHeader.into())
        }
    }
}

/// The slots of the journal's extent that `header` names, which must lie
/// in the file.
fn journal_slots(header: &Header, slots_in_file: u64) -> Result<std::ops::Range<u64>, Error> {
    let (first, n) = header.journal;
    if n == 0 {
        return Ok(0..0);
    }
    match first.checked_add(n) {
        Some(end) if first >= 1 && end <= slots_in_file => Ok(first..end),
        Some(end) if first >= 1 && end <= 1 << 40 => Err(ErrorKind::Truncated {
            offset: first * SLOT_SIZE,
            needed: n * SLOT_SIZE,
        }
        .into()),
        _ => Err(Error::corrupt(44, "journal extent out of range")),
    }
}

/// The last commit's metadata bytes and their offset in the file.
struct Metadata {
    bytes: Vec<u8>,
    offset: u64,
}

/// What the metadata says, checked against itself and the file's length.
struct Committed {
    global_depth: u8,
    /// Entries in the table.
    len: u64,
    /// The page id of each directory slot.
    dir: Vec<PageId>,
    metas: Vec<PageMeta>,
    /// Slot and checksum of each page id (slot 0: not in use).
    slots: Vec<u64>,
    crcs: Vec<u32>,
    spill: BTreeMap<u64, u64>,
    /// Slots the commit refers to: its pages and the metadata itself.
    used: BTreeSet<u64>,
    /// Where the spilled pairs start in the metadata.
    spill_at: usize,
}

impl Metadata {
    /// Read the extent `header` names and check its checksum.
    fn read<D: Device>(dev: &mut D, header: &Header, file_len: u64) -> Result<Metadata, Error> {
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
        Ok(Metadata {
            bytes: meta,
            offset: meta_off,
        })
    }

    /// The error for the metadata field at byte `at`.
    fn corrupt(&self, at: usize, what: &'static str) -> Error {
        Error::corrupt(self.offset + at as u64, what)
    }

    /// Decode the counts, the page table, the directory and the spilled
    /// pairs, checking each (the pages themselves are read after).
    fn decode(&self, header: &Header, slots_in_file: u64) -> Result<Committed, Error> {
        let meta = &self.bytes;
        let gd = meta[0];
        if !(MIN_DEPTH..=MAX_DEPTH).contains(&gd) {
            return Err(self.corrupt(0, "global depth out of range"));
        }
        let len = u64_at(meta, 8);
        let n = u32_at(meta, 16) as u64;
        let nspill = u32_at(meta, 20) as u64;
        // Bounded by the metadata's length, which the file holds: page
        // ids are not bounded by the file's slots, since ids of merged
        // pages stay in the page table unused.
        let expect = 24 + 16 * n + 4 * (1u64 << gd) + 16 * nspill;
        if header.meta_len != expect {
            return Err(self.corrupt(16, "metadata length does not match its counts"));
        }
        let n = n as usize;
        let dir_at = 24 + 16 * n;
        let dir: Vec<PageId> = (0..1usize << gd)
            .map(|i| u32_at(meta, dir_at + 4 * i))
            .collect();
        let mut committed = Committed {
            global_depth: gd,
            len,
            dir,
            metas: vec![PageMeta::default(); n],
            slots: vec![0; n],
            crcs: vec![0; n],
            spill: BTreeMap::new(),
            used: (header.meta_slot..header.meta_slot + header.meta_len.div_ceil(SLOT_SIZE))
                .collect(),
            spill_at: dir_at + 4 * (1usize << gd),
        };
        for slot in journal_slots(header, slots_in_file)? {
            if !committed.used.insert(slot) {
                return Err(Error::corrupt(44, "journal extent overlaps the metadata"));
            }
        }
        self.decode_pages(&mut committed, slots_in_file)?;
        self.check_directory(&mut committed.metas, &committed.dir, gd, dir_at)?;
        for i in 0..nspill as usize {
            let at = committed.spill_at + 16 * i;
            if committed
                .spill
                .insert(u64_at(meta, at), u64_at(meta, at + 8))
                .is_some()
            {
                return Err(self.corrupt(at, "spill key repeated"));
            }
        }
        Ok(committed)
    }

    /// The page table: each live page's slot (in the file, used once),
    /// depth and checksum.
    fn decode_pages(&self, c: &mut Committed, slots_in_file: u64) -> Result<(), Error> {
        let meta = &self.bytes;
        for (id, m) in c.metas.iter_mut().enumerate() {
            let at = 24 + 16 * id;
            let slot = u64_at(meta, at);
            if slot == 0 {
                continue;
            }
            let depth = meta[at + 8];
            if slot >= slots_in_file || !c.used.insert(slot) {
                return Err(self.corrupt(at, "page slot out of range or used twice"));
            }
            if !(MIN_DEPTH..=c.global_depth).contains(&depth) {
                return Err(self.corrupt(at + 8, "page depth out of range"));
            }
            m.depth = depth;
            m.prefix = u32::MAX;
            c.slots[id] = slot;
            c.crcs[id] = u32_at(meta, at + 12);
        }
        Ok(())
    }

    /// The directory: every slot names a live page, each page one aligned
    /// run of slots; sets each page's prefix.
    fn check_directory(
        &self,
        metas: &mut [PageMeta],
        dir: &[PageId],
        gd: u8,
        dir_at: usize,
    ) -> Result<(), Error> {
        let mut seen = vec![0u64; metas.len()];
        for (i, &id) in dir.iter().enumerate() {
            let at = dir_at + 4 * i;
            let m = metas
                .get_mut(id as usize)
                .filter(|m| m.depth != 0)
                .ok_or_else(|| self.corrupt(at, "directory names a missing page"))?;
            let prefix = (i >> (gd - m.depth)) as u32;
            if m.prefix == u32::MAX {
                m.prefix = prefix;
            } else if m.prefix != prefix {
                return Err(self.corrupt(at, "directory maps a page to two ranges"));
            }
            seen[id as usize] += 1;
        }
        for (id, m) in metas.iter().enumerate() {
            if m.depth != 0 && seen[id] != 1u64 << (gd - m.depth) {
                return Err(self.corrupt(
                    24 + 16 * id,
                    "page not mapped over its whole directory range",
                ));
            }
        }
        Ok(())
    }
}

impl<D: Device> FileStore<D> {
    /// Read every live page, check its checksum and its entries, and
    /// install it (current version) or collect its pairs into `old_pairs`
    /// (earlier versions). Returns the entries counted in the pages.
    fn read_pages(
        &mut self,
        metas: &mut [PageMeta],
        version: u32,
        old_pairs: &mut Vec<(u64, u64)>,
    ) -> Result<u64, Error> {
        let mut total = 0;
        let mut page = Page::empty();
        let mut zs = Vec::new();
        for (id, m) in metas.iter_mut().enumerate() {
            if m.depth == 0 {
                continue;
            }
            let off = self.slots[id] * SLOT_SIZE;
            self.dev
                .read_at(off, &mut page.0)
                .map_err(io("reading a page"))?;
            if crc32c::crc32c(&page.0) != self.crcs[id] {
                return Err(ErrorKind::BadChecksum { offset: off }.into());
            }
            if version < GROUP_PAGES {
                m.floor = legacy::page_pairs(&page, m.depth, m.prefix, version, off, old_pairs)?;
            } else {
                m.floor = if narrow(m.depth) {
                    group::check::<Narrow>(&page, m.depth, m.prefix, &mut zs)
                } else {
                    group::check::<Wide>(&page, m.depth, m.prefix, &mut zs)
                }
                .map_err(|(at, what)| Error::corrupt(off + at as u64, what))?;
                self.mem.install(id as PageId, &page);
            }
            total += m.floor as u64;
        }
        Ok(total)
    }
}

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
    table.store.journal.close();
    table
}

impl<D: Device> FileStore<D> {
    /// The bytes of the journal's extent that `header` names (none before
    /// version 4; its slots were checked with the metadata's).
    fn read_journal(&mut self, header: &Header) -> Result<Vec<u8>, Error> {
        self.journal.restart(header.seq, header.journal);
        let (first, n) = header.journal;
        if n == 0 {
            return Ok(Vec::new());
        }
        let mut bytes = vec![0u8; (n * SLOT_SIZE) as usize];
        self.dev
            .read_at(first * SLOT_SIZE, &mut bytes)
            .map_err(io("reading the journal"))?;
        Ok(bytes)
    }
}

impl<D: Device> ExHash<FileStore<D>> {
    /// Apply the journal's blocks after the checkpoint `header` names, in
    /// order, up to the first that is not the next one (blank, stale or
    /// torn: where the journal ends).
    fn replay(&mut self, header: &Header, journal: &[u8]) -> Result<(), Error> {
        let base = header.journal.0 * SLOT_SIZE;
        let mut at = 0;
        let mut seq = header.seq + 1;
        while let Some(block) = self
            .store
            .journal
            .read_next(&journal[at..], base + at as u64, seq)
        {
            for change in block.changes() {
                match change? {
                    Change::Put(k, v) => {
                        self.insert(k, v);
                    }
                    Change::Remove(k) => {
                        if self.remove(k).is_none() {
                            return Err(Error::corrupt(
                                block.records_at,
                                "journal removes a missing key",
                            ));
                        }
                    }
                }
            }
            if self.len != block.entries {
                return Err(Error::corrupt(
                    block.records_at - 16,
                    "entry count after a journal block",
                ));
            }
            at += block.bytes.len();
            seq += 1;
            self.store.journal.appended(block.bytes);
        }
        self.store.seq = seq - 1;
        Ok(())
    }
}
