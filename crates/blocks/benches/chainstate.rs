//! Chainstate benchmark: the UTXO set from block files, `seekless blocks
//! utxo` (through the library: scan, connect, snapshot) against
//! blocks_iterator 3.0 (its in-memory UTXO map resolving every input's
//! previous output), side by side in one run on the same files.
//!
//! The files are a mainnet-shaped chain (`generate::mainnet`: block sizes,
//! transactions, inputs, outputs, script types and the age of what is spent
//! as mainnet's; XORed, out of order, 128 MiB files, stale forks), written
//! once under `bench-data/chainstate` (git-ignored) or
//! `$SEEKLESS_BENCH_DATA/chainstate`.
//!
//! blocks_iterator stops `max_reorg` (6) blocks short of the tip by design,
//! so ours runs to the height it reached (`--height`). Before any timing,
//! both must agree on the UTXO count and total amount, and with the
//! generator's own count. Each tool runs in a child process (this program
//! again), so its peak RSS is its own; the files are evicted from the page
//! cache before each run (`posix_fadvise(DONTNEED)`, cold).
//!
//! rusty-blockparser is not measured: it starts from Core's LevelDB block
//! index (`blocks/index`), which generated files do not have.
//!
//! `-- --txindex` measures `blocks txindex` and cold lookups on the same
//! chain instead (`chainstate/txindex.rs`).
//!
//! Run: `cargo bench -p seekless-blocks --bench chainstate`. Environment:
//! `SEEKLESS_CHAINSTATE_BLOCKS` (best-chain blocks, default 3,000: about
//! 1.5 GB), `SEEKLESS_CHAINSTATE_TX_SCALE` (factor on transactions a block,
//! default 1), `SEEKLESS_CHAINSTATE_KEEP` (share of outputs never spent,
//! default 0.12), `SEEKLESS_CHAINSTATE_MEMORY` (bytes: ours in `DiskCoins`
//! under that budget, as `blocks utxo --memory`; unset, `MemoryCoins`),
//! `SEEKLESS_BENCH_RUNS` (default 3), `SEEKLESS_BENCH_DATA`.

#[path = "chainstate/txindex.rs"]
mod txindex;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use seekless_blocks::generate::mainnet::{MainnetShape, write_mainnet_chain};
use seekless_blocks::{
    Chain, CoinStore, DiskCoins, MemoryCoins, ScanOptions, connect, is_unspendable,
    list_block_files, scan, write_snapshot,
};
use seekless_testkit::measure::{Sample, drop_cache, median_sample as median, time};

fn env<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn peak_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

/// What a child reports: height, coins, amount, peak RSS, and its phases.
#[derive(Debug)]
struct Outcome {
    height: u32,
    coins: u64,
    amount: u128,
    peak_kb: u64,
    phases: String,
}

/// Child: the UTXO set at `height` with the library, as `blocks utxo
/// --height` builds it, written as a snapshot: in `MemoryCoins`, or with
/// `SEEKLESS_CHAINSTATE_MEMORY` set (bytes) in `DiskCoins` under that
/// budget, its files beside the snapshot (as `blocks utxo --memory`).
fn child_ours(dir: &Path, height: u32, snapshot: &Path) {
    let start = Instant::now();
    let files = list_block_files(&[dir.to_path_buf()], None).expect("list");
    let mut output = scan(files, &ScanOptions::default(), &mut |_| {}).expect("scan");
    let chain = Chain::build(&mut output);
    let scanned = start.elapsed().as_secs_f64();
    let budget: Option<u64> = std::env::var("SEEKLESS_CHAINSTATE_MEMORY")
        .ok()
        .filter(|v| !v.is_empty())
        .map(|v| v.parse().expect("SEEKLESS_CHAINSTATE_MEMORY: bytes"));
    let store_dir = snapshot.with_extension("store");
    let mut coins: Box<dyn CoinStore> = match budget {
        None => Box::new(MemoryCoins::new()),
        Some(budget) => {
            let _ = std::fs::remove_dir_all(&store_dir);
            Box::new(DiskCoins::create(&store_dir, budget).expect("disk store"))
        }
    };
    let report = connect(
        &chain,
        &output.files,
        Some(height),
        &mut *coins,
        &mut |_| {},
    )
    .expect("connect");
    assert!(report.failure.is_none(), "{:?}", report.failure);
    let connected = start.elapsed().as_secs_f64();
    let stats = write_snapshot(&*coins, chain.network(), report.hash, snapshot, &mut |_| {})
        .expect("snapshot");
    let written = start.elapsed().as_secs_f64();
    assert_eq!(stats.coins, coins.len());
    drop(coins);
    let _ = std::fs::remove_dir_all(&store_dir);
    println!(
        "{} {} {} {} scan+chain {scanned:.2}s, connect {:.2}s, snapshot {:.2}s",
        report.height,
        stats.coins,
        stats.total_amount,
        peak_kb(),
        connected - scanned,
        written - connected
    );
}

