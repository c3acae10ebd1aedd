//! Reading a piece: walking its entries, finding one key, decoding it whole.

use super::*;

/// Walk the entries of a piece in stored (ascending distance) order,
/// calling `f` until it returns false. Checks every bound, so a hostile piece
/// yields an error, never a panic.
#[inline]
pub fn walk(piece: &[u8], mut f: impl FnMut(Entry) -> bool) -> Result<(), DecodeError> {
    let used = used(piece);
    if used > PIECE_DATA {
        return Err("piece uses more bytes than it has");
    }
    let format = piece[1];
    // Positions below are offsets into `piece`; entry data is bytes 2..end.
    let end = 2 + used;
    let mut pos = 2;
    let mut z = 0u64;
    let mut first = true;
    let mut v = 0u64;
    if format == TAGGED || used == 0 {
        // `data` is where the next entry's data starts, `i` its index (and
        // so the number of tags before it).
        let mut data = 2;
        let mut i = 0;
        while data - 2 + i < used {
            let tag = piece[PIECE_SIZE - 1 - i];
            let Some((klen, vlen)) = tag_lens(tag) else {
                return Err("bad entry tag");
            };
            if data - 2 + klen + vlen + i + 1 > used {
                return Err("entry runs past the end of its piece");
            }
            let delta = read_le(piece, data, klen);
            z = step(z, delta, first)?;
            let raw = read_le(piece, data + klen, vlen);
            v = if tag < 81 {
                raw
            } else if first {
                return Err("first entry of a piece has a delta value");
            } else {
                v.wrapping_add(unzigzag(raw))
            };
            first = false;
            data += klen + vlen;
            i += 1;
            if !f(Entry { z, v }) {
                return Ok(());
            }
        }
    } else {
        let wk = (format & 15) as usize;
        let wv = (format >> 4) as usize;
        let width = wk + wv;
        if !fixed_format_fits(wk, wv, used) {
            return Err("bad fixed-width piece format");
        }
        if let (true, Ok(piece)) = (wk <= 7, <&[u8; PIECE_SIZE]>::try_from(piece)) {
            // At most 126 keys of at most 2^56 each: no sum can overflow,
            // and a whole word at every slot lies inside the piece
            // (`read_le` falls back to bytes near the end).
            let mut next = 0u64;
            while pos < end {
                let r = next + read_le(piece, pos, wk);
                let v = read_le(piece, pos + wk, wv);
                next = r + 1;
                pos += width;
                if !f(Entry { z: r, v }) {
                    return Ok(());
                }
            }
            return Ok(());
        }
        while pos < end {
            let delta = read_le(piece, pos, wk);
            z = step(z, delta, first)?;
            first = false;
            v = read_le(piece, pos + wk, wv);
            pos += width;
            if !f(Entry { z, v }) {
                return Ok(());
            }
        }
    }
    Ok(())
}

#[inline]
pub(super) fn step(r: u64, delta: u64, first: bool) -> Result<u64, DecodeError> {
    let r = if first { Some(0) } else { r.checked_add(1) };
    r.and_then(|r| r.checked_add(delta))
        .ok_or("key delta overflows")
}

/// The value stored for distance `r`, if this piece holds it. The hot
/// path of every lookup: no allocation; a malformed piece reads as
/// "absent", never a panic. Tagged pieces are scanned up to the first
/// entry at or past `r`; fixed-width pieces are searched without
/// data-dependent branches (below).
// Always inlined: whether LLVM inlines it otherwise changes with unrelated
// code, and a call on every lookup costs a third of a lookup.
#[inline(always)]
pub fn lookup(piece: &[u8], r: u64) -> Option<u64> {
    // The widths random pairs take first, straight from the format byte
    // (it implies valid widths, so nothing else needs checking up front).
    if let Ok(p) = <&[u8; PIECE_SIZE]>::try_from(piece)
        && r < 1 << 63
    {
        match p[1] {
            0x86 => return search_fixed::<6, 8>(p, r),
            0x87 => return search_fixed::<7, 8>(p, r),
            0x85 => return search_fixed::<5, 8>(p, r),
            0x84 => return search_fixed::<4, 8>(p, r),
            _ => {}
        }
    }
    let used = used(piece).min(PIECE_DATA);
    if used == 0 {
        return None;
    }
    let format = piece[1];
    if format != TAGGED {
        return lookup_fixed(piece, format, used, r);
    }
    if piece.len() != PIECE_SIZE {
        return None;
    }
    // As in `walk`: `data` depends only on the tags, which are loaded
    // independently of it, so the loop carries just additions.
    let mut data = 2;
    let mut i = 0;
    let mut cur = u64::MAX;
    let mut v = 0u64;
    while data - 2 + i < used {
        let tag = piece[PIECE_SIZE - 1 - i];
        let (klen, vlen) = tag_lens(tag)?;
        if data - 2 + klen + vlen + i + 1 > used {
            return None;
        }
        // The first entry stores its distance, the others the gap minus one.
        cur = cur.wrapping_add(1).wrapping_add(read_le(piece, data, klen));
        let raw = read_le(piece, data + klen, vlen);
        v = if tag < 81 {
            raw
        } else {
            v.wrapping_add(unzigzag(raw))
        };
        if cur >= r {
            return (cur == r).then_some(v);
        }
        data += klen + vlen;
        i += 1;
    }
    None
}

