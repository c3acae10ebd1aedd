//! Records held by partition, the top 8 to 10 bits of their hash, in segments
//! of a fixed size handed out from a shared memory budget, and a spill file
//! per partition for what the budget cannot hold. A partition is sorted and
//! packed on its own once every record is read.
//!
//! Once the budget is spent, a holder that fills a segment spills that
//! partition's oldest segment and refills its memory: what stays in memory
//! at the end is always about the whole budget (the newest records of each
//! partition), and the memory touched never exceeds it. (Spilling a whole
//! buffer when full leaves in memory only what came after each buffer's
//! last spill, which random input makes the same small share for all.)
//!
//! Spill files are written and read past the page cache (direct I/O),
//! whole segments at a time, where the file system allows it: each is
//! written once and read back once, and through the cache every byte
//! would be copied into freshly allocated cache pages and out again (with
//! a 2 GiB budget, 200M hashes spilling 2.8 GB: 19% of the build's CPU
//! time in the kernel's copies into the cache).
//!
//! The budget is one mapping reserved whole and handed out a segment at a
//! time, in the order the holders ask, never unmapped before the build
//! ends: the memory touched is the segments handed out, faulted in a huge
//! page at a time when the input is known to fit in a few hundred MiB and
//! huge pages come quickly. (A segment of its own
//! from the allocator was faulted 4 KiB at a time and unmapped when its
//! partition was packed: a third of a 10M-hash build's CPU went to the
//! kernel.)

//!
//! Here: what is partitioned and how ([`Partitions`], [`Segment`]); beside
//! it, the memory [`budget`], the [`spill`] files and the [`read_ahead`] of
//! spills for the packers.

mod budget;
mod read_ahead;
mod spill;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::ops::Deref;
use std::sync::mpsc;

use crate::error::{Error, Result};
use crate::prepare::direct_io::ALIGN;
use crate::prepare::sort::{RECORD_BYTES, Record, Sink};

pub(crate) use budget::Budget;
pub(crate) use read_ahead::ReadAhead;
pub(crate) use spill::Spill;

/// Partitions by the top bits of the hash: this many, or more for a
/// large input known to fit the budget ([`part_bits`]).
pub(crate) const PART_BITS: u32 = 8;

/// The most partition bits: 1,024 partitions.
const MOST_PART_BITS: u32 = 10;

/// A partition's records, at most, as a power of two, where more
/// partition bits allow: 2^16 records (1.5 MiB) sort within a core's L2
/// cache. A 55M-hash build in 1,024 partitions of ~54,000 records takes
/// 0.97x the time of one in 256 of ~215,000 (whose sort's scatter spans 5
/// MB; in 2,048, 1.04x that of 1,024); at 10M, 256 partitions of ~39,000
/// records are faster than 1,024 (1.08x: more buffers begun and not
/// filled, in huge pages).
const PART_RECORDS_BITS: u32 = 16;

/// Partition bits for at most `records` records known to fit the budget
/// (`None`: not known, or spills may come, whose files, one a partition,
/// stay at 256).
fn part_bits(records: Option<u64>) -> u32 {
    #[cfg(test)]
    if let Some(bits) = TEST_PART_BITS.get() {
        return bits;
    }
    match records {
        Some(n) if n > 1 => (64 - (n - 1).leading_zeros())
            .saturating_sub(PART_RECORDS_BITS)
            .clamp(PART_BITS, MOST_PART_BITS),
        _ => PART_BITS,
    }
}

/// Records encoded at a time on their way to a spill file.
const SPILL_PIECE: usize = 1 << 16;

/// Records in a segment, at most: 1.5 MiB, a good size for a spill write.
const MAX_SEGMENT: usize = 1 << 16;

/// Records in a segment, at most, when nothing will spill: 48 KiB, so that
/// the segments begun and not filled (one a buffer: 768 with two parsers)
/// hold back little memory.
const FIT_SEGMENT: usize = 1 << 11;

/// Records in the fewest bytes that are a whole number of direct I/O
/// blocks (3 of them).
const DIRECT_RECORDS: usize = ALIGN / 8;
const _: () = assert!((DIRECT_RECORDS * RECORD_BYTES).is_multiple_of(ALIGN));

