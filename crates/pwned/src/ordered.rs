//! Input that is already in hash order (HIBP's downloaders write it so:
//! one file sorted by hash, or one file per range) goes straight from the
//! parsers into pages: no partitions, no sort, no spill, memory bounded
//! whatever the corpus size. Nothing says the input is sorted; it is
//! noticed. Parsers hand each chunk's records over as a [`Run`], noting
//! whether they never decrease; the [`Stream`] takes the runs in input
//! order and writes them with a [`SortedWriter`] while each continues the
//! last. At the first one that does not (an unsorted tail, a hash seen
//! earlier), it falls back to the general build without reading the input
//! again: the index written so far is read back into partitions, together
//! with every run not yet written, and the parsers go on into partitions.

use std::collections::BTreeMap;
use std::io::{Seek, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::Result;
use crate::hash::{Key, Kind};
use crate::index::Index;
use crate::partition::{Partitions, Spill};
use crate::sort::{Record, Sink};
use crate::writer::{SortedWriter, Written};

/// The records of one chunk, in input order.
#[derive(Debug, Default)]
pub(crate) struct Run {
    /// The chunk's place in the input (0, 1, 2, … over all inputs).
    pub order: u64,
    pub records: Vec<Record>,
    /// Whether no record is smaller than the one before it.
    pub sorted: bool,
}

impl Run {
    /// An empty run for chunk `order`, in `records`' memory.
    pub(crate) fn new(order: u64, mut records: Vec<Record>) -> Run {
        records.clear();
        Run {
            order,
            records,
            sorted: true,
        }
    }
}

impl Sink for Run {
    #[inline]
    fn put(&mut self, record: Record) -> Result<()> {
        if let Some(last) = self.records.last() {
            self.sorted &= last.key() <= record.key();
        }
        self.records.push(record);
        Ok(())
    }
}

/// Runs taken in input order, written while they stay in order.
pub(crate) struct Stream<'o, 's, W: Write + Seek> {
    /// Whether parsers hand over runs (until the fall back).
    streaming: &'s AtomicBool,
    writer: Option<SortedWriter<&'o mut W>>,
    /// The output, once the writer is done with it.
    out: Option<&'o mut W>,
    /// The largest hash written.
    last: Option<Key>,
    /// Runs that came before their turn.
    early: BTreeMap<u64, Run>,
    next: u64,
    /// After the fall back: the records, by partition.
    partitions: Partitions<'s>,
    /// Hashes merged into others by the writer before the fall back.
    merged: u64,
    /// Records that only split a count over 2^32 - 1 read back.
    split: u64,
    read_back: &'s dyn Fn(&mut W) -> Result<Index>,
}

/// How a [`Stream`] ended.
pub(crate) enum Streamed<'o, W: Write + Seek> {
    /// Every run was in order: the index is written.
    Written(Written),
    /// Something was out of order: the records are in partitions, with
    /// `duplicates` merges already made (to add to those the sort finds).
    Partitioned {
        out: &'o mut W,
        buffers: Vec<Vec<Record>>,
        duplicates: i64,
    },
}

impl<'o, 's, W: Write + Seek> Stream<'o, 's, W> {
    pub(crate) fn new(
        out: &'o mut W,
        kind: Kind,
        key_bits: u32,
        streaming: &'s AtomicBool,
        per_buffer: usize,
        spill: &'s Spill,
        read_back: &'s dyn Fn(&mut W) -> Result<Index>,
    ) -> Result<Stream<'o, 's, W>> {
        Ok(Stream {
            streaming,
            writer: Some(SortedWriter::compact(out, kind, key_bits, None)?),
            out: None,
            last: None,
            early: BTreeMap::new(),
            next: 0,
            partitions: Partitions::new(per_buffer, spill),
            merged: 0,
            split: 0,
            read_back,
        })
    }

    /// Takes a run; returns the memory of any run done with, for reuse.
    pub(crate) fn take(&mut self, run: Run) -> Result<Vec<Vec<Record>>> {
        let mut done = Vec::new();
        if self.writer.is_none() {
            self.partition(&run)?;
            done.push(run.records);
            return Ok(done);
        }
        self.early.insert(run.order, run);
        while let Some(run) = self.early.remove(&self.next) {
            self.next += 1;
            let continues = run.sorted
                && match (self.last, run.records.first()) {
                    (Some(last), Some(first)) => last <= first.key(),
                    _ => true,
                };
            if !continues {
                self.fall_back()?;
                self.partition(&run)?;
                done.push(run.records);
                for (_, run) in std::mem::take(&mut self.early) {
                    self.partition(&run)?;
                    done.push(run.records);
                }
                return Ok(done);
            }
            let writer = self.writer.as_mut().expect("streaming");
            for record in &run.records {
                writer.push(record.key(), u64::from(record.count))?;
            }
            if let Some(r) = run.records.last() {
                self.last = Some(r.key());
            }
            done.push(run.records);
        }
        Ok(done)
    }

    fn partition(&mut self, run: &Run) -> Result<()> {
        for &record in &run.records {
            self.partitions.put(record)?;
        }
        Ok(())
    }

    /// Parsers stop handing over runs; the index written so far is read
    /// back into partitions (a count over 2^32 - 1, the most a record holds,
    /// as several records that the build sums again).
    fn fall_back(&mut self) -> Result<()> {
        self.streaming.store(false, Ordering::Release);
        let writer = self.writer.take().expect("streaming");
        let (out, written) = writer.finish(None)?;
        self.merged = written.duplicates;
        let index = (self.read_back)(out)?;
        for item in index.iter() {
            let (key, mut count) = item?;
            loop {
                let part = count.min(u64::from(u32::MAX));
                self.partitions.put(Record::new(key, part as u32))?;
                count -= part;
                if count == 0 {
                    break;
                }
                self.split += 1;
            }
        }
        self.out = Some(out);
        Ok(())
    }

    /// After the last run.
    pub(crate) fn finish(mut self) -> Result<Streamed<'o, W>> {
        if !self.early.is_empty() && self.writer.is_some() {
            // A chunk never came (the build is failing): nothing after the
            // gap can be written in order.
            self.fall_back()?;
            for (_, run) in std::mem::take(&mut self.early) {
                self.partition(&run)?;
            }
        }
        Ok(match (self.writer, self.out) {
            (Some(writer), _) => {
                let (_, written) = writer.finish(None)?;
                Streamed::Written(written)
            }
            (None, Some(out)) => Streamed::Partitioned {
                out,
                buffers: self.partitions.buffers,
                duplicates: self.merged as i64 - self.split as i64,
            },
            (None, None) => unreachable!("the writer hands the output back"),
        })
    }
}
