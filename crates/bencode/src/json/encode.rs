//! JSON to bencode (the mapping is in the parent module).
//!
//! Two passes, neither recursive: the JSON text is first read into a flat
//! list of tokens (like the bencode decoder's), then written out as bencode
//! from an explicit work stack.

use crate::error::{Error, ErrorKind};
use crate::hex;
use crate::{Limits, Parser};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Object,
    Array,
    String,
    Number,
}

#[derive(Clone, Copy)]
struct Token {
    kind: Kind,
    /// Offset of the value's first byte (for a string, of its opening quote).
    offset: usize,
    /// A string's closing quote or a number's end; for an object or array,
    /// the index of the token after its last descendant.
    end: usize,
    /// An object's or array's direct children (an object's keys count).
    children: usize,
}

impl Token {
    /// Index of the token after this one and its descendants.
    fn next(&self, index: usize) -> usize {
        match self.kind {
            Kind::Object | Kind::Array => self.end,
            _ => index + 1,
        }
    }
}

fn fail(offset: usize, message: &'static str) -> Error {
    Error::new(ErrorKind::Json { message }, offset)
}

/// Build the bencode that a JSON text stands for, in the mapping
/// [`to_json`](super::to_json) prints, so that for any document `d`
/// `from_json(to_json(d)) == d` byte for byte. Errors carry the byte offset
/// in the JSON text.
///
/// ```
/// let bytes = seekless_bencode::from_json(br#"{"a": [1, {"$hex": "ff"}]}"#).unwrap();
/// assert_eq!(bytes, b"d1:ali1e1:\xffee");
/// ```
pub fn from_json(json: &[u8]) -> Result<Vec<u8>, Error> {
    if let Err(e) = std::str::from_utf8(json) {
        return Err(fail(e.valid_up_to(), "JSON text must be UTF-8"));
    }
    let tokens = read(json)?;
    Writer {
        json,
        tokens: &tokens,
        out: Vec::with_capacity(json.len()),
        scratch: Vec::new(),
    }
    .write()
}

fn skip_space(json: &[u8], mut pos: usize) -> usize {
    while pos < json.len() && matches!(json[pos], b' ' | b'\t' | b'\n' | b'\r') {
        pos += 1;
    }
    pos
}

/// Read the JSON text into tokens, checking its syntax.
fn read(json: &[u8]) -> Result<Vec<Token>, Error> {
    let mut tokens: Vec<Token> = Vec::new();
    // Open objects and arrays, as token indexes.
    let mut open: Vec<usize> = Vec::new();
    let mut pos = skip_space(json, 0);
    'value: loop {
        // A value starts at `pos`.
        if let Some(&parent) = open.last() {
            tokens[parent].children += 1;
        }
        let start = pos;
        let Some(&byte) = json.get(pos) else {
            return Err(fail(pos, "the JSON text ends where a value belongs"));
        };
        match byte {
            b'{' | b'[' => {
                let (kind, close) = if byte == b'{' {
                    (Kind::Object, b'}')
                } else {
                    (Kind::Array, b']')
                };
                tokens.push(Token {
                    kind,
                    offset: start,
                    end: 0,
                    children: 0,
                });
                let index = tokens.len() - 1;
                open.push(index);
                pos = skip_space(json, pos + 1);
                if json.get(pos) != Some(&close) {
                    if kind == Kind::Object {
                        pos = key(json, pos, &mut tokens, index)?;
                    }
                    continue 'value;
                }
                pos += 1;
                open.pop();
                tokens[index].end = tokens.len();
            }
            b'"' => {
                let end = string(json, pos)?;
                tokens.push(Token {
                    kind: Kind::String,
                    offset: start,
                    end,
                    children: 0,
                });
                pos = end + 1;
            }
            b'-' | b'0'..=b'9' => {
                pos = number(json, pos)?;
                tokens.push(Token {
                    kind: Kind::Number,
                    offset: start,
                    end: pos,
                    children: 0,
                });
            }
            b't' | b'f' | b'n' => {
                return Err(fail(pos, "true, false and null have no bencode form"));
            }
            _ => return Err(fail(pos, "expected a JSON value")),
        }
        // A value ended: go on in its parent, closing what ends here.
        loop {
            pos = skip_space(json, pos);
            let Some(&parent) = open.last() else {
                break 'value;
            };
            let object = tokens[parent].kind == Kind::Object;
            match json.get(pos) {
                Some(b',') => {
                    pos = skip_space(json, pos + 1);
                    if object {
                        pos = key(json, pos, &mut tokens, parent)?;
                    }
                    continue 'value;
                }
                Some(b'}') if object => {}
                Some(b']') if !object => {}
                _ if object => return Err(fail(pos, "expected ',' or '}'")),
                _ => return Err(fail(pos, "expected ',' or ']'")),
            }
            pos += 1;
            open.pop();
            tokens[parent].end = tokens.len();
        }
    }
    if pos != json.len() {
        return Err(fail(pos, "more after the JSON value"));
    }
    Ok(tokens)
}

