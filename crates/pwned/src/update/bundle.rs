//! Delta bundles (docs/format-bundle.md): what changed between two indexes
//! of one kind, range by range, carried to where there is no network and
//! applied there by `update --from-bundle`.
//!
//! [`diff`] finds the ranges whose content digest (`read::identity`) or
//! validator differs between two indexes and writes NEW's lines of each; a
//! [`BundleReader`] reads a bundle back, checking every size, the order of
//! the entries and the checksum over the whole content.

use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::Path;

use flate2::bufread::MultiGzDecoder;
use sha2::{Digest, Sha256};

use crate::error::{Error, ErrorKind, Result};
use crate::format::hash::Kind;
use crate::format::source::{MAX_VALIDATOR, RANGES, Source};
use crate::range::parse::MAX_RANGE_BODY;
use crate::read::identity::Digests;
use crate::read::index::Index;
use crate::tmpfile::Nameless;

const MAGIC: &[u8; 8] = b"SEEKBNDL";
const END: &[u8; 8] = b"SEEKBEND";
/// The bundle format version this build writes and reads.
pub const BUNDLE_VERSION: u16 = 1;

/// Entry flags.
const LINES: u8 = 1;
const VALIDATOR: u8 = 2;

/// Bytes of content compressed into one gzip member.
const MEMBER: usize = 4 << 20;

/// What a bundle's header says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleHeader {
    /// The kind of both indexes.
    pub kind: Kind,
    /// The identity of the index the bundle applies to.
    pub old_identity: [u8; 32],
    /// The identity of the index it makes.
    pub new_identity: [u8; 32],
    /// Hashes in the index it applies to.
    pub old_hashes: u64,
    /// Hashes in the index it makes.
    pub new_hashes: u64,
    /// The sum of the counts of the index it makes (saturating).
    pub new_total: u64,
    /// When the index it makes was last updated, in seconds since the Unix
    /// epoch (0: not known).
    pub updated: u64,
    /// The source URL of the index it makes (empty: not made by `update`).
    pub url: String,
}

/// One range a bundle changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleEntry {
    /// The range's prefix.
    pub prefix: u32,
    /// NEW's validator for the range (`None`: it has none).
    pub validator: Option<Vec<u8>>,
    /// The range's new lines as the range API answers them, when its
    /// content changed (empty: NEW holds no hash of the range).
    pub lines: Option<Vec<u8>>,
}

/// What [`diff`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiffSummary {
    /// Ranges whose hashes or counts differ.
    pub changed: u32,
    /// Ranges whose validator alone differs.
    pub validators: u32,
    /// Bytes of lines the bundle carries (before compression).
    pub lines_bytes: u64,
    /// Bytes written (compressed).
    pub bytes: u64,
}

