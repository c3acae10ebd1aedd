//! Text as Windows writes it: a UTF-8 byte-order mark (Notepad, `Out-File
//! -Encoding utf8BOM`) is skipped, and UTF-16 with a byte-order mark
//! (Windows PowerShell 5.1's `>` and `Out-File` write UTF-16 LE) is
//! transcoded to UTF-8 as it is read, through a fixed buffer, so the line
//! parser sees the same bytes as from a plain file. UTF-16 without a mark,
//! and UTF-32, are refused with the command that converts them. Every
//! input is read through [`fill`].

use std::io::{self, Read};

/// How a text's first bytes say it is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    /// No byte-order mark: UTF-8 or ASCII, read as it is.
    Plain,
    /// UTF-8 after a byte-order mark (`EF BB BF`).
    Utf8Bom,
    /// UTF-16 after a byte-order mark: `FF FE` little-endian, `FE FF`
    /// big-endian.
    Utf16 {
        /// Big-endian (`FE FF`).
        big: bool,
    },
    /// Something the parser cannot read, and what to do instead.
    Refused(&'static str),
}

/// Bytes [`detect`] looks at.
pub(crate) const HEAD: usize = 4;

impl Encoding {
    /// The length of the byte-order mark.
    fn mark(self) -> usize {
        match self {
            Encoding::Utf8Bom => 3,
            Encoding::Utf16 { .. } => 2,
            Encoding::Plain | Encoding::Refused(_) => 0,
        }
    }

    /// Bytes of UTF-8 text that `raw` bytes hold, as near as the first
    /// bytes tell (an ASCII corpus in UTF-16 is half as long).
    pub(crate) fn text_len(self, raw: u64) -> u64 {
        let body = raw.saturating_sub(self.mark() as u64);
        match self {
            Encoding::Utf16 { .. } => body / 2,
            _ => body,
        }
    }
}

/// The encoding the first bytes of a text (up to [`HEAD`] of them) show.
pub(crate) fn detect(head: &[u8]) -> Encoding {
    let ascii = |b: u8| b != 0 && b.is_ascii();
    match head {
        [0xFF, 0xFE, 0, 0, ..] | [0, 0, 0xFE, 0xFF, ..] => Encoding::Refused(
            "is UTF-32: convert it to UTF-8 first \
             (iconv -f UTF-32 -t UTF-8 FILE | seekless pwned prepare - -o INDEX)",
        ),
        [0xEF, 0xBB, 0xBF, ..] => Encoding::Utf8Bom,
        [0xFF, 0xFE, ..] => Encoding::Utf16 { big: false },
        [0xFE, 0xFF, ..] => Encoding::Utf16 { big: true },
        [a, 0, b, 0, ..] if ascii(*a) && ascii(*b) => Encoding::Refused(
            "looks like UTF-16 LE without a byte-order mark: convert it to UTF-8 first \
             (iconv -f UTF-16LE -t UTF-8 FILE | seekless pwned prepare - -o INDEX)",
        ),
        [0, a, 0, b, ..] if ascii(*a) && ascii(*b) => Encoding::Refused(
            "looks like UTF-16 BE without a byte-order mark: convert it to UTF-8 first \
             (iconv -f UTF-16BE -t UTF-8 FILE | seekless pwned prepare - -o INDEX)",
        ),
        _ => Encoding::Plain,
    }
}

/// `reader`'s text as UTF-8: its first bytes are read to tell the
/// encoding, then given back (less a UTF-8 byte-order mark), or the rest
/// transcoded from UTF-16. A refused encoding is an `InvalidData` error
/// saying what to do.
pub(crate) fn decoded<'a>(mut reader: Box<dyn Read + 'a>) -> io::Result<Box<dyn Read + 'a>> {
    let mut head = [0u8; HEAD];
    let n = fill(&mut reader, &mut head)?;
    let encoding = detect(&head[..n]);
    let rest = head[encoding.mark().min(n)..n].to_vec();
    Ok(match encoding {
        Encoding::Plain | Encoding::Utf8Bom => Box::new(io::Cursor::new(rest).chain(reader)),
        Encoding::Utf16 { big } => Box::new(Utf16::new(reader, big, &rest)),
        Encoding::Refused(what) => return Err(io::Error::new(io::ErrorKind::InvalidData, what)),
    })
}

/// Raw bytes read from the source at a time.
const RAW: usize = 1 << 16;

/// UTF-16 read as UTF-8: at most [`RAW`] bytes of the source held at once.
struct Utf16<'a> {
    inner: Box<dyn Read + 'a>,
    big: bool,
    raw: Vec<u8>,
    /// The unread bytes are `raw[at..end]`.
    at: usize,
    end: usize,
    /// A high surrogate whose low half is still to be read.
    high: Option<u16>,
    /// UTF-8 bytes of a character that did not fit the last read.
    spill: [u8; 4],
    spilled: std::ops::Range<usize>,
    done: bool,
}

