//! Prototype of a second candidate format-3 page layout (issue #16): the
//! page is one small open-addressing table in the manner of SwissTable,
//! measured the same way as `proto_pieces` (put and get alone, no removal).
//!
//! A page of depth 9 or more is 34 groups of 16 slots: 544 tag bytes (one a
//! slot: 0 empty, `0x80 | fp` in use, `fp` being 7 hash bits), then 544
//! slots of a 6-byte key field and an 8-byte value (8160 bytes; 32 left).
//! Shallower pages have 7-byte key fields and 32 groups (8192 bytes).
//!
//! A key's low 24 page-local position bits `L` give its home group
//! `L mod groups` and quotient `L / groups`; the next 7 bits are its
//! fingerprint; the key field is the rest of the position, the quotient,
//! and how many groups past its home the slot is (0..16). An insert takes
//! the first free slot of the first group from its home that has one, so a
//! lookup that meets a group with a free slot and no match knows the key is
//! absent: a miss is usually one 16-byte compare in the home group.
//!
//! `OP=put|get|miss|none|check`, `N`, `PATTERN=random|sequential|strided`.
use std::hint::black_box;

use seekless_exhash::bench::{Pattern, pairs};
use seekless_exhash::mix::position_high;

const PAGE: usize = 8192;
/// How many groups past its home an entry may live, plus one.
const REACH: usize = 16;
const LOW: u32 = 24;

#[inline(always)]
fn mix(mut x: u64) -> u64 {
    x ^= x >> 32;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 32;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 32;
    x
}

#[repr(C, align(64))]
struct Page([u8; PAGE]);

struct Table {
    pages: Vec<Box<Page>>,
    depth: Vec<u8>,
    prefix: Vec<usize>,
    dir: Vec<u32>,
    global: u32,
    len: u64,
}

/// Geometry of a page: key field width `W` and `G` groups.
trait Geo {
    const W: usize;
    const G: usize;
    const SLOTS0: usize = Self::G * 16;
}
struct Narrow;
struct Wide;
impl Geo for Narrow {
    const W: usize = 6;
    const G: usize = 34;
}
impl Geo for Wide {
    const W: usize = 7;
    const G: usize = 32;
}

#[inline(always)]
fn wide(depth: u8) -> bool {
    depth < 9
}

#[inline(always)]
fn rd64(b: &[u8; PAGE], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// Bits of the tags of group `g`: equal to `tag`, and free.
#[inline(always)]
fn group(page: &[u8; PAGE], g: usize, tag: u8) -> (u32, u32) {
    let tags: &[u8; 16] = page[g * 16..g * 16 + 16].try_into().unwrap();
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of x86_64; the unaligned load reads the 16
        // bytes of `tags`.
        unsafe {
            let v = _mm_loadu_si128(tags.as_ptr().cast());
            let hit = _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(tag as i8))) as u32;
            let free = _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_setzero_si128())) as u32;
            (hit, free)
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let (mut hit, mut free) = (0, 0);
        for (i, &b) in tags.iter().enumerate() {
            hit |= ((b == tag) as u32) << i;
            free |= ((b == 0) as u32) << i;
        }
        (hit, free)
    }
}

struct Pos {
    page: usize,
    depth: u8,
    /// Page-local position.
    z: u64,
}

#[inline(always)]
fn split_pos<T: Geo>(z: u64) -> (usize, u8, u64) {
    let low = z & ((1 << LOW) - 1);
    let home = (low % T::G as u64) as usize;
    let q = low / T::G as u64;
    let tag = 0x80 | ((z >> LOW) as u8 & 0x7f);
    let kf = ((z >> (LOW + 7)) << 19 | q) << 4;
    (home, tag, kf)
}

#[inline(always)]
fn slot_at<T: Geo>(g: usize, i: usize) -> usize {
    T::SLOTS0 + (g * 16 + (i & 15)) * (T::W + 8)
}

/// Group `o` groups past `home`.
#[inline(always)]
fn next<T: Geo>(home: usize, o: usize) -> usize {
    let g = home + o;
    if g >= T::G { g - T::G } else { g }
}