/// Writes to `out` the bundle that makes `new` of `old` (`None`: an index
/// with no hash, as before a first `update`). Both indexes are read once
/// (each on a thread of its own), then the changed ranges of `new` again.
///
/// A bundle carries no minimum count: the index it makes keeps the one
/// of the index it is applied to. So `old` and `new` must have the same
/// (no `old` counting as every hash).
pub fn diff(old: Option<&Index>, new: &Index, out: impl Write) -> Result<DiffSummary> {
    let kind = new.kind();
    if let Some(old) = old
        && old.kind() != kind
    {
        return Err(ErrorKind::WrongKind {
            found: old.kind(),
            wanted: kind,
        }
        .into());
    }
    let (old_min, new_min) = (
        old.map_or(1, |old| old.stats().min_count),
        new.stats().min_count,
    );
    if old_min != new_min {
        let held = |m: u64| match m {
            1 => "every hash".to_string(),
            m => format!("only the hashes seen at least {m} times"),
        };
        return Err(ErrorKind::BadBundle {
            what: format!(
                "the old index holds {}, the new one {}: a bundle joins only indexes of the same minimum count (the index it makes keeps the minimum of the one it is applied to)",
                held(old_min),
                held(new_min)
            ),
        }
        .into());
    }
    let (old_digests, new_digests) = std::thread::scope(|s| {
        let old_digests = s.spawn(|| old.map_or(Ok(Digests::empty(kind)), Digests::of));
        let new_digests = Digests::of(new);
        (
            old_digests.join().expect("the digest thread panicked"),
            new_digests,
        )
    });
    let (old_digests, new_digests) = (old_digests?, new_digests?);
    let old_source = old.map(Index::source).transpose()?.flatten();
    let new_source = new.source()?;
    let validator = |source: &Option<Source>, p: u32| {
        source
            .as_ref()
            .and_then(|s| s.validator(p))
            .map(<[u8]>::to_vec)
    };
    let stats = new.stats();
    let header = BundleHeader {
        kind,
        old_identity: old_digests.identity(kind),
        new_identity: new_digests.identity(kind),
        old_hashes: old.map_or(0, Index::len),
        new_hashes: stats.hashes,
        new_total: stats.total_count,
        updated: new_source.as_ref().map_or(0, |s| s.updated),
        url: new_source
            .as_ref()
            .map_or_else(String::new, |s| s.url.clone()),
    };
    let mut entries = Vec::new();
    let mut summary = DiffSummary::default();
    for p in 0..RANGES {
        let content = old_digests.get(p) != new_digests.get(p);
        let new_validator = validator(&new_source, p);
        if content || validator(&old_source, p) != new_validator {
            summary.changed += u32::from(content);
            summary.validators += u32::from(!content);
            entries.push((p, content, new_validator));
        }
    }
    let mut writer = BundleWriter::new(out, &header, entries.len() as u32)?;
    let mut lines = Vec::new();
    for (prefix, content, validator) in entries {
        lines.clear();
        if content {
            new.write_range(prefix, &mut lines)?;
            summary.lines_bytes += lines.len() as u64;
        }
        writer.entry(prefix, validator.as_deref(), content.then_some(&lines[..]))?;
    }
    summary.bytes = writer.finish()?;
    Ok(summary)
}

/// [`diff`] into the file `out`, written under a temporary name (on Linux,
/// no name at all) and renamed when complete: an error leaves nothing.
pub fn write_bundle(out: &Path, old: Option<&Index>, new: &Index) -> Result<DiffSummary> {
    let dir = crate::tmpfile::parent_dir(out);
    let io_err = |e| Error::io(out.to_path_buf(), e);
    let file = Nameless::create(&dir, "bundle").map_err(io_err)?;
    let mut buffered = BufWriter::with_capacity(1 << 20, &file.file);
    let summary = diff(old, new, &mut buffered).map_err(|e| e.with_path(out))?;
    buffered.into_inner().map_err(|e| io_err(e.into_error()))?;
    file.file.sync_all().map_err(io_err)?;
    file.persist(out).map_err(io_err)?;
    Ok(summary)
}

/// Writes a bundle: the content in gzip members of [`MEMBER`] bytes
/// (libdeflate, level 6), a SHA-256 over all of it at the end.
struct BundleWriter<W: Write> {
    out: W,
    content: Vec<u8>,
    sha: Sha256,
    written: u64,
    entries: u32,
    last: Option<u32>,
}

impl<W: Write> BundleWriter<W> {
    fn new(out: W, header: &BundleHeader, entries: u32) -> Result<BundleWriter<W>> {
        let mut content = Vec::with_capacity(MEMBER + MAX_RANGE_BODY);
        content.extend_from_slice(MAGIC);
        content.extend_from_slice(&BUNDLE_VERSION.to_le_bytes());
        content.push(header.kind.code());
        content.push(0);
        content.extend_from_slice(&header.old_identity);
        content.extend_from_slice(&header.new_identity);
        for n in [
            header.old_hashes,
            header.new_hashes,
            header.new_total,
            header.updated,
        ] {
            content.extend_from_slice(&n.to_le_bytes());
        }
        let url = &header.url.as_bytes()[..header.url.len().min(u16::MAX as usize)];
        content.extend_from_slice(&(url.len() as u16).to_le_bytes());
        content.extend_from_slice(url);
        content.extend_from_slice(&entries.to_le_bytes());
        Ok(BundleWriter {
            out,
            content,
            sha: Sha256::new(),
            written: 0,
            entries,
            last: None,
        })
    }

