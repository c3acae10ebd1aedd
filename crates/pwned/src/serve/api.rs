//! The Have I Been Pwned range API over HTTP (`GET /range/{5 hex}`), as an
//! [axum] [`Router`] an application mounts under any path, answering from
//! indexes shared by every request.
//!
//! ```no_run
//! use seekless_pwned::{Index, RangeApi, Served};
//!
//! let api = RangeApi::new();
//! api.put(Served::new(Index::open("pwned.idx")?, "pwned.idx")?);
//! // Mounted under /pwned: GET /pwned/range/5BAA6 answers.
//! let app: axum::Router = axum::Router::new().nest("/pwned", api.router());
//! # Ok::<(), seekless_pwned::Error>(())
//! ```
//!
//! Behaviour, as api.pwnedpasswords.com:
//! - `GET /range/5BAA6` (either case): `200 text/plain`, one `SUFFIX:COUNT`
//!   line per hash whose hex starts with the prefix (35 hex digits of SHA-1,
//!   27 of NTLM, uppercase), sorted, CRLF-separated, no trailing newline; an
//!   empty range is an empty body. `?mode=ntlm` answers from the NTLM index.
//! - `Add-Padding: true`: random `SUFFIX:0` lines are mixed in
//!   ([`pad_range`]), fresh for every answer.
//! - 400 for a malformed prefix or mode, 404 for other paths, 405 for other
//!   methods; `OPTIONS` answers CORS preflight; every answer carries
//!   `Access-Control-Allow-Origin: *`.
//! - gzip or brotli when `Accept-Encoding` asks; a strong `ETag` per range
//!   computed from the range's content alone ([`range_etag`](crate::range::validator::range_etag): the same across
//!   restarts and across indexes holding the same range, so `update`
//!   refreshes incrementally from a mirror and mirrors chain) and a
//!   `Last-Modified` from [`Served::last_modified`], with `304 Not Modified`
//!   on revalidation; `Cache-Control: public`.
//! - `GET /health`: each index's kind, hashes, state and when it was last
//!   brought up to date, and its age; 200 once every served index has
//!   been verified ([`Served::verify`]), 503 while one is not yet, is
//!   damaged, or is older than [`RangeApi::set_max_age`] allows.
//! - [`RangeApi::check_api`]: whole-hash lookups for trusted callers
//!   (`GET /check/sha1/{40 hex}`, `POST /check`; see `hash_api`).
//! - [`RangeApi::metrics`]: `GET /metrics` in the Prometheus text format.
//! - [`RangeApi::page`]: `GET /` is a page where a person checks a password:
//!   the browser hashes it (SHA-1 by WebCrypto, or by the page's own script
//!   where WebCrypto is not offered, as over plain HTTP by a name other than
//!   localhost; MD4 for NTLM when only an NTLM index is served), asks for
//!   its range with padding and looks for the rest of the hash itself; the password and its hash never leave the
//!   browser. One self-contained file under a strict Content-Security-Policy
//!   (its script and style allowed by their hashes, nothing external).
//!
//! [`RangeApi::put`] swaps an index for a new one of its kind while
//! requests go on: a request holds the indexes it started with to its end.

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant, SystemTime};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::error::{Error, ErrorKind, Result};
use crate::format::hash::{Key, Kind};
use crate::format::source::RANGES;
use crate::range::pad::pad_range;
use crate::range::render::write_range_body;
use crate::range::validator::range_digest;
use crate::read::index::Index;
use crate::serve::date::http_date;
use crate::serve::metrics::{Connection, IndexGauges, Metrics, Reload, Route};

/// `Cache-Control` of range answers (31 days, as the HIBP API sends).
const CACHE_CONTROL: &str = "public, max-age=2678400";

/// Verification state of a served index.
pub(crate) const VERIFYING: u8 = 0;
pub(crate) const VERIFIED: u8 = 1;
pub(crate) const DAMAGED: u8 = 2;

