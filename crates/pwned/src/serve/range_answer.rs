//! `GET /range/{PREFIX}`: the prefix and mode parsed, the answer rendered
//! (or taken from the cache of recent bodies), compressed as negotiated,
//! and revalidated against its `ETag` and `Last-Modified`.

use std::sync::atomic::Ordering;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::error::{Error, Result};
use crate::format::hash::{Key, Kind};
use crate::range::pad::pad_range;
use crate::range::render::write_range_body;
use crate::range::validator::range_digest;
use crate::read::gzip_ranges::GzipRanges;
use crate::serve::http::*;
use crate::serve::metrics::Route;
use crate::serve::state::*;

/// `Cache-Control` of range answers (31 days, as the HIBP API sends).
pub(super) const CACHE_CONTROL: &str = "public, max-age=2678400";

/// Parses 5 hex digits, either case.
pub(super) fn parse_prefix(text: &str) -> Option<u32> {
    if text.len() != 5 {
        return None;
    }
    text.bytes().try_fold(0u32, |acc, b| {
        let digit = (b as char).to_digit(16)?;
        Some(acc << 4 | digit)
    })
}

/// The `mode` query parameter: SHA-1 unless `mode=ntlm`.
pub(super) fn parse_mode(query: Option<&str>) -> std::result::Result<Kind, String> {
    let mut kind = Kind::Sha1;
    for pair in query.unwrap_or("").split('&') {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        if name != "mode" {
            continue;
        }
        kind = if value.eq_ignore_ascii_case("ntlm") {
            Kind::Ntlm
        } else if value.eq_ignore_ascii_case("sha1") || value.is_empty() {
            Kind::Sha1
        } else {
            let shown: String = value.chars().take(32).collect();
            return Err(format!(
                "unknown mode {shown:?}: use mode=sha1 or mode=ntlm"
            ));
        };
    }
    Ok(kind)
}

pub(super) fn wants_padding(headers: &HeaderMap) -> bool {
    headers.get_all("add-padding").iter().any(|v| {
        v.to_str()
            .is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"))
    })
}

pub(super) async fn range(
    State(api): State<RangeApi>,
    params: axum::extract::RawPathParams,
    request: Request,
) -> Response {
    let start = Instant::now();
    let prefix = params.iter().next().map_or("", |(_, value)| value);
    let response = range_answer(
        &api,
        prefix,
        request.method(),
        request.uri(),
        request.headers(),
    );
    api.measured(Route::Range, start, response)
}

/// The answer to `method /range/{prefix}` (the prefix as it came, not yet
/// checked).
pub(super) fn range_answer(
    api: &RangeApi,
    prefix: &str,
    method: &Method,
    uri: &axum::http::Uri,
    headers: &HeaderMap,
) -> Response {
    match *method {
        Method::GET | Method::HEAD => {}
        Method::OPTIONS => return preflight(),
        _ => return method_not_allowed(),
    }
    let Some(prefix) = parse_prefix(prefix) else {
        return text(
            StatusCode::BAD_REQUEST,
            "the range prefix must be 5 hex digits: /range/5BAA6",
        );
    };
    let kind = match parse_mode(uri.query()) {
        Ok(kind) => kind,
        Err(message) => return text(StatusCode::BAD_REQUEST, &message),
    };
    let current = api.load();
    let served = match kind {
        Kind::Sha1 => current.sha1.as_ref(),
        Kind::Ntlm => current.ntlm.as_ref(),
    };
    let Some(served) = served else {
        let message = match kind {
            Kind::Sha1 => "no SHA-1 index is loaded on this server (try mode=ntlm)",
            Kind::Ntlm => "no NTLM index is loaded on this server (mode=ntlm)",
        };
        return text(StatusCode::NOT_FOUND, message);
    };
    let padding = wants_padding(headers);
    let damaged = |e: Error| {
        text(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("index damaged: {e}"),
        )
    };
    let answer = Answer {
        api,
        current: &current,
        served,
        kind,
        prefix,
    };
    PAIRS
        .with_borrow_mut(|pairs| {
            pairs.clear();
            answer.respond(headers, padding, pairs)
        })
        .unwrap_or_else(damaged)
}

