//! Profiling driver (not a benchmark): inserts N random pairs three times.
//! `N=100000 perf record cargo run --release --example profile_put`
use seekless_exhash::ExHash;
use seekless_exhash::bench::pairs;

mod common;
use common::from_env;
fn main() {
    let (n, pattern) = from_env();
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
