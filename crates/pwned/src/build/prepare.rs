//! Building an index from the HIBP text corpus.
//!
//! Phase 1 reads the inputs in big chunks on a reader thread (large text
//! files are mapped: the reader only cuts them at line ends and asks each
//! chunk into memory) while parser threads turn lines into 24-byte
//! records. While the input is in hash order (as HIBP's downloaders write
//! it), the records go straight into pages through the `ordered` stream,
//! and that is the whole build. Once it is not (or from the start, for
//! input ordered by count), records are partitioned by their top 8 bits:
//! each holder keeps a bounded buffer per partition, and a full buffer is
//! appended to that partition's spill file (`partition`). Phase 2 takes
//! partitions in order, sorts each (radix pass, then one insertion pass),
//! merges duplicates and packs pages, on all threads; the main thread
//! writes the pages in order. When the input fits in memory, nothing
//! touches the disk but the index.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::time::Instant;

use memmap2::Mmap;

use crate::build::direct_io::{Aligned, DirectWriter};
use crate::build::input::{self, Input, Line, LineError, Part};
use crate::build::ordered::{MIN_PACKED_PAGES, Run, Stream, Streamed};
use crate::build::partition::{Budget, PART_BITS, Partitions, ReadAhead, Segment, Spill};
use crate::build::sort::{self, RECORD_BYTES, Record, Sink};
use crate::build::writer::{Written, check_key_bits, write_subset, write_trailer};
use crate::error::{Error, ErrorKind, Result};
use crate::format::hash::{Kind, prefix_ascii};
use crate::format::layout::{Layout, PAGE};
use crate::format::page::{DirEntry, Encoder, PageBuf, page_bytes};
use crate::read::index::Index;
use crate::tmpfile::Nameless;

/// Bytes the reader reads at a time (a chunk also holds the partial line
/// carried over from the previous read).
const READ: usize = 4 << 20;

/// Input files from this size on are mapped rather than read.
const MAP_MIN: u64 = 2 * READ as u64;

/// Options of a build.
#[derive(Debug, Clone)]
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
/// against 18.7-20.2 s (BENCHMARKS.md).
const DEFAULT_MEMORY_AT_MOST: u64 = 4 << 30;

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
    fn keep(&mut self, subset: Written, copying: Instant) {
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

/// Builds an index file at `output` from `inputs`. The index is written to
/// a file without a name in the same directory (where the system has them;
/// elsewhere a temporary name), synced, and only then given its name, so
/// neither an error nor a kill leaves anything behind.
pub fn build(
    inputs: Vec<Input>,
    output: &Path,
    options: &BuildOptions,
    progress: &dyn Progress,
) -> Result<Summary> {
    let dir = match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let io_err = |e| Error::io(output.to_path_buf(), e);
    if output.file_name().is_none() {
        return Err(io_err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a file name",
        )));
    }
    let out = Nameless::create(&dir, "index").map_err(io_err)?;
    let spill_dir = options.tmp_dir.clone().unwrap_or(dir);
    let summary = if options.min_count > 1 {
        // The whole index first, in a scratch file beside the spills: which
        // hashes fall below the threshold is known only once every line is
        // read. Then the others are copied into the output.
        let whole =
            Nameless::scratch(&spill_dir, "whole").map_err(|e| Error::io(spill_dir.clone(), e))?;
        let mut summary = build_file(inputs, &whole.file, &spill_dir, options, progress)
            .map_err(|e| e.with_path(&spill_dir))?;
        let copying = Instant::now();
        let file = whole.file.try_clone().map_err(io_err)?;
        let index = Index::from_file(file).map_err(|e| e.with_path(&spill_dir))?;
        let out_file = DirectWriter::new(&out.file);
        let (mut writer, subset) =
            write_subset(&index, options.min_count, out_file).map_err(|e| e.with_path(output))?;
        writer.flush().map_err(io_err)?;
        summary.keep(subset, copying);
        summary
    } else {
        build_file(inputs, &out.file, &spill_dir, options, progress)
            .map_err(|e| e.with_path(output))?
    };
    out.file.set_len(summary.bytes).map_err(io_err)?;
    out.file.sync_all().map_err(io_err)?;
    out.persist(output).map_err(io_err)?;
    Ok(summary)
}

/// Builds the whole index into `file` (from its start, written past the
/// page cache), cut to its size.
fn build_file(
    inputs: Vec<Input>,
    file: &fs::File,
    spill_dir: &Path,
    options: &BuildOptions,
    progress: &dyn Progress,
) -> Result<Summary> {
    let io_err = |e| Error::io(None, e);
    let read_back = |w: &mut DirectWriter| {
        w.flush().map_err(io_err)?;
        Index::from_file(file.try_clone().map_err(io_err)?)
    };
    let (mut writer, summary) = build_into(
        inputs,
        DirectWriter::new(file),
        &read_back,
        spill_dir,
        options,
        progress,
    )?;
    writer.flush().map_err(io_err)?;
    file.set_len(summary.bytes).map_err(io_err)?;
    Ok(summary)
}

/// Builds an index in memory.
pub fn build_to_vec(inputs: Vec<Input>, options: &BuildOptions) -> Result<(Vec<u8>, Summary)> {
    let spill_dir = options.tmp_dir.clone().unwrap_or_else(std::env::temp_dir);
    let read_back = |w: &mut io::Cursor<Vec<u8>>| Index::from_bytes(w.get_ref().clone());
    let (cursor, mut summary) = build_into(
        inputs,
        io::Cursor::new(Vec::new()),
        &read_back,
        &spill_dir,
        options,
        &NoProgress,
    )?;
    let mut bytes = cursor.into_inner();
    bytes.truncate(summary.bytes as usize);
    if options.min_count > 1 {
        let copying = Instant::now();
        let index = Index::from_bytes(bytes)?;
        let (subset, written) =
            write_subset(&index, options.min_count, io::Cursor::new(Vec::new()))?;
        summary.keep(written, copying);
        bytes = subset.into_inner();
    }
    Ok((bytes, summary))
}

