//! A range's answer written a line at a time with NEON, on every aarch64
//! processor (`SEEKLESS_NO_NEON=1` in the environment turns it off, for
//! measuring the portable path): each line's 35 (SHA-1) or 27 (NTLM) hex
//! digits made by two 16-byte registers and one 8-byte one:
//!
//! 1. the hash after its 5-digit prefix as two 64-bit words and 12 bits;
//! 2. the words' 16 bytes split into high and low nibbles, interleaved
//!    (`zip1`, `zip2`): 32 nibbles in the line's order;
//! 3. each nibble to its digit by a table (`tbl`), two 16-byte stores; the
//!    last 12 bits the same way in an 8-byte register, one 4-byte store.
//!
//! The page is decoded by the same loop as everywhere; the digits are the
//! same bytes as [`super::render::Portable`]'s.

use std::arch::aarch64::*;
use std::mem::MaybeUninit;
use std::sync::OnceLock;

use crate::format::hash::Key;
use crate::range::render::{Digits, line_start, turned_off};

/// Whether NEON digits are used: always, unless turned off.
pub(super) fn has_neon() -> bool {
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| !turned_off("SEEKLESS_NO_NEON"))
}

/// NEON digits ([`Digits`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Neon;

/// Hex digits by a nibble.
const HEX: [u8; 16] = *b"0123456789ABCDEF";

impl Digits for Neon {
    #[inline(always)]
    fn put<const SKIP: usize>(self, key: Key, out: &mut [MaybeUninit<u8>]) {
        let out = &mut out[..48];
        let (s0, s1, s2, d) = line_start::<SKIP>(key, out);
        // SAFETY: NEON is part of aarch64 itself; the stores write bytes
        // d..d + 32 of `out`, 48 bytes long, and the table is 16 bytes.
        let tail = unsafe {
            let table = vld1q_u8(HEX.as_ptr());
            let bytes = vcombine_u8(vcreate_u8(s0.swap_bytes()), vcreate_u8(s1.swap_bytes()));
            let high = vshrq_n_u8::<4>(bytes);
            let low = vandq_u8(bytes, vdupq_n_u8(0x0F));
            let at = out.as_mut_ptr().add(d).cast::<u8>();
            vst1q_u8(at, vqtbl1q_u8(table, vzip1q_u8(high, low)));
            vst1q_u8(at.add(16), vqtbl1q_u8(table, vzip2q_u8(high, low)));
            let last = vcreate_u8(u64::from(s2.swap_bytes()));
            let nibbles = vzip1_u8(vshr_n_u8::<4>(last), vand_u8(last, vdup_n_u8(0x0F)));
            vget_lane_u32::<0>(vreinterpret_u32_u8(vqtbl1_u8(table, nibbles)))
        };
        for (slot, byte) in out[d + 32..d + 36].iter_mut().zip(tail.to_le_bytes()) {
            slot.write(byte);
        }
    }
}