/// Read an object member's key and its `:`; returns where the value starts.
fn key(json: &[u8], pos: usize, tokens: &mut Vec<Token>, object: usize) -> Result<usize, Error> {
    if json.get(pos) != Some(&b'"') {
        return Err(fail(pos, "expected a string as the object member's name"));
    }
    let end = string(json, pos)?;
    tokens.push(Token {
        kind: Kind::String,
        offset: pos,
        end,
        children: 0,
    });
    tokens[object].children += 1;
    let pos = skip_space(json, end + 1);
    if json.get(pos) != Some(&b':') {
        return Err(fail(pos, "expected ':'"));
    }
    Ok(skip_space(json, pos + 1))
}

/// Check a string starting at its opening quote; returns its closing quote.
fn string(json: &[u8], quote: usize) -> Result<usize, Error> {
    let mut pos = quote + 1;
    loop {
        match json.get(pos) {
            None => return Err(fail(pos, "unterminated string")),
            Some(b'"') => return Ok(pos),
            Some(b'\\') => {
                match json.get(pos + 1) {
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {}
                    Some(b'u') => {
                        let digits = json.get(pos + 2..pos + 6).unwrap_or_default();
                        if digits.len() < 4 || !digits.iter().all(u8::is_ascii_hexdigit) {
                            return Err(fail(pos, "\\u needs four hex digits"));
                        }
                        pos += 4;
                    }
                    _ => return Err(fail(pos, "unknown escape")),
                }
                pos += 2;
            }
            Some(&c) if c < 0x20 => {
                return Err(fail(pos, "control character in a string (escape it)"));
            }
            Some(_) => pos += 1,
        }
    }
}

/// Check an integer; returns where it ends.
fn number(json: &[u8], start: usize) -> Result<usize, Error> {
    let mut pos = start;
    if json[pos] == b'-' {
        pos += 1;
    }
    let digits = pos;
    while json.get(pos).is_some_and(u8::is_ascii_digit) {
        pos += 1;
    }
    if pos == digits {
        return Err(fail(pos, "expected a digit"));
    }
    if json[digits] == b'0' && pos - digits > 1 {
        return Err(fail(
            digits,
            "JSON numbers have no leading zeros (use {\"$int\": …})",
        ));
    }
    if matches!(json.get(pos), Some(b'.' | b'e' | b'E')) {
        return Err(fail(
            pos,
            "bencode has integers only: no fraction or exponent",
        ));
    }
    if pos - digits > 20 {
        return Err(fail(
            start,
            "more than 20 digits: no bencode decoder reads it",
        ));
    }
    Ok(pos)
}

/// The error for a one-member object whose key is `$` and no known tag.
const UNKNOWN_TAG: &str = "unknown tag: a one-member object whose key starts with '$' is a tag \
     ($int, $hex, $raw, $dict, $trailing); write such a dictionary as {\"$dict\": [[key, value]]}";

/// What is left to write.
enum Work {
    Value(usize),
    /// A dictionary key: a string, `{"$hex": …}` or a byte-string `{"$raw": …}`.
    Key(usize),
    End,
}

