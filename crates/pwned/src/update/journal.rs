//! The journal of an update in progress, beside the index it will replace:
//! what an update killed at any moment needs to go on where it stopped
//! instead of fetching every range again. It sits beside a partial index
//! (the header block and the pages written so far); each record is a
//! checkpoint after which the partial file holds complete pages only.
//!
//! ```text
//! header:  "SEEKUPJ3" | kind u8 | full u8 | URL length u16 | URL
//!          | old index length u64 | CRC-32C of the old index's header u32
//!          | [minimum count u64, only when above 1]
//!          | CRC-32C of the header's bytes before it u32
//! record:  payload length u32 | payload | CRC-32C of the payload u32
//! payload: next prefix u32 | bucket bits u8 | has last bucket u8
//!          | last bucket u64 | pages u64 | hashes u64 | total u64
//!          | duplicates u64 | not modified u32 | changed u32 | added u64
//!          | removed u64 | counts changed u64 | received u64 | retries u64
//!          | directory entries u32 | 12 bytes each
//!          | validators u32 | (length u8 | bytes) each, one per range
//!          | fetched u32 | empty u32 | past cache u32
//!          | suspect ranges u32 | prefix u32 each
//!          | failed ranges u32 | prefix u32 each
//! ```
//!
//! (`SEEKUPJ1` and `SEEKUPJ2` journals, without the last two lines or the
//! last one, are not resumed: the update starts over.)
//!
//! All integers little-endian. A torn last record (a kill while appending)
//! fails its length or checksum and is ignored: the update goes on from the
//! record before.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::Path;

use crate::format::hash::Kind;
use crate::write::sorted::{Checkpoint, Written};

const MAGIC: &[u8; 8] = b"SEEKUPJ3";

/// What an update did.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct UpdateSummary {
    /// Whether there was no index before.
    pub created: bool,
    /// The range an interrupted update went on from (0: from the start).
    pub resumed_from: u32,
    /// Ranges asked for (all 1,048,576 once an update is done, counted
    /// from the start when it resumed): those [`fetched`](Self::fetched),
    /// [`not_modified`](Self::not_modified), [`suspect`](Self::suspect)
    /// and [`failed`](Self::failed) add up to it.
    pub checked: u32,
    /// Ranges whose answer (`200`) was taken.
    pub fetched: u32,
    /// Ranges the server said were not modified (copied from the old index).
    pub not_modified: u32,
    /// Ranges whose answer would have removed hashes or lowered counts (or
    /// from HIBP, was empty), asked again past caches and still so: each
    /// kept what the index had and its old validator, so the next update
    /// asks again. Their prefixes, in order. Not empty: the update did not
    /// get the upstream's data whole.
    pub suspect: Vec<u32>,
    /// Ranges of a refresh that failed every try (connection errors,
    /// 5xx, bodies that do not decode; a refused certificate or a 4xx
    /// stops the update instead, every range would meet it): each kept what the index had and
    /// its old validator, so the next update asks again. Their prefixes,
    /// in order. Not empty: the update did not get the upstream's data
    /// whole. (Building a new index, a range that fails every try stops
    /// the update with an error naming it, resumable: there is nothing to
    /// keep; so does a refresh where 64
    /// ranges in a row fail, or 1,024 in all.)
    pub failed: Vec<u32>,
    /// Ranges fetched empty (none from HIBP, where one is suspect).
    pub empty: u32,
    /// Ranges asked for past caches (after a cached fault or a suspect
    /// answer).
    pub past_cache: u32,
    /// Ranges whose content differs from the old index (all of them when
    /// there was none).
    pub changed: u32,
    /// Hashes that are new.
    pub added: u64,
    /// Hashes that are gone.
    pub removed: u64,
    /// Hashes whose count changed.
    pub counts_changed: u64,
    /// Hashes in the new index.
    pub hashes: u64,
    /// The new index holds only the hashes seen at least this many times
    /// (1: every hash).
    pub min_count: u64,
    /// Bytes of answer bodies received, as sent (compressed).
    pub received: u64,
    /// Requests repeated after a fault.
    pub retries: u64,
    /// Bytes of the new index.
    pub bytes: u64,
    /// Wall time.
    pub seconds: f64,
    /// How the new data came.
    pub path: UpdatePath,
    /// The delta bundle written (`bundle_out`), if one was.
    pub bundle: Option<std::path::PathBuf>,
}

