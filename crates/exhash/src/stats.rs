//! Shape counters and the invariant check used by the tests.

use crate::group::{self, Narrow, REACH, Shape, Wide, narrow};
use crate::layout::{LookSlot, dir_slot, look_slot, pages_at_depth};
use crate::page::{PAGE_SIZE, Page, PageId};
use crate::store::PageStore;
use crate::table::ExHash;

/// Counters describing the shape of a table.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Stats {
    /// Entries.
    pub len: u64,
    /// Live pages.
    pub pages: usize,
    /// Directory depth: the directory has 2^global_depth slots.
    pub global_depth: u8,
    /// Deepest page.
    pub max_local_depth: u8,
    /// Fraction of the pages' slots in use.
    pub fill: f64,
    /// Longest distance, in groups, between an entry's home group and the
    /// group it lives in, plus one.
    pub longest_probe: usize,
    /// Groups a lookup of a present key reads, on average.
    pub groups_per_hit: f64,
    /// Groups a lookup of an absent key reads, on average over home groups
    /// (what an insert of a new key reads before placing it).
    pub groups_per_miss: f64,
    /// Entries kept in the spill map.
    pub spilled: usize,
    /// Bytes of pages, directory and page table.
    pub memory_bytes: u64,
}

/// Per-page shape: (slots, longest probe, groups read by every hit, homes,
/// groups read by a miss from every home).
fn page_shape<T: Shape>(page: &Page) -> (u64, usize, u64, u64, u64) {
    let mut longest = 0;
    let mut hit = 0u64;
    group::entries::<T>(page, |z, _| {
        let k = group::key::<T>(z);
        let probes = group::probes::<T>(page, &k);
        longest = longest.max(probes);
        hit += probes as u64;
    });
    let mut miss = 0u64;
    for home in 0..T::GROUPS {
        let walk = (0..REACH)
            .position(|o| group::scan(page, group::next::<T>(home, o), 0).1 != 0)
            .map_or(REACH, |o| o + 1);
        miss += walk as u64;
    }
    (T::SLOTS as u64, longest, hit, T::GROUPS as u64, miss)
}

impl<S: PageStore> ExHash<S> {
    /// Shape counters; walks every page (O(pages)).
    pub fn stats(&self) -> Stats {
        let (mut slots, mut entries, mut longest) = (0u64, 0u64, 0usize);
        let (mut hit, mut homes, mut miss) = (0u64, 0u64, 0u64);
        let mut pages = 0usize;
        let mut max_depth = 0u8;
        for (id, m) in self.meta.iter().enumerate() {
            if m.depth == 0 {
                continue;
            }
            pages += 1;
            entries += self.count_entries(id as PageId) as u64;
            max_depth = max_depth.max(m.depth);
            let page = self.store.page(id as PageId);
            let (s, l, h, n, w) = if narrow(m.depth) {
                page_shape::<Narrow>(page)
            } else {
                page_shape::<Wide>(page)
            };
            slots += s;
            longest = longest.max(l);
            hit += h;
            homes += n;
            miss += w;
        }
        Stats {
            len: self.len,
            pages,
            global_depth: self.global_depth,
            max_local_depth: max_depth,
            fill: entries as f64 / slots.max(1) as f64,
            longest_probe: longest,
            groups_per_hit: hit as f64 / entries.max(1) as f64,
            groups_per_miss: miss as f64 / homes.max(1) as f64,
            spilled: self.spill.len(),
            memory_bytes: self.memory_bytes(),
        }
    }

    /// Bytes held by pages, directory and page table, with the room for
    /// their next growth faulted in so far (the figure the benchmarks
    /// divide by the entry count).
    pub fn memory_bytes(&self) -> u64 {
        let pages = self.meta.iter().filter(|m| m.depth != 0).count() as u64;
        pages * PAGE_SIZE as u64
            + self.dir.len() as u64 * 4
            + (self.look.len() * std::mem::size_of::<LookSlot>()) as u64
            + (self.next_dir.bytes() + self.next_look.bytes() + self.meta.bytes()) as u64
            + self.spill.len() as u64 * 16
    }

