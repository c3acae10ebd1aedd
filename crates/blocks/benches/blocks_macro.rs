//! Macro benchmark of `seekless blocks`, with its peers in the same run.
//!
//! 1. Core's `bench/load_external.cpp` layout: block 413567 written 134 times
//!    into one file (133,985,930 bytes). Our header scan, warm and cold
//!    (`posix_fadvise(DONTNEED)` first), with and without the reader thread,
//!    against `cat FILE > /dev/null` warm and cold. Core's published
//!    LoadExternalBlockFile figure is 10.4–29 ms per pass (warm).
//! 2. A synthetic out-of-order regtest chain (default 200,000 blocks,
//!    realistic size mix, many files): blocks/s, bytes/s, warm and cold, one
//!    thread against one a core (`ScanOptions::threads`, in turn), headers
//!    mapped, every byte read, and `--verify`; `cat` and `dd` of the same
//!    files; peak memory per block measured in a child process.
//! 3. `--verify` throughput against `sha256sum` of the same bytes.
//!
//! Run: `cargo bench -p seekless-blocks --bench blocks_macro`. Data goes to
//! `bench-data/blocks` at the repository root (git-ignored), or
//! `$SEEKLESS_BENCH_DATA`; `SEEKLESS_BLOCKS_BENCH_BLOCKS` sets the chain size.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use seekless_blocks::generate::{self, ChainBuilder, SizeMix};
use seekless_blocks::{Chain, Network, ScanOptions, XorKey, list_block_files, scan};
use seekless_testkit::measure::{Sample, drop_cache, median_sample as median, time};

const BLOCK_413567: &[u8] = include_bytes!("../tests/data/block413567.raw");
const CORE_COPIES: usize = 134;

fn drop_dir_cache(dir: &Path) {
    for entry in std::fs::read_dir(dir).expect("list") {
        drop_cache(&entry.expect("entry").path());
    }
}

fn scan_paths(paths: &[PathBuf], options: &ScanOptions) -> (u64, usize) {
    let files = list_block_files(paths, None).expect("list");
    let mut output = scan(files, options, &mut |_| {}).expect("scan");
    let chain = Chain::build(&mut output);
    (output.bytes, chain.len())
}

fn cat(paths: &[&Path]) -> Sample {
    let args: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let script = format!("cat {} > /dev/null", args.join(" "));
    let (sample, status) = time(|| Command::new("sh").arg("-c").arg(&script).status());
    assert!(status.expect("run cat").success());
    sample
}

/// `dd` of each file in turn, 4 MiB a read.
fn dd(paths: &[&Path]) -> Sample {
    let args: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let script = format!(
        "for f in {}; do dd if=\"$f\" of=/dev/null bs=4M status=none; done",
        args.join(" ")
    );
    let (sample, status) = time(|| Command::new("sh").arg("-c").arg(&script).status());
    assert!(status.expect("run dd").success());
    sample
}

fn sha256sum(paths: &[&Path]) -> Sample {
    let (sample, status) = time(|| {
        Command::new("sha256sum")
            .args(paths)
            .stdout(std::process::Stdio::null())
            .status()
    });
    assert!(status.expect("run sha256sum").success());
    sample
}

/// `openssl dgst -sha256` (SHA-NI assembly): the machine's hashing limit, if installed.
fn openssl_sha256(path: &Path) -> Option<Sample> {
    let (sample, status) = time(|| {
        Command::new("openssl")
            .args(["dgst", "-sha256"])
            .arg(path)
            .stdout(std::process::Stdio::null())
            .status()
    });
    status.ok()?.success().then_some(sample)
}

fn ms(d: Sample) -> f64 {
    d.wall.as_secs_f64() * 1e3
}

fn cpu_ms(d: Sample) -> f64 {
    d.cpu.as_secs_f64() * 1e3
}

fn mbps(bytes: u64, d: Sample) -> f64 {
    bytes as f64 / d.wall.as_secs_f64() / 1e6
}