thread_local! {
    /// The pairs of the range being answered: one buffer per worker
    /// thread, reused request after request.
    static PAIRS: std::cell::RefCell<Vec<(Key, u64)>> = const { std::cell::RefCell::new(Vec::new()) };
}

thread_local! {
    /// Body buffers given back once their answers were sent, for the next
    /// answers made on this thread (up to [`KEPT_BODIES`]).
    static BODIES: std::cell::RefCell<Vec<Vec<u8>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Body buffers a thread keeps, and the largest it keeps: a range's answer
/// is ~40 KB, and a connection has one in flight at a time.
pub(super) const KEPT_BODIES: usize = 256;
pub(super) const KEPT_BODY_BYTES: usize = 1 << 20;

/// An answer's body in a buffer that goes back to its thread's store
/// ([`BODIES`]) when the answer is dropped: no allocation and no free of
/// ~50 KB for each answer (perf: 2-3% of the server's time in malloc).
pub(super) struct Pooled(Vec<u8>);

impl Pooled {
    /// An empty buffer from the store, or a new one.
    pub(super) fn take() -> Vec<u8> {
        BODIES
            .try_with(|bodies| bodies.borrow_mut().pop())
            .ok()
            .flatten()
            .unwrap_or_default()
    }
}

impl AsRef<[u8]> for Pooled {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        let mut body = std::mem::take(&mut self.0);
        if body.capacity() > KEPT_BODY_BYTES {
            return;
        }
        body.clear();
        // Dropped as the thread ends, or on another thread: kept there.
        let _ = BODIES.try_with(|bodies| {
            let mut bodies = bodies.borrow_mut();
            if bodies.len() < KEPT_BODIES {
                bodies.push(body);
            }
        });
    }
}

impl Answer<'_> {
    /// The answer to a range request with `headers`; `pairs` is an empty
    /// buffer to decode the range into, at most once.
    pub(super) fn respond(
        &self,
        headers: &HeaderMap,
        padding: bool,
        pairs: &mut Vec<(Key, u64)>,
    ) -> Result<Response> {
        let served = self.served;
        let mut decoded = false;
        let etag = if padding {
            None
        } else {
            Some(self.validator(pairs, &mut decoded)?)
        };
        let fresh = etag
            .as_ref()
            .is_some_and(|etag| not_modified(headers, etag, served));
        let mut response = if fresh {
            StatusCode::NOT_MODIFIED.into_response()
        } else {
            let encoding = negotiate(headers);
            let body = self.body(padding, encoding, pairs, decoded)?;
            let mut response = Response::new(Body::from(body));
            let headers = response.headers_mut();
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
            headers.append(header::VARY, HeaderValue::from_static("accept-encoding"));
            if let Some(name) = encoding.name() {
                headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static(name));
            }
            response
        };
        let headers = response.headers_mut();
        headers.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static(CACHE_CONTROL),
        );
        headers.append(header::VARY, HeaderValue::from_static("Add-Padding"));
        if let Some(etag) = etag {
            headers.insert(header::ETAG, etag);
            if let Some(date) = &served.last_modified {
                headers.insert(header::LAST_MODIFIED, date.clone());
            }
        }
        Ok(response)
    }
}

/// One range answer being made.
pub(super) struct Answer<'a> {
    pub(super) api: &'a RangeApi,
    pub(super) current: &'a Generation,
    pub(super) served: &'a Served,
    pub(super) kind: Kind,
    pub(super) prefix: u32,
}