/// Builds into `out` (from its start). `read_back` opens what has been
/// written to `out` as an index (used when input that looked sorted turns
/// out not to be). The file may end up longer than the index: the caller
/// cuts it to `summary.bytes`.
fn build_into<W: Write + Seek>(
    inputs: Vec<Input>,
    mut out: W,
    read_back: &dyn Fn(&mut W) -> Result<Index>,
    spill_dir: &Path,
    options: &BuildOptions,
    progress: &dyn Progress,
) -> Result<(W, Summary)> {
    let started = Instant::now();
    let threads = options.threads.max(1);
    let mut parts = input::expand(inputs).map_err(|(path, e)| Error::io(path, e))?;
    // Bytes of text coming (0: not known, from standard input or gzip).
    let sizes: Vec<u64> = parts.iter().map(Part::size).collect();
    progress.input(sizes.iter().sum());
    let input = if sizes.contains(&0) {
        0
    } else {
        sizes.iter().sum()
    };
    // Each parser, and the stream once it falls back, holds records by
    // partition, in segments of one shared budget.
    let budget = Budget::new(options.memory, threads + 1, input)?;
    let spill = Spill::new(spill_dir, budget.parts());
    let Collected {
        kind,
        output,
        duplicates: merged,
        buffers,
        total,
        mut summary,
    } = collect(
        &mut parts, input, threads, options, &budget, &spill, progress, &mut out, read_back,
    )?;
    let kind = kind.unwrap_or(Kind::Sha1);
    summary.kind = Some(kind);
    summary.key_bits = options.key_bits;
    summary.min_count = options.min_count.max(1);
    match output {
        Output::Written(written) => {
            // In hash order from the first line to the last: done.
            summary.hashes = written.hashes;
            summary.duplicates = written.duplicates;
            summary.bytes = written.bytes;
            summary.streamed = true;
            summary.seconds = started.elapsed().as_secs_f64();
            return Ok((out, summary));
        }
        Output::Partitioned(out) => {
            out.seek(SeekFrom::Start(0))
                .map_err(|e| Error::io(None, e))?;
        }
    }
    // Merges made before partitioning, less the records that only split a
    // count (see `ordered`), plus those the sort finds.
    let mut duplicates = merged;
    let layout = Layout::compact(kind, summary.lines, key_bits(options, kind)?);

    // Partitions are independent groups of pages when a partition boundary
    // is also a bucket boundary; with fewer bucket bits, one group.
    let sizes: Vec<u64> = (0..budget.parts())
        .map(|p| {
            let held: usize = buffers[p].iter().map(|s| s.len()).sum();
            held as u64 + spill.records[p].load(Ordering::Relaxed)
        })
        .collect();
    let part_bits = budget.part_bits();
    let run = 1 << part_bits.saturating_sub(PART_BITS);
    let groups = group_partitions(&sizes, layout.h >= part_bits, run);
    progress.writing(groups.len() as u64);
    out.write_all(&[0u8; PAGE])
        .map_err(|e| Error::io(None, e))?;
    let buffers: Vec<Mutex<Vec<Segment>>> = buffers.into_iter().map(Mutex::new).collect();
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    // Spills are read back ahead of the packers, into one buffer more than
    // there are packers, each given back once its partition is sorted.
    let packers = threads;
    let read_ahead = (spill.bytes.load(Ordering::Relaxed) > 0).then(ReadAhead::default);
    let (give, given) = mpsc::channel::<Aligned>();
    if read_ahead.is_some() {
        for _ in 0..=packers {
            let _ = give.send(Aligned::default());
        }
    }
    let (tx, rx) = mpsc::sync_channel::<(usize, Result<Packed>)>(packers);
    // Pages' memory goes back to the packers once written: at a billion
    // hashes, 17 GB of pages would otherwise each be faulted in afresh.
    let (pool_tx, pool_rx) = mpsc::channel::<Vec<PageBuf>>();
    let pool_rx = Mutex::new(pool_rx);
    let mut dir: Vec<DirEntry> = Vec::new();
    let mut pages_written = 0u64;
    let mut first_error = None;
    std::thread::scope(|s| {
        if let Some(read) = &read_ahead {
            let (order, spill, failed) = (groups.iter().flatten().copied(), &spill, &failed);
            s.spawn(move || read.serve(spill, order, &given, failed));
        }
        for _ in 0..packers {
            let tx = tx.clone();
            let ahead = read_ahead.as_ref().map(|read| Ahead {
                read,
                give: give.clone(),
            });
            let (groups, buffers, next, failed, spill, pool_rx) =
                (&groups, &buffers, &next, &failed, &spill, &pool_rx);
            s.spawn(move || {
                let mut scratch = Scratch::default();
                loop {
                    let g = next.fetch_add(1, Ordering::Relaxed);
                    if g >= groups.len() || failed.load(Ordering::Relaxed) {
                        break;
                    }
                    let pages = pool_rx
                        .lock()
                        .expect("pool lock")
                        .try_recv()
                        .unwrap_or_default();
                    let packed = pack(
                        layout,
                        &groups[g],
                        buffers,
                        spill,
                        ahead.as_ref(),
                        &mut scratch,
                        pages,
                    );
                    if packed.is_err() {
                        failed.store(true, Ordering::Relaxed);
                    }
                    if tx.send((g, packed)).is_err() {
                        break;
                    }
                }
            });
        }
        // The read-ahead stops once the packers, its pool's givers, have.
        drop(give);
        drop(tx);
        let mut pending = BTreeMap::new();
        let mut want = 0;
        for (g, packed) in rx {
            pending.insert(g, packed);
            while let Some(packed) = pending.remove(&want) {
                want += 1;
                match packed.and_then(|p| {
                    out.write_all(page_bytes(&p.pages))
                        .map_err(|e| Error::io(None, e))?;
                    Ok(p)
                }) {
                    Ok(mut p) => {
                        pages_written += p.dir.len() as u64;
                        dir.extend(p.dir);
                        p.pages.clear();
                        let _ = pool_tx.send(p.pages);
                        summary.hashes += p.hashes;
                        duplicates += p.duplicates as i64;
                        progress.written();
                    }
                    Err(e) => {
                        failed.store(true, Ordering::Relaxed);
                        first_error.get_or_insert(e);
                    }
                }
            }
        }
    });
    if let Some(e) = first_error {
        return Err(e);
    }
    summary.duplicates = duplicates.max(0) as u64;
    let header = write_trailer(&mut out, layout, &dir, (summary.hashes, total), 1, None)?;
    summary.bytes = header.file_len().unwrap_or(0);
    summary.spilled = spill.bytes.load(Ordering::Relaxed);
    summary.seconds = started.elapsed().as_secs_f64();
    Ok((out, summary))
}

