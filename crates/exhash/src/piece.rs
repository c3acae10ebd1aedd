//! The piece codec: one 128-byte piece of a page holds a few entries,
//! compactly encoded, sorted by ascending distance from the piece's end.
//!
//! Layout (see `docs/format-exhash.md`):
//!
//! ```text
//! byte 0      bit 7: overflowed (an entry whose home is this piece or an
//!             earlier one lives in a later piece); bits 0-6: bytes used
//! byte 1      0xFF = tagged entries, else fixed widths: low nibble key
//!             delta width, high nibble value width (bytes, 0..=8 each)
//! bytes 2..   entries: fixed-width slots, or the tagged entries' data
//! ..byte 127  tagged pieces: one tag per entry, from byte 127 down
//! ```
//!
//! Keys are stored as ascending *distances* `r`: the table maps a page-local
//! position `z` to `r = (end - z) mod 2^w`, where `end` is the last position
//! whose home is this piece and `w` the width of page-local positions, so
//! entries from this piece's home range come first and entries that
//! overflowed from earlier pieces (wrapping around the page) after them. The
//! first entry stores `r`, the next ones `r - previous r - 1`. A tagged
//! entry's tag is `kind * 81 + key_len * 9 + value_len`; kind 0 stores the
//! value raw, kind 1 the zig-zag difference to the previous entry's value.
//! Tags sit apart from the data so that where an entry's data starts depends
//! only on the tags before it, never on loads of the data itself: a scan's
//! critical path is one addition an entry. Either way an entry is never
//! longer than its raw sixteen bytes plus its tag, and the encoder picks
//! fixed widths whenever they are no larger, so pieces of random pairs carry
//! no tag at all.

/// Bytes in one piece.
pub const PIECE_SIZE: usize = 128;
/// Bytes available for entries in one piece.
pub const PIECE_DATA: usize = PIECE_SIZE - 2;
/// The most bytes one entry can take: a tag and eight bytes each of key
/// and value.
pub const MAX_ENTRY_LEN: usize = 17;

const TAGGED: u8 = 0xFF;
const OVERFLOW: u8 = 0x80;
const USED_MASK: u8 = 0x7F;
const TAG_LIMIT: u8 = 162;

/// Key and value lengths of every tag (`key | value << 4`), so decoding a
/// tag is one table load instead of divisions; 0xFF marks invalid tags.
const TAG_LENS: [u8; 256] = {
    let mut t = [0xFFu8; 256];
    let mut tag = 0;
    while tag < TAG_LIMIT as usize {
        t[tag] = ((tag % 81 / 9) | ((tag % 9) << 4)) as u8;
        tag += 1;
    }
    t
};

/// (key length, value length) of a tag, or None if it is invalid.
#[inline(always)]
fn tag_lens(tag: u8) -> Option<(usize, usize)> {
    let lens = TAG_LENS[tag as usize];
    (lens != 0xFF).then_some(((lens & 15) as usize, (lens >> 4) as usize))
}

/// One entry: a key (a distance inside a piece, or a page-local position
/// in the table's page-wide lists) and its value.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The key bits not implied by the page (and, in a piece, its home).
    pub z: u64,
    /// The value.
    pub v: u64,
}

/// Why a piece failed to decode.
pub type DecodeError = &'static str;

/// Data bytes used by a piece.
#[inline]
pub fn used(piece: &[u8]) -> usize {
    (piece[0] & USED_MASK) as usize
}

/// Whether some entry with its home at or before this piece lives after it.
#[inline]
pub fn overflowed(piece: &[u8]) -> bool {
    piece[0] & OVERFLOW != 0
}

/// Set or clear the overflow flag.
#[inline]
pub fn set_overflowed(piece: &mut [u8], on: bool) {
    if on {
        piece[0] |= OVERFLOW;
    } else {
        piece[0] &= !OVERFLOW;
    }
}

/// A cheap lower bound on what adding one entry costs a piece, from its
/// header alone: a fixed-width piece grows by at least one entry width, a
/// tagged piece by at least a tag and one byte. (An insertion can shorten
/// its successor's delta, so this is a heuristic for skipping full pieces
/// without decoding them, never a correctness condition.)
#[inline]
pub fn min_growth(piece: &[u8]) -> usize {
    match piece[1] {
        TAGGED => 2,
        f => ((f & 15) + (f >> 4)).max(2) as usize,
    }
}

/// Bytes needed to store `x` little-endian without leading zero bytes.
#[inline]
fn byte_len(x: u64) -> usize {
    (71 - x.leading_zeros() as usize) / 8
}

