//! The decoder: one non-recursive pass from bytes to a flat token buffer.
//!
//! Default mode gives the same verdict and the same error offset as
//! libtorrent 2.0's `bdecode` on every input (it accepts unsorted and
//! duplicate keys, leading zeros, integers of up to 20 digits even when they
//! overflow `i64`, and ignores bytes after the top-level value). Strict mode
//! additionally rejects everything BEP 3 forbids, reporting the first problem
//! in input order.

use crate::error::{Error, ErrorKind};
use crate::node::Node;
use crate::token::{BYTES, DICT, END, INT, LIST, MAX_AUX, Token};

/// Decoder limits. The defaults are libtorrent's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Maximum nesting: as in libtorrent, a token found while this many lists
    /// or dictionaries are open fails with `depth_exceeded` (so at most
    /// `depth - 1` levels can be closed again). Default 100.
    pub depth: usize,
    /// Maximum number of tokens, counting one per value and one per `e` that
    /// closes a list or dictionary. Default 2,000,000.
    pub tokens: usize,
    /// Maximum input size in bytes. Default 2^29 - 1 (libtorrent's 29-bit
    /// offsets); at most 2^32 - 2 (our 32-bit offsets).
    pub input: usize,
    /// Maximum number of digits (leading zeros included) in a string's
    /// length prefix. Default 16, as in libtorrent 2.0.8, which keeps the
    /// prefix width in a few bits of its token.
    pub length_digits: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            depth: 100,
            tokens: 2_000_000,
            input: (1 << 29) - 1,
            length_digits: 16,
        }
    }
}

impl Limits {
    /// libtorrent's limits, but inputs up to 4 GiB (what our 32-bit offsets
    /// allow) rather than libtorrent's 512 MiB.
    pub fn large() -> Self {
        Limits {
            input: u32::MAX as usize - 1,
            ..Limits::default()
        }
    }
}

/// A reusable decoder: the token buffer and the stack are kept between
/// parses, so feeding it many messages does not allocate once warm.
#[derive(Debug, Clone, Default)]
pub struct Parser {
    tokens: Vec<Token>,
    stack: Vec<u32>,
    keys: Vec<(u32, u32)>,
    limits: Limits,
    strict: bool,
}

/// An owned decoding result: the token buffer plus the borrowed input.
#[derive(Debug, Clone)]
pub struct Document<'a> {
    input: &'a [u8],
    tokens: Vec<Token>,
}

impl<'a> Document<'a> {
    /// The top-level value.
    pub fn root(&self) -> Node<'_> {
        Node::new(self.input, &self.tokens, 0)
    }

    pub(crate) fn tokens(&self) -> &[Token] {
        &self.tokens
    }

    /// Number of tokens (values plus list/dictionary ends).
    pub fn token_count(&self) -> usize {
        self.tokens.len() - 1
    }
}

/// Decode `input` in default (libtorrent-compatible) mode with default limits.
pub fn decode(input: &[u8]) -> Result<Document<'_>, Error> {
    decode_owned(input, false, &Limits::default())
}

/// Decode `input` in strict (BEP 3) mode with default limits.
pub fn decode_strict(input: &[u8]) -> Result<Document<'_>, Error> {
    decode_owned(input, true, &Limits::default())
}

/// Decode `input` into fresh buffers, keeping only the tokens.
fn decode_owned<'a>(input: &'a [u8], strict: bool, limits: &Limits) -> Result<Document<'a>, Error> {
    let mut tokens = Vec::new();
    // Room for the nesting of most documents at once, rather than growing
    // from 4 in two steps.
    let mut stack = Vec::with_capacity(16);
    run(
        strict,
        input,
        &mut tokens,
        &mut stack,
        &mut Vec::new(),
        limits,
    )?;
    Ok(Document { input, tokens })
}

impl Parser {
    /// A default-mode parser with libtorrent's limits.
    pub fn new() -> Self {
        Parser::default()
    }

    /// Use these limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Reject what BEP 3 forbids (unsorted or duplicate keys, leading zeros,
    /// `-0`, trailing bytes).
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// The limits in force.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Decode `input`, reusing this parser's buffers, and return the
    /// top-level value.
    pub fn parse<'a>(&'a mut self, input: &'a [u8]) -> Result<Node<'a>, Error> {
        run(
            self.strict,
            input,
            &mut self.tokens,
            &mut self.stack,
            &mut self.keys,
            &self.limits,
        )?;
        Ok(Node::new(input, &self.tokens, 0))
    }

