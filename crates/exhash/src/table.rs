//! The table: lookups, inserts and removals in the pages' groups
//! (`group.rs`). The directory and its page splits and merges are in
//! `directory.rs`.

use std::collections::BTreeMap;

use crate::directory_room::Room;
use crate::group::{self, Narrow, Seek, Shape, Wide, narrow};
use crate::layout::{
    DirSlot, LookSlot, MAX_DEPTH, MIN_DEPTH, PageMeta, dir_slot, look_address, look_slot,
    pages_at_depth, slot_page,
};
use crate::mix::{hash_of_position, mix, position_high, unmix};
use crate::page::{Page, PageId};
use crate::page_table::PageTable;
use crate::store::{MemoryStore, PageStore};

/// How many keys ahead the batch operations prefetch a key's tags (and
/// half as far, its slot). Past the last-level cache a lookup waits
/// ~100 ns for memory: 32 keys ahead keep enough of them in flight where
/// 16 did not (`profile_get`, batched gets at 8M random pairs 30.4-31.1
/// -> 24.8-25.6 ns, at 1M 20.6-22.4 -> 18.5-18.6 ns; 48 and 64 ahead no
/// better at 8M; batched puts unchanged).
const PREFETCH_AHEAD: usize = 32;

/// Where a key goes: its page, the page's depth, its page-local position.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Loc {
    pub page: PageId,
    /// The page's address (from the lookup directory).
    pub address: usize,
    pub depth: u8,
    pub z: u64,
}

/// A key ready for a lookup in its page: the page, its shape, and the
/// key's position there taken apart (a [`group::Key`] in 24 bytes with
/// the page, so that a batch keeps its ring of them in few lines).
#[derive(Clone, Copy)]
struct Probe<'a> {
    page: &'a Page,
    field: u64,
    home: u8,
    tag: u8,
    narrow: bool,
}

impl Probe<'_> {
    #[inline(always)]
    fn key(&self) -> group::Key {
        group::Key {
            home: self.home as usize,
            tag: self.tag,
            field: self.field,
        }
    }

    /// The value in the page, if the key is there.
    #[inline(always)]
    fn find(&self) -> Option<u64> {
        let (page, k) = (self.page, self.key());
        if self.narrow {
            group::find::<Narrow>(page, &k).map(|s| group::value::<Narrow>(page, s))
        } else {
            group::find::<Wide>(page, &k).map(|s| group::value::<Wide>(page, s))
        }
    }

    /// Prefetch the tags of the key's home group.
    #[inline(always)]
    fn prefetch_tags(&self) {
        group::prefetch_tags(self.page, self.home as usize);
    }

    /// Prefetch the slot the lookup will touch (its tags read: best
    /// when [`Probe::prefetch_tags`] asked for them earlier).
    #[inline(always)]
    fn prefetch_slot(&self) {
        if self.narrow {
            group::prefetch_slot::<Narrow>(self.page, &self.key());
        } else {
            group::prefetch_slot::<Wide>(self.page, &self.key());
        }
    }
}

/// An extendible hash table from u64 keys to u64 values in 8 KiB pages.
#[derive(Debug)]
pub struct ExHash<S: PageStore = MemoryStore> {
    pub(crate) store: S,
    /// The directory: slot `i` names the page whose prefix `i` starts
    /// with (at the global depth) and that page's depth.
    pub(crate) dir: Vec<DirSlot>,
    /// The same directory for lookups: slot `i` holds the address of
    /// `dir[i]`'s page instead of its id, so that a lookup goes from the
    /// directory straight to the page's bytes. Through the id it waited
    /// for one more load, the store's chunk, before the page's own miss:
    /// lone gets at 8M random pairs took 59.8-61.2 ns against 56.2-57.1
    /// through addresses, at 1M 20.3-25.8 against 18.0-23.4 (`profile_get`,
    /// the two builds in turn). Kept equal to `dir` by every change of it
    /// ([`ExHash::point`], the doubling and halving), which
    /// `check_invariants` checks.
    pub(crate) look: Vec<LookSlot>,
    /// `33 - global_depth`: a position's high part shifted right by this
    /// is its slot (kept with the depth, one instruction fewer a lookup).
    pub(crate) look_shift: u8,
    pub(crate) global_depth: u8,
    pub(crate) meta: PageTable,
    pub(crate) len: u64,
    /// Removals so far: with `len`, the stamp that tells whether a page's
    /// floor is still exact (`ExHash::stamp`).
    pub(crate) removed: u64,
    pub(crate) spill: BTreeMap<u64, u64>,
    /// Live pages at each depth: the directory halves when none is left
    /// at the global depth, and knows then how many are at the next
    /// without reading the page table (a scan of it took 20-80 µs at 16K
    /// pages, on a remove).
    pub(crate) at_depth: [u32; MAX_DEPTH as usize + 1],
    /// Room for the directory's next doubling, into which each split
    /// copies a few more of the directory's slots, and for its next
    /// halving, into which each merge does (`directory_room.rs`).
    pub(crate) next_dir: Room<DirSlot>,
    /// Room for the lookup directory's, the same way.
    pub(crate) next_look: Room<LookSlot>,
    /// Working page for splits and merges, kept so that they do not
    /// allocate.
    pub(crate) scratch: Box<Page>,
}

