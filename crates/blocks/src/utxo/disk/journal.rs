//! The redo journal a kept set commits through (docs/format-blocks.md,
//! "The chainstate directory"): every page a commit changes, then the new
//! tip record, then a checksum over all of it. Pages are overwritten in
//! place only once the journal is synced whole, so a run killed at any
//! moment leaves either a journal that never reached its commit (removed:
//! the set is the old tip record's) or a committed one (replayed: the set
//! is the new tip record's). Replaying twice does what replaying once does.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

#[cfg(test)]
use super::file_at::read_exact_at;
use super::file_at::write_all_at;
use super::tip::TIP_LEN;
use crate::error::{Error, ErrorKind, Result};

/// The journal's first bytes.
pub(crate) const JOURNAL_MAGIC: [u8; 8] = *b"SLJOURNL";
/// The journal format's version.
const JOURNAL_VERSION: u32 = 1;
/// Magic and version.
const HEADER_LEN: usize = 12;
/// A page: tag, partition, page number (u64), the page.
const TAG_PAGE: u8 = 1;
/// The commit: tag, the tip record, the checksum of everything before it.
const TAG_COMMIT: u8 = 2;
/// Bytes of a page entry after its tag.
const PAGE_ENTRY: usize = 1 + 8 + PAGE;
/// Bytes of a partition's page (`pages.rs`, which writes through this
/// module, holds pages of this size).
pub(super) const PAGE: usize = 4096;
/// Bytes buffered before a write.
const BUFFER: usize = 1 << 20;

/// A journal being written.
pub(crate) struct JournalWriter {
    path: PathBuf,
    file: File,
    /// Bytes written to the file.
    written: u64,
    buffer: Vec<u8>,
    /// CRC-32C of everything so far, buffered bytes included.
    crc: u32,
}

/// A place in the journal to go back to: bytes and checksum there.
#[derive(Clone, Copy)]
pub(crate) struct Mark(u64, u32);

impl JournalWriter {
    /// A new journal at `path`, replacing any.
    pub(crate) fn create(path: PathBuf) -> Result<Self> {
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .map_err(|e| Error::io(&path, "create", e))?;
        let mut journal = JournalWriter {
            path,
            file,
            written: 0,
            buffer: Vec::with_capacity(BUFFER + PAGE_ENTRY + 1),
            crc: 0,
        };
        let mut header = JOURNAL_MAGIC.to_vec();
        header.extend_from_slice(&JOURNAL_VERSION.to_le_bytes());
        journal.push(&header)?;
        Ok(journal)
    }

    fn push(&mut self, bytes: &[u8]) -> Result<()> {
        self.crc = crc32c::crc32c_append(self.crc, bytes);
        self.buffer.extend_from_slice(bytes);
        if self.buffer.len() >= BUFFER {
            self.drain()?;
        }
        Ok(())
    }

    fn drain(&mut self) -> Result<()> {
        write_all_at(&self.file, &self.buffer, self.written)
            .map_err(|e| Error::io(&self.path, "write", e))?;
        self.written += self.buffer.len() as u64;
        self.buffer.clear();
        Ok(())
    }

    /// Where the journal is now.
    pub(crate) fn mark(&self) -> Mark {
        Mark(self.written + self.buffer.len() as u64, self.crc)
    }

    /// Forgets what was put after `mark`.
    pub(crate) fn rollback(&mut self, mark: Mark) -> Result<()> {
        if mark.0 >= self.written {
            self.buffer.truncate((mark.0 - self.written) as usize);
        } else {
            self.buffer.clear();
            self.file
                .set_len(mark.0)
                .map_err(|e| Error::io(&self.path, "truncate", e))?;
            self.written = mark.0;
        }
        self.crc = mark.1;
        Ok(())
    }

    /// Adds page `page` of partition `part`.
    pub(crate) fn put(&mut self, part: u8, page: u64, bytes: &[u8]) -> Result<()> {
        let mut head = [0u8; 10];
        head[0] = TAG_PAGE;
        head[1] = part;
        head[2..].copy_from_slice(&page.to_le_bytes());
        self.push(&head)?;
        self.push(bytes)
    }

    /// Ends the journal with the tip record and its checksum, and syncs
    /// it: the commit point.
    pub(crate) fn commit(mut self, tip: &[u8; TIP_LEN]) -> Result<()> {
        self.push(&[TAG_COMMIT])?;
        self.push(tip)?;
        let crc = self.crc;
        self.push(&crc.to_le_bytes())?;
        self.drain()?;
        self.file
            .sync_data()
            .map_err(|e| Error::io(&self.path, "sync", e))
    }
}