    fn entry(&mut self, prefix: u32, validator: Option<&[u8]>, lines: Option<&[u8]>) -> Result<()> {
        debug_assert!(self.last.is_none_or(|last| last < prefix) && prefix < RANGES);
        self.last = Some(prefix);
        self.entries -= 1;
        let validator = validator.filter(|v| !v.is_empty() && v.len() <= MAX_VALIDATOR);
        let flags =
            (u8::from(lines.is_some()) * LINES) | (u8::from(validator.is_some()) * VALIDATOR);
        self.content.extend_from_slice(&prefix.to_le_bytes());
        self.content.push(flags);
        if let Some(v) = validator {
            self.content.push(v.len() as u8);
            self.content.extend_from_slice(v);
        }
        if let Some(lines) = lines {
            self.content
                .extend_from_slice(&(lines.len() as u32).to_le_bytes());
            self.content.extend_from_slice(lines);
        }
        if self.content.len() >= MEMBER {
            self.flush_member()?;
        }
        Ok(())
    }

    fn flush_member(&mut self) -> Result<()> {
        if self.content.is_empty() {
            return Ok(());
        }
        self.sha.update(&self.content);
        let member = crate::range::gzip::gzip(&self.content, 6);
        self.out
            .write_all(&member)
            .map_err(|e| Error::io(None, e))?;
        self.written += member.len() as u64;
        self.content.clear();
        Ok(())
    }

    /// Ends the bundle: the end magic and the checksum; the bytes written.
    fn finish(mut self) -> Result<u64> {
        debug_assert_eq!(self.entries, 0, "as many entries as the header says");
        self.content.extend_from_slice(END);
        // The checksum covers everything before it, not itself.
        let mut sha = std::mem::take(&mut self.sha);
        sha.update(&self.content);
        let digest: [u8; 32] = sha.finalize().into();
        self.content.extend_from_slice(&digest);
        self.flush_member()?;
        self.out.flush().map_err(|e| Error::io(None, e))?;
        Ok(self.written)
    }
}

/// Reads a bundle: its header at once, then its entries in order, every
/// size bounded and checked, and at the end ([`BundleReader::finish`]) the
/// checksum over everything and that nothing follows it.
#[derive(Debug)]
pub struct BundleReader<R: Read> {
    input: MultiGzDecoder<BufReader<R>>,
    sha: Sha256,
    header: BundleHeader,
    left: u32,
    last: Option<u32>,
}

impl<R: Read> BundleReader<R> {
    /// Reads and checks the header.
    pub fn new(input: R) -> Result<BundleReader<R>> {
        let mut reader = BundleReader {
            input: MultiGzDecoder::new(BufReader::with_capacity(1 << 20, input)),
            sha: Sha256::new(),
            header: BundleHeader {
                kind: Kind::Sha1,
                old_identity: [0; 32],
                new_identity: [0; 32],
                old_hashes: 0,
                new_hashes: 0,
                new_total: 0,
                updated: 0,
                url: String::new(),
            },
            left: 0,
            last: None,
        };
        let magic: [u8; 8] = reader.array("the magic")?;
        if &magic != MAGIC {
            return Err(bad("not a seekless delta bundle (bad magic)"));
        }
        let version = u16::from_le_bytes(reader.array("the version")?);
        if version > BUNDLE_VERSION {
            return Err(bad(format!(
                "bundle format version {version} was made by a newer seekless; this one reads version {BUNDLE_VERSION}"
            )));
        }
        if version == 0 {
            return Err(bad("bundle format version 0"));
        }
        let [kind, reserved] = reader.array("the kind")?;
        reader.header.kind =
            Kind::from_code(kind).ok_or_else(|| bad(format!("unknown hash kind {kind}")))?;
        if reserved != 0 {
            return Err(bad("a reserved header byte is not zero"));
        }
        reader.header.old_identity = reader.array("the old identity")?;
        reader.header.new_identity = reader.array("the new identity")?;
        reader.header.old_hashes = u64::from_le_bytes(reader.array("the header")?);
        reader.header.new_hashes = u64::from_le_bytes(reader.array("the header")?);
        reader.header.new_total = u64::from_le_bytes(reader.array("the header")?);
        reader.header.updated = u64::from_le_bytes(reader.array("the header")?);
        let url_len = u16::from_le_bytes(reader.array("the header")?);
        let url = reader.bytes(usize::from(url_len), "the source URL")?;
        reader.header.url =
            String::from_utf8(url).map_err(|_| bad("the source URL is not UTF-8"))?;
        reader.left = u32::from_le_bytes(reader.array("the header")?);
        if reader.left > RANGES {
            return Err(bad(format!("{} entries: at most one a range", reader.left)));
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
        self.left
    }

    /// The next entry, or `None` after the last.
    pub fn next_entry(&mut self) -> Result<Option<BundleEntry>> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        let prefix = u32::from_le_bytes(self.array("an entry")?);
        if prefix >= RANGES || self.last.is_some_and(|last| last >= prefix) {
            return Err(bad(format!(
                "entry for range {prefix:05X} out of order or out of range"
            )));
        }
        self.last = Some(prefix);
        let [flags] = self.array("an entry")?;
        if flags & !(LINES | VALIDATOR) != 0 {
            return Err(bad(format!(
                "entry {prefix:05X}: unknown flags {flags:#04x}"
            )));
        }
        let validator = if flags & VALIDATOR != 0 {
            let [len] = self.array("a validator")?;
            if len == 0 {
                return Err(bad(format!("entry {prefix:05X}: an empty validator")));
            }
            Some(self.bytes(usize::from(len), "a validator")?)
        } else {
            None
        };
        let lines = if flags & LINES != 0 {
            let len = u32::from_le_bytes(self.array("a range's lines")?) as usize;
            if len > MAX_RANGE_BODY {
                return Err(bad(format!(
                    "entry {prefix:05X}: {len} bytes of lines, more than a range holds"
                )));
            }
            Some(self.bytes(len, "a range's lines")?)
        } else {
            None
        };
        Ok(Some(BundleEntry {
            prefix,
            validator,
            lines,
        }))
    }

