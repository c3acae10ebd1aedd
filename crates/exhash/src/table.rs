//! The extendible hash table: directory, page splits and merges, and the
//! operations that place entries into pieces.

use std::collections::BTreeMap;

use crate::mix::{hash_of_position, mix, position_high, unmix};
use crate::piece::{self, Entry, InPlace, PIECE_DATA};
use crate::store::{MemoryStore, PAGE_SIZE, PIECES, Page, PageId, PageStore};

/// How many pieces an entry may live in: its home piece and the ones after
/// it, wrapping from the last piece to the first. Chosen by measurement:
/// see `BENCHMARKS.md`.
pub const CHAIN: usize = 32;

/// The deepest a page (and so the directory) may go: 2^26 directory slots.
/// Entries that cannot be placed at this depth (only possible with keys
/// crafted against the public mixer) go to a small ordered spill map.
pub const MAX_DEPTH: u8 = 26;

/// Every page covers at most half of position space, so page-local
/// positions fit in 64 bits.
pub(crate) const MIN_DEPTH: u8 = 1;

/// A page is considered for merging when it holds less than this many bytes
/// of entries...
const MERGE_TRIGGER: u32 = (PIECES * PIECE_DATA / 4) as u32;
/// ...and merges when it and its buddy together hold at most this many.
const MERGE_LIMIT: u32 = (PIECES * PIECE_DATA / 2) as u32;

/// What the table knows about each page besides its bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PageMeta {
    /// Local depth; 0 marks a page id that is not in use.
    pub depth: u8,
    /// The `depth` leading position bits every entry of the page shares.
    pub prefix: u32,
    /// Entries in the page.
    pub count: u32,
    /// Entry bytes used in the page's pieces.
    pub bytes: u32,
}

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
    /// Entries kept in the spill map.
    pub spilled: usize,
    /// Bytes of pages, directory and page table.
    pub memory_bytes: u64,
}

/// How many keys ahead the batch operations prefetch.
const PREFETCH_AHEAD: usize = 8;

/// A directory slot: page id in the high 26 bits, the page's depth in the
/// low 6, so a lookup needs no second table to learn the depth.
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

/// Where a key goes.
#[derive(Clone, Copy, Debug)]
struct Loc {
    page: PageId,
    depth: u8,
    z: u64,
    home: usize,
    geom: Geom,
}

/// How page-local positions of a page at some depth map to pieces.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Geom {
    /// Position bits below the home piece number.
    pub shift: u32,
    /// Page-local positions are `65 - depth` bits wide.
    pub mask: u64,
}

impl Geom {
    #[inline]
    pub fn of(depth: u8) -> Geom {
        Geom {
            shift: 59 - depth as u32,
            mask: u64::MAX >> (depth - 1),
        }
    }

    /// The last position whose home is piece `p`.
    #[inline]
    fn end(self, p: usize) -> u64 {
        ((p as u64) << self.shift) | ((1u64 << self.shift) - 1)
    }

    /// Distance of position `z` back from the end of piece `p` (wrapping).
    #[inline]
    pub fn r(self, p: usize, z: u64) -> u64 {
        self.end(p).wrapping_sub(z) & self.mask
    }

    /// The position at distance `r` back from the end of piece `p`.
    #[inline]
    pub fn z(self, p: usize, r: u64) -> u64 {
        self.end(p).wrapping_sub(r) & self.mask
    }

    #[inline]
    pub fn home(self, z: u64) -> usize {
        (z >> self.shift) as usize
    }
}

/// The `i`-th piece of the chain starting at `home`.
#[inline]
fn nth(home: usize, i: usize) -> usize {
    (home + i) % PIECES
}

/// Decode piece `p` as page-local positions, in stored (ascending distance) order.
pub(crate) fn decode_z(
    pc: &[u8],
    p: usize,
    g: Geom,
    out: &mut Vec<Entry>,
) -> Result<(), piece::DecodeError> {
    piece::decode(pc, out)?;
    for e in out.iter_mut() {
        if e.z >> g.shift >= CHAIN as u64 {
            return Err("entry lives farther from its home than the chain allows");
        }
        e.z = g.z(p, e.z);
    }
    Ok(())
}

