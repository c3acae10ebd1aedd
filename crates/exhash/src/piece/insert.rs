//! Changing a piece in place: inserting, updating, overwriting one entry,
//! and upgrading a version-1 piece.

use super::*;

/// What an in-place insertion did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InPlace {
    /// The entry is in the piece.
    Inserted,
    /// The piece has no room for it in its current layout (re-planning the
    /// layout almost never helps, so callers move on to the next piece).
    Full,
    /// The piece needs the general decode and re-encode path.
    Unsupported,
}

/// Insert distance `r` (not present) with value `v` in place, whichever
/// layout the piece has ([`insert_fixed`], then [`insert_tagged`]).
#[inline]
pub fn insert_in_place(piece: &mut [u8], r: u64, v: u64) -> InPlace {
    match insert_fixed(piece, r, v) {
        InPlace::Unsupported => insert_tagged(piece, r, v),
        done => done,
    }
}

/// Insert distance `r` (not present) with value `v` into a fixed-width
/// piece in place, if the widths already fit the new entry and the piece
/// has room: one scan to the insertion point, one byte shift. The piece is
/// untouched unless the result is [`InPlace::Inserted`].
#[inline]
pub fn insert_fixed(piece: &mut [u8], r: u64, v: u64) -> InPlace {
    let used = used(piece);
    let format = piece[1];
    if used == 0 {
        // An empty piece: one entry of exactly its widths, as the encoder
        // lays it out (an entry of no bytes at all is left to the encoder).
        let (wk, wv) = (byte_len(r), byte_len(v));
        if wk + wv == 0 {
            return InPlace::Unsupported;
        }
        piece[1] = (wv << 4 | wk) as u8;
        put_le(piece, 2, wk, r);
        put_le(piece, 2 + wk, wv, v);
        piece[0] = (piece[0] & OVERFLOW) | (wk + wv) as u8;
        return InPlace::Inserted;
    }
    if format == TAGGED || used > PIECE_DATA {
        return InPlace::Unsupported;
    }
    let wk = (format & 15) as usize;
    let wv = (format >> 4) as usize;
    let width = wk + wv;
    if !fixed_format_fits(wk, wv, used) {
        return InPlace::Unsupported;
    }
    if used + width > PIECE_DATA {
        return InPlace::Full;
    }
    if byte_len(v) > wv {
        return InPlace::Unsupported;
    }
    // As for lookups, the widths of random pairs get their own copy with
    // the widths as constants.
    if let Ok(p) = <&mut [u8; PIECE_SIZE]>::try_from(&mut *piece) {
        match (wk, wv) {
            (6, 8) => return insert_wide::<6>(p, r, v, used),
            (5, 8) => return insert_wide::<5>(p, r, v, used),
            (7, 8) => return insert_wide::<7>(p, r, v, used),
            (4, 8) => return insert_wide::<4>(p, r, v, used),
            _ => {}
        }
    }
    insert_fixed_with(piece, r, v, used, wk, wv)
}

/// [`insert_fixed`] for `WK`-byte keys (4 to 7) and 8-byte values, once
/// the caller has checked the format and that one more slot fits.
#[inline(always)]
fn insert_wide<const WK: usize>(
    piece: &mut [u8; PIECE_SIZE],
    r: u64,
    v: u64,
    used: usize,
) -> InPlace {
    match upsert_wide::<WK>(piece, r, v, used, false, true) {
        Upsert::Inserted => InPlace::Inserted,
        _ => InPlace::Unsupported,
    }
}

/// What [`upsert`] found in a piece, and did to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Upsert {
    /// The piece holds the distance; this was its value (now replaced by
    /// the new one if the caller asked).
    Found(u64),
    /// The distance was absent and is now in the piece.
    Inserted,
    /// The distance is absent from the piece and was not inserted (not
    /// asked to, no room, or its key delta is wider than the piece's).
    Absent,
    /// Not a layout this handles: use [`lookup`] and [`insert_in_place`].
    Unsupported,
}

/// Look distance `r` up in a piece and, in the same pass over it, replace
/// its value with `v` if present, or insert it if absent and `insert` is
/// set: what a put does to its home piece, with one decode of the piece
/// instead of one to search and another to insert. Handles the fixed-width
/// layouts of random pairs (key widths 4 to 7, 8-byte values, distances
/// below 2^63); [`Upsert::Unsupported`] for every other piece, untouched.
#[inline(always)]
pub fn upsert(piece: &mut [u8], r: u64, v: u64, insert: bool) -> Upsert {
    if let Ok(p) = <&mut [u8; PIECE_SIZE]>::try_from(piece)
        && r < 1 << 63
    {
        let used = used(p);
        match p[1] {
            0x86 => return upsert_wide::<6>(p, r, v, used, true, insert),
            0x87 => return upsert_wide::<7>(p, r, v, used, true, insert),
            0x85 => return upsert_wide::<5>(p, r, v, used, true, insert),
            0x84 => return upsert_wide::<4>(p, r, v, used, true, insert),
            _ => {}
        }
    }
    Upsert::Unsupported
}

