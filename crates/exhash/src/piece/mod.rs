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

mod encode;
mod insert;
mod lookup;

pub use encode::*;
pub use insert::*;
pub use lookup::*;

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
        let mut next = rng(5);
        for round in 0..2000 {
            let mut sizer = Sizer::default();
            let mut added: Vec<Entry> = Vec::new();
            let mut r = 1u64 << (20 + round % 40);
            loop {
                let x = next();
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
        let mut next = rng(11);
        for _ in 0..3000 {
            let mut entries: Vec<Entry> = Vec::new();
            let mut piece = [0u8; PIECE_SIZE];
            clear(&mut piece);
            for _ in 0..12 {
                let x = next();
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
        let mut next = rng(29);
        let mut done = 0;
        for round in 0..3000u64 {
            let mut entries: Vec<Entry> = (0..1 + round % 9)
                .map(|i| {
                    let x = next();
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
            let x = next();
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
        let mut next = rng(13);
        let mut fast = 0;
        for _ in 0..3000 {
            let mut entries: Vec<Entry> = Vec::new();
            let mut piece = [0u8; PIECE_SIZE];
            clear(&mut piece);
            for _ in 0..40 {
                let x = next();
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
        let mut next = rng(7);
        let mut out = Vec::new();
        for _ in 0..20_000 {
            let mut piece = [0u8; PIECE_SIZE];
            for b in piece.iter_mut() {
                let x = next();
                *b = (x >> 56) as u8;
            }
            let _ = decode(&piece, &mut out);
            let _ = lookup(&piece, next() >> 3);
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