/// A visitor of a journal's pages: partition, page number, bytes.
pub(crate) type PageVisit<'a> = dyn FnMut(u8, u64, &[u8]) -> Result<()> + 'a;

/// What a journal holds.
#[derive(Debug)]
pub(crate) enum Journal {
    /// It ends before its commit (a run killed while writing it): its
    /// pages were never written in place.
    Torn,
    /// It is whole: its tip record's bytes.
    Committed(Box<[u8; TIP_LEN]>),
}

/// Reads a journal from `src`, calling `page` with each page entry
/// (partition, page number, bytes) before knowing whether it commits.
/// A journal that is whole but fails its checksum, or holds an entry of
/// no known kind, is refused: it names `path`.
pub(crate) fn read_journal(
    src: impl Read,
    path: &Path,
    page: &mut PageVisit<'_>,
) -> Result<Journal> {
    let damaged = |reason: &str| -> Error {
        ErrorKind::BadState {
            path: path.to_path_buf(),
            reason: format!("journal {reason}"),
        }
        .into()
    };
    let mut src = BufReader::new(src);
    let mut header = [0u8; HEADER_LEN];
    if !fill(&mut src, &mut header, path)? {
        return Ok(Journal::Torn);
    }
    if header[..8] != JOURNAL_MAGIC {
        return Err(damaged("has the wrong magic"));
    }
    let version = u32::from_le_bytes(header[8..].try_into().expect("4 bytes"));
    if version != JOURNAL_VERSION {
        return Err(damaged(&format!(
            "version {version} is not {JOURNAL_VERSION} (made by another seekless)"
        )));
    }
    let mut crc = crc32c::crc32c(&header);
    let mut entry = vec![0u8; PAGE_ENTRY];
    loop {
        let mut tag = [0u8; 1];
        if !fill(&mut src, &mut tag, path)? || tag[0] == 0 {
            // Ended, or zeros where the file was extended and not written.
            return Ok(Journal::Torn);
        }
        crc = crc32c::crc32c_append(crc, &tag);
        match tag[0] {
            TAG_PAGE => {
                if !fill(&mut src, &mut entry, path)? {
                    return Ok(Journal::Torn);
                }
                crc = crc32c::crc32c_append(crc, &entry);
                let number = u64::from_le_bytes(entry[1..9].try_into().expect("8 bytes"));
                page(entry[0], number, &entry[9..])?;
            }
            TAG_COMMIT => {
                let mut tip = Box::new([0u8; TIP_LEN]);
                let mut sum = [0u8; 4];
                if !fill(&mut src, &mut tip[..], path)? || !fill(&mut src, &mut sum, path)? {
                    return Ok(Journal::Torn);
                }
                crc = crc32c::crc32c_append(crc, &tip[..]);
                if u32::from_le_bytes(sum) != crc {
                    return Err(damaged("fails its checksum"));
                }
                if fill(&mut src, &mut tag, path)? {
                    return Err(damaged("has bytes after its commit"));
                }
                return Ok(Journal::Committed(tip));
            }
            other => return Err(damaged(&format!("has an entry of unknown kind {other}"))),
        }
    }
}

/// Fills `buf`; false when the source ends first.
fn fill(src: &mut impl Read, buf: &mut [u8], path: &Path) -> Result<bool> {
    let mut at = 0;
    while at < buf.len() {
        match src.read(&mut buf[at..]) {
            Ok(0) => return Ok(false),
            Ok(n) => at += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(path, "read", e)),
        }
    }
    Ok(true)
}

