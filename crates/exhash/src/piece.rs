//! Reading the pieces of format versions 1 and 2, whose pages were 64
//! pieces of 128 bytes holding a few entries each, compactly encoded,
//! sorted by ascending distance from the piece's end. Only decoding is
//! left: files of those versions are read and rewritten in format 3.
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

/// Decode every entry of a piece into `out` (cleared first).
pub fn decode(piece: &[u8], out: &mut Vec<Entry>) -> Result<(), DecodeError> {
    out.clear();
    walk(piece, |e| {
        out.push(e);
        true
    })
}

/// Decode a piece written by format version 1 into `out` (cleared
/// first): its tagged pieces kept each tag right before its entry's data;
/// fixed-width pieces are the same as in version 2.
pub fn decode_v1(piece: &[u8], out: &mut Vec<Entry>) -> Result<(), DecodeError> {
    let used = used(piece);
    if piece[1] != TAGGED || used == 0 {
        return decode(piece, out);
    }
    if used > PIECE_DATA {
        return Err("piece uses more bytes than it has");
    }
    out.clear();
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
        out.push(Entry { z, v });
        pos += 1 + klen + vlen;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_width_pieces_decode_by_their_deltas() {
        // Widths 2 (key delta) and 1 (value): r = 5, 5 + 1 + 3 = 9.
        let mut piece = [0u8; PIECE_SIZE];
        piece[0] = 6;
        piece[1] = 2 | 1 << 4;
        piece[2..8].copy_from_slice(&[5, 0, 7, 3, 0, 8]);
        let mut out = Vec::new();
        decode(&piece, &mut out).unwrap();
        assert_eq!(out, [Entry { z: 5, v: 7 }, Entry { z: 9, v: 8 }]);
        decode_v1(&piece, &mut out).unwrap();
        assert_eq!(out, [Entry { z: 5, v: 7 }, Entry { z: 9, v: 8 }]);
        assert!(!overflowed(&piece));
    }

    #[test]
    fn tagged_pieces_decode_in_both_layouts() {
        // Two entries: key delta 1 byte, value 1 byte raw (tag 10); then key
        // delta 1 byte, value as a zig-zag delta of 1 byte (tag 81 + 10).
        let mut v2 = [0u8; PIECE_SIZE];
        v2[0] = 6;
        v2[1] = TAGGED;
        v2[2..6].copy_from_slice(&[4, 50, 2, 3]);
        v2[127] = 10;
        v2[126] = 91;
        let mut v1 = [0u8; PIECE_SIZE];
        v1[0] = 6;
        v1[1] = TAGGED;
        v1[2..8].copy_from_slice(&[10, 4, 50, 91, 2, 3]);
        let want = [Entry { z: 4, v: 50 }, Entry { z: 7, v: 48 }];
        let mut out = Vec::new();
        decode(&v2, &mut out).unwrap();
        assert_eq!(out, want);
        decode_v1(&v1, &mut out).unwrap();
        assert_eq!(out, want);
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
            let _ = decode_v1(&piece, &mut out);
        }
    }
}
