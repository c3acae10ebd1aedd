//! The memory store's 2 MiB chunks, and the thread that makes them ahead
//! of need.
//!
//! A chunk from a table's second on asks for a transparent huge page (one
//! TLB entry for 2 MiB instead of 512). The kernel faults a huge page in
//! whole at its first touch: zeroing 2 MiB and, when memory is fragmented,
//! compacting it first, 0.5–6 ms in all, which used to land on the one
//! insert that first wrote to a fresh chunk. So the store keeps its next
//! chunk on order while it fills the current one, and one thread for the
//! whole process makes it: maps it, then touches every 4 KiB of it,
//! taking those faults off the inserting thread. When the spare is not
//! ready in time, the store takes a chunk of small pages instead, faulted
//! 4 KiB at a time, rather than wait.
//!
//! Ordering is a message to the thread and nothing else. The store used
//! to map the chunk itself and touch a byte of it before sending it:
//! 70-90 µs on the 2-core benchmark VM (the fresh mapping's first fault
//! there is dear), the longest puts of a large load; a message costs
//! ~30 µs, the thread's wake-up.
//!
//! The thread never preempts another on waking (`SCHED_BATCH`), and
//! holds the locks the inserting thread may need only briefly: mapping
//! and advising a chunk take the process's memory-map lock for writing
//! (microseconds; faults in other mappings go on meanwhile under their
//! own mapping's lock, Linux 6.4 on), and so may the first fault in a
//! fresh mapping (Linux sets up the mapping's reverse map under it), so
//! the thread first touches a byte of the mapping outside the chunk's
//! 2 MiB. The huge-page fault that follows, milliseconds when memory must
//! be compacted, then holds only the lock of the chunk's own mapping.

use std::sync::OnceLock;
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};

use crate::page::{PAGE_SIZE, Page};

/// Pages per chunk: 2 MiB.
pub(crate) const CHUNK_PAGES: usize = 256;
const CHUNK_BYTES: usize = CHUNK_PAGES * PAGE_SIZE;
/// The kernel's small page, the unit a touch faults in without huge pages.
const SMALL_PAGE: usize = 4096;

/// 2 MiB of zeroed pages, aligned to 2 MiB, that never move once mapped.
pub(crate) struct Chunk {
    map: memmap2::MmapMut,
    /// Where the aligned 2 MiB start inside `map`.
    offset: usize,
}

impl Chunk {
    /// A chunk of fresh memory, faulted in as it is touched; `huge` asks
    /// for a transparent huge page where the kernel offers them (only a
    /// hint: without huge pages the chunk works the same).
    pub(crate) fn new(huge: bool) -> Chunk {
        // Twice the size, so an aligned 2 MiB lies inside; the unused part
        // is address space only, never touched.
        let mut map = memmap2::MmapOptions::new()
            .len(2 * CHUNK_BYTES)
            .map_anon()
            .unwrap_or_else(|_| {
                std::alloc::handle_alloc_error(
                    std::alloc::Layout::from_size_align(2 * CHUNK_BYTES, 4096).expect("4 MiB"),
                )
            });
        let offset = map.as_mut_ptr().align_offset(CHUNK_BYTES);
        #[cfg(target_os = "linux")]
        if huge {
            let _ = map.advise_range(memmap2::Advice::HugePage, offset, CHUNK_BYTES);
        }
        #[cfg(not(target_os = "linux"))]
        let _ = huge;
        Chunk { map, offset }
    }

    /// Make the chunk ready for faults that take no process-wide lock, by
    /// touching the last byte of the mapping, which lies past the
    /// chunk's aligned 2 MiB (the aligned start is less than 2 MiB in):
    /// one small page, 4 KiB of resident memory a chunk.
    fn set_up_for_faults(&mut self) {
        let last = self.map.len() - 1;
        debug_assert!(last >= self.offset + CHUNK_BYTES);
        self.map[last] = 0;
    }

