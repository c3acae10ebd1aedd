//! exhash macro benchmark: our table against `std::collections::HashMap`
//! (SipHash-1-3) and `hashbrown::HashMap` (foldhash) in the same process on
//! the same pairs, plus the bytes-per-entry curve from 0.5M to 8M pairs and
//! the file backend's bulk load.
//!
//! "exhash batched" puts by `insert_many` and gets by `get_many`; "exhash
//! `load`" puts by `load` (in the order of the pages) and gets the same.
//!
//! Run: `cargo bench -p seekless-exhash --bench exhash_macro`
//! (add `-- --quick` for one run per figure instead of five, `-- --headline`
//! for the 1M random pairs table alone, `-- --stalls` for the longest
//! single puts of an 8M load and removes of its emptying alone, `-- --bulk`
//! for the file backend's bulk load alone: nine runs at 1M pairs, three at
//! 8M).

use std::time::Instant;

use seekless_exhash::bench::{
    Pattern, measure_exhash, measure_exhash_batched, measure_exhash_load, measure_std, pairs,
    removal_stalls, stalls, swiss_table_bytes, time_exhash, time_map,
};
use seekless_exhash::{ExHash, MemoryStore, PageStore};

use seekless_testkit::measure::median;

fn measure_hashbrown(pairs: &[(u64, u64)]) -> (f64, f64, f64) {
    let (put, get, map) = time_map(
        pairs,
        hashbrown::HashMap::new(),
        |m, k, v| {
            m.insert(k, v);
        },
        |m, k| m.get(&k).copied(),
    );
    (
        put,
        get,
        swiss_table_bytes(map.capacity(), 16) as f64 / pairs.len() as f64,
    )
}

type Measure = fn(&[(u64, u64)]) -> (f64, f64, f64);

/// Median (put ns, get ns, bytes per entry) over `runs`, runs interleaved
/// across the contenders so machine noise hits them alike.
fn side_by_side(
    pairs: &[(u64, u64)],
    runs: usize,
    who: &[(&str, Measure)],
) -> Vec<(f64, f64, f64)> {
    let mut all = vec![(Vec::new(), Vec::new(), Vec::new()); who.len()];
    for _ in 0..runs {
        for (i, (_, f)) in who.iter().enumerate() {
            let (p, g, b) = f(pairs);
            all[i].0.push(p);
            all[i].1.push(g);
            all[i].2.push(b);
        }
    }
    all.into_iter()
        .map(|(p, g, b)| (median(p), median(g), median(b)))
        .collect()
}

fn headline(n: usize, pattern: Pattern, runs: usize) {
    let pairs = pairs(n, pattern);
    let who: [(&str, Measure); 5] = [
        ("exhash", measure_exhash),
        ("exhash batched", measure_exhash_batched),
        ("exhash `load`", measure_exhash_load),
        ("std HashMap", measure_std),
        ("hashbrown", measure_hashbrown),
    ];
    let r = side_by_side(&pairs, runs, &who);
    println!("\n{n} {pattern:?} pairs, median of {runs} runs");
    println!("| table | put ns/op | get ns/op | bytes/entry |");
    println!("|---|---:|---:|---:|");
    for ((name, _), (p, g, b)) in who.iter().zip(&r) {
        println!("| {name} | {p:.1} | {g:.1} | {b:.2} |");
    }
    let (p, g, b) = r[0];
    for ((name, _), (pp, gg, bb)) in who.iter().zip(&r).skip(3) {
        println!(
            "| exhash / {name} | {:.2} | {:.2} | {:.2} |",
            p / pp,
            g / gg,
            b / bb
        );
    }
}

