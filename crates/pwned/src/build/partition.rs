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

use std::collections::VecDeque;
use std::ops::Deref;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, mpsc};

use memmap2::{MmapOptions, MmapRaw};

use crate::build::direct_io::{self, ALIGN, Aligned};
use crate::build::sort::{self, RECORD_BYTES, Record, Sink};
use crate::error::{Error, Result};
use crate::tmpfile::Nameless;

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

/// The memory budget for held records, in segments of one mapping.
#[derive(Debug)]
pub(crate) struct Budget {
    /// Records in a segment.
    pub segment: usize,
    /// Records are partitioned by this many top bits of their hash.
    part_bits: u32,
    /// Segments left to hand out beyond each buffer's first, which is
    /// set aside for it.
    left: AtomicUsize,
    /// Segments set aside for spilling: one a holder, which goes on into
    /// it while its oldest segment is on its way to disk.
    spares: AtomicUsize,
    /// The next segment of `memory` to hand out.
    next: AtomicUsize,
    /// How huge pages are coming, when `memory` asks for them.
    huge: Option<HugeWatch>,
    /// Room for every segment the budget can hand out; untouched until
    /// handed out.
    memory: MmapRaw,
}

impl Budget {
    /// `memory` bytes for the records of `holders` sets of partition
    /// buffers, `input` bytes of text coming (0: not known): about eight
    /// segments a buffer (the more, the less a buffer holds back when it
    /// spills), each set aside its first, and a spare a holder for when
    /// it spills.
    ///
    /// Input known to fit is held in small segments, in huge pages up to
    /// [`HUGE_AT_MOST`] while they come quickly ([`HugeWatch`]). Where it may not fit, spills are coming: on a virtual machine that hands
    /// freed memory back to its host, as the spill files' page cache
    /// churns, a huge page then costs more to take than its 512 small ones
    /// (1.1x the wall time of a 55M-hash build spilling 1.9 GB).
    pub(crate) fn new(memory: u64, holders: usize, input: u64) -> Result<Budget> {
        let most = (input > 0).then(|| input / SHORTEST_LINE * RECORD_BYTES as u64);
        let fits = most.is_some_and(|most| most <= memory);
        let part_bits = part_bits(most.filter(|_| fits).map(|most| most / RECORD_BYTES as u64));
        let buffers = (holders << part_bits) as u64;
        let largest = if fits { FIT_SEGMENT } else { MAX_SEGMENT };
        let mut segment =
            (memory / (buffers * 8 * RECORD_BYTES as u64)).clamp(64, largest as u64) as usize;
        // A whole number of direct I/O blocks, so that a spilled segment
        // goes to its file past the page cache.
        if segment >= DIRECT_RECORDS {
            segment -= segment % DIRECT_RECORDS;
        }
        let bytes = (segment * RECORD_BYTES) as u64;
        // Input known to fit needs room for its records, the segments
        // begun and the spares, no more.
        let spares = holders as u64;
        let mut segments = memory / bytes;
        if let Some(most) = most.filter(|_| fits) {
            segments = segments.min(most.div_ceil(bytes) + buffers + spares);
        }
        segments = segments.max(buffers);
        // Reserved, not committed: pages are only taken as segments fill.
        // Where the address space has no room for it all, the budget is
        // what it has room for.
        let map = loop {
            let reserved = usize::try_from(segments * bytes)
                .map_err(std::io::Error::other)
                .and_then(|len| MmapOptions::new().len(len).no_reserve_swap().map_anon());
            match reserved {
                Ok(map) => break MmapRaw::from(map),
                Err(_) if segments > buffers => segments = (segments / 2).max(buffers),
                Err(e) => return Err(Error::io(None, e)),
            }
        };
        #[cfg(target_os = "linux")]
        let huge = (most.is_some_and(|most| fits && most <= HUGE_AT_MOST)
            && map.advise(memmap2::Advice::HugePage).is_ok())
        .then(HugeWatch::default);
        #[cfg(not(target_os = "linux"))]
        let huge = None;
        let spares = spares.min(segments - buffers);
        Ok(Budget {
            segment,
            part_bits,
            left: AtomicUsize::new((segments - buffers - spares) as usize),
            spares: AtomicUsize::new(spares as usize),
            next: AtomicUsize::new(0),
            huge,
            memory: map,
        })
    }

