//! The pwned macro benchmark: seekless side by side with what users run
//! today, on the same generated HIBP-like corpus, in one run.
//!
//! ```text
//! cargo bench -p seekless-pwned --bench pwned_macro -- [--sizes 10000000,55000000]
//!     [--data DIR] [--peers] [--cold N] [--lookups-only]
//! cargo bench -p seekless-pwned --bench pwned_macro -- --generate N FILE
//! cargo bench -p seekless-pwned --bench pwned_macro -- --emit N [--sorted] | …
//! cargo bench -p seekless-pwned --bench pwned_macro -- --render [ROUNDS]
//! ```
//!
//! `--emit` writes N HIBP-like lines to standard output as it makes them,
//! in random order or (`--sorted`) in hash order, in constant memory: the
//! input of the billion-hash runs (`… | seekless pwned prepare - -o X`).
//!
//! For each size it generates (once, cached in DIR, default `bench-data/`)
//! a corpus of N uniform random SHA-1 hashes with Zipf-like counts
//! (count = ⌊1/U⌋, so half the hashes are seen once), ordered by count as
//! HIBP publishes it, uppercase, CRLF. Then it measures:
//! - prepare: seekless (median of 5) against `LC_ALL=C sort -S 50%
//!   --parallel=2` of the same file; okon's CLI in turn with ours when the
//!   environment variable `OKON_CLI` gives its path (okon is in no package
//!   registry: build it from github.com/stryku/okon with
//!   `cmake -DCMAKE_BUILD_TYPE=Release -DOKON_WITH_CLI=ON`); with `--peers`
//!   PyPI pwnedpass's index build (`rewrite`, which needs the sorted file);
//! - size: bytes per hash of each index, and of a compact one
//!   (`--key-bits 64`);
//! - warm lookups: random members and non-members, batch, one thread;
//! - cold lookups (root, Linux): the index's pages dropped from the page
//!   cache before each lookup (directory resident), latency and bytes read
//!   from storage per lookup (`/proc/self/io`); with `--peers`, pwnedpass
//!   and pwnedpasswords-offline with their whole file dropped.
//!
//! `--render` measures rendering alone (`Index::write_range` into a reused
//! buffer, as `serve` answers identity) with each renderer the processor
//! has, in turn, ROUNDS rounds (default 7, the order reversed every other
//! round): SHA-1 and NTLM indexes of 4,096 ranges × 1,000 hashes (those of
//! `scripts/bench-pwned-serve.sh`), Zipf-like counts; CPU ns a line (each
//! round writes every range three times), the median round, and each
//! renderer's speed over the portable one's.

use std::cmp::Reverse;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use seekless_pwned::test_util::Words;
use seekless_pwned::{BuildOptions, Index, Input, Key, Kind, NoProgress, build};
use seekless_testkit::Rng;
use seekless_testkit::measure::{drop_cache, median, seconds};

/// The next hash of a corpus, and its count.
fn member(rng: &mut Rng) -> (Key, u32) {
    let key = Words {
        hi: rng.next_u64(),
        mid: rng.next_u64(),
        lo: rng.next_u64() as u32,
    }
    .key();
    let u = rng.unit();
    let count = (1.0 / u.max(1e-12)).min(50_000_000.0) as u32;
    (key, count.max(1))
}

fn members(n: usize) -> Vec<(Key, u32)> {
    let mut rng = Rng::xorshift64star(0x5EEC_1E55 ^ n as u64);
    (0..n).map(|_| member(&mut rng)).collect()
}

fn generate(n: usize, path: &Path) {
    // A relative path is taken from the package's folder, where cargo
    // runs benchmarks (as the default data folder is): say where it is.
    let shown = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    eprintln!("generating {n} hashes into {}", shown.display());
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).unwrap();
    }
    let mut all = members(n);
    all.sort_by_key(|&(_, c)| Reverse(c));
    seekless_testkit::write_via_temp(path, |tmp| {
        let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(tmp).unwrap());
        let mut line = Vec::with_capacity(64);
        for (key, count) in all {
            line.clear();
            key.write_hex(Kind::Sha1, &mut line);
            line.push(b':');
            line.extend_from_slice(count.to_string().as_bytes());
            line.extend_from_slice(b"\r\n");
            out.write_all(&line).unwrap();
        }
        out.flush().unwrap();
    });
}

