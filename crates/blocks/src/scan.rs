//! One pass over the block files: read, de-obfuscate, find records, hash
//! headers (and with `verify`, check whole blocks), collect compact entries.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::sync::{Arc, Mutex, mpsc};

use crate::block::check_block;
use crate::entry::Entry;
use crate::error::{Error, ErrorKind, Result};
use crate::files::BlockFile;
use crate::hash::BlockHash;
use crate::header::{BlockHeader, HEADER_LEN, check_pow, header_hash};
use crate::mapped::MappedFile;
use crate::network::Network;
use crate::reader::{FileQueue, RESERVE, Reader};
use crate::record::{
    BadKind, BadRecord, Event, MAX_BLOCK_SIZE, MIN_BLOCK_SIZE, RECORD_PREFIX_LEN, RecordScanner,
};
use crate::u256::U256;
use crate::xor::XorKey;

/// How much of each file network detection looks at.
const DETECT_LEN: u64 = 8 << 20;

/// Options of a scan.
#[derive(Clone, Debug)]
pub struct ScanOptions {
    /// The network; `None` detects it from the first valid record.
    pub network: Option<Network>,
    /// Parse every transaction and check merkle roots too.
    pub verify: bool,
    /// Bytes per read.
    pub chunk_size: usize,
    /// Read buffers in flight (at least 2).
    pub buffers: usize,
    /// Read on a separate thread, overlapping reading with scanning.
    pub read_ahead: bool,
    /// Search every block body for records hidden by a torn record whose
    /// claimed end falls exactly on a later record's start (reads every
    /// byte; always on with `verify`). Without it, as in Core, a body is
    /// searched only when its record's end does not look like a record
    /// boundary.
    pub thorough: bool,
    /// For header-only scans of plain files: map the files and read only
    /// record headers (and a body only when its record looks torn), instead
    /// of reading every byte.
    pub map_files: bool,
    /// Files scanned at once, each on a thread of its own (default: the
    /// cores). The output is the same for any number. With `verify` and
    /// one file at a time, blocks are checked on this many threads.
    pub threads: usize,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            network: None,
            verify: false,
            chunk_size: 2 << 20,
            buffers: 3,
            read_ahead: true,
            map_files: true,
            thorough: false,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// A bad stretch in one of the scanned files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileBadRecord {
    /// Index of the file in [`ScanOutput::files`].
    pub file: usize,
    /// What was skipped there.
    pub record: BadRecord,
}

/// A block whose header is valid but whose body failed `--verify`.
#[derive(Debug)]
pub struct InvalidBlock {
    /// The block hash.
    pub hash: BlockHash,
    /// Index of the file in [`ScanOutput::files`].
    pub file: usize,
    /// Offset of its record.
    pub offset: u64,
    /// Why it failed.
    pub error: Error,
}

/// What one pass over the files found.
pub struct ScanOutput {
    /// The network scanned for.
    pub network: Network,
    /// The files, in scan order.
    pub files: Vec<BlockFile>,
    /// Bytes read.
    pub bytes: u64,
    /// Records with a valid header, duplicates included.
    pub records: u64,
    /// Skipped stretches, in file order.
    pub bad_records: Vec<FileBadRecord>,
    /// Blocks that failed verification (only with `verify`).
    pub invalid: Vec<InvalidBlock>,
    pub(crate) entries: Vec<Entry>,
    /// [`ScanOptions::threads`], for linking the chain.
    pub(crate) threads: usize,
}

/// Everything but the thread count: the same files give the same output,
/// whatever the threads.
impl std::fmt::Debug for ScanOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScanOutput")
            .field("network", &self.network)
            .field("files", &self.files)
            .field("bytes", &self.bytes)
            .field("records", &self.records)
            .field("bad_records", &self.bad_records)
            .field("invalid", &self.invalid)
            .field("entries", &self.entries)
            .finish_non_exhaustive()
    }
}

