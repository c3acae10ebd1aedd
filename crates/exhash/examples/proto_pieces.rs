//! Prototype of the format-3 page layout (issue #16), measured against the
//! table before the table is changed: put and get alone, no file backend,
//! no removal.
//!
//! Layout of a 128-byte piece:
//!
//! | bytes | field |
//! |---|---|
//! | 0 | low 4 bits: slots in use `n`; bits 4-6: `k`, how many fingerprints of displaced own entries follow (7: more than 6, walk `reach` pieces) |
//! | 1 | `reach`: the farthest piece past this one where an entry of this home lives (0: none displaced) |
//! | 2..8 | fingerprints of the displaced own entries (`k` of them) |
//! | 8..16 | tag (fingerprint) of each slot in use |
//! | 16.. | slots: key field (`W` bytes) then value (8 bytes) |
//!
//! A key's home piece is `h & 63` (bits the directory never reads), its
//! fingerprint `h >> 6` (8 bits); the key field is the rest of its
//! page-local position, shifted left by 5, or-ed with how many pieces past
//! its home the slot is. A lookup compares its fingerprint with the first 16
//! bytes of the home piece at once: no match is a miss.
//!
//! `MODE=proto|base` (default proto), `OP=put|get|miss` (default put), `N`.
use std::hint::black_box;

use seekless_exhash::ExHash;
use seekless_exhash::bench::{Pattern, pairs};
use seekless_exhash::mix::position_high;

/// A bijection on u64 mixing every bit (the format-2 mixer keeps the low
/// three key bits, which would put runs of eight keys in one home piece
/// under one fingerprint).
#[inline(always)]
fn mix(mut x: u64) -> u64 {
    x ^= x >> 32;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 32;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 32;
    x
}

const PAGE: usize = 8192;
const PIECE: usize = 128;
const CHAIN: usize = 32;
const SLOTS0: usize = 16;

#[repr(C, align(64))]
struct Page([[u8; PIECE]; 64]);

type Piece = [u8; PIECE];

struct Table {
    pages: Vec<Box<Page>>,
    depth: Vec<u8>,
    prefix: Vec<usize>,
    dir: Vec<u32>,
    global: u32,
    len: u64,
}

/// Key field bytes of a page at `depth`: its field holds `56 - depth` bits.
#[inline(always)]
fn wide(depth: u8) -> bool {
    depth < 8
}

#[inline(always)]
fn rd64(b: &Piece, at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// Offset of slot `i` in a piece of `W`-byte key fields.
#[inline(always)]
fn slot_at<const W: usize>(i: usize) -> usize {
    SLOTS0 + (i & 7) * (W + 8)
}

#[inline(always)]
const fn slots<const W: usize>() -> usize {
    (PIECE - SLOTS0) / (W + 8)
}

#[inline(always)]
fn write_slot<const W: usize>(piece: &mut Piece, i: usize, kf: u64, value: u64) {
    let at = slot_at::<W>(i);
    piece[at..at + W].copy_from_slice(&kf.to_le_bytes()[..W]);
    piece[at + W..at + W + 8].copy_from_slice(&value.to_le_bytes());
}

/// Bit `i` set where byte `i` of the piece's first 16 equals `fp`.
#[inline(always)]
fn matches(piece: &Piece, fp: u8) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of x86_64; the unaligned load reads bytes
        // 0..16 of the 128-byte piece.
        unsafe {
            let v = _mm_loadu_si128(piece.as_ptr().cast());
            _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(fp as i8))) as u32
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mut m = 0;
        for (i, &b) in piece[..16].iter().enumerate() {
            m |= ((b == fp) as u32) << i;
        }
        m
    }
}

struct Pos {
    page: usize,
    depth: u8,
    home: usize,
    fp: u8,
    kf: u64,
}

/// The slot of `p` among the slots `hits` of `piece` whose key field is `kf`.
#[inline(always)]
fn find<const W: usize>(piece: &Piece, mut hits: u32, kf: u64) -> Option<usize> {
    let mask = u64::MAX >> (64 - 8 * W);
    while hits != 0 {
        let i = hits.trailing_zeros() as usize;
        if rd64(piece, slot_at::<W>(i)) & mask == kf {
            return Some(i);
        }
        hits &= hits - 1;
    }
    None
}

