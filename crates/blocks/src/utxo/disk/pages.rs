//! One partition of the set on disk: a file of fixed pages, a hash table
//! whose bucket is a page, chosen by the top bits of a keyed hash of the
//! outpoint. A page holds whole records (outpoint, then Core's compressed
//! coin, or where that is long a pointer into the overflow file); when the
//! pages fill past [`LOAD`] or one page cannot take its records, the
//! partition is rewritten with more pages (each old page splits into
//! consecutive new ones, so the rewrite reads and writes in order).

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use super::file_at::{open_existing, read_exact_at, write_all_at};
use super::journal::JournalWriter;
use crate::error::{Error, ErrorKind, Result};

/// Bytes of a page (the journal's page entries hold one).
pub(super) const PAGE: usize = super::journal::PAGE;
/// A page's header: the bytes of records that follow (u16, little-endian).
const PAGE_HEADER: usize = 2;
/// Bytes of an outpoint: the txid, then the index little-endian.
pub(super) const KEY: usize = 36;
/// A record's header: the key, then its data's length (u16, little-endian;
/// [`POINTER`] set when the data is a pointer into the overflow file).
const RECORD_HEADER: usize = KEY + 2;
/// The length bit saying a record's data is a pointer.
pub(super) const POINTER: u16 = 0x8000;
/// A pointer: offset (u64) and length (u32) in the overflow file.
pub(super) const POINTER_LEN: usize = 12;
/// The longest coin stored in its page; longer ones go to the overflow file.
pub(super) const INLINE_MAX: usize = 400;
/// The share of the pages' record bytes past which a partition grows.
const LOAD: f64 = 0.6;

/// A visitor of records: key, length field, data.
pub(super) type Visit<'a> = dyn FnMut(&Key, u16, &[u8]) -> Result<()> + 'a;

/// An outpoint as a key.
pub(super) type Key = [u8; KEY];

/// One change to apply: the key's hash, the key, and the new record's data
/// (`data[at..at + len]` of the batch's bytes, `len` with [`POINTER`] when a
/// pointer) or `None` to delete it.
pub(super) struct Change {
    pub(super) hash: u64,
    pub(super) key: Key,
    pub(super) record: Option<(u32, u16)>,
}

fn data_len(field: u16) -> usize {
    if field & POINTER != 0 {
        POINTER_LEN
    } else {
        field as usize
    }
}

/// The records of a page: (key, length field, data).
fn records(page: &[u8]) -> impl Iterator<Item = (&[u8], u16, &[u8])> {
    let used = u16::from_le_bytes([page[0], page[1]]) as usize;
    let body = &page[PAGE_HEADER..PAGE_HEADER + used.min(PAGE - PAGE_HEADER)];
    let mut at = 0;
    std::iter::from_fn(move || {
        let header = body.get(at..at + RECORD_HEADER)?;
        let field = u16::from_le_bytes([header[KEY], header[KEY + 1]]);
        let data = body.get(at + RECORD_HEADER..at + RECORD_HEADER + data_len(field))?;
        at += RECORD_HEADER + data.len();
        Some((&header[..KEY], field, data))
    })
}

/// Appends a record to a page being built; false when it does not fit.
fn push(page: &mut Vec<u8>, key: &[u8], field: u16, data: &[u8]) -> bool {
    if page.len() + RECORD_HEADER + data.len() > PAGE {
        return false;
    }
    page.extend_from_slice(key);
    page.extend_from_slice(&field.to_le_bytes());
    page.extend_from_slice(data);
    true
}

/// A page being built: starts with its header, filled in by [`seal`].
fn start(page: &mut Vec<u8>) {
    page.clear();
    page.extend_from_slice(&[0, 0]);
}

fn seal(page: &mut Vec<u8>) {
    let used = (page.len() - PAGE_HEADER) as u16;
    page[..2].copy_from_slice(&used.to_le_bytes());
    page.resize(PAGE, 0);
}

/// A partition's file.
pub(super) struct Pages {
    path: PathBuf,
    file: File,
    /// Its partition (the journal names it).
    part: u8,
    /// Whether a grown file is synced before it takes the old one's name
    /// (a chainstate kept between runs).
    durable: bool,
    /// Pages: `1 << bits`.
    bits: u32,
    /// Bytes of records in the pages.
    used: u64,
    /// Records.
    count: u64,
    /// A page read or built.
    page: Vec<u8>,
}