#[inline]
fn zigzag(d: u64) -> u64 {
    let d = d as i64;
    ((d << 1) ^ (d >> 63)) as u64
}

#[inline]
fn unzigzag(z: u64) -> u64 {
    ((z >> 1) as i64 ^ -((z & 1) as i64)) as u64
}

const MASKS: [u64; 9] = [
    0,
    0xff,
    0xffff,
    0xff_ffff,
    0xffff_ffff,
    0xff_ffff_ffff,
    0xffff_ffff_ffff,
    0xff_ffff_ffff_ffff,
    u64::MAX,
];

/// Read `len` (0..=8) little-endian bytes at `at` of a piece. Where a whole
/// word fits inside the piece, one unaligned load and a mask.
#[inline(always)]
fn read_le(piece: &[u8], at: usize, len: usize) -> u64 {
    if let Some(word) = piece.get(at..at + 8) {
        u64::from_le_bytes(word.try_into().expect("8 bytes")) & MASKS[len]
    } else {
        let mut buf = [0u8; 8];
        buf[..len].copy_from_slice(&piece[at..at + len]);
        u64::from_le_bytes(buf)
    }
}

/// Write the low `len` bytes of `x` at `at`. Where a whole word fits, one
/// store (the bytes past `len` are overwritten by the next field or lie
/// past the used data).
#[inline(always)]
fn write_le(piece: &mut [u8], at: usize, len: usize, x: u64) {
    if let Some(word) = piece.get_mut(at..at + 8) {
        word.copy_from_slice(&x.to_le_bytes());
    } else {
        piece[at..at + len].copy_from_slice(&x.to_le_bytes()[..len]);
    }
}

/// For each entry width 0..=16, bit `n` is set when `n` bytes hold a
/// whole number of entries (so the check needs no division).
const WHOLE_ENTRIES: [u128; 17] = {
    let mut t = [0u128; 17];
    let mut w = 1;
    while w < 17 {
        let mut n = 0;
        while n <= PIECE_DATA {
            t[w] |= 1 << n;
            n += w;
        }
        w += 1;
    }
    t
};

/// Whether fixed widths `wk` and `wv` are valid and `used` data bytes are
/// a whole number of entries of that width.
#[inline(always)]
fn fixed_format_fits(wk: usize, wv: usize, used: usize) -> bool {
    wk <= 8 && wv <= 8 && used <= PIECE_DATA && (WHOLE_ENTRIES[wk + wv] >> used) & 1 == 1
}