/// Writes `n` lines to standard output: uniform random hashes with the
/// corpus's counts, in random order or, `sorted`, in increasing order (the
/// top 64 bits of hash `i` drawn from the `i`-th of `n` equal slices).
/// Lines are made in place in a large buffer (hex two digits a lookup, the
/// count without formatting machinery): the generator shares the cores
/// with the build it feeds, so its cost is kept small.
fn emit(n: u64, sorted: bool) {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    let pairs: [[u8; 2]; 256] = std::array::from_fn(|b| [DIGITS[b >> 4], DIGITS[b & 15]]);
    let mut rng = Rng::xorshift64star(0xE417 ^ n);
    let mut out = std::io::stdout().lock();
    let mut buf = vec![0u8; (1 << 20) + 64];
    let mut len = 0;
    let slice = u64::MAX / n.max(1);
    for i in 0..n {
        let (mut key, count) = member(&mut rng);
        if sorted {
            let mut words = Words::from(key);
            words.hi = i * slice + words.hi % slice.max(1);
            key = words.key();
        }
        let line = &mut buf[len..len + 64];
        let bytes = key.to_bytes();
        let (head, tail) = line[..40].split_at_mut(32);
        hex16(bytes[..16].try_into().unwrap(), head.try_into().unwrap());
        for (pair, &byte) in tail.chunks_exact_mut(2).zip(&bytes[16..]) {
            pair.copy_from_slice(&pairs[usize::from(byte)]);
        }
        line[40] = b':';
        let mut digits = [0u8; 10];
        let mut at = digits.len();
        let mut rest = count;
        loop {
            at -= 1;
            digits[at] = b'0' + (rest % 10) as u8;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        let end = 41 + digits.len() - at;
        line[41..end].copy_from_slice(&digits[at..]);
        line[end..end + 2].copy_from_slice(b"\r\n");
        len += end + 2;
        if len >= 1 << 20 {
            if out.write_all(&buf[..len]).is_err() {
                return;
            }
            len = 0;
        }
    }
    let _ = out.write_all(&buf[..len]);
    let _ = out.flush();
}

/// 16 bytes in uppercase hex, in SSE2 registers on x86-64.
fn hex16(bytes: &[u8; 16], out: &mut [u8; 32]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of x86-64; loads and stores are unaligned
        // and within `bytes` and `out`.
        unsafe {
            let v = _mm_loadu_si128(bytes.as_ptr().cast());
            let low = _mm_set1_epi8(0x0f);
            let hi = _mm_and_si128(_mm_srli_epi16(v, 4), low);
            let lo = _mm_and_si128(v, low);
            // '0' + x, and 7 more for a letter.
            let ascii = |x| {
                let letter = _mm_cmpgt_epi8(x, _mm_set1_epi8(9));
                _mm_add_epi8(
                    _mm_add_epi8(x, _mm_set1_epi8(b'0' as i8)),
                    _mm_and_si128(letter, _mm_set1_epi8(7)),
                )
            };
            let first = ascii(_mm_unpacklo_epi8(hi, lo));
            let second = ascii(_mm_unpackhi_epi8(hi, lo));
            _mm_storeu_si128(out.as_mut_ptr().cast(), first);
            _mm_storeu_si128(out.as_mut_ptr().add(16).cast(), second);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    for (pair, &byte) in out.chunks_exact_mut(2).zip(bytes) {
        pair.copy_from_slice(format!("{byte:02X}").as_bytes());
    }
}

/// Deletes the files of `dir` whose names start with `prefix`.
fn remove_prefixed(dir: &Path, prefix: &str) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if entry.file_name().to_string_lossy().starts_with(prefix) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

fn shell(cmd: &str) -> (f64, bool) {
    let (secs, status) = seconds(|| Command::new("sh").arg("-c").arg(cmd).status().unwrap());
    (secs, status.success())
}

fn read_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                l.strip_prefix("read_bytes: ")
                    .map(|v| v.trim().parse().unwrap_or(0))
            })
        })
        .unwrap_or(0)
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let mut sizes = vec![10_000_000usize, 55_000_000];
    let mut data = PathBuf::from("bench-data");
    let mut peers = false;
    let mut cold = 200usize;
    let mut lookups_only = false;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--generate" => {
                let n: usize = args[i + 1].parse().expect("N");
                generate(n, Path::new(&args[i + 2]));
                return;
            }
            "--render" => {
                let rounds = args.get(i + 1).and_then(|r| r.parse().ok()).unwrap_or(7);
                render(rounds);
                return;
            }
            "--emit" => {
                let n: u64 = args[i + 1].parse().expect("N");
                emit(n, args.iter().any(|a| a == "--sorted"));
                return;
            }
            "--sizes" => {
                sizes = args[i + 1]
                    .split(',')
                    .map(|s| s.parse().expect("size"))
                    .collect();
                i += 1;
            }
            "--data" => {
                data = PathBuf::from(&args[i + 1]);
                i += 1;
            }
            "--cold" => {
                cold = args[i + 1].parse().expect("count");
                i += 1;
            }
            "--peers" => peers = true,
            "--lookups-only" => lookups_only = true,
            _ => {}
        }
        i += 1;
    }
    // cargo bench runs us from the crate directory; put data at the workspace root.
    if data.is_relative() && Path::new("../../Cargo.lock").exists() {
        data = Path::new("../..").join(data);
    }
    std::fs::create_dir_all(&data).unwrap();
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_default();
    println!(
        "machine: {cpu}, {} cores",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    for n in sizes {
        run(n, &data, peers, cold, lookups_only);
    }
}

