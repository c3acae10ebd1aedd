//! The `bench` measurement shared by `seekless exhash bench` and the macro
//! benchmark: insert N pairs, then look every key up, in an [`ExHash`] and
//! in `std::collections::HashMap`, in the same process on the same input.

use std::collections::HashMap;
use std::hint::black_box;
use std::time::Instant;

use crate::{ExHash, MemoryStore};

/// Which keys and values to generate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// Uniformly random 64-bit keys and values (splitmix64 from a fixed seed).
    Random,
    /// Keys 0, 1, 2, ... with the value equal to the key.
    Sequential,
    /// Keys 0, 4096, 8192, ... (multiples of a page size, as offsets
    /// are), with the value the key's index.
    Strided,
}

/// splitmix64: a full-period generator of well-mixed 64-bit values.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `n` distinct pairs of the given pattern (random keys are distinct
/// because the generator is a bijection of its counter).
pub fn pairs(n: usize, pattern: Pattern) -> Vec<(u64, u64)> {
    match pattern {
        Pattern::Random => {
            let mut keys = 0x5EED_u64;
            let mut values = 0xF00D_u64 << 32;
            (0..n)
                .map(|_| (splitmix(&mut keys), splitmix(&mut values)))
                .collect()
        }
        Pattern::Sequential => (0..n as u64).map(|i| (i, i)).collect(),
        Pattern::Strided => (0..n as u64).map(|i| (i << 12, i)).collect(),
    }
}

/// One side-by-side measurement.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Report {
    /// Pairs inserted.
    pub keys: usize,
    /// Nanoseconds per insert into [`ExHash`].
    pub put_ns: f64,
    /// Nanoseconds per lookup in [`ExHash`].
    pub get_ns: f64,
    /// [`ExHash::memory_bytes`] divided by the number of pairs.
    pub bytes_per_entry: f64,
    /// Nanoseconds per pair through [`ExHash::insert_many`], which
    /// prefetches a few keys ahead.
    pub put_many_ns: f64,
    /// Nanoseconds per key through [`ExHash::get_many`].
    pub get_many_ns: f64,
    /// Nanoseconds per insert into `HashMap`.
    pub std_put_ns: f64,
    /// Nanoseconds per lookup in `HashMap`.
    pub std_get_ns: f64,
    /// `HashMap`'s table bytes (buckets × 16 + control bytes) per pair.
    pub std_bytes_per_entry: f64,
}

/// Bytes of a hashbrown-style table with `capacity` usable slots of
/// `entry` bytes: buckets (capacity × 8/7, a power of two) × entry size,
/// plus one control byte per bucket and a group of trailing ones.
pub fn swiss_table_bytes(capacity: usize, entry: usize) -> usize {
    if capacity == 0 {
        return 0;
    }
    let buckets = if capacity < 8 {
        capacity + 1
    } else {
        (capacity * 8 / 7).next_power_of_two()
    };
    buckets * entry + buckets + 16
}

/// Time inserting every pair into `map`, then looking every key up, one
/// call per key: (put ns, get ns, the filled map).
pub fn time_map<M>(
    pairs: &[(u64, u64)],
    mut map: M,
    insert: impl Fn(&mut M, u64, u64),
    get: impl Fn(&M, u64) -> Option<u64>,
) -> (f64, f64, M) {
    let n = pairs.len().max(1) as f64;
    let start = Instant::now();
    for &(k, v) in pairs {
        insert(&mut map, k, v);
    }
    let put = start.elapsed().as_nanos() as f64 / n;
    let start = Instant::now();
    let mut sum = 0u64;
    for &(k, _) in pairs {
        sum = sum.wrapping_add(get(&map, black_box(k)).unwrap_or(1));
    }
    black_box(sum);
    let get = start.elapsed().as_nanos() as f64 / n;
    (put, get, map)
}

/// [`time_map`] for a new [`ExHash`].
pub fn time_exhash(pairs: &[(u64, u64)]) -> (f64, f64, ExHash) {
    time_map(
        pairs,
        ExHash::new(),
        |t, k, v| {
            t.insert(k, v);
        },
        |t, k| t.get(k),
    )
}

/// Time inserting then looking up every pair in an [`ExHash`]: (put ns,
/// get ns, bytes per entry).
pub fn measure_exhash(pairs: &[(u64, u64)]) -> (f64, f64, f64) {
    let (put, get, table) = time_exhash(pairs);
    let n = pairs.len().max(1) as f64;
    (put, get, table.memory_bytes() as f64 / n)
}