    /// Fault in the memory of the chunk's first `pages` pages now, by
    /// writing a zero into each 4 KiB of it (they are zero already, so
    /// their contents do not change). With a huge page the first write
    /// faults in all 2 MiB.
    pub(crate) fn prefault(&mut self, pages: usize) {
        let end = self.offset + pages.min(CHUNK_PAGES) * PAGE_SIZE;
        for byte in self.map[self.offset..end].iter_mut().step_by(SMALL_PAGE) {
            *byte = 0;
        }
    }

    /// Page `i` of the chunk.
    #[inline]
    pub(crate) fn page(&self, i: usize) -> &Page {
        assert!(i < CHUNK_PAGES);
        // SAFETY: the chunk's aligned 2 MiB lie inside the mapping and hold
        // CHUNK_PAGES pages, aligned to 2 MiB (more than a page's
        // alignment); a page is plain bytes, so any contents are a valid
        // page; the borrow of `self` keeps the mapping alive.
        unsafe { &*self.map.as_ptr().add(self.offset).cast::<Page>().add(i) }
    }

    /// The address of page `i` of the chunk, its provenance exposed
    /// (taken from the mapping's pointer, not from a borrow of the page,
    /// so that it stays good across later writes to the page).
    #[inline]
    pub(crate) fn address(&self, i: usize) -> usize {
        assert!(i < CHUNK_PAGES);
        self.map
            .as_ptr()
            .wrapping_add(self.offset + i * PAGE_SIZE)
            .expose_provenance()
    }

    /// Page `i` of the chunk for writing.
    #[inline]
    pub(crate) fn page_mut(&mut self, i: usize) -> &mut Page {
        assert!(i < CHUNK_PAGES);
        // SAFETY: as in `page`, with the unique borrow of `self`.
        unsafe { &mut *self.map.as_mut_ptr().add(self.offset).cast::<Page>().add(i) }
    }
}

impl std::fmt::Debug for Chunk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chunk").finish_non_exhaustive()
    }
}

/// A huge-page chunk ordered from the prefault thread.
#[derive(Debug, Default)]
pub(crate) enum Spare {
    /// None ordered.
    #[default]
    None,
    /// Being made; it arrives on the channel.
    Ordered(Receiver<Chunk>),
    /// Made and faulted in.
    Ready(Chunk),
}

impl Spare {
    /// Have the prefault thread (started on the first order) map a
    /// huge-page chunk and fault it in; `Spare::None` if the thread could
    /// not be started.
    pub(crate) fn order() -> Spare {
        let Some(thread) = prefault_thread() else {
            return Spare::None;
        };
        let (reply, arrival) = mpsc::channel();
        match thread.send(reply) {
            Ok(()) => Spare::Ordered(arrival),
            Err(_) => Spare::None,
        }
    }

    /// Whether a chunk is ordered or ready.
    pub(crate) fn is_some(&self) -> bool {
        !matches!(self, Spare::None)
    }

    /// The chunk, if it is ready, without waiting; a chunk still being
    /// made stays ordered.
    pub(crate) fn take_ready(&mut self) -> Option<Chunk> {
        if let Spare::Ordered(arrival) = self {
            match arrival.try_recv() {
                Ok(chunk) => *self = Spare::Ready(chunk),
                Err(TryRecvError::Empty) => return None,
                Err(TryRecvError::Disconnected) => *self = Spare::None,
            }
        }
        match std::mem::take(self) {
            Spare::Ready(chunk) => Some(chunk),
            other => {
                *self = other;
                None
            }
        }
    }

    /// Wait until an ordered chunk has arrived.
    #[cfg(test)]
    pub(crate) fn wait(&mut self) {
        if let Spare::Ordered(arrival) = self {
            *self = match arrival.recv() {
                Ok(chunk) => Spare::Ready(chunk),
                Err(_) => Spare::None,
            };
        }
    }
}

/// An order to the prefault thread: where to send the chunk it makes.
type Order = Sender<Chunk>;