fn run(n: usize, data: &Path, peers: bool, cold: usize, lookups_only: bool) {
    let corpus = data.join(format!("hibp-{n}.txt"));
    if !corpus.exists() {
        generate(n, &corpus);
    }
    let text_bytes = std::fs::metadata(&corpus).unwrap().len();
    println!("\n== {n} hashes ({text_bytes} bytes of text, ordered by count, CRLF)");
    let index_path = data.join(format!("seekless-{n}.idx"));

    if lookups_only && index_path.exists() {
        lookups(n, &index_path, cold);
        return;
    }
    // Every contender starts with the corpus cached as a read from storage
    // leaves it: dropped from the page cache, then read whole. How the file
    // came into the cache matters to a reader that maps it. Written a few
    // KiB at a time (as the generator here, or a downloader, writes it),
    // the cache holds it in small pieces and mapping its 2.4 GB at 55M
    // costs ~0.2 s of the kernel's time; read back from the disk it is
    // held in 2 MiB pieces (Linux 6.16+ on ext4 at least), and mapping it
    // costs next to nothing. A file read before is also what a user
    // usually has.
    shell(&format!(
        "sync {0}; dd if={0} iflag=nocache count=0 status=none; cat {0} > /dev/null",
        corpus.display()
    ));
    let options = BuildOptions::default();
    // okon's CLI, built from its repository, when OKON_CLI names it: run in
    // turn with ours (ours, okon, ours, okon, …) on the same cached file.
    let okon_cli = std::env::var_os("OKON_CLI").map(PathBuf::from);
    let okon_out = data.join(format!("okon-{n}.okon"));
    // okon's `--wd` is a prefix: its work files are `okon-{n}-wd00` … `FF`
    // beside it.
    let wd_prefix = format!("okon-{n}-wd");
    let okon_wd = data.join(&wd_prefix);
    let remove_okon_work = || remove_prefixed(data, &wd_prefix);
    let prepare = |path: &Path, options: &BuildOptions| {
        seconds(|| {
            build(
                vec![Input::Path(corpus.clone())],
                path,
                options,
                &NoProgress,
            )
            .unwrap()
        })
    };
    let (mut ours, mut okon, mut okon_ok) = (Vec::new(), Vec::new(), true);
    let mut summary = None;
    // Five rounds: a build's kernel time moves with what memory the
    // machine has at hand (a huge page free, or to be made by compaction).
    const ROUNDS: usize = 5;
    // Neither contender pays for the other's writes: each starts once
    // the disk has taken what was written before it (untimed `sync`).
    // okon leaves its index and its work files (2.4 GB in all at 55M) in
    // the page cache to be written back; run into, that write-back took a
    // core and the disk from the next build of ours (55M: 1.30-2.23 s in
    // one run, where a build alone takes 1.32-1.37). Ours syncs its index
    // before it returns, inside its time. okon's work files are deleted
    // as soon as it is done, as temporary files are.
    for _ in 0..ROUNDS {
        shell("sync");
        let (secs, s) = prepare(&index_path, &options);
        ours.push(secs);
        summary = Some(s);
        if let Some(cli) = &okon_cli {
            shell("sync");
            let (secs, ok) = shell(&format!(
                "{} --prepare {} --wd {} --output {} > /dev/null",
                cli.display(),
                corpus.display(),
                okon_wd.display(),
                okon_out.display()
            ));
            okon.push(secs);
            okon_ok &= ok;
            remove_okon_work();
        }
    }
    let summary = summary.unwrap();
    let (fastest, slowest) = ours
        .iter()
        .fold((f64::MAX, 0f64), |(lo, hi), &s| (lo.min(s), hi.max(s)));
    let ours = median(ours);
    println!(
        "prepare  seekless            {ours:8.2} s  ({} threads, median of {ROUNDS}, {fastest:.2}-{slowest:.2}; {} hashes, {} bytes)",
        options.threads, summary.hashes, summary.bytes
    );
    match &okon_cli {
        Some(_) if okon_ok => {
            let okon = median(okon);
            println!(
                "prepare  okon (built here)   {okon:8.2} s  (okon-cli --prepare, median of {ROUNDS}, in turn with ours; ratio {:.2}x)",
                okon / ours
            );
            let size = std::fs::metadata(&okon_out).map_or(0, |m| m.len());
            println!(
                "size     okon (built here)   {:8.2} B/hash (no counts)",
                size as f64 / n as f64
            );
            let _ = std::fs::remove_file(&okon_out);
        }
        Some(cli) => println!("prepare  okon                  failed ({})", cli.display()),
        None => println!(
            "prepare  okon                  not run: set OKON_CLI to okon-cli's path (github.com/stryku/okon, cmake -DCMAKE_BUILD_TYPE=Release -DOKON_WITH_CLI=ON)"
        ),
    }
    // A compact index: the top 64 bits of each hash, counts exact.
    let compact_path = data.join(format!("seekless-{n}-64.idx"));
    let compact = {
        let mut o = options.clone();
        o.key_bits = Some(64);
        o
    };
    let (compact_secs, compact_summary) = prepare(&compact_path, &compact);
    let compact_index = Index::open(&compact_path).unwrap();
    for (key, count) in members(n).iter().step_by(n / 1000) {
        assert!(compact_index.count(*key).unwrap() >= u64::from(*count));
    }
    drop(compact_index);
    let _ = std::fs::remove_file(&compact_path);
    let sorted = data.join(format!("sorted-{n}.txt"));
    let (sort_secs, ok) = shell(&format!(
        "LC_ALL=C sort -S 50% --parallel=2 -o {} {}",
        sorted.display(),
        corpus.display()
    ));
    assert!(ok, "sort failed");
    println!(
        "prepare  GNU sort            {sort_secs:8.2} s  (sort -S 50% --parallel=2; ratio {:.1}x)",
        sort_secs / ours
    );
    let ours_bph = summary.bytes_per_hash();
    println!("size     seekless            {ours_bph:8.2} B/hash (exact counts)");
    println!(
        "size     seekless --key-bits 64 {:5.2} B/hash (exact counts; false positives {:.1e} a lookup; built in {compact_secs:.2} s)",
        compact_summary.bytes_per_hash(),
        compact_summary.false_positive_rate()
    );
    println!("size     okon (published)       22.30 B/hash (no counts)");

    let pwnedpass_file = data.join(format!("pwnedpass-{n}.bin"));
    // pwnedpass's builder writes a directory entry per 3-byte prefix
    // present and insists on all 2^24 of them, which random corpora only
    // cover from a few hundred million hashes on.
    if peers && n >= 300_000_000 {
        let (secs, ok) = shell(&format!(
            "python3 -c 'import sys; from pwnedpass.rewrite import rewrite; rewrite(open(sys.argv[1]), open(sys.argv[2], \"wb\"))' {} {} > /dev/null",
            sorted.display(),
            pwnedpass_file.display()
        ));
        if ok {
            let size = std::fs::metadata(&pwnedpass_file).unwrap().len();
            println!(
                "prepare  pwnedpass (PyPI)    {secs:8.2} s  (+ the sort above: {:.2} s; ratio {:.1}x)",
                secs + sort_secs,
                (secs + sort_secs) / ours
            );
            println!(
                "size     pwnedpass (PyPI)    {:8.2} B/hash (counts capped at 2^32-1)",
                size as f64 / n as f64
            );
        } else {
            let _ = std::fs::remove_file(&pwnedpass_file);
            println!("prepare  pwnedpass (PyPI)    failed");
        }
    } else if peers {
        println!(
            "prepare  pwnedpass (PyPI)    not run: its builder needs all 2^24 three-byte prefixes present (the full corpus has them; {n} random hashes do not)"
        );
    }
    println!("size     pwnedpass (published)  19.20 B/hash (counts capped at 65,535)");

    lookups(n, &index_path, cold);
    println!("lookup   okon (published)       3400.0 us cold (SSD, 3 B-tree node reads)");
    println!("lookup   pwnedpass (published)   800.0 us cold, 3 us hot");
    if peers {
        let all = members(n);
        let hashes: Vec<String> = (0..cold.min(100))
            .map(|i| all[(i * 104_729) % n].0.to_hex(Kind::Sha1))
            .collect();
        let list = data.join("bench-hashes.txt");
        std::fs::write(&list, hashes.join("\n")).unwrap();
        peer_lookups(&pwnedpass_file, &sorted, &list);
    }
}