/// The same through the batch calls [`ExHash::insert_many`] and
/// [`ExHash::get_many`], which prefetch a few keys ahead.
pub fn measure_exhash_batched(pairs: &[(u64, u64)]) -> (f64, f64, f64) {
    measure_batch_gets(pairs, ExHash::insert_many)
}

/// [`measure_exhash_batched`] with the pairs put in by [`ExHash::load`]
/// (in the order of their pages) instead of `insert_many`.
pub fn measure_exhash_load(pairs: &[(u64, u64)]) -> (f64, f64, f64) {
    measure_batch_gets(pairs, ExHash::load)
}

/// Pairs put in by `put` all at once, then looked up by `get_many`.
fn measure_batch_gets(
    pairs: &[(u64, u64)],
    put: fn(&mut ExHash, &[(u64, u64)]),
) -> (f64, f64, f64) {
    let n = pairs.len().max(1) as f64;
    let keys: Vec<u64> = pairs.iter().map(|p| p.0).collect();
    let start = Instant::now();
    let mut table = ExHash::new();
    put(&mut table, black_box(pairs));
    let put = start.elapsed().as_nanos() as f64 / n;
    let mut out = Vec::with_capacity(keys.len());
    let start = Instant::now();
    table.get_many(black_box(&keys), &mut out);
    black_box(&out);
    let get = start.elapsed().as_nanos() as f64 / n;
    assert!(out.iter().all(Option::is_some), "every key was put");
    (put, get, table.memory_bytes() as f64 / n)
}

/// The same for `std::collections::HashMap` with its default hasher.
pub fn measure_std(pairs: &[(u64, u64)]) -> (f64, f64, f64) {
    let (put, get, map) = time_map(
        pairs,
        HashMap::new(),
        |m, k, v| {
            m.insert(k, v);
        },
        |m, k| m.get(&k).copied(),
    );
    let n = pairs.len().max(1) as f64;
    (put, get, swiss_table_bytes(map.capacity(), 16) as f64 / n)
}

/// The longest single puts while loading pairs one call at a time ([`stalls`]),
/// or removes while taking them out again ([`removal_stalls`]): how long
/// growth (a page split, a directory doubling, fresh memory) or shrinking
/// (a merge, a directory halving) can stall a caller.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stalls {
    /// The longest call, in microseconds.
    pub max_us: f64,
    /// How many pairs the table held before that call.
    pub at: usize,
    /// Calls that took longer than 10 µs.
    pub over_10us: usize,
    /// Calls that took longer than 100 µs.
    pub over_100us: usize,
    /// Of a load: how much of the process's memory the loaded table added
    /// in transparent huge pages, in bytes (Linux only: `AnonHugePages` of
    /// `/proc/self/smaps_rollup`, after the last run against before the
    /// first).
    pub huge_page_bytes: Option<u64>,
}

