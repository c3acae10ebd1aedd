//! Profiling driver (not a benchmark): inserts N random pairs three times.
//! `N=100000 perf record cargo run --release --example profile_put`
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
    let all = pairs(n, pattern);
    for _ in 0..3 {
        let start = std::time::Instant::now();
        let mut t = ExHash::new();
        for &(k, v) in &all {
            t.insert(k, v);
        }
        println!(
            "put {:.1} ns, {:.2} B/entry",
            start.elapsed().as_nanos() as f64 / n as f64,
            t.memory_bytes() as f64 / n as f64
        );
    }
}
