//! The table's geometry besides the page layout (`group.rs`): depths, what
//! is known of each page, the directory's slot encoding.

use crate::store::{PAGE_SIZE, PageId};

/// The deepest a page (and so the directory) may go: 2^26 directory slots.
/// Entries that cannot be placed at this depth (only possible with keys
/// crafted against the public mixer) go to a small ordered spill map.
pub const MAX_DEPTH: u8 = 26;

/// Every page covers at most half of position space, so page-local
/// positions fit in 64 bits.
pub(crate) const MIN_DEPTH: u8 = 1;

/// What the table knows about each page besides its bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PageMeta {
    /// Local depth; 0 marks a page id that is not in use.
    pub depth: u8,
    /// The `depth` leading position bits every entry of the page shares.
    pub prefix: u32,
    /// Entries in the page.
    pub count: u32,
}

pub(crate) type DirSlot = u32;

#[inline]
pub(crate) fn dir_slot(id: PageId, depth: u8) -> DirSlot {
    debug_assert!(id < 1 << 26);
    (id << 6) | depth as u32
}

#[inline]
pub(crate) fn slot_page(slot: DirSlot) -> PageId {
    slot >> 6
}

/// A slot of the lookup directory: the address of a page's bytes (their
/// low 13 bits are zero, pages being aligned to their size), with the
/// page's depth in the low 6 bits, as in a [`DirSlot`].
pub(crate) type LookSlot = usize;

#[inline]
pub(crate) fn look_slot(address: usize, depth: u8) -> LookSlot {
    debug_assert_eq!(address % PAGE_SIZE, 0);
    address | depth as usize
}

/// The page address of a [`LookSlot`].
#[inline(always)]
pub(crate) fn look_address(slot: LookSlot) -> usize {
    slot & !(PAGE_SIZE - 1)
}