impl ExHash<MemoryStore> {
    /// An empty table in memory.
    pub fn new() -> ExHash<MemoryStore> {
        ExHash::with_store(MemoryStore::new())
    }

    /// An empty table in memory with pages for about `n` entries already
    /// laid out, and their memory faulted in, so that filling it to `n`
    /// splits few pages and waits for no fresh memory.
    pub fn with_capacity(n: usize) -> ExHash<MemoryStore> {
        // Pages hold about 370 random pairs at a typical fill; start one
        // level shallower than that and let the densest pages split.
        let pages = (n / 370).max(1);
        let depth = (usize::BITS - 1 - pages.leading_zeros()) as u8;
        let depth = depth.clamp(MIN_DEPTH, 20);
        let mut store = MemoryStore::new();
        store.reserve(1 << depth);
        ExHash::with_store_and_depth(store, depth)
    }
}

impl Default for ExHash<MemoryStore> {
    fn default() -> Self {
        ExHash::new()
    }
}

impl<S: PageStore> ExHash<S> {
    /// An empty table over an empty `store`.
    pub fn with_store(store: S) -> ExHash<S> {
        ExHash::with_store_and_depth(store, MIN_DEPTH)
    }

    fn with_store_and_depth(store: S, depth: u8) -> ExHash<S> {
        let mut table =
            ExHash::from_parts(store, Vec::new(), depth, Vec::new(), 0, BTreeMap::new());
        for prefix in 0..1u32 << depth {
            let id = table.store.allocate();
            table.set_meta(
                id,
                PageMeta {
                    depth,
                    prefix,
                    floor: 0,
                    counted: 0,
                },
            );
            table.dir.push(dir_slot(id, depth));
            table.look.push(look_slot(table.store.address(id), depth));
        }
        table.at_depth[depth as usize] = 1 << depth;
        table
    }

    pub(crate) fn from_parts(
        store: S,
        dir: Vec<DirSlot>,
        global_depth: u8,
        meta: Vec<PageMeta>,
        len: u64,
        spill: BTreeMap<u64, u64>,
    ) -> ExHash<S> {
        let at_depth = pages_at_depth(&meta);
        let look = dir
            .iter()
            .map(|&slot| look_slot(store.address(slot_page(slot)), (slot & 63) as u8))
            .collect();
        let mut next_dir = Room::default();
        next_dir.lay_out(2 * dir.len());
        let mut next_look = Room::default();
        next_look.lay_out(2 * dir.len());
        ExHash {
            store,
            dir,
            look,
            look_shift: 33 - global_depth,
            global_depth,
            meta: PageTable::from(meta),
            len,
            removed: 0,
            spill,
            at_depth,
            next_dir,
            next_look,
            scratch: Page::empty(),
        }
    }

    /// What changes with every new entry and with nothing else: entries
    /// now plus removals so far, which a removal leaves as it was. It
    /// only grows, so a page's floor is exact while its `counted` is the
    /// stamp (`PageMeta::floor`).
    #[inline]
    pub(crate) fn stamp(&self) -> u32 {
        self.len.wrapping_add(self.removed) as u32
    }

    /// Number of entries.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the table has no entries.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The page store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Give up the table, keeping its page store.
    pub fn into_store(self) -> S {
        self.store
    }

    pub(crate) fn set_meta(&mut self, id: PageId, m: PageMeta) {
        self.meta.set(id as usize, m);
    }

    /// Point directory slots `slots` at page `id` of depth `depth`.
    /// Their copies in the rooms of the next doubling follow.
    pub(crate) fn point(&mut self, slots: std::ops::Range<usize>, id: PageId, depth: u8) {
        let (slot, look) = (
            dir_slot(id, depth),
            look_slot(self.store.address(id), depth),
        );
        self.dir[slots.clone()].fill(slot);
        self.look[slots.clone()].fill(look);
        self.next_dir.mirror(slots.clone(), slot);
        self.next_look.mirror(slots, look);
    }

