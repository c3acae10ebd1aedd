//! Core's UTXO snapshot, the file `dumptxoutset` writes and `loadtxoutset`
//! reads (format version 2, Core 28.0 and later; docs/format-blocks.md):
//! a 51-byte header (magic `utxo\xff`, version, network magic, base block
//! hash, coin count), then the coins in Core's order, grouped by txid: the
//! txid, the group's coin count, and per coin its output index and the coin
//! compressed as Core's chainstate stores it.

use std::io::{Read, Write};

use crate::coin::{Coin, OutPoint, is_unspendable};
use crate::compress::{ByteSource, MAX_MONEY, read_coin};
use crate::error::{Error, ErrorKind, Result};
use crate::hash::BlockHash;
use crate::network::Network;
use crate::tx::{MAX_COMPACT_SIZE, write_compact_size};

/// The 5 bytes every snapshot starts with.
pub const SNAPSHOT_MAGIC: [u8; 5] = *b"utxo\xff";

/// The snapshot format version Core writes today and this crate reads and
/// writes.
pub const SNAPSHOT_VERSION: u16 = 2;

/// The header's length: magic, version, network magic, base hash, count.
pub const SNAPSHOT_HEADER_LEN: usize = 5 + 2 + 4 + 32 + 8;

/// What a snapshot's header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SnapshotMetadata {
    /// The network (from its magic bytes).
    pub network: Network,
    /// The block whose UTXO set this is (the chain's tip when written).
    pub base: BlockHash,
    /// How many coins follow.
    pub coins: u64,
}

impl SnapshotMetadata {
    fn to_bytes(self) -> [u8; SNAPSHOT_HEADER_LEN] {
        let mut out = [0u8; SNAPSHOT_HEADER_LEN];
        out[..5].copy_from_slice(&SNAPSHOT_MAGIC);
        out[5..7].copy_from_slice(&SNAPSHOT_VERSION.to_le_bytes());
        out[7..11].copy_from_slice(&self.network.magic());
        out[11..43].copy_from_slice(&self.base.0);
        out[43..].copy_from_slice(&self.coins.to_le_bytes());
        out
    }
}

/// The name I/O errors give the file (the reader and writer see only a
/// stream).
const NAME: &str = "UTXO snapshot";

/// Output is gathered and written in pieces of about this size.
const WRITE_CHUNK: usize = 1 << 20;

/// Writes a UTXO snapshot as `dumptxoutset` does, coin by coin, holding one
/// txid's coins at a time.
pub struct SnapshotWriter<W: Write> {
    out: W,
    declared: u64,
    pushed: u64,
    last: Option<OutPoint>,
    /// The current txid's coins, encoded; `group_len` of them.
    group: Vec<u8>,
    group_len: u64,
    pending: Vec<u8>,
}

impl<W: Write> SnapshotWriter<W> {
    /// Starts a snapshot of `coins` coins, the UTXO set of `network` after
    /// block `base`.
    pub fn new(out: W, network: Network, base: BlockHash, coins: u64) -> Result<Self> {
        let metadata = SnapshotMetadata {
            network,
            base,
            coins,
        };
        let mut pending = Vec::with_capacity(WRITE_CHUNK + (WRITE_CHUNK >> 2));
        pending.extend_from_slice(&metadata.to_bytes());
        Ok(SnapshotWriter {
            out,
            declared: coins,
            pushed: 0,
            last: None,
            group: Vec::new(),
            group_len: 0,
            pending,
        })
    }

    /// Adds a coin. Coins must come in Core's order ([`OutPoint::core_cmp`],
    /// each outpoint once); a coin Core's UTXO set cannot hold (an
    /// unspendable script, a value above 21 million bitcoin, a height from
    /// 2^31, an output index above Core's `MAX_SIZE`) is refused.
    pub fn push(&mut self, outpoint: &OutPoint, coin: &Coin) -> Result<()> {
        let index = self.pushed;
        let unwritable = |reason| Err(ErrorKind::UnwritableCoin { index, reason }.into());
        if is_unspendable(&coin.script) {
            return unwritable("its script is unspendable (OP_RETURN or over 10,000 bytes)");
        }
        if coin.value > MAX_MONEY {
            return unwritable("its value is above 21 million bitcoin");
        }
        if coin.height >= 1 << 31 {
            return unwritable("its height is 2^31 or more");
        }
        if outpoint.vout as u64 > MAX_COMPACT_SIZE {
            return unwritable("its output index is above 33,554,432");
        }
        if index == self.declared {
            return Err(ErrorKind::CoinCount {
                declared: self.declared,
                found: index + 1,
            }
            .into());
        }
        match self.last {
            Some(last) if last.core_cmp(outpoint).is_ge() => {
                return Err(ErrorKind::CoinOrder { index }.into());
            }
            Some(last) if last.txid != outpoint.txid => self.end_group(&last.txid)?,
            _ => {}
        }
        write_compact_size(&mut self.group, outpoint.vout as u64);
        coin.write_compressed(&mut self.group);
        self.group_len += 1;
        self.pushed += 1;
        self.last = Some(*outpoint);
        Ok(())
    }