/// An index as the range API serves it: with the name `/health` reports,
/// the time answers give as `Last-Modified`, and whether it was verified.
#[derive(Debug)]
pub struct Served {
    index: Index,
    name: String,
    last_modified: Option<HeaderValue>,
    /// When the hashes were last brought up to date: the last `update`
    /// (from the source section), else the file's time.
    updated: Option<SystemTime>,
    pub(crate) status: AtomicU8,
    pub(crate) damage: OnceLock<String>,
    /// Each range's validator, computed on first use.
    validators: OnceLock<Validators>,
}

/// The validators of an index's ranges, kept once computed: 16 bytes a
/// range (16 MiB for the 2^20 ranges), so a range's pairs are hashed once
/// in the index's life, not once a request.
#[derive(Debug)]
struct Validators(Box<[AtomicU64]>);

impl Validators {
    fn new() -> Validators {
        Validators((0..2 * RANGES).map(|_| AtomicU64::new(0)).collect())
    }

    fn get(&self, prefix: u32) -> Option<[u8; 16]> {
        let i = 2 * prefix as usize;
        // The low word is stored last: once it is seen, the high one is.
        let low = self.0[i + 1].load(Ordering::Acquire);
        let high = self.0[i].load(Ordering::Relaxed);
        (low != 0).then(|| {
            let mut tag = [0u8; 16];
            tag[..8].copy_from_slice(&high.to_be_bytes());
            tag[8..].copy_from_slice(&low.to_be_bytes());
            tag
        })
    }

    /// Keeps `tag` (one whose low half is zero is not kept: zero means
    /// not computed). Threads that race store the same value.
    fn set(&self, prefix: u32, tag: [u8; 16]) {
        let i = 2 * prefix as usize;
        let high = u64::from_be_bytes(tag[..8].try_into().expect("8 bytes"));
        let low = u64::from_be_bytes(tag[8..].try_into().expect("8 bytes"));
        self.0[i].store(high, Ordering::Relaxed);
        self.0[i + 1].store(low, Ordering::Release);
    }
}

impl Served {
    /// `index`, named `name` (its path, say) in `/health`. A compact index
    /// (`prepare --key-bits`) is refused: it cannot list a range.
    pub fn new(index: Index, name: impl Into<String>) -> Result<Served> {
        let stats = index.stats();
        if stats.is_compact() {
            return Err(ErrorKind::Compact {
                key_bits: stats.key_bits,
            }
            .into());
        }
        // An index `update` made says when it last did; its section is
        // checked in full by `verify`.
        let updated = index
            .source()
            .ok()
            .flatten()
            .filter(|source| source.updated > 0)
            .map(|source| std::time::UNIX_EPOCH + Duration::from_secs(source.updated));
        Ok(Served {
            index,
            name: name.into(),
            last_modified: None,
            updated,
            status: AtomicU8::new(VERIFYING),
            damage: OnceLock::new(),
            validators: OnceLock::new(),
        })
    }

    /// Answers carry `time` as their `Last-Modified` (the index file's
    /// modification time, say), and `If-Modified-Since` repeating it is
    /// answered `304`. For an index not made by `update` (one `prepare`
    /// built), it is also when the hashes were brought up to date, which
    /// `/health` and `/metrics` count its age from.
    #[must_use]
    pub fn last_modified(mut self, time: SystemTime) -> Served {
        self.last_modified = HeaderValue::from_str(&http_date(time)).ok();
        self.updated = self.updated.or(Some(time));
        self
    }

    /// When the hashes were last brought up to date: the time of the last
    /// `update` recorded in the index, else the time given to
    /// [`Served::last_modified`]; `None` when neither is known.
    pub fn updated(&self) -> Option<SystemTime> {
        self.updated
    }

    /// Checks every page of the index ([`Index::verify`]) and records the
    /// outcome for `/health`.
    pub fn verify(&self) -> Result<()> {
        let result = self.index.verify();
        match &result {
            Ok(()) => self.status.store(VERIFIED, Ordering::Release),
            Err(e) => {
                let _ = self.damage.set(format!("{}: {e}", self.name));
                self.status.store(DAMAGED, Ordering::Release);
            }
        }
        result
    }