struct Writer<'a> {
    json: &'a [u8],
    tokens: &'a [Token],
    out: Vec<u8>,
    scratch: Vec<u8>,
}

impl Writer<'_> {
    fn write(mut self) -> Result<Vec<u8>, Error> {
        // The document's trailing bytes, written last.
        let mut trailing = Vec::new();
        let mut work = vec![Work::Value(0)];
        if let Some((tag, value)) = self.tag(0)?
            && tag == b"$trailing"
        {
            let [value, rest] = self.children::<2>(value, "$trailing takes [value, \"hex\"]")?;
            self.hex_string(rest, &mut trailing)?;
            work = vec![Work::Value(value)];
        }
        while let Some(item) = work.pop() {
            match item {
                Work::End => self.out.push(b'e'),
                Work::Key(i) => self.key(i)?,
                Work::Value(i) => self.value(i, &mut work)?,
            }
        }
        self.out.extend_from_slice(&trailing);
        Ok(self.out)
    }

    fn value(&mut self, i: usize, work: &mut Vec<Work>) -> Result<(), Error> {
        let t = self.tokens[i];
        match t.kind {
            Kind::String => {
                self.unescape(i)?;
                push_bytes(&mut self.out, &self.scratch);
            }
            Kind::Number => {
                let text = &self.json[t.offset..t.end];
                let text = if text == b"-0" { b"0" } else { text };
                self.out.push(b'i');
                self.out.extend_from_slice(text);
                self.out.push(b'e');
            }
            Kind::Array => {
                self.out.push(b'l');
                work.push(Work::End);
                let items: Vec<usize> = self.items(i).collect();
                work.extend(items.into_iter().rev().map(Work::Value));
            }
            Kind::Object => match self.tag(i)? {
                None => {
                    self.out.push(b'd');
                    work.push(Work::End);
                    let items: Vec<usize> = self.items(i).collect();
                    for pair in items.rchunks_exact(2) {
                        work.push(Work::Value(pair[1]));
                        work.push(Work::Key(pair[0]));
                    }
                }
                Some((tag, value)) => match &tag[..] {
                    b"$hex" => {
                        let mut bytes = Vec::new();
                        self.hex_string(value, &mut bytes)?;
                        push_bytes(&mut self.out, &bytes);
                    }
                    b"$int" => self.tagged_int(value)?,
                    b"$raw" => {
                        self.raw(value)?;
                    }
                    b"$dict" => {
                        self.expect(
                            value,
                            Kind::Array,
                            "$dict takes an array of [key, value] pairs",
                        )?;
                        self.out.push(b'd');
                        work.push(Work::End);
                        let pairs: Vec<usize> = self.items(value).collect();
                        for &pair in pairs.iter().rev() {
                            let [k, v] =
                                self.children::<2>(pair, "each $dict member is [key, value]")?;
                            work.push(Work::Value(v));
                            work.push(Work::Key(k));
                        }
                    }
                    b"$trailing" => {
                        return Err(fail(
                            t.offset,
                            "$trailing belongs only around the whole document",
                        ));
                    }
                    _ => {
                        return Err(fail(t.offset, UNKNOWN_TAG));
                    }
                },
            },
        }
        Ok(())
    }

    fn key(&mut self, i: usize) -> Result<(), Error> {
        let t = self.tokens[i];
        match (t.kind, self.tag(i)?) {
            (Kind::String, _) => {
                self.unescape(i)?;
                push_bytes(&mut self.out, &self.scratch);
            }
            (Kind::Object, Some((tag, value))) if tag == b"$hex" => {
                let mut bytes = Vec::new();
                self.hex_string(value, &mut bytes)?;
                push_bytes(&mut self.out, &bytes);
            }
            (Kind::Object, Some((tag, value))) if tag == b"$raw" => {
                if !self.raw(value)?.first().is_some_and(u8::is_ascii_digit) {
                    return Err(fail(t.offset, "a dictionary key must be a byte string"));
                }
            }
            _ => {
                return Err(fail(
                    t.offset,
                    "a dictionary key must be a string, {\"$hex\": …} or {\"$raw\": …}",
                ));
            }
        }
        Ok(())
    }

    /// The direct children of an object or array, as token indexes.
    fn items(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        let end = self.tokens[i].end;
        let first = (i + 1 < end).then_some(i + 1);
        std::iter::successors(first, move |&c| {
            Some(self.tokens[c].next(c)).filter(|&n| n < end)
        })
    }

    /// An array of exactly `N` items.
    fn children<const N: usize>(
        &self,
        i: usize,
        message: &'static str,
    ) -> Result<[usize; N], Error> {
        self.expect(i, Kind::Array, message)?;
        let mut out = [0; N];
        let mut items = self.items(i);
        for slot in &mut out {
            *slot = items.next().ok_or(fail(self.tokens[i].offset, message))?;
        }
        match items.next() {
            Some(_) => Err(fail(self.tokens[i].offset, message)),
            None => Ok(out),
        }
    }

    fn expect(&self, i: usize, kind: Kind, message: &'static str) -> Result<(), Error> {
        if self.tokens[i].kind == kind {
            Ok(())
        } else {
            Err(fail(self.tokens[i].offset, message))
        }
    }

    /// If the object at `i` is a tag (one member, its key starting with `$`):
    /// the key, and the value's token index.
    fn tag(&mut self, i: usize) -> Result<Option<(Vec<u8>, usize)>, Error> {
        let t = self.tokens[i];
        if t.kind != Kind::Object || t.children != 2 {
            return Ok(None);
        }
        self.unescape(i + 1)?;
        Ok(self
            .scratch
            .starts_with(b"$")
            .then(|| (self.scratch.clone(), i + 2)))
    }

    fn tagged_int(&mut self, i: usize) -> Result<(), Error> {
        const WHAT: &str = "$int takes a string: an optional '-' and 1 to 20 digits";
        self.expect(i, Kind::String, WHAT)?;
        self.unescape(i)?;
        let digits = self.scratch.strip_prefix(b"-").unwrap_or(&self.scratch);
        if digits.is_empty() || digits.len() > 20 || !digits.iter().all(u8::is_ascii_digit) {
            return Err(fail(self.tokens[i].offset, WHAT));
        }
        self.out.push(b'i');
        self.out.extend_from_slice(&self.scratch);
        self.out.push(b'e');
        Ok(())
    }

    /// Write a `$raw` value's bytes, which must be exactly one bencoded
    /// value; returns them.
    fn raw(&mut self, i: usize) -> Result<&[u8], Error> {
        let mut bytes = Vec::new();
        self.hex_string(i, &mut bytes)?;
        let mut parser = Parser::new().with_limits(Limits::large());
        let whole = parser
            .parse(&bytes)
            .is_ok_and(|root| root.raw().len() == bytes.len());
        if !whole {
            return Err(fail(
                self.tokens[i].offset,
                "$raw must hold exactly one bencoded value",
            ));
        }
        let start = self.out.len();
        self.out.extend_from_slice(&bytes);
        Ok(&self.out[start..])
    }

    /// Decode the hex string at `i` into `out`.
    fn hex_string(&mut self, i: usize, out: &mut Vec<u8>) -> Result<(), Error> {
        const WHAT: &str = "expected a string of hex digits";
        self.expect(i, Kind::String, WHAT)?;
        self.unescape(i)?;
        hex::decode_into(&self.scratch, out).map_err(|_| fail(self.tokens[i].offset, WHAT))
    }

    /// The string at token `i`, escapes resolved, into `self.scratch`.
    fn unescape(&mut self, i: usize) -> Result<(), Error> {
        let t = self.tokens[i];
        let text = &self.json[t.offset + 1..t.end];
        self.scratch.clear();
        let mut pos = 0;
        while let Some(skip) = text[pos..].iter().position(|&c| c == b'\\') {
            self.scratch.extend_from_slice(&text[pos..pos + skip]);
            pos += skip;
            let escaped = match text[pos + 1] {
                b'b' => 0x08,
                b'f' => 0x0c,
                b'n' => b'\n',
                b'r' => b'\r',
                b't' => b'\t',
                b'u' => {
                    let at = t.offset + 1 + pos;
                    let (c, len) = code_point(&text[pos..])
                        .ok_or(fail(at, "unpaired surrogate in \\u escape"))?;
                    let mut utf8 = [0; 4];
                    self.scratch
                        .extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
                    pos += len;
                    continue;
                }
                other => other,
            };
            self.scratch.push(escaped);
            pos += 2;
        }
        self.scratch.extend_from_slice(&text[pos..]);
        Ok(())
    }
}