/// The slot offset of key field `kf` (at offset 0) probing from `home`.
#[inline(always)]
fn find<T: Geo>(page: &[u8; PAGE], home: usize, tag: u8, kf: u64) -> Option<usize> {
    let mask = u64::MAX >> (64 - 8 * T::W);
    for o in 0..REACH {
        let g = next::<T>(home, o);
        let (mut hit, free) = group(page, g, tag);
        while hit != 0 {
            let at = slot_at::<T>(g, hit.trailing_zeros() as usize);
            if rd64(page, at) & mask == kf | o as u64 {
                return Some(at);
            }
            hit &= hit - 1;
        }
        if free != 0 {
            return None;
        }
    }
    None
}

/// Place a new entry; false if its probe sequence has no free slot.
#[inline(always)]
fn place<T: Geo>(page: &mut [u8; PAGE], home: usize, tag: u8, kf: u64, value: u64) -> bool {
    for o in 0..REACH {
        let g = next::<T>(home, o);
        let (_, free) = group(page, g, tag);
        if free != 0 {
            let i = free.trailing_zeros() as usize;
            let at = slot_at::<T>(g, i);
            page[at..at + T::W].copy_from_slice(&(kf | o as u64).to_le_bytes()[..T::W]);
            page[at + T::W..at + T::W + 8].copy_from_slice(&value.to_le_bytes());
            page[g * 16 + (i & 15)] = tag;
            return true;
        }
    }
    false
}

impl Table {
    fn new() -> Table {
        Table {
            pages: vec![Self::zero_page(), Self::zero_page()],
            depth: vec![1, 1],
            prefix: vec![0, 1],
            dir: vec![0, 1],
            global: 1,
            len: 0,
        }
    }

    fn zero_page() -> Box<Page> {
        let layout = std::alloc::Layout::new::<Page>();
        // SAFETY: the layout is a page's (not zero-sized); a page is bytes,
        // so all zeros is a valid (empty) page; the pointer comes from the
        // global allocator with that layout, as `Box` requires.
        unsafe {
            let p = std::alloc::alloc_zeroed(layout).cast::<Page>();
            if p.is_null() {
                std::alloc::handle_alloc_error(layout);
            }
            Box::from_raw(p)
        }
    }

    fn bytes(&self) -> u64 {
        self.pages.len() as u64 * (PAGE as u64 + 16) + self.dir.len() as u64 * 4
    }

    #[inline(always)]
    fn pos(&self, key: u64) -> Pos {
        let h = mix(key);
        let g = position_high(h);
        let page = self.dir[(g >> (33 - self.global)) as usize] as usize;
        let depth = self.depth[page];
        let y = (g << 32) | (h & 0xffff_ffff);
        Pos {
            page,
            depth,
            z: y & (u64::MAX >> (depth - 1)),
        }
    }

    #[inline]
    fn get(&self, key: u64) -> Option<u64> {
        let p = self.pos(key);
        if wide(p.depth) {
            self.get_in::<Wide>(&p)
        } else {
            self.get_in::<Narrow>(&p)
        }
    }

    #[inline(always)]
    fn get_in<T: Geo>(&self, p: &Pos) -> Option<u64> {
        let page = &self.pages[p.page].0;
        let (home, tag, kf) = split_pos::<T>(p.z);
        find::<T>(page, home, tag, kf).map(|at| rd64(page, at + T::W))
    }

    #[inline]
    fn insert(&mut self, key: u64, value: u64) -> Option<u64> {
        loop {
            let p = self.pos(key);
            let r = if wide(p.depth) {
                self.insert_in::<Wide>(&p, value)
            } else {
                self.insert_in::<Narrow>(&p, value)
            };
            match r {
                Ok(old) => return old,
                Err(()) => self.split(p.page),
            }
        }
    }

    #[inline(always)]
    fn insert_in<T: Geo>(&mut self, p: &Pos, value: u64) -> Result<Option<u64>, ()> {
        let page = &mut self.pages[p.page].0;
        let (home, tag, kf) = split_pos::<T>(p.z);
        if let Some(at) = find::<T>(page, home, tag, kf) {
            let old = rd64(page, at + T::W);
            page[at + T::W..at + T::W + 8].copy_from_slice(&value.to_le_bytes());
            return Ok(Some(old));
        }
        if place::<T>(page, home, tag, kf, value) {
            self.len += 1;
            Ok(None)
        } else {
            Err(())
        }
    }