/// Finds the network of the first valid record in the first files.
///
/// Looks at the first 64 KiB of each file, then (rarely needed) the first
/// 8 MiB: a record counts as soon as its header is valid, even if the
/// prefix cuts its body.
pub fn detect_network(files: &[BlockFile]) -> Result<Network> {
    for file in files {
        for prefix in [64 << 10, DETECT_LEN] {
            let handle = File::open(&file.path).map_err(|e| Error::io(&file.path, "open", e))?;
            let mut bytes = Vec::with_capacity(prefix as usize);
            handle
                .take(prefix)
                .read_to_end(&mut bytes)
                .map_err(|e| Error::io(&file.path, "read", e))?;
            file.xor.apply(&mut bytes, 0);
            let mut best: Option<(u64, Network)> = None;
            for network in Network::ALL {
                let mut first = None;
                RecordScanner::new(network).feed(&bytes, 0, true, &mut |event| {
                    let offset = match event {
                        Event::Block(block) => Some(block.offset),
                        Event::Bad(BadRecord {
                            offset,
                            kind:
                                BadKind::Truncated {
                                    size: Some(_),
                                    available,
                                },
                            ..
                        }) if available >= HEADER_LEN as u64 => Some(offset),
                        _ => None,
                    };
                    if first.is_none() {
                        first = offset;
                    }
                });
                if let Some(offset) = first
                    && best.is_none_or(|(b, _)| offset < b)
                {
                    best = Some((offset, network));
                }
            }
            if let Some((_, network)) = best {
                return Ok(network);
            }
            if (bytes.len() as u64) < prefix {
                break;
            }
        }
    }
    Err(ErrorKind::NetworkNotDetected.into())
}

/// Scans `files` once, in order. `progress` is called with the number of
/// bytes consumed as the scan advances.
///
/// With [`ScanOptions::threads`] above one, several files are scanned at
/// once (a file's records depend on that file alone) and what they hold is
/// put together in file order: the output is the same as one thread's, and
/// an error is the one the first failing file gives.
pub fn scan(
    files: Vec<BlockFile>,
    options: &ScanOptions,
    progress: &mut dyn FnMut(u64),
) -> Result<ScanOutput> {
    let network = match options.network {
        Some(network) => network,
        None => detect_network(&files)?,
    };
    if files.len() as u64 > Entry::MAX_FILES {
        return Err(ErrorKind::TooManyFiles {
            value: files.len() as u64,
        }
        .into());
    }
    let threads = options.threads.clamp(1, files.len().max(1));
    let scan = Scan {
        queue: FileQueue::new(files.clone()),
        network,
        options,
        step: options.chunk_size.max(1 << 12),
        // One file at a time: `--verify` checks each window's blocks on
        // every thread; several files: on the file's own thread.
        check_threads: if threads > 1 {
            1
        } else {
            options.threads.max(1)
        },
        spare: Mutex::new(Vec::new()),
    };
    let mut found = Found::default();
    if threads > 1 {
        scan.in_parallel(&mut found, threads, progress)?;
    } else {
        let mut failed = None;
        scan.work(
            &mut |file, result| {
                failed = scan.merge(&mut found, file, result).err();
                failed.is_none()
            },
            progress,
        );
        if let Some(e) = failed {
            return Err(e);
        }
    }
    found.entries.shrink_to_fit();
    Ok(ScanOutput {
        network,
        files,
        bytes: found.bytes,
        records: found.records,
        bad_records: found.bad_records,
        invalid: found.invalid,
        entries: found.entries,
        threads: options.threads.max(1),
    })
}

/// What the scan of some files found: the part of [`ScanOutput`] a thread
/// fills for one file, appended to the whole in file order.
#[derive(Debug, Default)]
struct Found {
    bytes: u64,
    records: u64,
    bad_records: Vec<FileBadRecord>,
    invalid: Vec<InvalidBlock>,
    entries: Vec<Entry>,
}

impl Found {
    /// Records one scanner event; false when memory for the entry ran out.
    fn record(&mut self, file: usize, event: Event<'_>) -> bool {
        match event {
            Event::Bad(record) => self.bad_records.push(FileBadRecord { file, record }),
            Event::Block(block) => {
                self.records += 1;
                return self.push(Entry::new(&block, file));
            }
        }
        true
    }

