//! Decoding errors: small and `Copy`, so the hot path carries no allocation.
//! serde and torrents have their own error types
//! ([`SerdeError`](crate::SerdeError), [`torrent::Error`](crate::torrent::Error)),
//! each reaching this one through `source()`.

use std::fmt;

use crate::Kind;

/// A document that cannot be decoded, a value read as the wrong type, or a
/// JSON text that does not stand for bencode: what, and at which byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    offset: usize,
}

/// The crate's `Result`.
pub type Result<T> = std::result::Result<T, Error>;

/// What went wrong. The first seven kinds have exactly the meaning and
/// offset of libtorrent 2.0's `bdecode` errors of the same name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A digit was required (in an integer, a string length, or a dictionary
    /// key position) but something else was found (at the offending byte).
    ExpectedDigit,
    /// A string length ran to the end of the input without a `:` (at the
    /// end of the input).
    ExpectedColon,
    /// The input ended inside a value, or a value was expected but the input
    /// ended (also: an `e` at the top level, as libtorrent reports it).
    UnexpectedEof,
    /// A byte that cannot start a value (or an `e` where a dictionary value
    /// belongs).
    ExpectedValue,
    /// Lists and dictionaries nest deeper than the depth limit (at the token
    /// that would exceed it).
    DepthExceeded,
    /// The token limit, the input size limit or the length-prefix width limit
    /// was exceeded (at the token; 0 for the input size).
    LimitExceeded,
    /// An integer or string length does not fit: more than 20 integer digits,
    /// a string length beyond `i64`, or (from [`crate::Node::as_int`]) an
    /// integer beyond `i64`.
    Overflow,
    /// Strict mode: a dictionary key sorts before the previous key.
    UnsortedKey,
    /// Strict mode: a dictionary key equals the previous key.
    DuplicateKey,
    /// Strict mode: a leading zero in an integer or a string length.
    LeadingZero,
    /// Strict mode: the integer `-0` (or `-` followed by zeros), at the `-`.
    NegativeZero,
    /// Strict mode: bytes follow the top-level value (at the first of them).
    TrailingData,
    /// A node was read as the wrong type (at the node).
    WrongType {
        /// The type the caller asked for.
        expected: Kind,
        /// The node's actual type.
        found: Kind,
    },
    /// A JSON text given to [`crate::from_json`] is not JSON, or does not
    /// stand for bencode (at the byte of the JSON text).
    Json {
        /// What is wrong there.
        message: &'static str,
    },
}

impl Error {
    pub(crate) const fn new(kind: ErrorKind, offset: usize) -> Error {
        Error { kind, offset }
    }

    /// What went wrong.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The byte offset in the input (in the JSON text, for
    /// [`ErrorKind::Json`]).
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The short machine-readable name of the error, as printed by
    /// `seekless bencode check` (`expected_digit`, `unsorted_key`, ...).
    pub fn code(&self) -> &'static str {
        match self.kind {
            ErrorKind::ExpectedDigit => "expected_digit",
            ErrorKind::ExpectedColon => "expected_colon",
            ErrorKind::UnexpectedEof => "unexpected_eof",
            ErrorKind::ExpectedValue => "expected_value",
            ErrorKind::DepthExceeded => "depth_exceeded",
            ErrorKind::LimitExceeded => "limit_exceeded",
            ErrorKind::Overflow => "overflow",
            ErrorKind::UnsortedKey => "unsorted_key",
            ErrorKind::DuplicateKey => "duplicate_key",
            ErrorKind::LeadingZero => "leading_zero",
            ErrorKind::NegativeZero => "negative_zero",
            ErrorKind::TrailingData => "trailing_data",
            ErrorKind::WrongType { .. } => "wrong_type",
            ErrorKind::Json { .. } => "json",
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let offset = self.offset;
        match self.kind {
            ErrorKind::ExpectedDigit => write!(f, "expected a digit at byte {offset}"),
            ErrorKind::ExpectedColon => {
                write!(f, "expected ':' after a string length at byte {offset}")
            }
            ErrorKind::UnexpectedEof => write!(f, "unexpected end of input at byte {offset}"),
            ErrorKind::ExpectedValue => write!(
                f,
                "expected a value (list, dict, int or string) at byte {offset}"
            ),
            ErrorKind::DepthExceeded => write!(f, "nesting too deep at byte {offset}"),
            ErrorKind::LimitExceeded => write!(f, "limit exceeded at byte {offset}"),
            ErrorKind::Overflow => write!(f, "integer overflow at byte {offset}"),
            ErrorKind::UnsortedKey => write!(f, "unsorted dictionary key at byte {offset}"),
            ErrorKind::DuplicateKey => write!(f, "duplicate dictionary key at byte {offset}"),
            ErrorKind::LeadingZero => write!(f, "leading zero at byte {offset}"),
            ErrorKind::NegativeZero => write!(f, "negative zero at byte {offset}"),
            ErrorKind::TrailingData => {
                write!(f, "trailing data after the value at byte {offset}")
            }
            ErrorKind::WrongType { expected, found } => {
                write!(f, "expected {expected} but found {found} at byte {offset}")
            }
            ErrorKind::Json { message } => write!(f, "{message} at byte {offset}"),
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stays_small_and_copy() {
        fn copy<T: Copy>() {}
        copy::<Error>();
        assert!(std::mem::size_of::<Error>() <= 32);
    }
}
