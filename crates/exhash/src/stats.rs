//! Shape counters and the invariant check used by the tests.

use crate::layout::{CHAIN, PageMeta, dir_slot};
use crate::layout::{Geom, decode_z, nth};
use crate::piece::{self, PIECE_DATA};
use crate::store::{PAGE_SIZE, PIECES, PageId, PageStore};
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
    /// Fraction of piece data bytes in use.
    pub fill: f64,
    /// Longest distance, in pieces, between an entry's home and where it lives, plus one.
    pub longest_chain: usize,
    /// Pieces a lookup of a present key reads, on average.
    pub pieces_per_hit: f64,
    /// Pieces a lookup of an absent key reads, on average over home pieces
    /// (what an insert of a new key walks before placing it).
    pub pieces_per_miss: f64,
    /// Entries kept in the spill map.
    pub spilled: usize,
    /// Bytes of pages, directory and page table.
    pub memory_bytes: u64,
}

impl<S: PageStore> ExHash<S> {
    /// Shape counters; walks every page (O(pages)).
    pub fn stats(&self) -> Stats {
        let mut used = 0u64;
        let mut longest = 0usize;
        let mut pages = 0usize;
        let mut max_depth = 0u8;
        let mut buf = Vec::new();
        let (mut hit_pieces, mut entries) = (0u64, 0u64);
        let (mut miss_pieces, mut homes) = (0u64, 0u64);
        for (id, m) in self.meta.iter().enumerate() {
            if m.depth == 0 {
                continue;
            }
            pages += 1;
            used += m.bytes as u64;
            max_depth = max_depth.max(m.depth);
            let shift = Geom::of(m.depth).shift;
            let page = self.store.page(id as PageId);
            for p in 0..PIECES {
                piece::decode(page.piece(p), &mut buf).expect("valid piece");
                if let Some(last) = buf.last() {
                    longest = longest.max((last.z >> shift) as usize + 1);
                }
                hit_pieces += buf.iter().map(|e| (e.z >> shift) + 1).sum::<u64>();
                entries += buf.len() as u64;
                let walk = (0..CHAIN)
                    .position(|k| !piece::overflowed(page.piece(nth(p, k))))
                    .map_or(CHAIN, |k| k + 1);
                miss_pieces += walk as u64;
                homes += 1;
            }
        }
        Stats {
            len: self.len,
            pages,
            global_depth: self.global_depth,
            max_local_depth: max_depth,
            fill: used as f64 / (pages * PIECES * PIECE_DATA).max(1) as f64,
            longest_chain: longest,
            pieces_per_hit: hit_pieces as f64 / entries.max(1) as f64,
            pieces_per_miss: miss_pieces as f64 / homes.max(1) as f64,
            spilled: self.spill.len(),
            memory_bytes: self.memory_bytes(),
        }
    }

    /// Bytes held by pages, directory and page table (the figure the
    /// benchmarks divide by the entry count).
    pub fn memory_bytes(&self) -> u64 {
        let pages = self.meta.iter().filter(|m| m.depth != 0).count() as u64;
        pages * PAGE_SIZE as u64
            + self.dir.len() as u64 * 4
            + self.meta.len() as u64 * std::mem::size_of::<PageMeta>() as u64
            + self.spill.len() as u64 * 16
    }