    /// Decode into an owned [`Document`] (allocates a fresh token buffer).
    pub fn parse_document<'a>(&self, input: &'a [u8]) -> Result<Document<'a>, Error> {
        decode_owned(input, self.strict, &self.limits)
    }
}

/// Where the parser is: what the next token must be.
const TOP: u8 = 0;
const IN_LIST: u8 = 1;
const DICT_KEY: u8 = 2;
const DICT_VALUE: u8 = 3;

/// Bit set in a stack entry when the open container is a dictionary.
const DICT_FLAG: u32 = 1 << 31;
/// No previous key yet in this dictionary (strict mode).
const NO_KEY: (u32, u32) = (u32::MAX, 0);

/// A decoding failure inside the hot loop: kept to two words so that results
/// stay in registers; turned into an [`Error`] once, at the end.
#[derive(Debug, Clone, Copy)]
enum Fail {
    ExpectedDigit,
    ExpectedColon,
    UnexpectedEof,
    ExpectedValue,
    DepthExceeded,
    LimitExceeded,
    Overflow,
    UnsortedKey,
    DuplicateKey,
    LeadingZero,
    NegativeZero,
    TrailingData,
}

impl Fail {
    #[cold]
    fn at(self, offset: usize) -> Error {
        match self {
            Fail::ExpectedDigit => Error::new(ErrorKind::ExpectedDigit, offset),
            Fail::ExpectedColon => Error::new(ErrorKind::ExpectedColon, offset),
            Fail::UnexpectedEof => Error::new(ErrorKind::UnexpectedEof, offset),
            Fail::ExpectedValue => Error::new(ErrorKind::ExpectedValue, offset),
            Fail::DepthExceeded => Error::new(ErrorKind::DepthExceeded, offset),
            Fail::LimitExceeded => Error::new(ErrorKind::LimitExceeded, offset),
            Fail::Overflow => Error::new(ErrorKind::Overflow, offset),
            Fail::UnsortedKey => Error::new(ErrorKind::UnsortedKey, offset),
            Fail::DuplicateKey => Error::new(ErrorKind::DuplicateKey, offset),
            Fail::LeadingZero => Error::new(ErrorKind::LeadingZero, offset),
            Fail::NegativeZero => Error::new(ErrorKind::NegativeZero, offset),
            Fail::TrailingData => Error::new(ErrorKind::TrailingData, offset),
        }
    }
}

#[inline(always)]
fn is_digit(c: u8) -> bool {
    c.wrapping_sub(b'0') < 10
}

#[inline(always)]
fn push(tokens: &mut Vec<Token>, token: Token) {
    tokens.push(token);
}

/// Bit 7 set in every byte of `word` that is not an ASCII digit, and maybe
/// in bytes after the first such one: exact up to and including the lowest
/// (first in input order) non-digit, which is all that callers look at.
#[inline(always)]
fn non_digits(word: u64) -> u64 {
    let x = word ^ 0x3030_3030_3030_3030;
    // Digits become 0..=9, which + 0x76 leaves below 0x80 with no carry;
    // anything else gets bit 7 (a carry out of a byte >= 0x8a, whose own
    // bit 7 is set anyway, only reaches later bytes).
    (x.wrapping_add(0x7676_7676_7676_7676) | x) & 0x8080_8080_8080_8080
}

/// The 8 bytes at `at` as a little-endian word, when the input has them.
#[inline(always)]
fn word_at(input: &[u8], at: usize) -> Option<u64> {
    let bytes = input.get(at..)?.first_chunk::<8>()?;
    Some(u64::from_le_bytes(*bytes))
}

/// [`scan_int`] for the common case, 1 to 7 digits and their `e` within 8
/// bytes: the offset of the `e`, or `None` for [`scan_int`] to decide.
#[inline(always)]
fn scan_int_fast(input: &[u8], start: usize) -> Option<usize> {
    let word = word_at(input, start)?;
    let stop = non_digits(word);
    let n = stop.trailing_zeros() / 8;
    // n == 8 (no stop byte in the word) shifts by 64: checked first.
    (n != 0 && n != 8 && (word >> (8 * n)) as u8 == b'e').then_some(start + n as usize)
}

