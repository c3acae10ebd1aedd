//! The one error type of the pwned engine.

use std::fmt;
use std::path::PathBuf;

/// Everything that can go wrong while building, opening or reading an index.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
}

/// What went wrong.
#[derive(Debug)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A file could not be read or written.
    Io {
        /// The file, when known.
        path: Option<PathBuf>,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A line of the input is malformed.
    BadLine {
        /// The input file (`-` for stdin).
        file: String,
        /// 1-based line number.
        line: u64,
        /// What is wrong with it.
        what: String,
    },
    /// The inputs hold SHA-1 and NTLM hashes together.
    MixedKinds {
        /// The input file (`-` for stdin).
        file: String,
        /// 1-based line number of the first hash of the other kind.
        line: u64,
    },
    /// A hash given for lookup is not hex of the index's kind.
    BadHash {
        /// The text that was given.
        text: String,
        /// What is wrong with it.
        what: &'static str,
    },
    /// The file is not a seekless pwned index.
    NotAnIndex,
    /// The index was made by a newer seekless.
    NewerVersion {
        /// The version found in the file.
        version: u16,
        /// The newest version this build reads.
        newest: u16,
    },
    /// The index is damaged (checksum mismatch, wrong size, inconsistent data).
    Corrupt {
        /// What is wrong.
        what: String,
    },
    /// The index is too large for this build (more pages than fit an address).
    TooLarge,
    /// Hashes given to a `SortedWriter` (the streaming writer) went down.
    Unsorted {
        /// The hash before, in hex.
        previous: String,
        /// The smaller hash that followed it, in hex.
        next: String,
    },
    /// An existing index holds the other kind of hash.
    WrongKind {
        /// The kind the index holds.
        found: crate::Kind,
        /// The kind asked for.
        wanted: crate::Kind,
    },
    /// A compact index was asked to keep fewer than 32 bits of a hash, or
    /// more than it has.
    KeyBits {
        /// The bits asked for.
        key_bits: u32,
        /// The kind of the hashes.
        kind: crate::Kind,
        /// The fewest bits an index may keep.
        min: u32,
    },
    /// The index keeps only the top bits of each hash (`--key-bits`), and
    /// what was asked needs whole hashes (ranges, export, update).
    Compact {
        /// The bits of each hash the index keeps.
        key_bits: u32,
    },
    /// An index's minimum count (a subset, `--min-count`) cannot become
    /// the one asked for this way.
    MinCount {
        /// The index's minimum count (1: it holds every hash).
        index: u64,
        /// The minimum count asked for.
        asked: u64,
        /// Why not, and what would do it.
        what: &'static str,
    },
    /// A range could not be fetched.
    Fetch {
        /// The range's 5-hex-digit prefix.
        prefix: String,
        /// What went wrong the last time.
        what: String,
        /// How many times it was tried.
        tries: u32,
    },
    /// A delta bundle cannot be read, is damaged, or does not fit the index
    /// it is applied to.
    BadBundle {
        /// What is wrong.
        what: String,
    },
    /// A gzip ranges file (`INDEX.gz-ranges`) cannot be used: damaged,
    /// of a newer format, or made from another index.
    GzipRanges {
        /// The file and what is wrong with it.
        what: String,
    },
    /// An answer of the range API is malformed.
    BadRange {
        /// The range's 5-hex-digit prefix.
        prefix: String,
        /// 1-based line number in the answer (0: the answer as a whole).
        line: u64,
        /// What is wrong with it.
        what: String,
    },
}

impl Error {
    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// The kind, by value.
    pub fn into_kind(self) -> ErrorKind {
        self.kind
    }

    pub(crate) fn io(path: impl Into<Option<PathBuf>>, source: std::io::Error) -> Self {
        ErrorKind::Io {
            path: path.into(),
            source,
        }
        .into()
    }

    pub(crate) fn corrupt(what: impl Into<String>) -> Self {
        ErrorKind::Corrupt { what: what.into() }.into()
    }

    /// The error with `path` named, when it is an I/O error without a path.
    pub(crate) fn with_path(self, path: &std::path::Path) -> Error {
        match self.kind {
            ErrorKind::Io { path: None, source } => Error::io(path.to_path_buf(), source),
            kind => Error { kind },
        }
    }

    pub(crate) fn bad_line(file: &str, line: u64, what: impl Into<String>) -> Self {
        ErrorKind::BadLine {
            file: file.to_string(),
            line,
            what: what.into(),
        }
        .into()
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Error { kind }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ErrorKind::Io {
                path: Some(path),
                source,
            } => write!(f, "{}: {source}", path.display()),
            ErrorKind::Io { path: None, source } => write!(f, "{source}"),
            ErrorKind::BadLine { file, line, what } => write!(f, "{file}:{line}: {what}"),
            ErrorKind::MixedKinds { file, line } => write!(
                f,
                "{file}:{line}: hash kind differs from the first line (SHA-1 and NTLM cannot be mixed in one index)"
            ),
            ErrorKind::BadHash { text, what } => write!(f, "bad hash {text:?}: {what}"),
            ErrorKind::NotAnIndex => write!(f, "not a seekless pwned index (bad magic)"),
            ErrorKind::NewerVersion { version, newest } => write!(
                f,
                "index format version {version} was made by a newer seekless; this one reads version {newest}"
            ),
            ErrorKind::Corrupt { what } => write!(f, "index is damaged: {what}"),
            ErrorKind::TooLarge => write!(f, "index is too large for this platform"),
            ErrorKind::WrongKind { found, wanted } => {
                write!(f, "the index holds {found} hashes, not {wanted}")
            }
            ErrorKind::KeyBits {
                key_bits,
                kind,
                min,
            } => write!(
                f,
                "cannot keep {key_bits} bits of {kind} hashes: from {min} to {} bits",
                kind.bits()
            ),
            ErrorKind::Compact { key_bits } => write!(
                f,
                "the index keeps only the top {key_bits} bits of each hash (built with --key-bits); this needs whole hashes"
            ),
            ErrorKind::MinCount { index, asked, what } => {
                let held = |m: u64| match m {
                    0 | 1 => "every hash".to_string(),
                    m => format!("the hashes seen at least {m} times"),
                };
                write!(
                    f,
                    "the index holds {}, and {} were asked for: {what}",
                    held(*index),
                    held(*asked)
                )
            }
            ErrorKind::Fetch {
                prefix,
                what,
                tries,
            } => match tries {
                1 => write!(f, "range {prefix}: {what} (tried once)"),
                _ => write!(f, "range {prefix}: {what} (tried {tries} times)"),
            },
            ErrorKind::Unsorted { previous, next } => {
                write!(f, "hashes out of order: {next} after {previous}")
            }
            ErrorKind::BadBundle { what } => write!(f, "bundle refused: {what}"),
            ErrorKind::GzipRanges { what } => write!(f, "gzip ranges file: {what}"),
            ErrorKind::BadRange {
                prefix,
                line: 0,
                what,
            } => write!(f, "range {prefix}: {what}"),
            ErrorKind::BadRange { prefix, line, what } => {
                write!(f, "range {prefix}, line {line}: {what}")
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ErrorKind::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
