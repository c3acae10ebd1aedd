//! One lookup without opening the index for many: read the header, the
//! directory's checksum table, the directory block that covers the hash's
//! bucket and the hash's page. A few small reads instead of the whole
//! directory (12 bytes a page, 50 MB for a billion hashes), which is what a
//! tool started once per lookup (`okon-cli`) needs.

use std::path::Path;

use crate::error::{Error, ErrorKind, Result};
use crate::format::hash::{Key, Kind};
use crate::format::layout::{BLOCK_ENTRIES, CONTINUED, DIR_ENTRY, Header, PAGE};
use crate::format::page::Page;
use crate::read::index::{Index, parse_hex};

/// Bytes that can be read at any offset: an index file, or one in memory.
trait Source {
    fn len(&self) -> Result<u64>;
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()>;
}

impl Source for [u8] {
    fn len(&self) -> Result<u64> {
        Ok(<[u8]>::len(self) as u64)
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let start = usize::try_from(offset).map_err(|_| ErrorKind::TooLarge)?;
        let bytes = start
            .checked_add(buf.len())
            .and_then(|end| self.get(start..end))
            .ok_or_else(|| Error::corrupt("read past the end of the file"))?;
        buf.copy_from_slice(bytes);
        Ok(())
    }
}

struct FileSource<'a> {
    file: std::fs::File,
    path: &'a Path,
}

impl Source for FileSource<'_> {
    fn len(&self) -> Result<u64> {
        let meta = self.file.metadata();
        Ok(meta
            .map_err(|e| Error::io(self.path.to_path_buf(), e))?
            .len())
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        crate::file_at::read_exact_at(&self.file, buf, offset)
            .map_err(|e| Error::io(self.path.to_path_buf(), e))
    }
}

/// One directory entry: first bucket (flag removed), whether that bucket
/// continues from the previous page, and the page's checksum.
#[derive(Clone, Copy, Debug)]
struct Entry {
    first: u64,
    continued: bool,
    crc: u32,
}

/// The directory as a one-shot lookup sees it: blocks read on demand, each
/// checked against the checksum table.
struct Directory<'a, S: ?Sized> {
    src: &'a S,
    at: u64,
    pages: u64,
    table: Vec<u8>,
}

impl<S: Source + ?Sized> Directory<'_, S> {
    fn blocks(&self) -> u64 {
        self.pages.div_ceil(BLOCK_ENTRIES as u64)
    }

    fn block(&self, j: u64) -> Result<Vec<Entry>> {
        let start = j * BLOCK_ENTRIES as u64;
        let n = (self.pages - start).min(BLOCK_ENTRIES as u64) as usize;
        let mut bytes = vec![0u8; n * DIR_ENTRY];
        self.src
            .read_at(self.at + start * DIR_ENTRY as u64, &mut bytes)?;
        let want = &self.table[4 * j as usize..4 * j as usize + 4];
        if crc32c::crc32c(&bytes).to_le_bytes() != want {
            return Err(Error::corrupt(format!(
                "directory block {j} checksum mismatch"
            )));
        }
        let entries: Vec<Entry> = bytes
            .chunks_exact(DIR_ENTRY)
            .map(|e| {
                let first = u64::from_le_bytes(e[0..8].try_into().expect("8 bytes"));
                Entry {
                    first: first & !CONTINUED,
                    continued: first & CONTINUED != 0,
                    crc: u32::from_le_bytes(e[8..12].try_into().expect("4 bytes")),
                }
            })
            .collect();
        if entries.windows(2).any(|w| w[0].first > w[1].first) {
            return Err(Error::corrupt(format!(
                "directory out of order in block {j}"
            )));
        }
        Ok(entries)
    }

    fn entry(&self, i: u64) -> Result<Entry> {
        let block = self.block(i / BLOCK_ENTRIES as u64)?;
        Ok(block[(i % BLOCK_ENTRIES as u64) as usize])
    }

    /// The last page whose first bucket is ≤ `bucket`, starting from the
    /// block that holds page `guess` (hashes are uniform, so the guess is
    /// almost always in the right block or next to it).
    fn locate(&self, bucket: u64, guess: u64) -> Result<Option<(u64, Entry)>> {
        let mut j = (guess / BLOCK_ENTRIES as u64).min(self.blocks() - 1);
        let mut block = self.block(j)?;
        while block[0].first > bucket {
            if j == 0 {
                return Ok(None);
            }
            j -= 1;
            block = self.block(j)?;
        }
        while j + 1 < self.blocks() && block[block.len() - 1].first <= bucket {
            let next = self.block(j + 1)?;
            if next[0].first > bucket {
                break;
            }
            j += 1;
            block = next;
        }
        let k = block.partition_point(|e| e.first <= bucket) - 1;
        Ok(Some((j * BLOCK_ENTRIES as u64 + k as u64, block[k])))
    }
}