fn status_kb(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("status field")
}

/// Child mode: scan PATHS, print blocks and the peak-RSS growth.
fn child(paths: &[PathBuf]) {
    // Reset the high-water mark so only the scan counts.
    std::fs::write("/proc/self/clear_refs", "5").expect("reset peak RSS");
    let before = status_kb("VmRSS:");
    // SEEKLESS_BLOCKS_READ=1 measures the read path instead of the mapped one.
    let map_files = std::env::var_os("SEEKLESS_BLOCKS_READ").is_none();
    let defaults = ScanOptions::default();
    let threads = std::env::var("SEEKLESS_BLOCKS_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(defaults.threads);
    let (bytes, blocks) = scan_paths(
        paths,
        &ScanOptions {
            map_files,
            threads,
            ..defaults
        },
    );
    let peak = status_kb("VmHWM:");
    if std::env::var_os("SEEKLESS_BLOCKS_DEBUG_MEM").is_some() {
        eprintln!(
            "before {before} kB, peak {peak} kB, now anon {} kB file {} kB",
            status_kb("RssAnon:"),
            status_kb("RssFile:")
        );
    }
    println!("{blocks} {bytes} {}", (peak.saturating_sub(before)) * 1024);
}

fn run_child(paths: &[PathBuf], read: bool) -> (u64, u64, u64) {
    let exe = std::env::current_exe().expect("own path");
    let mut command = Command::new(exe);
    if read {
        command.env("SEEKLESS_BLOCKS_READ", "1");
    }
    let out = command
        .arg("--child-scan")
        .args(paths)
        .output()
        .expect("child");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let v: Vec<u64> = text
        .split_whitespace()
        .map(|x| x.parse().expect("number"))
        .collect();
    (v[0], v[1], v[2])
}

fn data_dir() -> PathBuf {
    std::env::var_os("SEEKLESS_BENCH_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench-data/blocks"))
}

fn write_synced(path: &Path, bytes: &[u8]) {
    use std::io::Write;
    let mut file = File::create(path).expect("create");
    file.write_all(bytes).expect("write");
    file.sync_all().expect("sync");
}

