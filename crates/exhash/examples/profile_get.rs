//! Profiling driver (not a benchmark): N random pairs, then timed lookups,
//! repeated; prints the fastest round to see through machine noise.
use seekless_exhash::ExHash;
use seekless_exhash::bench::{Pattern, pairs};
use std::hint::black_box;
fn main() {
    let n: usize = std::env::var("N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let all = pairs(n, Pattern::Random);
    let mut t = ExHash::new();
    for &(k, v) in &all {
        t.insert(k, v);
    }
    let mut best = f64::MAX;
    for _ in 0..15 {
        let start = std::time::Instant::now();
        let mut sum = 0u64;
        for &(k, _) in &all {
            sum = sum.wrapping_add(t.get(black_box(k)).unwrap_or(1));
        }
        black_box(sum);
        best = best.min(start.elapsed().as_nanos() as f64 / n as f64);
    }
    println!("best get {best:.1} ns");
}
