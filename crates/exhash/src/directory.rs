//! The directory: 2^global_depth slots indexed by the leading bits of a
//! key's position, each naming a page and its local depth. Pages split by
//! the next position bit (doubling the directory when a page at global
//! depth splits), merge with their buddy when both are small, and the
//! directory halves when no page needs its full depth.

use crate::layout::{CHAIN, Geom, MIN_DEPTH, PageMeta, build, dir_slot, slot_page};
use crate::piece::{self, Entry, PIECE_DATA};
use crate::store::{PIECES, Page, PageId, PageStore};
use crate::table::ExHash;

/// A page is considered for merging when it holds less than this many bytes
/// of entries...
const MERGE_TRIGGER: u32 = (PIECES * PIECE_DATA / 4) as u32;
/// ...and merges when it and its buddy together hold at most this many.
const MERGE_LIMIT: u32 = (PIECES * PIECE_DATA / 2) as u32;

/// A directory slot: page id in the high 26 bits, the page's depth in the
/// low 6, so a lookup needs no second table to learn the depth.
impl<S: PageStore> ExHash<S> {
    /// All entries of a page, by ascending position, into `out` (cleared
    /// first); `tmp` is working space. A counting sort by the position's
    /// top ten bits (the home piece and four more), then one insertion
    /// sort pass over the whole list, which finds it nearly sorted: a page
    /// holds a few hundred entries, so two share a bucket only now and
    /// then. (Bucketing by home piece alone left runs of several entries
    /// in each bucket, out of order wherever an insertion found room past
    /// its home, and sorting them cost a mispredicted branch per
    /// displaced entry.)
    pub(crate) fn page_entries(&self, id: PageId, tmp: &mut Vec<Entry>, out: &mut Vec<Entry>) {
        const BUCKET_BITS: u32 = 10;
        let g = Geom::of(self.meta[id as usize].depth);
        let page = self.store.page(id);
        let bucket_shift = g.shift + 6 - BUCKET_BITS;
        tmp.clear();
        let mut starts = [0u16; (1 << BUCKET_BITS) + 1];
        let mut piece_ends = [0usize; PIECES];
        for (p, piece_end) in piece_ends.iter_mut().enumerate() {
            let mut in_reach = true;
            let end = g.end(p);
            piece::walk(page.piece(p), |e| {
                in_reach = e.z >> g.shift < CHAIN as u64;
                let z = end.wrapping_sub(e.z) & g.mask;
                starts[(z >> bucket_shift) as usize + 1] += 1;
                tmp.push(Entry { z, v: e.v });
                in_reach
            })
            .expect("valid piece");
            assert!(in_reach, "valid piece: entries lie within their chain");
            *piece_end = tmp.len();
        }
        for b in 0..1 << BUCKET_BITS {
            starts[b + 1] += starts[b];
        }
        // Every slot of `out` is written below, so growing it is all the
        // clearing it needs.
        out.resize(tmp.len(), Entry::default());
        out.truncate(tmp.len());
        // A piece holds its entries by descending position: each piece's
        // are taken backwards, so runs of neighbouring keys (sequential
        // keys) arrive in order.
        let mut from = 0;
        for &to in &piece_ends {
            for &e in tmp[from..to].iter().rev() {
                let b = (e.z >> bucket_shift) as usize;
                out[starts[b] as usize] = e;
                starts[b] += 1;
            }
            from = to;
        }
        for j in 1..out.len() {
            let e = out[j];
            let mut k = j;
            while k > 0 && out[k - 1].z > e.z {
                out[k] = out[k - 1];
                k -= 1;
            }
            out[k] = e;
        }
    }

    /// Double the directory in place: grow it (the allocator remaps a
    /// large block rather than copying it where it can), then spread each
    /// slot over two, from the end back, so no slot is overwritten before
    /// it is read. (Building a new directory slot by slot was the longest
    /// single put of a growing table at 8M pairs.)
    fn double_directory(&mut self) {
        let n = self.dir.len();
        self.dir.resize(2 * n, 0);
        for i in (0..n).rev() {
            let slot = self.dir[i];
            self.dir[2 * i] = slot;
            self.dir[2 * i + 1] = slot;
        }
        self.global_depth += 1;
        self.at_global = 0;
    }

