//! Reading a gzip ranges file (`INDEX.gz-ranges`, see
//! [`crate::format::gzip_ranges`]): each range's gzip member as a slice of
//! the mapped file, checked against its checksum the first time it is
//! asked for, as an index's pages are.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};
use crate::format::gzip_ranges::{CRCS_AT, Header, MEMBERS_AT, OFFSETS_AT, binding, damaged};
use crate::format::source::RANGES;
use crate::read::index::Index;

/// The gzip ranges file of an index: every range's answer, as `serve`
/// renders it without padding, compressed once as one gzip member.
///
/// Like an index, the file must not be rewritten in place while open;
/// `prepare`, `update` and `gzip-ranges` write a new one and rename it over
/// the old.
#[derive(Debug)]
pub struct GzipRanges {
    map: memmap2::Mmap,
    path: PathBuf,
    level: u8,
    /// Ranges whose member's checksum has been checked.
    checked: Box<[AtomicU64]>,
}

impl GzipRanges {
    /// Where the gzip ranges file of the index at `index` lives: beside it,
    /// its name followed by `.gz-ranges`.
    pub fn path_for(index: &Path) -> PathBuf {
        let mut name = index.as_os_str().to_owned();
        name.push(".gz-ranges");
        PathBuf::from(name)
    }

    /// Opens the gzip ranges file at `path`, made from `index`: its header,
    /// size and tables are checked (a few milliseconds), each member when
    /// first read. A file made from another index, damaged, cut short or
    /// of a newer format is refused ([`crate::ErrorKind::GzipRanges`],
    /// naming the file).
    pub fn open(path: &Path, index: &Index) -> Result<GzipRanges> {
        let file = File::open(path).map_err(|e| Error::io(path.to_path_buf(), e))?;
        // SAFETY: seekless writes these files once, under a temporary name,
        // and renames them into place, as it does indexes; every read of
        // the mapping is bounds-checked and every member checksummed.
        let map =
            unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io(path.to_path_buf(), e))?;
        #[cfg(unix)]
        let _ = map.advise(memmap2::Advice::Random);
        let named = |e: Error| damaged(format!("{}: {}", path.display(), e));
        let header = Header::decode(&map).map_err(named)?;
        if map.len() < MEMBERS_AT {
            return Err(named(damaged("shorter than its tables")));
        }
        if crc32c::crc32c(&map[OFFSETS_AT..MEMBERS_AT]) != header.tables_crc {
            return Err(named(damaged("tables checksum mismatch")));
        }
        if header.binding != binding(index.header_bytes()) {
            return Err(named(damaged(
                "made from another index (run `seekless pwned gzip-ranges` on the index)",
            )));
        }
        let ranges = GzipRanges {
            map,
            path: path.to_path_buf(),
            level: header.level,
            checked: (0..RANGES / 64).map(|_| AtomicU64::new(0)).collect(),
        };
        let mut end = MEMBERS_AT as u64;
        for prefix in 0..RANGES {
            let (start, next) = ranges.bounds(prefix);
            if start != end || next < start {
                return Err(named(damaged(format!(
                    "member offsets out of order at range {prefix:05X}"
                ))));
            }
            end = next;
        }
        if end != ranges.map.len() as u64 {
            return Err(named(damaged(format!(
                "file is {} bytes, its tables say {end} (truncated or damaged)",
                ranges.map.len()
            ))));
        }
        Ok(ranges)
    }

    /// Where the file was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The compression level of its members (libdeflate's 1..=12).
    pub fn level(&self) -> u8 {
        self.level
    }

    /// The file's size in bytes.
    pub fn len(&self) -> u64 {
        self.map.len() as u64
    }

    /// Whether the file is empty (never: it has at least its tables).
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The member offsets of `prefix` (checked in order by [`open`]).
    ///
    /// [`open`]: GzipRanges::open
    fn bounds(&self, prefix: u32) -> (u64, u64) {
        let at = OFFSETS_AT + 8 * prefix as usize;
        let word =
            |at: usize| u64::from_le_bytes(self.map[at..at + 8].try_into().expect("8 bytes"));
        (word(at), word(at + 8))
    }

    /// Where range `prefix`'s member lies in the file (checked against its
    /// checksum the first time), for a caller that holds the mapping by
    /// other means; see [`GzipRanges::member`].
    pub fn member_span(&self, prefix: u32) -> Result<std::ops::Range<usize>> {
        if prefix >= RANGES {
            return Err(damaged(format!("no range {prefix:X}")));
        }
        let (start, end) = self.bounds(prefix);
        // `open` checked the offsets run in order up to the file's end.
        let span = start as usize..end as usize;
        let (word, bit) = (prefix as usize / 64, 1u64 << (prefix % 64));
        if self.checked[word].load(Ordering::Relaxed) & bit == 0 {
            let at = CRCS_AT + 4 * prefix as usize;
            let crc = u32::from_le_bytes(self.map[at..at + 4].try_into().expect("4 bytes"));
            if crc32c::crc32c(&self.map[span.clone()]) != crc {
                return Err(damaged(format!(
                    "{}: range {prefix:05X}'s member checksum mismatch",
                    self.path.display()
                )));
            }
            self.checked[word].fetch_or(bit, Ordering::Relaxed);
        }
        Ok(span)
    }

    /// Range `prefix`'s gzip member.
    pub fn member(&self, prefix: u32) -> Result<&[u8]> {
        Ok(&self.map[self.member_span(prefix)?])
    }

    /// The whole mapped file (members are slices of it: [`GzipRanges::member_span`]).
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// Checks every member: its checksum, and that it inflates to exactly
    /// the range's answer as rendered from `index` now.
    pub fn verify(&self, index: &Index) -> Result<()> {
        let mut plain = Vec::new();
        for prefix in 0..RANGES {
            let member = self.member(prefix)?;
            plain.clear();
            index.write_range(prefix, &mut plain)?;
            let inflated = crate::range::gzip::gunzip_whole(member, plain.len());
            if inflated.as_deref() != Some(plain.as_slice()) {
                return Err(damaged(format!(
                    "{}: range {prefix:05X}'s member does not inflate to the range's answer",
                    self.path.display()
                )));
            }
        }
        Ok(())
    }
}
