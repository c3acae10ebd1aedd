//! What the unit tests share.

/// A small deterministic generator (xorshift64), so tests need no crate.
pub(crate) fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed | 1;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}