    fn end_group(&mut self, txid: &[u8; 32]) -> Result<()> {
        self.pending.extend_from_slice(txid);
        write_compact_size(&mut self.pending, self.group_len);
        self.pending.extend_from_slice(&self.group);
        self.group.clear();
        self.group_len = 0;
        if self.pending.len() >= WRITE_CHUNK {
            self.flush_pending()?;
        }
        Ok(())
    }

    fn flush_pending(&mut self) -> Result<()> {
        self.out
            .write_all(&self.pending)
            .map_err(|e| Error::io(NAME, "write", e))?;
        self.pending.clear();
        Ok(())
    }

    /// Writes what is left, checks that as many coins came as the header
    /// declares, flushes and returns the output.
    pub fn finish(mut self) -> Result<W> {
        if self.pushed != self.declared {
            return Err(ErrorKind::CoinCount {
                declared: self.declared,
                found: self.pushed,
            }
            .into());
        }
        if let Some(last) = self.last {
            self.end_group(&last.txid)?;
        }
        self.flush_pending()?;
        self.out.flush().map_err(|e| Error::io(NAME, "write", e))?;
        Ok(self.out)
    }
}

impl<W: Write> std::fmt::Debug for SnapshotWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SnapshotWriter")
            .field("declared", &self.declared)
            .field("pushed", &self.pushed)
            .finish_non_exhaustive()
    }
}

/// A buffered stream that counts its offset.
struct Input<R> {
    inner: R,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    /// The offset of `buf[start]`.
    offset: u64,
}

impl<R: Read> Input<R> {
    /// Refills an empty buffer; false at the end of the stream.
    fn fill(&mut self) -> Result<bool> {
        if self.start < self.end {
            return Ok(true);
        }
        self.start = 0;
        self.end = 0;
        loop {
            match self.inner.read(&mut self.buf) {
                Ok(n) => {
                    self.end = n;
                    return Ok(n > 0);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(NAME, "read", e)),
            }
        }
    }

    fn eof(&self, what: &'static str) -> Error {
        ErrorKind::UnexpectedEof {
            offset: self.offset as usize,
            what,
        }
        .into()
    }

    /// A canonical CompactSize no larger than Core's `MAX_SIZE` (Core's
    /// `ReadCompactSize`).
    fn compact_size(&mut self, what: &'static str) -> Result<u64> {
        let offset = self.offset;
        let (value, min) = match self.byte(what)? {
            first @ 0..=0xfc => (first as u64, 0),
            0xfd => {
                let mut b = [0u8; 2];
                self.read_into(&mut b, what)?;
                (u16::from_le_bytes(b) as u64, 0xfd)
            }
            0xfe => {
                let mut b = [0u8; 4];
                self.read_into(&mut b, what)?;
                (u32::from_le_bytes(b) as u64, 0x1_0000)
            }
            0xff => {
                let mut b = [0u8; 8];
                self.read_into(&mut b, what)?;
                (u64::from_le_bytes(b), 0x1_0000_0000)
            }
        };
        if value < min {
            return Err(ErrorKind::NonCanonicalCompactSize {
                offset: offset as usize,
            }
            .into());
        }
        if value > MAX_COMPACT_SIZE {
            return Err(ErrorKind::SizeTooLarge {
                offset: offset as usize,
                size: value,
                limit: MAX_COMPACT_SIZE,
            }
            .into());
        }
        Ok(value)
    }
}

impl<R: Read> ByteSource for Input<R> {
    fn offset(&self) -> u64 {
        self.offset
    }

    fn read_into(&mut self, mut buf: &mut [u8], what: &'static str) -> Result<()> {
        while !buf.is_empty() {
            if !self.fill()? {
                return Err(self.eof(what));
            }
            let n = buf.len().min(self.end - self.start);
            buf[..n].copy_from_slice(&self.buf[self.start..self.start + n]);
            self.start += n;
            self.offset += n as u64;
            buf = &mut buf[n..];
        }
        Ok(())
    }

    fn skip(&mut self, mut len: u64, what: &'static str) -> Result<()> {
        while len > 0 {
            if !self.fill()? {
                return Err(self.eof(what));
            }
            let n = len.min((self.end - self.start) as u64);
            self.start += n as usize;
            self.offset += n;
            len -= n;
        }
        Ok(())
    }
}

/// Reads a UTXO snapshot coin by coin, checking everything Core's
/// `loadtxoutset` checks that does not need the chain (magic, version,
/// network, each coin's encoding and value, the coin count, nothing after
/// the last coin) and, stricter than Core, that the coins are in the order
/// Core writes them (which also means no outpoint twice). Nothing is
/// allocated from a length in the file beyond one script of at most
/// 10,000 bytes.
pub struct SnapshotReader<R: Read> {
    input: Input<R>,
    metadata: SnapshotMetadata,
    read: u64,
    group_left: u64,
    txid: [u8; 32],
    last: Option<OutPoint>,
    canonical: bool,
    done: bool,
}

