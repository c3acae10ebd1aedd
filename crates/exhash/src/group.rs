//! The page layout of format 3: each page is one small open-addressing
//! table in the manner of SwissTable, whose groups are 16 tag bytes
//! compared at once.
//!
//! A page of depth 9 or more ([`Narrow`]) is 34 groups: 544 tag bytes,
//! then 544 slots of a 6-byte key field and an 8-byte value (8160 bytes,
//! the last 32 zero). A shallower page ([`Wide`]) is 32 groups of 7-byte
//! key fields (8192 bytes). A tag is 0 for a free slot, `0x80 | fp` for a
//! slot in use, `fp` being seven bits of the entry's position.
//!
//! Of an entry's page-local position `z` (`65 - depth` bits): the low 24
//! bits `L` give its home group `L mod groups` and quotient `L / groups`
//! (below 2^19), the next 7 its fingerprint, the rest (`34 - depth` bits)
//! are stored. Key field: `rest << 23 | quotient << 4 | o`, `o` being how
//! many groups past its home the entry lives (below [`REACH`]).
//!
//! The invariant that makes a miss cheap: an entry living `o` groups past
//! its home has every group from its home to the one before its own full.
//! A new entry takes the first free slot from its home group on, so a
//! lookup stops at the first group with a free slot: most misses are one
//! 16-byte compare. Removal and splits keep the invariant by moving
//! displaced entries back into the holes they leave.

use crate::mix::unskew;
use crate::page::{PAGE_SIZE, Page};

/// How many groups an entry may live in: its home group and the next
/// `REACH - 1` (wrapping from the last group to the first).
pub const REACH: usize = 16;
/// Slots in a group.
pub(crate) const GROUP: usize = 16;
/// Position bits that choose the home group and the quotient.
const LOW: u32 = 24;
/// Bits of the quotient in a key field.
const QUOTIENT_BITS: u32 = 19;
/// Bits of the group offset in a key field.
const OFFSET_BITS: u32 = 4;
/// Position bits between the quotient and the stored rest.
const FP_BITS: u32 = 7;
/// Depth from which pages use [`Narrow`].
pub(crate) const NARROW_FROM: u8 = 9;

/// A page geometry.
pub(crate) trait Shape {
    /// Groups in a page.
    const GROUPS: usize;
    /// Bytes of a key field.
    const WIDTH: usize;
    /// Where the slots start (after the tags).
    const SLOTS: usize = Self::GROUPS * GROUP;
    /// Bytes of a slot.
    const SLOT: usize = Self::WIDTH + 8;
    /// Mask of a key field.
    const KEY_MASK: u64 = u64::MAX >> (64 - 8 * Self::WIDTH);
    /// Bytes used by tags and slots; the rest of the page is zero.
    const END: usize = Self::SLOTS * (1 + Self::SLOT);
    /// The most cache lines the slots of one group lie in.
    const GROUP_SLOT_LINES: usize = most_lines(Self::SLOTS, GROUP * Self::SLOT, Self::GROUPS);
    /// The most cache lines one slot lies in.
    const SLOT_LINES: usize = most_lines(Self::SLOTS, Self::SLOT, Self::SLOTS);
}

/// The most cache lines that `count` runs of `len` bytes lie in, run `i`
/// starting at byte `first + i * len` of a page (pages start a line).
const fn most_lines(first: usize, len: usize, count: usize) -> usize {
    let (mut most, mut i) = (0, 0);
    while i < count {
        let start = first + i * len;
        let lines = (start + len - 1) / 64 - start / 64 + 1;
        if lines > most {
            most = lines;
        }
        i += 1;
    }
    most
}

/// Pages of depth [`NARROW_FROM`] or more: 34 groups, 6-byte key fields.
pub(crate) struct Narrow;
/// Shallower pages: 32 groups, 7-byte key fields.
pub(crate) struct Wide;

impl Shape for Narrow {
    const GROUPS: usize = 34;
    const WIDTH: usize = 6;
}

impl Shape for Wide {
    const GROUPS: usize = 32;
    const WIDTH: usize = 7;
}

/// Whether pages of depth `depth` are [`Narrow`].
#[inline(always)]
pub(crate) fn narrow(depth: u8) -> bool {
    depth >= NARROW_FROM
}

