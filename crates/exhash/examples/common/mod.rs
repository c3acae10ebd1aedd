//! What the profiling examples share: how many pairs, and which pattern.

use seekless_exhash::bench::Pattern;

/// `N` (pairs, default 1,000,000) and the pattern (`SEQ` set: sequential)
/// from the environment, for the profiling examples.
pub fn from_env() -> (usize, Pattern) {
    let n = std::env::var("N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let pattern = if std::env::var("SEQ").is_ok() {
        Pattern::Sequential
    } else {
        Pattern::Random
    };
    (n, pattern)
}

/// One round of lone lookups of every key in turn, summed so that none is
/// optimised away: nanoseconds a lookup.
#[allow(
    dead_code,
    reason = "not every example that shares this module times gets"
)]
pub fn lone_gets(keys: &[u64], get: impl Fn(u64) -> Option<u64>) -> f64 {
    let start = std::time::Instant::now();
    let mut sum = 0u64;
    for &k in keys {
        sum = sum.wrapping_add(get(std::hint::black_box(k)).unwrap_or(1));
    }
    std::hint::black_box(sum);
    start.elapsed().as_nanos() as f64 / keys.len() as f64
}
