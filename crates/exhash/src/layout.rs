//! The table's geometry besides the page layout (`group.rs`): depths, what
//! is known of each page, the directory's slot encoding.

use crate::page::{PAGE_SIZE, PageId};

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
    /// At most the entries in the page: exact when they were last counted
    /// (by a split, a merge's check or opening the file), less one for
    /// each removal since. Inserts leave it alone, so that an insert
    /// writes nothing but its page and the table's length: updating an exact count in this
    /// table (264 KiB at 8M pairs, past the L2 cache) made puts slower
    /// (`profile_put` at 8M random pairs, medians of twelve rounds in
    /// turn, three times: 124.8, 131.5 and 163.6 ns against 117.3, 121.1
    /// and 137.3; at 1M 103.9 and 112.3 against 99.3 and 107.6). A merge,
    /// the one thing that needs the count, counts the page's tags when the
    /// floor says it may be sparse and inserts came since (`counted`):
    /// removing every key of 1M, the second half's removes (the merges)
    /// took 139-146 ns against 130-133, 365 instructions a remove against
    /// 346 over the whole removal.
    pub floor: u32,
    /// The table's stamp (`ExHash::stamp`) when `floor` was last exact:
    /// while the stamp is the same, no insert has come since, and a
    /// merge's check need not count the page again.
    pub counted: u32,
}

/// How many pages of `meta` are live at each depth.
pub(crate) fn pages_at_depth<'a>(
    meta: impl IntoIterator<Item = &'a PageMeta>,
) -> [u32; MAX_DEPTH as usize + 1] {
    let mut at = [0; MAX_DEPTH as usize + 1];
    for m in meta {
        if m.depth > 0 {
            at[m.depth as usize] += 1;
        }
    }
    at
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
