//! Spill files, one per partition: written on a thread of their own and read
//! back past the page cache where the file system allows it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, mpsc};

use super::*;
use crate::error::{Error, Result};
use crate::file_at::{read_full_at, write_all_at};
use crate::prepare::direct_io::{self, Aligned};
use crate::prepare::sort::{self, RECORD_BYTES, Record};
use crate::tmpfile::Nameless;

/// Spill files, one per partition, created when first needed.
#[derive(Debug)]
pub(crate) struct Spill {
    pub(super) root: PathBuf,
    pub(super) files: Vec<Mutex<Option<SpillFile>>>,
    pub bytes: AtomicU64,
    /// Records spilled, per partition.
    pub records: Vec<AtomicU64>,
    /// Whether direct I/O is tried (it is until a file system refuses it).
    pub(super) direct: bool,
}

/// One partition's spill file.
#[derive(Debug)]
pub(super) struct SpillFile {
    pub(super) file: Nameless,
    /// Bytes written.
    pub(super) len: u64,
    /// Whether direct I/O is still worth trying for this file.
    pub(super) direct: bool,
}

impl Spill {
    /// Spill files in `root` for `parts` partitions.
    pub(crate) fn new(root: &Path, parts: usize) -> Spill {
        Spill {
            root: root.to_path_buf(),
            files: (0..parts).map(|_| Mutex::new(None)).collect(),
            bytes: AtomicU64::new(0),
            records: (0..parts).map(|_| AtomicU64::new(0)).collect(),
            direct: cfg!(target_os = "linux"),
        }
    }

    /// Partitions, a file each.
    pub(crate) fn parts(&self) -> usize {
        self.files.len()
    }

    /// Appends `records` to partition `p`'s file: past the page cache when
    /// their memory, length and place in the file are aligned for it (a
    /// whole segment's are), else encoded a piece at a time in `encoded`.
    pub(crate) fn write(&self, p: usize, records: &[Record], encoded: &mut Vec<u8>) -> Result<()> {
        let mut file = self.files[p].lock().expect("spill lock");
        if file.is_none() {
            let created = Nameless::scratch(&self.root, "spill")
                .map_err(|e| Error::io(self.root.clone(), e))?;
            *file = Some(SpillFile {
                file: created,
                len: 0,
                direct: self.direct,
            });
        }
        let f = file.as_mut().expect("created above");
        let io_err = |e| Error::io(self.root.clone(), e);
        let mut written = false;
        if cfg!(target_endian = "little") {
            // The records' memory is their encoding.
            let bytes = sort::as_bytes(records);
            if f.direct && direct_io::aligned(bytes, f.len) {
                match direct_io::write_direct(&f.file.file, bytes, f.len) {
                    Ok(()) => written = true,
                    Err(e) if direct_io::refused(&e) => f.direct = false,
                    Err(e) => return Err(io_err(e)),
                }
            }
            if !written {
                write_all_at(&f.file.file, bytes, f.len).map_err(io_err)?;
            }
            f.len += bytes.len() as u64;
        } else {
            for piece in records.chunks(SPILL_PIECE) {
                encoded.clear();
                for r in piece {
                    r.write(encoded);
                }
                write_all_at(&f.file.file, encoded, f.len).map_err(io_err)?;
                f.len += encoded.len() as u64;
            }
        }
        self.bytes
            .fetch_add((records.len() * RECORD_BYTES) as u64, Ordering::Relaxed);
        self.records[p].fetch_add(records.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Writes the segments sent through `jobs` (by holders made
    /// [`Partitions::with_writer`]) in the order sent, and sends each back
    /// with how its write went; returns once every sender is gone. Runs
    /// on a thread of its own.
    pub(crate) fn serve(&self, jobs: mpsc::Receiver<SpillJob<'_>>) {
        let mut encoded = Vec::new();
        for job in jobs {
            let written = self.write(job.p, &job.segment, &mut encoded);
            let _ = job.done.send((written, job.segment));
        }
    }

    /// Partition `p`'s spilled records (none if it has none), read into
    /// `memory` (reused; past the page cache where the file system allows
    /// it); its file goes away with its handle.
    pub(crate) fn read<'m>(&self, p: usize, memory: &'m mut Aligned) -> Result<&'m [Record]> {
        let Some(spilled) = self.files[p].lock().expect("spill lock").take() else {
            return Ok(&[]);
        };
        let io_err = |e| Error::io(self.root.clone(), e);
        let file = &spilled.file.file;
        let len = file.metadata().map_err(io_err)?.len();
        let torn = || {
            Error::corrupt(format!(
                "spill file of partition {p} in {} is torn",
                self.root.display()
            ))
        };
        let len = usize::try_from(len).map_err(|_| torn())?;
        if !len.is_multiple_of(RECORD_BYTES) {
            return Err(torn());
        }
        // Room for whole blocks: a direct read asks for them, and the last
        // one ends at the end of the file.
        let bytes = memory.first_mut(direct_io::align_up(len));
        let mut read = None;
        if spilled.direct {
            match direct_io::read_direct(file, bytes, 0) {
                Ok(n) => read = Some(n),
                Err(e) if direct_io::refused(&e) => {}
                Err(e) => return Err(io_err(e)),
            }
        }
        let n = match read {
            Some(n) => n,
            None => read_full_at(file, &mut bytes[..len], 0).map_err(io_err)?,
        };
        if n != len {
            return Err(torn());
        }
        let records = sort::records_mut(&mut bytes[..len]);
        // Each record made from its encoding (nothing to do on a
        // little-endian machine).
        if cfg!(target_endian = "big") {
            for r in records.iter_mut() {
                *r = r.decoded();
            }
        }
        Ok(records)
    }
}