/// The bits of each hash the index keeps, checked against the kind.
fn key_bits(options: &BuildOptions, kind: Kind) -> Result<u32> {
    let bits = options.key_bits.unwrap_or(kind.bits());
    check_key_bits(kind, bits)?;
    Ok(bits)
}

/// Smallest group of partitions, in records: the last page of a group is
/// partly empty, so groups must span many pages (about 140 here).
const MIN_GROUP: u64 = 32 << 10;

/// Splits the partitions into consecutive groups that are packed
/// independently (in parallel): each at least `MIN_GROUP` records, except
/// the last, and made of whole runs of `run` partitions (those that share
/// their top 8 bits: the groups, and so the pages, are the same however
/// many partitions hold the records). Partitions can only be split apart
/// where a partition boundary is also a bucket boundary (`aligned`);
/// otherwise all form one group.
fn group_partitions(sizes: &[u64], aligned: bool, run: usize) -> Vec<Vec<usize>> {
    if !aligned {
        return vec![(0..sizes.len()).collect()];
    }
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut current = Vec::new();
    let mut held = 0;
    for (p, &size) in sizes.iter().enumerate() {
        current.push(p);
        held += size;
        if held >= MIN_GROUP && (p + 1).is_multiple_of(run) {
            groups.push(std::mem::take(&mut current));
            held = 0;
        }
    }
    if !current.is_empty() {
        match groups.last_mut() {
            Some(last) if held < MIN_GROUP / 2 => last.extend(current),
            _ => groups.push(current),
        }
    }
    groups
}

/// Pages packed from one group of partitions.
struct Packed {
    pages: Vec<PageBuf>,
    dir: Vec<DirEntry>,
    hashes: u64,
    duplicates: u64,
}

/// Spills read ahead of the packers, and where their memory goes back.
struct Ahead<'a> {
    read: &'a ReadAhead,
    give: mpsc::Sender<Aligned>,
}

/// Memory a packing thread reuses from one partition to the next.
#[derive(Default)]
struct Scratch {
    /// A partition's spilled records, read back here when no read-ahead
    /// did.
    spilled: Aligned,
    sorted: Vec<Record>,
    /// The first pass of a large partition's sort.
    spare: Vec<Record>,
    /// The sort's buckets.
    counts: Vec<u32>,
}

/// Sorts the partitions of a group, merges duplicates and packs pages.
fn pack(
    layout: Layout,
    group: &[usize],
    buffers: &[Mutex<Vec<Segment>>],
    spill: &Spill,
    ahead: Option<&Ahead>,
    scratch: &mut Scratch,
    pages: Vec<PageBuf>,
) -> Result<Packed> {
    let mut encoder = Encoder::new(layout);
    encoder.pages = pages;
    let mut hashes = 0;
    let mut duplicates = 0;
    for &p in group {
        let held = std::mem::take(&mut *buffers[p].lock().expect("buffers lock"));
        let mut read = match ahead {
            Some(ahead) => ahead.read.take(spill, p).transpose()?,
            None => None,
        };
        let spilled: &[Record] = match &mut read {
            Some((memory, n)) => sort::records_mut(memory.first_mut(*n * RECORD_BYTES)),
            None => spill.read(p, &mut scratch.spilled)?,
        };
        let sources: Vec<&[Record]> = held.iter().map(|s| &s[..]).chain([spilled]).collect();
        sort::sort_into(
            &sources,
            // The partition's own bits, which its records share.
            spill.parts().trailing_zeros(),
            &mut scratch.sorted,
            &mut scratch.spare,
            &mut scratch.counts,
        );
        drop(sources);
        if let (Some(ahead), Some((memory, _))) = (ahead, read) {
            let _ = ahead.give.send(memory);
        }
        let merged = encoder.push_sorted(&scratch.sorted);
        hashes += merged.hashes;
        duplicates += merged.duplicates;
    }
    encoder.flush();
    Ok(Packed {
        pages: encoder.pages,
        dir: encoder.dir,
        hashes,
        duplicates,
    })
}

/// What phase 1 left: the index written (input in order), or records by
/// partition.
struct Collected<'o, 'b, W> {
    kind: Option<Kind>,
    output: Output<'o, W>,
    /// Merges made before the records were partitioned (may be negative:
    /// see [`Streamed`]).
    duplicates: i64,
    /// `buffers[partition]`: the segments every holder kept.
    buffers: Vec<Vec<Segment<'b>>>,
    total: u64,
    summary: Summary,
}

/// Where phase 1 left the output.
enum Output<'o, W> {
    /// The whole index, from input in hash order.
    Written(Written),
    /// Nothing that phase 2 needs (it writes from the start).
    Partitioned(&'o mut W),
}

/// A chunk of whole lines: `data[..len]`, from one input file or, for
/// small per-range files, from several whole ones (one piece each), so
/// that a run is long enough for its parser to pack.
struct Chunk {
    seq: u64,
    /// Place among the chunks sent (`seq` also counts overlong lines).
    order: u64,
    pieces: Vec<Piece>,
    data: Data,
    /// Bytes of text in the pieces.
    len: usize,
}