    /// Split page `id` by the next position bit. Entries the two halves
    /// cannot hold are appended to `pending` as (hash, value).
    pub(crate) fn split(&mut self, id: PageId, pending: &mut Vec<(u64, u64)>) {
        let old = self.meta[id as usize];
        if old.depth == self.global_depth {
            self.double_directory();
        }
        let (mut tmp, mut all) = std::mem::take(&mut self.split_bufs);
        self.page_entries(id, &mut tmp, &mut all);
        // Sorted by position, so the entries whose next bit is set come last.
        let bit = 64 - old.depth as u32;
        let mask = (1u64 << bit) - 1;
        let half = all.partition_point(|e| e.z >> bit == 0);
        for e in all.iter_mut() {
            e.z &= mask;
        }
        let depth = old.depth + 1;
        let other = self.store.allocate();
        let mut left = Vec::new();
        for (page, prefix, entries) in [
            (id, old.prefix * 2, &all[..half]),
            (other, old.prefix * 2 + 1, &all[half..]),
        ] {
            let (count, bytes) = build(
                self.store.page_mut(page),
                entries,
                Geom::of(depth),
                &mut left,
            );
            let m = PageMeta {
                depth,
                prefix,
                count,
                bytes,
            };
            self.set_meta(page, m);
            pending.extend(left.drain(..).map(|e| (Self::hash_at(&m, e.z), e.v)));
        }
        self.split_bufs = (tmp, all);
        let span = 1usize << (self.global_depth - old.depth);
        let start = (old.prefix as usize) * span;
        self.dir[start..start + span / 2].fill(dir_slot(id, depth));
        self.dir[start + span / 2..start + span].fill(dir_slot(other, depth));
        if depth == self.global_depth {
            self.at_global += 2;
        }
    }

    /// Merge the page holding hash `h` with its buddy while both are small,
    /// then shrink the directory while no page needs its full depth.
    pub(crate) fn maybe_merge(&mut self, h: u64) {
        loop {
            let loc = self.locate(h);
            let m = self.meta[loc.page as usize];
            if m.depth <= MIN_DEPTH || m.bytes >= MERGE_TRIGGER {
                break;
            }
            let span = 1usize << (self.global_depth - m.depth);
            let buddy = slot_page(self.dir[(m.prefix ^ 1) as usize * span]);
            let b = self.meta[buddy as usize];
            if b.depth != m.depth || m.bytes + b.bytes > MERGE_LIMIT {
                break;
            }
            let bit = 65 - m.depth as u32;
            let mut all = Vec::with_capacity((m.count + b.count) as usize);
            let (mut tmp, mut part) = (Vec::new(), Vec::new());
            for (id, meta) in [(loc.page, m), (buddy, b)] {
                self.page_entries(id, &mut tmp, &mut part);
                let top = ((meta.prefix & 1) as u64) << bit;
                all.extend(part.iter().map(|e| Entry {
                    z: e.z | top,
                    v: e.v,
                }));
            }
            all.sort_unstable_by_key(|e| e.z);
            let depth = m.depth - 1;
            let mut scratch = Page::empty();
            let mut left = Vec::new();
            let (count, bytes) = build(&mut scratch, &all, Geom::of(depth), &mut left);
            if !left.is_empty() {
                break;
            }
            let (keep, drop) = if m.prefix & 1 == 0 {
                (loc.page, buddy)
            } else {
                (buddy, loc.page)
            };
            self.store.page_mut(keep).0.copy_from_slice(&scratch.0);
            self.store.release(drop);
            self.meta[drop as usize] = PageMeta::default();
            self.meta[keep as usize] = PageMeta {
                depth,
                prefix: m.prefix >> 1,
                count,
                bytes,
            };
            let start = (m.prefix >> 1) as usize * span * 2;
            self.dir[start..start + span * 2].fill(dir_slot(keep, depth));
            if m.depth == self.global_depth {
                self.at_global -= 2;
            }
            while self.at_global == 0 && self.global_depth > MIN_DEPTH {
                self.halve_directory();
            }
        }
    }

    fn halve_directory(&mut self) {
        self.dir = self.dir.iter().step_by(2).copied().collect();
        self.global_depth -= 1;
        let g = self.global_depth;
        self.at_global = self.meta.iter().filter(|m| m.depth == g).count();
    }
}