/// Child: blocks_iterator as its README shows it, prevouts resolved from
/// its in-memory UTXO map; the set's count and amount kept as it goes.
fn child_iter(dir: &Path) {
    use blocks_iterator::bitcoin::Network;
    let config = blocks_iterator::Config::new(dir, Network::Regtest);
    let (mut coins, mut amount, mut height) = (0i64, 0i128, 0);
    for block in blocks_iterator::iter(config) {
        height = block.height();
        if height == 0 {
            continue; // Core never adds the genesis coinbase.
        }
        let prevouts = block.outpoint_values();
        for tx in &block.block().txdata {
            for out in &tx.output {
                if !is_unspendable(out.script_pubkey.as_bytes()) {
                    coins += 1;
                    amount += out.value.to_sat() as i128;
                }
            }
            if tx.is_coinbase() {
                continue;
            }
            for input in &tx.input {
                let prev = prevouts
                    .get(&input.previous_output)
                    .expect("blocks_iterator resolves every prevout");
                coins -= 1;
                amount -= prev.value.to_sat() as i128;
            }
        }
    }
    println!(
        "{height} {coins} {amount} {} iterate+resolve (one pipeline)",
        peak_kb()
    );
}

fn run_child(args: &[&str]) -> (Sample, Outcome) {
    let exe = std::env::current_exe().expect("own path");
    let (sample, out) = time(|| Command::new(exe).args(args).output().expect("child"));
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let mut words = text.split_whitespace();
    let mut next = || words.next().expect("a field").to_string();
    let outcome = Outcome {
        height: next().parse().expect("height"),
        coins: next().parse().expect("coins"),
        amount: next().parse().expect("amount"),
        peak_kb: next().parse().expect("peak"),
        phases: text.splitn(5, ' ').nth(4).unwrap_or("").trim().to_string(),
    };
    (sample, outcome)
}

fn evict(dir: &Path) {
    for entry in std::fs::read_dir(dir).expect("list") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "dat") {
            drop_cache(&path);
        }
    }
}