fn curve(pattern: Pattern, sizes: &[usize]) {
    println!("\n{pattern:?} pairs: bytes per entry as N grows (one run per N)");
    println!(
        "| N | exhash B/entry | fill | pages | global depth | longest probe | groups/hit | groups/miss | put ns | get ns | std B/entry |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let max = *sizes.iter().max().unwrap();
    let all = pairs(max, pattern);
    for &n in sizes {
        let part = &all[..n];
        let (put, get, t) = time_exhash(part);
        let s = t.stats();
        let mut std = std::collections::HashMap::new();
        std.extend(part.iter().copied());
        let std_b = swiss_table_bytes(std.capacity(), 16) as f64 / n as f64;
        println!(
            "| {n} | {:.2} | {:.3} | {} | {} | {} | {:.2} | {:.2} | {put:.0} | {get:.0} | {std_b:.2} |",
            s.memory_bytes as f64 / n as f64,
            s.fill,
            s.pages,
            s.global_depth,
            s.longest_probe,
            s.groups_per_hit,
            s.groups_per_miss
        );
    }
}

/// A way to make the memory store a table starts from.
type NewStore = fn() -> MemoryStore;

/// The memory stores the stall figures are measured over.
const STORES: [(&str, NewStore); 2] = [
    ("huge pages (default)", MemoryStore::new),
    ("small pages", MemoryStore::with_small_pages),
];

fn growth_stalls(pattern: Pattern, n: usize, runs: usize) {
    let pairs = pairs(n, pattern);
    println!(
        "\nlongest single put while loading {n} {pattern:?} pairs (each put's fastest of {runs} runs)"
    );
    println!(
        "| memory | longest put µs | at N | puts over 10 µs | puts over 100 µs | table in huge pages MiB |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for (name, store) in STORES {
        let s = stalls(&pairs, runs, store);
        let huge = s.huge_page_bytes.map_or("-".to_string(), |b| {
            format!("{:.0}", b as f64 / (1 << 20) as f64)
        });
        println!(
            "| {name} | {:.1} | {} | {} | {} | {huge} |",
            s.max_us, s.at, s.over_10us, s.over_100us
        );
    }
}

fn removal_stalls_of(pattern: Pattern, n: usize, runs: usize) {
    let pairs = pairs(n, pattern);
    println!(
        "\nlongest single remove while removing all {n} {pattern:?} pairs in the order loaded (each remove's fastest of {runs} runs)"
    );
    println!("| memory | longest remove µs | at N | removes over 10 µs | removes over 100 µs |");
    println!("|---|---:|---:|---:|---:|");
    for (name, store) in STORES {
        let s = removal_stalls(&pairs, runs, store);
        println!(
            "| {name} | {:.1} | {} | {} | {} |",
            s.max_us, s.at, s.over_10us, s.over_100us
        );
    }
}

/// One bulk load of `pairs` into a fresh table at `path` (memory when
/// `None`), one pair at a time or by `ExHash::load`, then committed: the
/// whole time and the commit's.
fn bulk_once(pairs: &[(u64, u64)], path: Option<&std::path::Path>, by_load: bool) -> (f64, f64) {
    fn fill<S: PageStore>(t: &mut ExHash<S>, pairs: &[(u64, u64)], by_load: bool) {
        if by_load {
            t.load(pairs);
        } else {
            for &(k, v) in pairs {
                t.insert(k, v);
            }
        }
    }
    let start = Instant::now();
    let Some(path) = path else {
        // Timed without the drop, like the file's table below.
        let mut t = ExHash::new();
        fill(&mut t, pairs, by_load);
        return (start.elapsed().as_secs_f64(), 0.0);
    };
    let mut t = ExHash::open_or_create(path).unwrap();
    fill(&mut t, pairs, by_load);
    let before_commit = Instant::now();
    t.commit().unwrap();
    let commit = before_commit.elapsed().as_secs_f64();
    (start.elapsed().as_secs_f64(), commit)
}

/// The file backend against the memory one, loading the same pairs one
/// insert at a time and by `ExHash::load`, in turn, each committed once.
fn file_bulk_load(n: usize, runs: usize) {
    let pairs = pairs(n, Pattern::Random);
    let dir = seekless_testkit::TempDir::new("exhash-bench");
    let ways = [("insert, one pair at a time", false), ("`load`", true)];
    // [way][memory, file, commit, file without its commit]
    let mut times = vec![[Vec::new(), Vec::new(), Vec::new(), Vec::new()]; ways.len()];
    let mut size = 0;
    for run in 0..runs {
        for (w, &(_, by_load)) in ways.iter().enumerate() {
            times[w][0].push(bulk_once(&pairs, None, by_load).0);
            let path = dir.join(format!("bulk-{run}-{w}.exh"));
            let (file, commit) = bulk_once(&pairs, Some(&path), by_load);
            times[w][1].push(file);
            times[w][2].push(commit);
            times[w][3].push(file - commit);
            size = std::fs::metadata(&path).unwrap().len();
            std::fs::remove_file(&path).unwrap();
        }
    }
    drop(dir);
    println!("\nbulk load of {n} random pairs, one commit, median of {runs} runs");
    // The last column leaves out the commit, whose wait is mostly for
    // the device to make the pages durable: it is the table's own cost of
    // a file against memory.
    println!("| way | memory s | file s (commit s) | file ÷ memory | without the commit |");
    println!("|---|---:|---:|---:|---:|");
    for ((name, _), t) in ways.iter().zip(times) {
        let [m, f, c, l] = t.map(median);
        println!(
            "| {name} | {m:.3} | {f:.3} ({c:.3}) | {:.2} | {:.2} |",
            f / m,
            l / m
        );
    }
    println!("file: {:.1} MB", size as f64 / 1e6);
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let runs = if quick { 1 } else { 5 };
    println!(
        "exhash macro benchmark ({} run(s) per headline figure)",
        runs
    );
    if std::env::args().any(|a| a == "--stalls") {
        // Only the longest-put figures at 8M pairs.
        growth_stalls(Pattern::Random, 8_000_000, 3);
        growth_stalls(Pattern::Sequential, 8_000_000, 3);
        removal_stalls_of(Pattern::Random, 8_000_000, 3);
        return;
    }
    if std::env::args().any(|a| a == "--bulk") {
        // Only the file backend's bulk load, more runs: for A/B runs.
        file_bulk_load(1_000_000, 9);
        file_bulk_load(8_000_000, 3);
        return;
    }
    headline(1_000_000, Pattern::Random, runs);
    if std::env::args().any(|a| a == "--headline") {
        // Only the headline table: for quick A/B runs of two builds.
        return;
    }
    headline(1_000_000, Pattern::Sequential, runs);
    if !quick {
        headline(8_000_000, Pattern::Random, 3);
    }
    let sizes = [
        500_000, 600_000, 750_000, 1_000_000, 1_250_000, 1_500_000, 2_000_000, 2_500_000,
        3_000_000, 4_000_000, 5_000_000, 6_000_000, 7_000_000, 8_000_000,
    ];
    let sizes: &[usize] = if quick { &sizes[..4] } else { &sizes };
    curve(Pattern::Random, sizes);
    curve(Pattern::Sequential, sizes);
    curve(Pattern::Strided, sizes);
    let stall_n = if quick { 1_000_000 } else { 8_000_000 };
    growth_stalls(Pattern::Random, stall_n, 3);
    growth_stalls(Pattern::Sequential, stall_n, 3);
    removal_stalls_of(Pattern::Random, stall_n, 3);
    file_bulk_load(1_000_000, runs);
    if !quick {
        file_bulk_load(8_000_000, 3);
    }
}
