//! Reading the pages of format versions 1 and 2 (pieces, `piece.rs`) so
//! that their files open: every entry is checked as those versions
//! required and turned back into its key, for the table to place in the
//! current layout.

use crate::error::Error;
use crate::mix::{hash_of_position, unmix_v2};
use crate::page::Page;
use crate::piece::{self, Entry, PIECE_SIZE};

/// Pieces in a page.
const PIECES: usize = 64;
/// How many pieces an entry could live in (its home and the next 31).
const CHAIN: u64 = 32;

/// How page-local positions of a page at some depth mapped to pieces.
#[derive(Clone, Copy, Debug)]
struct Geom {
    /// Position bits below the home piece number.
    shift: u32,
    /// Page-local positions are `65 - depth` bits wide.
    mask: u64,
}

impl Geom {
    fn of(depth: u8) -> Geom {
        Geom {
            shift: 59 - depth as u32,
            mask: u64::MAX >> (depth - 1),
        }
    }

    /// The position at distance `r` back from the end of piece `p`.
    fn z(self, p: usize, r: u64) -> u64 {
        let end = ((p as u64) << self.shift) | ((1u64 << self.shift) - 1);
        end.wrapping_sub(r) & self.mask
    }

    fn home(self, z: u64) -> usize {
        (z >> self.shift) as usize
    }
}

/// Append the (key, value) pairs of `page` (depth `depth`, prefix
/// `prefix`, written by format `version`, read from file offset `off`) to
/// `out`. Refuses, with the offset of the piece at fault, pieces that do
/// not decode, entries past their chain or without overflow flags on it,
/// positions no key maps to, and keys stored twice. Returns how many.
pub(crate) fn page_pairs(
    page: &Page,
    depth: u8,
    prefix: u32,
    version: u32,
    off: u64,
    out: &mut Vec<(u64, u64)>,
) -> Result<u32, Error> {
    let g = Geom::of(depth);
    let piece = |p: usize| &page.0[p * PIECE_SIZE..(p + 1) * PIECE_SIZE];
    let mut buf: Vec<Entry> = Vec::new();
    let mut zs = Vec::new();
    let first = out.len();
    for p in 0..PIECES {
        let at = off + (p * PIECE_SIZE) as u64;
        let decoded = if version == 1 {
            piece::decode_v1(piece(p), &mut buf)
        } else {
            piece::decode(piece(p), &mut buf)
        };
        decoded.map_err(|what| Error::corrupt(at, what))?;
        for e in &buf {
            if e.z >> g.shift >= CHAIN {
                return Err(Error::corrupt(
                    at,
                    "entry lives farther from its home than the chain allows",
                ));
            }
            let z = g.z(p, e.z);
            let home = g.home(z);
            let age = (p + PIECES - home) % PIECES;
            if (0..age).any(|k| !piece::overflowed(piece((home + k) % PIECES))) {
                return Err(Error::corrupt(
                    at,
                    "overflowed entry without flags on its chain",
                ));
            }
            let high = ((prefix as u64) << (33 - depth)) | (z >> 32);
            let h = hash_of_position(high, z & 0xffff_ffff)
                .ok_or_else(|| Error::corrupt(at, "entry position no key maps to"))?;
            zs.push(z);
            out.push((unmix_v2(h), e.v));
        }
    }
    zs.sort_unstable();
    if zs.windows(2).any(|w| w[0] == w[1]) {
        return Err(Error::corrupt(off, "key stored twice in a page"));
    }
    Ok((out.len() - first) as u32)
}
