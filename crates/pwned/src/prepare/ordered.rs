//! Input that is already in hash order (HIBP's downloaders write it so:
//! one file sorted by hash, or one file per range) goes straight from the
//! parsers into pages: no partitions, no sort, no spill, memory bounded
//! whatever the corpus size. Nothing says the input is sorted; it is
//! noticed. Parsers hand each chunk's records over as a [`Run`], noting
//! whether they never decrease, and pack a long sorted run into pages
//! themselves ([`Run::pack`]), so that the work is shared by all threads.
//! The [`Stream`] takes the runs in input order and writes them with a
//! [`SortedWriter`] while each continues the last: packed pages as they
//! are, the records of a short run one by one. At the first run that does
//! not continue (an unsorted tail, a hash seen earlier), it falls back to
//! the general build without reading the input again: the index written so
//! far is read back into partitions, together with every run not yet
//! written, and the parsers go on into partitions.

use std::collections::BTreeMap;
use std::io::{Seek, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::Result;
use crate::format::hash::Key;
use crate::format::layout::{Layout, PAGE_BITS};
use crate::format::page::{DirEntry, Encoder, Merged, PageBuf, page_bytes};
use crate::prepare::partition::{Partitions, Segment};
use crate::prepare::sort::{Record, Sink};
use crate::read::index::Index;
use crate::write::sorted::{SortedWriter, Written};

/// Pages a run must fill at least to be packed by its parser: its last page
/// is left partly filled, which costs under 1% of the index from here on.
pub(crate) const MIN_PACKED_PAGES: usize = 64;

/// The records of one chunk, in input order.
#[derive(Debug, Default)]
pub(crate) struct Run {
    /// The chunk's place in the input (0, 1, 2, … over all inputs).
    pub order: u64,
    /// Bytes of text the records were read from.
    pub bytes: usize,
    pub records: Vec<Record>,
    /// Whether no record is smaller than the one before it.
    pub sorted: bool,
    /// What the parser packed into `pages`, when it did.
    packed: Option<Merged>,
    pages: Vec<PageBuf>,
    dir: Vec<DirEntry>,
}

impl Run {
    /// An empty run for chunk `order` of `bytes` bytes, in `memory` (a run
    /// done with).
    pub(crate) fn new(order: u64, bytes: usize, memory: Run) -> Run {
        let mut run = memory;
        run.records.clear();
        run.pages.clear();
        run.dir.clear();
        Run {
            order,
            bytes,
            sorted: true,
            packed: None,
            ..run
        }
    }

    /// Packs the records into pages of `layout` when they are in order and
    /// fill at least `min_pages` pages (otherwise the stream writes them one
    /// by one).
    pub(crate) fn pack(&mut self, layout: Layout, min_pages: usize) {
        let per_page = PAGE_BITS / (layout.l() as usize + 4);
        if !self.sorted || self.records.len() < min_pages * per_page {
            return;
        }
        let mut encoder = Encoder::new(layout);
        encoder.pages = std::mem::take(&mut self.pages);
        encoder.dir = std::mem::take(&mut self.dir);
        let merged = encoder.push_sorted(self.records.iter().map(|r| (r.key(), r.count)));
        encoder.flush();
        self.pages = encoder.pages;
        self.dir = encoder.dir;
        self.packed = Some(merged);
    }
}

impl Sink for Run {
    #[inline]
    fn put(&mut self, record: Record) -> Result<()> {
        if let Some(last) = self.records.last() {
            self.sorted &= last.key() <= record.key();
        }
        self.records.push(record);
        Ok(())
    }
}

/// Where the output is.
enum State<'o, W: Write + Seek> {
    /// Nothing written yet.
    Waiting(&'o mut W),
    /// Runs in order so far.
    Writing(Box<SortedWriter<&'o mut W>>),
    /// Fallen back: the records go into partitions.
    Partitioned(&'o mut W),
    /// Between two of the above.
    Moving,
}

/// Runs taken in input order, written while they stay in order.
pub(crate) struct Stream<'o, 's, 'b, W: Write + Seek> {
    /// Whether parsers hand over runs (until the fall back).
    streaming: &'s AtomicBool,
    state: State<'o, W>,
    /// The layout, chosen from the first run with records.
    layout: &'s dyn Fn(&Run) -> Result<Layout>,
    /// The largest hash written, and whether it was packed.
    last: Option<(Key, bool)>,
    /// Runs that came before their turn.
    early: BTreeMap<u64, Run>,
    next: u64,
    /// After the fall back: the records, by partition.
    partitions: Partitions<'b>,
    /// Hashes merged into others by the writer before the fall back.
    merged: u64,
    /// Records that only split a count over 2^32 - 1 read back.
    split: u64,
    read_back: &'s dyn Fn(&mut W) -> Result<Index>,
}

/// How a [`Stream`] ended.
pub(crate) enum Streamed<'o, 'b, W: Write + Seek> {
    /// Every run was in order: the index is written.
    Written(Written),
    /// Something was out of order: the records are in partitions, with
    /// `duplicates` merges already made (to add to those the sort finds).
    Partitioned {
        out: &'o mut W,
        buffers: Vec<Vec<Segment<'b>>>,
        duplicates: i64,
    },
}

impl<'o, 's, 'b, W: Write + Seek> Stream<'o, 's, 'b, W> {
    pub(crate) fn new(
        out: &'o mut W,
        layout: &'s dyn Fn(&Run) -> Result<Layout>,
        streaming: &'s AtomicBool,
        partitions: Partitions<'b>,
        read_back: &'s dyn Fn(&mut W) -> Result<Index>,
    ) -> Stream<'o, 's, 'b, W> {
        Stream {
            streaming,
            state: State::Waiting(out),
            layout,
            last: None,
            early: BTreeMap::new(),
            next: 0,
            partitions,
            merged: 0,
            split: 0,
            read_back,
        }
    }

    /// Takes a run; returns any run done with, for reuse.
    pub(crate) fn take(&mut self, run: Run) -> Result<Vec<Run>> {
        let mut done = Vec::new();
        if matches!(self.state, State::Partitioned(_)) {
            self.partition(&run)?;
            done.push(run);
            return Ok(done);
        }
        self.early.insert(run.order, run);
        while let Some(run) = self.early.remove(&self.next) {
            self.next += 1;
            if !self.continues(&run)? {
                self.fall_back()?;
                self.partition(&run)?;
                done.push(run);
                for (_, run) in std::mem::take(&mut self.early) {
                    self.partition(&run)?;
                    done.push(run);
                }
                return Ok(done);
            }
            if let Some(last) = run.records.last() {
                let State::Writing(writer) = &mut self.state else {
                    unreachable!("a run with records starts the writer");
                };
                match run.packed {
                    Some(merged) => {
                        let kept = last.key().truncated(writer.key_bits());
                        writer.append(page_bytes(&run.pages), &run.dir, merged, kept)?;
                    }
                    None => {
                        for record in &run.records {
                            writer.push(record.key(), u64::from(record.count))?;
                        }
                    }
                }
                self.last = Some((last.key(), run.packed.is_some()));
            }
            done.push(run);
        }
        Ok(done)
    }

    /// Whether `run` goes on from what is written (starting the writer at
    /// the first run with records). Next to packed pages, where nothing
    /// can be merged any more, a hash must be greater than the one before
    /// in its kept bits; otherwise equal hashes are merged by the writer.
    fn continues(&mut self, run: &Run) -> Result<bool> {
        let Some(first) = run.records.first() else {
            return Ok(true);
        };
        if !run.sorted {
            return Ok(false);
        }
        if let State::Waiting(_) = self.state {
            let layout = (self.layout)(run)?;
            let State::Waiting(out) = std::mem::replace(&mut self.state, State::Moving) else {
                unreachable!("matched above");
            };
            self.state = State::Writing(Box::new(SortedWriter::with_layout(out, layout)?));
        }
        let State::Writing(writer) = &self.state else {
            unreachable!("started above");
        };
        let bits = writer.key_bits();
        Ok(match self.last {
            None => true,
            Some((last, packed)) if packed || run.packed.is_some() => {
                last.truncated(bits) < first.key().truncated(bits)
            }
            Some((last, _)) => last <= first.key(),
        })
    }

    fn partition(&mut self, run: &Run) -> Result<()> {
        for &record in &run.records {
            self.partitions.put(record)?;
        }
        Ok(())
    }

    /// Parsers stop handing over runs; the index written so far is read
    /// back into partitions (a count over 2^32 - 1, the most a record holds,
    /// as several records that the build sums again).
    fn fall_back(&mut self) -> Result<()> {
        self.streaming.store(false, Ordering::Release);
        let out = match std::mem::replace(&mut self.state, State::Moving) {
            State::Writing(writer) => {
                let (out, written) = writer.finish(None)?;
                self.merged = written.duplicates;
                let index = (self.read_back)(out)?;
                for item in index.iter() {
                    let (key, mut count) = item?;
                    loop {
                        let part = count.min(u64::from(u32::MAX));
                        self.partitions.put(Record::new(key, part as u32))?;
                        count -= part;
                        if count == 0 {
                            break;
                        }
                        self.split += 1;
                    }
                }
                out
            }
            State::Waiting(out) | State::Partitioned(out) => out,
            State::Moving => unreachable!("never left moving"),
        };
        self.state = State::Partitioned(out);
        Ok(())
    }

    /// After the last run.
    pub(crate) fn finish(mut self) -> Result<Streamed<'o, 'b, W>> {
        if !self.early.is_empty() && !matches!(self.state, State::Partitioned(_)) {
            // A chunk never came (the build is failing): nothing after the
            // gap can be written in order.
            self.fall_back()?;
            for (_, run) in std::mem::take(&mut self.early) {
                self.partition(&run)?;
            }
        }
        if let State::Waiting(_) = self.state {
            // No record at all: an empty index.
            let layout = (self.layout)(&Run::default())?;
            let State::Waiting(out) = std::mem::replace(&mut self.state, State::Moving) else {
                unreachable!("matched above");
            };
            self.state = State::Writing(Box::new(SortedWriter::with_layout(out, layout)?));
        }
        Ok(match self.state {
            State::Writing(writer) => {
                let (_, written) = writer.finish(None)?;
                Streamed::Written(written)
            }
            State::Partitioned(out) => Streamed::Partitioned {
                out,
                buffers: self.partitions.into_segments()?,
                duplicates: self.merged as i64 - self.split as i64,
            },
            State::Waiting(_) | State::Moving => unreachable!("a writer was started"),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::io::Cursor;

    use super::*;
    use crate::format::hash::Kind;
    use crate::prepare::partition::{Budget, Spill};

    /// Sorted records, with runs of equal hashes and of hashes that share
    /// their top 40 bits.
    fn sorted_records(n: usize, seed: u64) -> Vec<Record> {
        let mut rng = seekless_testkit::Rng::xorshift64((seed) | 1);
        let mut next = || rng.next_u64();
        let mut records = Vec::new();
        while records.len() < n {
            let key = Key {
                hi: next(),
                mid: next(),
                lo: next() as u32,
            };
            records.push(Record::new(key, 1 + (next() % 9) as u32));
            match next() % 16 {
                0 => records.push(Record::new(key, 2)),
                1 => records.push(Record::new(
                    Key {
                        mid: !key.mid,
                        ..key
                    },
                    3,
                )),
                _ => {}
            }
        }
        records.sort_by_key(Record::key);
        records
    }

    /// Counts by kept bits.
    fn model(records: &[Record], bits: u32) -> BTreeMap<Key, u64> {
        let mut map = BTreeMap::new();
        for r in records {
            *map.entry(r.key().truncated(bits)).or_insert(0) += u64::from(r.count);
        }
        map
    }

    /// Cuts `records` into runs of random lengths (some empty, some of many
    /// pages; unless `anywhere`, each cut where the kept bits change),
    /// packing some of them.
    fn runs(records: &[Record], layout: Layout, seed: u64, anywhere: bool) -> Vec<Run> {
        let mut rng = seekless_testkit::Rng::xorshift64((seed) | 1);
        let mut next = || rng.next_u64();
        let kept = |r: &Record| r.key().truncated(layout.key_bits);
        let mut runs = Vec::new();
        let mut rest = records;
        while !rest.is_empty() {
            let mut len = match next() % 4 {
                0 => 0,
                1 => (next() % 50) as usize,
                _ => (next() % 3000) as usize,
            }
            .min(rest.len());
            while !anywhere
                && len > 0
                && len < rest.len()
                && kept(&rest[len - 1]) == kept(&rest[len])
            {
                len += 1;
            }
            let mut run = Run::new(runs.len() as u64, 0, Run::default());
            for &r in &rest[..len] {
                run.put(r).unwrap();
            }
            if !next().is_multiple_of(3) {
                run.pack(layout, 1);
            }
            runs.push(run);
            rest = &rest[len..];
        }
        runs
    }

    /// Streams `runs`, handed over in a shuffled order: the index, or the
    /// records left in partitions after a fall back.
    fn stream(
        mut runs: Vec<Run>,
        layout: Layout,
        seed: u64,
    ) -> std::result::Result<Vec<u8>, Vec<Record>> {
        let mut rng = seekless_testkit::Rng::xorshift64((seed) | 1);
        let mut next = || rng.next_u64();
        for i in 1..runs.len() {
            if next().is_multiple_of(3) {
                runs.swap(i - 1, i);
            }
        }
        let streaming = AtomicBool::new(true);
        let choose = move |_: &Run| Ok(layout);
        let read_back = |w: &mut Cursor<Vec<u8>>| Index::from_bytes(w.get_ref().clone());
        let mut out = Cursor::new(Vec::new());
        let budget = Budget::new(1 << 30, 1, 0).unwrap();
        let spill = Spill::new(&std::env::temp_dir(), budget.parts());
        let partitions = Partitions::new(&budget, &spill);
        let mut stream = Stream::new(&mut out, &choose, &streaming, partitions, &read_back);
        for run in runs {
            stream.take(run).unwrap();
        }
        let ended = match stream.finish().unwrap() {
            Streamed::Written(written) => Ok(written.bytes as usize),
            Streamed::Partitioned { buffers, .. } => Err(buffers
                .iter()
                .flatten()
                .flat_map(|s| s.iter().copied())
                .collect()),
        };
        ended.map(|len| {
            let mut bytes = out.into_inner();
            bytes.truncate(len);
            bytes
        })
    }

    #[test]
    fn packed_and_written_runs_in_any_arrival_order_make_one_index() {
        let n = 20_000;
        for (seed, layout) in [
            // Few bucket bits: buckets straddle runs and pages.
            (1, Layout::whole(Kind::Sha1, 4)),
            (2, Layout::for_count(Kind::Sha1, n as u64)),
            (3, Layout::compact(Kind::Sha1, n as u64, 40)),
            (4, Layout::compact(Kind::Sha1, 16, 40)),
        ] {
            let records = sorted_records(n, seed);
            let want = model(&records, layout.key_bits);
            let runs = runs(&records, layout, seed, false);
            let packed = runs.iter().filter(|r| r.packed.is_some()).count();
            assert!(packed > 3, "{packed} of {} runs packed", runs.len());
            let Ok(bytes) = stream(runs, layout, seed) else {
                panic!("layout {layout:?}: fell back though in order");
            };
            let index = Index::from_bytes(bytes).unwrap();
            index.verify().unwrap();
            let listed: BTreeMap<Key, u64> = index.iter().map(Result::unwrap).collect();
            assert!(listed == want, "layout {layout:?}");
            for r in records.iter().step_by(3) {
                assert_eq!(
                    index.count(r.key()).unwrap(),
                    want[&r.key().truncated(layout.key_bits)],
                    "layout {layout:?}"
                );
            }
        }
    }

    #[test]
    fn a_run_out_of_order_falls_back_with_every_record() {
        let layout = Layout::for_count(Kind::Sha1, 20_000);
        let records = sorted_records(20_000, 5);
        let want = model(&records, 160);
        for case in 0..4 {
            let mut runs = runs(&records, layout, 6 + case, false);
            runs.retain(|run| run.records.len() > 1);
            let j = runs.len() / 2 + case as usize;
            match case {
                // Two runs trade places; a run's first record moves to its end.
                0 | 1 => runs.swap(j, j + 1),
                _ => {
                    let run = &mut runs[j];
                    let first = run.records.remove(0);
                    let mut moved = Run::new(run.order, 0, Run::default());
                    for &r in run.records.iter().chain([&first]) {
                        moved.put(r).unwrap();
                    }
                    *run = moved;
                }
            }
            for (i, run) in runs.iter_mut().enumerate() {
                run.order = i as u64;
            }
            let Err(back) = stream(runs, layout, case) else {
                panic!("case {case}: written though out of order");
            };
            assert!(model(&back, 160) == want, "case {case}");
        }
    }

    #[test]
    fn hashes_equal_in_their_kept_bits_across_runs_are_counted_once() {
        for (seed, layout) in [
            (7, Layout::for_count(Kind::Sha1, 20_000)),
            (8, Layout::compact(Kind::Sha1, 20_000, 40)),
        ] {
            let records = sorted_records(20_000, seed);
            let want = model(&records, layout.key_bits);
            let mut fell_back = 0;
            for cut in 0..8 {
                let runs = runs(&records, layout, seed * 100 + cut, true);
                match stream(runs, layout, cut) {
                    Ok(bytes) => {
                        let index = Index::from_bytes(bytes).unwrap();
                        index.verify().unwrap();
                        let listed: BTreeMap<Key, u64> = index.iter().map(Result::unwrap).collect();
                        assert!(listed == want, "layout {layout:?}, cut {cut}");
                    }
                    Err(back) => {
                        fell_back += 1;
                        assert!(model(&back, layout.key_bits) == want, "layout {layout:?}");
                    }
                }
            }
            assert!(
                fell_back > 0,
                "a packed run next to an equal hash falls back"
            );
        }
    }
}