/// The most bytes of records held in huge pages. Huge pages save most of
/// the faults when the kernel has them at hand, as it has after earlier
/// work freed that much (a 10M-hash build: 0.81x the wall time); a larger
/// input asks for memory the machine has not touched, and a virtual
/// machine's host backs a huge page slower than its 512 small ones
/// (1.3 GB of records at 55M: 1.6 s of kernel time against 0.8, and
/// 1.18x the wall time; first touches of 1.3 GB measured alone: 0.06-2.05
/// s in huge pages, 0.44-0.73 s in small ones).
#[cfg(target_os = "linux")]
const HUGE_AT_MOST: u64 = 512 << 20;

/// Bytes of the shortest line a record comes from (an NTLM suffix in a
/// per-range file, a colon, a digit, CRLF): a file's size over it bounds
/// the records the file can hold.
const SHORTEST_LINE: u64 = 30;

#[cfg(test)]
thread_local! {
    /// Partition bits for every budget made on this thread: the wider
    /// partitions are otherwise only taken for inputs of gigabytes.
    pub(crate) static TEST_PART_BITS: std::cell::Cell<Option<u32>> =
        const { std::cell::Cell::new(None) };
}

/// Bytes of a page of memory (the unit a range given back is aligned to).
#[cfg(any(unix, test))]
const PAGE_BYTES: usize = 4096;

/// Records held in a segment of the budget's memory.
#[derive(Debug, Default)]
pub(crate) struct Segment<'a> {
    records: &'a mut [Record],
    len: usize,
}

impl Segment<'_> {
    fn is_full(&self) -> bool {
        self.len == self.records.len()
    }

    #[inline]
    fn push(&mut self, record: Record) {
        self.records[self.len] = record;
        self.len += 1;
    }
}

impl Deref for Segment<'_> {
    type Target = [Record];

    fn deref(&self) -> &[Record] {
        &self.records[..self.len]
    }
}

/// One holder's partition buffers.
#[derive(Debug)]
pub(crate) struct Partitions<'a> {
    /// A record's partition is its hash's top bits: `hi` shifted by this.
    shift: u32,
    /// The segment each partition's records go to next.
    current: Vec<Segment<'a>>,
    /// Each partition's full segments, oldest first.
    full: Vec<VecDeque<Segment<'a>>>,
    budget: &'a Budget,
    pub spill: &'a Spill,
    /// Spilled records' bytes, a piece at a time (memory reused).
    encoded: Vec<u8>,
    /// Where spills go when they are written on a thread of their own
    /// (else they are written here, as they are taken).
    writer: Option<Writer<'a>>,
    /// Whether a spill failed: a partition then has no segment to go on
    /// with, and every later record is refused rather than given memory
    /// beyond the budget.
    failed: bool,
}

/// A holder's way to the spill writer ([`Spill::serve`]), and back.
#[derive(Debug)]
struct Writer<'a> {
    jobs: mpsc::Sender<SpillJob<'a>>,
    done: mpsc::Sender<Written<'a>>,
    written: mpsc::Receiver<Written<'a>>,
    /// Segments sent and not yet back.
    in_flight: usize,
}

/// A segment of partition `p` to spill, and where to send it back once
/// written.
#[derive(Debug)]
pub(crate) struct SpillJob<'a> {
    p: usize,
    segment: Segment<'a>,
    done: mpsc::Sender<Written<'a>>,
}

/// A spilled segment's memory, back from the writer, and how the write
/// went.
type Written<'a> = (Result<()>, Segment<'a>);