    /// Check every invariant; for tests. Per page: the directory maps it
    /// over exactly its aligned range; every piece decodes; every entry
    /// lives within its chain, and every piece from its home to where it
    /// lives is flagged overflowed; no piece is flagged that needs no flag
    /// (a stale flag sends every later miss of that home walking on);
    /// every position is one a hash maps to and none is stored twice; the
    /// page's counters match its pieces. Then the table's entry count and
    /// its count of pages at global depth.
    #[doc(hidden)]
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut total = 0u64;
        let mut buf = Vec::new();
        let mut zs = Vec::new();
        let mut at_global = 0;
        for (id, m) in self.meta.iter().enumerate() {
            if m.depth == 0 {
                continue;
            }
            if m.depth == self.global_depth {
                at_global += 1;
            }
            let span = 1usize << (self.global_depth - m.depth);
            let start = m.prefix as usize * span;
            if self.dir[start..start + span]
                .iter()
                .any(|&d| d != dir_slot(id as PageId, m.depth))
            {
                return Err(format!("directory does not map page {id} over its range"));
            }
            let g = Geom::of(m.depth);
            let page = self.store.page(id as PageId);
            let (mut count, mut bytes) = (0u32, 0u32);
            // needed[p]: some entry whose chain passes through piece p
            // lives after it.
            let mut needed = [false; PIECES];
            zs.clear();
            for p in 0..PIECES {
                decode_z(page.piece(p), p, g, &mut buf)
                    .map_err(|e| format!("page {id} piece {p}: {e}"))?;
                count += buf.len() as u32;
                bytes += piece::used(page.piece(p)) as u32;
                for e in &buf {
                    let home = g.home(e.z);
                    let age = (p + PIECES - home) % PIECES;
                    for k in 0..age {
                        needed[nth(home, k)] = true;
                        if !piece::overflowed(page.piece(nth(home, k))) {
                            return Err(format!(
                                "page {id}: piece {} should be flagged",
                                nth(home, k)
                            ));
                        }
                    }
                    let high = ((m.prefix as u64) << (33 - m.depth)) | (e.z >> 32);
                    if crate::mix::unskew(high).is_none() {
                        return Err(format!("page {id} piece {p}: a position no key maps to"));
                    }
                    zs.push(e.z);
                }
            }
            if let Some(p) = (0..PIECES).find(|&p| piece::overflowed(page.piece(p)) && !needed[p]) {
                return Err(format!(
                    "page {id}: piece {p} is flagged but nothing lives past it"
                ));
            }
            zs.sort_unstable();
            if zs.windows(2).any(|w| w[0] == w[1]) {
                return Err(format!("page {id}: a key is stored twice"));
            }
            if count != m.count || bytes != m.bytes {
                return Err(format!(
                    "page {id}: counters {}/{} but holds {count}/{bytes}",
                    m.count, m.bytes
                ));
            }
            total += count as u64;
        }
        total += self.spill.len() as u64;
        if total != self.len {
            return Err(format!("len {} but {total} entries found", self.len));
        }
        if at_global != self.at_global {
            return Err(format!(
                "{at_global} pages at global depth, counter says {}",
                self.at_global
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::layout::{Geom, decode_z, encode_z, nth};
    use crate::piece;
    use crate::store::{PIECES, PageId, PageStore};
    use crate::table::ExHash;

    /// A table of a few pages, some pieces overflowed.
    fn table() -> ExHash {
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

    /// The first live page and piece where `pick(page, piece)` holds.
    fn find(t: &ExHash, pick: impl Fn(PageId, usize) -> bool) -> (PageId, usize) {
        (0..t.meta.len() as PageId)
            .filter(|&id| t.meta[id as usize].depth != 0)
            .flat_map(|id| (0..PIECES).map(move |p| (id, p)))
            .find(|&(id, p)| pick(id, p))
            .expect("a table of 3000 pairs has one")
    }

    fn expect_error(t: &ExHash, what: &str) {
        let err = t.check_invariants().expect_err(what);
        assert!(err.contains(what), "{err}");
    }

    #[test]
    fn a_missing_overflow_flag_is_reported() {
        let mut t = table();
        let (id, p) = find(&t, |id, p| piece::overflowed(t.store.page(id).piece(p)));
        piece::set_overflowed(t.store.page_mut(id).piece_mut(p), false);
        expect_error(&t, "should be flagged");
    }

    #[test]
    fn a_stale_overflow_flag_is_reported() {
        let mut t = table();
        // Not flagged: nothing lives past it on any chain through it.
        let (id, p) = find(&t, |id, p| !piece::overflowed(t.store.page(id).piece(p)));
        piece::set_overflowed(t.store.page_mut(id).piece_mut(p), true);
        expect_error(&t, "flagged but nothing lives past it");
    }

    #[test]
    fn a_key_stored_twice_is_reported() {
        let mut t = table();
        // An entry at home in a piece whose successor has room for a copy.
        let mut buf = Vec::new();
        let (id, p) = find(&t, |id, p| {
            let g = Geom::of(t.meta[id as usize].depth);
            let page = t.store.page(id);
            let mut here = Vec::new();
            decode_z(page.piece(p), p, g, &mut here).unwrap();
            here.iter().any(|e| g.home(e.z) == p)
                && piece::used(page.piece(nth(p, 1))) + 40 <= piece::PIECE_DATA
        });
        let g = Geom::of(t.meta[id as usize].depth);
        decode_z(t.store.page(id).piece(p), p, g, &mut buf).unwrap();
        let e = *buf.iter().find(|e| g.home(e.z) == p).unwrap();
        let q = nth(p, 1);
        decode_z(t.store.page(id).piece(q), q, g, &mut buf).unwrap();
        // Distances from q's end ascend: e's is larger than any entry at
        // home in q and smaller than any from before p.
        let at = buf.partition_point(|x| g.r(q, x.z) < g.r(q, e.z));
        buf.insert(at, e);
        let before = piece::used(t.store.page(id).piece(q)) as u32;
        assert!(encode_z(t.store.page_mut(id).piece_mut(q), q, g, &mut buf));
        piece::set_overflowed(t.store.page_mut(id).piece_mut(p), true);
        // Keep the counters right, so that only the copy is wrong.
        let after = piece::used(t.store.page(id).piece(q)) as u32;
        let m = &mut t.meta[id as usize];
        m.count += 1;
        m.bytes = m.bytes - before + after;
        t.len += 1;
        expect_error(&t, "stored twice");
    }

    #[test]
    fn counters_that_disagree_with_the_pieces_are_reported() {
        let mut t = table();
        let (id, _) = find(&t, |_, _| true);
        t.meta[id as usize].count += 1;
        expect_error(&t, "counters");
    }
}