/// The character of a `\uXXXX` escape (two for a surrogate pair) at the
/// start of `text`, and the escape's length.
fn code_point(text: &[u8]) -> Option<(char, usize)> {
    let unit = |at: usize| {
        let digits = std::str::from_utf8(text.get(at + 2..at + 6)?).ok()?;
        (text[at..].starts_with(b"\\u"))
            .then(|| u32::from_str_radix(digits, 16).ok())
            .flatten()
    };
    let first = unit(0)?;
    if (0xd800..0xdc00).contains(&first) {
        let second = unit(6).filter(|s| (0xdc00..0xe000).contains(s))?;
        let c = 0x10000 + ((first - 0xd800) << 10) + (second - 0xdc00);
        return Some((char::from_u32(c)?, 12));
    }
    Some((char::from_u32(first)?, 6))
}

fn push_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(bytes.len().to_string().as_bytes());
    out.push(b':');
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(json: &str) -> Vec<u8> {
        from_json(json.as_bytes()).unwrap_or_else(|e| panic!("{json}: {e}"))
    }

    fn error(json: &str) -> (usize, &'static str) {
        match from_json(json.as_bytes()) {
            Err(e) => match e.kind() {
                ErrorKind::Json { message } => (e.offset(), message),
                _ => panic!("{json}: {e}"),
            },
            Ok(bytes) => panic!("{json}: {bytes:?}"),
        }
    }

    #[test]
    fn plain_json() {
        assert_eq!(
            encode(r#"{"a": -12, "b": ["x\"y", 7, 0]}"#),
            b"d1:ai-12e1:bl3:x\"yi7ei0eee"
        );
        assert_eq!(encode(" [ ] "), b"le");
        assert_eq!(encode("{}"), b"de");
        assert_eq!(encode("-0"), b"i0e");
        assert_eq!(encode("12345678901234567890"), b"i12345678901234567890e");
        assert_eq!(encode(r#"{"b":1,"a":2}"#), b"d1:bi1e1:ai2ee");
        assert_eq!(encode(r#""\t\n\u0001\/\b\f""#), b"6:\t\n\x01/\x08\x0c");
        assert_eq!(encode(r#""\u00e9\ud83d\ude00""#), "6:é😀".as_bytes());
        assert_eq!(encode(r#"{"$hex":"x","a":1}"#), b"d4:$hex1:x1:ai1ee");
    }

    #[test]
    fn tags() {
        assert_eq!(encode(r#"{"$hex":"FF00"}"#), b"2:\xff\x00");
        assert_eq!(encode(r#"{"$int":"007"}"#), b"i007e");
        assert_eq!(encode(r#"{"$int":"-0"}"#), b"i-0e");
        assert_eq!(encode(r#"{"$raw":"30333a616263"}"#), b"03:abc");
        assert_eq!(encode(r#"{"$dict":[["a",1],["a",2]]}"#), b"d1:ai1e1:ai2ee");
        assert_eq!(encode(r#"{"$dict":[]}"#), b"de");
        assert_eq!(
            encode(r#"{"$dict":[[{"$hex":"fffe"},[{"x":1}]],[{"$raw":"30313a61"},""]]}"#),
            b"d2:\xff\xfeld1:xi1eee01:a0:e"
        );
        assert_eq!(encode(r#"{"$trailing":[1,"78797a"]}"#), b"i1exyz");
        assert_eq!(encode(r#"{"\u0024hex":"ff"}"#), b"1:\xff");
    }

    #[test]
    fn bad_json_is_an_error_at_its_offset() {
        assert_eq!(error(""), (0, "the JSON text ends where a value belongs"));
        assert_eq!(
            error("[1,"),
            (3, "the JSON text ends where a value belongs")
        );
        assert_eq!(error("[1 2]"), (3, "expected ',' or ']'"));
        assert_eq!(error(r#"{"a" 1}"#).0, 5);
        assert_eq!(error(r#"{"a":1,}"#).0, 7);
        assert_eq!(error(r#"{1:2}"#).0, 1);
        assert_eq!(error("[1]]").0, 3);
        assert_eq!(error("true").1, "true, false and null have no bencode form");
        assert_eq!(error("[null]").0, 1);
        assert_eq!(error("1.5").0, 1);
        assert_eq!(error("1e3").0, 1);
        assert_eq!(error("01").0, 0);
        assert_eq!(error("-").0, 1);
        assert_eq!(error("123456789012345678901").0, 0);
        assert_eq!(error(r#""abc"#).0, 4);
        assert_eq!(error(r#""\x""#).0, 1);
        assert_eq!(error(r#""\u12""#).0, 1);
        assert_eq!(error("\"a\nb\"").0, 2);
        assert_eq!(error(r#""\ud800""#).0, 1);
        assert_eq!(error(r#""\udc00x""#).0, 1);
        assert_eq!(from_json(b"\"\xff\"").unwrap_err().offset(), 1);
    }

    #[test]
    fn tags_that_do_not_fit_are_errors() {
        assert!(error(r#"{"$hex":"f"}"#).1.contains("hex"));
        assert!(error(r#"{"$hex":"zz"}"#).1.contains("hex"));
        assert!(error(r#"{"$hex":12}"#).1.contains("hex"));
        assert!(error(r#"{"$int":"1.5"}"#).1.contains("$int"));
        assert!(error(r#"{"$int":""}"#).1.contains("$int"));
        assert!(error(r#"{"$int":"-"}"#).1.contains("$int"));
        assert!(
            error(r#"{"$int":"123456789012345678901"}"#)
                .1
                .contains("$int")
        );
        assert!(error(r#"{"$raw":"6931"}"#).1.contains("$raw"));
        assert!(error(r#"{"$raw":"693165693265"}"#).1.contains("$raw"));
        assert!(error(r#"{"$dict":{"a":1}}"#).1.contains("$dict"));
        assert!(error(r#"{"$dict":[["a"]]}"#).1.contains("$dict"));
        assert!(error(r#"{"$dict":[["a",1,2]]}"#).1.contains("$dict"));
        assert!(error(r#"{"$dict":[[1,1]]}"#).1.contains("key"));
        assert!(
            error(r#"{"$dict":[[{"$raw":"6931ee"},1]]}"#)
                .1
                .contains("$raw")
        );
        assert!(
            error(r#"{"$dict":[[{"$raw":"693165"},1]]}"#)
                .1
                .contains("byte string")
        );
        assert!(error(r#"{"$dict":[[{"$int":"1"},1]]}"#).1.contains("key"));
        assert!(error(r#"[{"$trailing":[1,""]}]"#).1.contains("$trailing"));
        assert!(error(r#"{"$trailing":[1]}"#).1.contains("$trailing"));
        assert!(error(r#"{"$bytes":"ab"}"#).1.contains("unknown tag"));
    }

    #[test]
    fn deep_json_needs_no_recursion() {
        let depth = 200_000;
        let json = "[".repeat(depth) + &"]".repeat(depth);
        let out = encode(&json);
        assert_eq!(out.len(), 2 * depth);
        let json = r#"{"$dict":[["a","#.repeat(depth) + "1" + &"]]}".repeat(depth);
        assert_eq!(encode(&json).len(), 5 * depth + 3);
    }
}
