//! Profiling driver (not a benchmark): N random pairs, then timed lookups
//! one by one and through `get_many`, and hashbrown's lone lookups of the
//! same keys in the same rounds, repeated; prints the fastest round of
//! each to see through machine noise.
use std::hint::black_box;

use seekless_exhash::ExHash;
use seekless_exhash::bench::{Pattern, pairs};

mod common;
use common::{from_env, lone_gets};

fn main() {
    let (n, _) = from_env();
    let all = pairs(n, Pattern::Random);
    let keys: Vec<u64> = all.iter().map(|p| p.0).collect();
    let mut t = ExHash::new();
    for &(k, v) in &all {
        t.insert(k, v);
    }
    let brown: hashbrown::HashMap<u64, u64> = all.iter().copied().collect();
    let (mut single, mut batched, mut theirs) = (f64::MAX, f64::MAX, f64::MAX);
    let mut out = Vec::new();
    for _ in 0..9 {
        single = single.min(lone_gets(&keys, |k| t.get(k)));
        theirs = theirs.min(lone_gets(&keys, |k| brown.get(&k).copied()));
        let start = std::time::Instant::now();
        t.get_many(black_box(&keys), &mut out);
        black_box(&out);
        batched = batched.min(start.elapsed().as_nanos() as f64 / n as f64);
    }
    println!(
        "best get {single:.1} ns single, {batched:.1} ns batched; hashbrown {theirs:.1} ns single ({:.2}x)",
        single / theirs
    );
}
