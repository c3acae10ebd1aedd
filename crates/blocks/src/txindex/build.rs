//! Building the transaction index: the best chain's blocks read once each
//! in file order, one record a transaction (full txid and position),
//! sorted in memory up to a budget and spilled as sorted runs, merged,
//! repeated txids resolved to the later one, written page by page under a
//! temporary name and renamed when complete.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};

use super::format::{
    self, Entry, HEADER_LEN, Header, KEY_LEN, MAX_FILES, MAX_U24, Meta, MetaFile, PAGE, PAGE_SLOTS,
};
use crate::chain::{BlockInfo, Chain};
use crate::error::{Error, ErrorKind, Result};
use crate::fetch::BlockFetcher;
use crate::files::BlockFile;
use crate::header::HEADER_LEN as BLOCK_HEADER_LEN;
use crate::record::RECORD_PREFIX_LEN;
use crate::tx::{Cursor, Transaction};

/// The memory [`build_txindex`] sorts in by default.
pub const DEFAULT_TXINDEX_MEMORY: u64 = 1 << 30;

/// How to build a transaction index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxIndexOptions {
    /// Bytes of transaction records sorted in memory before a sorted run
    /// is spilled to disk (each record takes 56 bytes).
    pub memory: u64,
    /// Threads that parse and hash blocks (one more reads them); the
    /// index is the same for any number.
    pub threads: usize,
}

impl Default for TxIndexOptions {
    fn default() -> Self {
        TxIndexOptions {
            memory: DEFAULT_TXINDEX_MEMORY,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// What [`build_txindex`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TxIndexReport {
    /// Transactions in the index.
    pub transactions: u64,
    /// Best-chain blocks read.
    pub blocks: u64,
    /// Bytes of blocks read.
    pub block_bytes: u64,
    /// Transactions left out because a later block repeats their txid
    /// (BIP 30's two exceptions on main).
    pub repeated: u64,
    /// Sorted runs written to disk (0: sorted in memory alone), those
    /// merged from others included (at most 64 are merged at once).
    pub runs: usize,
    /// The index file's length.
    pub index_bytes: u64,
}

/// One transaction while building: its txid and where it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Record {
    txid: [u8; 32],
    height: u32,
    position: u32,
    len: u32,
    file: u32,
    offset: u64,
}

const RECORD_BYTES: usize = 56;

impl Record {
    fn encode(&self) -> [u8; RECORD_BYTES] {
        let mut out = [0u8; RECORD_BYTES];
        out[..32].copy_from_slice(&self.txid);
        out[32..36].copy_from_slice(&self.height.to_le_bytes());
        out[36..40].copy_from_slice(&self.position.to_le_bytes());
        out[40..44].copy_from_slice(&self.len.to_le_bytes());
        out[44..48].copy_from_slice(&self.file.to_le_bytes());
        out[48..56].copy_from_slice(&self.offset.to_le_bytes());
        out
    }

    fn decode(bytes: &[u8; RECORD_BYTES]) -> Record {
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4"));
        Record {
            txid: bytes[..32].try_into().expect("32 bytes"),
            height: u32_at(32),
            position: u32_at(36),
            len: u32_at(40),
            file: u32_at(44),
            offset: u64::from_le_bytes(bytes[48..56].try_into().expect("8 bytes")),
        }
    }