    /// Records are partitioned by this many top bits of their hash.
    pub(crate) fn part_bits(&self) -> u32 {
        self.part_bits
    }

    /// Partitions records are held in.
    pub(crate) fn parts(&self) -> usize {
        1 << self.part_bits
    }

    /// Takes a segment beyond a buffer's first, if any is left.
    fn take(&self) -> Option<Segment<'_>> {
        self.left
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .ok()
            .map(|_| self.hand_out())
    }

    /// Takes a spare segment, if any is left.
    fn take_spare(&self) -> Option<Segment<'_>> {
        self.spares
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .ok()
            .map(|_| self.hand_out())
    }

    /// The next segment of the mapping.
    fn hand_out(&self) -> Segment<'_> {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        let bytes = self.segment * RECORD_BYTES;
        assert!(
            (i + 1) * bytes <= self.memory.len(),
            "a budget hands out at most its segments and one a buffer"
        );
        #[cfg(target_os = "linux")]
        if let Some(huge) = &self.huge {
            huge.reach(&self.memory, (i + 1) * bytes);
        }
        // SAFETY: segment `i` is `bytes` bytes at `i * bytes`, within the
        // mapping (checked above), aligned for records (the mapping is
        // page-aligned, a segment a whole number of records), zeroed (a
        // valid record) or written as records since; `next` hands each
        // index out once, so no other reference to these bytes exists, and
        // the returned borrow of `self` keeps the mapping alive.
        let records = unsafe {
            let start = self.memory.as_mut_ptr().add(i * bytes).cast::<Record>();
            std::slice::from_raw_parts_mut(start, self.segment)
        };
        Segment { records, len: 0 }
    }
}

impl Drop for Budget {
    fn drop(&mut self) {
        let touched = self.next.load(Ordering::Relaxed) * self.segment * RECORD_BYTES;
        give_back(&self.memory, touched.min(self.memory.len()));
    }
}

/// How the huge pages of a budget are coming. A virtual machine's host may
/// have taken back memory the guest left free (free page reporting): a
/// huge page from there took ~4.4 ms to fault in here, against ~85 us for
/// one the host still backs and ~0.7 ms for 512 small ones, and a 10M-hash
/// build whose records met such pages took 0.28-0.45 s against 0.18. So
/// the holder whose segment first reaches a huge page faults it in itself
/// and times it, and once slow ones are two or more and over an eighth,
/// the rest of the budget takes small pages. With okon's 10M build run
/// before each (which leaves such memory about), twelve builds each:
/// 0.18-0.29 s (two slower than 0.23) without it, 0.17-0.20 s with it;
/// run back to back, 1.01x the time.
#[derive(Debug, Default)]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
struct HugeWatch {
    /// Huge pages of the mapping claimed for faulting in, from its start.
    claimed: AtomicUsize,
    /// Those faulted in, and those of them that were slow.
    faulted: AtomicUsize,
    slow: AtomicUsize,
    /// Whether the rest of the mapping has been given small pages.
    done: AtomicBool,
}

#[cfg(target_os = "linux")]
impl HugeWatch {
    /// A huge page slower than this to fault in is not one the host backs
    /// (by the thread's own clock: not the time others ran meanwhile).
    const SLOW: std::time::Duration = std::time::Duration::from_millis(1);

