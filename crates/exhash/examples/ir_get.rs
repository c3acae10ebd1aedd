//! Profiling driver (not a benchmark): N random pairs (default 1M), then
//! `R` rounds (default 1) of lone lookups of every key. Under cachegrind,
//! the difference between two values of `R` gives the instructions of a
//! lone get, a count the host's noise does not move:
//!
//! ```sh
//! cargo build --release -p seekless-exhash --example ir_get
//! for r in 1 3; do N=100000 R=$r valgrind --tool=cachegrind --cache-sim=no \
//!     --cachegrind-out-file=/dev/null target/release/examples/ir_get; done
//! # (second "I refs" - first) / (2 * N)
//! ```
use seekless_exhash::ExHash;
use seekless_exhash::bench::{Pattern, pairs};

mod common;
use common::from_env;

fn main() {
    let (n, _) = from_env();
    let rounds: usize = std::env::var("R")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let all = pairs(n, Pattern::Random);
    let mut t = ExHash::new();
    for &(k, v) in &all {
        t.insert(k, v);
    }
    let mut sum = 0u64;
    for _ in 0..rounds {
        for &(k, _) in &all {
            sum = sum.wrapping_add(t.get(std::hint::black_box(k)).unwrap_or(1));
        }
    }
    println!("{sum}");
}
