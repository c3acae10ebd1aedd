//! Delta bundles (docs/format-bundle.md): what changed between two indexes
//! of one kind, range by range, carried to where there is no network and
//! applied there by `update --from-bundle`.
//!
//! [`diff`] finds the ranges whose content digest (`read::identity`) or
//! validator differs between two indexes and writes NEW's lines of each; a
//! bundle is read back by the core's [`crate::bundle`] (untrusted input:
//! every size bounded, the order of the entries and the checksum over the
//! whole content checked). In a directory of bundles (`--bundle-out DIR`,
//! served by `serve --bundles`), each is named by [`bundle_name`].

use std::io::{BufWriter, Write};
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::bundle::{BUNDLE_VERSION, BundleHeader, END, LINES, MAGIC, VALIDATOR};
use crate::error::{Error, ErrorKind, Result};
use crate::format::source::{MAX_VALIDATOR, RANGES, Source};
use crate::range::parse::MAX_RANGE_BODY;
use crate::read::identity::{Digests, identity_hex};
use crate::read::index::Index;
use crate::tmpfile::Nameless;

/// Bytes of content compressed into one gzip member.
const MEMBER: usize = 4 << 20;

/// What [`diff`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
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

/// Whether `--bundle-out` names a directory of bundles: one that exists,
/// or a path ending in a separator (`bundles/`: made when missing).
pub(crate) fn is_bundle_dir(out: &Path) -> bool {
    let text = out.as_os_str().to_string_lossy();
    out.is_dir() || text.ends_with('/') || text.ends_with(std::path::MAIN_SEPARATOR)
}

/// The name a bundle is given in a directory of bundles: the first 16 hex
/// digits of the identity it applies to and of the one it makes.
pub(crate) fn bundle_name(from: &[u8; 32], to: &[u8; 32]) -> String {
    format!(
        "{}-{}.bundle",
        &identity_hex(from)[..16],
        &identity_hex(to)[..16]
    )
}
