//! [`BundleReader`]: a [`BundleDecoder`] fed from a [`Read`], item by
//! item.

use std::io::Read;

use super::{BundleDecoder, BundleEntry, BundleHeader, BundleItem, bad};
use crate::error::{Error, Result};

/// Bytes read from the input at a time.
const CHUNK: usize = 64 << 10;

/// Reads a bundle: its header at once, then its entries in order, every
/// size bounded and checked, and at the end ([`BundleReader::finish`]) the
/// checksum over everything and that nothing follows it.
#[derive(Debug)]
pub struct BundleReader<R: Read> {
    input: R,
    /// Bytes read and not yet taken by the decoder: `buf[start..end]`.
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    eof: bool,
    decoder: BundleDecoder,
    header: BundleHeader,
}

impl<R: Read> BundleReader<R> {
    /// Reads and checks the header.
    pub fn new(input: R) -> Result<BundleReader<R>> {
        let mut reader = BundleReader {
            input,
            buf: vec![0; CHUNK].into_boxed_slice(),
            start: 0,
            end: 0,
            eof: false,
            decoder: BundleDecoder::new(),
            header: BundleHeader::unread(),
        };
        match reader.pull()? {
            Some(BundleItem::Header(header)) => reader.header = header,
            _ => return Err(bad("no header")),
        }
        Ok(reader)
    }

    /// The header.
    pub fn header(&self) -> &BundleHeader {
        &self.header
    }

    #[cfg(any(test, feature = "test-util"))]
    /// Entries not yet read.
    pub fn entries_left(&self) -> u32 {
        self.decoder.entries_left()
    }

    /// The next entry, or `None` after the last.
    pub fn next_entry(&mut self) -> Result<Option<BundleEntry>> {
        if self.decoder.entries_left() == 0 {
            return Ok(None);
        }
        match self.pull()? {
            Some(BundleItem::Entry(entry)) => Ok(Some(entry)),
            _ => Err(bad("an entry missing")),
        }
    }

    /// After the last entry: the end magic, the checksum over the content,
    /// and nothing after it.
    pub fn finish(mut self) -> Result<()> {
        let left = self.decoder.entries_left();
        if left > 0 {
            return Err(bad(format!("{left} entries not read")));
        }
        match (self.pull()?, self.pull()?) {
            (Some(BundleItem::End), None) => Ok(()),
            _ => Err(bad("data after the end of the bundle")),
        }
    }

    /// The next item, or `None` at the end of a whole bundle.
    fn pull(&mut self) -> Result<Option<BundleItem>> {
        loop {
            if self.start == self.end && !self.eof {
                self.start = 0;
                self.end = loop {
                    match self.input.read(&mut self.buf) {
                        Ok(n) => break n,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(Error::io(None, e)),
                    }
                };
                self.eof = self.end == 0;
            }
            let (used, item) = self.decoder.decode(&self.buf[self.start..self.end])?;
            self.start += used;
            if item.is_some() {
                return Ok(item);
            }
            if self.eof {
                self.decoder.finish()?;
                return Ok(None);
            }
        }
    }
}
