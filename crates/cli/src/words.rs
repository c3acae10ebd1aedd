//! How numbers read in messages.

/// `n` and the noun for it: `1 file`, `2 files`, `0 files`.
pub fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