/// Where a chunk's bytes are: a buffer of the reader's (given back to it
/// once parsed), or a mapped input file.
enum Data {
    Read(Vec<u8>),
    Mapped(Arc<Mmap>),
}

impl std::ops::Deref for Data {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Data::Read(buffer) => buffer,
            Data::Mapped(map) => map,
        }
    }
}

/// The bytes `start..end` of a chunk come from input `part`.
#[derive(Debug, Clone, Copy)]
struct Piece {
    part: usize,
    start: usize,
    end: usize,
}

/// Something wrong with a line, located by chunk and line within it until
/// all chunks before it are counted.
enum Fault {
    Bad(String),
    Mixed,
}

/// Why a build stops.
enum Failure {
    Error(Error),
    Line {
        part: usize,
        local: u64,
        fault: Fault,
    },
}

/// State shared by the reader and the parsers.
struct Shared {
    kind: AtomicU8,
    skip_invalid: bool,
    /// The bits of each hash to keep (`None`: all).
    key_bits: Option<u32>,
    /// Bytes of all inputs (0 when one of them is of unknown size).
    input_bytes: u64,
    /// For each input, whether it is a per-range file (lines without the
    /// five-digit prefix).
    prefixed: Vec<bool>,
    /// The layout of input in hash order.
    layout: OnceLock<Layout>,
    /// The earliest failure so far, by chunk sequence number.
    failure: Mutex<Option<(u64, Failure)>>,
    stop: AtomicBool,
    /// Whether parsers hand their records to the stream (see `ordered`).
    streaming: AtomicBool,
    lines: AtomicU64,
    invalid: AtomicU64,
    /// The earliest invalid line skipped: (seq, part, line in chunk, what).
    first_invalid: Mutex<Option<(u64, usize, u64, String)>>,
    /// Lines in each chunk parsed so far: seq -> (part, lines).
    chunk_lines: Mutex<BTreeMap<(u64, usize), u64>>,
    zero: AtomicU64,
    capped: AtomicU64,
    total: AtomicU64,
    names: Vec<String>,
}