/// [`upsert`] in a fixed-width piece of `WK`-byte keys (4 to 7) and 8-byte
/// values (the format byte says so, which implies nothing about `used`:
/// a piece that is not a whole number of slots is refused untouched).
/// Nothing before the final decision branches on the piece's contents, so
/// a mispredicted branch cannot throw away the work that follows while
/// the piece is still on its way from memory: every slot is decoded to
/// count the keys below `r` (the insertion point, and the match's slot if
/// there is one), and an insertion moves the slots from there on up by one
/// fixed-size copy through a buffer.
#[inline(always)]
fn upsert_wide<const WK: usize>(
    piece: &mut [u8; PIECE_SIZE],
    r: u64,
    v: u64,
    used: usize,
    replace: bool,
    insert: bool,
) -> Upsert {
    const { assert!(WK >= 4 && WK <= 7) };
    let width = WK + 8;
    if !fixed_format_fits(WK, 8, used) {
        return Upsert::Unsupported;
    }
    let slots = used / width;
    // `lefts[i]` is `r` minus the stored fields of the slots before `i`;
    // slot `i`'s key is the sum of the fields up to it plus `i`, so it is
    // `r - lefts[i + 1] + i`.
    let mut lefts = [0u64; PIECE_DATA / 12 + 2];
    lefts[0] = r;
    // Bit `i` of `less`: slot `i`'s key is below `r`, which is
    // `lefts[i + 1] - i > 0` (keys and `r` are below 2^63, so the
    // difference's sign is exact). Keys ascend, so the used slots' bits
    // are a run from bit 0, whose length is the insertion point; the
    // bits of unused slots (whatever their bytes) are masked off once.
    let mut less = 0u32;
    let mut i = 0;
    while i < PIECE_DATA / (WK + 8) {
        let at = 2 + i * width;
        let word = u64::from_le_bytes(piece[at..at + 8].try_into().expect("8 bytes"));
        lefts[i + 1] = lefts[i].wrapping_sub(word & MASKS[WK]);
        less |= (((lefts[i + 1].wrapping_sub(i as u64)) as i64 > 0) as u32) << i;
        i += 1;
    }
    let below = (less & ((1 << slots) - 1)).trailing_ones() as usize;
    // The new entry stores its key minus the previous key minus one (or
    // the key itself, first); its successor, if any, its gap to the new
    // key, which is -1 if the successor is `r` itself.
    let delta = lefts[below].wrapping_sub(below as u64);
    let gap = (below as u64)
        .wrapping_sub(lefts[below + 1])
        .wrapping_sub(1);
    let pos = 2 + below * width;
    if below < slots && gap == u64::MAX {
        let at = pos + WK;
        let old = u64::from_le_bytes(piece[at..at + 8].try_into().expect("8 bytes"));
        if replace {
            piece[at..at + 8].copy_from_slice(&v.to_le_bytes());
        }
        return Upsert::Found(old);
    }
    if !insert || used + width > PIECE_DATA || delta > MASKS[WK] {
        return Upsert::Absent;
    }
    // The tail from the insertion point is at most `PIECE_DATA - width`
    // bytes (checked above); `TAIL` covers it for any width.
    const TAIL: usize = PIECE_DATA - 12;
    let mut buf = [0u8; 2 * PIECE_SIZE];
    buf[..PIECE_SIZE].copy_from_slice(piece);
    let tail: [u8; TAIL] = buf[pos..pos + TAIL].try_into().expect("TAIL bytes");
    buf[pos + width..pos + width + TAIL].copy_from_slice(&tail);
    buf[pos..pos + 8].copy_from_slice(&delta.to_le_bytes());
    buf[pos + WK..pos + WK + 8].copy_from_slice(&v.to_le_bytes());
    // The successor's key field (past the used bytes if there is none).
    let at = pos + width;
    let next = u64::from_le_bytes(buf[at..at + 8].try_into().expect("8 bytes"));
    let next = (next & !MASKS[WK]) | (gap & MASKS[WK]);
    buf[at..at + 8].copy_from_slice(&next.to_le_bytes());
    piece.copy_from_slice(&buf[..PIECE_SIZE]);
    piece[0] = (piece[0] & OVERFLOW) | (used + width) as u8;
    Upsert::Inserted
}

