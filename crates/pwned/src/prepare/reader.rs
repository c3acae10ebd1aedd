//! The reader thread of phase 1: inputs cut into chunks of whole lines
//! (large files mapped and only cut at line ends; small per-range files
//! gathered several to a chunk), handed to the parsers in order.

use std::io::Read;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, mpsc};

use memmap2::Mmap;

use crate::error::Error;
use crate::prepare::encoding;
use crate::prepare::input::{self, Part};
use crate::prepare::options::Progress;
use crate::prepare::shared::{Failure, Fault, Shared};

/// Bytes the reader reads at a time (a chunk also holds the partial line
/// carried over from the previous read).
pub(super) const READ: usize = 4 << 20;

/// Input files from this size on are mapped rather than read.
pub(super) const MAP_MIN: u64 = 2 * READ as u64;

pub(super) struct Chunk {
    pub(super) seq: u64,
    /// Place among the chunks sent (`seq` also counts overlong lines).
    pub(super) order: u64,
    pub(super) pieces: Vec<Piece>,
    pub(super) data: Data,
    /// Bytes of text in the pieces.
    pub(super) len: usize,
}

/// Where a chunk's bytes are: a buffer of the reader's (given back to it
/// once parsed), or a mapped input file.
pub(super) enum Data {
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
pub(super) struct Piece {
    pub(super) part: usize,
    pub(super) start: usize,
    pub(super) end: usize,
}

/// Unmaps the pieces of a mapped input once parsed, so that the process
/// holds the chunks in flight, not the whole file (the page cache keeps it
/// as it would after a read).
pub(super) fn release(map: &Mmap, pieces: &[Piece]) {
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
pub(super) struct Chunks<'a> {
    pub(super) tx: &'a mpsc::SyncSender<Chunk>,
    pub(super) pool: &'a mpsc::Receiver<Vec<u8>>,
    pub(super) shared: &'a Shared,
    pub(super) seq: u64,
    pub(super) order: u64,
    /// Small per-range files read whole, waiting to fill a chunk.
    pub(super) gathered: Vec<u8>,
    pub(super) pieces: Vec<Piece>,
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
                let ranged = self.shared.config.prefixed[piece.part];
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
            if self.shared.faults.stop.load(Ordering::Relaxed) {
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
        if !self.shared.config.skip_invalid {
            let fault = Fault::Bad(what);
            self.shared.faults.fail(
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
            .faults
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
pub(super) fn read_all(
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
        if shared.faults.stop.load(Ordering::Relaxed) {
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
                return shared.faults.fail(
                    chunks.seq,
                    Failure::Error(Error::io(PathBuf::from(&name), e)),
                );
            }
        };
        let file = File {
            index,
            name: &name,
            progress,
        };
        carry.clear();
        if small {
            match chunks.gather(&mut reader, &file, &mut carry) {
                Gathered::Stop => return,
                Gathered::Whole => continue,
                Gathered::Larger => {}
            }
        }
        if !chunks.send_gathered() || !chunks.read_file(&mut reader, &file, &mut carry) {
            return;
        }
    }
    chunks.send_gathered();
}

/// The input file being read.
struct File<'f> {
    index: usize,
    name: &'f str,
    progress: &'f dyn Progress,
}

/// What became of a small per-range file read into the gathered chunk.
enum Gathered {
    /// The build stops.
    Stop,
    /// All of it, as one piece of the gathered chunk.
    Whole,
    /// It was larger than it said: what was read is carried into the
    /// file's own chunks.
    Larger,
}

impl Chunks<'_> {
    /// Reads a small per-range file into the chunk that gathers several.
    fn gather(&mut self, reader: &mut dyn Read, file: &File, carry: &mut Vec<u8>) -> Gathered {
        if self.pieces.last().is_some_and(|p| p.end >= READ) && !self.send_gathered() {
            return Gathered::Stop;
        }
        if self.gathered.is_empty() {
            self.gathered = self.buffer();
        }
        // Below READ, so that a file larger than its size said still
        // leaves room for the read that follows what is carried.
        let start = self.pieces.last().map_or(0, |p| p.end);
        let room = &mut self.gathered[start..start + READ];
        let n = match encoding::fill(reader, room) {
            Ok(n) => n,
            Err(e) => {
                self.shared.faults.fail(
                    self.seq,
                    Failure::Error(Error::io(PathBuf::from(file.name), e)),
                );
                return Gathered::Stop;
            }
        };
        file.progress.read(n as u64);
        if n < room.len() {
            self.pieces.push(Piece {
                part: file.index,
                start,
                end: start + n,
            });
            return Gathered::Whole;
        }
        carry.extend_from_slice(&self.gathered[start..start + n]);
        Gathered::Larger
    }

    /// Reads the rest of a file in chunks of whole lines, after what is
    /// carried. Returns whether the build goes on.
    fn read_file(&mut self, reader: &mut dyn Read, file: &File, carry: &mut Vec<u8>) -> bool {
        let index = file.index;
        let mut discarding = false;
        loop {
            if self.shared.faults.stop.load(Ordering::Relaxed) {
                return false;
            }
            let mut buf = self.buffer();
            let start = carry.len();
            buf[..start].copy_from_slice(carry);
            carry.clear();
            let n = match encoding::fill(reader, &mut buf[start..start + READ]) {
                Ok(n) => n,
                Err(e) => {
                    self.shared.faults.fail(
                        self.seq,
                        Failure::Error(Error::io(PathBuf::from(file.name), e)),
                    );
                    return false;
                }
            };
            let eof = n < READ;
            let mut begin = 0;
            let mut len = start + n;
            file.progress.read(n as u64);
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
                        if !self.overlong(index) {
                            return false;
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
                if !self.send(Data::Read(buf), len, vec![piece]) {
                    return false;
                }
            }
            if eof {
                break;
            }
        }
        true
    }
}
