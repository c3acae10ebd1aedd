use seekless_exhash::ExHash;
use seekless_exhash::bench::{Pattern, pairs};
fn main() {
    for p in [Pattern::Random, Pattern::Sequential] {
        let all = pairs(
            std::env::var("N")
                .map(|s| s.parse().unwrap())
                .unwrap_or(8_000_000),
            p,
        );
        let mut t = ExHash::new();
        let mut next = 250_000;
        for (i, &(k, v)) in all.iter().enumerate() {
            t.insert(k, v);
            if i + 1 == next {
                let s = t.stats();
                println!(
                    "{p:?} n={} B/e={:.2} fill={:.3} pages={} gd={} maxd={} chain={}",
                    i + 1,
                    s.memory_bytes as f64 / (i + 1) as f64,
                    s.fill,
                    s.pages,
                    s.global_depth,
                    s.max_local_depth,
                    s.longest_chain
                );
                next = next * 5 / 4;
            }
        }
    }
}
