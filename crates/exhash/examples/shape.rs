//! Prints the table's shape (fill, chain walks) after loading N pairs:
//! deterministic figures that explain lookup and insert costs.
//! `N=1000000 SEQ=1 cargo run --release --example shape`
use seekless_exhash::ExHash;
use seekless_exhash::bench::{Pattern, pairs};
fn main() {
    let n: usize = std::env::var("N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let pattern = if std::env::var("SEQ").is_ok() {
        Pattern::Sequential
    } else {
        Pattern::Random
    };
    let mut t = ExHash::new();
    for (k, v) in pairs(n, pattern) {
        t.insert(k, v);
    }
    println!("{pattern:?} {n}: {:?}", t.stats());
}
