//! Page storage: the trait the table is written against, and the memory
//! backend (its 2 MiB chunks in `chunk.rs`). The file backend (`file/`)
//! keeps the same pages in memory and adds durable, atomic commits.

use crate::chunk::{CHUNK_PAGES, Chunk, Spare};
use crate::page::{Page, PageId};

/// Where the table keeps its pages: [`MemoryStore`] or
/// [`FileStore`](crate::FileStore). The trait is sealed: the table keeps
/// the addresses of pages, so it relies on a live page's bytes staying
/// where they are, which these two promise.
pub trait PageStore: fixed::Fixed + noted::Noted {
    /// The page with id `id` (which must be live).
    fn page(&self, id: PageId) -> &Page;
    /// The page with id `id` for writing (a file store marks it dirty).
    fn page_mut(&mut self, id: PageId) -> &mut Page;
    /// A new, empty page.
    fn allocate(&mut self) -> PageId;
    /// Give page `id` back; its id may be reused.
    fn release(&mut self, id: PageId);
    /// Number of live pages.
    fn live_pages(&self) -> usize;
    /// A hint from [`ExHash::load`](crate::ExHash::load): pages `ids` will
    /// not change again in this load. A file store writes them now, while
    /// the load goes on, so that the next commit has less to write; a
    /// page that changes after all is written again by the commit.
    fn settled(&mut self, ids: &[PageId]) {
        let _ = ids;
    }
}

/// Pages held in memory only, in 2 MiB chunks that never move once
/// allocated: a page is found by arithmetic on its id, and growing the
/// store never copies the pages already in it.
///
/// From a table's second chunk on, a chunk is a transparent huge page
/// where the kernel offers them: a random lookup then needs one TLB entry
/// per 2 MiB instead of one per 4 KiB. The first chunk keeps small pages,
/// so a small table costs only the pages it uses. A huge page is faulted
/// in whole (2 MiB zeroed, sometimes after compacting memory: up to
/// milliseconds), so the store orders each next chunk ahead from a thread
/// of the process's own that maps it and faults it in (started on the
/// first order); an insert that needs a new chunk takes it ready, or, if
/// it has not arrived yet, a chunk of small pages, rather than wait. Up to
/// one spare chunk (2 MiB) is held beyond the pages in use.
#[derive(Debug, Default)]
pub struct MemoryStore {
    /// Never ask for transparent huge pages (see [`MemoryStore::with_small_pages`]).
    small_pages: bool,
    chunks: Vec<Chunk>,
    /// The next huge-page chunk, on order from the prefault thread from
    /// the middle of the first chunk on.
    spare: Spare,
    /// Chunks taken from `spare` (the others were made on the spot).
    #[cfg(test)]
    spares_used: usize,
    /// Page ids handed out so far (live or free).
    ids: usize,
    live: Vec<bool>,
    free: Vec<PageId>,
}