/// [`scan_str_header`] for the common case, a prefix of one or two digits
/// (the one at `pos` known) and its `:`, in bounds: the payload's offset
/// and length, or `None` for [`scan_str_header`] to decide. Byte by byte
/// rather than eight at a time: the next token's offset depends on the
/// length, and a short chain of dependent instructions matters more here
/// than their number.
#[inline(always)]
fn scan_str_header_fast(input: &[u8], pos: usize, max_header: usize) -> Option<(usize, usize)> {
    let &[c, b1, b2] = input.get(pos..)?.first_chunk::<3>()?;
    let d0 = usize::from(c - b'0');
    let (start, value) = if b1 == b':' {
        (pos + 2, d0)
    } else if is_digit(b1) && b2 == b':' {
        (pos + 3, d0 * 10 + usize::from(b1 - b'0'))
    } else {
        return None;
    };
    (start - pos <= max_header && value <= input.len() - start).then_some((start, value))
}

/// Checks an integer body starting after `i`, libtorrent's way: returns the
/// offset of its closing `e`, or the error (offset where it was detected).
#[inline(always)]
fn scan_int(input: &[u8], start: usize) -> Result<usize, (Fail, usize)> {
    let len = input.len();
    let mut p = start;
    if p == len {
        return Err((Fail::UnexpectedEof, p));
    }
    if input[p] == b'-' {
        p += 1;
        if p == len {
            return Err((Fail::UnexpectedEof, p));
        }
    }
    let digits_start = p;
    let err = loop {
        if !is_digit(input[p]) {
            break (Fail::ExpectedDigit, p);
        }
        p += 1;
        if p == len {
            break (Fail::UnexpectedEof, p);
        }
        if input[p] == b'e' {
            if p - digits_start > 20 {
                return Err((Fail::Overflow, p));
            }
            return Ok(p);
        }
    };
    if p - digits_start > 20 {
        return Err((Fail::Overflow, p));
    }
    Err(err)
}

/// Checks a string's length prefix starting with the digit at `pos`,
/// libtorrent's way, and returns the offset of the payload and its length,
/// or the error (offset where it was detected). Part of the parse loop,
/// always inlined into it.
#[inline(always)]
fn scan_str_header(
    input: &[u8],
    pos: usize,
    max_header: usize,
) -> Result<(usize, usize), (Fail, usize)> {
    let len = input.len();
    let mut p = pos + 1;
    if p >= len {
        return Err((Fail::UnexpectedEof, p));
    }
    // Fast path: up to 18 digits cannot overflow, so no checks are needed
    // until then; longer prefixes take libtorrent's checked route to report
    // its exact overflow offset.
    let mut value = u64::from(input[pos] - b'0');
    while p < len && p - pos < 18 {
        let d = input[p].wrapping_sub(b'0');
        if d >= 10 {
            break;
        }
        value = value * 10 + u64::from(d);
        p += 1;
    }
    // Same overflow rule as libtorrent: the length must fit i64.
    while p < len && input[p] != b':' {
        let d = input[p];
        if !is_digit(d) {
            return Err((Fail::ExpectedDigit, p));
        }
        if value > (i64::MAX / 10) as u64 {
            return Err((Fail::Overflow, p));
        }
        value *= 10;
        let d = u64::from(d - b'0');
        if value > i64::MAX as u64 - d {
            return Err((Fail::Overflow, p));
        }
        value += d;
        p += 1;
    }
    if p == len {
        return Err((Fail::ExpectedColon, p));
    }
    if value > (len - p - 1) as u64 {
        return Err((Fail::UnexpectedEof, p));
    }
    p += 1;
    if p - pos > max_header {
        return Err((Fail::LimitExceeded, p));
    }
    Ok((p, value as usize))
}

