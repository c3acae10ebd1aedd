//! Hex as users type it: block hashes and XOR keys.

use crate::error::{Error, ErrorKind, Result};

/// Parses exactly `N` bytes of hex (no prefix; whitespace not allowed).
pub(crate) fn parse_hex<const N: usize>(text: &str) -> Result<[u8; N]> {
    let digits = text.strip_prefix("0x").unwrap_or(text).as_bytes();
    if digits.len() != 2 * N {
        return Err(hex_error(text, N));
    }
    let nibble = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    };
    let mut out = [0u8; N];
    for (i, byte) in out.iter_mut().enumerate() {
        match (nibble(digits[2 * i]), nibble(digits[2 * i + 1])) {
            (Some(hi), Some(lo)) => *byte = hi << 4 | lo,
            _ => return Err(hex_error(text, N)),
        }
    }
    Ok(out)
}

pub(crate) fn hex_error(text: &str, expected_len: usize) -> Error {
    ErrorKind::BadHex {
        text: text.to_string(),
        expected_len,
    }
    .into()
}

/// Lowercase hex of `bytes`, in their order.
pub(crate) fn to_hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(2 * bytes.len());
    for byte in bytes {
        let _ = write!(out, "{byte:02x}");
    }
    out
}
