//! The table: lookups, inserts and removals, and placing entries into the
//! pieces of their chain. The directory and its page splits and merges are
//! in `directory.rs`, the geometry and page layout in `layout.rs`.

use std::collections::BTreeMap;

use crate::layout::{
    CHAIN, DirSlot, Geom, MAX_DEPTH, MIN_DEPTH, PageMeta, decode_z, dir_slot, encode_z,
    encoded_len_z, nth, slot_page,
};
use crate::mix::{hash_of_position, mix, position_high, unmix};
use crate::piece::{self, Entry, InPlace, PIECE_DATA, Upsert};
use crate::store::{MemoryStore, PIECES, PageId, PageStore};

/// How many keys ahead the batch operations prefetch.
const PREFETCH_AHEAD: usize = 8;
/// Placing a new entry passes over an overflowed piece with less than this
/// many bytes free without trying it: such a piece is full for all but the
/// smallest entries, and trying means decoding it. Measured (1M pairs):
/// sequential puts 460 -> 310 ns with bytes per entry unchanged for both
/// random and sequential keys; 16 and more start to cost random tables
/// memory (22.8 -> 23.1 bytes per entry).
const SKIP_OVERFLOWED: usize = 8;

/// Where a key goes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Loc {
    pub page: PageId,
    depth: u8,
    z: u64,
    home: usize,
    geom: Geom,
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
    /// Working space for splits, kept so that splits do not allocate.
    pub(crate) split_bufs: (Vec<Entry>, Vec<Entry>),
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
            split_bufs: (Vec::new(), Vec::new()),
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

    pub(crate) fn set_meta(&mut self, id: PageId, m: PageMeta) {
        let i = id as usize;
        if self.meta.len() <= i {
            self.meta.resize(i + 1, PageMeta::default());
        }
        self.meta[i] = m;
    }

    #[inline]
    pub(crate) fn locate(&self, h: u64) -> Loc {
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
        // The home piece inline (nine lookups in ten end there), the rest
        // of the chain and the spill map out of line, so that the hot path
        // stays small wherever it is inlined.
        let loc = self.locate(mix(key));
        let pc = self.store.page(loc.page).piece(loc.home);
        // The distance back from the home piece's end: the position bits
        // below the piece number, inverted.
        let r = !loc.z & ((1u64 << loc.geom.shift) - 1);
        debug_assert_eq!(r, loc.geom.r(loc.home, loc.z));
        if let Some(v) = piece::lookup(pc, r) {
            return Some(v);
        }
        if !piece::overflowed(pc) && self.spill.is_empty() {
            return None;
        }
        self.get_beyond_home(key)
    }

    // Takes the key, not the location, so that the hot path never has to
    // keep the location in memory for it.
    #[inline(never)]
    fn get_beyond_home(&self, key: u64) -> Option<u64> {
        if let Some((_, v)) = self.find_from(&self.locate(mix(key)), 1) {
            return Some(v);
        }
        self.spill.get(&key).copied()
    }

    /// Look up many keys, prefetching each key's home piece a few keys
    /// ahead so that the memory latencies of consecutive lookups overlap.
    /// `out` is cleared, then `out[i]` answers `keys[i]`.
    pub fn get_many(&self, keys: &[u64], out: &mut Vec<Option<u64>>) {
        out.clear();
        out.reserve(keys.len());
        for (i, &key) in keys.iter().enumerate() {
            if let Some(&ahead) = keys.get(i + PREFETCH_AHEAD) {
                self.prefetch(ahead, 1);
            }
            out.push(self.get(key));
        }
    }

    /// Insert many pairs (later ones win), prefetching ahead like
    /// [`ExHash::get_many`] but the first three pieces of each key's chain
    /// (a new key's absence is confirmed over 1.7 pieces on average, and
    /// placing it may go further).
    pub fn insert_many(&mut self, pairs: &[(u64, u64)]) {
        for (i, &(key, value)) in pairs.iter().enumerate() {
            if let Some(&(ahead, _)) = pairs.get(i + PREFETCH_AHEAD) {
                self.prefetch(ahead, 3);
            }
            self.insert(key, value);
        }
    }

    #[inline(always)]
    fn prefetch(&self, key: u64, pieces: usize) {
        let loc = self.locate(mix(key));
        let page = self.store.page(loc.page);
        for i in 0..pieces {
            crate::prefetch::read(page.piece(nth(loc.home, i)));
        }
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: u64) -> bool {
        self.get(key).is_some()
    }

    /// The piece holding the entry at `loc`, and its value.
    #[inline]
    fn find(&self, loc: &Loc) -> Option<(usize, u64)> {
        self.find_from(loc, 0)
    }

    /// [`ExHash::find`] for a caller that has looked in the first `from`
    /// pieces of the chain already (without finding the entry there).
    #[inline]
    fn find_from(&self, loc: &Loc, from: usize) -> Option<(usize, u64)> {
        let page = self.store.page(loc.page);
        for i in 0..CHAIN {
            let p = nth(loc.home, i);
            let pc = page.piece(p);
            if i >= from
                && let Some(v) = piece::lookup(pc, loc.geom.r(p, loc.z))
            {
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
        // The common case first: the home piece answers whether it holds
        // the key and, for a new key when the home piece has not
        // overflowed (so the key is absent from the table), takes it in
        // place, all in one pass over the piece.
        let r = !loc.z & ((1u64 << loc.geom.shift) - 1);
        let direct = self.spill.is_empty();
        let pc = self.store.page_mut(loc.page).piece_mut(loc.home);
        let may_insert = direct && !piece::overflowed(pc);
        let old_used = piece::used(pc) as u32;
        match piece::upsert(pc, r, value, may_insert) {
            Upsert::Found(old) => return Some(old),
            Upsert::Inserted => {
                let new_used = piece::used(pc) as u32;
                self.len += 1;
                let m = &mut self.meta[loc.page as usize];
                m.bytes = m.bytes - old_used + new_used;
                m.count += 1;
                return None;
            }
            Upsert::Absent if may_insert => {
                self.len += 1;
                self.place_new(h, &loc, value);
                return None;
            }
            Upsert::Absent => return self.insert_slow(h, loc, key, value),
            Upsert::Unsupported => {}
        }
        self.insert_general(h, loc, key, value)
    }

    /// [`ExHash::insert`] when the home piece's layout is not one
    /// [`piece::upsert`] handles.
    #[inline(never)]
    fn insert_general(&mut self, h: u64, loc: Loc, key: u64, value: u64) -> Option<u64> {
        let r = !loc.z & ((1u64 << loc.geom.shift) - 1);
        let page = self.store.page(loc.page);
        let pc = page.piece(loc.home);
        if let Some(old) = piece::lookup(pc, r) {
            self.replace(&loc, loc.home, value);
            return Some(old);
        }
        if !piece::overflowed(pc) && self.spill.is_empty() {
            let old_used = piece::used(pc) as u32;
            let pc = self.store.page_mut(loc.page).piece_mut(loc.home);
            self.len += 1;
            if piece::insert_in_place(pc, r, value) == InPlace::Inserted {
                let new_used = piece::used(pc) as u32;
                let m = &mut self.meta[loc.page as usize];
                m.bytes = m.bytes - old_used + new_used;
                m.count += 1;
            } else {
                self.place_new(h, &loc, value);
            }
            return None;
        }
        self.insert_slow(h, loc, key, value)
    }

    /// Place a new entry (already counted in `len`) somewhere in its chain,
    /// splitting pages if the chain is full.
    #[inline(never)]
    fn place_new(&mut self, h: u64, loc: &Loc, value: u64) {
        if !self.try_place(loc, value) {
            self.place_slow(h, value);
        }
    }

    #[inline(never)]
    fn insert_slow(&mut self, h: u64, loc: Loc, key: u64, value: u64) -> Option<u64> {
        // The home piece does not hold the key: the walk starts after it.
        if let Some((p, old)) = self.find_from(&loc, 1) {
            self.replace(&loc, p, value);
            return Some(old);
        }
        if !self.spill.is_empty()
            && let Some(slot) = self.spill.get_mut(&key)
        {
            return Some(std::mem::replace(slot, value));
        }
        self.len += 1;
        self.place_new(h, &loc, value);
        None
    }

    /// Overwrite the value of the entry at `loc` stored in piece `p`.
    fn replace(&mut self, loc: &Loc, p: usize, value: u64) {
        let pc = self.store.page_mut(loc.page).piece_mut(p);
        if piece::overwrite_fixed(pc, loc.geom.r(p, loc.z), value) {
            return;
        }
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
            self.place_new(h, &loc, v);
        }
    }

    /// Try to put a new entry into its home piece or the next ones in its chain.
    fn try_place(&mut self, loc: &Loc, value: u64) -> bool {
        let g = loc.geom;
        let page = self.store.page_mut(loc.page);
        for i in 0..CHAIN {
            let p = nth(loc.home, i);
            let pc = page.piece_mut(p);
            let used = piece::used(pc);
            if used + piece::min_growth(pc) > PIECE_DATA
                || (piece::overflowed(pc) && used + SKIP_OVERFLOWED > PIECE_DATA)
            {
                continue;
            }
            let r = g.r(p, loc.z);
            // Fast path: room and widths already right, insert in place;
            // otherwise decode, insert and encode the piece again.
            let inserted = match piece::insert_in_place(pc, r, value) {
                InPlace::Inserted => true,
                InPlace::Full => false,
                InPlace::Unsupported => {
                    let rs = &mut self.scratch2;
                    piece::decode(pc, rs).expect("valid piece");
                    let at = rs.partition_point(|e| e.z < r);
                    rs.insert(at, Entry { z: r, v: value });
                    piece::encode(pc, rs)
                }
            };
            if !inserted {
                continue;
            }
            let new_used = piece::used(pc);
            for j in 0..i {
                piece::set_overflowed(page.piece_mut(nth(loc.home, j)), true);
            }
            let m = &mut self.meta[loc.page as usize];
            m.bytes = m.bytes - used as u32 + new_used as u32;
            m.count += 1;
            return true;
        }
        false
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
}