impl<'a> Partitions<'a> {
    pub(crate) fn new(budget: &'a Budget, spill: &'a Spill) -> Partitions<'a> {
        let parts = budget.parts();
        assert_eq!(parts, spill.parts(), "a spill file for every partition");
        Partitions {
            shift: 64 - budget.part_bits(),
            current: (0..parts).map(|_| Segment::default()).collect(),
            full: (0..parts).map(|_| VecDeque::new()).collect(),
            budget,
            spill,
            encoded: Vec::new(),
            writer: None,
            failed: false,
        }
    }

    /// [`Partitions::new`], spilling through `jobs` to a thread running
    /// [`Spill::serve`]: the holder goes on parsing into a spare segment
    /// while its oldest is written (direct writes wait for the disk).
    pub(crate) fn with_writer(
        budget: &'a Budget,
        spill: &'a Spill,
        jobs: mpsc::Sender<SpillJob<'a>>,
    ) -> Partitions<'a> {
        let (done, written) = mpsc::channel();
        Partitions {
            writer: Some(Writer {
                jobs,
                done,
                written,
                in_flight: 0,
            }),
            ..Partitions::new(budget, spill)
        }
    }

    /// The records held, by partition, in segments, once every spill is
    /// written.
    pub(crate) fn into_segments(mut self) -> Result<Vec<Vec<Segment<'a>>>> {
        while self.writer.as_ref().is_some_and(|w| w.in_flight > 0) {
            self.written_back()?;
        }
        Ok(self
            .full
            .into_iter()
            .zip(self.current)
            .map(|(full, current)| {
                let mut segments = Vec::from(full);
                if !current.is_empty() {
                    segments.push(current);
                }
                segments
            })
            .collect())
    }

    /// The memory of the oldest spill in flight, once written (emptied).
    fn written_back(&mut self) -> Result<Segment<'a>> {
        let writer = self
            .writer
            .as_mut()
            .expect("spills in flight have a writer");
        let (written, mut segment) = writer
            .written
            .recv()
            .map_err(|_| Error::io(None, std::io::Error::other("the spill writer stopped")))?;
        writer.in_flight -= 1;
        written?;
        segment.len = 0;
        Ok(segment)
    }

    /// Spills partition `p`'s oldest full segment; returns memory to go on
    /// with: that segment's once written here, else the one the previous
    /// spill freed (or a spare) while this one is written on.
    fn spill_oldest(&mut self, p: usize) -> Result<Segment<'a>> {
        let mut oldest = self.full[p].pop_front().expect("a full segment to spill");
        let Some(writer) = &self.writer else {
            self.spill.write(p, &oldest, &mut self.encoded)?;
            oldest.len = 0;
            return Ok(oldest);
        };
        let free = if writer.in_flight > 0 {
            Some(self.written_back()?)
        } else {
            self.budget.take_spare()
        };
        let writer = self.writer.as_mut().expect("matched above");
        let job = SpillJob {
            p,
            segment: oldest,
            done: writer.done.clone(),
        };
        if writer.jobs.send(job).is_err() {
            return Err(Error::io(
                None,
                std::io::Error::other("the spill writer stopped"),
            ));
        }
        writer.in_flight += 1;
        match free {
            Some(segment) => Ok(segment),
            None => self.written_back(),
        }
    }

    /// Whether a spill failed; the holder takes no more records then.
    pub(crate) fn failed(&self) -> bool {
        self.failed
    }

    /// Makes room in partition `p`'s current segment, which is full (or
    /// not yet made): a new segment while the budget lasts, else the
    /// memory of the partition's oldest, spilled.
    #[cold]
    fn next_segment(&mut self, p: usize) -> Result<()> {
        if self.failed {
            return Err(Error::io(
                None,
                std::io::Error::other("an earlier spill failed"),
            ));
        }
        let current = &mut self.current[p];
        if current.records.is_empty() {
            *current = self.budget.hand_out();
            return Ok(());
        }
        let full = std::mem::take(current);
        self.full[p].push_back(full);
        if let Some(segment) = self.budget.take() {
            self.current[p] = segment;
            return Ok(());
        }
        match self.spill_oldest(p) {
            Ok(segment) => self.current[p] = segment,
            Err(e) => {
                self.failed = true;
                return Err(e);
            }
        }
        Ok(())
    }
}

impl Sink for Partitions<'_> {
    #[inline]
    fn put(&mut self, record: Record) -> Result<()> {
        let p = (record.hi >> self.shift) as usize;
        if self.current[p].is_full() {
            self.next_segment(p)?;
        }
        self.current[p].push(record);
        Ok(())
    }
}