    #[inline]
    pub(crate) fn locate(&self, h: u64) -> Loc {
        let g = position_high(h);
        let i = self.slot_of(g);
        debug_assert!(i < self.dir.len() && i < self.look.len());
        // SAFETY: `i` is below 2^global_depth, the length of both
        // directories (as in `find_page`).
        let (slot, look) = unsafe { (*self.dir.get_unchecked(i), *self.look.get_unchecked(i)) };
        let depth = (slot & 63) as u8;
        Loc {
            page: slot_page(slot),
            address: look_address(look),
            depth,
            z: page_position(g, h, depth),
        }
    }

    /// The directory slot of a position whose high part is `g`.
    #[inline(always)]
    fn slot_of(&self, g: u64) -> usize {
        (g >> self.look_shift) as usize
    }

    /// The page of hash `h` found through the lookup directory, for
    /// reading: the page, its depth, and `h`'s position in it.
    #[inline(always)]
    fn find_page(&self, h: u64) -> (&Page, u8, u64) {
        let g = position_high(h);
        let i = self.slot_of(g);
        debug_assert!(i < self.look.len());
        // SAFETY: `g` is below 2^33 (`mix::skew`), so `i` is below
        // 2^global_depth, the length of the lookup directory (as of the
        // directory, which `check_invariants` checks).
        let slot = unsafe { *self.look.get_unchecked(i) };
        let depth = (slot & 63) as u8;
        // SAFETY: `look` holds the address of the live page `dir` names
        // at the same slot (kept so by every change of the directory),
        // and the store, sealed, keeps a live page's bytes at that
        // address, aligned, while it lives (`store::fixed`). `self` is
        // borrowed for the reference's lifetime, so the page cannot be
        // written meanwhile (`page_mut` takes the store mutably) nor the
        // store dropped.
        let page = unsafe { &*std::ptr::with_exposed_provenance::<Page>(look_address(slot)) };
        (page, depth, page_position(g, h, depth))
    }

    /// The hash of the entry at page-local position `z` of a page.
    pub(crate) fn hash_at(m: &PageMeta, z: u64) -> u64 {
        let g = ((m.prefix as u64) << (33 - m.depth)) | (z >> 32);
        hash_of_position(g, z & 0xffff_ffff).expect("positions in a page come from hashes")
    }

    /// The value stored for `key`.
    #[inline]
    pub fn get(&self, key: u64) -> Option<u64> {
        // Not through a `Probe`: with one shape test for the whole lookup,
        // it takes 4 instructions fewer (cachegrind, 124 -> 120).
        let (page, depth, z) = self.find_page(mix(key));
        let found = if narrow(depth) {
            get_in::<Narrow>(page, z)
        } else {
            get_in::<Wide>(page, z)
        };
        self.or_spilled(found, key)
    }

    /// What a lookup of `key` found in its page, or else in the spill map.
    #[inline(always)]
    fn or_spilled(&self, found: Option<u64>, key: u64) -> Option<u64> {
        if found.is_some() || self.spill.is_empty() {
            return found;
        }
        self.spill.get(&key).copied()
    }

    /// Whether `key` is stored in a page (not the spill map).
    pub(crate) fn in_pages(&self, key: u64) -> bool {
        self.probe(key).find().is_some()
    }

    /// Look up many keys, prefetching in two steps so that the memory
    /// latencies of consecutive lookups overlap: the tags of each key's
    /// home group 32 keys ahead, and the slot they point to 16 keys
    /// ahead. `out` is cleared, then `out[i]` answers `keys[i]`.
    ///
    /// Each key is mixed, located and taken apart once, when its tags are
    /// asked for, and kept for the two steps after (a lookup changes
    /// nothing, so it stays right): doing it again at each step took a
    /// quarter of the instructions of a batched lookup (cachegrind: 265
    /// a key before, 205 since; whole runs of 20 batches of 1M gets 0.80-
    /// 0.83 of the time).
    pub fn get_many(&self, keys: &[u64], out: &mut Vec<Option<u64>>) {
        /// Probes kept: those of the keys from the one looked up to the
        /// one whose tags were asked for last, in a ring.
        const RING: usize = (PREFETCH_AHEAD + 1).next_power_of_two();
        out.clear();
        out.reserve(keys.len());
        let mut ring: [Option<Probe<'_>>; RING] = [None; RING];
        for (i, slot) in ring.iter_mut().enumerate().take(PREFETCH_AHEAD) {
            *slot = self.ask(keys, i);
        }
        for (i, &key) in keys.iter().enumerate() {
            ring[(i + PREFETCH_AHEAD) % RING] = self.ask(keys, i + PREFETCH_AHEAD);
            // Slot j of the ring holds key j's probe (None past the end).
            if let Some(near) = ring[(i + PREFETCH_AHEAD / 2) % RING] {
                near.prefetch_slot();
            }
            let found = ring[i % RING].and_then(|probe| probe.find());
            out.push(self.or_spilled(found, key));
        }
    }

    /// `keys[i]`'s probe, its tags asked for; `None` past the end.
    #[inline(always)]
    fn ask(&self, keys: &[u64], i: usize) -> Option<Probe<'_>> {
        let probe = self.probe(*keys.get(i)?);
        probe.prefetch_tags();
        Some(probe)
    }

