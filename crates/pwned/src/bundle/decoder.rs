//! The push decoder of bundles: the bytes of a bundle file pushed in, in
//! any chunking; the header, then each entry, then the end out, with the
//! checks of docs/format-bundle.md ("Reading") as each part completes.
//!
//! The content is read part by part (a field of known size: the magic,
//! a length, a range's lines); a part's size is checked before a byte of
//! it is kept, so what is held at once is bounded: 64 KiB of inflated
//! content, the inflater's window, and the part being read (at most a
//! range's lines, [`MAX_RANGE_BODY`]).

use sha2::{Digest, Sha256};

use super::gunzip::Gunzip;
use super::{BUNDLE_VERSION, BundleEntry, BundleHeader, END, LINES, MAGIC, VALIDATOR, bad};
use crate::error::Result;
use crate::format::hash::Kind;
use crate::format::source::RANGES;
use crate::range::parse::MAX_RANGE_BODY;

/// Bytes of content inflated at a time.
const INFLATED: usize = 64 << 10;

/// What a [`BundleDecoder`] hands out, in this order: the header, each
/// entry, the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BundleItem {
    /// The header, checked (magic, version, kind, entry count).
    Header(BundleHeader),
    /// The next entry, checked (prefix order, flags, sizes).
    Entry(BundleEntry),
    /// The end magic and the checksum over the content, checked. Nothing
    /// may follow; [`BundleDecoder::finish`] says whether the stream is
    /// whole.
    End,
}

/// The parts of a bundle's content, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Magic,
    Version,
    Kind,
    OldIdentity,
    NewIdentity,
    Counts,
    UrlLength,
    Url,
    Entries,
    Prefix,
    Flags,
    ValidatorLength,
    Validator,
    LinesLength,
    Lines,
    EndMagic,
    Checksum,
    /// After the checksum: nothing more.
    Done,
}

impl Part {
    /// What the part is called in messages ("truncated: it ends in …").
    fn name(self) -> &'static str {
        match self {
            Part::Magic => "the magic",
            Part::Version => "the version",
            Part::Kind => "the kind",
            Part::OldIdentity => "the old identity",
            Part::NewIdentity => "the new identity",
            Part::Counts | Part::UrlLength | Part::Entries => "the header",
            Part::Url => "the source URL",
            Part::Prefix | Part::Flags => "an entry",
            Part::ValidatorLength | Part::Validator => "a validator",
            Part::LinesLength | Part::Lines => "a range's lines",
            Part::EndMagic | Part::Done => "the end",
            Part::Checksum => "the checksum",
        }
    }
}

/// Decodes a bundle from its file's bytes pushed in by the caller (it does
/// no I/O): [`decode`](BundleDecoder::decode) takes bytes until an item is
/// complete, [`finish`](BundleDecoder::finish) says whether the bundle
/// ended whole. Any chunking of the same bytes gives the same items and
/// the same error. After an error, every call repeats it.
#[derive(Debug)]
pub struct BundleDecoder {
    gunzip: Gunzip,
    /// Inflated content not parsed yet: `inflated[at..filled]`.
    inflated: Box<[u8]>,
    at: usize,
    filled: usize,
    /// The part being read, its bytes so far and its size.
    part: Part,
    field: Vec<u8>,
    want: usize,
    /// Over the content before the checksum; then what the checksum must
    /// be.
    sha: Sha256,
    expected: [u8; 32],
    header: BundleHeader,
    /// Entries not yet complete, the last prefix, the entry being read.
    left: u32,
    last: Option<u32>,
    flags: u8,
    entry: BundleEntry,
    failed: Option<String>,
}

impl Default for BundleDecoder {
    fn default() -> Self {
        BundleDecoder::new()
    }
}

impl BundleDecoder {
    /// A decoder at the start of a bundle file.
    pub fn new() -> BundleDecoder {
        BundleDecoder {
            gunzip: Gunzip::new(),
            inflated: vec![0; INFLATED].into_boxed_slice(),
            at: 0,
            filled: 0,
            part: Part::Magic,
            field: Vec::with_capacity(64),
            want: MAGIC.len(),
            sha: Sha256::new(),
            expected: [0; 32],
            header: BundleHeader::unread(),
            left: 0,
            last: None,
            flags: 0,
            entry: BundleEntry {
                prefix: 0,
                validator: None,
                lines: None,
            },
            failed: None,
        }
    }