impl Answer<'_> {
    pub(super) fn cache_key(&self, encoding: Encoding) -> u32 {
        self.prefix | u32::from(self.kind == Kind::Ntlm) << 20 | (encoding as u32) << 21
    }

    /// Decodes the range into `pairs` unless `decoded` says it is there.
    pub(super) fn decode(&self, pairs: &mut Vec<(Key, u64)>, decoded: &mut bool) -> Result<()> {
        if !*decoded {
            self.served
                .index
                .range_into(u64::from(self.prefix), 20, pairs)?;
            *decoded = true;
        }
        Ok(())
    }

    /// The range's strong validator: kept with the index once computed,
    /// else computed from its pairs (decoded into `pairs`).
    pub(super) fn validator(
        &self,
        pairs: &mut Vec<(Key, u64)>,
        decoded: &mut bool,
    ) -> Result<HeaderValue> {
        let tags = self.served.validators.get_or_init(Validators::new);
        let tag = match tags.get(self.prefix) {
            Some(tag) => tag,
            None => {
                self.decode(pairs, decoded)?;
                let tag = range_digest(self.kind, pairs);
                tags.set(self.prefix, tag);
                tag
            }
        };
        let quoted = crate::range::validator::quoted_etag(tag);
        Ok(HeaderValue::from_bytes(&quoted).expect("hex in quotes is a valid header value"))
    }

    /// The body in `encoding`: from the cache when there, else rendered from
    /// the pairs (and compressed, and kept, when a cache is on). Padded
    /// answers are fresh every time and never kept.
    pub(super) fn body(
        &self,
        padding: bool,
        encoding: Encoding,
        pairs: &mut Vec<(Key, u64)>,
        mut decoded: bool,
    ) -> Result<Bytes> {
        // Bodies not kept in a cache are written into a buffer of this
        // thread's, which goes back to it when the answer has been sent.
        let mut render = |pooled: bool| -> Result<Bytes> {
            let mut body = if pooled { Pooled::take() } else { Vec::new() };
            if padding {
                self.decode(pairs, &mut decoded)?;
                let seed =
                    (self.api.shared.seed).fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed);
                let padded = pad_range(pairs, self.kind, self.prefix, seed);
                write_range_body(self.kind, &padded, &mut body);
            } else if decoded {
                write_range_body(self.kind, pairs, &mut body);
            } else {
                // Lines written as the range is decoded, no pairs between.
                self.served.index.write_range(self.prefix, &mut body)?;
            }
            Ok(if pooled {
                Bytes::from_owner(Pooled(body))
            } else {
                Bytes::from(body)
            })
        };
        if encoding == Encoding::Gzip
            && !padding
            && let Some(member) = self.kept_gzip()
        {
            return Ok(member);
        }
        let Some(cache) = self.current.cache.as_ref().filter(|_| !padding) else {
            let plain = render(true)?;
            return Ok(match encoding {
                Encoding::Identity => plain,
                _ => Bytes::from(compress(&plain, encoding, Effort::Fresh)),
            });
        };
        if let Some(body) = cache.get(self.cache_key(encoding)) {
            return Ok(body);
        }
        let plain = match cache.get(self.cache_key(Encoding::Identity)) {
            Some(body) => body,
            None => {
                let body = render(false)?;
                cache.insert(self.cache_key(Encoding::Identity), body.clone());
                body
            }
        };
        if encoding == Encoding::Identity {
            return Ok(plain);
        }
        let packed = Bytes::from(compress(&plain, encoding, Effort::Kept));
        cache.insert(self.cache_key(encoding), packed.clone());
        Ok(packed)
    }
}

impl Answer<'_> {
    /// The range's gzip member from the index's gzip ranges file, a slice
    /// of its mapping (no copy), when one is attached; a damaged member
    /// stops the file's use for good (recorded in the [`Served`]).
    fn kept_gzip(&self) -> Option<Bytes> {
        let ranges = self.served.gzip_ranges.get()?;
        if self.served.gzip_damage.get().is_some() {
            return None;
        }
        match ranges.member_span(self.prefix) {
            Ok(span) => Some(Bytes::from_owner(Member {
                ranges: ranges.clone(),
                span,
            })),
            Err(e) => {
                let _ = self.served.gzip_damage.set(e.to_string());
                None
            }
        }
    }
}