    /// The index.
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// The name given to [`Served::new`].
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// The range API: the indexes it answers from (one of each kind) and how.
/// Cloning is cheap and every clone serves the same indexes.
#[derive(Debug, Clone)]
pub struct RangeApi {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    current: RwLock<Arc<Generation>>,
    cache_bytes: usize,
    seed: AtomicU64,
    /// The age past which `/health` calls an index stale, in seconds (0:
    /// none).
    max_age: AtomicU64,
    metrics: Arc<Metrics>,
}

/// The indexes answering requests now, with what is cached of them.
#[derive(Debug)]
pub(crate) struct Generation {
    pub(crate) sha1: Option<Arc<Served>>,
    pub(crate) ntlm: Option<Arc<Served>>,
    cache: Option<Cache>,
}

impl Default for RangeApi {
    fn default() -> Self {
        RangeApi::new()
    }
}

impl RangeApi {
    /// An API serving no index yet (every range answers 404 until
    /// [`RangeApi::put`]), with no response cache.
    pub fn new() -> RangeApi {
        RangeApi::with_cache(0)
    }

    /// An API that keeps up to `bytes` of recently served range bodies in
    /// memory (0: none). It helps when traffic favours some ranges, as real
    /// traffic does; padded answers are never kept.
    pub fn with_cache(bytes: usize) -> RangeApi {
        let seed = std::collections::hash_map::RandomState::new();
        let seed = std::hash::BuildHasher::hash_one(&seed, SystemTime::now());
        RangeApi {
            shared: Arc::new(Shared {
                current: RwLock::new(Arc::new(Generation {
                    sha1: None,
                    ntlm: None,
                    cache: None,
                })),
                cache_bytes: bytes,
                seed: AtomicU64::new(seed),
                max_age: AtomicU64::new(0),
                metrics: Arc::default(),
            }),
        }
    }

    pub(crate) fn load(&self) -> Arc<Generation> {
        Arc::clone(
            &self
                .shared
                .current
                .read()
                .unwrap_or_else(|e| e.into_inner()),
        )
    }

    /// Serves `served` for its kind from now on, in place of the index of
    /// that kind served before (returned); requests already started finish
    /// on the one they began with.
    pub fn put(&self, served: Served) -> Option<Arc<Served>> {
        let mut current = self
            .shared
            .current
            .write()
            .unwrap_or_else(|e| e.into_inner());
        let (mut sha1, mut ntlm) = (current.sha1.clone(), current.ntlm.clone());
        let slot = match served.index.kind() {
            Kind::Sha1 => &mut sha1,
            Kind::Ntlm => &mut ntlm,
        };
        let old = slot.replace(Arc::new(served));
        let cache_bytes = self.shared.cache_bytes;
        *current = Arc::new(Generation {
            sha1,
            ntlm,
            cache: (cache_bytes > 0).then(|| Cache::new(cache_bytes)),
        });
        old
    }

    /// The index of `kind` served now.
    pub fn get(&self, kind: Kind) -> Option<Arc<Served>> {
        let current = self.load();
        match kind {
            Kind::Sha1 => current.sha1.clone(),
            Kind::Ntlm => current.ntlm.clone(),
        }
    }

    /// The check page at `/`, for the indexes served at the time of each
    /// request; merge it into [`RangeApi::router`]'s router
    /// (`api.router().merge(api.page())`) to offer it beside the API.
    pub fn page(&self) -> Router {
        Router::new()
            .route("/", axum::routing::any(page))
            .with_state(self.clone())
    }

    /// The HTTP service: `/range/{prefix}` and `/health`, every other path
    /// 404, CORS on every answer. Mount it under any path
    /// (`Router::nest`) or serve it as it is.
    pub fn router(&self) -> Router {
        Router::new()
            .route("/range/{prefix}", axum::routing::any(range))
            .route("/health", axum::routing::any(crate::serve::health::health))
            .fallback(fallback)
            .with_state(self.clone())
            .layer(axum::middleware::map_response(cors))
    }