/// A position taken apart: home group, tag, key field at offset 0.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Key {
    pub home: usize,
    pub tag: u8,
    pub field: u64,
}

/// Split page-local position `z` for pages of shape `T`.
#[inline(always)]
pub(crate) fn key<T: Shape>(z: u64) -> Key {
    let low = z & ((1 << LOW) - 1);
    let groups = T::GROUPS as u64;
    Key {
        home: (low % groups) as usize,
        tag: 0x80 | ((z >> LOW) as u8 & 0x7f),
        field: ((z >> (LOW + FP_BITS)) << (QUOTIENT_BITS + OFFSET_BITS))
            | ((low / groups) << OFFSET_BITS),
    }
}

/// The position of the entry in group `g` with tag `tag` and key field
/// `field`.
#[inline]
pub(crate) fn position<T: Shape>(g: usize, tag: u8, field: u64) -> u64 {
    let o = (field & ((1 << OFFSET_BITS) - 1)) as usize;
    let home = (g + T::GROUPS - o) % T::GROUPS;
    let q = (field >> OFFSET_BITS) & ((1 << QUOTIENT_BITS) - 1);
    let rest = field >> (QUOTIENT_BITS + OFFSET_BITS);
    (rest << (LOW + FP_BITS))
        | (((tag & 0x7f) as u64) << LOW)
        | (q * T::GROUPS as u64 + home as u64)
}

#[inline(always)]
fn rd64(page: &[u8; PAGE_SIZE], at: usize) -> u64 {
    u64::from_le_bytes(page[at..at + 8].try_into().expect("8 bytes"))
}

/// Byte offset of slot `s`.
#[inline(always)]
pub(crate) fn slot_at<T: Shape>(s: usize) -> usize {
    T::SLOTS + s * T::SLOT
}

/// The key field of slot `s`.
#[inline(always)]
pub(crate) fn field<T: Shape>(page: &Page, s: usize) -> u64 {
    rd64(&page.0, slot_at::<T>(s)) & T::KEY_MASK
}

/// The value of slot `s`.
#[inline(always)]
pub(crate) fn value<T: Shape>(page: &Page, s: usize) -> u64 {
    rd64(&page.0, slot_at::<T>(s) + T::WIDTH)
}

