//! One page of the table: its size, its id in a store, its bytes (laid
//! out in `group.rs`). Below the stores (`store.rs`, `chunk.rs`, `file/`)
//! and everything that reads a page.

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
