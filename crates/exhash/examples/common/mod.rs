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
