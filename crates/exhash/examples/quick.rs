//! Scratch profiling driver: N random pairs, put then get, repeated.
use seekless_exhash::bench::{Pattern, measure_exhash, pairs};
fn main() {
    let n: usize = std::env::var("N").map(|s| s.parse().unwrap()).unwrap_or(1_000_000);
    let p = if std::env::var("SEQ").is_ok() { Pattern::Sequential } else { Pattern::Random };
    let all = pairs(n, p);
    for _ in 0..3 {
        let (put, get, b) = measure_exhash(&all);
        println!("put {put:.1} get {get:.1} B/e {b:.2}");
    }
}