impl Pages {
    /// A partition of one empty page at `path`.
    pub(super) fn create(path: PathBuf, part: u8, durable: bool) -> Result<Self> {
        let file = create(&path, 1)?;
        if durable {
            // Its length must survive a power cut before a journal's pages
            // are replayed into it.
            file.sync_all().map_err(|e| Error::io(&path, "sync", e))?;
        }
        Ok(Pages {
            path,
            file,
            part,
            durable,
            bits: 0,
            used: 0,
            count: 0,
            page: Vec::with_capacity(PAGE),
        })
    }

    /// The partition at `path` a state committed, holding `count` records
    /// of `used` bytes; its pages are its length's.
    pub(super) fn open(path: PathBuf, part: u8, used: u64, count: u64) -> Result<Self> {
        let (file, len) = open_existing(&path)?;
        let pages = len / PAGE as u64;
        if len % PAGE as u64 != 0 || !pages.is_power_of_two() || pages > 1 << 40 {
            let reason = format!("{len} bytes is not a power of two of 4 KiB pages");
            return Err(ErrorKind::BadState { path, reason }.into());
        }
        Ok(Pages {
            path,
            file,
            part,
            durable: true,
            bits: pages.trailing_zeros(),
            used,
            count,
            page: Vec::with_capacity(PAGE),
        })
    }

    /// Bytes of records held.
    pub(super) fn used(&self) -> u64 {
        self.used
    }

    /// Records held.
    pub(super) fn count(&self) -> u64 {
        self.count
    }

    /// Bytes of the file.
    pub(super) fn file_bytes(&self) -> u64 {
        (PAGE as u64) << self.bits
    }

    fn bucket(&self, hash: u64) -> u64 {
        hash.checked_shr(64 - self.bits).unwrap_or(0)
    }

    fn read_page(&self, bucket: u64, page: &mut [u8]) -> Result<()> {
        read_exact_at(&self.file, page, bucket * PAGE as u64)
            .map_err(|e| Error::io(&self.path, "read", e))
    }

    /// Finds `key`'s record; calls `found` with its length field and data.
    pub(super) fn get<T>(
        &self,
        key: &Key,
        hash: u64,
        page: &mut [u8; PAGE],
        found: impl FnOnce(u16, &[u8]) -> Result<T>,
    ) -> Result<Option<T>> {
        if self.count == 0 {
            return Ok(None);
        }
        self.read_page(self.bucket(hash), page)?;
        match records(page).find(|(k, _, _)| *k == key) {
            Some((_, field, data)) => found(field, data).map(Some),
            None => Ok(None),
        }
    }

    /// Applies `changes` (sorted by hash) whose records' data are in
    /// `data`: the new pages written in place, or into `journal` (the file
    /// untouched until the journal is committed and replayed). Applying
    /// twice does what applying once does, so a page that overflows grows
    /// the partition and the batch starts again (the journal cut back).
    pub(super) fn apply(
        &mut self,
        changes: &[Change],
        data: &[u8],
        hash: &dyn Fn(&[u8]) -> u64,
        mut journal: Option<&mut JournalWriter>,
    ) -> Result<()> {
        let added: u64 = changes
            .iter()
            .filter_map(|c| c.record)
            .map(|(_, field)| (RECORD_HEADER + data_len(field)) as u64)
            .sum();
        let mut bits = self.bits;
        while (self.used + added) as f64 > LOAD * ((PAGE - PAGE_HEADER) << bits) as f64 {
            bits += 1;
        }
        self.grow(bits, hash)?;
        let before = (self.used, self.count);
        let mark = journal.as_ref().map(|j| j.mark());
        while !self.apply_once(changes, data, journal.as_deref_mut())? {
            if let (Some(journal), Some(mark)) = (journal.as_deref_mut(), mark) {
                // The pages went to the journal, not the file: the counts
                // and the journal go back to before the batch.
                (self.used, self.count) = before;
                journal.rollback(mark)?;
            }
            self.grow(self.bits + 1, hash)?;
        }
        Ok(())
    }