/// The chain for `shape`, generated unless a complete one is there.
fn chain_dir(root: &Path, shape: &MainnetShape) -> (PathBuf, String) {
    let dir = root.join(format!(
        "mainnet-{}-x{}-keep{}",
        shape.blocks, shape.tx_scale, shape.keep
    ));
    let marker = dir.join("complete");
    if let Ok(summary) = std::fs::read_to_string(&marker) {
        return (dir, summary);
    }
    let _ = std::fs::remove_dir_all(&dir);
    let (d, chain) = time(|| {
        write_mainnet_chain(shape, &dir, &mut |h| {
            if h % 500 == 0 {
                eprint!("\rgenerating: block {h} of {}", shape.blocks);
            }
        })
        .expect("generate")
    });
    eprintln!();
    let summary = format!(
        "{} {} {} generated: {} blocks ({} stale), {} files, {} bytes, {} txs, {} inputs, \
         {} UTXOs at the tip, in {:.1} s (cpu {:.1} s)",
        chain.height,
        chain.utxos,
        chain.amount,
        chain.height,
        chain.stale,
        chain.files,
        chain.bytes,
        chain.transactions,
        chain.inputs,
        chain.utxos,
        d.secs(),
        d.cpu.as_secs_f64()
    );
    std::fs::write(&marker, &summary).expect("marker");
    (dir, summary)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--child-ours") => {
            let height = args[2].parse().expect("height");
            return child_ours(Path::new(&args[1]), height, Path::new(&args[3]));
        }
        Some("--child-iter") => return child_iter(Path::new(&args[1])),
        _ => {}
    }
    let shape = MainnetShape {
        blocks: env("SEEKLESS_CHAINSTATE_BLOCKS", 3_000),
        tx_scale: env("SEEKLESS_CHAINSTATE_TX_SCALE", 1.0),
        keep: env("SEEKLESS_CHAINSTATE_KEEP", 0.12),
        ..MainnetShape::default()
    };
    let runs: usize = env("SEEKLESS_BENCH_RUNS", 3);
    let root = std::env::var_os("SEEKLESS_BENCH_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench-data"))
        .join("chainstate");
    std::fs::create_dir_all(&root).expect("bench data dir");
    let (dir, summary) = chain_dir(&root, &shape);
    println!("== {}", summary.splitn(4, ' ').nth(3).unwrap_or(""));
    if args.iter().any(|a| a == "--txindex") {
        return txindex::run(&root, &dir);
    }
    let files = list_block_files(std::slice::from_ref(&dir), None).expect("list");
    let bytes: u64 = files.iter().map(|f| f.len).sum();
    let snapshot = root.join("utxo.snapshot");
    let dir_arg = dir.display().to_string();
    let snap_arg = snapshot.display().to_string();

    // Same answer first: blocks_iterator's height, then ours to it.
    let (_, iter) = run_child(&["--child-iter", &dir_arg]);
    let height = iter.height.to_string();
    let ours_args = ["--child-ours", &dir_arg, &height, &snap_arg];
    let (_, ours) = run_child(&ours_args);
    println!(
        "same set at height {}: ours {} coins, {} sat; blocks_iterator {} coins, {} sat",
        iter.height, ours.coins, ours.amount, iter.coins, iter.amount
    );
    assert_eq!(
        (ours.height, ours.coins, ours.amount),
        (iter.height, iter.coins, iter.amount)
    );

    let mut samples = [Vec::new(), Vec::new()];
    let mut peaks = [Vec::new(), Vec::new()];
    let mut phases = [String::new(), String::new()];
    for _ in 0..runs {
        for (i, args) in [&ours_args[..], &["--child-iter", &dir_arg][..]]
            .into_iter()
            .enumerate()
        {
            evict(&dir);
            let (sample, outcome) = run_child(args);
            assert_eq!(outcome.coins, ours.coins);
            samples[i].push(sample);
            peaks[i].push(outcome.peak_kb);
            phases[i] = outcome.phases;
        }
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "== UTXO set at height {height} ({} coins) from {bytes} bytes in {} files, cold, \
         median of {runs}; load average {}",
        ours.coins,
        files.len(),
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    let mut walls = Vec::new();
    for (i, name) in ["seekless blocks utxo", "blocks_iterator 3.0"]
        .iter()
        .enumerate()
    {
        let s = median(std::mem::take(&mut samples[i]));
        let peak = *peaks[i].iter().max().expect("a run");
        println!(
            "{name:22} {:8.2} s (cpu {:7.2} s) {:7.1} MB/s  peak RSS {:7.1} MiB  ({})",
            s.secs(),
            s.cpu.as_secs_f64(),
            bytes as f64 / s.secs() / 1e6,
            peak as f64 / 1024.0,
            phases[i]
        );
        walls.push((s.secs(), peak));
    }
    println!(
        "ratios: blocks_iterator / ours: time {:.2}x, peak RSS {:.2}x",
        walls[1].0 / walls[0].0,
        walls[1].1 as f64 / walls[0].1 as f64
    );
}