    fn entry(&self) -> Entry {
        Entry {
            key: self.txid[..KEY_LEN].try_into().expect("6 bytes"),
            len: self.len,
            position: self.position,
            height: self.height,
            file: self.file,
            offset: self.offset,
        }
    }
}

/// Builds the transaction index of `chain`'s best chain, read from
/// `files` (the scan's), into the file `out`; `progress` gets the bytes of
/// each block read. The index is written beside `out` under a temporary
/// name and takes its name only when complete; spilled runs go to a
/// directory beside it, removed at the end. The same files give the same
/// index, byte for byte, whatever `options.memory`.
pub fn build_txindex(
    chain: &Chain,
    files: &[BlockFile],
    out: &Path,
    options: &TxIndexOptions,
    progress: &mut dyn FnMut(u64),
) -> Result<TxIndexReport> {
    if files.len() as u64 > MAX_FILES as u64 {
        return Err(ErrorKind::TooManyFiles {
            value: files.len() as u64,
        }
        .into());
    }
    let scratch = Scratch::new(out);
    let mut report = TxIndexReport::default();
    let mut sorter = Sorter::new(options.memory, &scratch.runs_dir);
    let best: Vec<BlockInfo> = chain.best_chain().collect();
    let mut by_file: Vec<&BlockInfo> = best.iter().collect();
    by_file.sort_by_key(|b| (b.file, b.offset));
    read_blocks(&by_file, files, options.threads, &mut |records, size| {
        report.blocks += 1;
        report.block_bytes += size;
        progress(size);
        records
            .into_iter()
            .try_for_each(|record| sorter.push(record))
    })?;
    let total = sorter.total;
    let meta = Meta {
        tip: best.last().map_or([0; 32], |b| b.hash.0),
        files: files.iter().map(meta_file).collect::<Result<_>>()?,
    };
    let mut writer = IndexWriter::create(&scratch.temp, meta, total)?;
    let mut pending: Option<Record> = None;
    sorter.merge(&mut |record| {
        if let Some(previous) = pending.replace(record) {
            if previous.txid == record.txid {
                // The later block's wins, as in Core's txindex.
                report.repeated += 1;
            } else {
                writer.push(previous.entry())?;
            }
        }
        Ok(())
    })?;
    report.runs = sorter.next_run;
    if let Some(last) = pending {
        writer.push(last.entry())?;
    }
    report.transactions = writer.entries;
    report.index_bytes = writer.finish(chain.network().magic(), &best)?;
    scratch.commit(out)?;
    Ok(report)
}

/// Reads `blocks` in the order given on one thread and parses and hashes
/// them on `threads`; `sink` gets each block's records and size, in no
/// particular order (the index sorts them).
fn read_blocks(
    blocks: &[&BlockInfo],
    files: &[BlockFile],
    threads: usize,
    sink: &mut dyn FnMut(Vec<Record>, u64) -> Result<()>,
) -> Result<()> {
    let threads = threads.max(1);
    let (work, jobs) = mpsc::sync_channel::<(BlockInfo, Vec<u8>)>(2 * threads);
    let jobs = Arc::new(Mutex::new(jobs));
    let (done, results) = mpsc::sync_channel::<Result<(Vec<Record>, u64)>>(2 * threads);
    std::thread::scope(|scope| {
        let reader = scope.spawn(move || -> Result<()> {
            let mut fetcher = BlockFetcher::new(files);
            for info in blocks {
                let mut block = Vec::new();
                fetcher.read(info, &mut block)?;
                if work.send((**info, block)).is_err() {
                    break; // the sink stopped: its error is the one to report
                }
            }
            Ok(())
        });
        for _ in 0..threads {
            let (jobs, done) = (Arc::clone(&jobs), done.clone());
            scope.spawn(move || {
                loop {
                    let job = jobs.lock().map(|jobs| jobs.recv());
                    let Ok(Ok((info, block))) = job else { break };
                    let parsed = read_block(&info, &block).map(|r| (r, block.len() as u64));
                    if done.send(parsed).is_err() {
                        break;
                    }
                }
            });
        }
        // Only the workers hold the job queue now: when they end, the
        // reader's sends fail.
        drop((done, jobs));
        let consumed = results
            .into_iter()
            .try_for_each(|result| result.and_then(|(records, size)| sink(records, size)));
        // On an error the receiver is dropped here: the workers' sends and
        // then the reader's fail, and every thread ends.
        let read = reader.join().expect("the block reader does not panic");
        consumed.and(read)
    })
}

/// The records of one block's transactions.
fn read_block(info: &BlockInfo, block: &[u8]) -> Result<Vec<Record>> {
    let mut records = Vec::new();
    let height = info.height.expect("best-chain blocks have heights");
    let unparsable = |e: Error| -> Error {
        ErrorKind::UnparsableBlock {
            hash: info.hash.0,
            height,
            detail: e.to_string(),
        }
        .into()
    };
    let body = block.get(BLOCK_HEADER_LEN..).unwrap_or_default();
    let mut cursor = Cursor::new(body, BLOCK_HEADER_LEN);
    let count = cursor
        .compact_size("transaction count")
        .map_err(unparsable)?;
    let mut at = BLOCK_HEADER_LEN + cursor.pos();
    let start = info.offset + RECORD_PREFIX_LEN as u64;
    for position in 0..count {
        let (tx, len) = Transaction::parse(&block[at..], at).map_err(unparsable)?;
        if len as u64 > MAX_U24 as u64 || position > MAX_U24 as u64 {
            return Err(unparsable(
                ErrorKind::SizeTooLarge {
                    offset: at,
                    size: len as u64,
                    limit: MAX_U24 as u64,
                }
                .into(),
            ));
        }
        records.push(Record {
            txid: tx.txid(),
            height,
            position: position as u32,
            len: len as u32,
            file: info.file as u32,
            offset: start + at as u64,
        });
        at += len;
    }
    Ok(records)
}

fn meta_file(file: &BlockFile) -> Result<MetaFile> {
    let absolute =
        std::path::absolute(&file.path).map_err(|e| Error::io(&file.path, "resolve", e))?;
    let path = absolute.to_string_lossy().into_owned();
    if path.len() > u16::MAX as usize {
        let too_long =
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "path above 65535 bytes");
        return Err(Error::io(&file.path, "index", too_long));
    }
    Ok(MetaFile {
        path,
        len: file.len,
        xor: file.xor.0,
    })
}