    /// Appends an entry; false when memory ran out.
    fn push(&mut self, entry: Entry) -> bool {
        let room = reserve(&mut self.entries, 1);
        if room {
            self.entries.push(entry);
        }
        room
    }

    /// Appends what a later file held, leaving it empty (its entries'
    /// capacity kept for reuse); false when memory ran out.
    fn append(&mut self, later: &mut Found) -> bool {
        if !reserve(&mut self.entries, later.entries.len()) {
            return false;
        }
        self.entries.append(&mut later.entries);
        self.bytes += std::mem::take(&mut later.bytes);
        self.records += std::mem::take(&mut later.records);
        self.bad_records.append(&mut later.bad_records);
        self.invalid.append(&mut later.invalid);
        true
    }
}

/// Makes room for `more` entries; false when memory ran out. Grows by a
/// sixteenth: large reallocations are remapped, not copied, and the spare
/// capacity stays small.
fn reserve(entries: &mut Vec<Entry>, more: usize) -> bool {
    if entries.capacity() - entries.len() >= more {
        return true;
    }
    let extra = (entries.len() / 16).max(more).max(1024);
    entries.try_reserve_exact(extra).is_ok()
}

/// What a worker thread tells the thread that puts the output together.
enum Message {
    Progress(u64),
    Done(usize, Result<Found>),
}

/// What one file's scan gave, to a callback that says whether to go on.
type Done<'a> = dyn FnMut(usize, Result<Found>) -> bool + 'a;

/// One scan's files and settings, shared by its threads.
struct Scan<'a> {
    queue: Arc<FileQueue>,
    network: Network,
    options: &'a ScanOptions,
    step: usize,
    /// Threads `--verify` checks one window's blocks on.
    check_threads: usize,
    /// Entry vectors of files already appended, for the next files: the
    /// worker threads' memory stays one file's entries each.
    spare: Mutex<Vec<Vec<Entry>>>,
}

