//! Differential test against libtorrent 2.0's `bdecode`: generates random,
//! structured and mutated inputs, sends them through the C++ harness
//! (`benches/libtorrent/bdecode_harness.cpp`, `stream` mode) and compares
//! verdict, error kind and error offset with ours in default mode.
//!
//! Run by `crates/bencode/tests/differential.sh`, which builds the harness:
//!   cargo run -p seekless-bencode --example differential -- HARNESS [COUNT] [SEED]
//! Exit status 1 on any disagreement (the first few are printed).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use seekless_bencode::{Encoder, decode};
use seekless_testkit::Rng;

const ALPHABET: &[u8] = b"dlie:-0123456789dlie:0e1x";

fn random_bytes(rng: &mut Rng) -> Vec<u8> {
    let len = rng.index(48);
    (0..len).map(|_| *rng.pick(ALPHABET)).collect()
}

fn random_value(rng: &mut Rng, e: &mut Encoder, depth: usize) {
    match rng.index(if depth > 6 { 2 } else { 4 }) {
        0 => {
            let v = match rng.index(4) {
                0 => 0,
                1 => rng.next_u64() as i64,
                2 => -(rng.index(1000) as i64),
                _ => rng.index(100) as i64,
            };
            e.int(v);
        }
        1 => {
            let len = rng.index(12);
            let bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            e.bytes(&bytes);
        }
        2 => {
            e.list();
            for _ in 0..rng.index(5) {
                random_value(rng, e, depth + 1);
            }
            e.end();
        }
        _ => {
            e.dict();
            for _ in 0..rng.index(5) {
                let key: Vec<u8> = (0..rng.index(4))
                    .map(|_| b'a' + rng.index(4) as u8)
                    .collect();
                e.bytes(&key);
                random_value(rng, e, depth + 1);
            }
            e.end();
        }
    }
}

fn mutate(rng: &mut Rng, mut data: Vec<u8>) -> Vec<u8> {
    for _ in 0..1 + rng.index(3) {
        if data.is_empty() {
            data.push(*rng.pick(ALPHABET));
            continue;
        }
        let at = rng.index(data.len());
        match rng.index(5) {
            0 => data[at] = *rng.pick(ALPHABET),
            1 => data[at] = rng.next_u64() as u8,
            2 => data.insert(at, *rng.pick(ALPHABET)),
            3 => {
                data.remove(at);
            }
            _ => data.truncate(at),
        }
    }
    data
}

fn edge_cases(rng: &mut Rng) -> Vec<u8> {
    match rng.index(4) {
        0 => {
            // Nesting around the depth limit.
            let n = 95 + rng.index(10);
            let mut v = vec![*rng.pick(b"ld"); n];
            if rng.index(2) == 0 {
                v.extend(std::iter::repeat_n(b'e', n));
            }
            v
        }
        1 => {
            // Long length prefixes (leading zeros, overflow).
            let digits = 14 + rng.index(8);
            let mut v: Vec<u8> = (0..digits).map(|_| *rng.pick(b"0000000019")).collect();
            v.push(b':');
            v.extend_from_slice(b"abc");
            v
        }
        2 => {
            // Long integers around the 20-digit limit.
            let digits = 18 + rng.index(5);
            let mut v = vec![b'i'];
            if rng.index(2) == 0 {
                v.push(b'-');
            }
            v.extend((0..digits).map(|_| *rng.pick(b"0123456789")));
            if rng.index(4) != 0 {
                v.push(b'e');
            }
            v
        }
        _ => {
            let mut v = b"d".to_vec();
            for _ in 0..rng.index(4) {
                let pieces: [&[u8]; 6] = [b"1:a", b"i1e", b"le", b"de", b"0:", b"e"];
                let piece: &[u8] = rng.pick::<&[u8]>(&pieces);
                v.extend_from_slice(piece);
            }
            v
        }
    }
}

fn ours(input: &[u8]) -> String {
    match decode(input) {
        Ok(_) => "ok".to_string(),
        Err(e) => format!("error {} {}", e.code(), e.offset()),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(harness) = args.get(1) else {
        eprintln!("usage: differential HARNESS [COUNT] [SEED]");
        std::process::exit(2);
    };
    let count: usize = args.get(2).and_then(|v| v.parse().ok()).unwrap_or(100_000);
    let seed: u64 = args.get(3).and_then(|v| v.parse().ok()).unwrap_or(0x5eed);
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let torrents: Vec<Vec<u8>> = std::fs::read_dir(&dir)
        .expect("test data")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "torrent"))
        .map(|e| std::fs::read(e.path()).expect("read torrent"))
        .collect();

    // Inputs are regenerated from the seed on both sides of the pipe rather
    // than kept in memory (mutated torrents are up to 126 KB each).
    let mut child = Command::new(harness)
        .arg("stream")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the libtorrent harness");
    let mut stdin = child.stdin.take().expect("stdin");
    let feed = std::thread::spawn({
        let torrents = torrents.clone();
        move || {
            let mut w = std::io::BufWriter::new(&mut stdin);
            for input in inputs(seed, count, &torrents) {
                w.write_all(&(input.len() as u32).to_le_bytes())
                    .expect("write");
                w.write_all(&input).expect("write");
            }
            w.flush().expect("flush");
        }
    });
    let reader = BufReader::new(child.stdout.take().expect("stdout"));
    let mut mismatches = 0usize;
    let mut seen = 0usize;
    let mut accepted = 0usize;
    for (line, input) in reader.lines().zip(inputs(seed, count, &torrents)) {
        let theirs = line.expect("harness output");
        let mine = ours(&input);
        seen += 1;
        if theirs == "ok" {
            accepted += 1;
        }
        if theirs != mine {
            mismatches += 1;
            if mismatches <= 10 {
                eprintln!(
                    "MISMATCH on {:?}: libtorrent {theirs}, ours {mine}",
                    String::from_utf8_lossy(&input[..input.len().min(200)])
                );
            }
        }
    }
    feed.join().expect("feeder");
    let _ = child.wait();
    println!(
        "{seen} inputs ({accepted} accepted by libtorrent), {mismatches} disagreements on verdict, kind or offset"
    );
    if seen != count || mismatches > 0 {
        std::process::exit(1);
    }
}

/// The `count` inputs for `seed`, the same sequence every time.
fn inputs(seed: u64, count: usize, torrents: &[Vec<u8>]) -> impl Iterator<Item = Vec<u8>> + '_ {
    let mut rng = Rng::xorshift64(seed | 1);
    (0..count).map(move |i| next_input(i, &mut rng, torrents))
}

fn next_input(i: usize, rng: &mut Rng, torrents: &[Vec<u8>]) -> Vec<u8> {
    match i % 5 {
        0 => random_bytes(rng),
        1 => {
            let mut e = Encoder::new();
            random_value(rng, &mut e, 0);
            e.finish().expect("balanced")
        }
        2 => {
            let mut e = Encoder::new();
            random_value(rng, &mut e, 0);
            mutate(rng, e.finish().expect("balanced"))
        }
        3 => {
            let torrent = rng.pick(torrents).clone();
            mutate(rng, torrent)
        }
        _ => edge_cases(rng),
    }
}