/// Strict mode: the key whose payload is `input[start..start + len]` (its
/// prefix at `str_start`) must sort after the open dictionary's previous
/// key, which it then replaces.
#[inline(always)]
fn check_key_order(
    input: &[u8],
    keys: &mut [(u32, u32)],
    str_start: usize,
    start: usize,
    len: usize,
) -> Result<(), (Fail, usize)> {
    let prev = keys.last_mut().expect("open dictionary has a key slot");
    let key = &input[start..start + len];
    if prev.0 != u32::MAX {
        let (s, l) = (prev.0 as usize, prev.1 as usize);
        match input[s..s + l].cmp(key) {
            std::cmp::Ordering::Less => {}
            std::cmp::Ordering::Equal => return Err((Fail::DuplicateKey, str_start)),
            std::cmp::Ordering::Greater => return Err((Fail::UnsortedKey, str_start)),
        }
    }
    *prev = (start as u32, len as u32);
    Ok(())
}

/// Strict mode: an integer whose body runs from `start` to its `e` at `end`
/// has no leading zero and is not `-0`.
#[inline(always)]
fn check_int_form(input: &[u8], start: usize, end: usize) -> Result<(), (Fail, usize)> {
    let mut d = start;
    if input[d] == b'-' {
        if input[d + 1] == b'0' {
            return Err((Fail::NegativeZero, d));
        }
        d += 1;
    }
    if input[d] == b'0' && end - d > 1 {
        return Err((Fail::LeadingZero, d));
    }
    Ok(())
}

/// Closes the innermost open list or dictionary (stack entry `top`) at the
/// `e` at `pos`: its end token, the skip count in its opening token, and
/// the state the parent container is in now. Part of the parse loop,
/// always inlined into it.
#[inline(always)]
fn close<const STRICT: bool>(
    tokens: &mut Vec<Token>,
    stack: &mut Vec<u32>,
    keys: &mut Vec<(u32, u32)>,
    top: u32,
    pos: usize,
) -> Result<u8, (Fail, usize)> {
    push(tokens, Token::new(pos as u32, END, 0));
    let open = (top & !DICT_FLAG) as usize;
    let next = tokens.len() - open;
    if next > MAX_AUX as usize {
        return Err((Fail::LimitExceeded, pos));
    }
    tokens[open].info |= (next as u32) << crate::token::TYPE_BITS;
    stack.pop();
    if STRICT {
        keys.pop();
    }
    Ok(match stack.last() {
        None => TOP,
        Some(&parent) if parent & DICT_FLAG != 0 => DICT_KEY,
        Some(_) => IN_LIST,
    })
}

/// Picks the parse loop built for the mode, once per decode: the loop itself
/// is monomorphised so that default mode carries no strict checks.
fn run(
    strict: bool,
    input: &[u8],
    tokens: &mut Vec<Token>,
    stack: &mut Vec<u32>,
    keys: &mut Vec<(u32, u32)>,
    limits: &Limits,
) -> Result<(), Error> {
    let result = if strict {
        parse_tokens::<true, true>(input, tokens, stack, keys, limits)
    } else {
        parse_tokens::<false, true>(input, tokens, stack, keys, limits)
    };
    result.map_err(|(fail, at)| fail.at(at))
}

/// Tokens as `(offset, info)` pairs (the last one marks the end of the
/// top-level value), or the error.
#[doc(hidden)]
pub type RawTokens = Result<Vec<(u32, u32)>, Error>;

/// For tests and fuzzing: the tokens of the decoder, then those of its
/// reference, the same loop reading every string prefix and integer a byte
/// at a time (libtorrent's way, no shortcuts). They must be equal on every
/// input.
#[doc(hidden)]
pub fn fast_and_reference(input: &[u8], strict: bool, limits: &Limits) -> (RawTokens, RawTokens) {
    let pairs = |tokens: Vec<Token>| tokens.iter().map(|t| (t.offset, t.info)).collect();
    let (mut stack, mut keys) = (Vec::new(), Vec::new());
    let mut tokens = Vec::new();
    let fast =
        run(strict, input, &mut tokens, &mut stack, &mut keys, limits).map(|()| pairs(tokens));
    let mut tokens = Vec::new();
    let reference = if strict {
        parse_tokens::<true, false>(input, &mut tokens, &mut stack, &mut keys, limits)
    } else {
        parse_tokens::<false, false>(input, &mut tokens, &mut stack, &mut keys, limits)
    };
    let reference = reference
        .map_err(|(fail, at)| fail.at(at))
        .map(|()| pairs(tokens));
    (fast, reference)
}

