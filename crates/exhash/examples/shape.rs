//! Prints the table's shape (fill, groups read by hits and misses) after
//! loading N pairs: deterministic figures that explain lookup and insert costs.
//! `N=1000000 SEQ=1 cargo run --release --example shape`
use seekless_exhash::ExHash;
use seekless_exhash::bench::pairs;

mod common;
use common::from_env;
fn main() {
    let (n, pattern) = from_env();
    let mut t = ExHash::new();
    for (k, v) in pairs(n, pattern) {
        t.insert(k, v);
    }
    println!("{pattern:?} {n}: {:?}", t.stats());
}