    #[cold]
    #[inline(never)]
    fn split(&mut self, id: usize) {
        let d = self.depth[id];
        if d as u32 == self.global {
            let old = std::mem::take(&mut self.dir);
            self.dir = old.iter().flat_map(|&s| [s, s]).collect();
            self.global += 1;
        }
        let mut halves = [Self::zero_page(), Self::zero_page()];
        let src = &self.pages[id].0;
        match (wide(d), wide(d + 1)) {
            (true, true) => split_in_place::<Wide>(src, &mut halves, d),
            (true, false) => split_page::<Wide, Narrow>(src, &mut halves, d),
            _ => split_in_place::<Narrow>(src, &mut halves, d),
        }
        let [a, b] = halves;
        self.pages[id] = a;
        let nid = self.pages.len();
        self.pages.push(b);
        self.depth[id] = d + 1;
        self.depth.push(d + 1);
        let prefix = self.prefix[id];
        self.prefix[id] = prefix * 2;
        self.prefix.push(prefix * 2 + 1);
        let span = 1usize << (self.global - d as u32);
        let first = prefix * span;
        for s in &mut self.dir[first + span / 2..first + span] {
            *s = nid as u32;
        }
    }
}

/// The page-local position (depth `d`) of the entry in slot `i` of group
/// `g`, and its value.
#[inline(always)]
fn entry_at<T: Geo>(page: &[u8; PAGE], g: usize, i: usize) -> (u64, u64) {
    let at = slot_at::<T>(g, i);
    let kf = rd64(page, at) & (u64::MAX >> (64 - 8 * T::W));
    let o = kf as usize & 15;
    let home = (g + T::G - o) % T::G;
    let q = (kf >> 4) & ((1 << 19) - 1);
    let rest = kf >> 23;
    let fp = (page[g * 16 + i] & 0x7f) as u64;
    let z = rest << (LOW + 7) | fp << LOW | (q * T::G as u64 + home as u64);
    (z, rd64(page, at + T::W))
}

/// Re-lay the entries of page `src` (depth `d`) in two halves: entries in
/// their home group first, then the displaced ones, so that every probe
/// sequence stays unbroken.
fn split_page<A: Geo, B: Geo>(src: &[u8; PAGE], halves: &mut [Box<Page>; 2], d: u8) {
    let top = 64 - d as u32;
    for pass in 0..2 {
        for g in 0..A::G {
            let mut used = 0u32;
            for i in 0..16 {
                used |= ((src[g * 16 + i] != 0) as u32) << i;
            }
            while used != 0 {
                let i = used.trailing_zeros() as usize;
                used &= used - 1;
                let at = slot_at::<A>(g, i);
                let displaced = rd64(src, at) & 15 != 0;
                if displaced != (pass == 1) {
                    continue;
                }
                let (z, value) = entry_at::<A>(src, g, i);
                let side = (z >> top) as usize & 1;
                let z = z & !(1 << top);
                let (home, tag, kf) = split_pos::<B>(z);
                let placed = place::<B>(&mut halves[side].0, home, tag, kf, value);
                assert!(
                    placed,
                    "a half holds what its page held: d {d} side {side} pass {pass} g {g} home {home}"
                );
            }
        }
    }
}

/// Split page `src` (depth `d`) into two halves of the same geometry: each
/// entry keeps its group and slot, then entries whose probe sequence now
/// crosses a free slot move back to the first one (which only shortens
/// probe sequences, so nothing can exceed the bound).
fn split_in_place<T: Geo>(src: &[u8; PAGE], halves: &mut [Box<Page>; 2], d: u8) {
    let bit = 4 + 19 + 33 - d as u32;
    let mask = u64::MAX >> (64 - 8 * T::W);
    for g in 0..T::G {
        let mut used = !group(src, g, 0).1 & 0xffff;
        while used != 0 {
            let i = used.trailing_zeros() as usize;
            used &= used - 1;
            let tag = src[g * 16 + i];
            let at = slot_at::<T>(g, i);
            let kf = rd64(src, at) & mask;
            let side = (kf >> bit) as usize & 1;
            let dst = &mut halves[side].0;
            dst[at..at + T::W].copy_from_slice(&(kf & !(1 << bit)).to_le_bytes()[..T::W]);
            dst[at + T::W..at + T::W + 8].copy_from_slice(&src[at + T::W..at + T::W + 8]);
            dst[g * 16 + (i & 15)] = tag;
        }
    }
    for half in halves.iter_mut() {
        repair::<T>(&mut half.0);
    }
}

