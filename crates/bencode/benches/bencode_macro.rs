//! Macro benchmark: full decodes of the same inputs by our decoder (fresh and
//! reused token buffers), libtorrent 2.0's `bdecode` (through the C++ harness
//! in `benches/libtorrent/`, when `SEEKLESS_LT_HARNESS` names its binary),
//! bendy, serde_bencode and lava_torrent. Prints the median ns per parse and
//! libtorrent's time divided by ours.
//!
//! Run it with `crates/bencode/benches/run_macro.sh`, which builds the
//! harness and passes it in. `SEEKLESS_BENCH_MS` sets the time per input and
//! decoder (default 1000 ms).

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use seekless_bencode::{Encoder, Parser, decode};

const BATCH: usize = 200;

/// Median ns per call of `f` over batches of `BATCH` calls for about `budget`.
fn measure(budget: Duration, mut f: impl FnMut() -> usize) -> f64 {
    let mut samples = Vec::new();
    let deadline = Instant::now() + budget;
    let mut sink = 0usize;
    while Instant::now() < deadline || samples.len() < 5 {
        let t0 = Instant::now();
        for _ in 0..BATCH {
            sink = sink.wrapping_add(f());
        }
        samples.push(t0.elapsed().as_nanos() as f64 / BATCH as f64);
    }
    black_box(sink);
    samples.sort_by(|a, b| a.total_cmp(b));
    samples[samples.len() / 2]
}

