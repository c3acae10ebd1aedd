//! A small unsigned 256-bit integer: targets from nBits and chain work.

use std::cmp::Ordering;

/// An unsigned 256-bit integer, four 64-bit limbs, least significant first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct U256(pub [u64; 4]);

impl U256 {
    /// Zero.
    pub const ZERO: U256 = U256([0; 4]);
    /// One.
    pub const ONE: U256 = U256([1, 0, 0, 0]);
    /// The largest value.
    pub const MAX: U256 = U256([u64::MAX; 4]);

    /// From a small value.
    pub const fn from_u64(v: u64) -> U256 {
        U256([v, 0, 0, 0])
    }

    /// From 32 little-endian bytes (how Bitcoin stores hashes).
    pub fn from_le_bytes(bytes: &[u8; 32]) -> U256 {
        let mut limbs = [0u64; 4];
        for (i, limb) in limbs.iter_mut().enumerate() {
            let mut word = [0u8; 8];
            word.copy_from_slice(&bytes[i * 8..i * 8 + 8]);
            *limb = u64::from_le_bytes(word);
        }
        U256(limbs)
    }

    /// To 32 little-endian bytes.
    pub fn to_le_bytes(self) -> [u8; 32] {
        let mut out = [0u8; 32];
        for (i, limb) in self.0.iter().enumerate() {
            out[i * 8..i * 8 + 8].copy_from_slice(&limb.to_le_bytes());
        }
        out
    }

    /// Whether the value is zero.
    pub fn is_zero(self) -> bool {
        self.0 == [0; 4]
    }

    /// Number of significant bits (0 for zero).
    pub fn bits(self) -> u32 {
        for i in (0..4).rev() {
            if self.0[i] != 0 {
                return 64 * i as u32 + 64 - self.0[i].leading_zeros();
            }
        }
        0
    }

    /// Bitwise complement.
    pub fn complement(self) -> U256 {
        U256(self.0.map(|l| !l))
    }

    /// `op` (a limb's overflowing add or sub) limb by limb from the lowest,
    /// each carry or borrow flowing into the next; returns the last one.
    #[inline(always)]
    fn with_carry(self, other: U256, op: fn(u64, u64) -> (u64, bool)) -> (U256, bool) {
        let mut out = [0u64; 4];
        let mut carry = false;
        for (i, limb) in out.iter_mut().enumerate() {
            let (r1, c1) = op(self.0[i], other.0[i]);
            let (r2, c2) = op(r1, carry as u64);
            *limb = r2;
            carry = c1 || c2;
        }
        (U256(out), carry)
    }

    /// Addition modulo 2^256, with the carry out.
    pub fn overflowing_add(self, other: U256) -> (U256, bool) {
        self.with_carry(other, u64::overflowing_add)
    }

    /// Addition that stops at [`U256::MAX`].
    pub fn saturating_add(self, other: U256) -> U256 {
        match self.overflowing_add(other) {
            (sum, false) => sum,
            (_, true) => U256::MAX,
        }
    }

    /// Subtraction modulo 2^256, with the borrow out.
    pub fn overflowing_sub(self, other: U256) -> (U256, bool) {
        self.with_carry(other, u64::overflowing_sub)
    }

    /// Left shift; bits shifted past bit 255 are lost.
    pub fn shift_left(self, shift: u32) -> U256 {
        if shift >= 256 {
            return U256::ZERO;
        }
        let limbs = (shift / 64) as usize;
        let bits = shift % 64;
        let mut out = [0u64; 4];
        for i in (limbs..4).rev() {
            let src = i - limbs;
            out[i] = self.0[src] << bits;
            if bits > 0 && src > 0 {
                out[i] |= self.0[src - 1] >> (64 - bits);
            }
        }
        U256(out)
    }

    /// Right shift.
    pub fn shift_right(self, shift: u32) -> U256 {
        if shift >= 256 {
            return U256::ZERO;
        }
        let limbs = (shift / 64) as usize;
        let bits = shift % 64;
        let mut out = [0u64; 4];
        for (i, limb) in out.iter_mut().enumerate().take(4 - limbs) {
            let src = i + limbs;
            *limb = self.0[src] >> bits;
            if bits > 0 && src + 1 < 4 {
                *limb |= self.0[src + 1] << (64 - bits);
            }
        }
        U256(out)
    }

    /// Quotient of long division; `None` when dividing by zero.
    pub fn checked_div(self, divisor: U256) -> Option<U256> {
        if divisor.is_zero() {
            return None;
        }
        if self < divisor {
            return Some(U256::ZERO);
        }
        let shift = self.bits() - divisor.bits();
        let mut d = divisor.shift_left(shift);
        let mut rem = self;
        let mut quotient = U256::ZERO;
        for i in (0..=shift).rev() {
            if rem >= d {
                rem = rem.overflowing_sub(d).0;
                quotient.0[(i / 64) as usize] |= 1 << (i % 64);
            }
            d = d.shift_right(1);
        }
        Some(quotient)
    }
}

impl Ord for U256 {
    fn cmp(&self, other: &Self) -> Ordering {
        for i in (0..4).rev() {
            match self.0[i].cmp(&other.0[i]) {
                Ordering::Equal => continue,
                unequal => return unequal,
            }
        }
        Ordering::Equal
    }
}

impl PartialOrd for U256 {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn from_u128(v: u128) -> U256 {
        U256([v as u64, (v >> 64) as u64, 0, 0])
    }

    proptest! {
        #[test]
        fn matches_u128(a in any::<u128>() , b in 1..u128::MAX, s in 0u32..128) {
            let (x, y) = (from_u128(a >> 1), from_u128(b >> 1));
            prop_assert_eq!(x.overflowing_add(y).0, from_u128((a >> 1) + (b >> 1)));
            prop_assert_eq!(x.checked_div(from_u128(b)), Some(from_u128((a >> 1) / b)));
            prop_assert_eq!(from_u128(a).shift_right(s), from_u128(a >> s));
            prop_assert_eq!(from_u128(a >> s).shift_left(s), from_u128((a >> s) << s));
            prop_assert_eq!(x.cmp(&y), (a >> 1).cmp(&(b >> 1)));
        }
    }

    #[test]
    fn wide_division_and_carries() {
        assert_eq!(U256::MAX.checked_div(U256::MAX), Some(U256::ONE));
        assert_eq!(U256::MAX.checked_div(U256::ZERO), None);
        assert_eq!(U256::MAX.overflowing_add(U256::ONE), (U256::ZERO, true));
        assert_eq!(
            U256::ONE
                .shift_left(255)
                .checked_div(U256::ONE.shift_left(200)),
            Some(U256::ONE.shift_left(55))
        );
        assert_eq!(U256::ONE.shift_left(255).bits(), 256);
        assert_eq!(U256::ZERO.overflowing_sub(U256::ONE), (U256::MAX, true));
    }
}
