//! The record scanner: finds `magic | size | block` records in a block file's
//! bytes, resyncing on corruption the way Core's `LoadExternalBlockFile` does.
//!
//! The scanner is fed consecutive windows of one file (de-obfuscated already)
//! and tells the caller from which offset it must keep the bytes; it never
//! allocates, so a size field is only ever compared, never trusted.
//!
//! A record at offset `q` is accepted when the network magic is at `q`, the
//! little-endian size at `q + 4` is within 80..=4,000,000 and the 80-byte
//! header at `q + 8` meets its own nBits. Its claimed end is `q + 8 + size`.
//! If another acceptable record starts inside that range, the first record
//! was torn (a truncated write followed by a new record): it is reported as
//! truncated and scanning continues at the inner record, so nothing valid
//! after a bad record is lost. Anything else is skipped byte by byte up to the
//! next magic: garbage (non-zero bytes that start no record), a bad size, a
//! header failing proof of work, or a record cut short by the end of the file.
//! Zero bytes between records (Core's preallocation; for obfuscated files,
//! zero bytes on disk) are not reported.

use memchr::memmem;

use crate::hash::BlockHash;
use crate::header::{BlockHeader, HEADER_LEN, check_pow, header_hash};
use crate::network::Network;
use crate::u256::U256;
use crate::xor::XorKey;

/// Smallest block Core accepts in a block file (an 80-byte header).
pub const MIN_BLOCK_SIZE: u32 = 80;
/// Largest block Core accepts (`MAX_BLOCK_SERIALIZED_SIZE`).
pub const MAX_BLOCK_SIZE: u32 = 4_000_000;
/// Magic plus size.
pub const RECORD_PREFIX_LEN: usize = 8;
/// The most bytes the scanner may ask the caller to keep: one whole record
/// plus the header of a record that might start at its last byte.
pub const MAX_KEEP: usize =
    RECORD_PREFIX_LEN + MAX_BLOCK_SIZE as usize + RECORD_PREFIX_LEN + HEADER_LEN;

/// Why bytes were skipped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BadKind {
    /// Non-zero bytes where no record starts.
    Garbage,
    /// A magic followed by a size below 80 or above 4,000,000.
    BadSize {
        /// The size field.
        size: u32,
    },
    /// A magic and a plausible size, but the header does not meet its nBits.
    BadProofOfWork,
    /// A record whose bytes end early: at the end of the file, or where
    /// another record starts.
    Truncated {
        /// The size field, if it could be read.
        size: Option<u32>,
        /// How many bytes of the block are present.
        available: u64,
    },
}

impl BadKind {
    /// Short lowercase name, as used in JSON output.
    pub fn name(&self) -> &'static str {
        match self {
            BadKind::Garbage => "garbage",
            BadKind::BadSize { .. } => "bad-size",
            BadKind::BadProofOfWork => "bad-proof-of-work",
            BadKind::Truncated { .. } => "truncated",
        }
    }
}

/// A stretch of a file that holds no valid record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadRecord {
    /// Offset in the file where the problem starts.
    pub offset: u64,
    /// What is wrong there.
    pub kind: BadKind,
    /// How many bytes were skipped from `offset` to the next valid record
    /// (or the end of the file).
    pub skipped: u64,
}

/// A record whose header is valid.
#[derive(Clone, Copy, Debug)]
pub struct FoundBlock<'a> {
    /// Offset of the record's magic in the file.
    pub offset: u64,
    /// The block's serialized size.
    pub size: u32,
    /// The block hash.
    pub hash: BlockHash,
    /// The parsed header.
    pub header: BlockHeader,
    /// The whole serialized block (header first), `size` bytes.
    pub bytes: &'a [u8],
}

/// What the scanner reports, in file order.
#[derive(Debug)]
pub enum Event<'a> {
    /// A record with a valid header.
    Block(FoundBlock<'a>),
    /// Skipped bytes.
    Bad(BadRecord),
}

enum Start {
    NeedMore,
    Torn {
        size: Option<u32>,
    },
    Invalid(BadKind),
    Valid {
        size: u32,
        hash: BlockHash,
        header: BlockHeader,
    },
}

/// Scans the records of one file, fed window by window.
#[derive(Debug)]
pub struct RecordScanner {
    search_bodies: bool,
    /// What padding looks like at each offset mod 8 (the XOR key: raw zero
    /// bytes of an obfuscated file de-obfuscate to the key).
    padding: [u8; 8],
    magic: [u8; 4],
    pow_limit: U256,
    finder: memmem::Finder<'static>,
    pos: u64,
    pending: Option<(u64, BadKind)>,
    lookahead: Option<(u64, u32, BlockHash, BlockHeader)>,
}