impl Shared {
    fn fail(&self, seq: u64, failure: Failure) {
        let mut slot = self.failure.lock().expect("failure lock");
        if slot.as_ref().is_none_or(|(s, _)| seq < *s) {
            *slot = Some((seq, failure));
        }
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Whether chunk `seq` can no longer change the outcome.
    fn skip(&self, seq: u64) -> bool {
        self.stop.load(Ordering::Relaxed)
            && self
                .failure
                .lock()
                .expect("failure lock")
                .as_ref()
                .is_some_and(|(s, _)| seq > *s)
    }

    fn kind(&self) -> Kind {
        Kind::from_code(self.kind.load(Ordering::Relaxed)).unwrap_or(Kind::Sha1)
    }

    /// The layout of an index of input in hash order, chosen once, from
    /// the first run that asks: the corpus size is estimated from the
    /// run's share of the input's bytes or, when the size of the input is
    /// not known (standard input), of the hash space.
    fn layout(&self, run: &Run) -> Result<Layout> {
        let kind = self.kind();
        let bits = self.key_bits.unwrap_or(kind.bits());
        check_key_bits(kind, bits)?;
        Ok(*self.layout.get_or_init(|| {
            let records = run.records.len() as f64;
            let n = match (run.records.first(), run.records.last()) {
                _ if self.input_bytes > 0 && run.bytes > 0 => {
                    self.input_bytes as f64 / run.bytes as f64 * records
                }
                (Some(a), Some(b)) if run.sorted && b.hi > a.hi => {
                    records * 2f64.powi(64) / (b.hi - a.hi) as f64
                }
                _ => records,
            };
            Layout::compact(kind, n as u64, bits)
        }))
    }

    fn invalid(&self, seq: u64, part: usize, local: u64, what: String) {
        self.invalid.fetch_add(1, Ordering::Relaxed);
        let mut first = self.first_invalid.lock().expect("invalid lock");
        if first.as_ref().is_none_or(|(s, ..)| seq < *s) {
            *first = Some((seq, part, local, what));
        }
    }

    /// The 1-based line number in its file of line `local` (0-based) of
    /// chunk `seq`.
    fn line_number(&self, seq: u64, part: usize, local: u64) -> u64 {
        let counts = self.chunk_lines.lock().expect("lines lock");
        let before: u64 = counts
            .range(..(seq, 0))
            .filter(|((_, p), _)| *p == part)
            .map(|(_, n)| n)
            .sum();
        before + local + 1
    }
}

#[allow(clippy::too_many_arguments)]
fn collect<'o, 'b, W: Write + Seek>(
    parts: &mut [Part],
    input_bytes: u64,
    threads: usize,
    options: &BuildOptions,
    budget: &'b Budget,
    spill: &'b Spill,
    progress: &dyn Progress,
    out: &'o mut W,
    read_back: &dyn Fn(&mut W) -> Result<Index>,
) -> Result<Collected<'o, 'b, W>> {
    let shared = Shared {
        kind: AtomicU8::new(0),
        skip_invalid: options.skip_invalid,
        key_bits: options.key_bits,
        input_bytes,
        layout: OnceLock::new(),
        prefixed: parts.iter().map(|p| p.prefix.is_some()).collect(),
        failure: Mutex::new(None),
        stop: AtomicBool::new(false),
        streaming: AtomicBool::new(true),
        lines: AtomicU64::new(0),
        invalid: AtomicU64::new(0),
        first_invalid: Mutex::new(None),
        chunk_lines: Mutex::new(BTreeMap::new()),
        zero: AtomicU64::new(0),
        capped: AtomicU64::new(0),
        total: AtomicU64::new(0),
        names: parts.iter().map(|p| p.name.clone()).collect(),
    };
    let prefixes: Vec<Option<[u8; 5]>> = parts.iter().map(|p| p.prefix).collect();
    let (chunk_tx, chunk_rx) = mpsc::sync_channel::<Chunk>(threads * 2);
    let (pool_tx, pool_rx) = mpsc::channel::<Vec<u8>>();
    let (run_tx, run_rx) = mpsc::sync_channel::<Run>(threads * 2);
    let (runs_pool_tx, runs_pool_rx) = mpsc::channel::<Run>();
    let chunk_rx = Mutex::new(chunk_rx);
    let runs_pool_rx = Mutex::new(runs_pool_rx);
    let mut per_thread: Vec<Result<Vec<Vec<Segment>>>> = Vec::new();
    // Spills are written on a thread of their own, so that a parser goes
    // on while its oldest segment goes to disk.
    let (spill_tx, spill_rx) = mpsc::channel();
    let streamed = std::thread::scope(|s| {
        let shared = &shared;
        s.spawn(move || spill.serve(spill_rx));
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let (chunk_rx, pool_tx, prefixes) = (&chunk_rx, pool_tx.clone(), &prefixes);
                let (run_tx, runs_pool_rx) = (run_tx.clone(), &runs_pool_rx);
                let spill_tx = spill_tx.clone();
                s.spawn(move || {
                    let mut partitions = Partitions::with_writer(budget, spill, spill_tx);
                    loop {
                        let chunk = chunk_rx.lock().expect("chunk lock").recv();
                        let Ok(chunk) = chunk else { break };
                        if shared.streaming.load(Ordering::Acquire) {
                            let memory = runs_pool_rx
                                .lock()
                                .expect("runs lock")
                                .try_recv()
                                .unwrap_or_default();
                            let mut run = Run::new(chunk.order, chunk.len, memory);
                            if !shared.skip(chunk.seq) {
                                parse_chunk(shared, &chunk, prefixes, &mut run);
                                if run.sorted
                                    && !run.records.is_empty()
                                    && let Ok(layout) = shared.layout(&run)
                                {
                                    run.pack(layout, MIN_PACKED_PAGES);
                                }
                            }
                            // Every run goes, even empty: the stream takes
                            // them in order.
                            let _ = run_tx.send(run);
                        } else if !partitions.failed() && !shared.skip(chunk.seq) {
                            // A holder whose spill failed has reported it
                            // and only passes the rest of the input by.
                            parse_chunk(shared, &chunk, prefixes, &mut partitions);
                        }
                        match chunk.data {
                            Data::Read(buffer) => {
                                let _ = pool_tx.send(buffer);
                            }
                            Data::Mapped(map) => release(&map, &chunk.pieces),
                        }
                    }
                    partitions.into_segments()
                })
            })
            .collect();
        drop((pool_tx, run_tx));
        let reader = s.spawn(move || {
            read_all(parts, shared, &chunk_tx, &pool_rx, progress);
        });
        let partitions = Partitions::with_writer(budget, spill, spill_tx);
        let streamed = stream(shared, run_rx, &runs_pool_tx, out, read_back, partitions);
        if streamed.is_err() {
            shared.stop.store(true, Ordering::Relaxed);
        }
        reader.join().expect("reader thread");
        for h in handles {
            per_thread.push(h.join().expect("parser thread"));
        }
        streamed
    });
    if let Some((seq, failure)) = shared.failure.lock().expect("failure lock").take() {
        return Err(match failure {
            Failure::Error(e) => e,
            Failure::Line { part, local, fault } => {
                let line = shared.line_number(seq, part, local);
                let file = shared.names[part].clone();
                match fault {
                    Fault::Bad(what) => Error::bad_line(&file, line, what),
                    Fault::Mixed => ErrorKind::MixedKinds { file, line }.into(),
                }
            }
        });
    }
    let first_invalid = shared
        .first_invalid
        .lock()
        .expect("invalid lock")
        .take()
        .map(|(seq, part, local, what)| {
            let line = shared.line_number(seq, part, local);
            format!("{}:{line}: {what}", shared.names[part])
        });
    let streamed = streamed?;
    let mut duplicates = 0;
    let output = match streamed {
        Streamed::Written(written) => Output::Written(written),
        Streamed::Partitioned {
            out,
            buffers,
            duplicates: merged,
        } => {
            per_thread.push(Ok(buffers));
            duplicates = merged;
            Output::Partitioned(out)
        }
    };
    let mut buffers: Vec<Vec<Segment>> = (0..budget.parts()).map(|_| Vec::new()).collect();
    for holder in per_thread {
        for (p, segments) in holder?.into_iter().enumerate() {
            buffers[p].extend(segments);
        }
    }
    let kind = Kind::from_code(shared.kind.load(Ordering::Relaxed));
    Ok(Collected {
        kind,
        output,
        duplicates,
        buffers,
        total: shared.total.load(Ordering::Relaxed),
        summary: Summary {
            lines: shared.lines.load(Ordering::Relaxed),
            invalid: shared.invalid.load(Ordering::Relaxed),
            first_invalid,
            zero_counts: shared.zero.load(Ordering::Relaxed),
            capped: shared.capped.load(Ordering::Relaxed),
            ..Summary::default()
        },
    })
}

/// Takes the parsers' runs into a [`Stream`] until they stop coming.
fn stream<'o, 'b, W: Write + Seek>(
    shared: &Shared,
    runs: mpsc::Receiver<Run>,
    reuse: &mpsc::Sender<Run>,
    out: &'o mut W,
    read_back: &dyn Fn(&mut W) -> Result<Index>,
    partitions: Partitions<'b>,
) -> Result<Streamed<'o, 'b, W>> {
    let layout = |run: &Run| shared.layout(run);
    let mut stream = Stream::new(out, &layout, &shared.streaming, partitions, read_back);
    for run in runs {
        for done in stream.take(run)? {
            let _ = reuse.send(done);
        }
    }
    stream.finish()
}

