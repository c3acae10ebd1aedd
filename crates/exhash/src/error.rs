//! The one error type of the crate.

use std::fmt;

/// What went wrong.
#[non_exhaustive]
#[derive(Debug)]
pub enum ErrorKind {
    /// An I/O operation on the backing file failed.
    Io {
        /// What was being done.
        action: &'static str,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file does not start with the exhash magic bytes.
    NotExhash,
    /// The file was written by a newer version of the format.
    NewerVersion {
        /// Version number found in the header.
        found: u32,
    },
    /// The file is shorter than its header or metadata says.
    Truncated {
        /// Byte offset where more data was expected.
        offset: u64,
        /// Bytes needed from that offset.
        needed: u64,
    },
    /// Neither header copy has a valid checksum.
    NoValidHeader,
    /// A checksum does not match the stored data.
    BadChecksum {
        /// Byte offset of the checksummed region.
        offset: u64,
    },
    /// A structure inside the file is inconsistent.
    Corrupt {
        /// Byte offset of the offending structure.
        offset: u64,
        /// What is wrong.
        what: &'static str,
    },
    /// Another process has the table open for writing (or the wait for it
    /// to let go ran out).
    Locked {
        /// The table file.
        path: std::path::PathBuf,
        /// The process holding it, where the system tells (Linux and
        /// other Unix systems; not Windows).
        pid: Option<u32>,
    },
}

/// The error type of every fallible exhash operation.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
}

impl Error {
    /// The kind of error.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    pub(crate) fn io(action: &'static str, source: std::io::Error) -> Error {
        ErrorKind::Io { action, source }.into()
    }

    pub(crate) fn corrupt(offset: u64, what: &'static str) -> Error {
        ErrorKind::Corrupt { offset, what }.into()
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Error {
        Error { kind }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ErrorKind::Io { action, source } => write!(f, "i/o error while {action}: {source}"),
            ErrorKind::NotExhash => write!(f, "not an exhash file (bad magic at offset 0)"),
            ErrorKind::NewerVersion { found } => write!(
                f,
                "file format version {found} was made by a newer seekless (this one reads up to {})",
                crate::format::VERSION
            ),
            ErrorKind::Truncated { offset, needed } => write!(
                f,
                "file is truncated: {needed} bytes needed at offset {offset}"
            ),
            ErrorKind::NoValidHeader => {
                write!(
                    f,
                    "neither header copy (offsets 0 and 4096) has a valid checksum"
                )
            }
            ErrorKind::BadChecksum { offset } => {
                write!(f, "checksum mismatch for data at offset {offset}")
            }
            ErrorKind::Corrupt { offset, what } => {
                write!(f, "corrupt file at offset {offset}: {what}")
            }
            ErrorKind::Locked { path, pid } => {
                write!(f, "{} is open for writing in ", path.display())?;
                match pid {
                    Some(pid) => write!(f, "another process (pid {pid})"),
                    None => write!(f, "another process"),
                }
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

/// The crate's `Result`.
pub type Result<T> = std::result::Result<T, Error>;