/// Warm and cold lookups in a seekless index of the corpus of size `n`.
fn lookups(n: usize, index_path: &Path, cold: usize) {
    // Warm lookups: half members, half random non-members.
    let index = Index::open(index_path).unwrap();
    shell(&format!("cat {} > /dev/null", index_path.display()));
    let all = members(n);
    let mut rng = Rng::xorshift64star(42);
    let queries: Vec<Key> = (0..2_000_000)
        .map(|i| {
            if i % 2 == 0 {
                all[(rng.next_u64() % n as u64) as usize].0
            } else {
                Words {
                    hi: rng.next_u64(),
                    mid: rng.next_u64(),
                    lo: rng.next_u64() as u32,
                }
                .key()
            }
        })
        .collect();
    // Touch every page once (checksums) before timing.
    for k in queries.iter().take(200_000) {
        index.count(*k).unwrap();
    }
    let mut runs = Vec::new();
    let mut found = 0;
    for _ in 0..5 {
        let (secs, f) = seconds(|| {
            queries
                .iter()
                .filter(|k| index.count(**k).unwrap() > 0)
                .count()
        });
        runs.push(secs);
        found = f;
    }
    let secs = median(runs);
    assert_eq!(
        found,
        queries.len() / 2,
        "every member found, no non-member"
    );
    println!(
        "lookup   seekless warm       {:8.0} ns  ({:.2} M lookups/s, one thread, median of 5 x {} lookups)",
        secs * 1e9 / queries.len() as f64,
        queries.len() as f64 / secs / 1e6,
        queries.len()
    );
    let mut runs = Vec::new();
    let mut counts = Vec::with_capacity(queries.len());
    for _ in 0..5 {
        counts.clear();
        let (secs, ()) = seconds(|| index.count_many(&queries, &mut counts).unwrap());
        runs.push(secs);
    }
    assert_eq!(counts.iter().filter(|&&c| c > 0).count(), queries.len() / 2);
    let secs = median(runs);
    println!(
        "lookup   seekless warm batch {:8.0} ns  ({:.2} M lookups/s, one thread, count_many, median of 5)",
        secs * 1e9 / queries.len() as f64,
        queries.len() as f64 / secs / 1e6
    );
    let loaded = Index::load(index_path).unwrap();
    let mut runs = Vec::new();
    for _ in 0..5 {
        counts.clear();
        let (secs, ()) = seconds(|| loaded.count_many(&queries, &mut counts).unwrap());
        runs.push(secs);
    }
    assert_eq!(counts.iter().filter(|&&c| c > 0).count(), queries.len() / 2);
    let secs = median(runs);
    println!(
        "lookup   seekless loaded     {:8.0} ns  ({:.2} M lookups/s, one thread, Index::load + count_many, median of 5)",
        secs * 1e9 / queries.len() as f64,
        queries.len() as f64 / secs / 1e6
    );
    drop(loaded);
    // Spot-check counts.
    for (key, count) in all.iter().step_by(n / 1000) {
        assert!(index.count(*key).unwrap() >= u64::from(*count));
    }

    // Cold lookups: the index's pages dropped before each one.
    let mut latencies = Vec::new();
    let mut bytes = 0u64;
    let can_drop = index.drop_cached_pages().is_ok();
    for i in 0..cold {
        let key = if i % 2 == 0 {
            all[(rng.next_u64() % n as u64) as usize].0
        } else {
            Words {
                hi: rng.next_u64(),
                mid: rng.next_u64(),
                lo: 0,
            }
            .key()
        };
        index.drop_cached_pages().unwrap();
        let before = read_bytes();
        let (secs, _) = seconds(|| index.count(key).unwrap());
        bytes += read_bytes() - before;
        latencies.push(secs);
    }
    if can_drop && cold > 0 {
        println!(
            "lookup   seekless cold       {:8.1} us  (median of {cold}; {:.0} bytes read from storage per lookup; directory resident)",
            median(latencies) * 1e6,
            bytes as f64 / cold as f64
        );
    }
    // Fully cold: open included, whole file dropped.
    let mut full = Vec::new();
    let mut full_bytes = 0;
    for i in 0..cold.min(50) {
        drop_cache(index_path);
        let key = all[(i * 7919) % n].0;
        let before = read_bytes();
        let (secs, _) = seconds(|| Index::open(index_path).unwrap().count(key).unwrap());
        full_bytes += read_bytes() - before;
        full.push(secs);
    }
    if !full.is_empty() {
        let runs = full.len();
        println!(
            "lookup   seekless open+cold  {:8.1} us  (median of {runs}; {:.0} bytes read per open+lookup)",
            median(full) * 1e6,
            full_bytes as f64 / runs as f64
        );
    }
}