fn count_in<S: Source + ?Sized>(
    src: &S,
    query: impl FnOnce(Kind) -> Result<Key>,
    open_whole: impl FnOnce() -> Result<Index>,
) -> Result<u64> {
    let len = src.len()?;
    let mut head = vec![0u8; PAGE.min(len as usize)];
    src.read_at(0, &mut head)?;
    let header = Header::decode(&head)?;
    let key = query(header.layout.kind)?;
    if header.version < 2 {
        // Version 1 has one checksum over the whole directory.
        return open_whole()?.count(key);
    }
    let expected = header.file_len().ok_or(ErrorKind::TooLarge)?;
    if len != expected {
        return Err(Error::corrupt(format!(
            "file is {len} bytes, its header says {expected} (truncated or damaged)"
        )));
    }
    if head[header.len()..].iter().any(|&b| b != 0) {
        return Err(Error::corrupt("header block padding is not zero"));
    }
    let pages = header.pages;
    if pages == 0 {
        return Ok(0);
    }
    let at = PAGE as u64 * (1 + pages);
    // The file's length matches the header, so the table is a small part
    // of a file that exists: its size is bounded by the input.
    let mut table = vec![0u8; 4 * header.dir_blocks() as usize];
    src.read_at(at + DIR_ENTRY as u64 * pages, &mut table)?;
    if crc32c::crc32c(&table) != header.dir_crc {
        return Err(Error::corrupt("directory checksum table mismatch"));
    }
    let dir = Directory {
        src,
        at,
        pages,
        table,
    };
    let layout = header.layout;
    let bucket = layout.bucket(key);
    let guess = if layout.h == 0 {
        0
    } else {
        ((u128::from(bucket) * u128::from(pages)) >> layout.h) as u64
    };
    let Some((mut i, mut entry)) = dir.locate(bucket, guess.min(pages - 1))? else {
        return Ok(0);
    };
    let mut bytes = vec![0u8; PAGE];
    loop {
        src.read_at(PAGE as u64 * (1 + i), &mut bytes)?;
        if crc32c::crc32c(&bytes) != entry.crc {
            return Err(Error::corrupt(format!("page {i} checksum mismatch")));
        }
        let page = Page::new(&bytes, layout)
            .ok_or_else(|| Error::corrupt(format!("page {i} header is inconsistent")))?;
        let rel = bucket
            .checked_sub(entry.first)
            .ok_or_else(|| Error::corrupt(format!("directory out of order at page {i}")))?;
        if let Some(count) = page.count(layout, rel, key) {
            return Ok(count);
        }
        if i == 0 || !(entry.first == bucket && entry.continued) {
            return Ok(0);
        }
        i -= 1;
        entry = dir.entry(i)?;
    }
}

impl Index {
    /// The occurrence count of one hash (0 when absent) in the index file at
    /// `path`, without opening it for many lookups: reads the header, the
    /// directory's checksum table, one directory block (rarely two) and
    /// the hash's page, checking each against its checksum. For a process
    /// that answers one question and exits; use [`Index::open`] for more.
    /// Version 1 indexes are opened whole.
    pub fn count_once(path: impl AsRef<Path>, key: Key) -> Result<u64> {
        once_from_file(path.as_ref(), |_| Ok(key))
    }

    /// [`Index::count_once`] for a hash in hex (either case), parsed as
    /// the index's hash kind.
    pub fn count_once_hex(path: impl AsRef<Path>, hex: &str) -> Result<u64> {
        once_from_file(path.as_ref(), |kind| parse_hex(kind, hex))
    }

    /// [`Index::count_once`] over an index file held in memory.
    pub fn count_once_in(bytes: &[u8], key: Key) -> Result<u64> {
        count_in(bytes, |_| Ok(key), || Index::from_bytes(bytes.to_vec()))
    }
}

fn once_from_file(path: &Path, query: impl FnOnce(Kind) -> Result<Key>) -> Result<u64> {
    let result = std::fs::File::open(path)
        .map_err(|e| Error::io(path.to_path_buf(), e))
        .and_then(|file| count_in(&FileSource { file, path }, query, || Index::open(path)));
    result.map_err(|e| match e.kind() {
        ErrorKind::Corrupt { what } => Error::corrupt(format!("{}: {what}", path.display())),
        _ => e,
    })
}