    /// Entries the header announced that are not decoded yet (0 before the
    /// header).
    pub fn entries_left(&self) -> u32 {
        self.left
    }

    /// Decodes from `input`, the file's bytes after those taken before,
    /// until an item is complete or `input` is used up. Returns how many
    /// bytes it took and the item, if one is complete: with `None`, all of
    /// `input` was taken; with an item, call again with the rest.
    pub fn decode(&mut self, input: &[u8]) -> Result<(usize, Option<BundleItem>)> {
        if let Some(what) = &self.failed {
            return Err(bad(what.clone()));
        }
        self.step(input).map_err(|what| {
            self.failed = Some(what.clone());
            bad(what)
        })
    }

    /// The file ended: an error unless the bundle is whole (its end and
    /// checksum decoded, its last gzip member complete, nothing after).
    /// Call it after [`decode`](BundleDecoder::decode) took every byte.
    pub fn finish(&mut self) -> Result<()> {
        if let Some(what) = &self.failed {
            return Err(bad(what.clone()));
        }
        if self.part != Part::Done || !self.gunzip.between_members() {
            let what = format!("truncated: it ends in {}", self.part.name());
            self.failed = Some(what.clone());
            return Err(bad(what));
        }
        Ok(())
    }

    fn step(&mut self, input: &[u8]) -> std::result::Result<(usize, Option<BundleItem>), String> {
        let mut taken = 0;
        loop {
            if let Some(item) = self.parse()? {
                return Ok((taken, Some(item)));
            }
            // Everything inflated is parsed: inflate more.
            let rest = &input[taken..];
            if self.part == Part::Done && self.gunzip.between_members() && !rest.is_empty() {
                // Not even bytes that are no gzip member may follow.
                return Err("data after the end of the bundle".into());
            }
            let (used, made) = self
                .gunzip
                .inflate(rest, &mut self.inflated)
                .map_err(|e| format!("damaged gzip in {}: {e}", self.part.name()))?;
            taken += used;
            (self.at, self.filled) = (0, made);
            if used == 0 && made == 0 {
                if taken < input.len() {
                    return Err(format!(
                        "damaged gzip in {}: the inflater stopped",
                        self.part.name()
                    ));
                }
                return Ok((taken, None));
            }
        }
    }

    /// Parses the inflated bytes not parsed yet, until an item is
    /// complete or they are used up.
    fn parse(&mut self) -> std::result::Result<Option<BundleItem>, String> {
        loop {
            if self.part == Part::Done {
                if self.at < self.filled {
                    return Err("data after the end of the bundle".into());
                }
                return Ok(None);
            }
            let n = (self.want - self.field.len()).min(self.filled - self.at);
            let bytes = &self.inflated[self.at..self.at + n];
            if self.part != Part::Checksum {
                self.sha.update(bytes);
            }
            self.field.extend_from_slice(bytes);
            self.at += n;
            if self.field.len() < self.want {
                return Ok(None);
            }
            if let Some(item) = self.complete()? {
                return Ok(Some(item));
            }
        }
    }

    /// The next part, of `want` bytes.
    fn next(&mut self, part: Part, want: usize) {
        self.part = part;
        self.want = want;
        self.field.clear();
    }