/// The temporary index file and the runs directory beside the output,
/// removed on drop unless the index was renamed into place.
struct Scratch {
    temp: PathBuf,
    runs_dir: PathBuf,
}

impl Scratch {
    fn new(out: &Path) -> Scratch {
        let name = out
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let beside = |suffix: &str| {
            out.with_file_name(format!(
                ".{name}.seekless-txindex-{}{suffix}",
                std::process::id()
            ))
        };
        Scratch {
            temp: beside(".tmp"),
            runs_dir: beside(""),
        }
    }

    fn commit(&self, out: &Path) -> Result<()> {
        std::fs::rename(&self.temp, out).map_err(|e| Error::io(out, "rename into place", e))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.temp);
        let _ = std::fs::remove_dir_all(&self.runs_dir);
    }
}

/// Records sorted in memory up to a budget, spilled as sorted runs.
struct Sorter<'a> {
    capacity: usize,
    buffer: Vec<Record>,
    runs: Vec<PathBuf>,
    /// The number of the next run file.
    next_run: usize,
    dir: &'a Path,
    total: u64,
}

impl<'a> Sorter<'a> {
    fn new(memory: u64, dir: &'a Path) -> Sorter<'a> {
        let capacity = (memory / RECORD_BYTES as u64).clamp(1, usize::MAX as u64 / 2) as usize;
        Sorter {
            capacity,
            buffer: Vec::new(),
            runs: Vec::new(),
            next_run: 0,
            dir,
            total: 0,
        }
    }

    fn push(&mut self, record: Record) -> Result<()> {
        if self.buffer.len() >= self.capacity {
            self.spill()?;
        }
        if self.buffer.len() == self.buffer.capacity() {
            // Grow by doubling, but never past the budget.
            let room = self.capacity - self.buffer.len();
            self.buffer
                .reserve_exact(self.buffer.len().max(1024).min(room));
        }
        self.buffer.push(record);
        self.total += 1;
        Ok(())
    }

    fn spill(&mut self) -> Result<()> {
        if self.runs.is_empty() {
            std::fs::create_dir_all(self.dir).map_err(|e| Error::io(self.dir, "create", e))?;
        }
        self.buffer.sort_unstable();
        let path = self.dir.join(format!("run{}", self.next_run));
        self.next_run += 1;
        let mut writer = RunWriter::create(&path)?;
        self.buffer
            .drain(..)
            .try_for_each(|record| writer.write(record))?;
        writer.finish()?;
        self.runs.push(path);
        if self.runs.len() >= MAX_RUNS {
            // Files open at once stay few, whatever the budget: the runs
            // so far become one.
            let path = self.dir.join(format!("run{}", self.next_run));
            self.next_run += 1;
            let mut writer = RunWriter::create(&path)?;
            merge_runs(&self.runs, &mut |record| writer.write(record))?;
            writer.finish()?;
            for old in self.runs.drain(..) {
                std::fs::remove_file(&old).map_err(|e| Error::io(&old, "remove", e))?;
            }
            self.runs.push(path);
        }
        Ok(())
    }

    /// Gives every record in order.
    fn merge(&mut self, sink: &mut dyn FnMut(Record) -> Result<()>) -> Result<()> {
        if self.runs.is_empty() {
            self.buffer.sort_unstable();
            return self.buffer.drain(..).try_for_each(sink);
        }
        if !self.buffer.is_empty() {
            self.spill()?;
        }
        merge_runs(&self.runs, sink)
    }
}

/// Runs merged at once, at most: more are merged into one first.
const MAX_RUNS: usize = 64;

/// A sorted run being written.
struct RunWriter<'a> {
    path: &'a Path,
    out: BufWriter<File>,
}