    /// `key` located and taken apart for a lookup in its page.
    #[inline(always)]
    fn probe(&self, key: u64) -> Probe<'_> {
        let (page, depth, z) = self.find_page(mix(key));
        let narrow = narrow(depth);
        let k = if narrow {
            group::key::<Narrow>(z)
        } else {
            group::key::<Wide>(z)
        };
        Probe {
            page,
            field: k.field,
            // Below the 34 groups of a page.
            home: k.home as u8,
            tag: k.tag,
            narrow,
        }
    }

    /// Insert many pairs (later ones win), prefetching ahead like
    /// [`ExHash::get_many`].
    pub fn insert_many(&mut self, pairs: &[(u64, u64)]) {
        for (i, &(key, value)) in pairs.iter().enumerate() {
            self.prefetch_ahead(
                pairs.get(i + PREFETCH_AHEAD).map(|p| &p.0),
                pairs.get(i + PREFETCH_AHEAD / 2).map(|p| &p.0),
            );
            self.insert(key, value);
        }
    }

    /// Prefetch the home group's tags of `far`, and the slot `near` will
    /// touch (its tags prefetched earlier).
    #[inline(always)]
    fn prefetch_ahead(&self, far: Option<&u64>, near: Option<&u64>) {
        if let Some(&key) = far {
            self.probe(key).prefetch_tags();
        }
        if let Some(&key) = near {
            self.probe(key).prefetch_slot();
        }
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: u64) -> bool {
        self.get(key).is_some()
    }

    /// Insert or overwrite; returns the previous value.
    #[inline]
    pub fn insert(&mut self, key: u64, value: u64) -> Option<u64> {
        self.store.noted(key, Some(value));
        let h = mix(key);
        let loc = self.locate(h);
        let done = if narrow(loc.depth) {
            self.insert_in::<Narrow>(&loc, key, value)
        } else {
            self.insert_in::<Wide>(&loc, key, value)
        };
        match done {
            Ok(old) => old,
            Err(()) => {
                self.len += 1;
                self.place_slow(h, value);
                None
            }
        }
    }

    /// Insert into the page at `loc`; `Err` if the key is new and its
    /// reach in the page is full.
    #[inline(always)]
    fn insert_in<T: Shape>(&mut self, loc: &Loc, key: u64, value: u64) -> Result<Option<u64>, ()> {
        let k = group::key::<T>(loc.z);
        // SAFETY: `locate` took the address from the lookup directory's
        // slot that names this page in `dir`, and the directory names
        // only live pages.
        let page = unsafe { self.store.page_mut_at(loc.page, loc.address) };
        let seek = group::seek::<T>(page, &k);
        if let Seek::Found(s) = seek {
            let old = group::value::<T>(page, s);
            group::set_value::<T>(page, s, value);
            return Ok(Some(old));
        }
        if !self.spill.is_empty()
            && let Some(slot) = self.spill.get_mut(&key)
        {
            return Ok(Some(std::mem::replace(slot, value)));
        }
        let Seek::Free { slot, o } = seek else {
            return Err(());
        };
        group::put::<T>(page, &k, slot, o, value);
        self.len += 1;
        Ok(None)
    }

    /// Try to put a new entry into its page.
    fn try_place(&mut self, loc: &Loc, value: u64) -> bool {
        let page = self.store.page_mut(loc.page);
        let placed = if narrow(loc.depth) {
            group::place::<Narrow>(page, &group::key::<Narrow>(loc.z), value)
        } else {
            group::place::<Wide>(page, &group::key::<Wide>(loc.z), value)
        };
        // The slow path keeps the floor exact: the pages it places into
        // were just counted by a split, with the stamp this entry's
        // count in `len` already gave.
        if placed {
            self.meta[loc.page as usize].floor += 1;
        }
        placed
    }

    /// Place an entry (already counted in `len`) whose reach is full: split
    /// pages until it fits (and place what splits could not), or spill at
    /// the depth limit.
    #[inline(never)]
    pub(crate) fn place_slow(&mut self, h: u64, value: u64) {
        let mut pending = vec![(h, value)];
        while let Some((h, v)) = pending.pop() {
            loop {
                let loc = self.locate(h);
                if self.try_place(&loc, v) {
                    break;
                }
                if loc.depth >= MAX_DEPTH {
                    self.spill.insert(unmix(h), v);
                    break;
                }
                self.split(loc.page, &mut pending);
            }
        }
    }

    /// Remove `key`; returns its value.
    pub fn remove(&mut self, key: u64) -> Option<u64> {
        let h = mix(key);
        let loc = self.locate(h);
        let removed = if narrow(loc.depth) {
            self.remove_in::<Narrow>(&loc)
        } else {
            self.remove_in::<Wide>(&loc)
        };
        let Some(old) = removed else {
            let v = self.spill.remove(&key)?;
            self.store.noted(key, None);
            // Counted as a removal, so that the stamp never goes back to
            // a value a page's floor was exact at.
            self.len -= 1;
            self.removed += 1;
            return Some(v);
        };
        self.store.noted(key, None);
        self.len -= 1;
        self.removed += 1;
        self.maybe_merge(h);
        Some(old)
    }

    fn remove_in<T: Shape>(&mut self, loc: &Loc) -> Option<u64> {
        let k = group::key::<T>(loc.z);
        let s = group::find::<T>(self.store.page(loc.page), &k)?;
        let page = self.store.page_mut(loc.page);
        let old = group::value::<T>(page, s);
        group::remove::<T>(page, s);
        let floor = &mut self.meta[loc.page as usize].floor;
        *floor = floor.saturating_sub(1);
        Some(old)
    }
}

