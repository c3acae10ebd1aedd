//! Shape counters and the invariant check used by the tests.

use crate::directory::dir_slot;
use crate::layout::{Geom, decode_z, nth};
use crate::piece::{self, PIECE_DATA};
use crate::store::{PAGE_SIZE, PIECES, PageId, PageStore};
use crate::table::{CHAIN, ExHash, PageMeta};

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

    /// Check every invariant (counts, flags, directory, homes); for tests.
    #[doc(hidden)]
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut total = 0u64;
        let mut buf = Vec::new();
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
            for p in 0..PIECES {
                decode_z(page.piece(p), p, g, &mut buf)
                    .map_err(|e| format!("page {id} piece {p}: {e}"))?;
                count += buf.len() as u32;
                bytes += piece::used(page.piece(p)) as u32;
                for e in &buf {
                    let home = g.home(e.z);
                    let age = (p + PIECES - home) % PIECES;
                    for k in 0..age {
                        if !piece::overflowed(page.piece(nth(home, k))) {
                            return Err(format!(
                                "page {id}: piece {} should be flagged",
                                nth(home, k)
                            ));
                        }
                    }
                }
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