/// Encode positions (in ascending distance order from piece `p`'s end).
fn encode_z(pc: &mut [u8], p: usize, g: Geom, entries: &mut [Entry]) -> bool {
    for e in entries.iter_mut() {
        e.z = g.r(p, e.z);
    }
    let ok = piece::encode(pc, entries);
    for e in entries.iter_mut() {
        e.z = g.z(p, e.z);
    }
    ok
}

fn encoded_len_z(p: usize, g: Geom, entries: &[Entry], buf: &mut Vec<Entry>) -> usize {
    buf.clear();
    buf.extend(entries.iter().map(|e| Entry {
        z: g.r(p, e.z),
        v: e.v,
    }));
    piece::encoded_len(buf)
}

/// An extendible hash table from u64 keys to u64 values in 8 KiB pages.
#[derive(Debug)]
pub struct ExHash<S: PageStore = MemoryStore> {
    pub(crate) store: S,
    pub(crate) dir: Vec<DirSlot>,
    pub(crate) global_depth: u8,
    pub(crate) meta: Vec<PageMeta>,
    pub(crate) len: u64,
    pub(crate) spill: BTreeMap<u64, u64>,
    pub(crate) at_global: usize,
    scratch: Vec<Entry>,
    scratch2: Vec<Entry>,
}

impl ExHash<MemoryStore> {
    /// An empty table in memory.
    pub fn new() -> ExHash<MemoryStore> {
        ExHash::with_store(MemoryStore::new())
    }