/// The parse loop. `STRICT` adds the BEP 3 checks; the default-mode build
/// carries none of their cost. `FAST` takes shortcuts for the common string
/// prefixes and integers, each falling back to the byte-at-a-time scan,
/// which decides every case it does not take: the same tokens and errors
/// either way (`fast_and_reference`).
fn parse_tokens<const STRICT: bool, const FAST: bool>(
    input: &[u8],
    tokens: &mut Vec<Token>,
    stack: &mut Vec<u32>,
    keys: &mut Vec<(u32, u32)>,
    limits: &Limits,
) -> Result<(), (Fail, usize)> {
    tokens.clear();
    stack.clear();
    keys.clear();
    let len = input.len();
    if len > limits.input.min(u32::MAX as usize - 1) {
        return Err((Fail::LimitExceeded, 0));
    }
    if len == 0 {
        return Err((Fail::UnexpectedEof, 0));
    }
    if limits.depth == 0 {
        return Err((Fail::DepthExceeded, 0));
    }
    let max_tokens = limits.tokens;
    let max_header = limits.length_digits.min(20) + 1;
    if tokens.capacity() == 0 {
        // A first guess that a file list (the densest part of a torrent,
        // ~6 bytes a token) fits in without growing.
        tokens.reserve((len / 5 + 16).min(max_tokens.saturating_add(1)));
    }
    let mut pos = 0usize;
    let mut state = TOP;
    loop {
        if pos >= len {
            return Err((Fail::UnexpectedEof, pos));
        }
        if tokens.len() >= max_tokens {
            return Err((Fail::LimitExceeded, pos));
        }
        let c = input[pos];
        if is_digit(c) {
            let str_start = pos;
            let fast = if FAST {
                scan_str_header_fast(input, pos, max_header)
            } else {
                None
            };
            let (p, value) = match fast {
                Some(found) => found,
                None => scan_str_header(input, pos, max_header)?,
            };
            let header = p - str_start;
            if STRICT {
                if c == b'0' && header > 2 {
                    return Err((Fail::LeadingZero, str_start));
                }
                if state == DICT_KEY {
                    check_key_order(input, keys, str_start, p, value)?;
                }
            }
            push(tokens, Token::new(str_start as u32, BYTES, header as u32));
            pos = p + value;
        } else if state == DICT_KEY && c != b'e' {
            return Err((Fail::ExpectedDigit, pos));
        } else if c == b'i' {
            let fast = if FAST {
                scan_int_fast(input, pos + 1)
            } else {
                None
            };
            let e = match fast {
                Some(e) => e,
                None => scan_int(input, pos + 1)?,
            };
            if STRICT {
                check_int_form(input, pos + 1, e)?;
            }
            push(tokens, Token::new(pos as u32, INT, 0));
            pos = e + 1;
        } else if c == b'd' || c == b'l' {
            let index = tokens.len() as u32;
            if c == b'd' {
                push(tokens, Token::new(pos as u32, DICT, 0));
                stack.push(index | DICT_FLAG);
                state = DICT_KEY;
            } else {
                push(tokens, Token::new(pos as u32, LIST, 0));
                stack.push(index);
                state = IN_LIST;
            }
            if STRICT {
                keys.push(NO_KEY);
            }
            pos += 1;
            if stack.len() >= limits.depth {
                return Err(if pos >= len {
                    (Fail::UnexpectedEof, pos)
                } else {
                    (Fail::DepthExceeded, pos)
                });
            }
            continue;
        } else if c == b'e' {
            let Some(&top) = stack.last() else {
                return Err((Fail::UnexpectedEof, pos));
            };
            if state == DICT_VALUE {
                return Err((Fail::ExpectedValue, pos));
            }
            state = close::<STRICT>(tokens, stack, keys, top, pos)?;
            pos += 1;
            if state == TOP {
                break;
            }
            continue;
        } else {
            return Err((Fail::ExpectedValue, pos));
        }
        // A leaf value (string or integer) was added.
        state = match state {
            TOP => break,
            DICT_KEY => DICT_VALUE,
            DICT_VALUE => DICT_KEY,
            s => s,
        };
    }
    if STRICT && pos < len {
        return Err((Fail::TrailingData, pos));
    }
    push(tokens, Token::new(pos as u32, END, 0));
    Ok(())
}

#[cfg(test)]
mod tests;