    /// The part read whole: checked, kept, and the next one chosen.
    fn complete(&mut self) -> std::result::Result<Option<BundleItem>, String> {
        let f = &self.field;
        let u64_at = |at: usize| u64::from_le_bytes(f[at..at + 8].try_into().expect("8 bytes"));
        match self.part {
            Part::Magic => {
                if f[..] != MAGIC[..] {
                    return Err("not a seekless delta bundle (bad magic)".into());
                }
                self.next(Part::Version, 2);
            }
            Part::Version => {
                let version = u16::from_le_bytes([f[0], f[1]]);
                if version > BUNDLE_VERSION {
                    return Err(format!(
                        "bundle format version {version} was made by a newer seekless; this one reads version {BUNDLE_VERSION}"
                    ));
                }
                if version == 0 {
                    return Err("bundle format version 0".into());
                }
                self.next(Part::Kind, 2);
            }
            Part::Kind => {
                let (kind, reserved) = (f[0], f[1]);
                self.header.kind =
                    Kind::from_code(kind).ok_or_else(|| format!("unknown hash kind {kind}"))?;
                if reserved != 0 {
                    return Err("a reserved header byte is not zero".into());
                }
                self.next(Part::OldIdentity, 32);
            }
            Part::OldIdentity => {
                self.header.old_identity.copy_from_slice(f);
                self.next(Part::NewIdentity, 32);
            }
            Part::NewIdentity => {
                self.header.new_identity.copy_from_slice(f);
                self.next(Part::Counts, 32);
            }
            Part::Counts => {
                self.header.old_hashes = u64_at(0);
                self.header.new_hashes = u64_at(8);
                self.header.new_total = u64_at(16);
                self.header.updated = u64_at(24);
                self.next(Part::UrlLength, 2);
            }
            Part::UrlLength => {
                let len = u16::from_le_bytes([f[0], f[1]]);
                self.next(Part::Url, usize::from(len));
            }
            Part::Url => {
                self.header.url = String::from_utf8(std::mem::take(&mut self.field))
                    .map_err(|_| "the source URL is not UTF-8".to_string())?;
                self.next(Part::Entries, 4);
            }
            Part::Entries => {
                self.left = u32::from_le_bytes(f[..4].try_into().expect("4 bytes"));
                if self.left > RANGES {
                    return Err(format!("{} entries: at most one a range", self.left));
                }
                self.next_entry();
                return Ok(Some(BundleItem::Header(self.header.clone())));
            }
            Part::Prefix => {
                let prefix = u32::from_le_bytes(f[..4].try_into().expect("4 bytes"));
                if prefix >= RANGES || self.last.is_some_and(|last| last >= prefix) {
                    return Err(format!(
                        "entry for range {prefix:05X} out of order or out of range"
                    ));
                }
                self.last = Some(prefix);
                self.entry.prefix = prefix;
                self.next(Part::Flags, 1);
            }
            Part::Flags => {
                let (flags, prefix) = (f[0], self.entry.prefix);
                if flags & !(LINES | VALIDATOR) != 0 {
                    return Err(format!("entry {prefix:05X}: unknown flags {flags:#04x}"));
                }
                self.flags = flags;
                if flags & VALIDATOR != 0 {
                    self.next(Part::ValidatorLength, 1);
                } else {
                    return Ok(self.after_validator());
                }
            }
            Part::ValidatorLength => {
                if f[0] == 0 {
                    return Err(format!(
                        "entry {:05X}: an empty validator",
                        self.entry.prefix
                    ));
                }
                self.next(Part::Validator, usize::from(f[0]));
            }
            Part::Validator => {
                self.entry.validator = Some(std::mem::take(&mut self.field));
                return Ok(self.after_validator());
            }
            Part::LinesLength => {
                let len = u32::from_le_bytes(f[..4].try_into().expect("4 bytes")) as usize;
                if len > MAX_RANGE_BODY {
                    return Err(format!(
                        "entry {:05X}: {len} bytes of lines, more than a range holds",
                        self.entry.prefix
                    ));
                }
                self.next(Part::Lines, len);
            }
            Part::Lines => {
                let lines = std::mem::take(&mut self.field);
                return Ok(Some(self.entry_done(Some(lines))));
            }
            Part::EndMagic => {
                if f[..] != END[..] {
                    return Err("the end of the entries is not where the header says".into());
                }
                // The checksum covers everything before it, the end magic
                // included.
                self.expected = std::mem::take(&mut self.sha).finalize().into();
                self.next(Part::Checksum, 32);
            }
            Part::Checksum => {
                if f[..] != self.expected[..] {
                    return Err("checksum mismatch: the bundle was altered".into());
                }
                self.next(Part::Done, 0);
                return Ok(Some(BundleItem::End));
            }
            Part::Done => unreachable!("nothing is parsed after the end"),
        }
        Ok(None)
    }

    /// After an entry's flags and validator: its lines, or the entry is
    /// complete.
    fn after_validator(&mut self) -> Option<BundleItem> {
        if self.flags & LINES != 0 {
            self.next(Part::LinesLength, 4);
            None
        } else {
            Some(self.entry_done(None))
        }
    }

    /// The entry complete, with `lines`; the next one, or the end, follows.
    fn entry_done(&mut self, lines: Option<Vec<u8>>) -> BundleItem {
        self.left -= 1;
        let entry = BundleEntry {
            prefix: self.entry.prefix,
            validator: self.entry.validator.take(),
            lines,
        };
        self.next_entry();
        BundleItem::Entry(entry)
    }

    fn next_entry(&mut self) {
        if self.left > 0 {
            self.next(Part::Prefix, 4);
        } else {
            self.next(Part::EndMagic, END.len());
        }
    }
}