/// Unmaps the pieces of a mapped input once parsed, so that the process
/// holds the chunks in flight, not the whole file (the page cache keeps it
/// as it would after a read).
fn release(map: &Mmap, pieces: &[Piece]) {
    #[cfg(unix)]
    for piece in pieces {
        // SAFETY: the mapping is of a file, shared and read-only: dropping
        // its page-table entries frees no memory a reference points to, and
        // a later read of these bytes (the page a neighbouring chunk shares)
        // maps the same file pages again.
        let _ = unsafe {
            map.unchecked_advise_range(
                memmap2::UncheckedAdvice::DontNeed,
                piece.start,
                piece.end - piece.start,
            )
        };
    }
    #[cfg(not(unix))]
    let _ = (map, pieces);
}

/// Chunks on their way to the parsers, numbered.
struct Chunks<'a> {
    tx: &'a mpsc::SyncSender<Chunk>,
    pool: &'a mpsc::Receiver<Vec<u8>>,
    shared: &'a Shared,
    seq: u64,
    order: u64,
    /// Small per-range files read whole, waiting to fill a chunk.
    gathered: Vec<u8>,
    pieces: Vec<Piece>,
}

impl Chunks<'_> {
    /// A buffer for a chunk: a read plus the partial line carried over.
    fn buffer(&self) -> Vec<u8> {
        self.pool.try_recv().unwrap_or_else(|_| vec![0u8; 2 * READ])
    }

    /// Sends the `pieces` of `data` (`len` bytes in all); false when the
    /// parsers are gone.
    fn send(&mut self, data: Data, len: usize, pieces: Vec<Piece>) -> bool {
        for piece in &pieces {
            if self.shared.kind.load(Ordering::Relaxed) == 0 {
                let ranged = self.shared.prefixed[piece.part];
                if let Some(kind) = input::detect_kind(&data[piece.start..piece.end], ranged) {
                    self.shared.kind.store(kind.code(), Ordering::Relaxed);
                }
            }
        }
        let chunk = Chunk {
            seq: self.seq,
            order: self.order,
            pieces,
            data,
            len,
        };
        self.seq += 1;
        self.order += 1;
        self.tx.send(chunk).is_ok()
    }

    /// Sends the gathered files, if any.
    fn send_gathered(&mut self) -> bool {
        if self.pieces.is_empty() {
            return true;
        }
        let len = self.pieces.last().map_or(0, |p| p.end);
        let data = std::mem::take(&mut self.gathered);
        let pieces = std::mem::take(&mut self.pieces);
        self.send(Data::Read(data), len, pieces)
    }

    /// Sends a mapped input (part `index`) in chunks of whole lines, each
    /// asked into memory before it goes; false once the build stops.
    fn send_mapped(&mut self, index: usize, map: Mmap, progress: &dyn Progress) -> bool {
        let map = Arc::new(map);
        let text: &[u8] = &map;
        let mut pos = 0;
        while pos < text.len() {
            if self.shared.stop.load(Ordering::Relaxed) {
                return false;
            }
            let mut end = (pos + READ).min(text.len());
            if end < text.len() {
                match text[pos..end].iter().rposition(|&b| b == b'\n') {
                    Some(nl) => end = pos + nl + 1,
                    None => {
                        if !self.overlong(index) {
                            return false;
                        }
                        // The rest of the overlong line.
                        pos = match text[end..].iter().position(|&b| b == b'\n') {
                            Some(nl) => end + nl + 1,
                            None => text.len(),
                        };
                        continue;
                    }
                }
            }
            // The parser finds the chunk's pages in memory, read from the
            // disk here if they were not, without faulting on each.
            #[cfg(target_os = "linux")]
            let _ = map.advise_range(memmap2::Advice::PopulateRead, pos, end - pos);
            progress.read((end - pos) as u64);
            let piece = Piece {
                part: index,
                start: pos,
                end,
            };
            if !self.send(Data::Mapped(Arc::clone(&map)), end - pos, vec![piece]) {
                return false;
            }
            pos = end;
        }
        true
    }

    /// A line of part `index` longer than a read, at the start of the next
    /// chunk: stops the build, or with `--skip-invalid` counts it as a
    /// chunk of one invalid line. False when the build stops.
    fn overlong(&mut self, index: usize) -> bool {
        let what = format!("line longer than {READ} bytes");
        if !self.shared.skip_invalid {
            let fault = Fault::Bad(what);
            self.shared.fail(
                self.seq,
                Failure::Line {
                    part: index,
                    local: 0,
                    fault,
                },
            );
            return false;
        }
        self.shared.invalid(self.seq, index, 0, what);
        self.shared
            .chunk_lines
            .lock()
            .expect("lines lock")
            .insert((self.seq, index), 1);
        self.seq += 1;
        true
    }
}

