//! Decodes one file in a loop, for profilers and A/B comparisons:
//! `cargo run --release -p seekless-bencode --example profile_decode -- FILE [SECONDS]`.
//!
//! Prints the mean ns a decode, and the minimum and 10th percentile over
//! batches of 100 decodes: short batches mostly run without being
//! preempted, so these two still compare builds on a loaded machine.

use std::time::{Duration, Instant};

use seekless_bencode::Parser;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: profile_decode FILE [SECONDS]");
    let seconds: f64 = args.next().map_or(5.0, |s| s.parse().expect("seconds"));
    let input = std::fs::read(&path).expect("read");
    let mut parser = Parser::new();
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let (mut decodes, start) = (0u64, Instant::now());
    let mut batches = Vec::new();
    while Instant::now() < deadline {
        let t0 = Instant::now();
        for _ in 0..100 {
            let root = parser.parse(std::hint::black_box(&input)).expect("decodes");
            std::hint::black_box(root);
        }
        batches.push(t0.elapsed().as_nanos() as f64 / 100.0);
        decodes += 100;
    }
    let ns = start.elapsed().as_nanos() as f64 / decodes as f64;
    batches.sort_by(f64::total_cmp);
    let p10 = batches[batches.len() / 10];
    println!(
        "{ns:.1} ns a decode ({decodes} decodes); batches of 100: min {:.1}, p10 {p10:.1} ns",
        batches[0]
    );
}
