//! What a build is asked to do ([`BuildOptions`]), what it reports while
//! it runs ([`Progress`]) and what it tells at the end ([`Summary`]).

use std::fs;
use std::path::PathBuf;
use std::time::Instant;

use crate::format::hash::Kind;
use crate::write::sorted::Written;

/// Options of a build.
///
/// Start from `default()` and set the fields that differ: new fields may
/// come, so it is not built field by field outside this crate.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BuildOptions {
    /// Parser and sorter threads.
    pub threads: usize,
    /// Memory budget in bytes for buffered records; input beyond it spills
    /// to temporary files.
    pub memory: u64,
    /// Where spill files go (default: the output's directory).
    pub tmp_dir: Option<PathBuf>,
    /// Count and skip malformed lines instead of stopping.
    pub skip_invalid: bool,
    /// Keep only the top bits of each hash (a compact index; `None`: whole
    /// hashes). Hashes that share them are merged, their counts summed.
    pub key_bits: Option<u32>,
    /// Keep only the hashes seen at least this many times, counts summed
    /// over the whole input (a subset; 1 keeps every hash). The whole
    /// index is built first, in a temporary file beside the spill files,
    /// and its hashes at or above the threshold are copied from it: a
    /// line late in the input may still add to any count.
    pub min_count: u64,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
            memory: default_memory(),
            tmp_dir: None,
            skip_invalid: false,
            key_bits: None,
            min_count: 1,
        }
    }
}

/// The most memory the default budget takes, whatever the machine has.
///
/// Records held past this cost more than they save. Memory a process has
/// not touched yet is faulted in at its first write, and a virtual
/// machine's host backs it then too: on the 2-core, 24 GiB benchmark VM,
/// ~2.5 s of kernel time a GiB. Spilled records cost a write and a read
/// past the page cache instead, which the disk does while the cores parse.
/// A billion random hashes through a pipe there, in turn with the budget
/// at half the machine's memory (12 GiB): 53.2-58.3 s and 14.6-14.9 s of
/// kernel time with 4 GiB against 58.5-60.1 s and 39.1-40.3 s, 5.1 GB
/// resident against 12.9, 20 GB spilled against 12.3; 300M, 15.4-15.5 s
/// against 18.7-20.2 s (benchmarks/log/2026-11-26-pwned-default-budget-4gib.md).
pub(super) const DEFAULT_MEMORY_AT_MOST: u64 = 4 << 30;

/// Half of the machine's memory, at most 4 GiB (1 GiB when the machine's
/// memory cannot be read).
pub fn default_memory() -> u64 {
    let total = fs::read_to_string("/proc/meminfo").ok().and_then(|text| {
        let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024)
    });
    total.map_or(1 << 30, |t| (t / 2).min(DEFAULT_MEMORY_AT_MOST))
}

/// Receives progress reports from a build.
pub trait Progress: Sync {
    /// The inputs hold `bytes` bytes in all (0 when unknown, e.g. stdin).
    fn input(&self, _bytes: u64) {}
    /// `bytes` more bytes have been read.
    fn read(&self, _bytes: u64) {}
    /// Reading is done; `partitions` partitions will be sorted and written.
    fn writing(&self, _partitions: u64) {}
    /// One more partition has been written.
    fn written(&self) {}
}

/// A build that reports nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl Progress for NoProgress {}

/// What a build did.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Summary {
    /// Hash kind of the corpus (SHA-1 for an empty one).
    pub kind: Option<Kind>,
    /// Hash lines read.
    pub lines: u64,
    /// Distinct hashes in the index.
    pub hashes: u64,
    /// Lines whose hash was already seen (counts summed).
    pub duplicates: u64,
    /// Malformed lines skipped (with `skip_invalid`).
    pub invalid: u64,
    /// The first malformed line skipped, as `FILE:LINE: what`.
    pub first_invalid: Option<String>,
    /// Lines with a count of 0, skipped.
    pub zero_counts: u64,
    /// Lines whose count exceeded 2^32 − 1 and was capped to it.
    pub capped: u64,
    /// Bytes of the index.
    pub bytes: u64,
    /// Bytes written to spill files.
    pub spilled: u64,
    /// The top bits of each hash kept, for a compact index.
    pub key_bits: Option<u32>,
    /// The fewest times a hash kept was seen (1: every hash is kept).
    pub min_count: u64,
    /// Distinct hashes seen fewer than `min_count` times, left out.
    pub left_out: u64,
    /// Whether the input was in hash order from its first line to its last,
    /// so that it went straight into pages (no partitions, sort or spill).
    pub streamed: bool,
    /// Wall-clock seconds.
    pub seconds: f64,
}

impl Summary {
    /// For a compact index, the chance that a lookup of a hash outside the
    /// corpus finds one that shares its kept bits (0 otherwise).
    pub fn false_positive_rate(&self) -> f64 {
        self.key_bits.map_or(0.0, |bits| {
            crate::read::index::false_positive_rate(self.hashes, bits)
        })
    }

    /// Takes the figures of the subset copied from the whole index, the
    /// copy begun at `copying`.
    pub(super) fn keep(&mut self, subset: Written, copying: Instant) {
        self.left_out = self.hashes - subset.hashes;
        self.hashes = subset.hashes;
        self.bytes = subset.bytes;
        self.seconds += copying.elapsed().as_secs_f64();
    }

    /// Index bytes per distinct hash.
    pub fn bytes_per_hash(&self) -> f64 {
        if self.hashes == 0 {
            0.0
        } else {
            self.bytes as f64 / self.hashes as f64
        }
    }
}