/// The position of hash `h` in its page of depth `depth`, `g` being its
/// position's high part (`mix::position_high`): the position's low
/// `65 - depth` bits.
#[inline(always)]
fn page_position(g: u64, h: u64, depth: u8) -> u64 {
    // The mask of `g`'s low `33 - depth` bits, as `MAX >> (31 + depth)`:
    // two instructions fewer than `(1 << (33 - depth)) - 1`.
    ((g & (u64::MAX >> (31 + depth as u32))) << 32) | (h & 0xffff_ffff)
}

#[inline(always)]
fn get_in<T: Shape>(page: &Page, z: u64) -> Option<u64> {
    let k = group::key::<T>(z);
    // The slot a hit reads lies after the group's tags in another cache
    // line: asking for it now overlaps the two misses (lone gets at 1M
    // random pairs 81 -> 47 ns against hashbrown's 26 -> 25, medians of
    // five interleaved runs; the same in an insert made puts slower).
    group::prefetch_group_slots::<T>(page, k.home);
    match group::find_at_home::<T>(page, &k) {
        group::Home::Found(s) => Some(group::value::<T>(page, s)),
        group::Home::Absent => None,
        group::Home::Beyond => group::find::<T>(page, &k).map(|s| group::value::<T>(page, s)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_over_spare_chunks_keeps_every_entry() {
        // Enough keys for three chunks of pages; the spare is waited for,
        // so every chunk after the first comes from the prefault thread.
        let mut table = ExHash::new();
        let mut keys = 7u64;
        let mut pairs = Vec::new();
        while table.store.id_limit() <= 2 * crate::chunk::CHUNK_PAGES + 10 {
            table.store.wait_for_spare();
            keys = keys.wrapping_mul(0x2545_F491_4F6C_DD1D).wrapping_add(1);
            let v = keys.rotate_left(17);
            assert_eq!(table.insert(keys, v), None);
            pairs.push((keys, v));
        }
        assert_eq!(table.store.spares_used(), 2);
        table.check_invariants().unwrap();
        assert_eq!(table.len(), pairs.len() as u64);
        for &(k, v) in &pairs {
            assert_eq!(table.get(k), Some(v));
        }
    }

    #[test]
    fn with_capacity_faults_in_its_pages_and_fills() {
        let mut table = ExHash::with_capacity(400_000);
        let pages = table.store.id_limit();
        assert!(pages >= 512, "{pages}");
        assert!(table.store.chunks_len() * crate::chunk::CHUNK_PAGES >= pages);
        for i in 0..20_000u64 {
            table.insert(i.wrapping_mul(0x9E37_79B9_7F4A_7C15), i);
        }
        table.check_invariants().unwrap();
        for i in 0..20_000u64 {
            assert_eq!(table.get(i.wrapping_mul(0x9E37_79B9_7F4A_7C15)), Some(i));
        }
    }
}