    /// Faults in the huge pages of `map` up to the one holding byte `end`
    /// that no holder has yet claimed, timing each.
    #[cold]
    fn reach(&self, map: &MmapRaw, end: usize) {
        let base = map.as_mut_ptr() as usize;
        // The huge page that byte `end - 1` is in, counted from the
        // mapping's first whole one (whatever lies before it is small).
        let first = base.next_multiple_of(HUGE_PAGE);
        let Some(last) = (base + end).checked_sub(first + 1).map(|b| b / HUGE_PAGE) else {
            return;
        };
        loop {
            let claimed = self.claimed.load(Ordering::Relaxed);
            if claimed > last || self.done.load(Ordering::Relaxed) {
                return;
            }
            if self
                .claimed
                .compare_exchange(claimed, claimed + 1, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
            {
                continue;
            }
            let at = first + claimed * HUGE_PAGE;
            if at + HUGE_PAGE > base + map.len() {
                return;
            }
            let started = thread_time();
            // SAFETY: the huge page at `at` lies within the budget's
            // private anonymous mapping (checked above), which the budget
            // keeps; populating makes its pages present and changes no
            // byte, whatever a holder is writing there meanwhile.
            let populated = unsafe {
                libc::madvise(
                    at as *mut libc::c_void,
                    HUGE_PAGE,
                    libc::MADV_POPULATE_WRITE,
                )
            } == 0;
            if !populated {
                self.done.store(true, Ordering::Relaxed);
                return;
            }
            let slow = usize::from(thread_time().saturating_sub(started) > Self::SLOW);
            let faulted = self.faulted.fetch_add(1, Ordering::Relaxed) + 1;
            let slow = self.slow.fetch_add(slow, Ordering::Relaxed) + slow;
            if slow >= 2 && slow * 8 > faulted && !self.done.swap(true, Ordering::Relaxed) {
                let rest = at + HUGE_PAGE;
                // SAFETY: as above; small pages instead of huge ones for
                // the rest of the mapping change no byte either.
                unsafe {
                    libc::madvise(
                        rest as *mut libc::c_void,
                        base + map.len() - rest,
                        libc::MADV_NOHUGEPAGE,
                    )
                };
                return;
            }
        }
    }
}

/// A huge page's bytes.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
const HUGE_PAGE: usize = 2 << 20;

/// The calling thread's own CPU time.
#[cfg(target_os = "linux")]
fn thread_time() -> std::time::Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    std::time::Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Gives the pages of the first `len` bytes of `memory`, an anonymous
/// mapping about to go, back to the system (they read as zeros after), in
/// as many parts as there are processors, each on a thread of its own:
/// the kernel frees a page at a time (1.3 GB of records at 55M: ~0.1 s
/// on one core, the other idle, at the very end of the build), and
/// `MADV_DONTNEED` lets threads free side by side, where unmapping would
/// not.
fn give_back(memory: &MmapRaw, len: usize) {
    // Below this, a thread costs more than it saves.
    const SHARED_FROM: usize = 64 << 20;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    if !cfg!(target_os = "linux") || len < SHARED_FROM || threads < 2 {
        return;
    }
    let part = len.div_ceil(threads).next_multiple_of(PAGE_BYTES);
    std::thread::scope(|s| {
        for start in (0..len).step_by(part) {
            let len = part.min(len - start);
            s.spawn(move || {
                // SAFETY: the mapping is anonymous and private and no
                // reference into it is left (its budget is being
                // dropped, and every segment borrows the budget): its
                // pages go back to the system and would read as zeros.
                let _ = unsafe {
                    memory.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, len)
                };
            });
        }
    });
}

/// Bytes of a page of memory (the unit a range given back is aligned to).
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

/// Spills read back ahead of the packers that sort them. One thread reads
/// partition after partition, in the order the packers take them, each
/// into memory from a pool the packers give back to once they have sorted
/// it: the disk works while the cores sort, where a packer reading its own
/// spills left its core idle meanwhile.
#[derive(Default)]
pub(crate) struct ReadAhead {
    slots: Mutex<Slots>,
    ready: Condvar,
}

/// What the reader has read and not yet handed over.
#[derive(Default)]
struct Slots {
    /// By partition: its spill and how many records it holds.
    read: Vec<Option<Result<(Aligned, usize)>>>,
    /// Whether the reader has stopped.
    ended: bool,
}

impl ReadAhead {
    /// Reads the spills of the partitions of `order`, in that order, each
    /// into memory taken from `pool`; returns when done, when the pool is
    /// gone (its givers, the packers, have stopped), when `stop` is set, or
    /// after an error (left for its partition's packer).
    pub(crate) fn serve(
        &self,
        spill: &Spill,
        order: impl Iterator<Item = usize>,
        pool: &mpsc::Receiver<Aligned>,
        stop: &AtomicBool,
    ) {
        for p in order {
            if spill.records[p].load(Ordering::Relaxed) == 0 {
                continue;
            }
            let Ok(mut memory) = pool.recv() else {
                break;
            };
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let read = spill.read(p, &mut memory).map(|records| records.len());
            let failed = read.is_err();
            let mut slots = self.slots.lock().expect("read-ahead lock");
            if slots.read.len() <= p {
                slots.read.resize_with(spill.parts(), || None);
            }
            slots.read[p] = Some(read.map(|n| (memory, n)));
            drop(slots);
            self.ready.notify_all();
            if failed {
                break;
            }
        }
        self.slots.lock().expect("read-ahead lock").ended = true;
        self.ready.notify_all();
    }