impl RecordScanner {
    /// A scanner for one file of `network`, starting at offset 0.
    pub fn new(network: Network) -> RecordScanner {
        let magic = network.magic();
        RecordScanner {
            search_bodies: false,
            padding: [0; 8],
            magic,
            pow_limit: network.pow_limit(),
            finder: memmem::Finder::new(&magic).into_owned(),
            pos: 0,
            pending: None,
            lookahead: None,
        }
    }

    /// Searches every record's body for an inner record, even when the
    /// record's end looks like a record boundary. By default a body is
    /// searched only when the record's end does not look like one (the end
    /// of the data, zero padding, or the start of a valid record), so bodies
    /// need not be read at all; the price is that a torn record whose claimed
    /// end falls exactly on a later record's start hides the records in
    /// between (as it does in Core, which never searches bodies).
    pub fn thorough(mut self) -> RecordScanner {
        self.search_bodies = true;
        self
    }

    /// Declares the file's XOR key, so that its preallocated, never written
    /// space (zero bytes on disk, which de-obfuscate to the key) counts as
    /// padding rather than garbage.
    pub fn padding(mut self, key: XorKey) -> RecordScanner {
        self.padding = key.0;
        self
    }

    fn is_padding(&self, bytes: &[u8], offset: u64) -> bool {
        bytes
            .iter()
            .enumerate()
            .all(|(i, &b)| b == self.padding[(offset as usize + i) % 8])
    }

    /// Starts scanning at `offset` instead of 0 (after records already
    /// accounted for by other means).
    pub fn start_at(mut self, offset: u64) -> RecordScanner {
        self.pos = offset;
        self
    }

