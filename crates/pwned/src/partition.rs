//! Records held by partition, the top 8 bits of their hash: one bounded
//! buffer per partition per holder, and a spill file per partition that
//! full buffers are appended to. A partition is sorted and packed on its
//! own once every record is read.

use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};
use crate::input;
use crate::nameless::Nameless;
use crate::sort::{self, RECORD_BYTES, Record, Sink};

/// Partitions by the top bits of the hash.
pub(crate) const PART_BITS: u32 = 8;
pub(crate) const PARTS: usize = 1 << PART_BITS;

/// Records encoded at a time on their way to a spill file.
const SPILL_PIECE: usize = 1 << 16;

/// One holder's partition buffers, spilling a buffer when it is full.
#[derive(Debug)]
pub(crate) struct Partitions<'a> {
    pub buffers: Vec<Vec<Record>>,
    /// Records a buffer holds before it is spilled.
    pub per_buffer: usize,
    pub spill: &'a Spill,
    /// Spilled records' bytes, a piece at a time (memory reused).
    encoded: Vec<u8>,
}

impl<'a> Partitions<'a> {
    pub(crate) fn new(per_buffer: usize, spill: &'a Spill) -> Partitions<'a> {
        Partitions {
            buffers: (0..PARTS).map(|_| Vec::new()).collect(),
            per_buffer,
            spill,
            encoded: Vec::new(),
        }
    }
}

impl Sink for Partitions<'_> {
    #[inline]
    fn put(&mut self, record: Record) -> Result<()> {
        let p = (record.hi >> (64 - PART_BITS)) as usize;
        let buffer = &mut self.buffers[p];
        if buffer.capacity() == 0 {
            buffer.reserve_exact(self.per_buffer);
        }
        buffer.push(record);
        if buffer.len() >= self.per_buffer {
            self.spill.write(p, buffer, &mut self.encoded)?;
            buffer.clear();
        }
        Ok(())
    }
}

/// Spill files, one per partition, created when first needed.
#[derive(Debug)]
pub(crate) struct Spill {
    root: PathBuf,
    files: Vec<Mutex<Option<Nameless>>>,
    pub bytes: AtomicU64,
    /// Records spilled, per partition.
    pub records: Vec<AtomicU64>,
}

impl Spill {
    pub(crate) fn new(root: &Path) -> Spill {
        Spill {
            root: root.to_path_buf(),
            files: (0..PARTS).map(|_| Mutex::new(None)).collect(),
            bytes: AtomicU64::new(0),
            records: (0..PARTS).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Appends `records` to partition `p`'s file, encoded a piece at a time
    /// in `encoded`.
    pub(crate) fn write(&self, p: usize, records: &[Record], encoded: &mut Vec<u8>) -> Result<()> {
        let mut file = self.files[p].lock().expect("spill lock");
        if file.is_none() {
            let created = Nameless::scratch(&self.root, "spill")
                .map_err(|e| Error::io(self.root.clone(), e))?;
            *file = Some(created);
        }
        let f = &mut file.as_mut().expect("created above").file;
        let io_err = |e| Error::io(self.root.clone(), e);
        if cfg!(target_endian = "little") {
            // The records' memory is their encoding.
            f.write_all(sort::as_bytes(records)).map_err(io_err)?;
        } else {
            for piece in records.chunks(SPILL_PIECE) {
                encoded.clear();
                for r in piece {
                    r.write(encoded);
                }
                f.write_all(encoded).map_err(io_err)?;
            }
        }
        self.bytes
            .fetch_add((records.len() * RECORD_BYTES) as u64, Ordering::Relaxed);
        self.records[p].fetch_add(records.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Appends partition `p`'s spilled records to `out`; its file goes
    /// away with its handle.
    pub(crate) fn read(&self, p: usize, out: &mut Vec<Record>) -> Result<()> {
        let Some(spilled) = self.files[p].lock().expect("spill lock").take() else {
            return Ok(());
        };
        let io_err = |e| Error::io(self.root.clone(), e);
        let mut file = &spilled.file;
        let len = file.metadata().map_err(io_err)?.len();
        let torn = || {
            Error::corrupt(format!(
                "spill file of partition {p} in {} is torn",
                self.root.display()
            ))
        };
        if len % RECORD_BYTES as u64 != 0 {
            return Err(torn());
        }
        // Read straight into the records' memory, then each made from its
        // encoding (nothing to do on a little-endian machine).
        let start = out.len();
        out.resize(
            start + (len / RECORD_BYTES as u64) as usize,
            Record::default(),
        );
        file.seek(SeekFrom::Start(0)).map_err(io_err)?;
        let read = &mut out[start..];
        let n = input::fill(&mut file, sort::as_bytes_mut(read)).map_err(io_err)?;
        if n != read.len() * RECORD_BYTES {
            return Err(torn());
        }
        for r in read {
            *r = r.decoded();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spilled_records_come_back_as_written_and_a_torn_file_is_an_error() {
        let dir = std::env::temp_dir().join(format!("seekless-spill-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let spill = Spill::new(&dir);
        let mut next = crate::testing::rng(0x5111);
        let records: Vec<Record> = (0..70_000)
            .map(|_| Record {
                hi: next(),
                mid: next(),
                lo: next() as u32,
                count: next() as u32,
            })
            .collect();
        let mut encoded = Vec::new();
        // In two writes, the second longer than an encoding piece.
        spill.write(7, &records[..100], &mut encoded).unwrap();
        spill.write(7, &records[100..], &mut encoded).unwrap();
        assert_eq!(spill.records[7].load(Ordering::Relaxed), 70_000);
        assert_eq!(spill.bytes.load(Ordering::Relaxed), 70_000 * 24);
        // Appended to what is already there; a partition never written
        // gives nothing.
        let mut back = vec![Record::default()];
        spill.read(7, &mut back).unwrap();
        assert_eq!(back[1..], records[..]);
        spill.read(8, &mut back).unwrap();
        assert_eq!(back.len(), 70_001);
        // The encoding is each field little-endian, in order.
        let mut bytes = Vec::new();
        records[0].write(&mut bytes);
        assert_eq!(bytes, sort::as_bytes(&records[..1]));

        spill.write(9, &records[..10], &mut encoded).unwrap();
        let mut file = spill.files[9].lock().unwrap();
        file.as_mut().unwrap().file.write_all(&[1, 2, 3]).unwrap();
        drop(file);
        let err = spill.read(9, &mut back).unwrap_err();
        assert!(err.to_string().contains("torn"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
