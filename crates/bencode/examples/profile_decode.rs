//! Decodes one file in a loop, for profilers:
//! `cargo run --release -p seekless-bencode --example profile_decode -- FILE [SECONDS]`.

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
    while Instant::now() < deadline {
        for _ in 0..1000 {
            let root = parser.parse(std::hint::black_box(&input)).expect("decodes");
            std::hint::black_box(root);
        }
        decodes += 1000;
    }
    let ns = start.elapsed().as_nanos() as f64 / decodes as f64;
    println!("{ns:.1} ns a decode ({decodes} decodes)");
}
