//! The strict parser of range answers (`update` reads every answer through
//! it before anything of it is indexed). The usual lines go through
//! [`fast`] (SIMD where the processor has it), the others one at a time
//! here, which also names what is wrong with a line.

mod fast;

use crate::error::{ErrorKind, Result};
use crate::format::hash::{Key, Kind, prefix_ascii};
use crate::format::source::RANGES;
use crate::range::{PREFIX_DIGITS, count_then_next, prefix_hex};

pub(crate) use fast::Lines;

/// The largest decoded answer accepted: a real range is 30–80 KB.
pub const MAX_RANGE_BODY: usize = 8 << 20;

/// Parses one range answer for `prefix` into `out` (appended): lines
/// `SUFFIX:COUNT` with exactly 35 (NTLM: 27) hex digits in either case, a
/// decimal count, CRLF or LF between lines, suffixes strictly ascending.
/// Lines with count 0 (the padding `Add-Padding` asks for) are checked and
/// dropped. Anything else is an error naming the prefix and line, and `out`
/// is left as it was.
pub fn parse_range(kind: Kind, prefix: u32, body: &[u8], out: &mut Vec<(Key, u64)>) -> Result<()> {
    parse_range_with(Lines::detect(), kind, prefix, body, out)
}

/// [`parse_range`] scalar only: what the fast paths are held to.
#[cfg(any(test, feature = "test-util"))]
pub fn parse_range_scalar(
    kind: Kind,
    prefix: u32,
    body: &[u8],
    out: &mut Vec<(Key, u64)>,
) -> Result<()> {
    parse_range_with(Lines::Scalar, kind, prefix, body, out)
}

/// [`parse_range`] with the usual lines taken by `lines`.
pub(crate) fn parse_range_with(
    lines: Lines,
    kind: Kind,
    prefix: u32,
    body: &[u8],
    out: &mut Vec<(Key, u64)>,
) -> Result<()> {
    let start = out.len();
    let result = parse_into(lines, kind, prefix, body, out);
    if result.is_err() {
        out.truncate(start);
    }
    result
}

fn parse_into(
    lines: Lines,
    kind: Kind,
    prefix: u32,
    body: &[u8],
    out: &mut Vec<(Key, u64)>,
) -> Result<()> {
    if prefix >= RANGES {
        return Err(bad(prefix, 0, "prefix out of range".into()));
    }
    if body.len() > MAX_RANGE_BODY {
        return Err(bad(
            prefix,
            0,
            format!("answer of {} bytes is over {MAX_RANGE_BODY}", body.len()),
        ));
    }
    let suffix_len = kind.hex_len() - PREFIX_DIGITS;
    let digits: [u8; PREFIX_DIGITS] = prefix_hex(prefix).as_bytes().try_into().expect("5 digits");
    let ascii = prefix_ascii(&digits);
    out.reserve(body.len() / (suffix_len + 4));
    let mut at = fast::Cursor {
        pos: 0,
        number: 0,
        previous: None,
    };
    loop {
        fast::take(lines, kind, ascii, body, &mut at, out);
        if at.pos >= body.len() {
            return Ok(());
        }
        // A line the fast path left: another shape, near the end, or wrong.
        at.number += 1;
        let number = at.number;
        let (key, count, next) = match quick_line(kind, ascii, body, at.pos) {
            Some(line) => line,
            None => {
                strict_line(kind, ascii, body, at.pos).map_err(|what| bad(prefix, number, what))?
            }
        };
        at.pos = next;
        if at.previous.is_some_and(|p| p >= key) {
            return Err(bad(
                prefix,
                number,
                "suffixes are not strictly ascending".into(),
            ));
        }
        at.previous = Some(key);
        if count > 0 {
            out.push((key, count));
        }
    }
}

fn bad(prefix: u32, line: u64, what: String) -> crate::error::Error {
    ErrorKind::BadRange {
        prefix: prefix_hex(prefix),
        line,
        what,
    }
    .into()
}

/// The line at `pos` when it has the usual shape: the suffix, `:`, 1 to 19
/// digits, then `\r\n`, `\n` or the end. `None` for anything else, which
/// [`strict_line`] then takes (and names what is wrong). Returns the hash,
/// the count and where the next line starts; `prefix` is the range's
/// prefix as [`prefix_ascii`] gives it.
#[inline]
pub(super) fn quick_line(
    kind: Kind,
    prefix: u64,
    body: &[u8],
    pos: usize,
) -> Option<(Key, u64, usize)> {
    let suffix_len = kind.hex_len() - PREFIX_DIGITS;
    let line = body.get(pos..)?;
    if line.get(suffix_len) != Some(&b':') {
        return None;
    }
    let key = Key::from_range_hex(kind, prefix, &line[..suffix_len])?;
    // 19 digits never overflow 64 bits; longer counts go the strict way.
    let (count, next) = count_then_next(body, pos + suffix_len + 1, 19)?;
    Some((key, count, next))
}

/// The line at `pos`, checked strictly: exactly the suffix's hex digits,
/// `:`, a decimal count that fits in 64 bits, then CRLF, LF or the end.
pub(super) fn strict_line(
    kind: Kind,
    prefix: u64,
    body: &[u8],
    pos: usize,
) -> std::result::Result<(Key, u64, usize), String> {
    let suffix_len = kind.hex_len() - PREFIX_DIGITS;
    let rest = &body[pos..];
    let (line, next) = match rest.iter().position(|&b| b == b'\n') {
        Some(i) => (&rest[..i], pos + i + 1),
        None => (rest, body.len()),
    };
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.len() < suffix_len + 2 || line[suffix_len] != b':' {
        return Err(format!(
            "expected {suffix_len} hex digits, ':' and a count, got {:?}",
            String::from_utf8_lossy(&line[..line.len().min(64)])
        ));
    }
    let key = Key::from_range_hex(kind, prefix, &line[..suffix_len]).ok_or("suffix is not hex")?;
    let digits = &line[suffix_len + 1..];
    let count = parse_count(digits).ok_or_else(|| {
        format!(
            "count {:?} is not a number",
            String::from_utf8_lossy(digits)
        )
    })?;
    Ok((key, count, next))
}

/// A decimal count of 1 to 20 digits that fits in 64 bits.
pub(super) fn parse_count(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || digits.len() > 20 {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &d| {
        d.is_ascii_digit()
            .then(|| n.checked_mul(10)?.checked_add(u64::from(d - b'0')))?
    })
}
