//! The directory: doubling and halving it, splitting a full page into two,
//! merging two underfull sibling pages back into one.

use crate::group::{self, Narrow, Shape, Wide, narrow};
use crate::layout::{MIN_DEPTH, PageMeta, slot_page};
use crate::page::{Page, PageId};
use crate::store::PageStore;
use crate::table::ExHash;

/// A page with fewer entries than this tries to merge with its sibling.
const MERGE_TRIGGER: u32 = 128;
/// Two siblings merge only if their entries together are at most this
/// many (half a page: placing them cannot fail in practice, and the merged
/// page is far from splitting again).
const MERGE_LIMIT: u32 = 256;
/// Directory slots each split copies into the room of the next doubling.
const COPY_AHEAD: usize = 64;

impl<S: PageStore> ExHash<S> {
    /// The entries in page `id`: its floor while no insert has come since
    /// it was exact, else counted, and the floor made exact.
    fn exact_count(&mut self, id: PageId) -> u32 {
        let stamp = self.stamp();
        let m = &self.meta[id as usize];
        if m.counted == stamp {
            return m.floor;
        }
        let n = self.count_entries(id);
        let m = &mut self.meta[id as usize];
        (m.floor, m.counted) = (n, stamp);
        n
    }

    /// The entries in page `id`, counted from its tags.
    pub(crate) fn count_entries(&self, id: PageId) -> u32 {
        let page = self.store.page(id);
        if narrow(self.meta[id as usize].depth) {
            group::len::<Narrow>(page)
        } else {
            group::len::<Wide>(page)
        }
    }

    /// Every (position, value) of page `id`, appended to `out`.
    pub(crate) fn page_entries(&self, id: PageId, out: &mut Vec<(u64, u64)>) {
        let page = self.store.page(id);
        let mut push = |z, v| out.push((z, v));
        if narrow(self.meta[id as usize].depth) {
            group::entries::<Narrow>(page, &mut push);
        } else {
            group::entries::<Wide>(page, &mut push);
        }
    }

    /// Double the directory into the room laid out for it, where the
    /// splits since the last doubling copied it already, then lay out room
    /// for the next doubling (`directory_room.rs`).
    fn double_directory(&mut self) {
        let n = self.dir.len();
        self.next_dir.double(&mut self.dir);
        self.next_look.double(&mut self.look);
        debug_assert_eq!(self.dir.len(), 2 * n);
        self.global_depth += 1;
        self.look_shift -= 1;
    }

    /// Split page `id` into itself (next position bit 0) and a new page
    /// (bit 1), doubling the directory first if the page is at global
    /// depth. Entries stay in their group and slot and only displaced ones
    /// move back; when the geometry changes with the depth (`group.rs`),
    /// entries are placed again, and any that do not fit go to `pending`
    /// as (hash, value).
    pub(crate) fn split(&mut self, id: PageId, pending: &mut Vec<(u64, u64)>) {
        // Each split copies the next `COPY_AHEAD` slots of the directory,
        // each twice, into the room of its next doubling, so the doubling
        // finds them there: all at once, the copy took 65-80 µs at 2^15 ->
        // 2^16 slots (768 KiB of both directories), the longest put of an
        // 8M load. The copy needs one split for each 64 slots; from 2^12
        // slots on, over a thousand come between two doublings. A split
        // allocates or frees memory for one of the rooms or the page
        // table at most: each costs tens of microseconds on the 2-core VM
        // (the two rooms' allocations on one split took 65 µs, their first
        // frees 61 µs). Before this split's own doubling, so that what the
        // doubling leaves to them waits for the next split.
        let busy = self.next_dir.copy_ahead(&self.dir, COPY_AHEAD)
            || self.next_look.copy_ahead(&self.look, COPY_AHEAD);
        if !busy {
            self.meta.prepare();
        }
        let old = self.meta[id as usize];
        if old.depth == self.global_depth {
            self.double_directory();
        }
        let d = old.depth;
        let depth = d + 1;
        let relay = narrow(d) != narrow(depth);
        let mut all = Vec::new();
        if relay {
            self.page_entries(id, &mut all);
        }
        let other = self.store.allocate();
        let (low, high) = (
            PageMeta {
                depth,
                prefix: old.prefix * 2,
                floor: 0,
                counted: self.stamp(),
            },
            PageMeta {
                depth,
                prefix: old.prefix * 2 + 1,
                floor: 0,
                counted: self.stamp(),
            },
        );
        self.set_meta(id, low);
        self.set_meta(other, high);
        self.scratch.clear();
        if !relay {
            let (store, b) = (&mut self.store, &mut self.scratch);
            let (na, nb) = if narrow(d) {
                group::split::<Narrow>(store.page_mut(id), b, d)
            } else {
                group::split::<Wide>(store.page_mut(id), b, d)
            };
            self.meta[id as usize].floor = na;
            self.meta[other as usize].floor = nb;
        } else {
            self.store.page_mut(id).clear();
            let top = 64 - d as u32;
            for (z, v) in all {
                let side = (z >> top) & 1;
                let z = z & !(1 << top);
                let (page, target): (&mut Page, PageId) = if side == 0 {
                    (self.store.page_mut(id), id)
                } else {
                    (&mut self.scratch, other)
                };
                if place_any(page, depth, z, v) {
                    self.meta[target as usize].floor += 1;
                } else {
                    pending.push((Self::hash_at(&self.meta[target as usize], z), v));
                }
            }
        }
        self.store
            .page_mut(other)
            .0
            .copy_from_slice(&self.scratch.0);
        let span = 1usize << (self.global_depth - d);
        let start = (old.prefix as usize) * span;
        self.point(start..start + span / 2, id, depth);
        self.point(start + span / 2..start + span, other, depth);
        self.at_depth[d as usize] -= 1;
        self.at_depth[depth as usize] += 2;
    }

