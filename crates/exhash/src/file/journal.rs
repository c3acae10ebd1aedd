//! The journal: a commit of a few changes appends them, key by key, to an
//! extent of the file in one write and one sync, instead of writing every
//! page they touched and the metadata (`docs/format-exhash.md`, "Journal").
//! The pages go out at the next *checkpoint*, a commit by shadow paging
//! (`commit.rs`), when the journal is full or cannot hold a change.

use super::header::{u32_at, u64_at};
use crate::error::Error;
use crate::format::SLOT_SIZE;

/// Magic bytes at the start of each journal block.
pub(super) const BLOCK_MAGIC: [u8; 8] = *b"SLEXJRNL";
/// Bytes of a block before its records.
pub(super) const BLOCK_HEAD: usize = 40;
/// Blocks start on multiples of this within the extent, so that writing
/// one never rewrites a sector an earlier, committed block lies in.
pub(super) const BLOCK_ALIGN: usize = 4096;
/// Record kinds: a put (key, value) and a removal (key).
const PUT: u8 = 1;
const REMOVE: u8 = 2;
/// The journal's extent in slots: an eighth of the live pages, within
/// these bounds (128 KiB to 16 MiB).
const MIN_SLOTS: u64 = 16;
const MAX_SLOTS: u64 = 2048;

/// The journal of a file store: where its extent is, how much of it the
/// commits since the last checkpoint fill, and the changes since the last
/// commit, as records.
#[derive(Debug, Default)]
pub(super) struct Journal {
    /// First slot and number of slots of the extent (0 slots: none).
    pub(super) extent: (u64, u64),
    /// Bytes of the extent the blocks since the last checkpoint fill.
    pub(super) end: u64,
    /// Sequence number of the checkpoint the blocks belong to.
    pub(super) checkpoint: u64,
    /// The checksum of the last block (0 before the first): each block's
    /// checksum goes on from it, so a stale block that follows the end
    /// with the next number does not read as the next one.
    pub(super) last_crc: u32,
    /// The changes since the last commit, encoded as records.
    records: Vec<u8>,
    /// Whether the changes since the last commit were made key by key: not
    /// after a load, an upgrade, a failed write, or more than the largest
    /// journal holds.
    open: bool,
}

impl Journal {
    /// Record a put (`Some(value)`) or removal of `key`.
    #[inline]
    pub(super) fn note(&mut self, key: u64, value: Option<u64>) {
        if !self.open {
            return;
        }
        match value {
            Some(v) => {
                self.records.push(PUT);
                self.records.extend_from_slice(&key.to_le_bytes());
                self.records.extend_from_slice(&v.to_le_bytes());
            }
            None => {
                self.records.push(REMOVE);
                self.records.extend_from_slice(&key.to_le_bytes());
            }
        }
        if self.records.len() as u64 > MAX_SLOTS * SLOT_SIZE {
            self.close();
        }
    }

    /// The changes since the last commit cannot be journaled: the next
    /// commit is a checkpoint.
    pub(super) fn close(&mut self) {
        self.open = false;
        self.records = Vec::new();
    }

    /// Whether the changes since the last commit are none.
    pub(super) fn is_clean(&self) -> bool {
        self.open && self.records.is_empty()
    }

    /// The block to append for commit `seq`, leaving the table with
    /// `entries`: None if the changes must go out by a checkpoint.
    pub(super) fn block(&self, seq: u64, entries: u64) -> Option<Vec<u8>> {
        if !self.open || self.extent.1 == 0 {
            return None;
        }
        let len = (BLOCK_HEAD + self.records.len()).next_multiple_of(BLOCK_ALIGN);
        if self.end + len as u64 > self.extent.1 * SLOT_SIZE {
            return None;
        }
        let mut b = Vec::with_capacity(len);
        b.extend_from_slice(&BLOCK_MAGIC);
        b.extend_from_slice(&self.checkpoint.to_le_bytes());
        b.extend_from_slice(&seq.to_le_bytes());
        b.extend_from_slice(&entries.to_le_bytes());
        b.extend_from_slice(&(self.records.len() as u32).to_le_bytes());
        let crc = crc32c::crc32c_append(crc32c::crc32c_append(self.last_crc, &b), &self.records);
        b.extend_from_slice(&crc.to_le_bytes());
        b.extend_from_slice(&self.records);
        b.resize(len, 0);
        Some(b)
    }