/// Replays the journal at `path` into the partition files of `dir`, when
/// it commits: returns its tip record, after syncing what it wrote. A torn
/// journal writes nothing.
pub(crate) fn replay(dir: &Path, path: &Path) -> Result<Journal> {
    let open = || File::open(path).map_err(|e| Error::io(path, "open", e));
    match read_journal(open()?, path, &mut |_, _, _| Ok(()))? {
        Journal::Torn => return Ok(Journal::Torn),
        Journal::Committed(_) => {}
    }
    let mut files: Vec<Option<(PathBuf, File, u64)>> = (0..256).map(|_| None).collect();
    let journal = read_journal(open()?, path, &mut |part, number, bytes| {
        let slot = &mut files[part as usize];
        if slot.is_none() {
            let name = dir.join(format!("part-{part:02x}"));
            let file = File::options()
                .read(true)
                .write(true)
                .open(&name)
                .map_err(|e| Error::io(&name, "open", e))?;
            let len = file.metadata().map_err(|e| Error::io(&name, "read", e))?;
            *slot = Some((name, file, len.len()));
        }
        let (name, file, len) = slot.as_ref().expect("opened above");
        let at = number.checked_mul(PAGE as u64).filter(|at| at < len);
        let Some(at) = at else {
            return Err(ErrorKind::BadState {
                path: path.to_path_buf(),
                reason: format!(
                    "journal writes page {number} past the end of {}",
                    name.display()
                ),
            }
            .into());
        };
        write_all_at(file, bytes, at).map_err(|e| Error::io(name, "write", e))
    })?;
    for (name, file, _) in files.iter().flatten() {
        file.sync_data().map_err(|e| Error::io(name, "sync", e))?;
    }
    Ok(journal)
}

/// Reads back `len` bytes at `offset` of `file` (tests of the journal).
#[cfg(test)]
fn read_back(file: &File, len: usize, offset: u64) -> Vec<u8> {
    let mut buf = vec![0u8; len];
    read_exact_at(file, &mut buf, offset).unwrap();
    buf
}

#[cfg(test)]
mod tests {
    use super::*;

    fn journal(dir: &Path, pages: &[(u8, u64, u8)], tip: Option<u8>) -> PathBuf {
        let path = dir.join("journal");
        let mut writer = JournalWriter::create(path.clone()).unwrap();
        for &(part, number, fill) in pages {
            writer.put(part, number, &[fill; PAGE]).unwrap();
        }
        if let Some(fill) = tip {
            writer.commit(&[fill; TIP_LEN]).unwrap();
        } else {
            writer.drain().unwrap();
        }
        path
    }

    #[test]
    fn committed_journals_replay_torn_ones_do_not() {
        let dir = fresh_dir("journal");
        std::fs::write(dir.join("part-03"), vec![0u8; 4 * PAGE]).unwrap();
        let path = journal(&dir, &[(3, 1, 7), (3, 3, 9)], None);
        assert!(matches!(replay(&dir, &path).unwrap(), Journal::Torn));
        let path = journal(&dir, &[(3, 1, 7), (3, 3, 9)], Some(5));
        let Journal::Committed(tip) = replay(&dir, &path).unwrap() else {
            panic!("committed");
        };
        assert_eq!(tip[..], [5; TIP_LEN]);
        let file = File::open(dir.join("part-03")).unwrap();
        assert_eq!(read_back(&file, PAGE, PAGE as u64), vec![7; PAGE]);
        assert_eq!(read_back(&file, PAGE, 3 * PAGE as u64), vec![9; PAGE]);
        assert_eq!(read_back(&file, PAGE, 0), vec![0; PAGE]);
        // Every cut of a committed journal is torn; a flipped byte is refused.
        let bytes = std::fs::read(&path).unwrap();
        for cut in [
            0,
            5,
            HEADER_LEN,
            HEADER_LEN + 1,
            bytes.len() - 4,
            bytes.len() - 1,
        ] {
            let read = read_journal(&bytes[..cut], &path, &mut |_, _, _| Ok(()));
            assert!(matches!(read, Ok(Journal::Torn)), "cut at {cut}");
        }
        for at in [HEADER_LEN + 3, bytes.len() - 2] {
            let mut flipped = bytes.clone();
            flipped[at] ^= 1;
            let error = read_journal(&flipped[..], &path, &mut |_, _, _| Ok(())).unwrap_err();
            assert!(error.to_string().contains("checksum"), "{error}");
        }
        // A rollback forgets pages put after the mark.
        let path = dir.join("journal");
        let mut writer = JournalWriter::create(path.clone()).unwrap();
        writer.put(3, 0, &[1; PAGE]).unwrap();
        let mark = writer.mark();
        for _ in 0..300 {
            writer.put(3, 2, &[2; PAGE]).unwrap();
        }
        writer.rollback(mark).unwrap();
        writer.commit(&[6; TIP_LEN]).unwrap();
        let mut seen = Vec::new();
        let file = File::open(&path).unwrap();
        read_journal(file, &path, &mut |part, number, bytes| {
            seen.push((part, number, bytes[0]));
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, [(3, 0, 1)]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn fresh_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("seekless-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).unwrap();
        dir
    }
}