/// The body of [`insert_fixed`] once the piece's widths are checked.
#[inline(always)]
fn insert_fixed_with(
    piece: &mut [u8],
    r: u64,
    v: u64,
    used: usize,
    wk: usize,
    wv: usize,
) -> InPlace {
    let width = wk + wv;
    let end = 2 + used;
    let mut pos = 2;
    let mut prev: Option<u64> = None;
    let mut next: Option<u64> = None;
    while pos < end {
        let delta = read_le(piece, pos, wk);
        let cur = match prev {
            None => delta,
            Some(p) => p.wrapping_add(1).wrapping_add(delta),
        };
        if cur >= r {
            if cur == r {
                return InPlace::Unsupported;
            }
            next = Some(cur);
            break;
        }
        prev = Some(cur);
        pos += width;
    }
    let delta = match prev {
        None => r,
        Some(p) => r - p - 1,
    };
    if byte_len(delta) > wk {
        return InPlace::Unsupported;
    }
    let gap = next.map(|n| n - r - 1);
    if width >= 8 && pos + width + 8 <= PIECE_SIZE {
        // Whole-word stores in ascending order, each one's spill past its
        // field overwritten by the next (or lying past the used bytes), and
        // nothing read back after a store that overlaps it: a load
        // straddling an earlier, narrower store waits for it to retire.
        // The successor's first word is read before the shift and stored
        // with its new gap.
        let successor = read_le(piece, pos, 8);
        piece.copy_within(pos..end, pos + width);
        write_le(piece, pos, wk, delta);
        write_le(piece, pos + wk, wv, v);
        if let Some(gap) = gap {
            let mask = MASKS[wk];
            let word = (successor & !mask) | (gap & mask);
            write_le(piece, pos + width, 8, word);
        }
    } else {
        piece.copy_within(pos..end, pos + width);
        put_le(piece, pos, wk, delta);
        put_le(piece, pos + wk, wv, v);
        if let Some(gap) = gap {
            put_le(piece, pos + width, wk, gap);
        }
    }
    piece[0] = (piece[0] & OVERFLOW) | (used + width) as u8;
    InPlace::Inserted
}

/// Overwrite the value of distance `r` in a fixed-width piece in place,
/// if the piece holds `r` and the new value fits the piece's value width.
/// Returns whether it did; the piece is untouched otherwise.
pub fn overwrite_fixed(piece: &mut [u8], r: u64, v: u64) -> bool {
    let used = used(piece);
    let format = piece[1];
    if format == TAGGED || used == 0 {
        return false;
    }
    let wk = (format & 15) as usize;
    let wv = (format >> 4) as usize;
    if !fixed_format_fits(wk, wv, used) || byte_len(v) > wv {
        return false;
    }
    let width = wk + wv;
    let mut cur = u64::MAX;
    for at in (2..2 + used).step_by(width) {
        cur = cur.wrapping_add(1).wrapping_add(read_le(piece, at, wk));
        if cur >= r {
            if cur != r {
                return false;
            }
            put_le(piece, at + wk, wv, v);
            return true;
        }
    }
    false
}

/// Size and bytes of one tagged entry.
#[derive(Clone, Copy, Debug)]
struct Tagged {
    tag: u8,
    key: u64,
    klen: usize,
    value: u64,
    vlen: usize,
}

impl Tagged {
    /// Entry with key delta `delta` and value `v`, after a predecessor of
    /// value `prev_v` (None for the first entry).
    fn new(delta: u64, v: u64, prev_v: Option<u64>) -> Tagged {
        let klen = byte_len(delta);
        let raw = byte_len(v);
        let (kind, value, vlen) = match prev_v {
            Some(p) => {
                let d = zigzag(v.wrapping_sub(p));
                if byte_len(d) < raw {
                    (1, d, byte_len(d))
                } else {
                    (0, v, raw)
                }
            }
            None => (0, v, raw),
        };
        Tagged {
            tag: (kind * 81 + klen * 9 + vlen) as u8,
            key: delta,
            klen,
            value,
            vlen,
        }
    }

    /// Bytes of data (the tag is stored apart).
    fn data_len(&self) -> usize {
        self.klen + self.vlen
    }

    /// Write the entry's data at `at`, leaving the bytes after it alone.
    fn write_data(&self, piece: &mut [u8], at: usize) {
        put_le(piece, at, self.klen, self.key);
        put_le(piece, at + self.klen, self.vlen, self.value);
    }
}