/// Slots a fixed-width piece can hold, by entry width in bytes (0..=16).
const FIXED_CAPACITY: [u8; 17] = {
    let mut t = [0u8; 17];
    let mut w = 1;
    while w < 17 {
        t[w] = (PIECE_DATA / w) as u8;
        w += 1;
    }
    t
};

/// Search a fixed-width piece without data-dependent branches: every slot
/// the width allows is decoded and compared, so where the search ends is
/// never mispredicted. Measured against the early-exit scan (see
/// `BENCHMARKS.md`): faster once the piece is in cache (inserts, batch
/// lookups, small tables), a little slower for a lone lookup that misses
/// the cache.
#[inline(always)]
fn lookup_fixed(piece: &[u8], format: u8, used: usize, r: u64) -> Option<u64> {
    let wk = (format & 15) as usize;
    let wv = (format >> 4) as usize;
    if !fixed_format_fits(wk, wv, used) {
        return None;
    }
    let width = wk + wv;
    let Ok(piece) = <&[u8; PIECE_SIZE]>::try_from(piece) else {
        return lookup_scan(piece, wk, wv, used, r);
    };
    if width < 8 {
        return lookup_scan(piece, wk, wv, used, r);
    }
    // With slots of at least eight bytes, a slot's key is the low bytes of
    // the word at its start, and its value the high bytes of the word that
    // ends with it; both words lie inside the piece.
    let key_mask = MASKS[wk];
    // `used` is a whole number of slots, so a slot is in use if it starts
    // before the end of the data.
    let end = 2 + used;
    let mut cur = u64::MAX;
    let mut found = 0usize;
    let mut at = 2;
    for _ in 0..FIXED_CAPACITY[width] {
        let word = u64::from_le_bytes(piece[at..at + 8].try_into().expect("8 bytes"));
        // The first slot stores its distance, the others the gap minus one.
        cur = cur.wrapping_add(1).wrapping_add(word & key_mask);
        // Keys ascend, so at most one used slot matches.
        found = if cur == r && at < end {
            at + width
        } else {
            found
        };
        at += width;
    }
    if found == 0 {
        return None;
    }
    let word = u64::from_le_bytes(piece[found - 8..found].try_into().expect("8 bytes"));
    Some(word.checked_shr(64 - 8 * wv as u32).unwrap_or(0))
}

/// [`lookup`] in a fixed-width piece whose key width `WK` (at most 7)
/// and value width `WV` (`WK + WV` at least 8) are known at compile time,
/// for a distance below 2^63: offsets and masks are constants and the loop
/// unrolls into a few instructions a slot, with no branch on the data.
///
/// Every slot the width allows is decoded, used or not, and the last one
/// whose running key equals `r` wins; whether it lies inside the used
/// bytes is checked once at the end. That is exact for a well-formed
/// piece: keys ascend, so a used slot that matches is followed only by
/// larger running keys (`r` is below 2^63 and each later slot adds less
/// than 2^56, so nothing wraps). A malformed piece may answer wrongly but
/// never reads outside itself.
#[inline(always)]
fn search_fixed<const WK: usize, const WV: usize>(piece: &[u8; PIECE_SIZE], r: u64) -> Option<u64> {
    const { assert!(WK <= 7 && WV <= 8 && WK + WV >= 8) };
    let width = WK + WV;
    // Slot `i`'s key is the sum of the stored fields up to it plus `i`
    // (the first slot stores its distance, the others the gap minus one),
    // so it equals `r` when `r` minus those fields is `i`.
    let mut left = r;
    let mut found = 0usize;
    let mut i = 0;
    while i < PIECE_DATA / (WK + WV) {
        let at = 2 + i * width;
        let word = u64::from_le_bytes(piece[at..at + 8].try_into().expect("8 bytes"));
        left = left.wrapping_sub(word & MASKS[WK]);
        found = if left == i as u64 { at + width } else { found };
        i += 1;
    }
    if found == 0 || found > 2 + used(piece) {
        return None;
    }
    let word = u64::from_le_bytes(piece[found - 8..found].try_into().expect("8 bytes"));
    Some(word >> (64 - 8 * WV))
}

/// The early-exit scan of a fixed-width piece with narrow slots.
#[inline(never)]
fn lookup_scan(piece: &[u8], wk: usize, wv: usize, used: usize, r: u64) -> Option<u64> {
    let width = wk + wv;
    let end = 2 + used;
    let mut pos = 2;
    let mut cur = read_le(piece, pos, wk);
    loop {
        if cur >= r {
            return (cur == r).then(|| read_le(piece, pos + wk, wv));
        }
        pos += width;
        if pos >= end {
            return None;
        }
        cur = cur.wrapping_add(1).wrapping_add(read_le(piece, pos, wk));
    }
}

/// Decode every entry of a piece into `out` (cleared first).
pub fn decode(piece: &[u8], out: &mut Vec<Entry>) -> Result<(), DecodeError> {
    out.clear();
    walk(piece, |e| {
        out.push(e);
        true
    })
}