/// Whether the fingerprint match `m` of a home piece's head says an entry
/// of that home may live past it.
#[inline(always)]
fn maybe_displaced(head0: u8, m: u32) -> bool {
    let k = (head0 >> 4) as u32;
    k != 0 && (k == 7 || (m >> 2) & ((1 << k) - 1) != 0)
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
        let z = y & (u64::MAX >> (depth - 1));
        let rest = z >> 14;
        Pos {
            page,
            depth,
            home: h as usize & 63,
            fp: (h >> 6) as u8,
            kf: rest << 5,
        }
    }

    #[inline]
    fn get(&self, key: u64) -> Option<u64> {
        let p = self.pos(key);
        if wide(p.depth) {
            self.get_in::<7>(&p)
        } else {
            self.get_in::<6>(&p)
        }
    }

    #[inline(always)]
    fn get_in<const W: usize>(&self, p: &Pos) -> Option<u64> {
        let page = &self.pages[p.page].0;
        let piece = &page[p.home];
        let m = matches(piece, p.fp);
        let n = piece[0] as u32 & 15;
        if let Some(i) = find::<W>(piece, (m >> 8) & ((1 << n) - 1), p.kf) {
            return Some(rd64(piece, slot_at::<W>(i) + W));
        }
        if !maybe_displaced(piece[0], m) {
            return None;
        }
        walk::<W>(page, p, piece[1] as usize).map(|(q, i)| rd64(&page[q], slot_at::<W>(i) + W))
    }

    #[inline]
    fn insert(&mut self, key: u64, value: u64) -> Option<u64> {
        loop {
            let p = self.pos(key);
            let r = if wide(p.depth) {
                self.insert_in::<7>(&p, value)
            } else {
                self.insert_in::<6>(&p, value)
            };
            match r {
                Ok(old) => return old,
                Err(()) => self.split(p.page),
            }
        }
    }

    #[inline(always)]
    fn insert_in<const W: usize>(&mut self, p: &Pos, value: u64) -> Result<Option<u64>, ()> {
        let page = &mut self.pages[p.page].0;
        let piece = &mut page[p.home];
        let m = matches(piece, p.fp);
        let n = piece[0] as usize & 15;
        if let Some(i) = find::<W>(piece, (m >> 8) & ((1 << n) - 1), p.kf) {
            let at = slot_at::<W>(i) + W;
            let old = rd64(piece, at);
            piece[at..at + 8].copy_from_slice(&value.to_le_bytes());
            return Ok(Some(old));
        }
        if maybe_displaced(piece[0], m)
            && let Some(old) = overwrite_displaced::<W>(page, p, value)
        {
            return Ok(Some(old));
        }
        let piece = &mut page[p.home];
        if n < slots::<W>() {
            write_slot::<W>(piece, n, p.kf, value);
            piece[8 + n % 8] = p.fp;
            piece[0] += 1;
            self.len += 1;
            return Ok(None);
        }
        if place_displaced::<W>(page, p, value) {
            self.len += 1;
            return Ok(None);
        }
        Err(())
    }

    /// Split page `id` into itself (position bit 0) and a new page (1):
    /// each entry stays in the same piece and slot order, so the page is
    /// compacted in place.
    #[cold]
    #[inline(never)]
    fn split(&mut self, id: usize) {
        let d = self.depth[id];
        if d as u32 == self.global {
            let old = std::mem::take(&mut self.dir);
            self.dir = old.iter().flat_map(|&s| [s, s]).collect();
            self.global += 1;
        }
        let mut b = Self::zero_page();
        let a = &mut self.pages[id];
        match (wide(d), wide(d + 1)) {
            (true, true) => split_page::<7, 7>(&mut a.0, &mut b.0, d),
            (true, false) => split_page::<7, 6>(&mut a.0, &mut b.0, d),
            _ => split_page::<6, 6>(&mut a.0, &mut b.0, d),
        }
        let nid = self.pages.len();
        self.pages.push(b);
        self.depth[id] = d + 1;
        self.depth.push(d + 1);
        let prefix = self.prefix[id];
        self.prefix[id] = prefix * 2;
        self.prefix.push(prefix * 2 + 1);
        // The page's directory range: 2^(G-d) slots, the second half to `nid`.
        let span = 1usize << (self.global - d as u32);
        let first = prefix * span;
        for s in &mut self.dir[first + span / 2..first + span] {
            *s = nid as u32;
        }
    }
}

/// The piece and slot of the displaced entry `p`, if present.
#[inline(never)]
fn walk<const W: usize>(page: &[Piece; 64], p: &Pos, reach: usize) -> Option<(usize, usize)> {
    for o in 1..=reach {
        let q = (p.home + o) & 63;
        let piece = &page[q];
        let n = piece[0] as u32 & 15;
        let hits = (matches(piece, p.fp) >> 8) & ((1 << n) - 1);
        if let Some(i) = find::<W>(piece, hits, p.kf | o as u64) {
            return Some((q, i));
        }
    }
    None
}