    /// Where scanning resumes: the caller's next window must start at or
    /// before this offset (it is what [`RecordScanner::feed`] returned).
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Scans `window`, the file's bytes from offset `base` (which must not be
    /// after [`RecordScanner::position`]); `eof` says the file ends with it.
    /// Calls `on` for each record and bad stretch, and returns the offset from
    /// which the caller must keep bytes for the next call (at most
    /// [`MAX_KEEP`] before the window's end).
    pub fn feed(
        &mut self,
        window: &[u8],
        base: u64,
        eof: bool,
        on: &mut impl FnMut(Event<'_>),
    ) -> u64 {
        debug_assert!(base <= self.pos);
        let end = base + window.len() as u64;
        loop {
            let r = (self.pos - base) as usize;
            let rest = &window[r..];
            let Some(found) = self.finder.find(rest) else {
                // No magic: all but the last 3 bytes can be skipped for sure.
                let skip_to = if eof {
                    end
                } else {
                    end.saturating_sub(3).max(self.pos)
                };
                self.skip(window, base, skip_to);
                if eof {
                    self.flush(end, on);
                }
                return self.pos;
            };
            let q = self.pos + found as u64;
            self.skip(window, base, q);
            let qr = (q - base) as usize;
            let start = match self.lookahead.take() {
                Some((at, size, hash, header)) if at == q => Start::Valid { size, hash, header },
                _ => self.check_start(window, qr, eof),
            };
            match start {
                Start::NeedMore => return q,
                Start::Torn { size } => {
                    let available = (end - q).saturating_sub(RECORD_PREFIX_LEN as u64);
                    self.flush(q, on);
                    self.pending = Some((q, BadKind::Truncated { size, available }));
                    self.pos = end;
                    self.flush(end, on);
                    return end;
                }
                Start::Invalid(kind) => {
                    self.flush(q, on);
                    self.pending = Some((q, kind));
                    self.pos = q + 1;
                }
                Start::Valid { size, hash, header } => {
                    let record_end = q + RECORD_PREFIX_LEN as u64 + size as u64;
                    if !eof && end < record_end + (RECORD_PREFIX_LEN + HEADER_LEN) as u64 {
                        return q;
                    }
                    // A valid record starting inside this one means this one was torn.
                    let body_start = qr + RECORD_PREFIX_LEN;
                    let body_end = ((record_end - base) as usize).min(window.len());
                    let complete = record_end <= end;
                    let search = self.search_bodies
                        || !complete
                        || !self.plausible_end(window, base, body_end, eof);
                    let inner = if search {
                        // A magic starting in the body's last 3 bytes ends after it.
                        let haystack_end = (body_end + 3).min(window.len());
                        self.finder
                            .find_iter(&window[body_start..haystack_end])
                            .map(|at| body_start + at)
                            .take_while(|&at| at < body_end)
                            .find(|&at| {
                                matches!(self.check_start(window, at, eof), Start::Valid { .. })
                            })
                    } else {
                        None
                    };
                    if let Some(at) = inner {
                        self.flush(q, on);
                        let inner_offset = base + at as u64;
                        on(Event::Bad(BadRecord {
                            offset: q,
                            kind: BadKind::Truncated {
                                size: Some(size),
                                available: inner_offset - q - RECORD_PREFIX_LEN as u64,
                            },
                            skipped: inner_offset - q,
                        }));
                        self.pos = inner_offset;
                        continue;
                    }
                    if record_end > end {
                        // Cut short by the end of the file, nothing valid inside.
                        self.flush(q, on);
                        let available = end - q - RECORD_PREFIX_LEN as u64;
                        self.pending = Some((
                            q,
                            BadKind::Truncated {
                                size: Some(size),
                                available,
                            },
                        ));
                        self.pos = end;
                        self.flush(end, on);
                        return end;
                    }
                    self.flush(q, on);
                    on(Event::Block(FoundBlock {
                        offset: q,
                        size,
                        hash,
                        header,
                        bytes: &window[body_start..body_start + size as usize],
                    }));
                    self.pos = record_end;
                }
            }
        }
    }

    /// Whether a record may end at `at`: the end of the data, zero padding,
    /// or a record start (valid, or torn by the end of the data).
    /// A valid start found here is kept for the next record, so no header is
    /// hashed twice.
    fn plausible_end(&mut self, window: &[u8], base: u64, at: usize, eof: bool) -> bool {
        let next = &window[at..window.len().min(at + RECORD_PREFIX_LEN + HEADER_LEN)];
        if next.is_empty() || self.is_padding(next, base + at as u64) {
            return true;
        }
        if !next.starts_with(&self.magic) {
            return false;
        }
        match self.check_start(window, at, eof) {
            Start::Valid { size, hash, header } => {
                self.lookahead = Some((base + at as u64, size, hash, header));
                true
            }
            Start::Torn { .. } => true,
            _ => false,
        }
    }

    fn check_start(&self, window: &[u8], at: usize, eof: bool) -> Start {
        let short = |size| {
            if eof {
                Start::Torn { size }
            } else {
                Start::NeedMore
            }
        };
        let Some(prefix) = window.get(at..at + RECORD_PREFIX_LEN) else {
            return short(None);
        };
        debug_assert_eq!(prefix[..4], self.magic);
        let size = u32::from_le_bytes([prefix[4], prefix[5], prefix[6], prefix[7]]);
        if !(MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE).contains(&size) {
            return Start::Invalid(BadKind::BadSize { size });
        }
        let header_at = at + RECORD_PREFIX_LEN;
        let Some(bytes) = window.get(header_at..header_at + HEADER_LEN) else {
            return short(Some(size));
        };
        let bytes: &[u8; HEADER_LEN] = bytes.try_into().expect("80-byte slice");
        let hash = header_hash(bytes);
        let header = BlockHeader::parse(bytes);
        if !check_pow(&hash, header.bits, self.pow_limit) {
            return Start::Invalid(BadKind::BadProofOfWork);
        }
        Start::Valid { size, hash, header }
    }

    /// Marks `[self.pos, to)` as skipped.
    fn skip(&mut self, window: &[u8], base: u64, to: u64) {
        if to <= self.pos {
            return;
        }
        if self.pending.is_none() {
            let range = &window[(self.pos - base) as usize..(to - base) as usize];
            let pad = self.padding;
            let start = self.pos as usize;
            if let Some(nonzero) = range
                .iter()
                .enumerate()
                .position(|(i, &b)| b != pad[(start + i) % 8])
            {
                self.pending = Some((self.pos + nonzero as u64, BadKind::Garbage));
            }
        }
        self.pos = to;
    }

    /// Reports the pending bad stretch as ending at `to`.
    fn flush(&mut self, to: u64, on: &mut impl FnMut(Event<'_>)) {
        if let Some((offset, kind)) = self.pending.take() {
            on(Event::Bad(BadRecord {
                offset,
                kind,
                skipped: to - offset,
            }));
        }
    }
}

/// Scans a whole file held in memory, searching every body (see
/// [`RecordScanner::thorough`]); a convenience over [`RecordScanner`].
pub fn scan_bytes(network: Network, bytes: &[u8], mut on: impl FnMut(Event<'_>)) {
    let mut scanner = RecordScanner::new(network).thorough();
    scanner.feed(bytes, 0, true, &mut on);
}