    /// Whole-hash lookups for trusted callers, to merge into
    /// [`RangeApi::router`]'s router (`api.router().merge(api.check_api())`):
    /// `GET /check/sha1/{40 hex}`, `GET /check/ntlm/{32 hex}` and
    /// `POST /check` (a JSON array of hex hashes). These receive whole
    /// hashes (no k-anonymity, no CORS): offer them only to callers
    /// trusted with the passwords' hashes.
    pub fn check_api(&self) -> Router {
        Router::new()
            .route("/check/{kind}/{hash}", axum::routing::any(check_one))
            .route("/check", axum::routing::any(check_batch))
            .with_state(self.clone())
    }

    /// `GET /metrics` in the Prometheus text format, to merge into
    /// [`RangeApi::router`]'s router: requests by route and status, a
    /// latency histogram, bytes sent, connections (as counted by
    /// [`RangeApi::connection`]), reloads ([`RangeApi::reloaded`]), and
    /// each index's hashes and age.
    pub fn metrics(&self) -> Router {
        Router::new()
            .route("/metrics", axum::routing::any(metrics))
            .with_state(self.clone())
    }

    /// The metrics as `GET /metrics` answers them.
    pub fn render_metrics(&self) -> String {
        let current = self.load();
        let indexes: Vec<IndexGauges> = [&current.sha1, &current.ntlm]
            .into_iter()
            .flatten()
            .map(|served| IndexGauges {
                kind: served.index.kind(),
                name: served.name.clone(),
                hashes: served.index.len(),
                updated: served.updated,
            })
            .collect();
        crate::serve::metrics::render(&self.shared.metrics, &indexes, SystemTime::now())
    }

    /// Counts a connection as open in `/metrics` until the guard is
    /// dropped.
    pub fn connection(&self) -> Connection {
        Connection::open(&self.shared.metrics)
    }

    /// Counts a TLS handshake that failed, in `/metrics`.
    pub fn tls_handshake_failed(&self) {
        self.shared.metrics.tls_failed();
    }

    /// Counts a reload of `what` in `/metrics`: done (`ok`), or refused
    /// with the old one kept.
    pub fn reloaded(&self, what: Reload, ok: bool) {
        self.shared.metrics.reloaded(what, ok);
    }

    /// `/health` answers 503 while an index is older than `age` (counted
    /// from [`Served::updated`]); `None`: however old.
    pub fn set_max_age(&self, age: Option<Duration>) {
        let secs = age.map_or(0, |a| a.as_secs().max(1));
        self.shared.max_age.store(secs, Ordering::Relaxed);
    }

    /// The age set by [`RangeApi::set_max_age`].
    pub fn max_age(&self) -> Option<Duration> {
        let secs = self.shared.max_age.load(Ordering::Relaxed);
        (secs > 0).then(|| Duration::from_secs(secs))
    }

    /// The answer to a `GET` or `HEAD` of `/range/{prefix}` or, with
    /// `check_api`, of `/check/{kind}/{hash}`, made without the Router's
    /// dispatch (no route matching, no boxed services): the same answer
    /// [`RangeApi::router`] (merged with [`RangeApi::check_api`]) gives,
    /// counted the same in the metrics. For a server that serves the API
    /// at its root and wants the cheapest path for the requests that make
    /// nearly all of its traffic; `None` for any other request, which the
    /// Router answers.
    pub fn answer_directly<B>(
        &self,
        request: &axum::http::Request<B>,
        check_api: bool,
    ) -> Option<Response> {
        let method = request.method();
        if *method != Method::GET && *method != Method::HEAD {
            return None;
        }
        let start = Instant::now();
        let path = request.uri().path();
        if let Some(prefix) = path.strip_prefix("/range/").filter(|p| !p.contains('/')) {
            let mut response = range_answer(self, prefix, method, request.uri(), request.headers());
            response.headers_mut().insert(
                header::ACCESS_CONTROL_ALLOW_ORIGIN,
                HeaderValue::from_static("*"),
            );
            return Some(self.measured(Route::Range, start, response));
        }
        let (kind, hash) = path
            .strip_prefix("/check/")
            .filter(|_| check_api)?
            .split_once('/')
            .filter(|(_, hash)| !hash.contains('/'))?;
        let response = crate::serve::hash_api::check_one(self, kind, hash, method);
        Some(self.measured(Route::Check, start, response))
    }

