//! Page storage: the trait the table is written against, and the memory
//! backend. The file backend (`file.rs`) keeps the same pages in memory and
//! adds durable, atomic commits.

use crate::piece::{self, PIECE_SIZE};

/// Bytes in one page.
pub const PAGE_SIZE: usize = 8192;
/// Pieces in one page.
pub const PIECES: usize = PAGE_SIZE / PIECE_SIZE;

/// Identifies a page inside a store.
pub type PageId = u32;

/// One 8 KiB page: 64 pieces of 128 bytes, aligned to a cache line.
#[repr(C, align(64))]
#[derive(Clone)]
pub struct Page(pub [u8; PAGE_SIZE]);

impl std::fmt::Debug for Page {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Page").finish_non_exhaustive()
    }
}

impl Page {
    /// A page with every piece empty.
    pub fn empty() -> Box<Page> {
        let mut page = Box::new(Page([0; PAGE_SIZE]));
        page.clear();
        page
    }

    /// Empty every piece.
    pub fn clear(&mut self) {
        for i in 0..PIECES {
            piece::clear(self.piece_mut(i));
        }
    }

    /// Piece `i` (0..64).
    #[inline]
    pub fn piece(&self, i: usize) -> &[u8] {
        &self.0[i * PIECE_SIZE..(i + 1) * PIECE_SIZE]
    }

    /// Piece `i` for writing.
    #[inline]
    pub fn piece_mut(&mut self, i: usize) -> &mut [u8] {
        &mut self.0[i * PIECE_SIZE..(i + 1) * PIECE_SIZE]
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

/// Pages held in memory only, in chunks of 256 that never move once
/// allocated: a page is found by arithmetic on its id, and growing the
/// store never copies the pages already in it.
#[derive(Debug, Default)]
pub struct MemoryStore {
    chunks: Vec<Box<[Page]>>,
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

    /// Number of page ids ever handed out (live or free).
    pub fn id_limit(&self) -> usize {
        self.ids
    }

    /// Whether `id` is live.
    pub fn is_live(&self, id: PageId) -> bool {
        self.live.get(id as usize).copied().unwrap_or(false)
    }

    /// A fresh id past every one handed out, its page cleared.
    fn grow(&mut self) -> PageId {
        let id = self.ids;
        if id == self.chunks.len() * CHUNK_PAGES {
            // Zeroed memory comes from the kernel untouched, so a chunk
            // costs resident memory only as its pages are used.
            let layout = std::alloc::Layout::array::<Page>(CHUNK_PAGES).expect("2 MiB");
            // SAFETY: the layout is not empty; a page is plain bytes, for
            // which all zeros is valid; the box frees the allocation with
            // the same global allocator and layout it came from.
            let chunk = unsafe {
                let ptr = std::alloc::alloc_zeroed(layout).cast::<Page>();
                if ptr.is_null() {
                    std::alloc::handle_alloc_error(layout);
                }
                Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, CHUNK_PAGES))
            };
            self.chunks.push(chunk);
        }
        self.ids += 1;
        self.live.push(false);
        self.slot_mut(id as PageId).clear();
        id as PageId
    }

    #[inline]
    fn slot(&self, id: PageId) -> &Page {
        &self.chunks[id as usize / CHUNK_PAGES][id as usize % CHUNK_PAGES]
    }

    #[inline]
    fn slot_mut(&mut self, id: PageId) -> &mut Page {
        &mut self.chunks[id as usize / CHUNK_PAGES][id as usize % CHUNK_PAGES]
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
