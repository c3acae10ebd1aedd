//! Reading the HIBP text corpus: inputs, big chunks read by their own thread,
//! and the line parser.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::format::hash::{Key, Kind, prefix_ascii};
use crate::prepare::encoding::{self, Encoding};
use crate::range::count_then_next;

/// One input of `prepare`.
#[derive(Debug, Clone)]
pub enum Input {
    /// Standard input (named `-` in messages).
    Stdin,
    /// A text file of `HASH:COUNT` lines, or a directory of per-range files
    /// `00000.txt` … `FFFFF.txt` holding `SUFFIX:COUNT` lines.
    Path(PathBuf),
    /// Text held in memory, with a name for messages.
    Bytes {
        /// Name used in messages.
        name: String,
        /// `HASH:COUNT` lines.
        data: Vec<u8>,
    },
}

impl Input {
    /// `-` is standard input, anything else a path.
    pub fn from_arg(arg: &str) -> Input {
        if arg == "-" {
            Input::Stdin
        } else {
            Input::Path(PathBuf::from(arg))
        }
    }
}

/// One file the reader goes through, with the 5-hex-digit prefix its lines
/// lack when it is a per-range file.
#[derive(Debug)]
pub(crate) struct Part {
    pub name: String,
    pub source: PartSource,
    pub prefix: Option<[u8; 5]>,
}

#[derive(Debug)]
pub(crate) enum PartSource {
    Stdin,
    File(PathBuf),
    Bytes(Vec<u8>),
}

/// What a file's first bytes say it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sniffed {
    /// Text, presumably `HASH:COUNT` lines, in this encoding.
    Text(Encoding),
    /// gzip (read through a decompressor, streaming).
    Gzip,
    /// Something prepare cannot read, and what to do instead.
    Refused(&'static str),
}

/// Looks at the first bytes of `path`.
fn sniff(path: &Path) -> io::Result<Sniffed> {
    let mut head = [0u8; 8];
    let n = encoding::fill(&mut File::open(path)?, &mut head)?;
    let head = &head[..n];
    Ok(if head.starts_with(&[0x1F, 0x8B]) {
        Sniffed::Gzip
    } else if head.starts_with(&[0x28, 0xB5, 0x2F, 0xFD]) {
        Sniffed::Refused(
            "is zstd-compressed: decompress it into prepare's standard input \
             (zstd -dc FILE | seekless pwned prepare - -o INDEX)",
        )
    } else if head.starts_with(&[0x37, 0x7A, 0xBC, 0xAF, 0x27, 0x1C]) {
        Sniffed::Refused(
            "is a 7z archive: extract it into prepare's standard input \
             (7z x -so FILE | seekless pwned prepare - -o INDEX)",
        )
    } else if head.starts_with(b"PK\x03\x04") {
        Sniffed::Refused(
            "is a zip archive: extract it into prepare's standard input \
             (unzip -p FILE | seekless pwned prepare - -o INDEX)",
        )
    } else if head.starts_with(crate::format::layout::MAGIC) {
        Sniffed::Refused(
            "is a seekless index, not a corpus of HASH:COUNT lines \
             (`seekless pwned export` turns an index back into one)",
        )
    } else {
        Sniffed::Text(encoding::detect(head))
    })
}