/// A gzip member, held in the mapping of its file.
struct Member {
    ranges: std::sync::Arc<GzipRanges>,
    span: std::ops::Range<usize>,
}

impl AsRef<[u8]> for Member {
    fn as_ref(&self) -> &[u8] {
        &self.ranges.bytes()[self.span.clone()]
    }
}

/// A content coding of range answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Encoding {
    Identity = 0,
    Gzip = 1,
    Br = 2,
}

impl Encoding {
    pub(super) fn name(self) -> Option<&'static str> {
        match self {
            Encoding::Identity => None,
            Encoding::Gzip => Some("gzip"),
            Encoding::Br => Some("br"),
        }
    }
}

/// The coding to answer in, from `Accept-Encoding`: the one with the
/// highest `q` (1 when not given), brotli on a tie, none when neither is
/// acceptable (`q=0` refuses a coding), as the compression layer chooses.
pub(super) fn negotiate(headers: &HeaderMap) -> Encoding {
    // Thousandths, as q-values have at most three decimals.
    let (mut br, mut gzip) = (0u16, 0u16);
    for value in headers.get_all(header::ACCEPT_ENCODING) {
        let Ok(value) = value.to_str() else { continue };
        for item in value.split(',') {
            let mut parts = item.split(';');
            let name = parts.next().unwrap_or("").trim();
            let q = parts
                .find_map(|p| p.trim().strip_prefix("q="))
                .map_or(1000, |q| {
                    q.trim()
                        .parse::<f32>()
                        .map_or(0, |q| (q.clamp(0.0, 1.0) * 1000.0).round() as u16)
                });
            if name.eq_ignore_ascii_case("br") {
                br = br.max(q);
            } else if name.eq_ignore_ascii_case("gzip") || name.eq_ignore_ascii_case("x-gzip") {
                gzip = gzip.max(q);
            }
        }
    }
    if br > 0 && br >= gzip {
        Encoding::Br
    } else if gzip > 0 {
        Encoding::Gzip
    } else {
        Encoding::Identity
    }
}

/// How hard to compress: a body compressed for one answer is compressed
/// fast, one kept in the cache harder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Effort {
    Fresh,
    Kept,
}

/// Compresses a range body: literals under a prefix code fitted to the
/// body (`literals`). Random hex leaves a match search nothing to find, so
/// this packs a range as small as libdeflate's level 1 (53.2% against 54.5%
/// of a 1,000-line range) and smaller than brotli's quality 5 (52.9%
/// against 54.0%), several times as fast. Only gzip kept in the cache is
/// compressed harder, by libdeflate's level 6 (52.2%: paid once a range).
pub(super) fn compress(body: &[u8], encoding: Encoding, effort: Effort) -> Vec<u8> {
    match (encoding, effort) {
        (Encoding::Identity, _) => body.to_vec(),
        (Encoding::Gzip, Effort::Fresh) => crate::serve::huffman_only::gzip(body),
        (Encoding::Gzip, Effort::Kept) => crate::range::gzip::gzip(body, 6),
        (Encoding::Br, _) => crate::serve::huffman_only::brotli(body),
    }
}

/// Whether the client's cached copy is still good (`If-None-Match` wins
/// over `If-Modified-Since`, which must repeat our `Last-Modified`).
pub(super) fn not_modified(headers: &HeaderMap, etag: &HeaderValue, served: &Served) -> bool {
    let ours = etag.as_bytes();
    let ours = ours.strip_prefix(b"W/").unwrap_or(ours);
    let mut tags = headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .flat_map(|v| v.as_bytes().split(|&b| b == b','))
        .map(<[u8]>::trim_ascii)
        .peekable();
    if tags.peek().is_some() {
        return tags.any(|t| t == b"*" || t.strip_prefix(b"W/").unwrap_or(t) == ours);
    }
    match (
        &served.last_modified,
        headers.get(header::IF_MODIFIED_SINCE),
    ) {
        (Some(ours), Some(theirs)) => ours == theirs,
        _ => false,
    }
}
