//! The torrent error: invalid metainfo, unreadable files, or bytes that are
//! not bencode at all.

use std::fmt;
use std::path::PathBuf;

/// Reading, checking, verifying or creating a torrent failed.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
}

/// The torrent module's `Result`.
pub type Result<T> = std::result::Result<T, Error>;

/// What went wrong.
#[derive(Debug)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The bytes are not bencode, or a field has the wrong type.
    Decode(crate::Error),
    /// A field of the metainfo is invalid.
    Invalid {
        /// The dictionary path of the field, e.g. `info.piece length`.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Reading or writing a file failed.
    Io {
        /// The file concerned.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
}

impl Error {
    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    pub(crate) fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Error {
        Error {
            kind: ErrorKind::Invalid {
                field: field.into(),
                reason: reason.into(),
            },
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error {
            kind: ErrorKind::Io {
                path: path.into(),
                source,
            },
        }
    }
}

impl From<crate::Error> for Error {
    fn from(e: crate::Error) -> Error {
        Error {
            kind: ErrorKind::Decode(e),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ErrorKind::Decode(e) => e.fmt(f),
            ErrorKind::Invalid { field, reason } => write!(f, "invalid torrent: {field}: {reason}"),
            ErrorKind::Io { path, source } => write!(f, "{}: {source}", path.display()),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ErrorKind::Decode(e) => Some(e),
            ErrorKind::Io { source, .. } => Some(source),
            ErrorKind::Invalid { .. } => None,
        }
    }
}