    /// Check every invariant; for tests. Per page: the directory maps it
    /// over exactly its aligned range, and the lookup directory maps its
    /// address there; its bytes pass `group::check` (tags
    /// free or in use; free slots and the bytes past the slots zero; every
    /// entry within its reach, every group from its home to the one before
    /// its own full, so that lookups stopping at a free slot find it;
    /// positions that a hash maps to, none stored twice); its counter
    /// matches its entries. Then the table's entry count and its count of
    /// pages at global depth.
    #[doc(hidden)]
    pub fn check_invariants(&self) -> Result<(), String> {
        if self.dir.len() != 1 << self.global_depth || self.look.len() != self.dir.len() {
            return Err(format!(
                "{} directory and {} lookup directory slots at global depth {}",
                self.dir.len(),
                self.look.len(),
                self.global_depth
            ));
        }
        if !self.next_dir.doubles(&self.dir) || !self.next_look.doubles(&self.look) {
            return Err("the room of the next doubling differs from the directory".into());
        }
        if !self.next_dir.halves(&self.dir) || !self.next_look.halves(&self.look) {
            return Err("the directory halved ahead differs from the directory".into());
        }
        if self.look_shift != 33 - self.global_depth {
            return Err(format!(
                "look_shift {} at global depth {}",
                self.look_shift, self.global_depth
            ));
        }
        let mut total = 0u64;
        let mut zs = Vec::new();
        for (id, m) in self.meta.iter().enumerate() {
            if m.depth == 0 {
                continue;
            }
            let span = 1usize << (self.global_depth - m.depth);
            let start = m.prefix as usize * span;
            if self.dir[start..start + span]
                .iter()
                .any(|&d| d != dir_slot(id as PageId, m.depth))
            {
                return Err(format!("directory does not map page {id} over its range"));
            }
            let look = look_slot(self.store.address(id as PageId), m.depth);
            if self.look[start..start + span].iter().any(|&l| l != look) {
                return Err(format!(
                    "lookup directory does not map page {id} over its range"
                ));
            }
            let page = self.store.page(id as PageId);
            let count = if narrow(m.depth) {
                group::check::<Narrow>(page, m.depth, m.prefix, &mut zs)
            } else {
                group::check::<Wide>(page, m.depth, m.prefix, &mut zs)
            }
            .map_err(|(at, what)| format!("page {id} byte {at}: {what}"))?;
            // A floor is at most the count, and the count itself while no
            // insert has come since it was counted.
            if m.floor > count || m.counted == self.stamp() && m.floor != count {
                return Err(format!("page {id}: floor {} but holds {count}", m.floor));
            }
            total += count as u64;
        }
        total += self.spill.len() as u64;
        if total != self.len {
            return Err(format!("len {} but {total} entries found", self.len));
        }
        let at_depth = pages_at_depth(self.meta.iter());
        if at_depth != self.at_depth {
            return Err(format!(
                "live pages at each depth {at_depth:?}, the counts say {:?}",
                self.at_depth
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::GROUP;

    /// A table of a few wide pages, dense enough that many entries live
    /// past their home group.
    fn dense() -> ExHash {
        let mut t = ExHash::new();
        let mut x = 1u64;
        for _ in 0..3000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            t.insert(x, x >> 7);
        }
        t.check_invariants().unwrap();
        t
    }

    /// A table of narrow pages (depth 9 and more).
    fn narrow_table() -> ExHash {
        let mut t = ExHash::with_capacity(400_000);
        for k in 0..3000u64 {
            t.insert(k, k);
        }
        assert!(t.meta.iter().all(|m| m.depth == 0 || narrow(m.depth)));
        t.check_invariants().unwrap();
        t
    }

    /// The first live page and slot where `pick(page id, depth, slot)`
    /// holds.
    fn find(t: &ExHash, pick: impl Fn(PageId, u8, usize) -> bool) -> (PageId, usize) {
        (0..t.meta.len() as PageId)
            .filter(|&id| t.meta[id as usize].depth != 0)
            .flat_map(|id| (0..Wide::SLOTS).map(move |s| (id, s)))
            .find(|&(id, s)| pick(id, t.meta[id as usize].depth, s))
            .expect("the test table has one")
    }

    fn expect_error(t: &ExHash, what: &str) {
        let err = t.check_invariants().expect_err(what);
        assert!(err.contains(what), "{err}");
    }

    fn offset_of(t: &ExHash, id: PageId, s: usize) -> u64 {
        group::field::<Wide>(t.store.page(id), s) & (REACH as u64 - 1)
    }

    #[test]
    fn a_free_slot_with_bytes_is_reported() {
        let mut t = dense();
        let (id, s) = find(&t, |id, _, s| group::tag(t.store.page(id), s) == 0);
        let at = group::slot_at::<Wide>(s);
        t.store.page_mut(id).0[at + 3] = 1;
        expect_error(&t, "free slot not zero");
    }

    #[test]
    fn a_tag_neither_free_nor_in_use_is_reported() {
        let mut t = dense();
        let (id, s) = find(&t, |id, _, s| group::tag(t.store.page(id), s) == 0);
        t.store.page_mut(id).0[s] = 0x05;
        expect_error(&t, "tag neither free nor in use");
    }

    #[test]
    fn a_free_slot_on_a_probe_sequence_is_reported() {
        let mut t = dense();
        // An entry living past its home group: free a slot of the group
        // before it (without moving anything back) and the entry becomes
        // unreachable to lookups.
        let (id, s) = find(&t, |id, _, s| {
            group::tag(t.store.page(id), s) != 0 && offset_of(&t, id, s) > 0
        });
        let before = (s / GROUP + Wide::GROUPS - 1) % Wide::GROUPS;
        let victim = before * GROUP;
        let at = group::slot_at::<Wide>(victim);
        let page = t.store.page_mut(id);
        page.0[victim] = 0;
        page.0[at..at + Wide::SLOT].fill(0);
        t.meta[id as usize].floor = 0;
        t.len -= 1;
        expect_error(&t, "displaced entry past a group with a free slot");
    }

    #[test]
    fn a_key_stored_twice_is_reported() {
        let mut t = dense();
        // An entry whose group has a free slot: a copy there is reachable
        // and breaks nothing else.
        let (id, s) = find(&t, |id, _, s| {
            let page = t.store.page(id);
            group::tag(page, s) != 0 && group::scan(page, s / GROUP, 0).1 != 0
        });
        let page = t.store.page_mut(id);
        let free = s / GROUP * GROUP + group::scan(page, s / GROUP, 0).1.trailing_zeros() as usize;
        let (from, to) = (group::slot_at::<Wide>(s), group::slot_at::<Wide>(free));
        page.0.copy_within(from..from + Wide::SLOT, to);
        page.0[free] = page.0[s];
        t.len += 1;
        expect_error(&t, "stored twice");
    }

    #[test]
    fn a_position_wider_than_its_page_is_reported() {
        let mut t = dense();
        let (id, s) = find(&t, |id, _, s| group::tag(t.store.page(id), s) != 0);
        let at = group::slot_at::<Wide>(s);
        t.store.page_mut(id).0[at + Wide::WIDTH - 1] |= 0x80;
        expect_error(&t, "position wider than the page's");
    }

    #[test]
    fn a_quotient_out_of_range_is_reported() {
        let mut t = narrow_table();
        let (id, s) = find(&t, |id, _, s| group::tag(t.store.page(id), s) != 0);
        let at = group::slot_at::<Narrow>(s);
        // Quotient bits 4..23 of the key field, all ones: 34 groups times
        // 2^19 - 1 is past 2^24.
        let page = t.store.page_mut(id);
        page.0[at] |= 0xf0;
        page.0[at + 1] = 0xff;
        page.0[at + 2] |= 0x7f;
        expect_error(&t, "quotient out of range");
    }

    #[test]
    fn bytes_past_the_slots_are_reported() {
        let mut t = narrow_table();
        let (id, _) = find(&t, |_, _, _| true);
        t.store.page_mut(id).0[PAGE_SIZE - 1] = 1;
        expect_error(&t, "bytes past the slots not zero");
    }

    #[test]
    fn a_floor_stays_exact_only_until_an_insert() {
        let mut t = dense();
        // A spilled entry, whose removal must not take the stamp back.
        let spilled = 0x5EED_u64;
        assert_eq!(t.get(spilled), None);
        t.spill.insert(spilled, 1);
        t.len += 1;
        let id = t.locate(crate::mix::mix(7)).page;
        let n = t.count_entries(id);
        (t.meta[id as usize].floor, t.meta[id as usize].counted) = (n, t.stamp());
        t.check_invariants().unwrap();
        // A new key into that page: its floor is one short now, and no
        // longer claimed exact, even once the spilled entry is removed.
        let key = (8u64..)
            .find(|&k| t.get(k).is_none() && t.locate(crate::mix::mix(k)).page == id)
            .unwrap();
        t.insert(key, 2);
        assert_eq!(t.remove(spilled), Some(1));
        assert_eq!(t.count_entries(id), n + 1);
        t.check_invariants().unwrap();
    }

    #[test]
    fn a_floor_above_the_page_s_entries_is_reported() {
        let mut t = dense();
        let (id, _) = find(&t, |_, _, _| true);
        t.meta[id as usize].floor = t.count_entries(id) + 1;
        expect_error(&t, "floor");
    }
}
