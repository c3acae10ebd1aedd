//! Page layout: the table's geometry (chain length, depths, what is known of
//! each page, the directory's slot encoding), how page-local positions map
//! to pieces (home piece, distance back from a piece's end, chains that wrap
//! around the page), and laying a page out from a sorted list of entries.

use crate::piece::{self, Entry, PIECE_DATA};
use crate::store::{PIECES, Page, PageId};

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
    pub fn end(self, p: usize) -> u64 {
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
pub(crate) fn nth(home: usize, i: usize) -> usize {
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
pub(crate) fn encode_z(pc: &mut [u8], p: usize, g: Geom, entries: &mut [Entry]) -> bool {
    for e in entries.iter_mut() {
        e.z = g.r(p, e.z);
    }
    let ok = piece::encode(pc, entries);
    for e in entries.iter_mut() {
        e.z = g.z(p, e.z);
    }
    ok
}

pub(crate) fn encoded_len_z(p: usize, g: Geom, entries: &[Entry], buf: &mut Vec<Entry>) -> usize {
    buf.clear();
    buf.extend(entries.iter().map(|e| Entry {
        z: g.r(p, e.z),
        v: e.v,
    }));
    piece::encoded_len(buf)
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
    let mut buf: Vec<Entry> = Vec::with_capacity(PIECE_DATA);
    let (mut count, mut bytes) = (0u32, 0u32);
    // `ends[p]`: how many entries have their home at or before piece `p`,
    // counted in one pass (a loop per piece would end unpredictably).
    let mut ends = [0usize; PIECES];
    for e in entries {
        ends[g.home(e.z)] += 1;
    }
    for p in 1..PIECES {
        ends[p] += ends[p - 1];
    }
    // The entries carried into piece `p` are always `entries[a..i]`: every
    // piece takes the oldest ones first, and those that run out of chain
    // are the oldest too.
    let mut a = 0;
    for (p, &i) in ends.iter().enumerate() {
        if a == i {
            continue;
        }
        // Oldest homes (largest distances) first, while they fit: all of
        // them when even the longest entries would, else as many as the
        // sizer admits. Oldest first is ascending position, which is
        // descending distance; the distances are planned as they are
        // computed.
        buf.clear();
        let plan = if i - a <= PIECE_DATA / piece::MAX_ENTRY_LEN {
            let mut planner = piece::Planner::default();
            for e in entries[a..i].iter().rev() {
                let d = Entry {
                    z: g.r(p, e.z),
                    v: e.v,
                };
                planner.add(d);
                buf.push(d);
            }
            planner.plan()
        } else {
            let mut sizer = piece::Sizer::default();
            let taken = entries[a..i]
                .iter()
                .take_while(|e| {
                    sizer.try_add(Entry {
                        z: g.r(p, e.z),
                        v: e.v,
                    })
                })
                .count();
            buf.extend(entries[a..a + taken].iter().rev().map(|e| Entry {
                z: g.r(p, e.z),
                v: e.v,
            }));
            sizer.plan()
        };
        let taken = buf.len();
        let pc = page.piece_mut(p);
        piece::encode_planned(pc, &buf, plan);
        count += taken as u32;
        bytes += piece::used(pc) as u32;
        a += taken;
        if a < i {
            piece::set_overflowed(pc, true);
        }
        while a < i && g.home(entries[a].z) + CHAIN <= p + 1 {
            left.push(entries[a]);
            a += 1;
        }
    }
    let carry = &entries[a..];
    // Wrap: entries whose chain continues past the last piece.
    'entry: for &e in carry {
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