/// The reader: every input in order, in chunks of whole lines. Buffers
/// are allocated once (room for a read plus the partial line carried over)
/// and recycled by the parsers. Small per-range files are read whole and
/// gathered, several to a chunk.
fn read_all(
    parts: &mut [Part],
    shared: &Shared,
    tx: &mpsc::SyncSender<Chunk>,
    pool: &mpsc::Receiver<Vec<u8>>,
    progress: &dyn Progress,
) {
    let mut chunks = Chunks {
        tx,
        pool,
        shared,
        seq: 0,
        order: 0,
        gathered: Vec::new(),
        pieces: Vec::new(),
    };
    let mut carry: Vec<u8> = Vec::new();
    for (index, part) in parts.iter_mut().enumerate() {
        if shared.stop.load(Ordering::Relaxed) {
            return;
        }
        let name = part.name.clone();
        let small = part.prefix.is_some() && part.size() < READ as u64 / 4;
        if !small && let Some(map) = part.map(MAP_MIN) {
            if !chunks.send_gathered() || !chunks.send_mapped(index, map, progress) {
                return;
            }
            continue;
        }
        let mut reader = match part.open() {
            Ok(r) => r,
            Err(e) => {
                return shared.fail(
                    chunks.seq,
                    Failure::Error(Error::io(PathBuf::from(&name), e)),
                );
            }
        };
        carry.clear();
        if small {
            if chunks.pieces.last().is_some_and(|p| p.end >= READ) && !chunks.send_gathered() {
                return;
            }
            if chunks.gathered.is_empty() {
                chunks.gathered = chunks.buffer();
            }
            // Below READ, so that a file larger than its size said still
            // leaves room for the read that follows what is carried.
            let start = chunks.pieces.last().map_or(0, |p| p.end);
            let room = &mut chunks.gathered[start..start + READ];
            let n = match input::fill(&mut reader, room) {
                Ok(n) => n,
                Err(e) => {
                    return shared.fail(
                        chunks.seq,
                        Failure::Error(Error::io(PathBuf::from(&name), e)),
                    );
                }
            };
            progress.read(n as u64);
            if n < room.len() {
                chunks.pieces.push(Piece {
                    part: index,
                    start,
                    end: start + n,
                });
                continue;
            }
            // Larger than it said: what was read is carried into the
            // file's own chunks.
            carry.extend_from_slice(&chunks.gathered[start..start + n]);
        }
        if !chunks.send_gathered() {
            return;
        }
        let mut discarding = false;
        loop {
            if shared.stop.load(Ordering::Relaxed) {
                return;
            }
            let mut buf = chunks.buffer();
            let start = carry.len();
            buf[..start].copy_from_slice(&carry);
            carry.clear();
            let n = match input::fill(&mut reader, &mut buf[start..start + READ]) {
                Ok(n) => n,
                Err(e) => {
                    return shared.fail(
                        chunks.seq,
                        Failure::Error(Error::io(PathBuf::from(&name), e)),
                    );
                }
            };
            let eof = n < READ;
            let mut begin = 0;
            let mut len = start + n;
            progress.read(n as u64);
            if discarding {
                // The rest of an overlong line.
                match buf[..len].iter().position(|&b| b == b'\n') {
                    Some(nl) => {
                        begin = nl + 1;
                        discarding = false;
                    }
                    None if eof => break,
                    None => continue,
                }
            }
            if !eof {
                match buf[begin..len].iter().rposition(|&b| b == b'\n') {
                    Some(nl) => {
                        carry.extend_from_slice(&buf[begin + nl + 1..len]);
                        len = begin + nl + 1;
                    }
                    None => {
                        if !chunks.overlong(index) {
                            return;
                        }
                        discarding = true;
                        continue;
                    }
                }
            }
            if begin > 0 {
                buf.copy_within(begin..len, 0);
                len -= begin;
            }
            if len > 0 {
                let piece = Piece {
                    part: index,
                    start: 0,
                    end: len,
                };
                if !chunks.send(Data::Read(buf), len, vec![piece]) {
                    return;
                }
            }
            if eof {
                break;
            }
        }
    }
    chunks.send_gathered();
}

/// Parses a chunk into `sink`, piece by piece. Hashes are decoded 32
/// digits at a time where the CPU has AVX2.
fn parse_chunk(shared: &Shared, chunk: &Chunk, prefixes: &[Option<[u8; 5]>], sink: &mut impl Sink) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, the one feature the function enables.
        return unsafe { parse_chunk_avx2(shared, chunk, prefixes, sink) };
    }
    parse_pieces::<false>(shared, chunk, prefixes, sink);
}

/// [`parse_chunk`] compiled for AVX2.
///
/// # Safety
///
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn parse_chunk_avx2(
    shared: &Shared,
    chunk: &Chunk,
    prefixes: &[Option<[u8; 5]>],
    sink: &mut impl Sink,
) {
    parse_pieces::<true>(shared, chunk, prefixes, sink);
}

/// [`parse_chunk`]'s loop; `WIDE` only when the CPU has AVX2.
#[inline(always)]
fn parse_pieces<const WIDE: bool>(
    shared: &Shared,
    chunk: &Chunk,
    prefixes: &[Option<[u8; 5]>],
    sink: &mut impl Sink,
) {
    for piece in &chunk.pieces {
        let data = &chunk.data[piece.start..piece.end];
        let prefix = prefixes[piece.part].as_ref();
        if !parse_piece::<WIDE>(shared, chunk.seq, piece.part, data, prefix, sink) {
            return;
        }
    }
}

/// Bytes of text a parser asks for ahead of the line it parses. The
/// hardware's own prefetch stops at each 4 KiB page: the first byte read
/// of a line was the parser's dearest load (12% of its samples at 55M,
/// none with this; the parser 22.6% → 18.5% of the build's samples).
const PARSE_AHEAD: usize = 2048;

/// Parses the lines of one input in chunk `seq`; false once the build
/// fails.
#[inline(always)]
fn parse_piece<const WIDE: bool>(
    shared: &Shared,
    seq: u64,
    part: usize,
    data: &[u8],
    prefix: Option<&[u8; 5]>,
    sink: &mut impl Sink,
) -> bool {
    let kind = shared.kind();
    let hex_len = kind.hex_len() - if prefix.is_some() { 5 } else { 0 };
    let ascii = prefix.map(prefix_ascii);
    let mut pos = 0;
    let mut local = 0u64;
    let (mut lines, mut zero, mut capped, mut total) = (0u64, 0u64, 0u64, 0u64);
    let fail = |failure| {
        shared.fail(seq, failure);
        false
    };
    while pos < data.len() {
        sort::prefetch(data, pos + PARSE_AHEAD);
        if let Some((key, count, next)) = input::quick_line::<WIDE>(kind, ascii, hex_len, data, pos)
        {
            if let Err(e) = sink.put(Record::new(key, count)) {
                shared.fail(u64::MAX, Failure::Error(e));
                return false;
            }
            lines += 1;
            total = total.saturating_add(u64::from(count));
            pos = next;
            local += 1;
            continue;
        }
        let end = line_end(data, pos, hex_len);
        match input::parse_line(kind, prefix, &data[pos..end]) {
            Ok(Line::Hash {
                key,
                count,
                capped: c,
            }) => {
                if let Err(e) = sink.put(Record::new(key, count)) {
                    shared.fail(u64::MAX, Failure::Error(e));
                    return false;
                }
                lines += 1;
                capped += u64::from(c);
                total = total.saturating_add(u64::from(count));
            }
            Ok(Line::Skip { zero: z }) => zero += u64::from(z),
            Err(LineError::Mixed) => {
                let fault = Fault::Mixed;
                return fail(Failure::Line { part, local, fault });
            }
            Err(LineError::Bad(what)) => {
                if !shared.skip_invalid {
                    let fault = Fault::Bad(what);
                    return fail(Failure::Line { part, local, fault });
                }
                shared.invalid(seq, part, local, what);
            }
        }
        pos = end + 1;
        local += 1;
    }
    shared
        .chunk_lines
        .lock()
        .expect("lines lock")
        .insert((seq, part), local);
    shared.lines.fetch_add(lines, Ordering::Relaxed);
    shared.zero.fetch_add(zero, Ordering::Relaxed);
    shared.capped.fetch_add(capped, Ordering::Relaxed);
    let _ = shared
        .total
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
            Some(t.saturating_add(total))
        });
    true
}