impl Part {
    /// The part's text as UTF-8 (see [`encoding`]: a byte-order mark
    /// skipped, UTF-16 transcoded): a gzip file through a streaming
    /// decompressor; a compressed or archive format prepare cannot read,
    /// or an index, is an error saying what to do instead.
    pub(crate) fn open(&mut self) -> io::Result<Box<dyn Read + '_>> {
        let raw: Box<dyn Read + '_> = match &mut self.source {
            PartSource::Stdin => {
                widen_stdin_pipe();
                Box::new(io::stdin().lock())
            }
            PartSource::File(path) => match sniff(path)? {
                Sniffed::Text(_) => Box::new(File::open(path)?),
                Sniffed::Gzip => Box::new(flate2::read::MultiGzDecoder::new(
                    io::BufReader::with_capacity(1 << 16, File::open(path)?),
                )),
                Sniffed::Refused(what) => {
                    return Err(io::Error::new(io::ErrorKind::InvalidData, what));
                }
            },
            PartSource::Bytes(data) => Box::new(io::Cursor::new(std::mem::take(data))),
        };
        encoding::decoded(raw)
    }

    /// The part mapped into memory, when it is a plain text file of at
    /// least `min` bytes, without a byte-order mark (read through the
    /// mapping, the page cache's bytes are not copied once more); `None`
    /// for anything else, and when it cannot be mapped (the part is then
    /// read, which reports any error).
    pub(crate) fn map(&self, min: u64) -> Option<memmap2::Mmap> {
        let file = match &self.source {
            PartSource::Stdin => {
                let file = stdin_file()?;
                if encoding::detect(&head_at_start(&file)?) != Encoding::Plain {
                    return None;
                }
                file
            }
            PartSource::File(path) => {
                if sniff(path).ok()? != Sniffed::Text(Encoding::Plain) {
                    return None;
                }
                File::open(path).ok()?
            }
            PartSource::Bytes(_) => return None,
        };
        let meta = file.metadata().ok()?;
        if !meta.is_file() || meta.len() < min {
            return None;
        }
        // SAFETY: the mapping is only read. A file cut shorter by another
        // process while it is mapped would fault the reader (SIGBUS); the
        // README says not to truncate a corpus while prepare reads it, as
        // it says of indexes.
        let map = unsafe { memmap2::Mmap::map(&file).ok()? };
        #[cfg(unix)]
        let _ = map.advise(memmap2::Advice::Sequential);
        Some(map)
    }

    /// Bytes of text the part holds, when known (0 when not: standard
    /// input from a pipe, a compressed file).
    pub(crate) fn size(&self) -> u64 {
        match &self.source {
            PartSource::Stdin => stdin_file()
                .and_then(|f| f.metadata().ok())
                .map_or(0, |m| m.len()),
            PartSource::File(path) => match sniff(path) {
                Ok(Sniffed::Text(encoding)) => {
                    encoding.text_len(std::fs::metadata(path).map(|m| m.len()).unwrap_or(0))
                }
                _ => 0,
            },
            PartSource::Bytes(data) => data.len() as u64,
        }
    }
}

/// Makes standard input's pipe, if it is one, hold 1 MiB instead of the
/// default 64 KiB: the program writing into it then goes on 16 times as
/// long before it waits for the build, and the two wake each other that
/// much less often (on a virtual machine each wake-up is an interrupt
/// between processors). Anything else on standard input, or a system
/// that allows less, leaves it as it is.
fn widen_stdin_pipe() {
    #[cfg(target_os = "linux")]
    // SAFETY: fcntl with F_SETPIPE_SZ reads only its integer arguments; on
    // anything but a pipe it fails, and the failure is ignored.
    unsafe {
        libc::fcntl(0, libc::F_SETPIPE_SZ, 1 << 20);
    }
}

/// Standard input as the file it was redirected from (`prepare - <
/// FILE`): a regular file not yet read from, which is then mapped and
/// sized like a named one. `None` for a pipe, a terminal, or a file
/// something has read part of.
fn stdin_file() -> Option<File> {
    #[cfg(unix)]
    {
        use std::io::Seek;
        use std::os::fd::AsFd;
        let mut file = File::from(io::stdin().as_fd().try_clone_to_owned().ok()?);
        let regular = file.metadata().ok()?.is_file();
        (regular && file.stream_position().ok()? == 0).then_some(file)
    }
    #[cfg(not(unix))]
    None
}