/// Move every displaced entry whose probe sequence crosses a free slot to
/// the first free slot of its sequence, until none does.
fn repair<T: Geo>(page: &mut [u8; PAGE]) {
    let mask = u64::MAX >> (64 - 8 * T::W);
    let mut changed = true;
    while changed {
        changed = false;
        for g in 0..T::G {
            let mut used = !group(page, g, 0).1 & 0xffff;
            while used != 0 {
                let i = used.trailing_zeros() as usize;
                used &= used - 1;
                let at = slot_at::<T>(g, i);
                let kf = rd64(page, at) & mask;
                let o = kf as usize & 15;
                if o == 0 {
                    continue;
                }
                let tag = page[g * 16 + (i & 15)];
                let home = (g + T::G - o) % T::G;
                for o2 in 0..o {
                    let f = next::<T>(home, o2);
                    let (_, free) = group(page, f, tag);
                    if free != 0 {
                        let j = free.trailing_zeros() as usize;
                        let to = slot_at::<T>(f, j);
                        let value = rd64(page, at + T::W);
                        page[to..to + T::W]
                            .copy_from_slice(&((kf & !15) | o2 as u64).to_le_bytes()[..T::W]);
                        page[to + T::W..to + T::W + 8].copy_from_slice(&value.to_le_bytes());
                        page[f * 16 + (j & 15)] = tag;
                        page[g * 16 + (i & 15)] = 0;
                        page[at..at + T::W + 8].fill(0);
                        changed = true;
                        break;
                    }
                }
            }
        }
    }
}

fn main() {
    let n: usize = std::env::var("N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let op = std::env::var("OP").unwrap_or_else(|_| "put".into());
    let pattern = match std::env::var("PATTERN").as_deref() {
        Ok("sequential") => Pattern::Sequential,
        Ok("strided") => Pattern::Strided,
        _ => Pattern::Random,
    };
    let all = pairs(n, pattern);
    let rounds = if op == "put" { 3 } else { 1 };
    let mut sum = 0u64;
    for _ in 0..rounds {
        let start = std::time::Instant::now();
        let mut t = Table::new();
        for &(k, v) in &all {
            t.insert(k, v);
        }
        let put = start.elapsed().as_nanos() as f64 / n as f64;
        assert_eq!(t.len, n as u64);
        let start = std::time::Instant::now();
        match op.as_str() {
            "get" => {
                for _ in 0..3 {
                    for &(k, _) in &all {
                        sum = sum.wrapping_add(t.get(black_box(k)).unwrap_or(1));
                    }
                }
            }
            "miss" => {
                for _ in 0..3 {
                    for &(k, _) in &all {
                        sum = sum.wrapping_add(t.get(black_box(!k)).unwrap_or(1));
                    }
                }
            }
            "check" => {
                for &(k, v) in &all {
                    assert_eq!(t.get(k), Some(v));
                    assert_eq!(t.insert(k, v), Some(v));
                }
                let keys: std::collections::HashSet<u64> = all.iter().map(|p| p.0).collect();
                for &(k, _) in &all {
                    if !keys.contains(&!k) {
                        assert_eq!(t.get(!k), None);
                    }
                }
                println!("check passed");
            }
            _ => {}
        }
        println!(
            "proto-b put {put:.1} ns, then {:.1} ns/op, {:.2} B/entry, {} pages",
            start.elapsed().as_nanos() as f64 / (3 * n) as f64,
            t.bytes() as f64 / n as f64,
            t.pages.len()
        );
    }
    black_box(sum);
}