impl Scan<'_> {
    fn files(&self) -> &[BlockFile] {
        self.queue.files()
    }

    /// An empty [`Found`], with a spare entry vector if there is one.
    fn found(&self) -> Found {
        Found {
            entries: self
                .spare
                .lock()
                .expect("no panics")
                .pop()
                .unwrap_or_default(),
            ..Found::default()
        }
    }

    /// Appends what `file` held (or returns the error it gave), keeping
    /// its entry vector for [`Scan::found`].
    fn merge(&self, found: &mut Found, file: usize, result: Result<Found>) -> Result<()> {
        let mut more = result?;
        let appended = found.append(&mut more);
        self.spare.lock().expect("no panics").push(more.entries);
        if appended {
            Ok(())
        } else {
            Err(out_of_memory(&self.files()[file].path))
        }
    }

    /// Scans the files on `threads` threads, each taking the next file not
    /// yet taken; this thread reports progress and appends each file's
    /// findings once every earlier file's are in. After a file fails, no
    /// new file is started.
    fn in_parallel(
        &self,
        found: &mut Found,
        threads: usize,
        progress: &mut dyn FnMut(u64),
    ) -> Result<()> {
        let (tx, rx) = mpsc::channel();
        std::thread::scope(|scope| {
            for _ in 0..threads {
                let tx = tx.clone();
                scope.spawn(move || {
                    self.work(
                        &mut |file, result| {
                            let ok = result.is_ok();
                            let _ = tx.send(Message::Done(file, result));
                            ok
                        },
                        &mut |n| {
                            let _ = tx.send(Message::Progress(n));
                        },
                    )
                });
            }
            drop(tx);
            let mut waiting = BTreeMap::new();
            let mut wanted = 0;
            for message in rx {
                match message {
                    Message::Progress(n) => progress(n),
                    Message::Done(file, result) => {
                        waiting.insert(file, result);
                    }
                }
                while let Some(result) = waiting.remove(&wanted) {
                    self.merge(found, wanted, result)
                        .inspect_err(|_| self.queue.stop())?;
                    wanted += 1;
                }
            }
            Ok(())
        })
    }

    /// Scans files from the queue until it is empty or `done` says stop.
    fn work(&self, done: &mut Done<'_>, progress: &mut dyn FnMut(u64)) {
        let options = self.options;
        // Header-only scans map the files; the rest reads every byte.
        if !options.map_files || options.thorough || options.verify {
            return self.reads(done, progress);
        }
        while let Some((file, _)) = self.queue.take() {
            // Overlap the next file's disk reads with this file's scan.
            if let Some(next) = self.files().get(file + 1)
                && let Ok(next) = MappedFile::open(&next.path)
            {
                next.prefetch();
            }
            let mut found = self.found();
            let result = self.mapped(&mut found, file, progress).map(|()| found);
            if !done(file, result) {
                return self.queue.stop();
            }
        }
    }

    /// Every byte of the files read, in chunks of `step` (on a thread of
    /// its own with `read_ahead`), through the [`RecordScanner`]; with
    /// `verify`, every block found checked whole.
    fn reads(&self, done: &mut Done<'_>, progress: &mut dyn FnMut(u64)) {
        let options = self.options;
        let mut reader = Reader::start(
            self.queue.clone(),
            self.step,
            options.buffers,
            options.read_ahead,
        );
        let mut found = self.found();
        let mut scanner = RecordScanner::new(self.network);
        let mut current_file = usize::MAX;
        // The previous buffer and the range of it the scanner still needs.
        let mut previous: Option<(Vec<u8>, usize, usize)> = None;
        while let Some(chunk) = reader.next() {
            let mut chunk = match chunk {
                Ok(chunk) => chunk,
                Err((file, e)) => {
                    done(file, Err(e));
                    return self.queue.stop();
                }
            };
            let file = chunk.file;
            if file != current_file {
                current_file = file;
                scanner = RecordScanner::new(self.network).padding(self.files()[file].xor);
                if options.thorough || options.verify {
                    scanner = scanner.thorough();
                }
                if let Some((buf, _, _)) = previous.take() {
                    reader.recycle(buf);
                }
            }
            let mut tail = 0;
            if let Some((buf, start, end)) = previous.take() {
                tail = end - start;
                chunk.buf[RESERVE - tail..RESERVE].copy_from_slice(&buf[start..end]);
                reader.recycle(buf);
            }
            let window_start = RESERVE - tail;
            let window = &chunk.buf[window_start..RESERVE + chunk.len];
            let base = chunk.base - tail as u64;
            let keep = match self.window(&mut found, &mut scanner, file, window, base, chunk.eof) {
                Ok(keep) => keep,
                Err(e) => {
                    done(file, Err(e));
                    return self.queue.stop();
                }
            };
            found.bytes += chunk.len as u64;
            progress(chunk.len as u64);
            if chunk.eof && !done(file, Ok(std::mem::replace(&mut found, self.found()))) {
                return self.queue.stop();
            }
            let keep_from = window_start + (keep - base) as usize;
            previous = Some((chunk.buf, keep_from, RESERVE + chunk.len));
        }
    }

    /// Feeds one window of `file` (starting at file offset `base`) to the
    /// scanner and, with `verify`, checks the blocks found in it. Returns
    /// the offset from which the scanner needs the bytes again.
    fn window(
        &self,
        found: &mut Found,
        scanner: &mut RecordScanner,
        file: usize,
        window: &[u8],
        base: u64,
        eof: bool,
    ) -> Result<u64> {
        if base + window.len() as u64 > Entry::MAX_OFFSET {
            return Err(ErrorKind::TooManyFiles {
                value: base + window.len() as u64,
            }
            .into());
        }
        let verify = self.options.verify;
        let mut ok = true;
        let mut to_verify = Vec::new();
        let keep = scanner.feed(window, base, eof, &mut |event| {
            if let (true, Event::Block(block)) = (verify, &event) {
                to_verify.push((found.entries.len(), block.offset, block.size, block.hash));
            }
            ok &= found.record(file, event)
        });
        if !ok {
            return Err(out_of_memory(&self.files()[file].path));
        }
        self.verify_blocks(found, file, window, base, to_verify);
        Ok(keep)
    }

    /// Checks the blocks found in `window` (which starts at file offset
    /// `base`), each given as its entry's index, record offset, size and
    /// hash: a block that fails has its entry marked invalid and is reported.
    fn verify_blocks(
        &self,
        found: &mut Found,
        file: usize,
        window: &[u8],
        base: u64,
        to_verify: Vec<(usize, u64, u32, BlockHash)>,
    ) {
        let blocks: Vec<&[u8]> = to_verify
            .iter()
            .map(|&(_, offset, size, _)| {
                let start = (offset - base) as usize + RECORD_PREFIX_LEN;
                &window[start..start + size as usize]
            })
            .collect();
        let results = check_blocks(&blocks, self.network.pow_limit(), self.check_threads);
        for ((entry, offset, _, hash), result) in to_verify.into_iter().zip(results) {
            if let Err(error) = result {
                found.entries[entry].mark_invalid();
                found.invalid.push(InvalidBlock {
                    hash,
                    file,
                    offset,
                    error,
                });
            }
        }
    }
}

