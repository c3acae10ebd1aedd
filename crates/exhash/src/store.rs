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

/// Pages held in memory only, in one contiguous arena so that a page is
/// found by arithmetic on its id.
#[derive(Debug, Default)]
pub struct MemoryStore {
    pages: Vec<Page>,
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
        self.pages.len()
    }

    /// Whether `id` is live.
    pub fn is_live(&self, id: PageId) -> bool {
        self.live.get(id as usize).copied().unwrap_or(false)
    }

    /// Put `page` under `id`, growing the id space as needed (used when
    /// loading a file).
    pub(crate) fn install(&mut self, id: PageId, page: &Page) {
        let i = id as usize;
        while self.pages.len() <= i {
            self.pages.push(Page([0; PAGE_SIZE]));
            self.live.push(false);
        }
        self.pages[i].0.copy_from_slice(&page.0);
        self.live[i] = true;
    }

    /// Rebuild the free list after installing pages.
    pub(crate) fn rebuild_free_list(&mut self) {
        self.free = (0..self.pages.len() as PageId)
            .rev()
            .filter(|&id| !self.live[id as usize])
            .collect();
    }
}

impl PageStore for MemoryStore {
    #[inline]
    fn page(&self, id: PageId) -> &Page {
        debug_assert!(self.live[id as usize]);
        &self.pages[id as usize]
    }

    #[inline]
    fn page_mut(&mut self, id: PageId) -> &mut Page {
        debug_assert!(self.live[id as usize]);
        &mut self.pages[id as usize]
    }

    fn allocate(&mut self) -> PageId {
        match self.free.pop() {
            Some(id) => {
                self.pages[id as usize].clear();
                self.live[id as usize] = true;
                id
            }
            None => {
                let mut page = Page([0; PAGE_SIZE]);
                page.clear();
                self.pages.push(page);
                self.live.push(true);
                (self.pages.len() - 1) as PageId
            }
        }
    }

    fn release(&mut self, id: PageId) {
        self.live[id as usize] = false;
        self.free.push(id);
    }

    fn live_pages(&self) -> usize {
        self.pages.len() - self.free.len()
    }
}
