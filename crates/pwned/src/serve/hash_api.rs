//! Whole-hash lookups over HTTP, beside the range API, for trusted
//! callers (the caller sends the whole hash: no k-anonymity):
//!
//! - `GET /check/sha1/{40 hex}`, `GET /check/ntlm/{32 hex}`:
//!   `{"hash":"…","count":N}`, `count` 0 when the hash is not listed; the
//!   hash is given back in uppercase.
//! - `POST /check` with a JSON array of up to [`MAX_BATCH`] hex hashes
//!   (each SHA-1 or NTLM by its length, looked up in the index of its
//!   kind): `{"counts":[N,…]}` in the same order.
//!
//! Malformed input is answered `400` with `{"error":"…"}` saying what is
//! wrong and where; a body over [`MAX_BATCH_BYTES`] is `413`.

use std::fmt::Write as _;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::Response;

use crate::error::{ErrorKind, Result};
use crate::format::hash::{Key, Kind};
use crate::serve::state::RangeApi;

/// The most hashes `POST /check` takes at once.
pub const MAX_BATCH: usize = 10_000;

/// The largest `POST /check` body read: room for [`MAX_BATCH`] hashes
/// however they are spaced out (pretty-printed JSON, CRLF).
pub const MAX_BATCH_BYTES: usize = 4 << 20;

/// A whole-hash lookup refused: the status and what is wrong.
#[derive(Debug)]
pub(crate) struct Refused(StatusCode, String);

impl Refused {
    fn bad(what: impl Into<String>) -> Refused {
        Refused(StatusCode::BAD_REQUEST, what.into())
    }
}

impl RangeApi {
    /// The count of one whole hash in the index of `kind` served now (0
    /// when the hash is not listed). Fails when no index of that kind is
    /// served.
    pub fn count_hash(&self, kind: Kind, key: Key) -> Result<u64> {
        let served = self.get(kind).ok_or_else(|| not_served(kind))?;
        served.index().count(key)
    }

    /// The counts of `hexes` (each SHA-1 or NTLM by its length), in order,
    /// from the indexes served now: what `POST /check` answers. The first
    /// malformed hash, or one of a kind not served, fails the whole batch
    /// with [`ErrorKind::BadHash`] naming it.
    pub fn count_hashes<S: AsRef<str>>(&self, hexes: &[S]) -> Result<Vec<u64>> {
        let hexes: Vec<&[u8]> = hexes.iter().map(|h| h.as_ref().as_bytes()).collect();
        self.count_batch(&hexes).map_err(|Refused(_, what)| {
            ErrorKind::BadHash {
                text: what,
                what: "malformed, or of a kind not served",
            }
            .into()
        })
    }