impl<R: Read> SnapshotReader<R> {
    /// Reads and checks the header.
    pub fn new(inner: R) -> Result<Self> {
        let mut input = Input {
            inner,
            buf: vec![0u8; 1 << 16].into_boxed_slice(),
            start: 0,
            end: 0,
            offset: 0,
        };
        let mut magic = [0u8; 5];
        input.read_into(&mut magic, "snapshot magic")?;
        if magic != SNAPSHOT_MAGIC {
            return Err(ErrorKind::NotASnapshot { found: magic }.into());
        }
        let mut version = [0u8; 2];
        input.read_into(&mut version, "snapshot version")?;
        let version = u16::from_le_bytes(version);
        if version != SNAPSHOT_VERSION {
            return Err(ErrorKind::SnapshotVersion {
                version,
                supported: SNAPSHOT_VERSION,
            }
            .into());
        }
        let mut network_magic = [0u8; 4];
        input.read_into(&mut network_magic, "network magic")?;
        let network = Network::ALL
            .into_iter()
            .find(|network| network.magic() == network_magic)
            .ok_or(ErrorKind::SnapshotNetwork {
                magic: network_magic,
            })?;
        let mut base = [0u8; 32];
        input.read_into(&mut base, "base block hash")?;
        let mut coins = [0u8; 8];
        input.read_into(&mut coins, "coin count")?;
        Ok(SnapshotReader {
            input,
            metadata: SnapshotMetadata {
                network,
                base: BlockHash(base),
                coins: u64::from_le_bytes(coins),
            },
            read: 0,
            group_left: 0,
            txid: [0; 32],
            last: None,
            canonical: true,
            done: false,
        })
    }

    /// The header.
    pub fn metadata(&self) -> &SnapshotMetadata {
        &self.metadata
    }

    /// The offset of the next byte to read.
    pub fn offset(&self) -> u64 {
        self.input.offset
    }

    /// Whether every coin so far was one Core (and [`SnapshotWriter`]) would
    /// write, stored as it would store it: false after a script of a
    /// compressible kind stored plain, one over 10,000 bytes (read, as Core
    /// reads it, as a lone `OP_RETURN`) or an unspendable one (Core's UTXO
    /// set never holds it; Core's loader accepts it). Writing what was read
    /// gives back the same bytes exactly when this stays true.
    pub fn canonical(&self) -> bool {
        self.canonical
    }

    /// The next coin, or `None` after the last one (once the end of the
    /// stream is checked).
    pub fn next_coin(&mut self) -> Result<Option<(OutPoint, Coin)>> {
        let mut coin = Coin {
            value: 0,
            height: 0,
            coinbase: false,
            script: Vec::new(),
        };
        Ok(self.read_into(&mut coin)?.map(|outpoint| (outpoint, coin)))
    }

    /// Reads the next coin into `coin` (reusing its script's allocation);
    /// returns its outpoint, or `None` after the last one.
    pub fn read_into(&mut self, coin: &mut Coin) -> Result<Option<OutPoint>> {
        if self.group_left == 0 && !self.start_group()? {
            return Ok(None);
        }
        let offset = self.input.offset;
        let vout = self.input.compact_size("output index")? as u32;
        let outpoint = OutPoint {
            txid: self.txid,
            vout,
        };
        if let Some(last) = self.last
            && last.core_cmp(&outpoint).is_ge()
        {
            return Err(ErrorKind::SnapshotOrder { offset }.into());
        }
        self.canonical &= read_coin(&mut self.input, coin)?;
        self.last = Some(outpoint);
        self.group_left -= 1;
        self.read += 1;
        Ok(Some(outpoint))
    }

    /// Reads the next txid and its coin count; false at the end.
    fn start_group(&mut self) -> Result<bool> {
        let declared = self.metadata.coins;
        if self.read == declared {
            if !self.done {
                if self.input.fill()? {
                    return Err(ErrorKind::SnapshotTrailingBytes {
                        offset: self.input.offset,
                    }
                    .into());
                }
                self.done = true;
            }
            return Ok(false);
        }
        let offset = self.input.offset;
        if !self.input.fill()? {
            return Err(ErrorKind::CoinCount {
                declared,
                found: self.read,
            }
            .into());
        }
        self.input.read_into(&mut self.txid, "txid")?;
        if let Some(last) = self.last
            && self.txid <= last.txid
        {
            return Err(ErrorKind::SnapshotOrder { offset }.into());
        }
        let count = self.input.compact_size("coins of a txid")?;
        if count == 0 {
            return Err(ErrorKind::SnapshotOrder { offset }.into());
        }
        if count > declared - self.read {
            return Err(ErrorKind::CoinCount {
                declared,
                found: self.read + count,
            }
            .into());
        }
        self.group_left = count;
        Ok(true)
    }
}

impl<R: Read> std::fmt::Debug for SnapshotReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SnapshotReader")
            .field("metadata", &self.metadata)
            .field("read", &self.read)
            .field("offset", &self.input.offset)
            .finish_non_exhaustive()
    }
}

impl<R: Read> Iterator for SnapshotReader<R> {
    type Item = Result<(OutPoint, Coin)>;

    /// Each coin, then `None`; after an error, `None`.
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.next_coin() {
            Ok(Some(item)) => Some(Ok(item)),
            Ok(None) => None,
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}