/// Write the low `len` bytes of `x` at `at`, leaving the bytes after them
/// alone: a read-modify-write of one word where a whole word fits.
#[inline(always)]
fn put_le(piece: &mut [u8], at: usize, len: usize, x: u64) {
    if let Some(word) = piece.get_mut(at..at + 8) {
        let old = u64::from_le_bytes((&*word).try_into().expect("8 bytes"));
        let mask = MASKS[len];
        word.copy_from_slice(&((old & !mask) | (x & mask)).to_le_bytes());
    } else {
        for (i, b) in piece[at..at + len].iter_mut().enumerate() {
            *b = (x >> (8 * i)) as u8;
        }
    }
}

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
fn step(r: u64, delta: u64, first: bool) -> Result<u64, DecodeError> {
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

/// Decode every entry of a piece into `out` (cleared first).
pub fn decode(piece: &[u8], out: &mut Vec<Entry>) -> Result<(), DecodeError> {
    out.clear();
    walk(piece, |e| {
        out.push(e);
        true
    })
}

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

/// Empty a piece, clearing its overflow flag too.
pub fn clear(piece: &mut [u8]) {
    piece[0] = 0;
    piece[1] = TAGGED;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 64-bit LCG: deterministic noise for the tests.
    fn rng(mut x: u64) -> impl FnMut() -> u64 {
        move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x
        }
    }

    /// Calls `f(next, round, key_bits, piece, entries)` for 20,000 rounds
    /// of pieces of noise holding up to eight random entries (keys of
    /// `key_bits` bits, 8-byte values), for those that encode with fixed
    /// widths (formats 0x84 to 0x87): the bytes past the used slots stay
    /// noise. `next` is the rounds' noise source, for more of it.
    fn each_noisy_wide_piece(
        seed: u64,
        mut f: impl FnMut(&mut dyn FnMut() -> u64, u64, u64, [u8; PIECE_SIZE], Vec<Entry>),
    ) {
        let mut next = rng(seed);
        for round in 0..20_000u64 {
            let key_bits = 30 + round % 27;
            let n = 1 + next() % 8;
            let entries = random_entries(&mut next, n, key_bits, |next| next() | 1 << 63);
            let mut piece = [0u8; PIECE_SIZE];
            piece.iter_mut().for_each(|b| *b = next() as u8);
            clear(&mut piece);
            if encode(&mut piece, &entries) && (0x84..=0x87).contains(&piece[1]) {
                f(&mut next, round, key_bits, piece, entries);
            }
        }
    }

    /// `n` entries with keys of `key_bits` bits and values from `value`,
    /// sorted by key, duplicates dropped.
    fn random_entries(
        next: &mut impl FnMut() -> u64,
        n: u64,
        key_bits: u64,
        mut value: impl FnMut(&mut dyn FnMut() -> u64) -> u64,
    ) -> Vec<Entry> {
        let mut entries: Vec<Entry> = (0..n)
            .map(|_| Entry {
                z: next() >> (64 - key_bits),
                v: value(next),
            })
            .collect();
        entries.sort_by_key(|e| e.z);
        entries.dedup_by_key(|e| e.z);
        entries
    }

    fn roundtrip(entries: &[Entry]) -> Option<usize> {
        let mut piece = [0u8; PIECE_SIZE];
        clear(&mut piece);
        if !encode(&mut piece, entries) {
            return None;
        }
        let mut out = Vec::new();
        decode(&piece, &mut out).unwrap();
        assert_eq!(out, entries);
        for e in entries {
            assert_eq!(lookup(&piece, e.z), Some(e.v));
        }
        assert_eq!(lookup(&piece, entries[0].z.wrapping_sub(1)), None);
        Some(used(&piece))
    }

    #[test]
    fn random_pairs_take_fixed_widths() {
        let mut x = 99u64;
        let mut entries: Vec<Entry> = (0..9)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                Entry {
                    z: x >> 18,
                    v: x | 1 << 63,
                }
            })
            .collect();
        entries.sort_by_key(|e| e.z);
        assert_eq!(roundtrip(&entries), Some(126));
    }

    #[test]
    fn runs_take_two_bytes_each() {
        let entries: Vec<Entry> = (0..40u64)
            .map(|i| Entry {
                z: 1000 + i,
                v: 5_000_000 + i,
            })
            .collect();
        let len = roundtrip(&entries).unwrap();
        assert!(len <= 2 * 40 + 10, "{len}");
    }

    #[test]
    fn sizer_agrees_with_the_encoder() {
        let mut x = 5u64;
        for round in 0..2000 {
            let mut sizer = Sizer::default();
            let mut added: Vec<Entry> = Vec::new();
            let mut r = 1u64 << (20 + round % 40);
            loop {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let gap = (x >> 33) >> (x % 48);
                let Some(next) = r.checked_sub(gap + 1) else {
                    break;
                };
                r = next;
                let v = match x % 4 {
                    0 => x,
                    1 => added.first().map_or(0, |f| f.v.wrapping_add(x % 3)),
                    2 => x >> (x % 64),
                    _ => 0,
                };
                let e = Entry { z: r, v };
                let mut all = vec![e];
                all.extend_from_slice(&added);
                let fits = encoded_len(&all) <= PIECE_DATA;
                assert_eq!(sizer.try_add(e), fits);
                if !fits {
                    break;
                }
                added = all;
            }
        }
    }

    #[test]
    fn insert_fixed_matches_the_encoder() {
        let mut x = 11u64;
        for _ in 0..3000 {
            let mut entries: Vec<Entry> = Vec::new();
            let mut piece = [0u8; PIECE_SIZE];
            clear(&mut piece);
            for _ in 0..12 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let e = Entry {
                    z: (x >> 20) % (1 << 44),
                    v: x | (1 << 63),
                };
                if entries.iter().any(|o| o.z == e.z) {
                    continue;
                }
                let mut want = entries.clone();
                want.push(e);
                want.sort_by_key(|e| e.z);
                if insert_fixed(&mut piece, e.z, e.v) == InPlace::Inserted {
                    let mut got = Vec::new();
                    decode(&piece, &mut got).unwrap();
                    assert_eq!(got, want);
                    entries = want;
                } else if encode(&mut piece, &want) {
                    entries = want;
                }
            }
        }
    }

    #[test]
    fn overwrite_fixed_changes_one_value() {
        let mut x = 29u64;
        let mut done = 0;
        for round in 0..3000u64 {
            let mut entries: Vec<Entry> = (0..1 + round % 9)
                .map(|i| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    Entry {
                        z: (x >> (20 + round % 30)) + i,
                        v: x >> (round % 64),
                    }
                })
                .collect();
            entries.sort_by_key(|e| e.z);
            entries.dedup_by_key(|e| e.z);
            let mut piece = [0u8; PIECE_SIZE];
            clear(&mut piece);
            if !encode(&mut piece, &entries) {
                continue;
            }
            let before = piece;
            let i = (x % entries.len() as u64) as usize;
            let v = x.rotate_left(17) >> (x % 64);
            // Absent distances are never written.
            if !entries.iter().any(|e| e.z == entries[i].z + 1) {
                assert!(!overwrite_fixed(&mut piece, entries[i].z + 1, v));
                assert_eq!(piece, before);
            }
            if overwrite_fixed(&mut piece, entries[i].z, v) {
                entries[i].v = v;
                done += 1;
            } else {
                assert_eq!(piece, before);
            }
            let mut got = Vec::new();
            decode(&piece, &mut got).unwrap();
            assert_eq!(got, entries);
        }
        assert!(done > 500, "{done}");
    }

    #[test]
    fn insert_wide_ignores_noise_past_the_used_slots() {
        // Pieces of 8-byte values over noise: every insertion point, and
        // present keys refused without touching the piece.
        let mut inserted = 0;
        each_noisy_wide_piece(31, |next, round, key_bits, mut piece, entries| {
            let before = piece;
            let e = entries[(next() % entries.len() as u64) as usize];
            assert_ne!(insert_fixed(&mut piece, e.z, 1 << 63), InPlace::Inserted);
            assert_eq!(piece, before);
            let new = Entry {
                z: match round % 3 {
                    0 => entries[0].z.saturating_sub(1 + next() % 1000),
                    1 => entries[entries.len() - 1].z + 1 + next() % 1000,
                    _ => next() >> (64 - key_bits),
                },
                v: next() | 1 << 63,
            };
            if entries.iter().any(|o| o.z == new.z) {
                return;
            }
            let mut want = entries.clone();
            want.push(new);
            want.sort_by_key(|e| e.z);
            match insert_fixed(&mut piece, new.z, new.v) {
                InPlace::Inserted => {
                    let mut got = Vec::new();
                    decode(&piece, &mut got).unwrap();
                    assert_eq!(got, want);
                    for e in &want {
                        assert_eq!(lookup(&piece, e.z), Some(e.v));
                    }
                    inserted += 1;
                }
                _ => assert_eq!(piece, before),
            }
        });
        assert!(inserted > 5000, "{inserted}");
    }

    #[test]
    fn upsert_finds_replaces_and_inserts_like_the_encoder() {
        // Pieces of 8-byte values over noise: present distances are
        // found and their value replaced; absent ones are inserted only
        // when asked, and the piece is untouched whenever nothing is done.
        let (mut replaced, mut inserted) = (0, 0);
        each_noisy_wide_piece(37, |next, round, key_bits, mut piece, mut entries| {
            let before = piece;
            let i = (next() % entries.len() as u64) as usize;
            let v = next() | 1 << 63;
            if round % 2 == 0 {
                assert_eq!(
                    upsert(&mut piece, entries[i].z, v, true),
                    Upsert::Found(entries[i].v)
                );
                entries[i].v = v;
                let mut got = Vec::new();
                decode(&piece, &mut got).unwrap();
                assert_eq!(got, entries);
                replaced += 1;
                return;
            }
            let new = next() >> (64 - key_bits);
            if entries.iter().any(|o| o.z == new) {
                return;
            }
            assert_eq!(upsert(&mut piece, new, v, false), Upsert::Absent);
            assert_eq!(piece, before);
            let mut want = entries.clone();
            want.push(Entry { z: new, v });
            want.sort_by_key(|e| e.z);
            match upsert(&mut piece, new, v, true) {
                Upsert::Inserted => {
                    let mut got = Vec::new();
                    decode(&piece, &mut got).unwrap();
                    assert_eq!(got, want);
                    inserted += 1;
                }
                other => {
                    assert_eq!(other, Upsert::Absent);
                    assert_eq!(piece, before);
                }
            }
        });
        assert!(replaced > 5000 && inserted > 2000, "{replaced} {inserted}");
        // Other layouts are left to the general path.
        let mut piece = [0u8; PIECE_SIZE];
        clear(&mut piece);
        assert_eq!(upsert(&mut piece, 5, 6, true), Upsert::Unsupported);
    }

    #[test]
    fn insert_tagged_matches_the_encoder() {
        let mut x = 13u64;
        let mut fast = 0;
        for _ in 0..3000 {
            let mut entries: Vec<Entry> = Vec::new();
            let mut piece = [0u8; PIECE_SIZE];
            clear(&mut piece);
            for _ in 0..40 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let e = Entry {
                    z: (x >> 40) % 5000,
                    v: if x.is_multiple_of(3) {
                        x
                    } else {
                        (x >> 50) + 1000
                    },
                };
                if entries.iter().any(|o| o.z == e.z) {
                    continue;
                }
                let mut want = entries.clone();
                want.push(e);
                want.sort_by_key(|e| e.z);
                if insert_tagged(&mut piece, e.z, e.v) == InPlace::Inserted {
                    fast += 1;
                    let mut got = Vec::new();
                    decode(&piece, &mut got).unwrap();
                    assert_eq!(got, want);
                    assert!(used(&piece) <= PIECE_DATA);
                    entries = want;
                } else if encode(&mut piece, &want) {
                    entries = want;
                }
            }
        }
        assert!(fast > 1000, "fast path taken {fast} times");
    }

    #[test]
    fn lookup_agrees_with_decode_at_every_width() {
        let mut next = rng(17);
        let mut seen_widths = std::collections::HashSet::new();
        for round in 0..20_000u64 {
            let key_bits = 1 + round % 56;
            let value_bits = round / 56 % 65;
            let n = 1 + next() % 12;
            let entries = random_entries(&mut next, n, key_bits, |next| {
                next().checked_shr(64 - value_bits as u32).unwrap_or(0)
            });
            let mut piece = [0u8; PIECE_SIZE];
            clear(&mut piece);
            if !encode(&mut piece, &entries) {
                continue;
            }
            seen_widths.insert(piece[1]);
            for e in &entries {
                assert_eq!(lookup(&piece, e.z), Some(e.v), "{entries:?}");
                for probe in [e.z.wrapping_sub(1), e.z + 1, next() >> (64 - key_bits)] {
                    let want = entries.iter().find(|o| o.z == probe).map(|o| o.v);
                    assert_eq!(lookup(&piece, probe), want);
                }
            }
        }
        assert!(seen_widths.len() > 60, "{} formats", seen_widths.len());
    }

    #[test]
    fn bytes_past_the_used_slots_never_match() {
        // Fill a piece with noise, then encode fewer entries than it holds:
        // the unused slots keep the noise, and the specialised search must
        // not answer from them, even for the very distances they spell.
        let mut checked = 0;
        each_noisy_wide_piece(23, |_, _, _, piece, entries| {
            let wk = (piece[1] & 15) as usize;
            // The running key of every slot, used or not.
            let mut cur = u64::MAX;
            for at in (2..PIECE_DATA + 2 - (wk + 8) + 1).step_by(wk + 8) {
                cur = cur.wrapping_add(1).wrapping_add(read_le(&piece, at, wk));
                let want = entries.iter().find(|e| e.z == cur).map(|e| e.v);
                assert_eq!(lookup(&piece, cur), want, "{entries:?}");
                checked += 1;
            }
            for e in &entries {
                assert_eq!(lookup(&piece, e.z), Some(e.v));
                assert_eq!(lookup(&piece, e.z | 1 << 63), None);
            }
        });
        assert!(checked > 50_000, "{checked}");
    }

    #[test]
    fn never_panics_on_hostile_bytes() {
        let mut x = 7u64;
        let mut out = Vec::new();
        for _ in 0..20_000 {
            let mut piece = [0u8; PIECE_SIZE];
            for b in piece.iter_mut() {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                *b = (x >> 56) as u8;
            }
            let _ = decode(&piece, &mut out);
            let _ = lookup(&piece, x >> 3);
        }
    }

    #[test]
    fn too_many_entries_do_not_fit() {
        // Ten entries of random 8-byte values and 6-byte key gaps need 140 bytes.
        let entries: Vec<Entry> = (0..10u64)
            .map(|i| Entry {
                z: (i << 44) | ((i * 0x9E37_79B9) % (1 << 40)),
                v: (i + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1 << 63,
            })
            .collect();
        let mut piece = [0u8; PIECE_SIZE];
        clear(&mut piece);
        assert!(!encode(&mut piece, &entries));
        assert_eq!(used(&piece), 0);
    }
}
