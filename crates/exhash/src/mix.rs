//! Key mixing: a bijection from user keys to hash space, and the skewed
//! position that spreads page splits evenly over time.
//!
//! A key `k` becomes `h = mix(k)`, an invertible mixer of all 64 bits (two
//! multiplications by odd constants between xor-shifts by 32), so any
//! pattern in the keys (sequences, multiples of 4096) is scattered over the
//! whole space, low bits included: the low position bits choose a key's
//! home group and fingerprint. Because the mixer is a bijection, the table
//! stores `h` and recovers `k` by the inverse.
//!
//! Format versions 1 and 2 mixed with the mixer
//! [`unmix_v2`](crate::mix::unmix_v2) inverts, which kept the low three key
//! bits so that runs of keys encoded as small deltas; it is kept to read
//! those files.
//!
//! The directory does not index `h` directly but the 65-bit *position*
//! `y = G(h >> 32) << 32 | (h & 0xffff_ffff)` with `G(u) = u + u²/2³³`, a
//! strictly increasing map whose slope grows from 1 to 2. Keys are therefore
//! twice as dense at the low end of position space as at the high end, so
//! pages at the same depth fill at different rates and split at different
//! times (as in spiral storage) instead of all at once: the fill factor stays
//! near ln 2 at every table size rather than swinging between ½ and 1.

const MASK61: u64 = (1 << 61) - 1;
const M1: u64 = 0xbf58_476d_1ce4_e5b9;
const M2: u64 = 0x94d0_49bb_1331_11eb;
const M1_INV: u64 = inverse(M1);
const M2_INV: u64 = inverse(M2);

/// Multiplicative inverse of an odd number modulo 2^64 (Newton's iteration).
const fn inverse(m: u64) -> u64 {
    let mut x = m;
    let mut i = 0;
    while i < 6 {
        x = x.wrapping_mul(2u64.wrapping_sub(m.wrapping_mul(x)));
        i += 1;
    }
    x
}

/// Invertible mixer on 61-bit values. Every xor-shift moves by at least half
/// the width, so each one is its own inverse.
#[cfg(any(test, feature = "test-util"))]
#[inline]
fn perm61(mut x: u64) -> u64 {
    x ^= x >> 31;
    x = x.wrapping_mul(M1) & MASK61;
    x ^= x >> 32;
    x = x.wrapping_mul(M2) & MASK61;
    x ^= x >> 31;
    x
}

#[inline]
fn unperm61(mut x: u64) -> u64 {
    x ^= x >> 31;
    x = x.wrapping_mul(M2_INV) & MASK61;
    x ^= x >> 32;
    x = x.wrapping_mul(M1_INV) & MASK61;
    x ^= x >> 31;
    x
}

/// The hash of a key (a bijection on u64). Each xor-shift by 32 is its own
/// inverse.
#[inline]
pub fn mix(mut x: u64) -> u64 {
    x ^= x >> 32;
    x = x.wrapping_mul(M1);
    x ^= x >> 32;
    x = x.wrapping_mul(M2);
    x ^= x >> 32;
    x
}

/// The key whose hash is `h`.
#[inline]
pub fn unmix(mut x: u64) -> u64 {
    x ^= x >> 32;
    x = x.wrapping_mul(M2_INV);
    x ^= x >> 32;
    x = x.wrapping_mul(M1_INV);
    x ^= x >> 32;
    x
}

/// The hash of a key in format versions 1 and 2: the high 61 bits mixed,
/// the low three kept.
#[cfg(any(test, feature = "test-util"))]
#[inline]
pub fn mix_v2(key: u64) -> u64 {
    (perm61(key >> 3) << 3) | (key & 7)
}

/// The key whose format-2 hash is `h`.
#[inline]
pub fn unmix_v2(h: u64) -> u64 {
    (unperm61(h >> 3) << 3) | (h & 7)
}

/// `G(u) = u + u²/2³³` for a 32-bit `u`; the result is below 1.5 · 2³².
#[inline]
pub fn skew(u: u64) -> u64 {
    u + ((u * u) >> 33)
}

/// The `u` with `skew(u) == g`, if there is one.
pub fn unskew(g: u64) -> Option<u64> {
    if g > skew((1 << 32) - 1) {
        return None;
    }
    // u + u²/2³³ = g  =>  u = 2³² (sqrt(1 + 2g/2³²) - 1), then exact fix-up.
    let t = g as f64 / 4_294_967_296.0;
    let approx = ((1.0 + 2.0 * t).sqrt() - 1.0) * 4_294_967_296.0;
    let mut u = (approx.max(0.0) as u64).min((1 << 32) - 1);
    while u > 0 && skew(u) > g {
        u -= 1;
    }
    while u < (1 << 32) - 1 && skew(u + 1) <= g {
        u += 1;
    }
    (skew(u) == g).then_some(u)
}

/// The high part of the 65-bit position of hash `h`: `G(h >> 32)`, 33 bits.
#[inline]
pub fn position_high(h: u64) -> u64 {
    skew(h >> 32)
}

/// The hash whose position has high part `g` and low part `low` (32 bits).
pub fn hash_of_position(g: u64, low: u64) -> Option<u64> {
    unskew(g).map(|u| (u << 32) | low)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_is_a_bijection_on_samples() {
        let mut x = 0x1234_5678_9abc_def0u64;
        for i in 0..100_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            for k in [i, x, u64::MAX - i, i << 12] {
                assert_eq!(unmix(mix(k)), k);
                assert_eq!(unmix_v2(mix_v2(k)), k);
            }
        }
        assert_eq!(M1.wrapping_mul(M1_INV), 1);
    }

    #[test]
    fn mix_scatters_patterned_keys() {
        // Multiples of 4096 and sequences must spread over the top bits
        // (pages) and the low ones (home groups and fingerprints).
        let mut seen = std::collections::HashSet::new();
        let mut low = std::collections::HashSet::new();
        let mut seq = std::collections::HashSet::new();
        for i in 0..4096u64 {
            seen.insert(mix(i * 4096) >> 52);
            low.insert(mix(i * 4096) & 0xfff);
            seq.insert(mix(i) & 0xfff);
        }
        for (what, n) in [
            ("top", seen.len()),
            ("low", low.len()),
            ("sequential", seq.len()),
        ] {
            assert!(n > 2000, "only {n} distinct {what} 12-bit buckets");
        }
    }

    #[test]
    fn skew_is_strictly_increasing_and_invertible() {
        let mut prev = skew(0);
        for u in (1..1u64 << 32).step_by(65_537).chain([(1 << 32) - 1]) {
            let g = skew(u);
            assert!(g > prev);
            prev = g;
            assert_eq!(unskew(g), Some(u));
        }
        assert_eq!(unskew(0), Some(0));
        assert_eq!(unskew(skew((1 << 32) - 1) + 1), None);
        assert_eq!(unskew(u64::MAX), None);
        // Values skipped by G are not in its image.
        let u = 3_000_000_000u64;
        if skew(u + 1) - skew(u) > 1 {
            assert_eq!(unskew(skew(u) + 1), None);
        }
    }
}