/// How an update came by its data.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum UpdatePath {
    /// Range by range (`If-None-Match` where a validator is stored).
    #[default]
    Ranges,
    /// Range by range because a seekless mirror's bundles could not take
    /// the index to its identity: why.
    RangesInstead(String),
    /// A bundle file (`from_bundle`).
    BundleFile,
    /// This many delta bundles from a seekless mirror.
    Bundles {
        /// Bundles applied.
        count: u32,
    },
    /// The mirror serves the index's identity already: nothing was
    /// fetched or written.
    Current,
    /// The index already is what the bundle (`from_bundle`) makes:
    /// nothing was written (what a run killed after putting it in place
    /// left beside it was removed).
    AlreadyApplied,
}

/// What an update's results depend on besides the server: a journal made
/// under other terms is not resumed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Terms {
    pub kind: Kind,
    pub full: bool,
    pub url: String,
    /// Length and header checksum of the index being refreshed (0, 0: none).
    pub old: (u64, u32),
    /// The new index keeps the hashes seen at least this many times.
    pub min_count: u64,
}

impl Terms {
    fn encode(&self) -> Vec<u8> {
        let url = &self.url.as_bytes()[..self.url.len().min(u16::MAX as usize)];
        let mut b = MAGIC.to_vec();
        b.push(self.kind.code());
        b.push(u8::from(self.full));
        b.extend_from_slice(&(url.len() as u16).to_le_bytes());
        b.extend_from_slice(url);
        b.extend_from_slice(&self.old.0.to_le_bytes());
        b.extend_from_slice(&self.old.1.to_le_bytes());
        // Only for a subset, so that the journal of an update of a whole
        // corpus is what it was before subsets.
        if self.min_count > 1 {
            b.extend_from_slice(&self.min_count.to_le_bytes());
        }
        let crc = crc32c::crc32c(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        b
    }
}

/// One checkpoint: where to go on from, and everything gathered so far
/// that is not in the partial file's pages.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Record {
    pub next_prefix: u32,
    pub checkpoint: Checkpoint,
    pub summary: UpdateSummary,
    /// Validators of the ranges since the previous record.
    pub validators: Vec<Option<Vec<u8>>>,
}