fn load_external(dir: &Path, runs: usize) {
    let dir = dir.join("load_external");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let path = dir.join("blk00000.dat");
    let record = generate::record(Network::Main, BLOCK_413567);
    let expected = (record.len() * CORE_COPIES) as u64;
    if std::fs::metadata(&path).map(|m| m.len()).ok() != Some(expected) {
        write_synced(&path, &record.repeat(CORE_COPIES));
    }
    assert_eq!(expected, 133_985_930);
    // The same file obfuscated, as Core 28+ writes it.
    let xor_dir = dir.with_file_name("load_external_xor");
    std::fs::create_dir_all(&xor_dir).expect("mkdir");
    let xor_path = xor_dir.join("blk00000.dat");
    let key = XorKey([0x9e, 0x12, 0x7c, 0x04, 0xd1, 0x5a, 0xe3, 0x38]);
    if std::fs::metadata(&xor_path).map(|m| m.len()).ok() != Some(expected) {
        let mut bytes = record.repeat(CORE_COPIES);
        key.apply(&mut bytes, 0);
        write_synced(&xor_path, &bytes);
        write_synced(&xor_dir.join("xor.dat"), &key.0);
    }
    let paths = vec![path.clone()];
    let xor_paths = vec![xor_path.clone()];
    let mapped = ScanOptions {
        network: Some(Network::Main),
        ..ScanOptions::default()
    };
    let threaded = ScanOptions {
        map_files: false,
        ..mapped.clone()
    };
    let inline = ScanOptions {
        read_ahead: false,
        ..threaded.clone()
    };
    let modes = [
        ("mapped, headers only (default)", &mapped, &paths),
        ("same, XOR-obfuscated file", &mapped, &xor_paths),
        ("read all, reader thread", &threaded, &paths),
        ("read all, inline reads", &inline, &paths),
    ];
    println!(
        "== load_external layout: block 413567 x {CORE_COPIES} = {expected} bytes, {runs} runs, medians"
    );
    let mut warm = vec![Vec::new(); modes.len()];
    let mut cold = vec![Vec::new(); modes.len()];
    let mut cat_warm = Vec::new();
    let mut cat_cold = Vec::new();
    for (_, options, paths) in modes {
        let _ = scan_paths(paths, options); // warm up
    }
    for _ in 0..runs {
        for (i, (_, options, paths)) in modes.iter().enumerate() {
            let (d, (bytes, blocks)) = time(|| scan_paths(paths, options));
            assert_eq!((bytes, blocks), (expected, 1));
            warm[i].push(d);
        }
        cat_warm.push(cat(&[&path]));
    }
    for _ in 0..runs {
        for (i, (_, options, paths)) in modes.iter().enumerate() {
            drop_cache(&paths[0]);
            cold[i].push(time(|| scan_paths(paths, options)).0);
        }
        drop_cache(&path);
        cat_cold.push(cat(&[&path]));
    }
    let warm: Vec<Sample> = warm.into_iter().map(median).collect();
    let cold: Vec<Sample> = cold.into_iter().map(median).collect();
    let (cw, cc) = (median(cat_warm), median(cat_cold));
    let row = |label: String, s: Sample| {
        println!(
            "{label} {:8.2} ms  {:8.0} MB/s  (cpu {:8.2} ms)",
            ms(s),
            mbps(expected, s),
            cpu_ms(s)
        )
    };
    // One row per mode, then `cat`'s, for the warm and then the cold passes.
    for (cache, scans, cat) in [("warm", &warm, cw), ("cold", &cold, cc)] {
        for ((name, _, _), &s) in modes.iter().zip(scans) {
            row(format!("scan {cache}, {name:32}"), s);
        }
        row(format!("cat {cache} {:40}", ""), cat);
    }
    println!("Core LoadExternalBlockFile (published, warm): 10.4-29 ms per pass");
    let core = [Duration::from_micros(10_400), Duration::from_micros(29_000)];
    for (i, (name, _, _)) in modes.iter().enumerate() {
        println!(
            "ratios, {name}: Core/ours warm {:.1}x-{:.1}x; cold ours/cat {:.2}; warm ours/cat {:.2}",
            core[0].as_secs_f64() / warm[i].secs(),
            core[1].as_secs_f64() / warm[i].secs(),
            cold[i].secs() / cc.secs(),
            warm[i].secs() / cw.secs()
        );
    }

    // --verify against sha256sum of the same bytes (warm).
    let verify = ScanOptions {
        verify: true,
        ..threaded.clone()
    };
    let _ = scan_paths(&paths, &verify);
    let mut v = Vec::new();
    let mut s = Vec::new();
    for _ in 0..runs {
        v.push(time(|| scan_paths(&paths, &verify)).0);
        s.push(sha256sum(&[&path]));
    }
    let openssl: Vec<Sample> = (0..runs).filter_map(|_| openssl_sha256(&path)).collect();
    let (v, s) = (median(v), median(s));
    // The hashing limit of this machine: one SHA-256 pass in memory (sha2, SHA-NI).
    let bytes = std::fs::read(&path).expect("read");
    let mut h = Vec::new();
    for _ in 0..runs {
        h.push(time(|| std::hint::black_box(<sha2::Sha256 as sha2::Digest>::digest(&bytes))).0);
    }
    let h = median(h);
    println!("== --verify (warm): every transaction parsed, txids and merkle roots");
    println!(
        "scan --verify               {:8.2} ms  {:8.0} MB/s  (cpu {:8.2} ms)",
        ms(v),
        mbps(expected, v),
        cpu_ms(v)
    );
    println!(
        "sha256sum                   {:8.2} ms  {:8.0} MB/s  (cpu {:8.2} ms)",
        ms(s),
        mbps(expected, s),
        cpu_ms(s)
    );
    if !openssl.is_empty() {
        let o = median(openssl);
        println!(
            "openssl dgst -sha256        {:8.2} ms  {:8.0} MB/s  (cpu {:8.2} ms)",
            ms(o),
            mbps(expected, o),
            cpu_ms(o)
        );
    }
    println!(
        "sha2 in memory (one pass)   {:8.2} ms  {:8.0} MB/s  (cpu {:8.2} ms)",
        ms(h),
        mbps(expected, h),
        cpu_ms(h)
    );
    println!(
        "ratios: verify time / sha256sum time {:.2}; verify time / in-memory SHA-256 {:.2}",
        v.secs() / s.secs(),
        v.secs() / h.secs()
    );
}