    /// Counts an answer of `route` begun at `start`.
    pub(crate) fn measured(&self, route: Route, start: Instant, response: Response) -> Response {
        self.shared.metrics.record(route, start, &response);
        response
    }
}

async fn metrics(State(api): State<RangeApi>, method: Method) -> Response {
    let start = Instant::now();
    let response = match method {
        Method::GET | Method::HEAD => {
            let mut response = Response::new(Body::from(api.render_metrics()));
            set_headers(
                &mut response,
                &[
                    (header::CONTENT_TYPE, crate::serve::metrics::CONTENT_TYPE),
                    (header::CACHE_CONTROL, "no-store"),
                ],
            );
            response
        }
        _ => method_not_allowed(),
    };
    api.measured(Route::Metrics, start, response)
}

async fn check_one(
    State(api): State<RangeApi>,
    params: axum::extract::RawPathParams,
    method: Method,
) -> Response {
    let start = Instant::now();
    let mut params = params.iter().map(|(_, value)| value);
    let (kind, hash) = (params.next().unwrap_or(""), params.next().unwrap_or(""));
    let response = crate::serve::hash_api::check_one(&api, kind, hash, &method);
    api.measured(Route::Check, start, response)
}

async fn check_batch(State(api): State<RangeApi>, request: Request) -> Response {
    let start = Instant::now();
    let response = crate::serve::hash_api::check_batch(&api, request).await;
    api.measured(Route::CheckBatch, start, response)
}

/// Rendered bodies of recently served ranges, within a byte budget,
/// evicted oldest first; sharded to keep lock hold times short.
#[derive(Debug)]
struct Cache {
    shards: Vec<Mutex<Shard>>,
    budget: usize,
}

#[derive(Debug, Default)]
struct Shard {
    bodies: std::collections::HashMap<u32, Bytes>,
    order: std::collections::VecDeque<u32>,
    bytes: usize,
}

impl Cache {
    const SHARDS: usize = 16;

    fn new(bytes: usize) -> Cache {
        Cache {
            shards: (0..Self::SHARDS).map(|_| Default::default()).collect(),
            budget: bytes / Self::SHARDS,
        }
    }

    fn shard(&self, key: u32) -> std::sync::MutexGuard<'_, Shard> {
        // Mixed, so that prefixes with common low bits spread out.
        let mixed = key.wrapping_mul(0x9e37_79b9) >> 28;
        let shard = &self.shards[mixed as usize % Self::SHARDS];
        shard.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn get(&self, key: u32) -> Option<Bytes> {
        self.shard(key).bodies.get(&key).cloned()
    }