/// The page of a chunk at which the next chunk is ordered: not its first,
/// so that the insert that starts a chunk (at a power of two, also the
/// one that grows the page table) does not order the next one too.
const ORDER_AT: usize = 8;

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    /// An empty store that keeps its chunks in small (4 KiB) pages and
    /// starts no thread. By default chunks from the second on ask for
    /// transparent huge pages, faulted in ahead by a thread of their own
    /// (see [`MemoryStore`]), which makes lookups and inserts in a large
    /// table 10-20% faster (one TLB entry per 2 MiB). With small pages,
    /// memory is faulted in 4 KiB at a time, as it is first touched.
    pub fn with_small_pages() -> MemoryStore {
        MemoryStore {
            small_pages: true,
            ..MemoryStore::default()
        }
    }

    /// Number of page ids ever handed out (live or free).
    pub fn id_limit(&self) -> usize {
        self.ids
    }

    /// Whether `id` is live.
    pub fn is_live(&self, id: PageId) -> bool {
        self.live.get(id as usize).copied().unwrap_or(false)
    }

    /// Chunks taken ready from the prefault thread so far.
    #[cfg(test)]
    pub(crate) fn spares_used(&self) -> usize {
        self.spares_used
    }

    /// Make the chunks for page ids below `ids` now, each faulted in as
    /// far as those ids reach (with huge pages from the second chunk on,
    /// unless the store keeps small pages), so that filling them waits
    /// for no fault: for laying out a table before it is filled, and for
    /// loading one.
    pub(crate) fn reserve(&mut self, ids: usize) {
        while self.chunks.len() * CHUNK_PAGES < ids {
            let mut chunk = Chunk::new(!self.small_pages && !self.chunks.is_empty());
            chunk.prefault(ids - self.chunks.len() * CHUNK_PAGES);
            self.chunks.push(chunk);
        }
    }

    /// A fresh id past every one handed out; its page is fresh memory,
    /// so already empty.
    fn grow(&mut self) -> PageId {
        let id = self.ids;
        if id == self.chunks.len() * CHUNK_PAGES {
            // Fresh anonymous memory is zero, and costs resident memory
            // only as its pages are used.
            let chunk = self.fresh_chunk();
            self.chunks.push(chunk);
        }
        if !self.small_pages
            && !self.spare.is_some()
            && id >= CHUNK_PAGES / 2
            && id % CHUNK_PAGES >= ORDER_AT
        {
            // From the middle of the first chunk on (a smaller table never
            // needs a second), keep the next chunk on order: each has the
            // time it takes to fill most of the chunk before it to arrive.
            self.spare = Spare::order();
        }
        self.ids += 1;
        self.live.push(false);
        id as PageId
    }

    /// The next chunk, from the spare if it is ready.
    fn fresh_chunk(&mut self) -> Chunk {
        if self.small_pages || self.chunks.is_empty() {
            return Chunk::new(false);
        }
        if let Some(chunk) = self.spare.take_ready() {
            #[cfg(test)]
            {
                self.spares_used += 1;
            }
            return chunk;
        }
        // Still being made: small pages now, the spare for the next chunk.
        // Without a prefault thread, a huge page faulted in by whichever
        // insert first touches it.
        Chunk::new(!self.spare.is_some())
    }

    /// Chunks mapped so far.
    #[cfg(test)]
    pub(crate) fn chunks_len(&self) -> usize {
        self.chunks.len()
    }

    /// Wait for the spare chunk if one is ordered (tests: the store then
    /// takes it at its next chunk whatever the timing).
    #[cfg(test)]
    pub(crate) fn wait_for_spare(&mut self) {
        self.spare.wait();
    }

    #[inline]
    fn slot(&self, id: PageId) -> &Page {
        self.chunks[id as usize / CHUNK_PAGES].page(id as usize % CHUNK_PAGES)
    }

    #[inline]
    fn slot_mut(&mut self, id: PageId) -> &mut Page {
        self.chunks[id as usize / CHUNK_PAGES].page_mut(id as usize % CHUNK_PAGES)
    }

    /// Put `page` under `id`, growing the id space as needed (used when
    /// loading a file).
    pub(crate) fn install(&mut self, id: PageId, page: &Page) {
        self.reserve(id as usize + 1);
        while self.ids <= id as usize {
            self.grow();
        }
        self.slot_mut(id).0.copy_from_slice(&page.0);
        self.live[id as usize] = true;
    }

    /// Rebuild the free list after installing pages.
    pub(crate) fn rebuild_free_list(&mut self) {
        self.free = (0..self.ids as PageId)
            .rev()
            .filter(|&id| !self.live[id as usize])
            .collect();
    }
}

/// The promise behind the table's lookup directory (`table.rs`), which
/// only this crate's stores make, so it seals [`PageStore`].
pub(crate) mod fixed {
    use crate::page::{Page, PageId};

    /// A live page's bytes stay at one address, aligned to
    /// [`PAGE_SIZE`](crate::PAGE_SIZE), until the page is released or the
    /// store dropped; they are written only through `page_mut` and
    /// `page_mut_at`.
    pub trait Fixed {
        /// The address of page `id` (live), its provenance exposed, for
        /// `std::ptr::with_exposed_provenance`.
        fn address(&self, id: PageId) -> usize;

        /// Page `id` for writing, as `page_mut` gives it, found at
        /// `address` instead of by its id.
        ///
        /// # Safety
        /// `address` is `self.address(id)` and page `id` is live.
        unsafe fn page_mut_at(&mut self, id: PageId, address: usize) -> &mut Page;
    }
}

pub(crate) mod noted {
    /// What the table tells its store of its changes: a file store keeps
    /// them for its journal (`file/journal.rs`), the memory store nothing.
    pub trait Noted {
        /// The table changed `key`: put `Some(value)`, or removed it
        /// (`None`).
        #[inline(always)]
        fn noted(&mut self, key: u64, value: Option<u64>) {
            let _ = (key, value);
        }
        /// A change too large to journal key by key is under way (a load):
        /// a file store's next commit writes pages.
        fn unjournaled(&mut self) {}
    }
}

impl noted::Noted for MemoryStore {}

impl fixed::Fixed for MemoryStore {
    #[inline]
    fn address(&self, id: PageId) -> usize {
        debug_assert!(self.live[id as usize]);
        self.chunks[id as usize / CHUNK_PAGES].address(id as usize % CHUNK_PAGES)
    }