    /// After a removal: while the page of hash `h` is underfull and its
    /// sibling is at the same depth with room, merge them.
    pub(crate) fn maybe_merge(&mut self, h: u64) {
        loop {
            let loc = self.locate(h);
            let m = self.meta[loc.page as usize];
            // The floors are at most the counts, so a floor at the trigger
            // rules a merge out without counting.
            if m.depth <= MIN_DEPTH || m.floor >= MERGE_TRIGGER {
                break;
            }
            let span = 1usize << (self.global_depth - m.depth);
            let buddy = slot_page(self.dir[(m.prefix ^ 1) as usize * span]);
            let b = self.meta[buddy as usize];
            if b.depth != m.depth {
                break;
            }
            // Inserts since the page was last counted do not show in its
            // floor: count it, and its sibling, unless none came since.
            let n = self.exact_count(loc.page);
            if n >= MERGE_TRIGGER {
                break;
            }
            let nb = self.exact_count(buddy);
            if n + nb > MERGE_LIMIT {
                break;
            }
            let bit = 65 - m.depth as u32;
            let depth = m.depth - 1;
            let mut all = Vec::with_capacity((n + nb) as usize);
            for (id, meta) in [(loc.page, m), (buddy, b)] {
                let from = all.len();
                self.page_entries(id, &mut all);
                let top = ((meta.prefix & 1) as u64) << bit;
                for e in &mut all[from..] {
                    e.0 |= top;
                }
            }
            self.scratch.clear();
            if !all
                .iter()
                .all(|&(z, v)| place_any(&mut self.scratch, depth, z, v))
            {
                break;
            }
            let (keep, drop) = if m.prefix & 1 == 0 {
                (loc.page, buddy)
            } else {
                (buddy, loc.page)
            };
            self.store.page_mut(keep).0.copy_from_slice(&self.scratch.0);
            self.store.release(drop);
            self.meta[drop as usize] = PageMeta::default();
            self.meta[keep as usize] = PageMeta {
                depth,
                prefix: m.prefix >> 1,
                floor: all.len() as u32,
                counted: self.stamp(),
            };
            // As a split copies ahead for the next doubling, a merge
            // writes the next `COPY_AHEAD` slots of the halved directories
            // into the halving's rooms (`directory_room.rs`), so that the halving
            // finds them there: halving the 2^16 slots at once took 105 µs
            // in place, up to 900 µs into new vectors. Before `point`,
            // which keeps what was written equal to the directories.
            if !self.next_dir.halve_ahead(&self.dir, COPY_AHEAD) {
                self.next_look.halve_ahead(&self.look, COPY_AHEAD);
            }
            let start = (m.prefix >> 1) as usize * span * 2;
            self.point(start..start + span * 2, keep, depth);
            self.at_depth[m.depth as usize] -= 2;
            self.at_depth[depth as usize] += 1;
            while self.at_depth[self.global_depth as usize] == 0 && self.global_depth > MIN_DEPTH {
                self.halve_directory();
            }
        }
    }

    fn halve_directory(&mut self) {
        self.next_dir.halve(&mut self.dir);
        self.next_look.halve(&mut self.look);
        self.global_depth -= 1;
        self.look_shift += 1;
    }
}

/// Place a new entry at position `z` into `page` of depth `depth`.
pub(crate) fn place_any(page: &mut Page, depth: u8, z: u64, v: u64) -> bool {
    fn go<T: Shape>(page: &mut Page, z: u64, v: u64) -> bool {
        group::place::<T>(page, &group::key::<T>(z), v)
    }
    if narrow(depth) {
        go::<Narrow>(page, z, v)
    } else {
        go::<Wide>(page, z, v)
    }
}