    /// Partition `p`'s spill once the reader has it: its memory and how
    /// many records it holds, to be given back to the pool once sorted.
    /// `None` when `p` spilled nothing, or when the reader stopped before
    /// reading it (the caller then reads it with [`Spill::read`]).
    pub(crate) fn take(&self, spill: &Spill, p: usize) -> Option<Result<(Aligned, usize)>> {
        if spill.records[p].load(Ordering::Relaxed) == 0 {
            return None;
        }
        let mut slots = self.slots.lock().expect("read-ahead lock");
        loop {
            if let Some(read) = slots.read.get_mut(p).and_then(Option::take) {
                return Some(read);
            }
            if slots.ended {
                return None;
            }
            slots = self.ready.wait(slots).expect("read-ahead lock");
        }
    }
}

/// Spill files, one per partition, created when first needed.
#[derive(Debug)]
pub(crate) struct Spill {
    root: PathBuf,
    files: Vec<Mutex<Option<SpillFile>>>,
    pub bytes: AtomicU64,
    /// Records spilled, per partition.
    pub records: Vec<AtomicU64>,
    /// Whether direct I/O is tried (it is until a file system refuses it).
    direct: bool,
}

/// One partition's spill file.
#[derive(Debug)]
struct SpillFile {
    file: Nameless,
    /// Bytes written.
    len: u64,
    /// Whether direct I/O is still worth trying for this file.
    direct: bool,
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
                f.file.file.write_all_at(bytes, f.len).map_err(io_err)?;
            }
            f.len += bytes.len() as u64;
        } else {
            for piece in records.chunks(SPILL_PIECE) {
                encoded.clear();
                for r in piece {
                    r.write(encoded);
                }
                f.file.file.write_all_at(encoded, f.len).map_err(io_err)?;
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
            None => direct_io::read_full_at(file, &mut bytes[..len], 0).map_err(io_err)?,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Partitions of a budget made for input not known to fit.
    const PARTS: usize = 1 << PART_BITS;

    #[test]
    fn large_inputs_known_to_fit_get_more_partitions() {
        assert_eq!(part_bits(None), PART_BITS);
        assert_eq!(part_bits(Some(0)), PART_BITS);
        assert_eq!(part_bits(Some(1)), PART_BITS);
        // Up to 2^24 records, 2^16 or fewer a partition in 256.
        assert_eq!(part_bits(Some(1 << 24)), 8);
        assert_eq!(part_bits(Some((1 << 24) + 1)), 9);
        assert_eq!(part_bits(Some(1 << 26)), 10);
        assert_eq!(part_bits(Some(u64::MAX)), 10);
        let gib = 1u64 << 30;
        // 2.4 GB of text (55M hashes) is at most 80M records: known to fit
        // 4 GiB, 1,024 partitions; not known to fit 1 GiB (spills may
        // come), or of unknown size, 256.
        let wide = Budget::new(4 * gib, 3, 2_400_000_000).unwrap();
        assert_eq!((wide.part_bits(), wide.parts()), (10, 1024));
        assert_eq!(Budget::new(gib, 3, 2_400_000_000).unwrap().parts(), 256);
        assert_eq!(Budget::new(4 * gib, 3, 0).unwrap().parts(), 256);
        // 441 MB (10M hashes): 256.
        assert_eq!(Budget::new(4 * gib, 3, 441_000_000).unwrap().parts(), 256);
    }

    #[test]
    fn records_go_to_the_partition_of_their_top_bits() {
        let dir = std::env::temp_dir().join(format!("seekless-wide-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut next = crate::testing::rng(0x1D3A);
        for bits in [PART_BITS, 9, 10] {
            TEST_PART_BITS.set(Some(bits));
            let budget = Budget::new(64 << 20, 1, 0).unwrap();
            TEST_PART_BITS.set(None);
            let spill = Spill::new(&dir, budget.parts());
            let mut held = Partitions::new(&budget, &spill);
            let records: Vec<Record> = (0..20_000)
                .map(|_| Record {
                    hi: next(),
                    mid: next(),
                    lo: next() as u32,
                    count: 1,
                })
                .collect();
            for &r in &records {
                held.put(r).unwrap();
            }
            let parts = held.into_segments().unwrap();
            assert_eq!(parts.len(), 1 << bits);
            let mut back = Vec::new();
            for (p, segments) in parts.iter().enumerate() {
                for r in segments.iter().flat_map(|s| s.iter()) {
                    assert_eq!(r.hi >> (64 - bits), p as u64);
                    back.push(*r);
                }
            }
            assert_eq!(spill.bytes.load(Ordering::Relaxed), 0);
            back.sort_by_key(Record::key);
            let mut expect = records;
            expect.sort_by_key(Record::key);
            assert!(back == expect, "{bits} bits");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_budget_holds_the_newest_records_and_spills_the_rest() {
        for threaded in [false, true] {
            let dir = std::env::temp_dir()
                .join(format!("seekless-held-{}-{threaded}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let spill = Spill::new(&dir, PARTS);
            // Two holders, 64-record segments, 1,000 segments: 486 beyond
            // the first each buffer has and the two spares.
            let memory = 1000 * 64 * RECORD_BYTES as u64;
            let budget = Budget::new(memory, 2, 0).unwrap();
            assert_eq!(budget.segment, 64);
            assert_eq!(budget.left.load(Ordering::Relaxed), 1000 - 2 * PARTS - 2);
            assert_eq!(budget.spares.load(Ordering::Relaxed), 2);
            let held = if threaded {
                // Spills written on a thread of their own, as a build does.
                std::thread::scope(|s| {
                    let (jobs, served) = mpsc::channel();
                    s.spawn(|| spill.serve(served));
                    let a = Partitions::with_writer(&budget, &spill, jobs.clone());
                    let b = Partitions::with_writer(&budget, &spill, jobs);
                    fill_and_hold(a, b)
                })
            } else {
                fill_and_hold(
                    Partitions::new(&budget, &spill),
                    Partitions::new(&budget, &spill),
                )
            };
            // Every segment is within the budget, and all but the last one
            // of each holder's buffer is full; a spare each is taken only
            // when spills go to the writer.
            let segments: usize = held.iter().map(Vec::len).sum();
            assert!(segments <= 1000, "{segments} segments");
            let records: usize = held.iter().flatten().map(|s| s.len()).sum();
            assert!(records > (1000 - 2 * PARTS - 2) * 64, "{records} held");
            assert_eq!(budget.left.load(Ordering::Relaxed), 0);
            let spares = if threaded { 0 } else { 2 };
            assert_eq!(budget.spares.load(Ordering::Relaxed), spares);
            // Held and spilled, every record is there once.
            let mut back: Vec<Record> = Vec::new();
            let mut memory = Aligned::default();
            for (p, segments) in held.iter().enumerate() {
                let start = back.len();
                back.extend_from_slice(spill.read(p, &mut memory).unwrap());
                let spilled = back.len() - start;
                for segment in segments {
                    back.extend_from_slice(segment);
                }
                // Partition 3 spilled its oldest records: each record the
                // first holder kept is newer than each one it spilled.
                if p == 3 {
                    let (out, kept) = back[start..].split_at(spilled);
                    let first = |r: &&Record| r.lo.is_multiple_of(2);
                    let newest_out = out.iter().filter(first).map(|r| r.lo).max().unwrap();
                    let oldest_kept = kept.iter().filter(first).map(|r| r.lo).min().unwrap();
                    assert!(
                        newest_out < oldest_kept,
                        "{newest_out} spilled, {oldest_kept} kept"
                    );
                }
            }
            back.sort_by_key(|r| r.lo);
            assert_eq!(back, sent_records());
            let _ = std::fs::remove_dir_all(&dir);
        }
    }

    #[test]
    fn a_failed_spill_refuses_every_later_record_within_the_budget() {
        // Spill files cannot be made in a directory that does not exist:
        // the first spill fails, on the holder's thread or the writer's.
        let missing = std::env::temp_dir().join(format!("seekless-gone-{}", std::process::id()));
        for threaded in [false, true] {
            let spill = Spill::new(&missing, PARTS);
            let memory = 1000 * 64 * RECORD_BYTES as u64;
            let budget = Budget::new(memory, 1, 0).unwrap();
            let mut next = crate::testing::rng(0x5B17);
            let mut record = || Record {
                hi: next(),
                mid: 0,
                lo: 0,
                count: 1,
            };
            let mut put_all = |mut held: Partitions<'_>| {
                let mut first = None;
                // Far more records than the budget holds: each after the
                // failure is refused, none is given memory the budget has
                // not (which would panic).
                for i in 0..200_000 {
                    if let Err(e) = held.put(record()) {
                        first.get_or_insert((i, e.to_string()));
                        assert!(held.failed());
                    }
                }
                let (at, error) = first.expect("a spill failed");
                assert!(at < 1000 * 64, "the spill failed at record {at}");
                assert!(error.contains(missing.to_str().unwrap()), "{error}");
            };
            if threaded {
                std::thread::scope(|s| {
                    let (jobs, served) = mpsc::channel();
                    s.spawn(|| spill.serve(served));
                    put_all(Partitions::with_writer(&budget, &spill, jobs));
                });
            } else {
                put_all(Partitions::new(&budget, &spill));
            }
            assert!(budget.next.load(Ordering::Relaxed) * 64 * RECORD_BYTES <= memory as usize);
        }
    }

    /// The records [`fill_and_hold`] sends: partition 3 gets a record in
    /// four, in order (its count says when); the rest go anywhere.
    fn sent_records() -> Vec<Record> {
        let mut next = crate::testing::rng(0xb0d9);
        (0..200_000u32)
            .map(|i| {
                let hi = if i % 4 == 0 {
                    3 << 56 | next() >> 8
                } else {
                    next()
                };
                Record {
                    hi,
                    mid: next(),
                    lo: i,
                    count: i,
                }
            })
            .collect()
    }

    /// Puts [`sent_records`] into `a` and `b` in turn; what they hold, by
    /// partition.
    fn fill_and_hold<'a>(mut a: Partitions<'a>, mut b: Partitions<'a>) -> Vec<Vec<Segment<'a>>> {
        for (i, record) in sent_records().into_iter().enumerate() {
            if i % 2 == 0 {
                a.put(record)
            } else {
                b.put(record)
            }
            .unwrap();
        }
        a.into_segments()
            .unwrap()
            .into_iter()
            .zip(b.into_segments().unwrap())
            .map(|(mut a, b)| {
                a.extend(b);
                a
            })
            .collect()
    }

    #[test]
    fn memory_given_back_reads_as_zeros() {
        // Large enough to be given back on threads.
        let len = 80 << 20;
        let map = MmapRaw::from(MmapOptions::new().len(len).map_anon().unwrap());
        // SAFETY: the mapping is `len` bytes, only this test uses it.
        let bytes = unsafe { std::slice::from_raw_parts_mut(map.as_mut_ptr(), len) };
        bytes.fill(0xAB);
        give_back(&map, len - 5000);
        // SAFETY: as above.
        let bytes = unsafe { std::slice::from_raw_parts(map.as_ptr(), len) };
        let given = len - 5000;
        // Whole pages are given back, the last one begun too: what
        // follows it keeps its bytes.
        let kept = given.next_multiple_of(PAGE_BYTES).min(len);
        let multi = std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2);
        if cfg!(target_os = "linux") && multi {
            assert!(
                bytes[..given - PAGE_BYTES]
                    .iter()
                    .step_by(997)
                    .all(|&b| b == 0)
            );
            assert_eq!(bytes[0], 0);
        }
        assert!(bytes[kept..].iter().all(|&b| b == 0xAB));
    }

    #[test]
    fn input_known_to_fit_is_held_in_small_segments_handed_out_in_order() {
        let memory = 1 << 30;
        // Two holders, 512 buffers: eight segments a buffer are 10,922
        // records each, when the input is not known or may not fit (2 GB
        // of text may be 1.6 GB of records), made 10,752 (21 x 512): a
        // segment is a whole number of direct I/O blocks.
        let budget_sized = (memory / (512 * 8 * RECORD_BYTES as u64)) as usize;
        assert_eq!(budget_sized, 10_922);
        let budget_sized = budget_sized / DIRECT_RECORDS * DIRECT_RECORDS;
        assert_eq!(budget_sized, 10_752);
        assert!((budget_sized * RECORD_BYTES).is_multiple_of(ALIGN));
        assert_eq!(Budget::new(memory, 2, 0).unwrap().segment, budget_sized);
        let large = Budget::new(memory, 2, 2_000_000_000).unwrap();
        assert_eq!(large.segment, budget_sized);
        // 100 MB of text is at most 80 MB of records: small segments, and
        // room for those records and a segment begun a buffer.
        let budget = Budget::new(memory, 2, 100_000_000).unwrap();
        assert_eq!(budget.segment, FIT_SEGMENT);
        // Known to fit in huge pages: each one is claimed, faulted in and
        // timed by the holder whose segment first reaches it.
        #[cfg(target_os = "linux")]
        if let Some(huge) = &budget.huge {
            let bytes = FIT_SEGMENT * RECORD_BYTES;
            let segments = HUGE_PAGE / bytes + 2;
            let held: Vec<Segment> = (0..segments).map(|_| budget.hand_out()).collect();
            let base = budget.memory.as_mut_ptr() as usize;
            let reached = base + segments * bytes;
            let claimed = (reached - base.next_multiple_of(HUGE_PAGE)).div_ceil(HUGE_PAGE);
            assert_eq!(huge.claimed.load(Ordering::Relaxed), claimed);
            assert!(huge.faulted.load(Ordering::Relaxed) <= claimed);
            assert!(held.iter().all(|s| s.is_empty()));
        }
        let bytes = FIT_SEGMENT * RECORD_BYTES;
        assert_eq!(
            budget.memory.len(),
            (80_000_000usize.div_ceil(bytes) + 512 + 2) * bytes
        );
        // A budget beyond the address space is what it has room for.
        let vast = Budget::new(1 << 62, 2, 0).unwrap();
        assert!(vast.memory.len() < 1 << 50, "{}", vast.memory.len());
        assert!(vast.take().is_some());

        let mut segments: Vec<Segment> = (0..3).map(|_| budget.hand_out()).collect();
        for (i, segment) in segments.iter_mut().enumerate() {
            assert!(segment.is_empty() && !segment.is_full());
            while !segment.is_full() {
                let n = segment.len() as u32;
                segment.push(Record {
                    lo: n,
                    count: i as u32,
                    ..Record::default()
                });
            }
        }
        for (i, segment) in segments.iter().enumerate() {
            assert_eq!(segment.len(), FIT_SEGMENT);
            assert!(
                segment
                    .iter()
                    .enumerate()
                    .all(|(n, r)| r.lo == n as u32 && r.count == i as u32)
            );
        }
        // One after the other in the mapping.
        let end = segments[0].as_ptr_range().end;
        assert_eq!(end, segments[1].as_ptr());
        // A budget smaller than one segment a buffer still has each
        // buffer's first, and none beyond.
        let tiny = Budget::new(1000, 2, 0).unwrap();
        assert_eq!(tiny.segment, 64);
        let firsts: Vec<Segment> = (0..512).map(|_| tiny.hand_out()).collect();
        assert!(firsts.iter().all(|s| s.records.len() == 64));
        assert!(tiny.take().is_none());
    }

    #[test]
    fn spills_read_ahead_come_to_their_partitions_and_a_stop_leaves_the_rest() {
        let dir = std::env::temp_dir().join(format!("seekless-ahead-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut next = crate::testing::rng(0xA4EAD);
        let spill = Spill::new(&dir, PARTS);
        let mut encoded = Vec::new();
        // Partitions 3, 5, 6 and 9 spill (9 torn); the others do not.
        let mut written = vec![Vec::new(); PARTS];
        for (p, n) in [(3, 10), (5, 70_000), (6, 1), (9, 2)] {
            written[p] = (0..n)
                .map(|_| Record {
                    hi: next(),
                    mid: next(),
                    lo: next() as u32,
                    count: next() as u32,
                })
                .collect::<Vec<_>>();
            spill.write(p, &written[p], &mut encoded).unwrap();
        }
        {
            let mut file = spill.files[9].lock().unwrap();
            let f = file.as_mut().unwrap();
            f.file.file.write_all_at(&[1, 2, 3], f.len).unwrap();
        }
        let ahead = ReadAhead::default();
        let stop = AtomicBool::new(false);
        let (give, pool) = mpsc::channel();
        // Two buffers: the reader waits for one given back before the third.
        for _ in 0..2 {
            give.send(Aligned::default()).unwrap();
        }
        std::thread::scope(|s| {
            let (ahead, spill, stop) = (&ahead, &spill, &stop);
            s.spawn(move || ahead.serve(spill, 0..PARTS, &pool, stop));
            for (p, written) in written.iter().enumerate().take(9) {
                match ahead.take(spill, p) {
                    None => assert!(written.is_empty(), "partition {p}"),
                    Some(read) => {
                        let (mut memory, n) = read.unwrap();
                        let records = sort::records_mut(memory.first_mut(n * RECORD_BYTES));
                        assert!(records[..] == written[..], "partition {p}");
                        // Refused once the reader has read the last spill
                        // and gone, as a packer's give-back may be.
                        let _ = give.send(memory);
                    }
                }
            }
            let err = ahead.take(spill, 9).unwrap().unwrap_err();
            assert!(err.to_string().contains("torn"), "{err}");
        });

        // Stopped before it reads anything: each partition is left to its
        // packer, which reads it itself.
        spill.write(4, &written[5], &mut encoded).unwrap();
        let ahead = ReadAhead::default();
        stop.store(true, Ordering::Relaxed);
        let (give, pool) = mpsc::channel();
        give.send(Aligned::default()).unwrap();
        ahead.serve(&spill, 0..PARTS, &pool, &stop);
        assert!(ahead.take(&spill, 4).is_none());
        let mut memory = Aligned::default();
        assert!(spill.read(4, &mut memory).unwrap() == &written[5][..]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn spilled_records_come_back_as_written_and_a_torn_file_is_an_error() {
        let dir = std::env::temp_dir().join(format!("seekless-spill-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut next = crate::testing::rng(0x5111);
        let mut random = |n: usize| -> Vec<Record> {
            (0..n)
                .map(|_| Record {
                    hi: next(),
                    mid: next(),
                    lo: next() as u32,
                    count: next() as u32,
                })
                .collect()
        };
        // Whole segments in aligned memory (as the budget's are), and
        // records anywhere.
        let blocks = 5 * DIRECT_RECORDS;
        let mut segment = Aligned::default();
        let aligned = sort::records_mut(segment.first_mut(blocks * RECORD_BYTES));
        aligned.copy_from_slice(&random(blocks));
        let loose = random(70_000);
        for direct in [true, false] {
            let mut spill = Spill::new(&dir, PARTS);
            spill.direct &= direct;
            let mut encoded = Vec::new();
            // Aligned, then loose in two writes (the second longer than an
            // encoding piece), then aligned records at an offset that is
            // not, which go the usual way.
            spill.write(7, aligned, &mut encoded).unwrap();
            spill.write(7, &loose[..100], &mut encoded).unwrap();
            spill.write(7, &loose[100..], &mut encoded).unwrap();
            spill.write(7, aligned, &mut encoded).unwrap();
            let n = 2 * blocks + loose.len();
            assert_eq!(spill.records[7].load(Ordering::Relaxed), n as u64);
            assert_eq!(spill.bytes.load(Ordering::Relaxed), (n * 24) as u64);
            if direct && direct_io_works(&dir) {
                let file = spill.files[7].lock().unwrap();
                assert!(file.as_ref().unwrap().direct, "direct I/O was refused");
            }
            let mut expected = aligned.to_vec();
            expected.extend_from_slice(&loose);
            expected.extend_from_slice(aligned);
            let mut memory = Aligned::default();
            assert!(spill.read(7, &mut memory).unwrap() == &expected[..]);
            // Read once; a partition never written gives nothing.
            assert!(spill.read(7, &mut memory).unwrap().is_empty());
            assert!(spill.read(8, &mut memory).unwrap().is_empty());

            // A file that does not end with a whole record is torn.
            spill.write(9, aligned, &mut encoded).unwrap();
            let mut file = spill.files[9].lock().unwrap();
            let f = file.as_mut().unwrap();
            f.file.file.write_all_at(&[1, 2, 3], f.len).unwrap();
            drop(file);
            let err = spill.read(9, &mut memory).unwrap_err();
            assert!(err.to_string().contains("torn"), "{err}");
        }
        // The encoding is each field little-endian, in order.
        let mut bytes = Vec::new();
        loose[0].write(&mut bytes);
        assert_eq!(bytes, sort::as_bytes(&loose[..1]));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Whether files in `dir` can be opened for direct I/O.
    fn direct_io_works(dir: &Path) -> bool {
        use std::os::unix::fs::OpenOptionsExt;
        let probe = dir.join("direct-probe");
        let works = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(libc::O_DIRECT)
            .open(&probe)
            .is_ok();
        let _ = std::fs::remove_file(&probe);
        works
    }
}