    /// An empty table in memory with pages for about `n` entries already
    /// laid out, so that filling it to `n` splits few pages.
    pub fn with_capacity(n: usize) -> ExHash<MemoryStore> {
        // Pages hold about 350 random pairs at a typical fill; start one
        // level shallower than that and let the densest pages split.
        let pages = (n / 350).max(1);
        let depth = (usize::BITS - 1 - pages.leading_zeros()) as u8;
        ExHash::with_store_and_depth(MemoryStore::new(), depth.clamp(MIN_DEPTH, 20))
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
                    count: 0,
                    bytes: 0,
                },
            );
            table.dir.push(dir_slot(id, depth));
        }
        table.at_global = table.dir.len();
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
        let at_global = meta.iter().filter(|m| m.depth == global_depth).count();
        ExHash {
            store,
            dir,
            global_depth,
            meta,
            len,
            spill,
            at_global,
            scratch: Vec::with_capacity(PIECE_DATA),
            scratch2: Vec::with_capacity(PIECE_DATA),
        }
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

    fn set_meta(&mut self, id: PageId, m: PageMeta) {
        let i = id as usize;
        if self.meta.len() <= i {
            self.meta.resize(i + 1, PageMeta::default());
        }
        self.meta[i] = m;
    }

    #[inline]
    fn locate(&self, h: u64) -> Loc {
        let g = position_high(h);
        let slot = self.dir[(g >> (33 - self.global_depth)) as usize];
        let page = slot_page(slot);
        let depth = (slot & 63) as u8;
        let z = ((g & ((1u64 << (33 - depth)) - 1)) << 32) | (h & 0xffff_ffff);
        let geom = Geom::of(depth);
        Loc {
            page,
            depth,
            z,
            home: geom.home(z),
            geom,
        }
    }

    /// The hash of the entry at page-local position `z` of a page.
    pub(crate) fn hash_at(m: &PageMeta, z: u64) -> u64 {
        let g = ((m.prefix as u64) << (33 - m.depth)) | (z >> 32);
        hash_of_position(g, z & 0xffff_ffff).expect("positions in a page come from hashes")
    }

    /// The value stored for `key`.
    #[inline]
    pub fn get(&self, key: u64) -> Option<u64> {
        let loc = self.locate(mix(key));
        if let Some((_, v)) = self.find(&loc) {
            return Some(v);
        }
        if self.spill.is_empty() {
            None
        } else {
            self.spill.get(&key).copied()
        }
    }

    /// Look up many keys, prefetching each key's home piece a few keys
    /// ahead so that the memory latencies of consecutive lookups overlap.
    /// `out` is cleared, then `out[i]` answers `keys[i]`.
    pub fn get_many(&self, keys: &[u64], out: &mut Vec<Option<u64>>) {
        out.clear();
        out.reserve(keys.len());
        for (i, &key) in keys.iter().enumerate() {
            if let Some(&ahead) = keys.get(i + PREFETCH_AHEAD) {
                self.prefetch(ahead);
            }
            out.push(self.get(key));
        }
    }

    /// Insert many pairs (later ones win), prefetching ahead like
    /// [`ExHash::get_many`].
    pub fn insert_many(&mut self, pairs: &[(u64, u64)]) {
        for (i, &(key, value)) in pairs.iter().enumerate() {
            if let Some(&(ahead, _)) = pairs.get(i + PREFETCH_AHEAD) {
                self.prefetch(ahead);
            }
            self.insert(key, value);
        }
    }

    #[inline]
    fn prefetch(&self, key: u64) {
        let loc = self.locate(mix(key));
        let piece = self.store.page(loc.page).piece(loc.home);
        crate::prefetch::read(piece);
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: u64) -> bool {
        self.get(key).is_some()
    }

    #[inline]
    fn find(&self, loc: &Loc) -> Option<(usize, u64)> {
        let page = self.store.page(loc.page);
        for i in 0..CHAIN {
            let p = nth(loc.home, i);
            let pc = page.piece(p);
            if let Some(v) = piece::lookup(pc, loc.geom.r(p, loc.z)) {
                return Some((p, v));
            }
            if !piece::overflowed(pc) {
                break;
            }
        }
        None
    }

    /// Insert or overwrite; returns the previous value.
    pub fn insert(&mut self, key: u64, value: u64) -> Option<u64> {
        let h = mix(key);
        let loc = self.locate(h);
        if let Some((p, old)) = self.find(&loc) {
            self.replace(&loc, p, value);
            return Some(old);
        }
        if !self.spill.is_empty()
            && let Some(slot) = self.spill.get_mut(&key)
        {
            return Some(std::mem::replace(slot, value));
        }
        self.len += 1;
        if !self.try_place(&loc, value) {
            self.place_slow(h, value);
        }
        None
    }

    /// Overwrite the value of the entry at `loc` stored in piece `p`.
    fn replace(&mut self, loc: &Loc, p: usize, value: u64) {
        let mut entries = std::mem::take(&mut self.scratch);
        let page = self.store.page(loc.page);
        decode_z(page.piece(p), p, loc.geom, &mut entries).expect("valid piece");
        let i = entries
            .iter()
            .position(|e| e.z == loc.z)
            .expect("entry found before");
        entries[i].v = value;
        let mut evicted = Vec::new();
        self.write_piece(loc.page, p, loc.geom, &mut entries, &mut evicted);
        self.scratch = entries;
        self.replace_all(evicted);
    }

    /// Encode `entries` into piece `p` of `page`; entries that no longer fit
    /// (removing or changing one entry can lengthen its neighbour's delta by
    /// a byte) are taken out, smallest position first, and returned as
    /// (hash, value) in `evicted`. Keeps the page's counters right.
    fn write_piece(
        &mut self,
        page: PageId,
        p: usize,
        g: Geom,
        entries: &mut Vec<Entry>,
        evicted: &mut Vec<(u64, u64)>,
    ) {
        let m = self.meta[page as usize];
        let old_used = piece::used(self.store.page(page).piece(p)) as u32;
        let old_len = entries.len();
        let piece = self.store.page_mut(page).piece_mut(p);
        while !encode_z(piece, p, g, entries) {
            let e = entries.pop().expect("an empty piece always fits");
            evicted.push((Self::hash_at(&m, e.z), e.v));
        }
        let new_used = piece::used(piece) as u32;
        let m = &mut self.meta[page as usize];
        m.bytes = m.bytes - old_used + new_used;
        m.count -= (old_len - entries.len()) as u32;
    }

    /// Place entries that were taken out of the table (already counted in `len`).
    fn replace_all(&mut self, evicted: Vec<(u64, u64)>) {
        for (h, v) in evicted {
            let loc = self.locate(h);
            if !self.try_place(&loc, v) {
                self.place_slow(h, v);
            }
        }
    }

    /// Try to put a new entry into its home piece or the next ones in its chain.
    fn try_place(&mut self, loc: &Loc, value: u64) -> bool {
        let mut entries = std::mem::take(&mut self.scratch);
        let mut rs = std::mem::take(&mut self.scratch2);
        let g = loc.geom;
        let new = Entry { z: loc.z, v: value };
        let mut placed = false;
        for i in 0..CHAIN {
            let p = nth(loc.home, i);
            let page = self.store.page(loc.page);
            let pc = page.piece(p);
            if piece::used(pc) + piece::min_growth(pc) > PIECE_DATA {
                continue;
            }
            let r = g.r(p, loc.z);
            let old_used = piece::used(pc) as u32;
            // Fast path: room and widths already right, insert in place.
            let page = self.store.page_mut(loc.page);
            let pc = page.piece_mut(p);
            let mut done = piece::insert_fixed(pc, r, value);
            if done == InPlace::Unsupported {
                done = piece::insert_tagged(pc, r, value);
            }
            if done == InPlace::Full {
                continue;
            }
            if done == InPlace::Inserted {
                let new_used = piece::used(page.piece(p)) as u32;
                for j in 0..i {
                    piece::set_overflowed(page.piece_mut(nth(loc.home, j)), true);
                }
                let m = &mut self.meta[loc.page as usize];
                m.bytes = m.bytes - old_used + new_used;
                m.count += 1;
                placed = true;
                break;
            }
            let pc = self.store.page(loc.page).piece(p);
            piece::decode(pc, &mut rs).expect("valid piece");
            let at = rs.partition_point(|e| e.z < r);
            rs.insert(at, Entry { z: r, v: new.v });
            if piece::encoded_len(&rs) > PIECE_DATA {
                continue;
            }
            let page = self.store.page_mut(loc.page);
            let pc = page.piece_mut(p);
            let ok = piece::encode(pc, &rs);
            debug_assert!(ok);
            let new_used = piece::used(pc) as u32;
            for j in 0..i {
                piece::set_overflowed(page.piece_mut(nth(loc.home, j)), true);
            }
            let m = &mut self.meta[loc.page as usize];
            m.bytes = m.bytes - old_used + new_used;
            m.count += 1;
            placed = true;
            break;
        }
        entries.clear();
        self.scratch = entries;
        self.scratch2 = rs;
        placed
    }

    /// Place an entry whose chain is full: split pages until it fits (and
    /// re-place what splits could not), or spill at the depth limit.
    fn place_slow(&mut self, h: u64, value: u64) {
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

    /// All entries of a page, by ascending position.
    fn page_entries(&self, id: PageId, out: &mut Vec<Entry>) {
        out.clear();
        let g = Geom::of(self.meta[id as usize].depth);
        let page = self.store.page(id);
        let mut buf = Vec::with_capacity(PIECE_DATA);
        for p in 0..PIECES {
            decode_z(page.piece(p), p, g, &mut buf).expect("valid piece");
            out.extend_from_slice(&buf);
        }
        out.sort_unstable_by_key(|e| e.z);
    }

    fn double_directory(&mut self) {
        let mut dir = Vec::with_capacity(self.dir.len() * 2);
        for &id in &self.dir {
            dir.push(id);
            dir.push(id);
        }
        self.dir = dir;
        self.global_depth += 1;
        self.at_global = 0;
    }

    /// Split page `id` by the next position bit. Entries the two halves
    /// cannot hold are appended to `pending` as (hash, value).
    fn split(&mut self, id: PageId, pending: &mut Vec<(u64, u64)>) {
        let old = self.meta[id as usize];
        if old.depth == self.global_depth {
            self.double_directory();
        }
        let mut all = Vec::with_capacity(old.count as usize);
        self.page_entries(id, &mut all);
        let bit = 64 - old.depth as u32;
        let mask = (1u64 << bit) - 1;
        let (mut low, mut high) = (Vec::with_capacity(all.len()), Vec::with_capacity(all.len()));
        for e in all {
            let child = Entry {
                z: e.z & mask,
                v: e.v,
            };
            if e.z >> bit == 0 {
                low.push(child);
            } else {
                high.push(child);
            }
        }
        let depth = old.depth + 1;
        let other = self.store.allocate();
        let mut left = Vec::new();
        for (page, prefix, entries) in [
            (id, old.prefix * 2, &low),
            (other, old.prefix * 2 + 1, &high),
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
        let span = 1usize << (self.global_depth - old.depth);
        let start = (old.prefix as usize) * span;
        self.dir[start..start + span / 2].fill(dir_slot(id, depth));
        self.dir[start + span / 2..start + span].fill(dir_slot(other, depth));
        if depth == self.global_depth {
            self.at_global += 2;
        }
    }

    /// Remove `key`; returns its value.
    pub fn remove(&mut self, key: u64) -> Option<u64> {
        let h = mix(key);
        let loc = self.locate(h);
        let Some((p, old)) = self.find(&loc) else {
            let v = self.spill.remove(&key)?;
            self.len -= 1;
            return Some(v);
        };
        let mut entries = std::mem::take(&mut self.scratch);
        decode_z(
            self.store.page(loc.page).piece(p),
            p,
            loc.geom,
            &mut entries,
        )
        .expect("valid piece");
        let i = entries
            .iter()
            .position(|e| e.z == loc.z)
            .expect("entry found before");
        entries.remove(i);
        self.meta[loc.page as usize].count -= 1;
        self.len -= 1;
        let mut evicted = Vec::new();
        self.write_piece(loc.page, p, loc.geom, &mut entries, &mut evicted);
        self.scratch = entries;
        self.pull_back(loc.page, p, loc.geom, &mut evicted);
        self.refresh_flags(loc.page, p, loc.geom);
        self.replace_all(evicted);
        self.maybe_merge(h);
        Some(old)
    }

    /// After a removal from piece `p`, move entries whose chain passes
    /// through `p` back into it from later pieces while they fit.
    fn pull_back(&mut self, page: PageId, p: usize, g: Geom, evicted: &mut Vec<(u64, u64)>) {
        if !piece::overflowed(self.store.page(page).piece(p)) {
            return;
        }
        let mut here = Vec::with_capacity(PIECE_DATA);
        let mut there = Vec::with_capacity(PIECE_DATA);
        let mut buf = Vec::with_capacity(PIECE_DATA);
        decode_z(self.store.page(page).piece(p), p, g, &mut here).expect("valid piece");
        for d in 1..CHAIN {
            let q = nth(p, d);
            decode_z(self.store.page(page).piece(q), q, g, &mut there).expect("valid piece");
            let mut moved = false;
            let mut full = false;
            let mut i = 0;
            while i < there.len() {
                let e = there[i];
                // Age of the entry in piece q; p is on its chain if d <= age.
                if ((q + PIECES - g.home(e.z)) % PIECES) < d {
                    i += 1;
                    continue;
                }
                let r = g.r(p, e.z);
                let at = here.partition_point(|x| g.r(p, x.z) < r);
                here.insert(at, e);
                if encoded_len_z(p, g, &here, &mut buf) > PIECE_DATA {
                    here.remove(at);
                    full = true;
                    break;
                }
                there.remove(i);
                moved = true;
            }
            if moved {
                // Moves stay inside the page, so only evictions change its count.
                self.write_piece(page, p, g, &mut here, evicted);
                self.write_piece(page, q, g, &mut there, evicted);
            }
            if full {
                break;
            }
        }
    }

    /// Recompute exactly the overflow flags that a change in piece `p` can
    /// affect: those of the pieces up to a chain before and after it.
    fn refresh_flags(&mut self, page: PageId, p: usize, g: Geom) {
        // Oldest age (distance from home) in each piece near p.
        let mut max_age = [0usize; PIECES];
        let mut buf = std::mem::take(&mut self.scratch2);
        let pg = self.store.page(page);
        for d in 0..(3 * CHAIN).min(PIECES) {
            let q = (p + PIECES * 2 + d - (CHAIN - 1).min(PIECES)) % PIECES;
            piece::decode(pg.piece(q), &mut buf).expect("valid piece");
            if let Some(last) = buf.last() {
                max_age[q] = (last.z >> g.shift) as usize;
            }
        }
        self.scratch2 = buf;
        let pg = self.store.page_mut(page);
        for d in 0..(2 * CHAIN - 1).min(PIECES) {
            let x = (p + PIECES * 2 + d - (CHAIN - 1).min(PIECES)) % PIECES;
            let on = (1..CHAIN).any(|k| max_age[nth(x, k)] >= k);
            piece::set_overflowed(pg.piece_mut(x), on);
        }
    }

    /// Merge the page holding hash `h` with its buddy while both are small,
    /// then shrink the directory while no page needs its full depth.
    fn maybe_merge(&mut self, h: u64) {
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
            let mut part = Vec::new();
            for (id, meta) in [(loc.page, m), (buddy, b)] {
                self.page_entries(id, &mut part);
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

    /// Every (key, value) pair, in no particular order.
    pub fn iter(&self) -> Iter<'_, S> {
        Iter {
            table: self,
            next_page: 0,
            buf: Vec::new(),
            spill: self.spill.iter(),
        }
    }

    /// Shape counters; walks every page (O(pages)).
    pub fn stats(&self) -> Stats {
        let mut used = 0u64;
        let mut longest = 0usize;
        let mut pages = 0usize;
        let mut max_depth = 0u8;
        let mut buf = Vec::new();
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
            }
        }
        Stats {
            len: self.len,
            pages,
            global_depth: self.global_depth,
            max_local_depth: max_depth,
            fill: used as f64 / (pages * PIECES * PIECE_DATA).max(1) as f64,
            longest_chain: longest,
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

/// Lay out `entries` (ascending position, all of one page with geometry
/// `g`) into an empty `page`: each piece takes the oldest-home entries that
/// fit, the rest carry to the next piece within their chain; what is still
/// carried past the last piece wraps around into free room at the start.
/// Entries that run out of chain go to `left`. Returns (count, bytes) placed.
pub(crate) fn build(
    page: &mut Page,
    entries: &[Entry],
    g: Geom,
    left: &mut Vec<Entry>,
) -> (u32, u32) {
    page.clear();
    let mut carry: Vec<Entry> = Vec::new();
    let mut buf: Vec<Entry> = Vec::with_capacity(PIECE_DATA);
    let (mut count, mut bytes) = (0u32, 0u32);
    let mut i = 0;
    for p in 0..PIECES {
        while i < entries.len() && g.home(entries[i].z) == p {
            carry.push(entries[i]);
            i += 1;
        }
        if carry.is_empty() {
            continue;
        }
        // Oldest homes (largest distances) first, while they fit.
        let mut sizer = piece::Sizer::default();
        let lo = carry
            .iter()
            .take_while(|e| {
                sizer.try_add(Entry {
                    z: g.r(p, e.z),
                    v: e.v,
                })
            })
            .count();
        // Oldest first is ascending position, which is descending distance.
        buf.clear();
        buf.extend(carry[..lo].iter().rev());
        let pc = page.piece_mut(p);
        let ok = encode_z(pc, p, g, &mut buf);
        debug_assert!(ok);
        count += lo as u32;
        bytes += piece::used(pc) as u32;
        carry.drain(..lo);
        if !carry.is_empty() {
            piece::set_overflowed(pc, true);
        }
        carry.retain(|e| {
            let keep = g.home(e.z) + CHAIN > p + 1;
            if !keep {
                left.push(*e);
            }
            keep
        });
    }
    // Wrap: entries whose chain continues past the last piece.
    'entry: for e in carry {
        let home = g.home(e.z);
        for k in 0..CHAIN {
            let p = nth(home, k);
            if p < home {
                let pc = page.piece_mut(p);
                piece::decode(pc, &mut buf).expect("valid piece");
                let r = g.r(p, e.z);
                let at = buf.partition_point(|x| x.z < r);
                buf.insert(at, Entry { z: r, v: e.v });
                let before = piece::used(pc) as u32;
                if piece::encode(pc, &buf) {
                    bytes = bytes - before + piece::used(pc) as u32;
                    count += 1;
                    continue 'entry;
                }
            }
            piece::set_overflowed(page.piece_mut(p), true);
        }
        left.push(e);
    }
    (count, bytes)
}

/// Iterator over a table's pairs.
#[derive(Debug)]
pub struct Iter<'a, S: PageStore> {
    table: &'a ExHash<S>,
    next_page: usize,
    buf: Vec<(u64, u64)>,
    spill: std::collections::btree_map::Iter<'a, u64, u64>,
}

impl<S: PageStore> Iterator for Iter<'_, S> {
    type Item = (u64, u64);

    fn next(&mut self) -> Option<(u64, u64)> {
        loop {
            if let Some(kv) = self.buf.pop() {
                return Some(kv);
            }
            let meta = &self.table.meta;
            while self.next_page < meta.len() && meta[self.next_page].depth == 0 {
                self.next_page += 1;
            }
            if self.next_page >= meta.len() {
                return self.spill.next().map(|(&k, &v)| (k, v));
            }
            let id = self.next_page;
            self.next_page += 1;
            let m = meta[id];
            let g = Geom::of(m.depth);
            let page = self.table.store.page(id as PageId);
            let mut entries = Vec::new();
            for p in 0..PIECES {
                decode_z(page.piece(p), p, g, &mut entries).expect("valid piece");
                self.buf.extend(
                    entries
                        .iter()
                        .map(|e| (unmix(ExHash::<S>::hash_at(&m, e.z)), e.v)),
                );
            }
        }
    }
}
