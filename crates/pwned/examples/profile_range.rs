//! Decodes ranges of an index, for profilers (cachegrind, perf): every
//! `2^BITS / RANGES`-th range of hashes sharing their top `BITS` bits (20,
//! `GET /range/{5 hex}`, unless set), `ROUNDS` times; with `RENDER=1`
//! each range's answer body is rendered too, from its decoded pairs; with
//! `RENDER=2` it is written as the range is decoded (`Index::write_range`,
//! `BITS` 20 only).
//!
//! ```sh
//! cargo build --release -p seekless-pwned --example profile_range
//! RANGES=512 valgrind --tool=cachegrind target/release/examples/profile_range pwned.idx
//! ```

use seekless_pwned::Index;
use seekless_pwned::test_util::Words;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: profile_range INDEX")?;
    let index = Index::open(&path)?;
    let bits = env("BITS", 20).clamp(1, 32) as u32;
    let ranges = env("RANGES", 4096).clamp(1, 1 << bits);
    let rounds = env("ROUNDS", 1);
    let step = (1 << bits) / ranges;
    let render = env("RENDER", 0);
    let mut pairs = Vec::new();
    let mut body = Vec::new();
    let (mut decoded, mut check) = (0u64, 0u64);
    let start = std::time::Instant::now();
    for round in 0..rounds {
        for r in 0..ranges {
            if render == 2 {
                body.clear();
                index.write_range((r * step) as u32, &mut body)?;
                if round == 0 {
                    // The lines of every round: counted once, not timed.
                    let lines = body.iter().filter(|&&b| b == b':').count() as u64;
                    decoded += lines * rounds;
                }
                check = check.rotate_left(7) ^ body.len() as u64;
                continue;
            }
            pairs.clear();
            index.range_into(r * step, bits, &mut pairs)?;
            decoded += pairs.len() as u64;
            if render == 1 {
                body.clear();
                seekless_pwned::test_util::write_range_body(index.kind(), &pairs, &mut body);
                check = check.rotate_left(7) ^ body.len() as u64;
            }
            check = pairs.iter().fold(check, |c, (k, n)| {
                let w = Words::from(*k);
                c.rotate_left(5) ^ w.hi ^ w.mid ^ u64::from(w.lo) ^ n
            });
        }
    }
    let took = start.elapsed();
    println!(
        "{decoded} pairs in {:.3} s: {:.1} ns a pair (check {check:016x})",
        took.as_secs_f64(),
        took.as_nanos() as f64 / decoded.max(1) as f64
    );
    Ok(())
}