    fn insert(&self, key: u32, body: Bytes) {
        if body.len() > self.budget {
            return;
        }
        let mut shard = self.shard(key);
        if shard.bodies.contains_key(&key) {
            return;
        }
        shard.bytes += body.len();
        shard.bodies.insert(key, body);
        shard.order.push_back(key);
        while shard.bytes > self.budget {
            let Some(old) = shard.order.pop_front() else {
                break;
            };
            if let Some(b) = shard.bodies.remove(&old) {
                shard.bytes -= b.len();
            }
        }
    }
}

pub(crate) fn text(status: StatusCode, message: &str) -> Response {
    let mut response = (status, format!("{message}\n")).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

pub(crate) fn method_not_allowed() -> Response {
    let mut response = text(
        StatusCode::METHOD_NOT_ALLOWED,
        "method not allowed: use GET",
    );
    response.headers_mut().insert(
        header::ALLOW,
        HeaderValue::from_static("GET, HEAD, OPTIONS"),
    );
    response
}

/// Sets fixed headers on a response.
pub(crate) fn set_headers(response: &mut Response, fixed: &[(header::HeaderName, &'static str)]) {
    let headers = response.headers_mut();
    for (name, value) in fixed {
        headers.insert(name.clone(), HeaderValue::from_static(value));
    }
}

pub(crate) fn preflight() -> Response {
    let mut response = StatusCode::NO_CONTENT.into_response();
    set_headers(
        &mut response,
        &[
            (header::ACCESS_CONTROL_ALLOW_METHODS, "GET, HEAD, OPTIONS"),
            (header::ACCESS_CONTROL_ALLOW_HEADERS, "Add-Padding"),
            (header::ACCESS_CONTROL_MAX_AGE, "86400"),
        ],
    );
    response
}

/// Every answer may be read by any origin, as HIBP's.
async fn cors(mut response: Response) -> Response {
    response.headers_mut().insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    response
}

async fn fallback(State(api): State<RangeApi>, method: Method, uri: axum::http::Uri) -> Response {
    let start = Instant::now();
    let response = not_found(&method, &uri);
    api.measured(Route::Other, start, response)
}

fn not_found(method: &Method, uri: &axum::http::Uri) -> Response {
    if method == Method::OPTIONS {
        return preflight();
    }
    // The path after the mount point, when nested.
    let path = uri.path();
    if path == "/range" || path.starts_with("/range/") {
        return text(
            StatusCode::BAD_REQUEST,
            "the range prefix must be 5 hex digits: /range/5BAA6",
        );
    }
    text(
        StatusCode::NOT_FOUND,
        "not found: the API is GET /range/{5 hex digits}",
    )
}

/// The check page (`check.html`) with the kind it hashes filled in.
const PAGE: &str = include_str!("check.html");

/// The page for each kind, and its Content-Security-Policy: nothing
/// external, no inline code but the page's own script and style (by hash),
/// requests to this origin only.
fn rendered_page(kind: Kind) -> &'static (Bytes, HeaderValue) {
    static PAGES: OnceLock<[(Bytes, HeaderValue); 2]> = OnceLock::new();
    let pages = PAGES.get_or_init(|| {
        let between = |open: &str, close: &str| {
            let start = PAGE.find(open).map_or(0, |i| i + open.len());
            let end = PAGE[start..].find(close).map_or(start, |i| start + i);
            source_hash(&PAGE[start..end])
        };
        let policy = format!(
            "default-src 'none'; script-src '{}'; style-src '{}'; connect-src 'self'; \
             img-src 'none'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'",
            between("<script>", "</script>"),
            between("<style>", "</style>")
        );
        let policy = HeaderValue::from_str(&policy).expect("a policy is a valid header value");
        [Kind::Sha1, Kind::Ntlm].map(|kind| {
            let name = match kind {
                Kind::Sha1 => "sha1",
                Kind::Ntlm => "ntlm",
            };
            (Bytes::from(PAGE.replace("{KIND}", name)), policy.clone())
        })
    });
    &pages[usize::from(kind == Kind::Ntlm)]
}

/// A CSP source for inline code: `sha256-` and the base64 of its SHA-256.
fn source_hash(code: &str) -> String {
    use sha2::{Digest, Sha256};
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let digest = Sha256::digest(code.as_bytes());
    let mut out = String::from("sha256-");
    for group in digest.chunks(3) {
        let bytes = [
            group[0],
            *group.get(1).unwrap_or(&0),
            *group.get(2).unwrap_or(&0),
        ];
        let n = u32::from(bytes[0]) << 16 | u32::from(bytes[1]) << 8 | u32::from(bytes[2]);
        for i in 0..4 {
            if i <= group.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

async fn page(State(api): State<RangeApi>, method: Method) -> Response {
    let start = Instant::now();
    let response = page_answer(&api, &method);
    api.measured(Route::Page, start, response)
}

fn page_answer(api: &RangeApi, method: &Method) -> Response {
    match *method {
        Method::GET | Method::HEAD => {}
        Method::OPTIONS => return preflight(),
        _ => return method_not_allowed(),
    }
    // SHA-1 unless only an NTLM index is served.
    let current = api.load();
    let kind = if current.sha1.is_none() && current.ntlm.is_some() {
        Kind::Ntlm
    } else {
        Kind::Sha1
    };
    let (body, policy) = rendered_page(kind);
    let mut response = Response::new(Body::from(body.clone()));
    set_headers(
        &mut response,
        &[
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
    );
    response
        .headers_mut()
        .insert(header::CONTENT_SECURITY_POLICY, policy.clone());
    response
}

/// Parses 5 hex digits, either case.
fn parse_prefix(text: &str) -> Option<u32> {
    if text.len() != 5 {
        return None;
    }
    text.bytes().try_fold(0u32, |acc, b| {
        let digit = (b as char).to_digit(16)?;
        Some(acc << 4 | digit)
    })
}

/// The `mode` query parameter: SHA-1 unless `mode=ntlm`.
fn parse_mode(query: Option<&str>) -> std::result::Result<Kind, String> {
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

fn wants_padding(headers: &HeaderMap) -> bool {
    headers.get_all("add-padding").iter().any(|v| {
        v.to_str()
            .is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"))
    })
}

async fn range(
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
fn range_answer(
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
const KEPT_BODIES: usize = 256;
const KEPT_BODY_BYTES: usize = 1 << 20;

/// An answer's body in a buffer that goes back to its thread's store
/// ([`BODIES`]) when the answer is dropped: no allocation and no free of
/// ~50 KB for each answer (perf: 2-3% of the server's time in malloc).
struct Pooled(Vec<u8>);

impl Pooled {
    /// An empty buffer from the store, or a new one.
    fn take() -> Vec<u8> {
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
    fn respond(
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
struct Answer<'a> {
    api: &'a RangeApi,
    current: &'a Generation,
    served: &'a Served,
    kind: Kind,
    prefix: u32,
}

impl Answer<'_> {
    fn cache_key(&self, encoding: Encoding) -> u32 {
        self.prefix | u32::from(self.kind == Kind::Ntlm) << 20 | (encoding as u32) << 21
    }

    /// Decodes the range into `pairs` unless `decoded` says it is there.
    fn decode(&self, pairs: &mut Vec<(Key, u64)>, decoded: &mut bool) -> Result<()> {
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
    fn validator(&self, pairs: &mut Vec<(Key, u64)>, decoded: &mut bool) -> Result<HeaderValue> {
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
    fn body(
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

/// A content coding of range answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Identity = 0,
    Gzip = 1,
    Br = 2,
}

impl Encoding {
    fn name(self) -> Option<&'static str> {
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
fn negotiate(headers: &HeaderMap) -> Encoding {
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
enum Effort {
    Fresh,
    Kept,
}

/// Compresses a range body: literals under a prefix code fitted to the
/// body (`literals`). Random hex leaves a match search nothing to find, so
/// this packs a range as small as libdeflate's level 1 (53.2% against 54.5%
/// of a 1,000-line range) and smaller than brotli's quality 5 (52.9%
/// against 54.0%), several times as fast. Only gzip kept in the cache is
/// compressed harder, by libdeflate's level 6 (52.2%: paid once a range).
fn compress(body: &[u8], encoding: Encoding, effort: Effort) -> Vec<u8> {
    match (encoding, effort) {
        (Encoding::Identity, _) => body.to_vec(),
        (Encoding::Gzip, Effort::Fresh) => crate::serve::huffman_only::gzip(body),
        (Encoding::Gzip, Effort::Kept) => crate::range::gzip::gzip(body, 6),
        (Encoding::Br, _) => crate::serve::huffman_only::brotli(body),
    }
}

/// Whether the client's cached copy is still good (`If-None-Match` wins
/// over `If-Modified-Since`, which must repeat our `Last-Modified`).
fn not_modified(headers: &HeaderMap, etag: &HeaderValue, served: &Served) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_and_modes() {
        assert_eq!(parse_prefix("5BAA6"), Some(0x5BAA6));
        assert_eq!(parse_prefix("5baa6"), Some(0x5BAA6));
        assert_eq!(parse_prefix("00000"), Some(0));
        for bad in ["", "5BAA", "5BAA61", "5BAG6", "+BAA6", "5BA A", "５BAA6"] {
            assert_eq!(parse_prefix(bad), None, "{bad:?}");
        }
        assert_eq!(parse_mode(None), Ok(Kind::Sha1));
        assert_eq!(parse_mode(Some("mode=ntlm")), Ok(Kind::Ntlm));
        assert_eq!(parse_mode(Some("x=1&mode=NTLM")), Ok(Kind::Ntlm));
        assert_eq!(parse_mode(Some("mode=sha1")), Ok(Kind::Sha1));
        assert!(parse_mode(Some("mode=md5")).is_err());
    }

    #[test]
    fn cache_keeps_to_its_budget() {
        let cache = Cache::new(Cache::SHARDS * 100);
        for key in 0..1000u32 {
            cache.insert(key, Bytes::from(vec![b'x'; 30]));
            assert_eq!(cache.get(key).map(|b| b.len()), Some(30));
        }
        for shard in &cache.shards {
            let shard = shard.lock().unwrap();
            assert!(shard.bytes <= 100);
            assert_eq!(shard.bytes, shard.bodies.len() * 30);
            assert_eq!(shard.order.len(), shard.bodies.len());
        }
        // The oldest went first; the newest stayed.
        assert!(cache.get(0).is_none());
        assert!(cache.get(999).is_some());
        // Prefixes 256 apart (common low bits) still use every shard.
        let cache = Cache::new(Cache::SHARDS * 1000);
        for key in 0..64u32 {
            cache.insert(key << 8, Bytes::from_static(b"body"));
        }
        assert!(
            cache
                .shards
                .iter()
                .all(|s| !s.lock().unwrap().bodies.is_empty())
        );
        // A body larger than a shard's budget is not kept.
        cache.insert(5000, Bytes::from(vec![b'x'; 1001]));
        assert!(cache.get(5000).is_none());
    }

    #[test]
    fn the_page_allows_exactly_its_own_script_and_style() {
        // Known answers: RFC 4648 base64 of SHA-256.
        assert_eq!(
            source_hash(""),
            "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
        );
        assert_eq!(
            source_hash("abc"),
            "sha256-ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0="
        );
        for kind in [Kind::Sha1, Kind::Ntlm] {
            let (body, policy) = rendered_page(kind);
            let page = std::str::from_utf8(body).unwrap();
            let policy = policy.to_str().unwrap();
            assert!(!page.contains("{KIND}"));
            assert!(page.contains(&format!(
                "data-kind=\"{}\"",
                ["sha1", "ntlm"][usize::from(kind == Kind::Ntlm)]
            )));
            // One script, one style, both allowed by hash; nothing external.
            assert_eq!(page.matches("<script").count(), 1);
            assert_eq!(page.matches("<style").count(), 1);
            assert!(!page.contains("src=") && !page.contains("://"));
            let script = &page[page.find("<script>").unwrap() + 8..page.find("</script>").unwrap()];
            assert!(policy.contains(&format!("script-src '{}'", source_hash(script))));
            assert!(policy.starts_with("default-src 'none';"));
            assert!(policy.contains("connect-src 'self'"));
        }
    }

    #[test]
    fn negotiation_follows_q_values() {
        let with = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(
                header::ACCEPT_ENCODING,
                HeaderValue::from_str(value).unwrap(),
            );
            negotiate(&headers)
        };
        assert_eq!(negotiate(&HeaderMap::new()), Encoding::Identity);
        assert_eq!(with("gzip, br"), Encoding::Br);
        assert_eq!(with("gzip;q=1, br;q=0.5"), Encoding::Gzip);
        assert_eq!(with("br;q=0, gzip;q=0"), Encoding::Identity);
        assert_eq!(with("x-gzip"), Encoding::Gzip);
        assert_eq!(with("deflate"), Encoding::Identity);
    }
}