    /// One pass of [`Pages::apply`]; false when a page overflowed.
    fn apply_once(
        &mut self,
        changes: &[Change],
        data: &[u8],
        mut journal: Option<&mut JournalWriter>,
    ) -> Result<bool> {
        let mut old = vec![0u8; PAGE];
        let mut page = std::mem::take(&mut self.page);
        let mut rest = changes;
        while let Some(first) = rest.first() {
            let bucket = self.bucket(first.hash);
            let n = rest
                .iter()
                .take_while(|c| self.bucket(c.hash) == bucket)
                .count();
            let (group, next) = rest.split_at(n);
            rest = next;
            self.read_page(bucket, &mut old)?;
            start(&mut page);
            let (mut used, mut count) = (0u64, 0u64);
            let mut before = (0u64, 0u64);
            let mut fits = true;
            for (key, field, record) in records(&old) {
                before.0 += (RECORD_HEADER + record.len()) as u64;
                before.1 += 1;
                if group.iter().any(|c| c.key[..] == *key) {
                    continue;
                }
                fits &= push(&mut page, key, field, record);
                used += (RECORD_HEADER + record.len()) as u64;
                count += 1;
            }
            for change in group {
                if let Some((at, field)) = change.record {
                    let record = &data[at as usize..at as usize + data_len(field)];
                    fits &= push(&mut page, &change.key, field, record);
                    used += (RECORD_HEADER + record.len()) as u64;
                    count += 1;
                }
            }
            if !fits {
                self.page = page;
                return Ok(false);
            }
            seal(&mut page);
            match journal.as_deref_mut() {
                Some(journal) => journal.put(self.part, bucket, &page)?,
                None => write_all_at(&self.file, &page, bucket * PAGE as u64)
                    .map_err(|e| Error::io(&self.path, "write", e))?,
            }
            self.used = self.used - before.0 + used;
            self.count = self.count - before.1 + count;
        }
        self.page = page;
        Ok(true)
    }

    /// Rewrites the partition with `1 << bits` pages (no change when it
    /// has them): old page i splits into new pages i << d .. (i + 1) << d.
    fn grow(&mut self, bits: u32, hash: &dyn Fn(&[u8]) -> u64) -> Result<()> {
        if bits <= self.bits {
            return Ok(());
        }
        let grown = self.path.with_extension("grow");
        let file = create(&grown, 1u64 << bits)?;
        let shift = 64 - bits;
        let mut old = vec![0u8; PAGE];
        let mut page = std::mem::take(&mut self.page);
        let mut sorted: Vec<(u64, usize, usize)> = Vec::new();
        for i in 0..1u64 << self.bits {
            self.read_page(i, &mut old)?;
            sorted.clear();
            let mut at = PAGE_HEADER;
            for (key, _, record) in records(&old) {
                let len = RECORD_HEADER + record.len();
                sorted.push((hash(key) >> shift, at, len));
                at += len;
            }
            sorted.sort_unstable_by_key(|s| s.0);
            let mut rest = &sorted[..];
            while let Some(&(bucket, _, _)) = rest.first() {
                let n = rest.iter().take_while(|s| s.0 == bucket).count();
                start(&mut page);
                for &(_, at, len) in &rest[..n] {
                    // A page's records fit a page; a new page takes a subset.
                    page.extend_from_slice(&old[at..at + len]);
                }
                rest = &rest[n..];
                seal(&mut page);
                write_all_at(&file, &page, bucket * PAGE as u64)
                    .map_err(|e| Error::io(&grown, "write", e))?;
            }
        }
        self.page = page;
        if self.durable {
            // The grown file holds the records the old one holds, laid out
            // anew: it may take the old one's name at any moment, once whole.
            file.sync_data().map_err(|e| Error::io(&grown, "sync", e))?;
        }
        drop(file);
        fs::rename(&grown, &self.path).map_err(|e| Error::io(&grown, "rename", e))?;
        self.file = File::options()
            .read(true)
            .write(true)
            .open(&self.path)
            .map_err(|e| Error::io(&self.path, "open", e))?;
        self.bits = bits;
        Ok(())
    }

    /// Calls `visit` with every record (key, length field, data), page by
    /// page.
    pub(super) fn visit(&self, visit: &mut Visit<'_>) -> Result<()> {
        let mut page = vec![0u8; PAGE];
        for i in 0..1u64 << self.bits {
            self.read_page(i, &mut page)?;
            for (key, field, data) in records(&page) {
                visit(key.try_into().expect("a key's bytes"), field, data)?;
            }
        }
        Ok(())
    }
}

/// A file of `pages` empty pages (sparse where the file system allows).
fn create(path: &Path, pages: u64) -> Result<File> {
    let file = File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(|e| Error::io(path, "create", e))?;
    file.set_len(pages * PAGE as u64)
        .map_err(|e| Error::io(path, "grow", e))?;
    Ok(file)
}
