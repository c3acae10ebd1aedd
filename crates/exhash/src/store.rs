//! Page storage: the trait the table is written against, and the memory
//! backend. The file backend (`file.rs`) keeps the same pages in memory and
//! adds durable, atomic commits.

/// Bytes in one page.
pub const PAGE_SIZE: usize = 8192;

/// Identifies a page inside a store.
pub type PageId = u32;

/// One 8 KiB page (layout in `group.rs`), aligned to a cache line. All
/// zeros is an empty page.
#[repr(C, align(64))]
#[derive(Clone)]
pub struct Page(pub [u8; PAGE_SIZE]);

impl std::fmt::Debug for Page {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Page").finish_non_exhaustive()
    }
}

impl Page {
    /// An empty page.
    pub fn empty() -> Box<Page> {
        Box::new(Page([0; PAGE_SIZE]))
    }

    /// Empty the page.
    pub fn clear(&mut self) {
        self.0.fill(0);
    }
}

/// Where the table keeps its pages.
pub trait PageStore {
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
}

/// Pages per chunk of the memory store: 2 MiB.
const CHUNK_PAGES: usize = 256;
const CHUNK_BYTES: usize = CHUNK_PAGES * PAGE_SIZE;

/// 2 MiB of zeroed pages, aligned to 2 MiB and, from a table's second
/// chunk on, marked for transparent huge pages where the kernel offers
/// them: a random lookup then needs one TLB entry per chunk instead of one
/// per 4 KiB. (The first chunk keeps small pages, so a small table costs
/// only the pages it uses, not 2 MiB.)
struct Chunk {
    map: memmap2::MmapMut,
    /// Where the aligned 2 MiB start inside `map`.
    offset: usize,
}

impl Chunk {
    fn new(huge: bool) -> Chunk {
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
            // Only a hint: without huge pages the chunk works the same.
            let _ = map.advise_range(memmap2::Advice::HugePage, offset, CHUNK_BYTES);
        }
        #[cfg(not(target_os = "linux"))]
        let _ = huge;
        Chunk { map, offset }
    }

    /// Page `i` of the chunk.
    #[inline]
    fn page(&self, i: usize) -> &Page {
        assert!(i < CHUNK_PAGES);
        // SAFETY: the chunk's aligned 2 MiB lie inside the mapping and hold
        // CHUNK_PAGES pages, aligned to 2 MiB (more than a page's
        // alignment); a page is plain bytes, so any contents are a valid
        // page; the borrow of `self` keeps the mapping alive.
        unsafe { &*self.map.as_ptr().add(self.offset).cast::<Page>().add(i) }
    }

    /// Page `i` of the chunk for writing.
    #[inline]
    fn page_mut(&mut self, i: usize) -> &mut Page {
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

/// Pages held in memory only, in 2 MiB chunks that never move once
/// allocated: a page is found by arithmetic on its id, and growing the
/// store never copies the pages already in it.
#[derive(Debug, Default)]
pub struct MemoryStore {
    /// Never ask for transparent huge pages (see [`MemoryStore::with_small_pages`]).
    small_pages: bool,
    chunks: Vec<Chunk>,
    /// Page ids handed out so far (live or free).
    ids: usize,
    live: Vec<bool>,
    free: Vec<PageId>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    /// An empty store that keeps its chunks in small (4 KiB) pages. By
    /// default a chunk asks for a transparent huge page, which makes
    /// lookups and inserts in a large table 10-20% faster (one TLB entry
    /// per 2 MiB), but the kernel faults a huge page in all at once,
    /// zeroing 2 MiB and, when memory is fragmented, compacting it first:
    /// measured at up to 6 ms for the one insert that touches a fresh
    /// chunk. With small pages, memory is faulted in 8 KiB at a time and
    /// no insert waits for more than a page split or a directory doubling.
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

    /// A fresh id past every one handed out; its page is fresh memory,
    /// so already empty.
    fn grow(&mut self) -> PageId {
        let id = self.ids;
        if id == self.chunks.len() * CHUNK_PAGES {
            // Fresh anonymous memory is zero, and costs resident memory
            // only as its pages are used.
            let chunk = Chunk::new(!self.small_pages && !self.chunks.is_empty());
            self.chunks.push(chunk);
        }
        self.ids += 1;
        self.live.push(false);
        id as PageId
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