fn pseudo_random(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e3779b97f4a7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// A single-file torrent of about 500 bytes (17 pieces).
fn single_file_torrent() -> Vec<u8> {
    let mut e = Encoder::new();
    e.dict()
        .key("announce")
        .str("http://tracker.example.org:6969/announce");
    e.key("created by").str("mktorrent 1.1");
    e.key("creation date").int(1_700_000_000);
    e.key("info").dict();
    e.key("length").int(4_456_448);
    e.key("name").str("debian-12.2.0-amd64-netinst.iso.sig");
    e.key("piece length").int(262_144);
    e.key("pieces").bytes(&pseudo_random(17 * 20, 1));
    e.end().end();
    e.finish().expect("balanced")
}

/// A DHT `get_peers` response (BEP 5) with 8 compact nodes and a token.
fn dht_message() -> Vec<u8> {
    let mut e = Encoder::new();
    e.dict().key("ip").bytes(&pseudo_random(6, 2));
    e.key("r").dict();
    e.key("id").bytes(&pseudo_random(20, 3));
    e.key("nodes").bytes(&pseudo_random(8 * 26, 4));
    e.key("token").bytes(&pseudo_random(8, 5));
    e.key("values").list();
    for i in 0..4 {
        e.bytes(&pseudo_random(6, 10 + i));
    }
    e.end().end();
    e.key("t").bytes(b"aa");
    e.key("v").bytes(b"LT\x02\x00");
    e.key("y").str("r");
    e.end();
    e.finish().expect("balanced")
}

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

fn libtorrent_times(harness: &str, budget_ms: u64, files: &[PathBuf]) -> Vec<Option<f64>> {
    let out = Command::new(harness)
        .arg("bench")
        .arg(budget_ms.to_string())
        .args(files)
        .output();
    let Ok(out) = out else {
        return vec![None; files.len()];
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let mut times = vec![None; files.len()];
    for line in text.lines() {
        let mut parts = line.split('\t');
        let (Some(path), Some(ns)) = (parts.next(), parts.next()) else {
            continue;
        };
        if let Some(i) = files.iter().position(|f| f.to_str() == Some(path)) {
            times[i] = ns.parse().ok();
        }
    }
    times
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` passes nothing
    // useful either: a quick mode keeps both cheap when not run by the script.
    let budget_ms: u64 = std::env::var("SEEKLESS_BENCH_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let budget = Duration::from_millis(budget_ms);
    let tmp = seekless_testkit::TempDir::new("bencode-bench");
    // Real-world-shaped inputs: a 500-byte single-file torrent, a ~5 KB
    // multi-file one, ~125 KB with ~11,000 tokens (many pad files), a
    // large-pieces hybrid (~90 KB, few tokens), a DHT message.
    let mut inputs: Vec<(String, PathBuf)> = Vec::new();
    for name in [
        "single-file.torrent",
        "base-v1.torrent",
        "many-pad-files.torrent",
        "v2_hybrid.torrent",
        "dht-get-peers.bin",
    ] {
        let synthetic = match name {
            "single-file.torrent" => Some(single_file_torrent()),
            "dht-get-peers.bin" => Some(dht_message()),
            _ => None,
        };
        let path = match synthetic {
            Some(bytes) => {
                let path = tmp.join(name);
                std::fs::write(&path, bytes).expect("write input");
                path
            }
            None => data_dir().join(name),
        };
        inputs.push((name.to_string(), path));
    }
    let files: Vec<PathBuf> = inputs.iter().map(|(_, p)| p.clone()).collect();
    let datas: Vec<Vec<u8>> = files
        .iter()
        .map(|p| std::fs::read(p).expect("read input"))
        .collect();

    let harness = std::env::var("SEEKLESS_LT_HARNESS").ok();

    println!(
        "{:<24} {:>8} {:>7} {:>10} {:>10} {:>10} {:>9} {:>10} {:>10} {:>8} {:>8}",
        "input",
        "bytes",
        "tokens",
        "ours-reuse",
        "ours-fresh",
        "libtorrent",
        "bendy",
        "serde_benc",
        "lava",
        "lt/reuse",
        "lt/fresh"
    );
    // Every decoder runs in each of ROUNDS rounds, one after the other, so
    // that all of them see the same machine load; each cell is the median of
    // its rounds, and each ratio the median of the per-round ratios.
    const ROUNDS: usize = 5;
    let round_budget = budget / ROUNDS as u32;
    let mut parser = Parser::new();
    for ((name, path), data) in inputs.iter().zip(&datas) {
        let tokens = decode(data).expect("valid input").token_count();
        let mut cells: [Vec<f64>; 6] = Default::default();
        let mut ratios: [Vec<f64>; 2] = Default::default();
        for _ in 0..ROUNDS {
            let lt = harness.as_deref().and_then(|h| {
                libtorrent_times(
                    h,
                    round_budget.as_millis() as u64,
                    std::slice::from_ref(path),
                )[0]
            });
            let reuse = measure(round_budget, || {
                let root = parser.parse(black_box(data)).expect("valid");
                root.offset()
            });
            let fresh = measure(round_budget, || {
                let doc = decode(black_box(data)).expect("valid");
                doc.token_count()
            });
            let bendy = measure(round_budget, || {
                use bendy::decoding::FromBencode;
                match bendy::value::Value::from_bencode(black_box(data)) {
                    Ok(_) => 1,
                    Err(_) => 0,
                }
            });
            let serde_b = measure(round_budget, || {
                match serde_bencode::from_bytes::<serde_bencode::value::Value>(black_box(data)) {
                    Ok(_) => 1,
                    Err(_) => 0,
                }
            });
            let lava = measure(
                round_budget,
                || match lava_torrent::bencode::BencodeElem::from_bytes(black_box(data)) {
                    Ok(v) => v.len(),
                    Err(_) => 0,
                },
            );
            for (cell, v) in
                cells
                    .iter_mut()
                    .zip([reuse, fresh, lt.unwrap_or(f64::NAN), bendy, serde_b, lava])
            {
                cell.push(v);
            }
            if let Some(lt) = lt {
                ratios[0].push(lt / reuse);
                ratios[1].push(lt / fresh);
            }
        }
        let median = |v: &mut Vec<f64>| -> Option<f64> {
            v.retain(|x| !x.is_nan());
            v.sort_by(|a, b| a.total_cmp(b));
            (!v.is_empty()).then(|| v[v.len() / 2])
        };
        let m: Vec<Option<f64>> = cells.iter_mut().map(median).collect();
        let r: Vec<Option<f64>> = ratios.iter_mut().map(median).collect();
        let fmt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.0}"));
        let ratio = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}x"));
        println!(
            "{:<24} {:>8} {:>7} {:>10} {:>10} {:>10} {:>9} {:>10} {:>10} {:>8} {:>8}",
            name,
            data.len(),
            tokens,
            fmt(m[0]),
            fmt(m[1]),
            fmt(m[2]),
            fmt(m[3]),
            fmt(m[4]),
            fmt(m[5]),
            ratio(r[0]),
            ratio(r[1]),
        );
    }
}
