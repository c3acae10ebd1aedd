//! serde's error: a message (serde's own, or ours) and where, when known.

use std::fmt;

/// A value serde could not map to or from bencode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SerdeError {
    message: String,
    offset: Option<usize>,
    decode: Option<crate::Error>,
}

impl SerdeError {
    pub(crate) fn at(offset: usize, message: impl Into<String>) -> SerdeError {
        SerdeError {
            message: message.into(),
            offset: Some(offset),
            decode: None,
        }
    }

    /// What went wrong.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The byte offset in the input, when known.
    pub fn offset(&self) -> Option<usize> {
        self.offset
    }

    /// The decoding error behind this one, if the input was not bencode or
    /// a value had the wrong type.
    pub fn decode_error(&self) -> Option<crate::Error> {
        self.decode
    }
}

impl From<crate::Error> for SerdeError {
    fn from(e: crate::Error) -> SerdeError {
        SerdeError {
            message: e.to_string(),
            offset: Some(e.offset()),
            decode: Some(e),
        }
    }
}

impl fmt::Display for SerdeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.decode, self.offset) {
            (Some(_), _) | (None, None) => f.write_str(&self.message),
            (None, Some(offset)) => write!(f, "{} at byte {offset}", self.message),
        }
    }
}

impl std::error::Error for SerdeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.decode
            .as_ref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl serde::de::Error for SerdeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        SerdeError {
            message: msg.to_string(),
            offset: None,
            decode: None,
        }
    }
}

impl serde::ser::Error for SerdeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        <SerdeError as serde::de::Error>::custom(msg)
    }
}