/// The first bytes of standard input's file, read without moving its
/// offset (the part may yet be read as a stream from there).
#[cfg(unix)]
fn head_at_start(file: &File) -> Option<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let mut head = [0u8; encoding::HEAD];
    let mut n = 0;
    while n < head.len() {
        match file.read_at(&mut head[n..], n as u64) {
            Ok(0) => break,
            Ok(more) => n += more,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    Some(head[..n].to_vec())
}

/// Elsewhere standard input is never mapped ([`stdin_file`]).
#[cfg(not(unix))]
fn head_at_start(_file: &File) -> Option<Vec<u8>> {
    None
}

/// Expands inputs into the files to read, in order. A directory yields its
/// per-range files (`XXXXX.txt`, five hex digits) sorted by name.
pub(crate) fn expand(inputs: Vec<Input>) -> Result<Vec<Part>, (PathBuf, io::Error)> {
    let mut parts = Vec::new();
    for input in inputs {
        match input {
            Input::Stdin => parts.push(Part {
                name: "-".into(),
                source: PartSource::Stdin,
                prefix: None,
            }),
            Input::Bytes { name, data } => parts.push(Part {
                name,
                source: PartSource::Bytes(data),
                prefix: None,
            }),
            Input::Path(path) => {
                let meta = std::fs::metadata(&path).map_err(|e| (path.clone(), e))?;
                if meta.is_dir() {
                    let mut ranges = Vec::new();
                    for entry in std::fs::read_dir(&path).map_err(|e| (path.clone(), e))? {
                        let entry = entry.map_err(|e| (path.clone(), e))?;
                        if let Some(prefix) = range_prefix(&entry.file_name().to_string_lossy()) {
                            ranges.push((prefix, entry.path()));
                        }
                    }
                    if ranges.is_empty() {
                        return Err((
                            path.clone(),
                            io::Error::new(
                                io::ErrorKind::NotFound,
                                "directory holds no per-range files (00000.txt … FFFFF.txt)",
                            ),
                        ));
                    }
                    ranges.sort();
                    parts.extend(ranges.into_iter().map(|(prefix, file)| Part {
                        name: file.display().to_string(),
                        source: PartSource::File(file),
                        prefix: Some(prefix),
                    }));
                } else {
                    parts.push(Part {
                        name: path.display().to_string(),
                        source: PartSource::File(path),
                        prefix: None,
                    });
                }
            }
        }
    }
    Ok(parts)
}

/// The uppercase prefix of a per-range file name `XXXXX.txt`.
fn range_prefix(name: &str) -> Option<[u8; 5]> {
    let stem = name.strip_suffix(".txt")?;
    let bytes: [u8; 5] = stem.as_bytes().try_into().ok()?;
    bytes
        .iter()
        .all(u8::is_ascii_hexdigit)
        .then(|| bytes.map(|b| b.to_ascii_uppercase()))
}

/// What a line holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Line {
    /// A hash with its count (≥ 1) and whether the count was capped.
    Hash { key: Key, count: u32, capped: bool },
    /// Nothing to index: an empty line, or a count of 0 (API padding).
    Skip { zero: bool },
}

/// Why a line is rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LineError {
    Bad(String),
    /// A hash of the other kind.
    Mixed,
}

/// The line at `pos` of `data` when it has the usual shape: the hash
/// (`hex_len` digits; after the range prefix, whose digits `prefix` holds as
/// [`prefix_ascii`] gives them, in a per-range file), `:`, a count of 1 to 9
/// digits that is not 0, then `\n`, `\r\n` or the end. Returns the key, the
/// count and where the next line starts; `None` for anything else, which
/// [`parse_line`] then takes (and judges).
#[inline(always)]
pub(crate) fn quick_line<const WIDE: bool>(
    kind: Kind,
    prefix: Option<u64>,
    hex_len: usize,
    data: &[u8],
    pos: usize,
) -> Option<(Key, u32, usize)> {
    let line = data.get(pos..)?;
    if line.get(hex_len) != Some(&b':') {
        return None;
    }
    let key = match prefix {
        None => decode::<WIDE>(kind, &line[..hex_len])?,
        Some(prefix) => Key::from_range_hex(kind, prefix, &line[..hex_len])?,
    };
    // Nine digits always fit 32 bits.
    let (count, next) = count_then_next(data, pos + hex_len + 1, 9)?;
    (count > 0).then_some((key, count as u32, next))
}

