//! The crate's one error type.

use std::fmt;
use std::path::PathBuf;

use crate::Kind;

/// Everything that can go wrong in this crate: decoding, strict-mode
/// violations, typed access to nodes, torrent validation and verification.
///
/// Every decoding error carries the byte offset in the input where it was
/// detected. The first seven decoding variants have exactly the meaning and
/// offset of libtorrent 2.0's `bdecode` errors of the same name.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A digit was required (in an integer, a string length, or a dictionary
    /// key position) but something else was found.
    ExpectedDigit {
        /// Offset of the offending byte.
        offset: usize,
    },
    /// A string length ran to the end of the input without a `:`.
    ExpectedColon {
        /// Offset of the end of the input.
        offset: usize,
    },
    /// The input ended inside a value, or a value was expected but the input
    /// ended (also: an `e` at the top level, as libtorrent reports it).
    UnexpectedEof {
        /// Offset where more input was needed.
        offset: usize,
    },
    /// A byte that cannot start a value (or an `e` where a dictionary value
    /// belongs).
    ExpectedValue {
        /// Offset of the offending byte.
        offset: usize,
    },
    /// Lists and dictionaries nest deeper than the depth limit.
    DepthExceeded {
        /// Offset of the token that would exceed the limit.
        offset: usize,
    },
    /// The token limit, the input size limit or the length-prefix width limit
    /// was exceeded.
    LimitExceeded {
        /// Offset of the token that exceeded the limit (0 for the input size).
        offset: usize,
    },
    /// An integer or string length does not fit: more than 20 integer digits,
    /// a string length beyond `i64`, or (from [`crate::Node::as_int`]) an
    /// integer beyond `i64`.
    Overflow {
        /// Offset where the overflow was detected.
        offset: usize,
    },
    /// Strict mode: a dictionary key sorts before the previous key.
    UnsortedKey {
        /// Offset of the out-of-order key.
        offset: usize,
    },
    /// Strict mode: a dictionary key equals the previous key.
    DuplicateKey {
        /// Offset of the repeated key.
        offset: usize,
    },
    /// Strict mode: a leading zero in an integer or a string length.
    LeadingZero {
        /// Offset of the leading zero.
        offset: usize,
    },
    /// Strict mode: the integer `-0` (or `-` followed by zeros).
    NegativeZero {
        /// Offset of the minus sign.
        offset: usize,
    },
    /// Strict mode: bytes follow the top-level value.
    TrailingData {
        /// Offset of the first trailing byte.
        offset: usize,
    },
    /// A node was accessed as the wrong type.
    WrongType {
        /// Offset of the node.
        offset: usize,
        /// The type the caller asked for.
        expected: Kind,
        /// The node's actual type.
        found: Kind,
    },
    /// serde could not map a value to or from bencode.
    Serde {
        /// Offset of the value concerned, when known.
        offset: Option<usize>,
        /// What went wrong.
        message: String,
    },
    /// A torrent's metainfo is invalid.
    Torrent {
        /// The dictionary path of the offending field, e.g. `info.piece length`.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A JSON text given to [`crate::from_json`] is not JSON, or does not
    /// stand for bencode.
    Json {
        /// Byte offset in the JSON text.
        offset: usize,
        /// What is wrong there.
        message: &'static str,
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
    /// The short machine-readable name of the error, as printed by
    /// `seekless bencode check` (`expected_digit`, `unsorted_key`, ...).
    pub fn code(&self) -> &'static str {
        match self {
            Error::ExpectedDigit { .. } => "expected_digit",
            Error::ExpectedColon { .. } => "expected_colon",
            Error::UnexpectedEof { .. } => "unexpected_eof",
            Error::ExpectedValue { .. } => "expected_value",
            Error::DepthExceeded { .. } => "depth_exceeded",
            Error::LimitExceeded { .. } => "limit_exceeded",
            Error::Overflow { .. } => "overflow",
            Error::UnsortedKey { .. } => "unsorted_key",
            Error::DuplicateKey { .. } => "duplicate_key",
            Error::LeadingZero { .. } => "leading_zero",
            Error::NegativeZero { .. } => "negative_zero",
            Error::TrailingData { .. } => "trailing_data",
            Error::WrongType { .. } => "wrong_type",
            Error::Serde { .. } => "serde",
            Error::Torrent { .. } => "invalid_torrent",
            Error::Json { .. } => "json",
            Error::Io { .. } => "io",
        }
    }

    /// The byte offset in the input, for errors that have one.
    pub fn offset(&self) -> Option<usize> {
        match *self {
            Error::ExpectedDigit { offset }
            | Error::ExpectedColon { offset }
            | Error::UnexpectedEof { offset }
            | Error::ExpectedValue { offset }
            | Error::DepthExceeded { offset }
            | Error::LimitExceeded { offset }
            | Error::Overflow { offset }
            | Error::UnsortedKey { offset }
            | Error::DuplicateKey { offset }
            | Error::LeadingZero { offset }
            | Error::NegativeZero { offset }
            | Error::TrailingData { offset }
            | Error::WrongType { offset, .. }
            | Error::Json { offset, .. } => Some(offset),
            Error::Serde { offset, .. } => offset,
            Error::Torrent { .. } | Error::Io { .. } => None,
        }
    }

    pub(crate) fn torrent(field: impl Into<String>, reason: impl Into<String>) -> Error {
        Error::Torrent {
            field: field.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::ExpectedDigit { offset } => write!(f, "expected a digit at byte {offset}"),
            Error::ExpectedColon { offset } => {
                write!(f, "expected ':' after a string length at byte {offset}")
            }
            Error::UnexpectedEof { offset } => {
                write!(f, "unexpected end of input at byte {offset}")
            }
            Error::ExpectedValue { offset } => {
                write!(
                    f,
                    "expected a value (list, dict, int or string) at byte {offset}"
                )
            }
            Error::DepthExceeded { offset } => write!(f, "nesting too deep at byte {offset}"),
            Error::LimitExceeded { offset } => write!(f, "limit exceeded at byte {offset}"),
            Error::Overflow { offset } => write!(f, "integer overflow at byte {offset}"),
            Error::UnsortedKey { offset } => write!(f, "unsorted dictionary key at byte {offset}"),
            Error::DuplicateKey { offset } => {
                write!(f, "duplicate dictionary key at byte {offset}")
            }
            Error::LeadingZero { offset } => write!(f, "leading zero at byte {offset}"),
            Error::NegativeZero { offset } => write!(f, "negative zero at byte {offset}"),
            Error::TrailingData { offset } => {
                write!(f, "trailing data after the value at byte {offset}")
            }
            Error::WrongType {
                offset,
                expected,
                found,
            } => write!(f, "expected {expected} but found {found} at byte {offset}"),
            Error::Serde {
                offset: Some(offset),
                message,
            } => write!(f, "{message} at byte {offset}"),
            Error::Serde {
                offset: None,
                message,
            } => f.write_str(message),
            Error::Torrent { field, reason } => write!(f, "invalid torrent: {field}: {reason}"),
            Error::Json { offset, message } => write!(f, "{message} at byte {offset}"),
            Error::Io { path, source } => write!(f, "{}: {source}", path.display()),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