#[inline(never)]
fn overwrite_displaced<const W: usize>(page: &mut [Piece; 64], p: &Pos, value: u64) -> Option<u64> {
    let (q, i) = walk::<W>(page, p, page[p.home][1] as usize)?;
    let at = slot_at::<W>(i) + W;
    let old = rd64(&page[q], at);
    page[q][at..at + 8].copy_from_slice(&value.to_le_bytes());
    Some(old)
}

#[inline(never)]
fn place_displaced<const W: usize>(page: &mut [Piece; 64], p: &Pos, value: u64) -> bool {
    for o in 1..CHAIN {
        let q = (p.home + o) & 63;
        let piece = &mut page[q];
        let n = piece[0] as usize & 15;
        if n < slots::<W>() {
            write_slot::<W>(piece, n, p.kf | o as u64, value);
            piece[8 + n % 8] = p.fp;
            piece[0] += 1;
            note_displaced(&mut page[p.home], p.fp, o);
            return true;
        }
    }
    false
}

/// Move the entries of `a` (depth `d`) whose next position bit is 1 into
/// the empty page `b`, each to the same piece; compact the rest in place.
fn split_page<const WO: usize, const WN: usize>(a: &mut [Piece; 64], b: &mut [Piece; 64], d: u8) {
    let bit = 55 - d as u32;
    let mask = u64::MAX >> (64 - 8 * WO);
    // Displaced-entry records are rebuilt from the entries themselves.
    for piece in a.iter_mut() {
        piece[0] &= 15;
        piece[1..8].fill(0);
    }
    for q in 0..64 {
        let n = a[q][0] as usize & 15;
        let mut na = 0;
        let mut nb = 0;
        let src = a[q];
        for i in 0..n {
            let at = slot_at::<WO>(i);
            let kf = rd64(&src, at) & mask;
            let value = rd64(&src, at + WO);
            let tag = src[8 + i % 8];
            let side = (kf >> bit) & 1 == 1;
            let kf = kf & !(1 << bit);
            let (dst, k) = if side {
                (&mut *b, &mut nb)
            } else {
                (&mut *a, &mut na)
            };
            let j = *k;
            *k += 1;
            write_slot::<WN>(&mut dst[q], j, kf, value);
            dst[q][8 + j % 8] = tag;
            let o = kf as usize & 31;
            note_displaced_if(&mut dst[(q + 64 - o) & 63], tag, o);
        }
        a[q][0] = (a[q][0] & 0xf0) | na as u8;
        b[q][0] = (b[q][0] & 0xf0) | nb as u8;
        let used = slot_at::<WN>(0) + na * (WN + 8);
        a[q][used..].fill(0);
        a[q][8 + na..16].fill(0);
    }
}

/// Record at a home piece that one of its entries lives `o` pieces past it.
#[inline(always)]
fn note_displaced(home: &mut Piece, fp: u8, o: usize) {
    let k = home[0] >> 4;
    if k < 6 {
        home[2 + k as usize] = fp;
        home[0] += 16;
    } else if k == 6 {
        home[0] += 16;
    }
    home[1] = home[1].max(o as u8);
}

/// `note_displaced` without a branch; nothing for `o == 0` (then `home` is
/// the entry's own piece, whose header bytes are not slot data).
#[inline(always)]
fn note_displaced_if(home: &mut Piece, fp: u8, o: usize) {
    let k = home[0] >> 4;
    let at = 2 + (k as usize).min(5);
    let moved = o != 0;
    home[at] = if moved & (k < 6) { fp } else { home[at] };
    home[0] += ((moved & (k < 7)) as u8) << 4;
    home[1] = home[1].max(o as u8);
}

fn main() {
    let n: usize = std::env::var("N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let proto = std::env::var("MODE").map(|m| m != "base").unwrap_or(true);
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
        if proto {
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
                "proto put {put:.1} ns, then {:.1} ns/op, {:.2} B/entry, {} pages",
                start.elapsed().as_nanos() as f64 / (3 * n) as f64,
                t.bytes() as f64 / n as f64,
                t.pages.len()
            );
        } else {
            let mut t = ExHash::new();
            for &(k, v) in &all {
                t.insert(k, v);
            }
            let put = start.elapsed().as_nanos() as f64 / n as f64;
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
                _ => {}
            }
            println!(
                "base put {put:.1} ns, then {:.1} ns/op, {:.2} B/entry",
                start.elapsed().as_nanos() as f64 / (3 * n) as f64,
                t.memory_bytes() as f64 / n as f64
            );
        }
    }
    black_box(sum);
}