fn out_of_memory(path: &std::path::Path) -> Error {
    Error::io(
        path,
        "index",
        std::io::Error::from(std::io::ErrorKind::OutOfMemory),
    )
}

/// Checks blocks on up to `threads` threads: hashing the transactions is the
/// cost of `--verify`, and blocks are independent. Results are in input
/// order.
fn check_blocks(
    blocks: &[&[u8]],
    pow_limit: U256,
    threads: usize,
) -> Vec<Result<crate::block::BlockSummary>> {
    let total: usize = blocks.iter().map(|b| b.len()).sum();
    let threads = threads.min(blocks.len());
    if threads <= 1 || total < 1 << 20 {
        return blocks.iter().map(|b| check_block(b, pow_limit)).collect();
    }
    // Contiguous groups of about equal bytes.
    let mut groups: Vec<&[&[u8]]> = Vec::with_capacity(threads);
    let (mut start, mut acc) = (0, 0);
    for (i, block) in blocks.iter().enumerate() {
        acc += block.len();
        if acc * threads >= total * (groups.len() + 1) && groups.len() + 1 < threads {
            groups.push(&blocks[start..=i]);
            start = i + 1;
        }
    }
    groups.push(&blocks[start..]);
    std::thread::scope(|scope| {
        let handles: Vec<_> = groups
            .iter()
            .map(|group| {
                scope.spawn(move || {
                    group
                        .iter()
                        .map(|b| check_block(b, pow_limit))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("block checks do not panic"))
            .collect()
    })
}

/// Reads `at..at + HOP_LEN` of a mapped file, de-obfuscated, into `buf`;
/// returns how many bytes there were.
fn read_hop(map: &[u8], key: XorKey, at: usize, buf: &mut [u8; HOP_LEN]) -> usize {
    let n = map.len().saturating_sub(at).min(HOP_LEN);
    buf[..n].copy_from_slice(&map[at..at + n]);
    key.apply(&mut buf[..n], at as u64);
    n
}

const HOP_LEN: usize = RECORD_PREFIX_LEN + HEADER_LEN;

/// How far a mapped scan gets before it lets the kernel drop the pages
/// behind it: what each thread keeps resident of its file.
const RELEASE: usize = 256 << 10;

/// A valid record start (magic, size, header meeting its nBits) in `bytes`.
fn valid_start(
    bytes: &[u8],
    magic: [u8; 4],
    pow_limit: U256,
) -> Option<(u32, BlockHash, BlockHeader)> {
    if bytes.len() < HOP_LEN || bytes[..4] != magic {
        return None;
    }
    let size = u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes"));
    if !(MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE).contains(&size) {
        return None;
    }
    let header: &[u8; HEADER_LEN] = bytes[8..HOP_LEN].try_into().expect("80 bytes");
    let hash = header_hash(header);
    let header = BlockHeader::parse(header);
    check_pow(&hash, header.bits, pow_limit).then_some((size, hash, header))
}

impl Scan<'_> {
    /// One mapped file, plain or obfuscated. While records follow each
    /// other (the normal case) it hops from header to header, de-obfuscating
    /// only those 88 bytes: block bodies are never touched. At the first
    /// record whose end does not look like a record boundary it hands the
    /// rest of the file to the [`RecordScanner`], which then sees exactly
    /// what it would have seen from the start (its state is empty at a
    /// record boundary).
    fn mapped(&self, found: &mut Found, file: usize, progress: &mut dyn FnMut(u64)) -> Result<()> {
        let block_file = &self.files()[file];
        let map = MappedFile::open(&block_file.path)?;
        map.prefetch();
        if map.len() as u64 > Entry::MAX_OFFSET {
            return Err(ErrorKind::TooManyFiles {
                value: map.len() as u64,
            }
            .into());
        }
        let (network, step) = (self.network, self.step);
        let (key, magic, pow_limit) = (block_file.xor, network.magic(), network.pow_limit());
        let len = map.len();
        let mut buf = [0u8; HOP_LEN];
        let mut pos = 0usize;
        let mut next: Option<(usize, u32, BlockHash, BlockHeader)> = None;
        let (mut released, mut reported) = (0usize, 0usize);
        while pos < len {
            let start = match next.take() {
                Some((at, size, hash, header)) if at == pos => Some((size, hash, header)),
                _ => {
                    let n = read_hop(&map, key, pos, &mut buf);
                    valid_start(&buf[..n], magic, pow_limit)
                }
            };
            let Some((size, hash, header)) = start else {
                break;
            };
            let end = pos + RECORD_PREFIX_LEN + size as usize;
            if end > len {
                break;
            }
            // The record's end must look like a boundary, as the scanner requires.
            let plausible = end == len || {
                let n = read_hop(&map, key, end, &mut buf);
                let after = &buf[..n];
                // Padding: zero bytes on disk, obfuscated or not.
                if map[end..end + n].iter().all(|&b| b == 0) {
                    true
                } else if let Some((size, hash, header)) = valid_start(after, magic, pow_limit) {
                    next = Some((end, size, hash, header));
                    true
                } else {
                    // A record torn by the end of the file also counts.
                    n < HOP_LEN
                        && after.starts_with(&magic)
                        && (n < RECORD_PREFIX_LEN
                            || (MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE).contains(&u32::from_le_bytes(
                                after[4..8].try_into().expect("4 bytes"),
                            )))
                }
            };
            if !plausible {
                break;
            }
            found.records += 1;
            if !found.push(Entry::from_header(&hash, &header, size, file, pos as u64)) {
                return Err(out_of_memory(&block_file.path));
            }
            pos = end;
            if pos - reported >= step {
                progress((pos - reported) as u64);
                found.bytes += (pos - reported) as u64;
                reported = pos;
            }
            if pos - released >= RELEASE {
                map.release(pos);
                released = pos;
            }
        }
        // The rest (corruption, padding, a torn tail) goes through the scanner,
        // in windows, de-obfuscated into a buffer when the file is obfuscated.
        let mut scanner = RecordScanner::new(network)
            .padding(key)
            .start_at(pos as u64);
        let (mut keep, mut end) = (pos, pos);
        let mut plain = Vec::new();
        while end < len || keep < len {
            end = (end + step).min(len);
            let eof = end == len;
            let window: &[u8] = if key.is_zero() {
                &map[keep..end]
            } else {
                plain.clear();
                plain.extend_from_slice(&map[keep..end]);
                key.apply(&mut plain, keep as u64);
                &plain
            };
            let mut ok = true;
            let next_keep = scanner.feed(window, keep as u64, eof, &mut |event| {
                ok &= found.record(file, event)
            });
            if !ok {
                return Err(out_of_memory(&block_file.path));
            }
            keep = next_keep as usize;
            if keep - released >= RELEASE {
                map.release(keep);
                released = keep;
            }
            if eof {
                break;
            }
        }
        progress((len - reported) as u64);
        found.bytes += (len - reported) as u64;
        Ok(())
    }
}