impl Record {
    fn encode(&self) -> Vec<u8> {
        let c = &self.checkpoint;
        let s = &self.summary;
        let mut b = Vec::with_capacity(128 + c.dir.len() + self.validators.len() * 24);
        b.extend_from_slice(&self.next_prefix.to_le_bytes());
        b.push(c.bucket_bits as u8);
        b.push(u8::from(c.last_bucket.is_some()));
        b.extend_from_slice(&c.last_bucket.unwrap_or(0).to_le_bytes());
        for v in [
            c.pages,
            c.written.hashes,
            c.written.total,
            c.written.duplicates,
        ] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&s.not_modified.to_le_bytes());
        b.extend_from_slice(&s.changed.to_le_bytes());
        for v in [s.added, s.removed, s.counts_changed, s.received, s.retries] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&((c.dir.len() / 12) as u32).to_le_bytes());
        b.extend_from_slice(&c.dir);
        b.extend_from_slice(&(self.validators.len() as u32).to_le_bytes());
        for v in &self.validators {
            let v = v.as_deref().filter(|v| v.len() <= 255).unwrap_or(&[]);
            b.push(v.len() as u8);
            b.extend_from_slice(v);
        }
        for v in [s.fetched, s.empty, s.past_cache] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        for list in [&s.suspect, &s.failed] {
            b.extend_from_slice(&(list.len() as u32).to_le_bytes());
            for prefix in list {
                b.extend_from_slice(&prefix.to_le_bytes());
            }
        }
        b
    }

    /// Decodes a record of an update of `kind` hashes (always whole).
    fn decode(b: &[u8], kind: Kind) -> Option<Record> {
        let mut r = Reader(b);
        let next_prefix = r.u32()?;
        let bucket_bits = u32::from(r.u8()?);
        let has_last = r.u8()? != 0;
        let last = r.u64()?;
        let pages = r.u64()?;
        let written = Written {
            hashes: r.u64()?,
            total: r.u64()?,
            duplicates: r.u64()?,
            pages: 0,
            bytes: 0,
        };
        let mut summary = UpdateSummary {
            not_modified: r.u32()?,
            changed: r.u32()?,
            added: r.u64()?,
            removed: r.u64()?,
            counts_changed: r.u64()?,
            received: r.u64()?,
            retries: r.u64()?,
            ..UpdateSummary::default()
        };
        let entries = r.u32()? as usize;
        let dir = r.take(entries.checked_mul(12)?)?.to_vec();
        let count = r.u32()? as usize;
        let mut validators = Vec::with_capacity(count.min(b.len()));
        for _ in 0..count {
            let len = usize::from(r.u8()?);
            let v = r.take(len)?;
            validators.push((!v.is_empty()).then(|| v.to_vec()));
        }
        summary.fetched = r.u32()?;
        summary.empty = r.u32()?;
        summary.past_cache = r.u32()?;
        summary.suspect = r.prefixes()?;
        summary.failed = r.prefixes()?;
        if !r.0.is_empty() {
            return None;
        }
        Some(Record {
            next_prefix,
            checkpoint: Checkpoint {
                bucket_bits,
                key_bits: kind.bits(),
                last_bucket: has_last.then_some(last),
                dir,
                pages,
                written,
            },
            summary,
            validators,
        })
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    /// A count, then that many prefixes (bounded by the bytes there are).
    fn prefixes(&mut self) -> Option<Vec<u32>> {
        let count = self.u32()? as usize;
        let bytes = self.take(count.checked_mul(4)?)?;
        Some(
            bytes
                .chunks_exact(4)
                .map(|p| u32::from_le_bytes(p.try_into().expect("4 bytes")))
                .collect(),
        )
    }
}

/// An open journal, appended to at each checkpoint.
#[derive(Debug)]
pub(crate) struct Journal {
    file: File,
}

impl Journal {
    /// A new, empty journal for `terms` (replacing any at `path`).
    pub(crate) fn create(path: &Path, terms: &Terms) -> io::Result<Journal> {
        let mut file = File::create(path)?;
        file.write_all(&terms.encode())?;
        file.sync_data()?;
        Ok(Journal { file })
    }