/// pwnedpass and pwnedpasswords-offline lookups, warm and cold, from one
/// Python process each.
fn peer_lookups(pwnedpass_file: &Path, sorted: &Path, list: &Path) {
    let script = r#"
import os, sys, time, statistics
which, data, hashes_file = sys.argv[1], sys.argv[2], sys.argv[3]
hashes = [h.strip() for h in open(hashes_file) if h.strip()]
def drop(path):
    fd = os.open(path, os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)
if which == 'pwnedpass':
    import pwnedpass
    def look(h):
        with open(data, 'rb') as f:
            return pwnedpass.search(f, bytes.fromhex(h))
else:
    from pwnedpasswords_offline import PwnedPasswordsOfflineChecker
    def look(h):
        with PwnedPasswordsOfflineChecker(data, bloom_file=None) as c:
            return c.lookup_hash(h)
cold = []
for h in hashes:
    drop(data)
    t = time.perf_counter(); r = look(h); cold.append(time.perf_counter() - t)
    assert r
warm = []
for _ in range(3):
    t = time.perf_counter()
    for h in hashes * 20: look(h)
    warm.append((time.perf_counter() - t) / (len(hashes) * 20))
print(f"{statistics.median(cold)*1e6:.1f} {statistics.median(warm)*1e6:.1f}")
"#;
    for (name, file) in [
        ("pwnedpass", pwnedpass_file),
        ("pwnedpasswords-offline", sorted),
    ] {
        let out = Command::new("python3")
            .args([
                "-c",
                script,
                if name == "pwnedpass" {
                    "pwnedpass"
                } else {
                    "offline"
                },
            ])
            .arg(file)
            .arg(list)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let mut parts = text.split_whitespace();
        match (parts.next(), parts.next()) {
            (Some(cold), Some(warm)) if out.status.success() => {
                println!(
                    "lookup   {name:<22} {cold:>8} us cold (whole file dropped), {warm} us warm (per call, opening the file each time)"
                )
            }
            _ => println!(
                "lookup   {name}: not available ({})",
                String::from_utf8_lossy(&out.stderr)
                    .lines()
                    .last()
                    .unwrap_or("")
            ),
        }
    }
}