    #[inline]
    unsafe fn page_mut_at(&mut self, id: PageId, address: usize) -> &mut Page {
        debug_assert_eq!(address, self.address(id));
        // SAFETY: by the caller, `address` is where the live page `id`
        // lies in one of this store's chunks, which hold pages and stay
        // mapped while the store lives; `self` is borrowed mutably for
        // the reference's lifetime, so no other reference to the page
        // exists.
        unsafe { &mut *std::ptr::with_exposed_provenance_mut::<Page>(address) }
    }
}

impl PageStore for MemoryStore {
    #[inline]
    fn page(&self, id: PageId) -> &Page {
        debug_assert!(self.live[id as usize]);
        self.slot(id)
    }

    #[inline]
    fn page_mut(&mut self, id: PageId) -> &mut Page {
        debug_assert!(self.live[id as usize]);
        self.slot_mut(id)
    }

    fn allocate(&mut self) -> PageId {
        let id = match self.free.pop() {
            Some(id) => {
                self.slot_mut(id).clear();
                id
            }
            None => self.grow(),
        };
        self.live[id as usize] = true;
        id
    }

    fn release(&mut self, id: PageId) {
        self.live[id as usize] = false;
        self.free.push(id);
    }

    fn live_pages(&self) -> usize {
        self.ids - self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Allocate `n` pages from `store`, checking each is empty and
    /// stamping it with its id; then check every stamp.
    fn fill_and_check(store: &mut MemoryStore, n: usize, wait: bool) -> Vec<PageId> {
        let mut ids = Vec::new();
        for _ in 0..n {
            if wait {
                store.wait_for_spare();
            }
            let id = store.allocate();
            assert!(store.page(id).0.iter().all(|&b| b == 0), "page {id}");
            store.page_mut(id).0.fill(id as u8 ^ 0x5A);
            store.page_mut(id).0[..4].copy_from_slice(&id.to_le_bytes());
            ids.push(id);
        }
        for &id in &ids {
            let page = &store.page(id).0;
            assert_eq!(page[..4], id.to_le_bytes());
            assert!(page[4..].iter().all(|&b| b == id as u8 ^ 0x5A), "page {id}");
        }
        ids
    }

    #[test]
    fn chunks_after_the_first_come_ready_from_the_spare() {
        let mut store = MemoryStore::new();
        let n = 4 * CHUNK_PAGES + ORDER_AT + 1;
        let ids = fill_and_check(&mut store, n, true);
        assert_eq!(ids, (0..n as PageId).collect::<Vec<_>>());
        assert_eq!(store.chunks.len(), 5);
        // The first chunk keeps small pages; every later one was on order
        // while the one before filled, and waited for.
        assert_eq!(store.spares_used(), 4);
        assert!(store.spare.is_some(), "the next is on order");
        assert_eq!(store.live_pages(), n);
    }

    #[test]
    fn a_late_spare_gives_way_to_small_pages_without_losing_pages() {
        // No waiting: whichever way each chunk comes, pages are fresh,
        // zero, and keep what is written to them.
        let mut store = MemoryStore::new();
        fill_and_check(&mut store, 3 * CHUNK_PAGES + 7, false);
        assert_eq!(store.chunks.len(), 4);
        assert!(store.spares_used() <= 3);
    }

    #[test]
    fn small_pages_order_no_spare() {
        let mut store = MemoryStore::with_small_pages();
        fill_and_check(&mut store, 2 * CHUNK_PAGES + 1, false);
        assert!(!store.spare.is_some());
        assert_eq!(store.spares_used(), 0);
    }

    #[test]
    fn reused_pages_are_cleared_and_reserved_chunks_are_zero() {
        let mut store = MemoryStore::new();
        store.reserve(CHUNK_PAGES + 3);
        assert_eq!(store.chunks.len(), 2);
        assert_eq!(store.id_limit(), 0, "reserving hands out no ids");
        let ids = fill_and_check(&mut store, CHUNK_PAGES + 3, false);
        assert_eq!(store.chunks.len(), 2, "reserved chunks are used");
        store.release(ids[5]);
        store.release(ids[CHUNK_PAGES + 1]);
        assert_eq!(store.live_pages(), CHUNK_PAGES + 1);
        for want in [ids[CHUNK_PAGES + 1], ids[5]] {
            let id = store.allocate();
            assert_eq!(id, want);
            assert!(store.page(id).0.iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn installed_pages_grow_the_id_space() {
        let mut store = MemoryStore::new();
        let mut page = Page::empty();
        page.0[100] = 7;
        store.install(600, &page);
        store.install(3, &page);
        store.rebuild_free_list();
        assert_eq!(store.id_limit(), 601);
        assert_eq!(store.live_pages(), 2);
        assert_eq!(store.page(600).0[100], 7);
        let id = store.allocate();
        assert!(id != 3 && id != 600 && store.page(id).0.iter().all(|&b| b == 0));
    }
}
