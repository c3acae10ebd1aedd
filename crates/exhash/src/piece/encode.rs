//! Writing a piece from a sorted run of entries: planning the cheapest
//! format, sizing, encoding.

use super::*;

/// How the encoder lays out a set of entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    len: usize,
    format: u8,
}

/// Plan the smallest encoding of `entries` (strictly ascending keys).
pub fn plan(entries: &[Entry]) -> Plan {
    let mut planner = Planner::default();
    for &e in entries {
        planner.add(e);
    }
    planner.plan()
}

/// [`plan`] one entry at a time, so that a caller producing the entries
/// plans them in the same pass.
#[derive(Clone, Copy, Debug, Default)]
pub struct Planner {
    n: usize,
    tagged: usize,
    wk: usize,
    wv: usize,
    prev: u64,
    prev_v: u64,
}

impl Planner {
    /// Add `e`, whose key is above every key added so far.
    #[inline(always)]
    pub fn add(&mut self, e: Entry) {
        let first = self.n == 0;
        let delta = if first { e.z } else { e.z - self.prev - 1 };
        let kl = byte_len(delta);
        let raw = byte_len(e.v);
        let vl = if first {
            raw
        } else {
            raw.min(byte_len(zigzag(e.v.wrapping_sub(self.prev_v))))
        };
        self.tagged += 1 + kl + vl;
        self.wk = self.wk.max(kl);
        self.wv = self.wv.max(raw);
        self.prev = e.z;
        self.prev_v = e.v;
        self.n += 1;
    }

    /// The smallest encoding of the entries added so far.
    #[inline]
    pub fn plan(&self) -> Plan {
        let width = self.wk + self.wv;
        if width > 0 && self.n * width <= self.tagged {
            Plan {
                len: self.n * width,
                format: (self.wv << 4 | self.wk) as u8,
            }
        } else {
            Plan {
                len: self.tagged,
                format: TAGGED,
            }
        }
    }
}

/// The encoded size of a growing set of entries, for filling a piece
/// greedily: entries are added by descending key, each becoming the first
/// in encoding order, and the size is updated in constant time. (Adding an
/// entry in front only changes the stored key and value of the entry that
/// was first; every later gap is fixed once both its ends are in.)
#[derive(Clone, Debug, Default)]
pub struct Sizer {
    n: usize,
    tagged: usize,
    /// Widest key gap of the entries after the first.
    gap_width: usize,
    value_width: usize,
    first: Option<Entry>,
}

impl Sizer {
    /// Add `e` (key below every key added so far) if the piece still fits.
    #[inline]
    pub fn try_add(&mut self, e: Entry) -> bool {
        let kl = byte_len(e.z);
        let vl = byte_len(e.v);
        let mut tagged = self.tagged + 1 + kl + vl;
        let mut gap_width = self.gap_width;
        if let Some(f) = self.first {
            let gap = byte_len(f.z - e.z - 1);
            let raw = byte_len(f.v);
            let new_vl = raw.min(byte_len(zigzag(f.v.wrapping_sub(e.v))));
            tagged = tagged + gap + new_vl - byte_len(f.z) - raw;
            gap_width = gap_width.max(gap);
        }
        let n = self.n + 1;
        let width = gap_width.max(kl) + self.value_width.max(vl);
        let len = if width > 0 && n * width <= tagged {
            n * width
        } else {
            tagged
        };
        if len > PIECE_DATA {
            return false;
        }
        *self = Sizer {
            n,
            tagged,
            gap_width,
            value_width: self.value_width.max(vl),
            first: Some(e),
        };
        true
    }

    /// The encoding of the entries added so far: what [`encode`] would
    /// choose for them.
    pub fn plan(&self) -> Plan {
        let wk = self.gap_width.max(self.first.map_or(0, |f| byte_len(f.z)));
        let wv = self.value_width;
        let width = wk + wv;
        if width > 0 && self.n * width <= self.tagged {
            Plan {
                len: self.n * width,
                format: (wv << 4 | wk) as u8,
            }
        } else {
            Plan {
                len: self.tagged,
                format: TAGGED,
            }
        }
    }
}

/// Encoded size of `entries` in bytes.
pub fn encoded_len(entries: &[Entry]) -> usize {
    plan(entries).len
}

/// Encode `entries` (strictly ascending keys) into `piece`, keeping its
/// overflow flag. Returns false, leaving the piece untouched, if they do
/// not fit.
pub fn encode(piece: &mut [u8], entries: &[Entry]) -> bool {
    let plan = plan(entries);
    if plan.len > PIECE_DATA {
        return false;
    }
    encode_planned(piece, entries, plan);
    true
}

/// Encode `entries` (strictly ascending keys, which fit) into `piece` as
/// `plan` says, which must be their plan (from a [`Sizer`] that saw them).
pub fn encode_planned(piece: &mut [u8], entries: &[Entry], plan: Plan) {
    debug_assert_eq!(plan, self::plan(entries));
    let flag = piece[0] & OVERFLOW;
    piece[0] = flag | plan.len as u8;
    piece[1] = plan.format;
    let data = piece;
    let mut pos = 2;
    let mut prev = 0;
    let mut prev_v = 0u64;
    if plan.format == TAGGED {
        // Data first, front to back (each word store's spill lands on data
        // written next or on free room), then the tags from the end down.
        let mut tags = [0u8; PIECE_DATA];
        for (i, e) in entries.iter().enumerate() {
            let delta = if i == 0 { e.z } else { e.z - prev - 1 };
            let kl = byte_len(delta);
            let raw_len = byte_len(e.v);
            let (kind, vl, stored) = if i == 0 {
                (0, raw_len, e.v)
            } else {
                let d = zigzag(e.v.wrapping_sub(prev_v));
                if byte_len(d) < raw_len {
                    (1, byte_len(d), d)
                } else {
                    (0, raw_len, e.v)
                }
            };
            tags[i] = (kind * 81 + kl * 9 + vl) as u8;
            write_le(data, pos, kl, delta);
            pos += kl;
            write_le(data, pos, vl, stored);
            pos += vl;
            prev = e.z;
            prev_v = e.v;
        }
        for (i, &tag) in tags[..entries.len()].iter().enumerate() {
            data[PIECE_SIZE - 1 - i] = tag;
        }
        pos += entries.len();
    } else {
        let wk = (plan.format & 15) as usize;
        let wv = (plan.format >> 4) as usize;
        for (i, e) in entries.iter().enumerate() {
            let delta = if i == 0 { e.z } else { e.z - prev - 1 };
            write_le(data, pos, wk, delta);
            write_le(data, pos + wk, wv, e.v);
            pos += wk + wv;
            prev = e.z;
        }
    }
    debug_assert_eq!(pos, 2 + plan.len);
}