impl<'a> RunWriter<'a> {
    fn create(path: &'a Path) -> Result<RunWriter<'a>> {
        let file = File::create(path).map_err(|e| Error::io(path, "create", e))?;
        Ok(RunWriter {
            path,
            out: BufWriter::with_capacity(1 << 16, file),
        })
    }

    fn write(&mut self, record: Record) -> Result<()> {
        self.out
            .write_all(&record.encode())
            .map_err(|e| Error::io(self.path, "write", e))
    }

    fn finish(mut self) -> Result<()> {
        self.out
            .flush()
            .map_err(|e| Error::io(self.path, "write", e))
    }
}

/// The records of sorted `runs`, in order.
fn merge_runs(runs: &[PathBuf], sink: &mut dyn FnMut(Record) -> Result<()>) -> Result<()> {
    let mut readers = Vec::with_capacity(runs.len());
    let mut heap = BinaryHeap::new();
    for (i, path) in runs.iter().enumerate() {
        let file = File::open(path).map_err(|e| Error::io(path, "open", e))?;
        let mut reader = BufReader::with_capacity(1 << 16, file);
        if let Some(record) = next_record(&mut reader, path)? {
            heap.push(Reverse((record, i)));
        }
        readers.push(reader);
    }
    while let Some(Reverse((record, i))) = heap.pop() {
        sink(record)?;
        if let Some(next) = next_record(&mut readers[i], &runs[i])? {
            heap.push(Reverse((next, i)));
        }
    }
    Ok(())
}

fn next_record(reader: &mut BufReader<File>, path: &Path) -> Result<Option<Record>> {
    let mut bytes = [0u8; RECORD_BYTES];
    match reader.read_exact(&mut bytes) {
        Ok(()) => Ok(Some(Record::decode(&bytes))),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
        Err(e) => Err(Error::io(path, "read", e)),
    }
}

/// Writes pages as entries come in txid order, then the block table and
/// the header.
struct IndexWriter<'a> {
    path: &'a Path,
    out: BufWriter<File>,
    meta: Vec<u8>,
    home_pages: u64,
    /// The page being filled, and its entries.
    current: u64,
    buffer: Vec<Entry>,
    /// Pages written so far.
    written: u64,
    entries: u64,
    page: Box<[u8; PAGE]>,
}

impl<'a> IndexWriter<'a> {
    fn create(path: &'a Path, meta: Meta, expected: u64) -> Result<IndexWriter<'a>> {
        let meta = meta.encode();
        if meta.len() > format::MAX_META as usize {
            return Err(ErrorKind::TooManyFiles {
                value: meta.len() as u64,
            }
            .into());
        }
        let file = File::create(path).map_err(|e| Error::io(path, "create", e))?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        let start = Header {
            meta_len: meta.len() as u32,
            ..Header::empty()
        }
        .pages_start();
        // The header is written last; zeros hold its place.
        let mut lead = vec![0u8; start as usize];
        lead[HEADER_LEN..HEADER_LEN + meta.len()].copy_from_slice(&meta);
        out.write_all(&lead)
            .map_err(|e| Error::io(path, "write", e))?;
        Ok(IndexWriter {
            path,
            out,
            meta,
            home_pages: format::home_pages_for(expected),
            current: 0,
            buffer: Vec::with_capacity(PAGE_SLOTS),
            written: 0,
            entries: 0,
            page: Box::new([0; PAGE]),
        })
    }

    fn push(&mut self, entry: Entry) -> Result<()> {
        let home = format::home_page(&entry.key, self.home_pages);
        if home > self.current {
            self.flush()?;
            self.current = home;
        } else if self.buffer.len() == PAGE_SLOTS {
            self.flush()?;
            self.current += 1;
        }
        self.buffer.push(entry);
        self.entries += 1;
        Ok(())
    }

    /// Writes empty pages up to the current one, then it.
    fn flush(&mut self) -> Result<()> {
        self.pad_to(self.current)?;
        format::encode_page(&self.buffer, &mut self.page);
        self.out
            .write_all(&self.page[..])
            .map_err(|e| Error::io(self.path, "write", e))?;
        self.buffer.clear();
        self.written += 1;
        Ok(())
    }

    fn pad_to(&mut self, page: u64) -> Result<()> {
        format::encode_page(&[], &mut self.page);
        while self.written < page {
            self.out
                .write_all(&self.page[..])
                .map_err(|e| Error::io(self.path, "write", e))?;
            self.written += 1;
        }
        Ok(())
    }

    /// Writes the last pages, the block table and the header; syncs.
    /// Returns the file's length.
    fn finish(mut self, network: [u8; 4], best: &[BlockInfo]) -> Result<u64> {
        self.flush()?;
        self.pad_to(self.home_pages)?;
        let io = |e| Error::io(self.path, "write", e);
        for (height, block) in best.iter().enumerate() {
            let record = format::encode_block(height as u32, &block.hash.0, block.time);
            self.out.write_all(&record).map_err(io)?;
        }
        let header = Header {
            entries: self.entries,
            home_pages: self.home_pages,
            pages: self.written,
            blocks: best.len() as u32,
            network,
            meta_len: self.meta.len() as u32,
            ..Header::empty()
        };
        let mut file = self.out.into_inner().map_err(|e| io(e.into_error()))?;
        file.seek(SeekFrom::Start(0))
            .and_then(|_| file.write_all(&header.encode(&self.meta)))
            .and_then(|()| file.sync_all())
            .map_err(io)?;
        Ok(header.file_len())
    }
}
