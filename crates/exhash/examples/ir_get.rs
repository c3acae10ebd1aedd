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
//!
//! With `HASHBROWN` set, the same of `hashbrown::HashMap`'s lone gets;
//! add `--branch-sim=yes` for the mispredicted branches of each.
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
    let mut sum = 0u64;
    if std::env::var("HASHBROWN").is_ok() {
        let map: hashbrown::HashMap<u64, u64> = all.iter().copied().collect();
        for _ in 0..rounds {
            for &(k, _) in &all {
                sum = sum.wrapping_add(map.get(&std::hint::black_box(k)).copied().unwrap_or(1));
            }
        }
    } else {
        let mut t = ExHash::new();
        for &(k, v) in &all {
            t.insert(k, v);
        }
        for _ in 0..rounds {
            for &(k, _) in &all {
                sum = sum.wrapping_add(t.get(std::hint::black_box(k)).unwrap_or(1));
            }
        }
    }
    println!("{sum}");
}