/// The process's prefault thread: it makes a chunk for each order, faults
/// it in and sends it. `None` if it could not be started.
fn prefault_thread() -> Option<&'static Sender<Order>> {
    static THREAD: OnceLock<Option<Sender<Order>>> = OnceLock::new();
    THREAD
        .get_or_init(|| {
            let (orders, inbox) = mpsc::channel::<Order>();
            std::thread::Builder::new()
                .name("exhash-prefault".into())
                // It needs little stack, and a small one is quicker to set
                // up on the insert that starts the thread.
                .stack_size(64 * 1024)
                .spawn(move || {
                    never_preempt_on_waking();
                    for reply in inbox {
                        let mut chunk = Chunk::new(true);
                        chunk.set_up_for_faults();
                        chunk.prefault(CHUNK_PAGES);
                        // The store may be gone; its chunk goes with it.
                        let _ = reply.send(chunk);
                    }
                })
                .ok()
                .map(|_| orders)
        })
        .as_ref()
}

/// Make the calling thread one that never preempts another on waking
/// (Linux: `SCHED_BATCH`), so that ordering a chunk does not hand the
/// inserting thread's CPU to the prefault thread: a normal thread, woken
/// there, took it over for the 300 µs of zeroing, at every order. It keeps
/// a normal thread's share of the CPU, so that the chunks arrive in time
/// on a busy machine: at `SCHED_IDLE`, which runs only on a CPU nothing
/// else wants, they came late for nearly every chunk of a 1M-pair load
/// while other builds kept both cores busy, and those chunks fell back to
/// small pages (puts and lookups 10-30% slower). Elsewhere a no-op.
fn never_preempt_on_waking() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `sched_param` is a C struct of integers (musl's has
        // more fields than glibc's), for which all zeros is a valid value:
        // priority 0, the one SCHED_BATCH takes.
        let param: libc::sched_param = unsafe { std::mem::zeroed() };
        // The system call itself, not libc's wrapper: musl's always fails
        // (ENOSYS), so static musl builds would never get SCHED_BATCH.
        // SAFETY: `param` is valid for the call's duration; pid 0 is the
        // calling thread. Failure leaves the thread's policy as it was,
        // which only costs latency.
        let _ = unsafe {
            libc::syscall(
                libc::SYS_sched_setscheduler,
                0 as libc::pid_t,
                libc::SCHED_BATCH,
                &raw const param,
            )
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ordered_chunk_arrives_zeroed_and_writable() {
        let mut spare = Spare::order();
        assert!(spare.is_some(), "the prefault thread starts");
        spare.wait();
        let mut chunk = spare.take_ready().expect("ready after waiting");
        assert!(!spare.is_some());
        for i in 0..CHUNK_PAGES {
            assert!(chunk.page(i).0.iter().all(|&b| b == 0), "page {i}");
            chunk.page_mut(i).0.fill(i as u8);
        }
        for i in 0..CHUNK_PAGES {
            assert!(chunk.page(i).0.iter().all(|&b| b == i as u8), "page {i}");
        }
    }

    #[test]
    fn a_chunk_still_being_made_stays_ordered() {
        let mut spare = Spare::order();
        // Whether or not it has arrived yet, taking never waits, and a
        // chunk not taken is still on its way.
        match spare.take_ready() {
            Some(chunk) => assert!(chunk.page(0).0.iter().all(|&b| b == 0)),
            None => {
                assert!(matches!(spare, Spare::Ordered(_)));
                spare.wait();
                assert!(spare.take_ready().is_some());
            }
        }
        assert!(spare.take_ready().is_none());
    }

    #[test]
    fn prefaulting_part_of_a_chunk_keeps_it_zero() {
        let mut chunk = Chunk::new(false);
        chunk.prefault(3);
        for i in 0..CHUNK_PAGES {
            assert!(chunk.page(i).0.iter().all(|&b| b == 0), "page {i}");
        }
    }
}