/// [`Key::from_hex`], in one AVX2 register with `WIDE`: only callers that
/// checked the CPU has AVX2 ask for it (see `prepare`'s parser).
#[inline(always)]
fn decode<const WIDE: bool>(kind: Kind, text: &[u8]) -> Option<Key> {
    #[cfg(target_arch = "x86_64")]
    if WIDE {
        // SAFETY: `WIDE` is only passed by code that found AVX2 present.
        return unsafe { Key::from_hex_avx2(kind, text) };
    }
    Key::from_hex(kind, text)
}

/// Parses one line (without its `\n`) of a corpus of `kind`; `prefix` is the
/// range prefix of a per-range file.
#[inline]
pub(crate) fn parse_line(
    kind: Kind,
    prefix: Option<&[u8; 5]>,
    line: &[u8],
) -> Result<Line, LineError> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.is_empty() {
        return Ok(Line::Skip { zero: false });
    }
    let hex_len = kind.hex_len() - if prefix.is_some() { 5 } else { 0 };
    let hash_end = if line.len() == hex_len || line.get(hex_len) == Some(&b':') {
        hex_len
    } else {
        line.iter().position(|&b| b == b':').unwrap_or(line.len())
    };
    if hash_end != hex_len {
        let other = match kind {
            Kind::Sha1 => Kind::Ntlm,
            Kind::Ntlm => Kind::Sha1,
        };
        let other_len = other.hex_len() - if prefix.is_some() { 5 } else { 0 };
        if hash_end == other_len && line[..hash_end].iter().all(u8::is_ascii_hexdigit) {
            return Err(LineError::Mixed);
        }
        return Err(LineError::Bad(format!(
            "expected {hex_len} hex digits before ':', found {hash_end} characters"
        )));
    }
    let key = match prefix {
        None => Key::from_hex(kind, &line[..hex_len]),
        Some(prefix) => Key::from_range_hex(kind, prefix_ascii(prefix), &line[..hex_len]),
    }
    .ok_or_else(|| LineError::Bad("hash is not hexadecimal".into()))?;
    if hash_end == line.len() {
        return Ok(Line::Hash {
            key,
            count: 1,
            capped: false,
        });
    }
    let digits = &line[hash_end + 1..];
    if digits.is_empty() || digits.len() > 20 || !digits.iter().all(u8::is_ascii_digit) {
        return Err(LineError::Bad(format!(
            "count {:?} is not a decimal number",
            String::from_utf8_lossy(&digits[..digits.len().min(24)])
        )));
    }
    let mut value: u64 = 0;
    let mut overflow = false;
    for &d in digits {
        match value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(d - b'0')))
        {
            Some(v) => value = v,
            None => overflow = true,
        }
    }
    if value == 0 && !overflow {
        return Ok(Line::Skip { zero: true });
    }
    let capped = overflow || value > u64::from(u32::MAX);
    let count = if capped { u32::MAX } else { value as u32 };
    Ok(Line::Hash { key, count, capped })
}