    /// After the last entry: the end magic, the checksum over the content,
    /// and nothing after it.
    pub fn finish(mut self) -> Result<()> {
        if self.left > 0 {
            return Err(bad(format!("{} entries not read", self.left)));
        }
        let end: [u8; 8] = self.array("the end")?;
        if &end != END {
            return Err(bad("the end of the entries is not where the header says"));
        }
        let expected: [u8; 32] = std::mem::take(&mut self.sha).finalize().into();
        let mut stored = [0u8; 32];
        self.input
            .read_exact(&mut stored)
            .map_err(|e| truncated(e, "the checksum"))?;
        if stored != expected {
            return Err(bad("checksum mismatch: the bundle was altered"));
        }
        let mut rest = [0u8; 1];
        match self.input.read(&mut rest) {
            Ok(0) => {}
            Ok(_) => return Err(bad("data after the end of the bundle")),
            Err(e) => return Err(truncated(e, "the end")),
        }
        // Not even bytes that are no gzip member may follow.
        if !self
            .input
            .get_mut()
            .fill_buf()
            .map_err(|e| Error::io(None, e))?
            .is_empty()
        {
            return Err(bad("data after the end of the bundle"));
        }
        Ok(())
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let mut bytes = [0u8; N];
        self.input
            .read_exact(&mut bytes)
            .map_err(|e| truncated(e, what))?;
        self.sha.update(bytes);
        Ok(bytes)
    }

    fn bytes(&mut self, len: usize, what: &str) -> Result<Vec<u8>> {
        let mut bytes = vec![0u8; len];
        self.input
            .read_exact(&mut bytes)
            .map_err(|e| truncated(e, what))?;
        self.sha.update(&bytes);
        Ok(bytes)
    }
}

fn bad(what: impl Into<String>) -> Error {
    ErrorKind::BadBundle { what: what.into() }.into()
}

/// A read that stopped: the bundle ends early, or its gzip is damaged.
fn truncated(e: std::io::Error, what: &str) -> Error {
    match e.kind() {
        std::io::ErrorKind::UnexpectedEof => bad(format!("truncated: it ends in {what}")),
        std::io::ErrorKind::InvalidInput | std::io::ErrorKind::InvalidData => {
            bad(format!("damaged gzip in {what}: {e}"))
        }
        _ => Error::io(None, e),
    }
}