/// The process's anonymous memory in transparent huge pages, in bytes.
fn anon_huge_bytes() -> Option<u64> {
    let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").ok()?;
    let line = rollup.lines().find(|l| l.starts_with("AnonHugePages:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Load `pairs` into a new [`ExHash`] (over `store()`) `runs` times, timing every put
/// separately (a clock read around each call, so the total is not a put
/// figure), and report the longest puts. Each put's time is its fastest
/// over the runs: the same pairs always grow the table at the same puts,
/// so what growth costs shows in every run, while a put that the system
/// interrupted (a preempted thread, a busy host) is timed again.
pub fn stalls(pairs: &[(u64, u64)], runs: usize, store: fn() -> MemoryStore) -> Stalls {
    let mut best = vec![f32::INFINITY; pairs.len()];
    let before = anon_huge_bytes();
    let mut after = None;
    for _ in 0..runs.max(1) {
        let mut table = ExHash::with_store(store());
        for (&(k, v), best) in pairs.iter().zip(best.iter_mut()) {
            let start = Instant::now();
            table.insert(k, v);
            *best = best.min(start.elapsed().as_nanos() as f32 / 1000.0);
        }
        after = anon_huge_bytes();
        black_box(&table);
    }
    let mut s = longest(&best, |i| i);
    s.huge_page_bytes = before.zip(after).map(|(b, a)| a.saturating_sub(b));
    s
}

/// Load `pairs` into a new [`ExHash`] (over `store()`), then remove them
/// all in the same order, timing every remove separately, `runs` times:
/// the longest removes, each its fastest over the runs, as in [`stalls`]
/// (how long shrinking, a merge or a directory halving, can stall a
/// caller). `at` is how many pairs the table held before that remove.
pub fn removal_stalls(pairs: &[(u64, u64)], runs: usize, store: fn() -> MemoryStore) -> Stalls {
    let mut best = vec![f32::INFINITY; pairs.len()];
    for _ in 0..runs.max(1) {
        let mut table = ExHash::with_store(store());
        for &(k, v) in pairs {
            table.insert(k, v);
        }
        for (&(k, _), best) in pairs.iter().zip(best.iter_mut()) {
            let start = Instant::now();
            black_box(table.remove(k));
            *best = best.min(start.elapsed().as_nanos() as f32 / 1000.0);
        }
        assert!(table.is_empty(), "every pair removed");
    }
    longest(&best, |i| pairs.len() - i)
}

/// The longest of the operations timed in `best` (µs), operation `i`
/// having come when the table held `held(i)` pairs.
fn longest(best: &[f32], held: impl Fn(usize) -> usize) -> Stalls {
    let (i, &max) = best
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .unwrap_or((0, &0.0));
    Stalls {
        max_us: max as f64,
        at: if best.is_empty() { 0 } else { held(i) },
        over_10us: best.iter().filter(|&&t| t > 10.0).count(),
        over_100us: best.iter().filter(|&&t| t > 100.0).count(),
        huge_page_bytes: None,
    }
}

/// Run both sides on `n` pairs of `pattern`.
pub fn run(n: usize, pattern: Pattern) -> Report {
    let pairs = pairs(n, pattern);
    let (put_ns, get_ns, bytes_per_entry) = measure_exhash(&pairs);
    let (put_many_ns, get_many_ns, _) = measure_exhash_batched(&pairs);
    let (std_put_ns, std_get_ns, std_bytes_per_entry) = measure_std(&pairs);
    Report {
        keys: n,
        put_ns,
        get_ns,
        bytes_per_entry,
        put_many_ns,
        get_many_ns,
        std_put_ns,
        std_get_ns,
        std_bytes_per_entry,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_pairs_are_distinct_and_sequential_pairs_are_identity() {
        let p = pairs(10_000, Pattern::Random);
        let keys: std::collections::HashSet<u64> = p.iter().map(|p| p.0).collect();
        assert_eq!(keys.len(), 10_000);
        assert_eq!(pairs(3, Pattern::Sequential), vec![(0, 0), (1, 1), (2, 2)]);
    }

    #[test]
    fn swiss_table_bytes_follows_capacity() {
        let mut map = HashMap::new();
        for i in 0..1000u64 {
            map.insert(i, i);
        }
        // 1000 entries need 1024 buckets at most 7/8 full... so 2048 buckets.
        assert_eq!(map.capacity(), 1792);
        assert_eq!(swiss_table_bytes(map.capacity(), 16), 2048 * 17 + 16);
    }

    #[test]
    fn run_reports_every_figure() {
        let r = run(5_000, Pattern::Random);
        assert_eq!(r.keys, 5_000);
        for x in [
            r.put_ns,
            r.get_ns,
            r.bytes_per_entry,
            r.put_many_ns,
            r.get_many_ns,
            r.std_put_ns,
            r.std_get_ns,
            r.std_bytes_per_entry,
        ] {
            assert!(x.is_finite() && x > 0.0, "{r:?}");
        }
    }

    #[test]
    fn the_longest_call_is_reported_with_the_pairs_held_then() {
        let best = [3.0, 250.0, 12.0, 0.5];
        let s = longest(&best, |i| 100 - i);
        assert_eq!(
            (s.max_us, s.at, s.over_10us, s.over_100us),
            (250.0, 99, 2, 1)
        );
        assert_eq!(longest(&[], |i| i).at, 0);
        // Removes: the first of n comes with all n pairs held.
        let p = pairs(3_000, Pattern::Random);
        let s = removal_stalls(&p, 1, MemoryStore::new);
        assert!((1..=3_000).contains(&s.at) && s.max_us > 0.0, "{s:?}");
        let s = stalls(&p, 1, MemoryStore::new);
        assert!(s.at < 3_000 && s.max_us > 0.0, "{s:?}");
    }
}