/// Insert distance `r` (not present) with value `v` into a tagged piece in
/// place: one scan to the insertion point, then the data after it and the
/// tags after it each move over once, and the new entry and its re-coded
/// successor are written. The piece is untouched unless the result is
/// [`InPlace::Inserted`].
#[inline]
pub fn insert_tagged(piece: &mut [u8], r: u64, v: u64) -> InPlace {
    let used = used(piece);
    if piece[1] != TAGGED || used == 0 || used > PIECE_DATA || piece.len() != PIECE_SIZE {
        return InPlace::Unsupported;
    }
    let mut data = 2;
    let mut i = 0;
    let mut prev: Option<(u64, u64)> = None;
    // The successor: (old data length, key, value).
    let mut next: Option<(usize, u64, u64)> = None;
    while data - 2 + i < used {
        let tag = piece[PIECE_SIZE - 1 - i];
        let Some((klen, vlen)) = tag_lens(tag) else {
            return InPlace::Unsupported;
        };
        if data - 2 + klen + vlen + i + 1 > used {
            return InPlace::Unsupported;
        }
        let delta = read_le(piece, data, klen);
        let cur = match prev {
            None => delta,
            Some((p, _)) => p.wrapping_add(1).wrapping_add(delta),
        };
        let raw = read_le(piece, data + klen, vlen);
        let cv = match (tag < 81, prev) {
            (true, _) | (false, None) => raw,
            (false, Some((_, pv))) => pv.wrapping_add(unzigzag(raw)),
        };
        if cur >= r {
            if cur == r {
                return InPlace::Unsupported;
            }
            next = Some((klen + vlen, cur, cv));
            break;
        }
        prev = Some((cur, cv));
        data += klen + vlen;
        i += 1;
    }
    // Count the entries (tags) after the insertion point.
    let mut n = i;
    let mut end = data;
    while end - 2 + n < used {
        let Some((klen, vlen)) = tag_lens(piece[PIECE_SIZE - 1 - n]) else {
            return InPlace::Unsupported;
        };
        end += klen + vlen;
        n += 1;
    }
    if end - 2 + n != used {
        return InPlace::Unsupported;
    }
    let new = match prev {
        None => Tagged::new(r, v, None),
        Some((p, pv)) => Tagged::new(r - p - 1, v, Some(pv)),
    };
    let (succ, old_len) = match next {
        Some((old_len, key, value)) => (Some(Tagged::new(key - r - 1, value, Some(v))), old_len),
        None => (None, 0),
    };
    let new_len = new.data_len() + succ.map_or(0, |s| s.data_len());
    // One more tag; the data from the insertion point on changes length.
    let grown = used + 1 + new_len;
    if grown - old_len > PIECE_DATA {
        return InPlace::Full;
    }
    // The data after the successor, and the tags from the successor's on,
    // move; neither lands on the other's final place because the piece fits.
    piece.copy_within(data + old_len..end, data + new_len);
    piece.copy_within(PIECE_SIZE - n..PIECE_SIZE - i, PIECE_SIZE - n - 1);
    new.write_data(piece, data);
    piece[PIECE_SIZE - 1 - i] = new.tag;
    if let Some(s) = succ {
        s.write_data(piece, data + new.data_len());
        piece[PIECE_SIZE - 2 - i] = s.tag;
    }
    piece[0] = (piece[0] & OVERFLOW) | (grown - old_len) as u8;
    InPlace::Inserted
}

/// Re-lay a tagged piece written by format version 1, where each tag sat
/// right before its entry's data, in the current layout (fixed-width pieces
/// are the same in both). `scratch` is working space.
pub fn upgrade_v1(piece: &mut [u8], scratch: &mut Vec<Entry>) -> Result<(), DecodeError> {
    let used = used(piece);
    if piece[1] != TAGGED || used == 0 {
        return Ok(());
    }
    if used > PIECE_DATA {
        return Err("piece uses more bytes than it has");
    }
    scratch.clear();
    let end = 2 + used;
    let mut pos = 2;
    let (mut z, mut v, mut first) = (0u64, 0u64, true);
    while pos < end {
        let tag = piece[pos];
        let (klen, vlen) = tag_lens(tag).ok_or("bad entry tag")?;
        if pos + 1 + klen + vlen > end {
            return Err("entry runs past the end of its piece");
        }
        z = step(z, read_le(piece, pos + 1, klen), first)?;
        let raw = read_le(piece, pos + 1 + klen, vlen);
        v = match (tag < 81, first) {
            (true, _) => raw,
            (false, true) => return Err("first entry of a piece has a delta value"),
            (false, false) => v.wrapping_add(unzigzag(raw)),
        };
        first = false;
        scratch.push(Entry { z, v });
        pos += 1 + klen + vlen;
    }
    if encode(piece, scratch) {
        Ok(())
    } else {
        Err("piece does not fit")
    }
}