    fn count_batch(&self, hexes: &[&[u8]]) -> std::result::Result<Vec<u64>, Refused> {
        if hexes.len() > MAX_BATCH {
            return Err(Refused::bad(format!(
                "{} hashes: at most {MAX_BATCH} at once",
                hexes.len()
            )));
        }
        let current = [self.get(Kind::Sha1), self.get(Kind::Ntlm)];
        // Keys by kind, each with its place in the answer, so that each
        // index is asked in one batch (its lookups overlapped).
        let mut keys: [Vec<Key>; 2] = [Vec::new(), Vec::new()];
        let mut places: [Vec<usize>; 2] = [Vec::new(), Vec::new()];
        for (i, hex) in hexes.iter().enumerate() {
            let (kind, key) = parse_hash(hex)
                .map_err(|what| Refused::bad(format!("hash {} of the array: {what}", i + 1)))?;
            let k = usize::from(kind == Kind::Ntlm);
            if current[k].is_none() {
                return Err(Refused::bad(format!(
                    "hash {} of the array: {}",
                    i + 1,
                    not_served_text(kind)
                )));
            }
            keys[k].push(key);
            places[k].push(i);
        }
        let mut counts = vec![0u64; hexes.len()];
        let mut found = Vec::new();
        for k in 0..2 {
            let Some(served) = &current[k] else { continue };
            found.clear();
            served
                .index()
                .count_many(&keys[k], &mut found)
                .map_err(|e| Refused(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
            for (&place, &count) in places[k].iter().zip(&found) {
                counts[place] = count;
            }
        }
        Ok(counts)
    }
}

fn not_served_text(kind: Kind) -> &'static str {
    match kind {
        Kind::Sha1 => "no SHA-1 index is served here",
        Kind::Ntlm => "no NTLM index is served here",
    }
}

fn not_served(kind: Kind) -> crate::Error {
    ErrorKind::BadHash {
        text: String::new(),
        what: not_served_text(kind),
    }
    .into()
}

/// A hash in hex, SHA-1 (40 digits) or NTLM (32), either case.
fn parse_hash(hex: &[u8]) -> std::result::Result<(Kind, Key), String> {
    let kind = Kind::from_hex_len(hex.len()).ok_or_else(|| {
        format!(
            "{} characters; a SHA-1 hash is 40 hex digits, an NTLM hash 32",
            hex.len()
        )
    })?;
    let key = parse_hex(kind, hex)?;
    Ok((kind, key))
}

/// `hex` as a hash of `kind`, or what is wrong with it.
fn parse_hex(kind: Kind, hex: &[u8]) -> std::result::Result<Key, String> {
    if let Some(key) = Key::from_hex(kind, hex) {
        return Ok(key);
    }
    if hex.len() != kind.hex_len() {
        return Err(format!(
            "{} characters; {} hash is {} hex digits",
            hex.len(),
            match kind {
                Kind::Sha1 => "a SHA-1",
                Kind::Ntlm => "an NTLM",
            },
            kind.hex_len()
        ));
    }
    let at = hex
        .iter()
        .position(|b| !b.is_ascii_hexdigit())
        .unwrap_or_default();
    let shown = String::from_utf8_lossy(&hex[at..])
        .chars()
        .next()
        .unwrap_or('?');
    Err(format!(
        "{shown:?} at character {} is not a hex digit",
        at + 1
    ))
}

/// A JSON answer: `body` is JSON text.
pub(crate) fn json(status: StatusCode, body: impl Into<Body>) -> Response {
    let mut response = Response::new(body.into());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// `{"error":"what"}` with `status`.
fn refused(Refused(status, what): Refused) -> Response {
    let mut body = String::with_capacity(what.len() + 16);
    body.push_str("{\"error\":");
    push_json_string(&mut body, &what);
    body.push('}');
    json(status, body)
}

/// `text` as a JSON string, quoted and escaped.
pub(crate) fn push_json_string(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `GET /check/{kind}/{hash}` (the two as they came, not yet checked).
pub(crate) fn check_one(api: &RangeApi, kind: &str, hex: &str, method: &Method) -> Response {
    if !matches!(*method, Method::GET | Method::HEAD) {
        let mut response = refused(Refused(
            StatusCode::METHOD_NOT_ALLOWED,
            "use GET /check/sha1/{40 hex}, or POST /check with a JSON array".into(),
        ));
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    let kind = match kind {
        k if k.eq_ignore_ascii_case("sha1") => Kind::Sha1,
        k if k.eq_ignore_ascii_case("ntlm") => Kind::Ntlm,
        other => {
            let shown: String = other.chars().take(32).collect();
            return refused(Refused::bad(format!(
                "unknown hash kind {shown:?}: use /check/sha1/{{40 hex}} or /check/ntlm/{{32 hex}}"
            )));
        }
    };
    let key = match parse_hex(kind, hex.as_bytes()) {
        Ok(key) => key,
        Err(what) => return refused(Refused::bad(what)),
    };
    let Some(served) = api.get(kind) else {
        return refused(Refused::bad(not_served_text(kind)));
    };
    match served.index().count(key) {
        Ok(count) => {
            // One allocation: the body, written in place.
            let mut body = Vec::with_capacity(72);
            body.extend_from_slice(b"{\"hash\":\"");
            key.write_hex(kind, &mut body);
            body.extend_from_slice(b"\",\"count\":");
            let _ = std::io::Write::write_fmt(&mut body, format_args!("{count}"));
            body.push(b'}');
            json(StatusCode::OK, body)
        }
        Err(e) => refused(Refused(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())),
    }
}

/// `POST /check`.
pub(crate) async fn check_batch(api: &RangeApi, request: Request) -> Response {
    if request.method() != Method::POST {
        let mut response = refused(Refused(
            StatusCode::METHOD_NOT_ALLOWED,
            "use POST with a JSON array of hex hashes, or GET /check/sha1/{40 hex}".into(),
        ));
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST"));
        return response;
    }
    let body = match axum::body::to_bytes(request.into_body(), MAX_BATCH_BYTES).await {
        Ok(body) => body,
        Err(_) => {
            return refused(Refused(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "the body is over {MAX_BATCH_BYTES} bytes: send at most {MAX_BATCH} hashes at once"
                ),
            ));
        }
    };
    let counts = match parse_array(&body).and_then(|hexes| api.count_batch(&hexes)) {
        Ok(counts) => counts,
        Err(e) => return refused(e),
    };
    let mut out = String::with_capacity(12 + counts.len() * 4);
    out.push_str("{\"counts\":[");
    for (i, count) in counts.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{count}");
    }
    out.push_str("]}");
    json(StatusCode::OK, out)
}

/// The strings of a JSON array of strings, borrowed from `body`: hex
/// hashes need no escapes, so a string holding one is refused. At most
/// [`MAX_BATCH`] are taken; one more is an error.
fn parse_array(body: &[u8]) -> std::result::Result<Vec<&[u8]>, Refused> {
    let mut at = 0;
    let skip_space = |at: &mut usize| {
        while body
            .get(*at)
            .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        {
            *at += 1;
        }
    };
    let expected = |what: &str, at: usize| {
        let found = match body.get(at) {
            None => "the end of the body".to_string(),
            Some(&b) if b.is_ascii_graphic() => format!("{:?}", b as char),
            Some(&b) => format!("byte 0x{b:02x}"),
        };
        Refused::bad(format!(
            "not a JSON array of hex strings: expected {what} at byte {at}, found {found}"
        ))
    };
    skip_space(&mut at);
    if body.get(at) != Some(&b'[') {
        return Err(expected("'['", at));
    }
    at += 1;
    let mut hexes = Vec::new();
    skip_space(&mut at);
    if body.get(at) == Some(&b']') {
        at += 1;
    } else {
        loop {
            skip_space(&mut at);
            if body.get(at) != Some(&b'"') {
                return Err(expected("a string", at));
            }
            let start = at + 1;
            let Some(len) = body[start..].iter().position(|&b| b == b'"' || b == b'\\') else {
                return Err(expected("'\"'", body.len()));
            };
            if body[start + len] == b'\\' {
                return Err(Refused::bad(format!(
                    "hash {} of the array: a hex hash has no escapes (byte {})",
                    hexes.len() + 1,
                    start + len
                )));
            }
            if hexes.len() == MAX_BATCH {
                return Err(Refused::bad(format!(
                    "more than {MAX_BATCH} hashes: send at most {MAX_BATCH} at once"
                )));
            }
            hexes.push(&body[start..start + len]);
            at = start + len + 1;
            skip_space(&mut at);
            match body.get(at) {
                Some(b',') => at += 1,
                Some(b']') => {
                    at += 1;
                    break;
                }
                _ => return Err(expected("',' or ']'", at)),
            }
        }
    }
    skip_space(&mut at);
    if at != body.len() {
        return Err(expected("the end of the body", at));
    }
    Ok(hexes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(body: &str) -> std::result::Result<Vec<String>, String> {
        parse_array(body.as_bytes())
            .map(|v| {
                v.iter()
                    .map(|h| String::from_utf8(h.to_vec()).unwrap())
                    .collect()
            })
            .map_err(|Refused(status, what)| {
                assert_eq!(status, StatusCode::BAD_REQUEST);
                what
            })
    }

    #[test]
    fn arrays_of_strings_are_read_where_they_lie() {
        assert_eq!(parsed("[]"), Ok(vec![]));
        assert_eq!(parsed(" [ ] \r\n"), Ok(vec![]));
        assert_eq!(parsed("[\"ab\"]"), Ok(vec!["ab".to_string()]));
        assert_eq!(
            parsed("[\n  \"ab\",\n  \"CD\"\n]\n"),
            Ok(vec!["ab".to_string(), "CD".to_string()])
        );
        for (body, what) in [
            ("", "expected '[' at byte 0, found the end of the body"),
            ("{}", "expected '[' at byte 0, found '{'"),
            ("[", "expected a string at byte 1"),
            ("[\"ab\"", "expected ',' or ']' at byte 5"),
            ("[\"ab\",]", "expected a string at byte 6, found ']'"),
            ("[\"ab\" \"cd\"]", "expected ',' or ']' at byte 6"),
            ("[1]", "expected a string at byte 1, found '1'"),
            ("[\"ab]", "expected '\"' at byte 5"),
            ("[\"a\\u0062\"]", "has no escapes"),
            ("[] []", "expected the end of the body at byte 3"),
            ("[\"ab\"]\0", "found byte 0x00"),
        ] {
            let error = parsed(body).unwrap_err();
            assert!(error.contains(what), "{body:?}: {error}");
        }
    }

    #[test]
    fn at_most_a_batch_of_hashes() {
        let hash = format!("\"{}\"", "A".repeat(40));
        let array = |n: usize| format!("[{}]", vec![hash.as_str(); n].join(","));
        assert_eq!(parsed(&array(MAX_BATCH)).unwrap().len(), MAX_BATCH);
        let error = parsed(&array(MAX_BATCH + 1)).unwrap_err();
        assert!(error.contains("more than 10000 hashes"), "{error}");
    }

    #[test]
    fn hashes_are_named_by_what_is_wrong() {
        let sha1 = "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8";
        assert_eq!(parse_hash(sha1.as_bytes()).unwrap().0, Kind::Sha1);
        let lower = sha1.to_ascii_lowercase();
        assert_eq!(
            parse_hash(lower.as_bytes()).unwrap(),
            parse_hash(sha1.as_bytes()).unwrap()
        );
        assert_eq!(parse_hash(&sha1.as_bytes()[..32]).unwrap().0, Kind::Ntlm);
        let error = parse_hash(&sha1.as_bytes()[..39]).unwrap_err();
        assert!(error.starts_with("39 characters"), "{error}");
        let error = parse_hex(Kind::Sha1, &sha1.as_bytes()[..32]).unwrap_err();
        assert!(error.contains("a SHA-1 hash is 40 hex digits"), "{error}");
        let bad = format!("{}G{}", &sha1[..9], &sha1[10..]);
        let error = parse_hash(bad.as_bytes()).unwrap_err();
        assert_eq!(error, "'G' at character 10 is not a hex digit");
        let error = parse_hash("é".repeat(16).as_bytes()).unwrap_err();
        assert_eq!(error, "'é' at character 1 is not a hex digit");
    }

    #[test]
    fn errors_are_json_strings() {
        let mut out = String::new();
        push_json_string(&mut out, "a \"b\" \\ \n\u{1}é");
        assert_eq!(out, r#""a \"b\" \\ \u000a\u0001é""#);
    }
}