    /// Byte offset in the file of the next block.
    pub(super) fn next_offset(&self) -> u64 {
        self.extent.0 * SLOT_SIZE + self.end
    }

    /// The block `block` was written and synced, or read back.
    pub(super) fn appended(&mut self, block: &[u8]) {
        self.end += block.len() as u64;
        self.last_crc = u32_at(block, 36);
        self.records.clear();
    }

    /// A checkpoint of sequence number `seq` made every change durable;
    /// its header names `extent`.
    pub(super) fn restart(&mut self, seq: u64, extent: (u64, u64)) {
        *self = Journal {
            extent,
            end: 0,
            checkpoint: seq,
            last_crc: 0,
            records: Vec::new(),
            open: true,
        };
    }

    /// The size of a new extent a checkpoint should name for a table of
    /// `pages` live pages, or None to keep the current one: kept unless it
    /// is far from the size wanted. A table changed other than key by key
    /// (a load) gets none until it is.
    pub(super) fn wanted_slots(&self, pages: usize) -> Option<u64> {
        let want = (pages as u64 / 8).clamp(MIN_SLOTS, MAX_SLOTS);
        let have = self.extent.1;
        (self.open && (have < want || have > 4 * want)).then_some(want)
    }
}

/// A change read back from a journal block.
pub(super) enum Change {
    Put(u64, u64),
    Remove(u64),
}

/// A valid block read from a journal extent.
pub(super) struct Block<'a> {
    /// Entries in the table after its changes.
    pub(super) entries: u64,
    records: &'a [u8],
    /// Offset of the records in the file, for errors.
    pub(super) records_at: u64,
    /// The block's bytes in the extent (up to its end, or the extent's).
    pub(super) bytes: &'a [u8],
}

impl Journal {
    /// The next block at the start of `bytes` (the rest of the extent, at
    /// file offset `at`): the one for the next commit after the last read,
    /// its checksum going on from that block's. None where the journal ends
    /// (a blank, stale or torn block).
    pub(super) fn read_next<'a>(&self, bytes: &'a [u8], at: u64, seq: u64) -> Option<Block<'a>> {
        let head = bytes.get(..BLOCK_HEAD)?;
        if head[..8] != BLOCK_MAGIC || u64_at(head, 8) != self.checkpoint || u64_at(head, 16) != seq
        {
            return None;
        }
        let n = u32_at(head, 32) as usize;
        let records = bytes.get(BLOCK_HEAD..BLOCK_HEAD.checked_add(n)?)?;
        let crc = crc32c::crc32c_append(crc32c::crc32c_append(self.last_crc, &head[..36]), records);
        if crc != u32_at(head, 36) {
            return None;
        }
        let len = (BLOCK_HEAD + n).next_multiple_of(BLOCK_ALIGN);
        Some(Block {
            entries: u64_at(head, 24),
            records,
            records_at: at + BLOCK_HEAD as u64,
            bytes: bytes.get(..len).unwrap_or(bytes),
        })
    }
}

impl Block<'_> {
    /// The block's changes in order; an error names the first record that
    /// is not one.
    pub(super) fn changes(&self) -> impl Iterator<Item = Result<Change, Error>> + '_ {
        let mut at = 0;
        std::iter::from_fn(move || {
            let r = &self.records[at..];
            let kind = *r.first()?;
            let (change, len) = match (kind, r.len()) {
                (PUT, 17..) => (Change::Put(u64_at(r, 1), u64_at(r, 9)), 17),
                (REMOVE, 9..) => (Change::Remove(u64_at(r, 1)), 9),
                _ => {
                    let error = Error::corrupt(self.records_at + at as u64, "bad journal record");
                    at = self.records.len();
                    return Some(Err(error));
                }
            };
            at += len;
            Some(Ok(change))
        })
    }
}
