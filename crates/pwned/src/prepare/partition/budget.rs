//! The memory budget for held records: one mapping reserved whole and
//! handed out a segment at a time, in the order the holders ask, huge pages
//! when the input is known to fit and they come quickly, given back on
//! every core at the end.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use memmap2::{MmapOptions, MmapRaw};

use super::*;
use crate::error::{Error, Result};
use crate::prepare::sort::{RECORD_BYTES, Record};

/// The memory budget for held records, in segments of one mapping.
#[derive(Debug)]
pub(crate) struct Budget {
    /// Records in a segment.
    pub segment: usize,
    /// Records are partitioned by this many top bits of their hash.
    pub(super) part_bits: u32,
    /// Segments left to hand out beyond each buffer's first, which is
    /// set aside for it.
    pub(super) left: AtomicUsize,
    /// Segments set aside for spilling: one a holder, which goes on into
    /// it while its oldest segment is on its way to disk.
    pub(super) spares: AtomicUsize,
    /// The next segment of `memory` to hand out.
    pub(super) next: AtomicUsize,
    /// How huge pages are coming, when `memory` asks for them.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(super) huge: Option<HugeWatch>,
    /// Room for every segment the budget can hand out; untouched until
    /// handed out.
    pub(super) memory: MmapRaw,
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
    pub(super) fn take(&self) -> Option<Segment<'_>> {
        self.left
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .ok()
            .map(|_| self.hand_out())
    }

    /// Takes a spare segment, if any is left.
    pub(super) fn take_spare(&self) -> Option<Segment<'_>> {
        self.spares
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .ok()
            .map(|_| self.hand_out())
    }

    /// The next segment of the mapping.
    pub(super) fn hand_out(&self) -> Segment<'_> {
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
pub(super) struct HugeWatch {
    /// Huge pages of the mapping claimed for faulting in, from its start.
    pub(super) claimed: AtomicUsize,
    /// Those faulted in, and those of them that were slow.
    pub(super) faulted: AtomicUsize,
    pub(super) slow: AtomicUsize,
    /// Whether the rest of the mapping has been given small pages.
    pub(super) done: AtomicBool,
}

#[cfg(target_os = "linux")]
impl HugeWatch {
    /// A huge page slower than this to fault in is not one the host backs
    /// (by the thread's own clock: not the time others ran meanwhile).
    const SLOW: std::time::Duration = std::time::Duration::from_millis(1);

    /// Faults in the huge pages of `map` up to the one holding byte `end`
    /// that no holder has yet claimed, timing each.
    #[cold]
    pub(super) fn reach(&self, map: &MmapRaw, end: usize) {
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
pub(super) const HUGE_PAGE: usize = 2 << 20;

/// The calling thread's own CPU time.
#[cfg(target_os = "linux")]
pub(super) fn thread_time() -> std::time::Duration {
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
#[cfg(unix)]
pub(super) fn give_back(memory: &MmapRaw, len: usize) {
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

/// Elsewhere the mapping goes back as a whole when it is unmapped.
#[cfg(not(unix))]
pub(super) fn give_back(_memory: &MmapRaw, _len: usize) {}