/// `--render`: see the top of the file.
fn render(rounds: usize) {
    use seekless_pwned::test_util::{Renderer, build_to_vec, write_range_by};
    let here: Vec<Renderer> = Renderer::ALL.into_iter().filter(|r| r.here()).collect();
    println!("renderers here: {here:?}; {rounds} rounds, ns a line (median round)");
    const RANGES: u32 = 4096;
    const PER_RANGE: usize = 1000;
    for kind in [Kind::Sha1, Kind::Ntlm] {
        let mut rng = Rng::xorshift64(0x5EED + kind.bits() as u64);
        let mut text = Vec::new();
        for r in 0..RANGES {
            let prefix = u64::from(r) * u64::from((1 << 20) / RANGES);
            for _ in 0..PER_RANGE {
                let (key, count) = member(&mut rng);
                let mut words = Words::from(key);
                words.hi = prefix << 44 | words.hi >> 20;
                if kind == Kind::Ntlm {
                    words.lo = 0;
                }
                text.extend_from_slice(
                    format!("{}:{count}\r\n", words.key().to_hex(kind)).as_bytes(),
                );
            }
        }
        let input = Input::Bytes {
            name: "render".into(),
            data: text,
        };
        let index = Index::from_bytes(
            build_to_vec(vec![input], &BuildOptions::default())
                .unwrap()
                .0,
        )
        .unwrap();
        let prefixes: Vec<u32> = (0..RANGES).map(|r| r * ((1 << 20) / RANGES)).collect();
        // AVX-512 writes SHA-1 ranges only (NTLM's would be the portable
        // path's).
        let renderers: Vec<Renderer> = here
            .iter()
            .copied()
            .filter(|&r| kind == Kind::Sha1 || r != Renderer::Avx512)
            .collect();
        let lines = index.len() as f64;
        let mut times: Vec<Vec<f64>> = vec![Vec::new(); renderers.len()];
        let mut body = Vec::with_capacity(64 << 10);
        let mut want = Vec::new();
        for (at, &renderer) in renderers.iter().enumerate() {
            // Every renderer writes the same bytes (checked once here, on
            // every range, by the tests).
            let mut all = Vec::new();
            for &p in &prefixes {
                body.clear();
                write_range_by(&index, renderer, p, &mut body).unwrap();
                all.extend_from_slice(&body);
            }
            if at == 0 {
                want = all;
            } else {
                assert!(all == want, "{renderer:?} wrote other bytes");
            }
        }
        for round in 0..rounds {
            let order: Vec<usize> = if round % 2 == 0 {
                (0..renderers.len()).collect()
            } else {
                (0..renderers.len()).rev().collect()
            };
            for at in order {
                // CPU time: steadier than the wall clock on a shared
                // machine (one thread runs here).
                let start = seekless_testkit::measure::cpu_now();
                for _ in 0..3 {
                    for &p in &prefixes {
                        body.clear();
                        write_range_by(&index, renderers[at], p, &mut body).unwrap();
                        std::hint::black_box(&body);
                    }
                }
                let cpu = seekless_testkit::measure::cpu_now() - start;
                times[at].push(cpu.as_secs_f64() * 1e9 / (3.0 * lines));
            }
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let medians: Vec<f64> = times.iter_mut().map(median).collect();
        for (at, renderer) in renderers.iter().enumerate() {
            let spread = (times[at][0], times[at][times[at].len() - 1]);
            println!(
                "{kind:?} {renderer:?}: {:.2} ns a line ({:.2}-{:.2}), {:.2}x portable",
                medians[at],
                spread.0,
                spread.1,
                medians[0] / medians[at]
            );
        }
    }
}