impl<'a> Utf16<'a> {
    fn new(inner: Box<dyn Read + 'a>, big: bool, head: &[u8]) -> Utf16<'a> {
        let mut raw = vec![0u8; RAW];
        raw[..head.len()].copy_from_slice(head);
        Utf16 {
            inner,
            big,
            raw,
            at: 0,
            end: head.len(),
            high: None,
            spill: [0; 4],
            spilled: 0..0,
            done: false,
        }
    }

    /// Reads more of the source after the unread bytes (moved to the
    /// front); false at its end.
    fn refill(&mut self) -> io::Result<bool> {
        self.raw.copy_within(self.at..self.end, 0);
        self.end -= self.at;
        self.at = 0;
        loop {
            match self.inner.read(&mut self.raw[self.end..]) {
                Ok(0) => return Ok(false),
                Ok(n) => {
                    self.end += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Writes `c` as UTF-8 at `out[n..]`, what does not fit kept for the
    /// next read; returns the bytes written.
    fn put(&mut self, c: char, out: &mut [u8]) -> usize {
        let mut utf8 = [0u8; 4];
        let bytes = c.encode_utf8(&mut utf8).as_bytes();
        let fit = bytes.len().min(out.len());
        out[..fit].copy_from_slice(&bytes[..fit]);
        self.spill[..bytes.len() - fit].copy_from_slice(&bytes[fit..]);
        self.spilled = 0..bytes.len() - fit;
        fit
    }
}

impl Read for Utf16<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let mut n = 0;
        while !self.spilled.is_empty() && n < out.len() {
            out[n] = self.spill[self.spilled.start];
            self.spilled.start += 1;
            n += 1;
        }
        while n < out.len() {
            if self.end - self.at < 2 {
                // Give what is decoded rather than wait for more.
                if n > 0 || self.done {
                    break;
                }
                if !self.refill()? {
                    self.done = true;
                    if self.end > self.at {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            "UTF-16 text ends in the middle of a character (an odd number \
                             of bytes): the file is cut short, or is not UTF-16",
                        ));
                    }
                    if self.high.take().is_some() {
                        n += self.put(char::REPLACEMENT_CHARACTER, &mut out[n..]);
                    }
                    break;
                }
                continue;
            }
            let pair = [self.raw[self.at], self.raw[self.at + 1]];
            self.at += 2;
            let unit = if self.big {
                u16::from_be_bytes(pair)
            } else {
                u16::from_le_bytes(pair)
            };
            if self.high.is_none() && unit < 0x80 {
                out[n] = unit as u8;
                n += 1;
                continue;
            }
            let c = match (self.high.take(), unit) {
                (None, 0xD800..=0xDBFF) => {
                    self.high = Some(unit);
                    continue;
                }
                (Some(high), 0xDC00..=0xDFFF) => {
                    let c =
                        0x10000 + ((u32::from(high) - 0xD800) << 10) + (u32::from(unit) - 0xDC00);
                    char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER)
                }
                (Some(_), _) => {
                    // A lone high surrogate: replaced, and this unit read
                    // again on its own.
                    self.at -= 2;
                    char::REPLACEMENT_CHARACTER
                }
                (None, unit) => {
                    char::from_u32(u32::from(unit)).unwrap_or(char::REPLACEMENT_CHARACTER)
                }
            };
            n += self.put(c, &mut out[n..]);
        }
        Ok(n)
    }
}

/// Fills `buf` from `reader` as far as it goes; returns bytes read.
pub(crate) fn fill(reader: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `text` encoded as UTF-16 (little- or big-endian) after its mark.
    fn utf16(text: &str, big: bool) -> Vec<u8> {
        let units = "\u{feff}".encode_utf16().chain(text.encode_utf16());
        let swap = |u: u16| if big { u.swap_bytes() } else { u };
        units.flat_map(|u| swap(u).to_le_bytes()).collect()
    }

    /// Reads all of `bytes` through [`decoded`], `chunk` bytes a read.
    fn read(bytes: Vec<u8>, chunk: usize) -> io::Result<Vec<u8>> {
        let mut reader = decoded(Box::new(io::Cursor::new(bytes)))?;
        let mut all = Vec::new();
        let mut buf = vec![0u8; chunk];
        loop {
            let n = reader.read(&mut buf)?;
            if n == 0 {
                return Ok(all);
            }
            all.extend_from_slice(&buf[..n]);
        }
    }

    #[test]
    fn every_encoding_reads_as_utf8() {
        let text = "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:3\r\nnot hex: é € 𝄞\r\n";
        for chunk in [1, 2, 3, 7, 1 << 16] {
            assert_eq!(read(text.into(), chunk).unwrap(), text.as_bytes());
            let mut bom = vec![0xEF, 0xBB, 0xBF];
            bom.extend_from_slice(text.as_bytes());
            assert_eq!(read(bom, chunk).unwrap(), text.as_bytes());
            for big in [false, true] {
                assert_eq!(
                    read(utf16(text, big), chunk).unwrap(),
                    text.as_bytes(),
                    "{chunk}"
                );
            }
        }
        // Longer than the buffer: a surrogate pair across its edge.
        let long = "A".repeat(RAW / 2 - 2) + "𝄞" + &"B".repeat(RAW);
        assert_eq!(read(utf16(&long, false), 4096).unwrap(), long.as_bytes());
        assert_eq!(read(Vec::new(), 8).unwrap(), b"");
        assert_eq!(read(vec![0xFF, 0xFE], 8).unwrap(), b"");
        assert_eq!(read(b"ab".to_vec(), 8).unwrap(), b"ab");
    }

    #[test]
    fn broken_utf16_is_replaced_or_refused() {
        // A lone surrogate becomes U+FFFD (and its line is then refused by
        // the parser as not hexadecimal).
        let bytes = vec![0xFF, 0xFE, 0x00, 0xD8, b'A', 0];
        assert_eq!(read(bytes, 8).unwrap(), "\u{FFFD}A".as_bytes());
        let e = read(vec![0xFF, 0xFE, b'A', 0, b'B'], 8).unwrap_err();
        assert!(e.to_string().contains("odd number of bytes"), "{e}");
        for (bytes, what) in [
            (&b"5\x00B\x00"[..], "UTF-16 LE without a byte-order mark"),
            (&b"\x005\x00B"[..], "UTF-16 BE without a byte-order mark"),
            (&b"\xFF\xFE\x00\x005\x00\x00\x00"[..], "UTF-32"),
        ] {
            let e = read(bytes.to_vec(), 8).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidData);
            assert!(e.to_string().contains(what), "{e}");
        }
    }
}
