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
//!
//! This module runs the phases; the parts are beside it: [`options`]
//! (what a build is asked and reports), [`reader`] (the reader thread),
//! [`parser`] (the parser threads and the line parser), [`shared`] (what
//! they share), [`pack`] (phase 2).
//!
//! [`options`]: crate::prepare::options
//! [`reader`]: crate::prepare::reader
//! [`parser`]: crate::prepare::parser
//! [`shared`]: crate::prepare::shared
//! [`pack`]: crate::prepare::pack

use std::fs;
use std::io::{self, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Mutex, mpsc};
use std::time::Instant;

use crate::error::{Error, Result};
use crate::format::hash::Kind;
use crate::format::layout::Layout;
use crate::prepare::direct_io::DirectWriter;
use crate::prepare::input::{self, Input, Part};
use crate::prepare::options::{BuildOptions, NoProgress, Progress, Summary};
use crate::prepare::ordered::{Run, Stream, Streamed};
use crate::prepare::pack::pack_partitions;
use crate::prepare::parser::{Queues, parse_chunks};
use crate::prepare::partition::{Budget, Partitions, Segment, Spill};
use crate::prepare::reader::{Chunk, read_all};
use crate::prepare::shared::Shared;
use crate::read::index::Index;
use crate::tmpfile::Nameless;
use crate::write::sorted::{SortedWriter, Written, check_key_bits};
use crate::write::trailer::write_trailer;

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
    let dir = crate::tmpfile::parent_dir(output);
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
    let layout = Layout::compact(kind, summary.lines, key_bits(options, kind)?);
    let packing = pack_partitions(
        &mut out, layout, buffers, &budget, &spill, threads, progress,
    )?;
    summary.hashes += packing.hashes;
    // Merges made before partitioning, less the records that only split a
    // count (see `ordered`), plus those the sort finds.
    let duplicates = merged + packing.duplicates;
    summary.duplicates = duplicates.max(0) as u64;
    let header = write_trailer(
        &mut out,
        layout,
        &packing.dir,
        (summary.hashes, total),
        1,
        None,
    )?;
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
    let shared = Shared::new(parts, input_bytes, options);
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
                    let queues = Queues {
                        chunks: chunk_rx,
                        buffers: pool_tx,
                        runs: run_tx,
                        run_memory: runs_pool_rx,
                    };
                    parse_chunks(
                        shared,
                        prefixes,
                        &queues,
                        Partitions::with_writer(budget, spill, spill_tx),
                    )
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
            shared.faults.stop.store(true, Ordering::Relaxed);
        }
        reader.join().expect("reader thread");
        for h in handles {
            per_thread.push(h.join().expect("parser thread"));
        }
        streamed
    });
    if let Some(e) = shared.take_error() {
        return Err(e);
    }
    let first_invalid = shared.take_first_invalid();
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
        total: shared.counters.total.load(Ordering::Relaxed),
        summary: Summary {
            lines: shared.counters.lines.load(Ordering::Relaxed),
            invalid: shared.counters.invalid.load(Ordering::Relaxed),
            first_invalid,
            zero_counts: shared.counters.zero.load(Ordering::Relaxed),
            capped: shared.counters.capped.load(Ordering::Relaxed),
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

/// Writes to `out` an index of the hashes of `index` seen at least
/// `min_count` times, kept to the same bits; its layout is chosen for the
/// hashes kept.
pub(crate) fn write_subset<W: Write + Seek>(
    index: &Index,
    min_count: u64,
    out: W,
) -> Result<(W, Written)> {
    let stats = index.stats();
    index.advise_sequential();
    let mut writer = SortedWriter::compact(out, stats.kind, stats.key_bits, None)?
        .with_min_count(min_count.max(stats.min_count));
    for item in index.iter() {
        let (key, count) = item?;
        writer.push(key, count)?;
    }
    writer.finish(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::hash::Key;
    use crate::prepare::options::{DEFAULT_MEMORY_AT_MOST, default_memory};

    #[test]
    fn the_default_budget_is_half_the_memory_and_at_most_4_gib() {
        let budget = default_memory();
        assert!(budget <= DEFAULT_MEMORY_AT_MOST, "{budget}");
        assert!(budget >= 1 << 20, "{budget}");
    }
    use crate::prepare::partition::TEST_PART_BITS;
    use std::fmt::Write as _;

    /// Inputs gigabytes long are held in up to 1,024 partitions: the same
    /// text gives every hash with its summed count, and the same bytes, in
    /// 256, 512 or 1,024, in one group or many (few bucket bits, or
    /// many), whole or compact.
    #[test]
    fn more_partitions_give_the_same_index() {
        let mut rng = seekless_testkit::Rng::xorshift64((0x9A27) | 1);
        let mut next = || rng.next_u64();
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
}