fn synthetic(dir: &Path, blocks: usize, runs: usize) {
    let dir = dir.join(format!("chain-{blocks}"));
    let marker = dir.join("complete");
    if !marker.exists() {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("mkdir");
        let (d, ()) = time(|| {
            let mut builder = ChainBuilder::new(2026, SizeMix::Realistic);
            let tip = builder.extend_chain(0, blocks - 1 - blocks / 100);
            // About 1% stale blocks on short forks.
            while builder.blocks.len() < blocks {
                let from = builder.rng().range(1, tip as u64 - 1) as usize;
                builder.extend(from);
            }
            let mut by_height: Vec<usize> = (0..builder.blocks.len()).collect();
            by_height.sort_by_key(|&i| builder.blocks[i].height);
            // Headers-first download: up to 1024 blocks in flight.
            let order = generate::headers_first_order(by_height, 1024, &mut generate::Rng::new(9));
            // Plain files, so both the mapped and the read path can be timed
            // (obfuscated files always take the read path).
            let key = XorKey::default();
            let (files, _) = generate::layout_files(
                Network::Regtest,
                order.iter().map(|&i| builder.blocks[i].bytes.as_slice()),
                16 << 20,
                key,
            );
            for (n, bytes) in files.iter().enumerate() {
                write_synced(&dir.join(format!("blk{n:05}.dat")), bytes);
            }
        });
        println!("(generated {blocks} blocks in {:.1} s)", d.secs());
        write_synced(&marker, b"");
    }
    let paths = vec![dir.clone()];
    let files = list_block_files(&paths, None).expect("list");
    let bytes: u64 = files.iter().map(|f| f.len).sum();
    let file_paths: Vec<&Path> = files.iter().map(|f| f.path.as_path()).collect();
    let cores = ScanOptions::default().threads;
    let one = ScanOptions {
        threads: 1,
        ..ScanOptions::default()
    };
    let read = ScanOptions {
        map_files: false,
        ..one.clone()
    };
    let verify = ScanOptions {
        verify: true,
        ..one.clone()
    };
    let on_cores = |options: &ScanOptions| ScanOptions {
        threads: cores,
        ..options.clone()
    };
    let modes = [
        ("mapped (default)", one.clone(), on_cores(&one)),
        ("read all, reader thread", read.clone(), on_cores(&read)),
        ("verify", verify.clone(), on_cores(&verify)),
    ];
    println!(
        "== synthetic out-of-order chain: {blocks} blocks, {} files, {bytes} bytes (avg {} bytes/block), medians",
        files.len(),
        bytes / blocks as u64
    );
    let mut cat_warm = Vec::new();
    let mut cat_cold = Vec::new();
    let mut dd_cold = Vec::new();
    for _ in 0..runs.min(3) {
        cat_warm.push(cat(&file_paths));
        drop_dir_cache(&dir);
        cat_cold.push(cat(&file_paths));
        drop_dir_cache(&dir);
        dd_cold.push(dd(&file_paths));
    }
    let (cw, cc, dc) = (median(cat_warm), median(cat_cold), median(dd_cold));
    println!(
        "dd bs=4M cold {:8.1} ms {:7.0} MB/s (the disk's sequential speed)",
        ms(dc),
        mbps(bytes, dc)
    );
    // Linking the chain once scanned (its sort is what threads share).
    for options in [&one, &on_cores(&one)] {
        let build: Vec<Sample> = (0..runs)
            .map(|_| {
                let files = list_block_files(&paths, None).expect("list");
                let mut output = scan(files, options, &mut |_| {}).expect("scan");
                time(|| Chain::build(&mut output)).0
            })
            .collect();
        println!(
            "chain building alone, {} thr: {:.1} ms",
            options.threads,
            ms(median(build))
        );
    }
    for (name, single, multi) in &modes {
        // Both thread counts in turn, so machine noise hits them alike.
        let (mut warm, mut cold) = ([Vec::new(), Vec::new()], [Vec::new(), Vec::new()]);
        let _ = scan_paths(&paths, single);
        for run in 0..runs {
            for (i, options) in [single, multi].into_iter().enumerate() {
                let (d, (_, n)) = time(|| scan_paths(&paths, options));
                assert_eq!(n, blocks);
                warm[i].push(d);
                if run < 3 {
                    drop_dir_cache(&dir);
                    cold[i].push(time(|| scan_paths(&paths, options)).0);
                    // Read back in for the next warm run.
                    let _ = cat(&file_paths);
                }
            }
        }
        let [w1, wn] = warm.map(median);
        let [c1, cn] = cold.map(median);
        for (label, d1, dn, cat_d) in [("warm", w1, wn, cw), ("cold", c1, cn, cc)] {
            for (threads, d) in [(1, d1), (cores, dn)] {
                println!(
                    "scan+chain {label}, {name:24} {threads} thr {:8.1} ms (cpu {:8.1}) {:10.0} blocks/s \
                     {:7.0} MB/s | cat {label} {:8.1} ms, ratio {:.2}",
                    ms(d),
                    cpu_ms(d),
                    blocks as f64 / d.secs(),
                    mbps(bytes, d),
                    ms(cat_d),
                    d.secs() / cat_d.secs()
                );
            }
            println!(
                "  {label}, {name}: {cores} threads are {:.2}x one thread{}",
                d1.secs() / dn.secs(),
                if label == "cold" {
                    format!("; {:.2}x dd's time", dn.secs() / dc.secs())
                } else {
                    String::new()
                }
            );
        }
    }
    // Peak memory in a fresh process: the whole chain, and the first file
    // alone (fixed costs: read buffers, or the mapped pages of one file).
    for (name, read) in [("mapped", false), ("read all", true)] {
        let (n_all, _, peak_all) = run_child(&paths, read);
        let (n_one, _, peak_one) = run_child(&[files[0].path.clone()], read);
        println!(
            "peak RSS growth, {name:8}: {peak_all} bytes for {n_all} blocks = {:.1} bytes/block; \
             first file alone ({n_one} blocks) {peak_one} bytes; marginal {:.1} bytes/block",
            peak_all as f64 / n_all as f64,
            (peak_all as f64 - peak_one as f64) / (n_all - n_one) as f64
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--child-scan") {
        let paths: Vec<PathBuf> = args[1..].iter().map(PathBuf::from).collect();
        child(&paths);
        return;
    }
    let runs: usize = std::env::var("SEEKLESS_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7);
    let blocks: usize = std::env::var("SEEKLESS_BLOCKS_BENCH_BLOCKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    let dir = data_dir();
    std::fs::create_dir_all(&dir).expect("bench data dir");
    let which = std::env::var("SEEKLESS_BLOCKS_BENCH").unwrap_or_default();
    if which.is_empty() || which == "load_external" {
        load_external(&dir, runs);
    }
    if which.is_empty() || which == "synthetic" {
        synthetic(&dir, blocks, runs);
    }
}