/// Overwrite the value of slot `s`.
#[inline(always)]
pub(crate) fn set_value<T: Shape>(page: &mut Page, s: usize, v: u64) {
    let at = slot_at::<T>(s) + T::WIDTH;
    page.0[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// The tag of slot `s` (0: free).
#[inline(always)]
pub(crate) fn tag(page: &Page, s: usize) -> u8 {
    page.0[s]
}

fn write<T: Shape>(page: &mut Page, s: usize, tag: u8, field: u64, v: u64) {
    let at = slot_at::<T>(s);
    page.0[at..at + T::WIDTH].copy_from_slice(&field.to_le_bytes()[..T::WIDTH]);
    page.0[at + T::WIDTH..at + T::SLOT].copy_from_slice(&v.to_le_bytes());
    page.0[s] = tag;
}

fn clear<T: Shape>(page: &mut Page, s: usize) {
    let at = slot_at::<T>(s);
    page.0[at..at + T::SLOT].fill(0);
    page.0[s] = 0;
}

/// The slots in use in a page.
pub(crate) fn len<T: Shape>(page: &Page) -> u32 {
    (0..T::GROUPS)
        .map(|g| (!scan(page, g, 0).1 & 0xffff).count_ones())
        .sum()
}

/// Group `o` groups past `home`.
#[inline(always)]
pub(crate) fn next<T: Shape>(home: usize, o: usize) -> usize {
    let g = home + o;
    if g >= T::GROUPS { g - T::GROUPS } else { g }
}

/// Bits of group `g`'s slots whose tag is `tag`, and of its free slots.
#[inline(always)]
pub(crate) fn scan(page: &Page, g: usize, tag: u8) -> (u32, u32) {
    let tags: &[u8; GROUP] = page.0[g * GROUP..g * GROUP + GROUP]
        .try_into()
        .expect("16 tags");
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi32, _mm_setzero_si128,
        };
        // SAFETY: SSE2 is part of the x86_64 baseline; the unaligned load
        // reads exactly the 16 bytes of `tags`.
        unsafe {
            let v = _mm_loadu_si128(tags.as_ptr().cast());
            // The tag in every byte: SSE2 has no byte broadcast, and four
            // copies made by a multiply, then spread by one shuffle, take
            // one instruction fewer than `_mm_set1_epi8`'s unpacks.
            let hit = _mm_movemask_epi8(_mm_cmpeq_epi8(
                v,
                _mm_set1_epi32((tag as u32 * 0x0101_0101) as i32),
            )) as u32;
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

/// Ask for the cache line of the tags of group `home`.
#[inline(always)]
pub(crate) fn prefetch_tags(page: &Page, home: usize) {
    let at = home * GROUP;
    // 16 tags starting at a multiple of 16 lie in one line.
    crate::prefetch::read(&page.0[at..at + GROUP], 1);
}

/// Ask for the cache lines of the slots of group `home`, whose tags a
/// lookup is about to read: the slot it wants then arrives with them
/// instead of after them.
#[inline(always)]
pub(crate) fn prefetch_group_slots<T: Shape>(page: &Page, home: usize) {
    let at = slot_at::<T>(home * GROUP);
    crate::prefetch::read(&page.0[at..at + GROUP * T::SLOT], T::GROUP_SLOT_LINES);
}

/// Ask for the slot a lookup or insert of `k` will most likely touch:
/// the first in its home group whose tag matches, else the first free
/// one. Reads the home group's tags, so it pays when they were
/// prefetched earlier ([`prefetch_tags`]).
#[inline(always)]
pub(crate) fn prefetch_slot<T: Shape>(page: &Page, k: &Key) {
    let (hit, free) = scan(page, k.home, k.tag);
    let pick = if hit != 0 { hit } else { free };
    let i = (pick | 1 << (GROUP - 1)).trailing_zeros() as usize;
    let at = slot_at::<T>(k.home * GROUP + i);
    crate::prefetch::read(&page.0[at..at + T::SLOT], T::SLOT_LINES);
}

/// What the home group of a key says of it.
pub(crate) enum Home {
    /// Its slot.
    Found(usize),
    /// Not in the page: the home group has a free slot, so by the probe
    /// invariant no later group holds it.
    Absent,
    /// The home group is full without it: the later groups may hold it.
    Beyond,
}

/// A lookup of `k` in its home group only, where most lookups end: the
/// same answer as [`find`] there, without the loop over later groups.
#[inline(always)]
pub(crate) fn find_at_home<T: Shape>(page: &Page, k: &Key) -> Home {
    let (mut hit, free) = scan(page, k.home, k.tag);
    while hit != 0 {
        let s = k.home * GROUP + hit.trailing_zeros() as usize;
        if field::<T>(page, s) == k.field {
            return Home::Found(s);
        }
        hit &= hit - 1;
    }
    if free != 0 {
        Home::Absent
    } else {
        Home::Beyond
    }
}

/// The slot holding `k`, if any.
#[inline(always)]
pub(crate) fn find<T: Shape>(page: &Page, k: &Key) -> Option<usize> {
    match seek::<T>(page, k) {
        Seek::Found(s) => Some(s),
        Seek::Free { .. } | Seek::Full => None,
    }
}

/// How many groups a lookup of `k` reads (for the statistics).
pub(crate) fn probes<T: Shape>(page: &Page, k: &Key) -> usize {
    match seek::<T>(page, k) {
        Seek::Found(s) => (s / GROUP + T::GROUPS - k.home) % T::GROUPS + 1,
        Seek::Free { o, .. } => o + 1,
        Seek::Full => REACH,
    }
}

/// Where a lookup of a key ends: its slot, or the first free slot from
/// its home group on (`o` groups past it), where a lookup of a missing key
/// stops and where an insert puts it, or neither when its reach is full
/// (every group of it read).
pub(crate) enum Seek {
    Found(usize),
    Free { slot: usize, o: usize },
    Full,
}

/// A lookup of `k`; on a miss, also where [`put`] puts it.
#[inline(always)]
pub(crate) fn seek<T: Shape>(page: &Page, k: &Key) -> Seek {
    for o in 0..REACH {
        let g = next::<T>(k.home, o);
        let (mut hit, free) = scan(page, g, k.tag);
        while hit != 0 {
            let s = g * GROUP + hit.trailing_zeros() as usize;
            if field::<T>(page, s) == k.field | o as u64 {
                return Seek::Found(s);
            }
            hit &= hit - 1;
        }
        if free != 0 {
            let slot = g * GROUP + free.trailing_zeros() as usize;
            return Seek::Free { slot, o };
        }
    }
    Seek::Full
}

/// Puts a new entry in the free slot a [`seek`] of it found.
#[inline(always)]
pub(crate) fn put<T: Shape>(page: &mut Page, k: &Key, slot: usize, o: usize, v: u64) {
    write::<T>(page, slot, k.tag, k.field | o as u64, v);
}

/// Put a new entry (absent from the page) in the first free slot from its
/// home group on; false if its reach has none.
#[inline(always)]
pub(crate) fn place<T: Shape>(page: &mut Page, k: &Key, v: u64) -> bool {
    for o in 0..REACH {
        let g = next::<T>(k.home, o);
        let (_, free) = scan(page, g, 0);
        if free != 0 {
            let s = g * GROUP + free.trailing_zeros() as usize;
            write::<T>(page, s, k.tag, k.field | o as u64, v);
            return true;
        }
    }
    false
}

/// Free slot `s`, then refill the hole from later groups as long as it
/// breaks an entry's probe sequence.
pub(crate) fn remove<T: Shape>(page: &mut Page, s: usize) {
    clear::<T>(page, s);
    let mut hole = s;
    loop {
        let f = hole / GROUP;
        // A group that had a free slot before is crossed by no sequence.
        if scan(page, f, 0).1.count_ones() != 1 {
            return;
        }
        let Some(from) = (1..REACH).find_map(|dist| {
            let g = next::<T>(f, dist);
            let mut used = !scan(page, g, 0).1 & 0xffff;
            while used != 0 {
                let s2 = g * GROUP + used.trailing_zeros() as usize;
                if field::<T>(page, s2) as usize & (REACH - 1) >= dist {
                    return Some((s2, dist));
                }
                used &= used - 1;
            }
            None
        }) else {
            return;
        };
        let (s2, dist) = from;
        let fld = field::<T>(page, s2) - dist as u64;
        let (t, v) = (tag(page, s2), value::<T>(page, s2));
        write::<T>(page, hole, t, fld, v);
        clear::<T>(page, s2);
        hole = s2;
    }
}

/// Move every displaced entry whose probe sequence crosses a group with a
/// free slot back to the first such slot, until none does. Moves only
/// shorten sequences, so they always succeed.
fn repair<T: Shape>(page: &mut Page) {
    let mut changed = true;
    while changed {
        changed = false;
        for g in 0..T::GROUPS {
            changed |= settle::<T>(page, g);
        }
    }
}

/// [`repair`] in one pass, for a page whose group `barrier` had a free
/// slot before entries were taken out of it, so that no probe sequence
/// crosses that group: visited from the group after it round to it, each
/// entry moves back into groups already settled, and the slots it leaves
/// are only on the sequences of entries visited later.
fn repair_from<T: Shape>(page: &mut Page, barrier: usize) {
    for i in 1..=T::GROUPS {
        settle::<T>(page, (barrier + i) % T::GROUPS);
    }
}

/// Moves each displaced entry of group `g` back to the first group with a
/// free slot on its probe sequence, if any; whether one moved.
#[inline(always)]
fn settle<T: Shape>(page: &mut Page, g: usize) -> bool {
    let mut moved = false;
    let mut used = !scan(page, g, 0).1 & 0xffff;
    while used != 0 {
        let s = g * GROUP + used.trailing_zeros() as usize;
        used &= used - 1;
        let fld = field::<T>(page, s);
        let o = fld as usize & (REACH - 1);
        if o == 0 {
            continue;
        }
        let home = (g + T::GROUPS - o) % T::GROUPS;
        for o2 in 0..o {
            let f = next::<T>(home, o2);
            let free = scan(page, f, 0).1;
            if free != 0 {
                let s2 = f * GROUP + free.trailing_zeros() as usize;
                let (t, v) = (tag(page, s), value::<T>(page, s));
                write::<T>(page, s2, t, fld - (o - o2) as u64, v);
                clear::<T>(page, s);
                moved = true;
                break;
            }
        }
    }
    moved
}

/// Split page `a` of depth `d` (pages of depth `d` and `d + 1` of the
/// same shape): entries whose next position bit is 1 move to the empty
/// page `b`, into the same slot; both pages are then repaired. Returns the
/// entry counts of `a` and `b`.
pub(crate) fn split<T: Shape>(a: &mut Page, b: &mut Page, d: u8) -> (u32, u32) {
    // The top position bit (64 - d) sits at bit 56 - d of the key field.
    let bit = QUOTIENT_BITS + OFFSET_BITS + 33 - d as u32;
    // A group with a free slot now has one in both halves, and no probe
    // sequence crosses it: the repairs can then be one pass each.
    let barrier = (0..T::GROUPS).find(|&g| scan(a, g, 0).1 != 0);
    let (mut na, mut nb) = (0, 0);
    for g in 0..T::GROUPS {
        let mut used = !scan(a, g, 0).1 & 0xffff;
        while used != 0 {
            let s = g * GROUP + used.trailing_zeros() as usize;
            used &= used - 1;
            let fld = field::<T>(a, s);
            let low = fld & !(1 << bit);
            // Without a branch on the bit (half the entries go each way):
            // the slot is written in both pages, zero in the one it leaves.
            let side = fld >> bit & 1;
            let to_b = side.wrapping_neg();
            let (t, v) = (tag(a, s), value::<T>(a, s));
            write::<T>(b, s, t & to_b as u8, low & to_b, v & to_b);
            write::<T>(a, s, t & !to_b as u8, low & !to_b, v & !to_b);
            nb += side as u32;
            na += 1 - side as u32;
        }
    }
    match barrier {
        Some(g) => {
            repair_from::<T>(a, g);
            repair_from::<T>(b, g);
        }
        None => {
            repair::<T>(a);
            repair::<T>(b);
        }
    }
    (na, nb)
}

/// Every entry of a page of shape `T`: (position, value).
pub(crate) fn entries<T: Shape>(page: &Page, mut f: impl FnMut(u64, u64)) {
    for g in 0..T::GROUPS {
        let mut used = !scan(page, g, 0).1 & 0xffff;
        while used != 0 {
            let s = g * GROUP + used.trailing_zeros() as usize;
            used &= used - 1;
            f(
                position::<T>(g, tag(page, s), field::<T>(page, s)),
                value::<T>(page, s),
            );
        }
    }
}

/// Check a page of depth `depth` and prefix `prefix`: tags are free or in
/// use, free slots are zero and so is the page past its slots, every entry
/// lives within its reach with every group before it on its probe
/// sequence full, positions are ones a hash maps to and none repeats.
/// Returns the entry count, or the byte offset and what is wrong.
pub(crate) fn check<T: Shape>(
    page: &Page,
    depth: u8,
    prefix: u32,
    zs: &mut Vec<u64>,
) -> Result<u32, (usize, &'static str)> {
    zs.clear();
    let mut full = [false; 34];
    for (g, f) in full.iter_mut().enumerate().take(T::GROUPS) {
        *f = scan(page, g, 0).1 == 0;
    }
    for s in 0..T::SLOTS {
        let t = tag(page, s);
        let at = slot_at::<T>(s);
        if t == 0 {
            if page.0[at..at + T::SLOT].iter().any(|&b| b != 0) {
                return Err((at, "free slot not zero"));
            }
            continue;
        }
        if t & 0x80 == 0 {
            return Err((s, "tag neither free nor in use"));
        }
        let fld = field::<T>(page, s);
        let o = fld as usize & (REACH - 1);
        let q = (fld >> OFFSET_BITS) & ((1 << QUOTIENT_BITS) - 1);
        let g = s / GROUP;
        let home = (g + T::GROUPS - o) % T::GROUPS;
        if q * T::GROUPS as u64 + home as u64 >= 1 << LOW {
            return Err((at, "quotient out of range"));
        }
        if fld >> (QUOTIENT_BITS + OFFSET_BITS) >> (34 - depth as u32) != 0 {
            return Err((at, "position wider than the page's"));
        }
        if (0..o).any(|k| !full[next::<T>(home, k)]) {
            return Err((at, "displaced entry past a group with a free slot"));
        }
        let z = position::<T>(g, t, fld);
        let high = ((prefix as u64) << (33 - depth)) | (z >> 32);
        if unskew(high).is_none() {
            return Err((at, "entry position no key maps to"));
        }
        zs.push(z);
    }
    if page.0[T::END..].iter().any(|&b| b != 0) {
        return Err((T::END, "bytes past the slots not zero"));
    }
    let count = zs.len() as u32;
    zs.sort_unstable();
    if zs.windows(2).any(|w| w[0] == w[1]) {
        return Err((0, "key stored twice in a page"));
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn positions(n: usize, seed: u64, bits: u32) -> Vec<u64> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x ^ (x >> 29)) & (u64::MAX >> (64 - bits))
            })
            .collect()
    }

    /// `n` distinct page-local positions of real keys in the page of depth
    /// `depth` and prefix `prefix`.
    fn positions_in(depth: u8, prefix: u64, n: usize) -> Vec<u64> {
        let mut out = Vec::new();
        let mut k = 0u64;
        while out.len() < n {
            k += 1;
            let h = crate::mix::mix(k);
            let g = crate::mix::position_high(h);
            if g >> (33 - depth) == prefix {
                out.push(((g & ((1 << (33 - depth)) - 1)) << 32) | (h & 0xffff_ffff));
            }
        }
        out
    }

    /// The lines of the page that `len` bytes from `at` lie in, counted
    /// byte by byte.
    fn lines_of(at: usize, len: usize) -> usize {
        let lines: std::collections::BTreeSet<usize> = (at..at + len).map(|b| b / 64).collect();
        lines.len()
    }

    #[test]
    fn line_counts_bound_every_group_and_slot() {
        fn check<T: Shape>(group_lines: usize) {
            assert_eq!(T::GROUP_SLOT_LINES, group_lines);
            assert_eq!(T::SLOT_LINES, 2);
            let groups = (0..T::GROUPS).map(|g| lines_of(slot_at::<T>(g * GROUP), GROUP * T::SLOT));
            assert_eq!(groups.max(), Some(T::GROUP_SLOT_LINES));
            let slots = (0..T::SLOTS).map(|s| lines_of(slot_at::<T>(s), T::SLOT));
            assert_eq!(slots.max(), Some(T::SLOT_LINES));
            assert!((0..T::GROUPS).all(|g| lines_of(g * GROUP, GROUP) == 1));
        }
        // A narrow group's 224 bytes start 0 or 32 bytes into a line: four
        // lines, where a prefetch every 64 bytes and the last byte's asks
        // for five.
        check::<Narrow>(4);
        check::<Wide>(5);
    }

    #[test]
    fn key_and_position_are_inverse() {
        for z in positions(10_000, 1, 52) {
            let k = key::<Narrow>(z);
            assert!(k.home < Narrow::GROUPS);
            for o in [0, 3, 15] {
                let g = next::<Narrow>(k.home, o);
                assert_eq!(position::<Narrow>(g, k.tag, k.field | o as u64), z);
            }
            let k = key::<Wide>(z);
            assert_eq!(position::<Wide>(k.home, k.tag, k.field), z);
        }
    }

    #[test]
    fn place_find_remove_keep_the_probe_invariant() {
        let mut page = Page::empty();
        let zs = positions_in(9, 5, 500);
        for (i, &z) in zs.iter().enumerate() {
            assert!(place::<Narrow>(&mut page, &key::<Narrow>(z), i as u64));
        }
        let mut buf = Vec::new();
        assert_eq!(check::<Narrow>(&page, 9, 5, &mut buf), Ok(500));
        for (i, &z) in zs.iter().enumerate() {
            let s = find::<Narrow>(&page, &key::<Narrow>(z)).expect("placed");
            assert_eq!(value::<Narrow>(&page, s), i as u64);
        }
        for &z in zs.iter().step_by(3) {
            let s = find::<Narrow>(&page, &key::<Narrow>(z)).expect("present");
            remove::<Narrow>(&mut page, s);
            assert_eq!(find::<Narrow>(&page, &key::<Narrow>(z)), None);
        }
        assert_eq!(check::<Narrow>(&page, 9, 5, &mut buf), Ok(500 - 167));
        for (i, &z) in zs.iter().enumerate() {
            let found = find::<Narrow>(&page, &key::<Narrow>(z));
            assert_eq!(found.is_some(), i % 3 != 0);
        }
    }

    #[test]
    fn splits_of_pages_full_or_not_leave_every_sequence_unbroken() {
        // From a few entries to a page whose every group is full (no group
        // with a free slot: the repairs loop) through pages with one or a
        // few free slots left (one pass from such a group), many seeds, so
        // that sequences wrap from the last group to the first.
        let d = 9u8;
        let top = 64 - d as u32;
        let mut buf = Vec::new();
        for (seed, n) in (0..40u64).flat_map(|s| [60, 400, 520, 540, 2000].map(|n| (s, n))) {
            let mut a = Page::empty();
            let mut b = Page::empty();
            let mut held = Vec::new();
            for (i, z) in positions_in(d, 3 + seed, n).into_iter().enumerate() {
                if place::<Narrow>(&mut a, &key::<Narrow>(z), i as u64) {
                    held.push((z, i as u64));
                }
            }
            let full = (0..Narrow::GROUPS).all(|g| scan(&a, g, 0).1 == 0);
            assert_eq!(full, n == 2000, "seed {seed}, {n} placed {}", held.len());
            let (na, nb) = split::<Narrow>(&mut a, &mut b, d);
            assert_eq!((na + nb) as usize, held.len());
            let prefix = (3 + seed as u32) * 2;
            assert_eq!(check::<Narrow>(&a, d + 1, prefix, &mut buf), Ok(na));
            assert_eq!(check::<Narrow>(&b, d + 1, prefix + 1, &mut buf), Ok(nb));
            for &(z, v) in &held {
                let half = if z >> top & 1 == 1 { &b } else { &a };
                let s = find::<Narrow>(half, &key::<Narrow>(z & !(1 << top))).expect("kept");
                assert_eq!(value::<Narrow>(half, s), v);
            }
        }
    }

    #[test]
    fn one_pass_repairs_from_a_group_with_room_after_scattered_removals() {
        // Nearly full pages, a few entries taken out where they are (as a
        // split does): the displaced entries after each hole move back,
        // which frees slots for entries further on, round past the last
        // group to the first.
        let d = 9u8;
        let mut buf = Vec::new();
        for seed in 0..200u64 {
            let mut page = Page::empty();
            let mut held = Vec::new();
            for (i, z) in positions_in(d, seed, 538).into_iter().enumerate() {
                if place::<Narrow>(&mut page, &key::<Narrow>(z), i as u64) {
                    held.push((z, i as u64));
                }
            }
            let barrier = (0..Narrow::GROUPS)
                .find(|&g| scan(&page, g, 0).1 != 0)
                .expect("538 entries leave room");
            let (mut kept, mut out) = (Vec::new(), Vec::new());
            for (j, (z, v)) in held.into_iter().enumerate() {
                if (j as u64 ^ seed).is_multiple_of(17) {
                    out.push(find::<Narrow>(&page, &key::<Narrow>(z)).expect("placed"));
                } else {
                    kept.push((z, v));
                }
            }
            for s in out {
                clear::<Narrow>(&mut page, s);
            }
            repair_from::<Narrow>(&mut page, barrier);
            let n = kept.len() as u32;
            assert_eq!(
                check::<Narrow>(&page, d, seed as u32, &mut buf),
                Ok(n),
                "seed {seed}"
            );
            for (z, v) in kept {
                let s = find::<Narrow>(&page, &key::<Narrow>(z)).expect("kept");
                assert_eq!(value::<Narrow>(&page, s), v);
            }
        }
    }

    #[test]
    fn split_keeps_every_entry_on_its_side() {
        let d = 9u8;
        let mut a = Page::empty();
        let mut b = Page::empty();
        let zs = positions_in(d, 3, 500);
        for (i, &z) in zs.iter().enumerate() {
            assert!(place::<Narrow>(&mut a, &key::<Narrow>(z), i as u64));
        }
        let (na, nb) = split::<Narrow>(&mut a, &mut b, d);
        assert_eq!((na + nb) as usize, zs.len());
        let mut buf = Vec::new();
        assert!(na > 200 && nb > 200, "{na} {nb}");
        assert_eq!(check::<Narrow>(&a, d + 1, 6, &mut buf), Ok(na));
        assert_eq!(check::<Narrow>(&b, d + 1, 7, &mut buf), Ok(nb));
        let top = 64 - d as u32;
        for (i, &z) in zs.iter().enumerate() {
            let half = if z >> top == 1 { &b } else { &a };
            let k = key::<Narrow>(z & !(1 << top));
            let s = find::<Narrow>(half, &k).expect("kept");
            assert_eq!(value::<Narrow>(half, s), i as u64);
        }
    }
}