/// End (the `\n`, or the end of data) of the line starting at `pos`. Looks
/// where a well-formed line ends first, then searches.
#[inline]
fn line_end(data: &[u8], pos: usize, hex_len: usize) -> usize {
    let colon = pos + hex_len;
    if data.get(colon) == Some(&b':') {
        let mut q = colon + 1;
        while q < data.len() && q - colon <= 20 && data[q].is_ascii_digit() {
            q += 1;
        }
        match data.get(q) {
            Some(b'\n') => return q,
            Some(b'\r') if data.get(q + 1) == Some(&b'\n') => return q + 1,
            None => return q,
            _ => {}
        }
    }
    data[pos..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(data.len(), |i| pos + i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::hash::Key;

    #[test]
    fn the_default_budget_is_half_the_memory_and_at_most_4_gib() {
        let budget = default_memory();
        assert!(budget <= DEFAULT_MEMORY_AT_MOST, "{budget}");
        assert!(budget >= 1 << 20, "{budget}");
    }
    use crate::build::partition::TEST_PART_BITS;
    use std::fmt::Write as _;

    /// Inputs gigabytes long are held in up to 1,024 partitions: the same
    /// text gives every hash with its summed count, and the same bytes, in
    /// 256, 512 or 1,024, in one group or many (few bucket bits, or
    /// many), whole or compact.
    #[test]
    fn more_partitions_give_the_same_index() {
        let mut next = crate::testing::rng(0x9A27);
        for (n, key_bits) in [(50, None), (3000, None), (60_000, None), (60_000, Some(40))] {
            let mut text = String::new();
            let mut expect = std::collections::BTreeMap::new();
            for i in 0..n {
                let key = Key {
                    hi: next(),
                    mid: next(),
                    lo: next() as u32,
                };
                let count = next() % 1000 + 1;
                // Some hashes twice, their counts summed.
                let times = if i % 97 == 0 { 2 } else { 1 };
                for _ in 0..times {
                    let (hi, mid, lo) = (key.hi, key.mid, key.lo);
                    let _ = writeln!(text, "{hi:016X}{mid:016X}{lo:08X}:{count}\r");
                }
                *expect.entry(key).or_insert(0) += times * count;
            }
            let expect: Vec<(Key, u64)> = expect.into_iter().collect();
            let options = BuildOptions {
                threads: 2,
                key_bits,
                ..BuildOptions::default()
            };
            let built: Vec<(Vec<u8>, Summary)> = [None, Some(9), Some(10)]
                .into_iter()
                .map(|bits| {
                    TEST_PART_BITS.set(bits);
                    let input = Input::Bytes {
                        name: "corpus".into(),
                        data: text.clone().into_bytes(),
                    };
                    let (bytes, summary) = build_to_vec(vec![input], &options).unwrap();
                    TEST_PART_BITS.set(None);
                    let index = Index::from_bytes(bytes.clone()).unwrap();
                    index.verify().unwrap();
                    if key_bits.is_none() {
                        let pairs = index.iter().collect::<Result<Vec<_>>>().unwrap();
                        assert!(pairs == expect, "{n} hashes in {bits:?} bits");
                    }
                    (bytes, summary)
                })
                .collect();
            let (bytes, summary) = &built[0];
            for (other, other_summary) in &built[1..] {
                assert!(other == bytes, "{n} hashes, {key_bits:?}");
                assert_eq!(other_summary.lines, summary.lines);
                assert_eq!(other_summary.duplicates, summary.duplicates);
            }
        }
    }

    #[test]
    fn groups_are_large_and_cover_every_partition() {
        const PARTS: usize = 256;
        let flat = |groups: &[Vec<usize>]| groups.concat();
        let all: Vec<usize> = (0..PARTS).collect();
        let small = vec![3u64; PARTS];
        assert_eq!(group_partitions(&small, true, 1), vec![all.clone()]);
        let big = vec![MIN_GROUP * 2; PARTS];
        let groups = group_partitions(&big, true, 1);
        assert_eq!(groups.len(), PARTS);
        assert_eq!(flat(&groups), all);
        let medium = vec![MIN_GROUP / 10; PARTS];
        let groups = group_partitions(&medium, true, 1);
        assert_eq!(flat(&groups), all);
        assert!(groups.iter().all(|g| g.len() >= 10));
        assert_eq!(group_partitions(&big, false, 1), vec![all]);
        // Four times the partitions, each a quarter: the same groups, of
        // whole runs of four.
        let quarter = vec![MIN_GROUP / 10 / 4; PARTS * 4];
        let wide = group_partitions(&quarter, true, 4);
        let narrow = group_partitions(&medium, true, 1);
        assert_eq!(wide.len(), narrow.len());
        for (w, n) in wide.iter().zip(&narrow) {
            let runs: Vec<usize> = w.iter().step_by(4).map(|p| p / 4).collect();
            assert_eq!(&runs, n);
            assert_eq!(w.len(), 4 * n.len());
        }
    }
}