    /// The records of the journal at `path` made under `terms`, in order,
    /// up to the first damaged one; `None` when there is no such journal.
    /// The journal is then open for appending after the last good record.
    pub(crate) fn open(path: &Path, terms: &Terms) -> io::Result<Option<(Journal, Vec<Record>)>> {
        let mut bytes = Vec::new();
        match File::open(path) {
            Ok(mut f) => f.read_to_end(&mut bytes)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let header = terms.encode();
        if !bytes.starts_with(&header) {
            return Ok(None);
        }
        let mut records = Vec::new();
        let mut good = header.len();
        let mut r = Reader(&bytes[good..]);
        while let Some(len) = r.u32() {
            let Some(payload) = r.take(len as usize) else {
                break;
            };
            let Some(crc) = r.u32() else { break };
            if crc != crc32c::crc32c(payload) {
                break;
            }
            let Some(record) = Record::decode(payload, terms.kind) else {
                break;
            };
            records.push(record);
            good += 8 + len as usize;
        }
        let file = OpenOptions::new().write(true).open(path)?;
        // Drop a torn tail so that new records follow the last good one.
        file.set_len(good as u64)?;
        let mut journal = Journal { file };
        io::Seek::seek(&mut journal.file, io::SeekFrom::End(0))?;
        Ok(Some((journal, records)))
    }

    /// Appends a record and makes it durable.
    pub(crate) fn append(&mut self, record: &Record) -> io::Result<()> {
        let payload = record.encode();
        let mut b = Vec::with_capacity(payload.len() + 8);
        b.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        b.extend_from_slice(&payload);
        b.extend_from_slice(&crc32c::crc32c(&payload).to_le_bytes());
        self.file.write_all(&b)?;
        self.file.sync_data()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(next: u32) -> Record {
        Record {
            next_prefix: next,
            checkpoint: Checkpoint {
                bucket_bits: 30,
                key_bits: 160,
                last_bucket: Some(7),
                dir: vec![5; 24],
                pages: 2,
                written: Written {
                    hashes: 9,
                    total: 99,
                    duplicates: 1,
                    pages: 0,
                    bytes: 0,
                },
            },
            summary: UpdateSummary {
                not_modified: 3,
                changed: 4,
                added: 5,
                removed: 6,
                counts_changed: 7,
                received: 8,
                retries: 9,
                fetched: 10,
                empty: 11,
                past_cache: 12,
                suspect: vec![0x5baa6, 0xfffff],
                failed: vec![0x00010],
                ..UpdateSummary::default()
            },
            validators: vec![Some(b"\"a\"".to_vec()), None, Some(b"W/\"b\"".to_vec())],
        }
    }

    #[test]
    fn records_survive_a_torn_tail_and_other_terms_are_ignored() {
        let dir = std::env::temp_dir().join(format!("seekless-journal-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("j");
        let terms = Terms {
            kind: Kind::Sha1,
            full: false,
            url: "http://127.0.0.1:1".into(),
            old: (123, 456),
            min_count: 1,
        };
        let mut j = Journal::create(&path, &terms).unwrap();
        j.append(&record(100)).unwrap();
        j.append(&record(200)).unwrap();
        drop(j);
        let full_len = std::fs::metadata(&path).unwrap().len();
        // Torn at every byte of the second record: the first remains.
        let bytes = std::fs::read(&path).unwrap();
        let first_end = bytes.len() - (bytes.len() - terms.encode().len()) / 2;
        for cut in [bytes.len() - 1, bytes.len() - 5, first_end + 3, first_end] {
            std::fs::write(&path, &bytes[..cut]).unwrap();
            let (_, records) = Journal::open(&path, &terms).unwrap().unwrap();
            assert_eq!(records, [record(100)], "cut at {cut}");
            assert_eq!(std::fs::metadata(&path).unwrap().len() as usize, first_end);
        }
        // A flipped byte in the second record's payload.
        let mut flipped = bytes.clone();
        flipped[first_end + 10] ^= 1;
        std::fs::write(&path, &flipped).unwrap();
        let (mut j, records) = Journal::open(&path, &terms).unwrap().unwrap();
        assert_eq!(records, [record(100)]);
        // Appending goes on after the last good record.
        j.append(&record(300)).unwrap();
        let (_, records) = Journal::open(&path, &terms).unwrap().unwrap();
        assert_eq!(records, [record(100), record(300)]);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), full_len);
        // Other terms, or no journal: nothing to resume.
        for other in [
            Terms {
                full: true,
                ..terms.clone()
            },
            Terms {
                old: (123, 457),
                ..terms.clone()
            },
            Terms {
                kind: Kind::Ntlm,
                ..terms.clone()
            },
            Terms {
                min_count: 2,
                ..terms.clone()
            },
        ] {
            assert!(Journal::open(&path, &other).unwrap().is_none());
        }
        // Closed first: Windows keeps the name of an open file it was
        // asked to delete until the file is closed.
        drop(j);
        std::fs::remove_file(&path).unwrap();
        assert!(Journal::open(&path, &terms).unwrap().is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