/// The kind of the first non-empty line of `text`, if it has one.
pub(crate) fn detect_kind(text: &[u8], ranged: bool) -> Option<Kind> {
    let line = text
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .find(|l| !l.is_empty())?;
    let len = line.iter().position(|&b| b == b':').unwrap_or(line.len());
    Kind::from_hex_len(len + if ranged { 5 } else { 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PW: &[u8] = b"5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8";

    fn hash(kind: Kind, prefix: Option<&[u8; 5]>, line: &[u8]) -> (Key, u32) {
        match parse_line(kind, prefix, line).unwrap() {
            Line::Hash { key, count, .. } => (key, count),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn lines_of_every_shape() {
        let key = Key::from_hex(Kind::Sha1, PW).unwrap();
        assert_eq!(
            hash(
                Kind::Sha1,
                None,
                b"5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:10434004"
            ),
            (key, 10434004)
        );
        assert_eq!(
            hash(
                Kind::Sha1,
                None,
                b"5baa61e4c9b93f3f0682250b6cf8331b7ee68fd8:3\r"
            ),
            (key, 3)
        );
        assert_eq!(hash(Kind::Sha1, None, PW), (key, 1));
        assert_eq!(
            hash(
                Kind::Sha1,
                Some(b"5BAA6"),
                b"1E4C9B93F3F0682250B6CF8331B7EE68FD8:7"
            ),
            (key, 7)
        );
        assert_eq!(
            parse_line(Kind::Sha1, None, b""),
            Ok(Line::Skip { zero: false })
        );
        assert_eq!(
            parse_line(Kind::Sha1, None, b"\r"),
            Ok(Line::Skip { zero: false })
        );
        assert_eq!(
            parse_line(
                Kind::Sha1,
                None,
                b"5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:0"
            ),
            Ok(Line::Skip { zero: true })
        );
        let big = parse_line(
            Kind::Sha1,
            None,
            b"5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:99999999999999999999999",
        )
        .unwrap_err();
        assert!(matches!(big, LineError::Bad(_)));
        assert_eq!(
            parse_line(
                Kind::Sha1,
                None,
                b"5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:99999999999"
            ),
            Ok(Line::Hash {
                key,
                count: u32::MAX,
                capped: true
            })
        );
        let ntlm = Key::from_hex(Kind::Ntlm, b"8846F7EAEE8FB117AD06BDD830B7586C").unwrap();
        assert_eq!(
            hash(Kind::Ntlm, None, b"8846F7EAEE8FB117AD06BDD830B7586C:5"),
            (ntlm, 5)
        );
        assert_eq!(
            parse_line(Kind::Sha1, None, b"8846F7EAEE8FB117AD06BDD830B7586C:5"),
            Err(LineError::Mixed)
        );
        assert_eq!(
            parse_line(
                Kind::Ntlm,
                None,
                b"5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:5"
            ),
            Err(LineError::Mixed)
        );
    }

    #[test]
    fn malformed_lines_are_rejected() {
        for bad in [
            &b"5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD:1"[..],
            b"5BAA61E4C9B93F3F0682250B6CF8331B7EE68FDX:1",
            b"5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:",
            b"5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:1a",
            b"5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:-1",
            b"5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8 :1",
            b"5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:1 ",
            b"hello",
            "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FÄ:1".as_bytes(),
        ] {
            assert!(
                matches!(parse_line(Kind::Sha1, None, bad), Err(LineError::Bad(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn kind_detection_and_range_names() {
        assert_eq!(
            detect_kind(b"\r\n5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:1\r\n", false),
            Some(Kind::Sha1)
        );
        assert_eq!(
            detect_kind(b"8846F7EAEE8FB117AD06BDD830B7586C", false),
            Some(Kind::Ntlm)
        );
        assert_eq!(
            detect_kind(b"1E4C9B93F3F0682250B6CF8331B7EE68FD8:7", true),
            Some(Kind::Sha1)
        );
        assert_eq!(detect_kind(b"", false), None);
        assert_eq!(range_prefix("5baa6.txt"), Some(*b"5BAA6"));
        assert_eq!(range_prefix("5baa6.TXT"), None);
        assert_eq!(range_prefix("5baa.txt"), None);
        assert_eq!(range_prefix("5baag.txt"), None);
    }
}
