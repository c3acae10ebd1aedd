//! `seekless pwned serve`: the Have I Been Pwned range API
//! (`GET /range/{5 hex}`) over HTTP, answered from seekless indexes, so that
//! existing clients work unchanged when pointed at this server.
//!
//! Behaviour, as api.pwnedpasswords.com:
//! - `GET /range/5BAA6` (either case): `200 text/plain`, one `SUFFIX:COUNT`
//!   line per hash whose hex starts with the prefix (35 hex digits of SHA-1,
//!   27 of NTLM, uppercase), sorted, CRLF-separated, no trailing newline; an
//!   empty range is an empty body. `?mode=ntlm` answers from the NTLM index.
//! - `Add-Padding: true`: random `SUFFIX:0` lines are mixed in, in sorted
//!   order and never equal to a real suffix. Policy: the response holds
//!   `max(real lines, 800) + uniform(0..=200)` lines, so every range of the
//!   real corpus (≈ 800–1,100 hashes each) answers with 800 to ~1,300 lines.
//! - 400 for a malformed prefix or mode, 404 for other paths, 405 for other
//!   methods; `OPTIONS` answers CORS preflight; every answer carries
//!   `Access-Control-Allow-Origin: *`.
//! - gzip or brotli when `Accept-Encoding` asks; a strong `ETag` per range
//!   computed from the range's content alone (the same across restarts and
//!   across indexes holding the same range, so `pwned update` refreshes
//!   incrementally from this server and mirrors chain) and a `Last-Modified`
//!   from the file's time, with `304 Not Modified` on revalidation;
//!   `Cache-Control: public`.
//! - `GET /health`: 200 once every index has been verified (in the
//!   background after start), 503 while verifying or if an index is damaged.
//!
//! The indexes are opened once (memory-mapped) and shared by all workers;
//! several server processes can map the same file, which is how to scale
//! past one machine's cores (replicas behind a load balancer). A file that
//! takes a served index's name (noticed within a second, or on SIGHUP) is
//! opened, verified and then served in its place, with no request dropped.

use std::fmt::Write as _;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::{Duration, Instant, SystemTime};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use seekless_pwned::{Index, Key, Kind};

use crate::date::{http_date, rfc3339};
use tower::Service;

/// Lines a padded response holds at least.
pub const PAD_MIN: usize = 800;
/// Extra padding lines drawn uniformly from `0..=PAD_SPREAD`.
pub const PAD_SPREAD: usize = 200;
/// `Cache-Control` of range answers (31 days, as the HIBP API sends).
const CACHE_CONTROL: &str = "public, max-age=2678400";
/// How long a client may take to send a request's headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long shutdown waits for requests in flight.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Serve the HIBP range API (`GET /range/{5 hex}`) from indexes.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// An index to serve: one SHA-1 index and/or one NTLM index
    /// (`?mode=ntlm`); each index's kind decides which it answers.
    #[arg(short, long = "index", value_name = "INDEX", required = true)]
    pub indexes: Vec<PathBuf>,
    /// Address to listen on (port 0 picks a free port; the chosen address
    /// is printed on standard output).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Worker threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Connections served at once; more wait to be accepted.
    #[arg(long, default_value_t = 10_000)]
    pub max_connections: usize,
    /// Keep up to this many MiB of recently served range bodies in memory
    /// (0: off). Helps when traffic favours some ranges, as real traffic
    /// does; under uniformly random ranges over the full corpus it rarely
    /// hits.
    #[arg(long, value_name = "MIB", default_value_t = 0)]
    pub cache_mib: usize,
    /// Print one access-log line per request on standard error
    /// (logfmt: time, method, path, status, bytes, microseconds).
    #[arg(long)]
    pub access_log: bool,
}

/// Verification state of a served index.
const VERIFYING: u8 = 0;
const VERIFIED: u8 = 1;
const DAMAGED: u8 = 2;

/// One index and what the server says about it.
#[derive(Debug)]
struct Served {
    index: Index,
    path: PathBuf,
    /// The file it was opened from, to notice when another takes its name.
    identity: Identity,
    last_modified: Option<HeaderValue>,
    status: AtomicU8,
    damage: OnceLock<String>,
}

/// What tells one file from another under the same name: device and inode
/// where there are such, with size and modification time.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Identity {
    file: (u64, u64),
    len: u64,
    modified: Option<SystemTime>,
}

impl Identity {
    fn of(path: &Path) -> std::io::Result<Identity> {
        let meta = std::fs::metadata(path)?;
        #[cfg(unix)]
        let file = {
            use std::os::unix::fs::MetadataExt;
            (meta.dev(), meta.ino())
        };
        #[cfg(not(unix))]
        let file = (0, 0);
        Ok(Identity {
            file,
            len: meta.len(),
            modified: meta.modified().ok(),
        })
    }
}

/// The indexes answering requests now, with what is cached of them. A
/// request holds the one it started with to its end; a reload puts a new
/// one in place for the requests after it.
#[derive(Debug)]
struct Indexes {
    sha1: Option<Arc<Served>>,
    ntlm: Option<Arc<Served>>,
    seed: AtomicU64,
    cache: Option<Cache>,
}

impl Indexes {
    fn new(sha1: Option<Arc<Served>>, ntlm: Option<Arc<Served>>, cache_bytes: usize) -> Indexes {
        let seed = std::collections::hash_map::RandomState::new();
        let seed = std::hash::BuildHasher::hash_one(&seed, SystemTime::now());
        Indexes {
            sha1,
            ntlm,
            seed: AtomicU64::new(seed),
            cache: (cache_bytes > 0).then(|| Cache::new(cache_bytes)),
        }
    }

    fn served(&self) -> impl Iterator<Item = &Arc<Served>> {
        [&self.sha1, &self.ntlm].into_iter().flatten()
    }
}

#[derive(Debug)]
struct Shared {
    current: RwLock<Arc<Indexes>>,
    cache_bytes: usize,
}

impl Shared {
    fn load(&self) -> Arc<Indexes> {
        Arc::clone(&self.current.read().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Rendered bodies of recently served ranges, within a byte budget,
/// evicted oldest first; sharded to keep lock hold times short.
#[derive(Debug)]
struct Cache {
    shards: Vec<std::sync::Mutex<Shard>>,
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

pub fn run(args: Args) -> ExitCode {
    match serve(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("seekless: {e}");
            ExitCode::from(2)
        }
    }
}

type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

fn open(path: &Path) -> Result<Served> {
    // The identity first: a file that takes the name after it is noticed.
    let identity = Identity::of(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let index = Index::open(path)?;
    let stats = index.stats();
    if stats.is_compact() {
        let compact = seekless_pwned::ErrorKind::Compact {
            key_bits: stats.key_bits,
        };
        return Err(format!(
            "{}: {}",
            path.display(),
            seekless_pwned::Error::from(compact)
        )
        .into());
    }
    let last_modified = identity
        .modified
        .and_then(|t| HeaderValue::from_str(&http_date(t)).ok());
    Ok(Served {
        index,
        path: path.to_path_buf(),
        identity,
        last_modified,
        status: AtomicU8::new(VERIFYING),
        damage: OnceLock::new(),
    })
}

/// Verifies a served index, recording the outcome for `/health`.
fn verify(served: &Served) -> bool {
    match served.index.verify() {
        Ok(()) => {
            served.status.store(VERIFIED, Ordering::Release);
            true
        }
        Err(e) => {
            let message = format!("{}: {e}", served.path.display());
            eprintln!("seekless: index damaged: {message}");
            let _ = served.damage.set(message);
            served.status.store(DAMAGED, Ordering::Release);
            false
        }
    }
}

fn serve(args: Args) -> Result<()> {
    let mut sha1: Option<Arc<Served>> = None;
    let mut ntlm: Option<Arc<Served>> = None;
    for path in &args.indexes {
        let served = open(path)?;
        let slot = match served.index.kind() {
            Kind::Sha1 => &mut sha1,
            Kind::Ntlm => &mut ntlm,
        };
        if let Some(other) = slot {
            return Err(format!(
                "{} and {} are both {} indexes; give one of each kind",
                other.path.display(),
                path.display(),
                served.index.kind()
            )
            .into());
        }
        *slot = Some(Arc::new(served));
    }
    let cache_bytes = args.cache_mib.saturating_mul(1 << 20);
    let first = Arc::new(Indexes::new(sha1, ntlm, cache_bytes));
    let shared = Arc::new(Shared {
        current: RwLock::new(Arc::clone(&first)),
        cache_bytes,
    });
    // Verify in the background: /health answers 503 until done. Then watch
    // for replaced indexes.
    let (reload_tx, reload_rx) = std::sync::mpsc::channel();
    {
        let shared = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("verify".into())
            .spawn(move || {
                for served in first.served() {
                    verify(served);
                }
                drop(first);
                watch(&shared, &reload_rx);
            })?;
    }
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    runtime.enable_all();
    if let Some(threads) = args.threads {
        runtime.worker_threads(threads.max(1));
    }
    let runtime = runtime.build()?;
    runtime.spawn(hangups(reload_tx));
    runtime.block_on(accept_loop(args, shared))
}

/// How often the watcher looks at the served files' names.
const WATCH_EVERY: Duration = Duration::from_secs(1);

/// Sends a reload request on every SIGHUP.
async fn hangups(reload: std::sync::mpsc::Sender<()>) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let Ok(mut hangup) = signal(SignalKind::hangup()) else {
            return;
        };
        while hangup.recv().await.is_some() {
            if reload.send(()).is_err() {
                return;
            }
        }
    }
    #[cfg(not(unix))]
    drop(reload);
}

/// Switches to an index file that took a served one's name (`pwned update`
/// renames the new index over the old one), when it is noticed (every
/// [`WATCH_EVERY`]) or on SIGHUP. The new index is opened and verified
/// while the old one goes on answering; requests that started on the old
/// one finish on it. A new file that cannot be opened, fails verification
/// or is of the other kind is reported and the old one kept.
fn watch(shared: &Shared, reload: &std::sync::mpsc::Receiver<()>) {
    // Files already tried and refused, so each is reported once.
    let mut refused: Vec<Identity> = Vec::new();
    loop {
        let asked = match reload.recv_timeout(WATCH_EVERY) {
            Ok(()) => true,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => false,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
        };
        let current = shared.load();
        let mut next = [current.sha1.clone(), current.ntlm.clone()];
        let mut changed = false;
        for slot in &mut next {
            let Some(served) = slot.clone() else { continue };
            let Ok(identity) = Identity::of(&served.path) else {
                continue;
            };
            if identity == served.identity || refused.contains(&identity) {
                continue;
            }
            match replacement(&served) {
                Ok(new) => {
                    eprintln!(
                        "seekless: now serving the new {}: {} hashes (were {})",
                        served.path.display(),
                        new.index.len(),
                        served.index.len()
                    );
                    *slot = Some(Arc::new(new));
                    changed = true;
                }
                Err(e) => {
                    eprintln!(
                        "seekless: {} was replaced, but the new file is not served: {e}; \
                         still serving the one opened before",
                        served.path.display()
                    );
                    refused.push(identity);
                }
            }
        }
        if changed {
            let [sha1, ntlm] = next;
            let indexes = Arc::new(Indexes::new(sha1, ntlm, shared.cache_bytes));
            *shared.current.write().unwrap_or_else(|e| e.into_inner()) = indexes;
        } else if asked {
            eprintln!("seekless: SIGHUP: no index file was replaced");
        }
    }
}

/// The file now at `old`'s name, opened and verified, of `old`'s kind.
fn replacement(old: &Served) -> Result<Served> {
    let new = open(&old.path)?;
    if new.index.kind() != old.index.kind() {
        return Err(format!(
            "it is a {} index, this one serves {}",
            new.index.kind(),
            old.index.kind()
        )
        .into());
    }
    if !verify(&new) {
        return Err(new.damage.get().cloned().unwrap_or_default().into());
    }
    Ok(new)
}

fn router(shared: Arc<Shared>, access_log: bool) -> Router {
    let app = Router::new()
        .route("/range/{prefix}", axum::routing::any(range))
        .route("/health", axum::routing::any(health))
        .fallback(fallback)
        .with_state(shared);
    let app = app.layer(axum::middleware::map_response(cors));
    if access_log {
        app.layer(axum::middleware::from_fn(log))
    } else {
        app
    }
}

async fn accept_loop(args: Args, shared: Arc<Shared>) -> Result<()> {
    let listener = tokio::net::TcpListener::bind(args.listen).await?;
    let local = listener.local_addr()?;
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "listening on http://{local}")?;
        stdout.flush()?;
    }
    let app = router(shared, args.access_log);
    let limit = Arc::new(tokio::sync::Semaphore::new(args.max_connections.max(1)));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .keep_alive(true);
    let shutdown = shutdown_signal();
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            permit = Arc::clone(&limit).acquire_owned() => permit?,
            () = &mut shutdown => break,
        };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let (stream, _peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors and the like: wait, go on.
                eprintln!("seekless: accept: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let service = hyper::service::service_fn(move |request: hyper::Request<_>| {
            let mut app = app.clone();
            async move { app.call(request.map(Body::new)).await }
        });
        let connection =
            graceful.watch(http.serve_connection(hyper_util::rt::TokioIo::new(stream), service));
        tokio::spawn(async move {
            let _ = connection.await;
            drop(permit);
        });
    }
    drop(listener);
    eprintln!("seekless: shutting down");
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(SHUTDOWN_GRACE) => {
            eprintln!("seekless: closing connections still open after {SHUTDOWN_GRACE:?}");
        }
    }
    Ok(())
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

fn text(status: StatusCode, message: &str) -> Response {
    let mut response = (status, format!("{message}\n")).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

fn method_not_allowed() -> Response {
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

fn preflight() -> Response {
    let mut response = StatusCode::NO_CONTENT.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, HEAD, OPTIONS"),
    );
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("Add-Padding"),
    );
    headers.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("86400"),
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

async fn fallback(method: Method, uri: axum::http::Uri) -> Response {
    if method == Method::OPTIONS {
        return preflight();
    }
    if uri.path() == "/range" || uri.path().starts_with("/range/") {
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

async fn health(State(shared): State<Arc<Shared>>, method: Method) -> Response {
    match method {
        Method::GET | Method::HEAD => {}
        Method::OPTIONS => return preflight(),
        _ => return method_not_allowed(),
    }
    let shared = shared.load();
    let mut report = String::new();
    let mut ok = true;
    for (name, served) in [("sha1", &shared.sha1), ("ntlm", &shared.ntlm)] {
        let Some(served) = served else { continue };
        let state = match served.status.load(Ordering::Acquire) {
            VERIFIED => "ok".to_string(),
            DAMAGED => {
                ok = false;
                format!("damaged: {}", served.damage.get().map_or("", |s| s))
            }
            _ => {
                ok = false;
                "verifying".to_string()
            }
        };
        let _ = writeln!(
            report,
            "{name}\t{}\t{} hashes\t{state}",
            served.path.display(),
            served.index.len()
        );
    }
    let status = if ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let mut response = (status, report).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// Parses 5 hex digits, either case.
fn parse_prefix(text: &str) -> Option<u64> {
    if text.len() != 5 {
        return None;
    }
    text.bytes().try_fold(0u64, |acc, b| {
        let digit = (b as char).to_digit(16)?;
        Some(acc << 4 | u64::from(digit))
    })
}

/// The `mode` query parameter: `Ok(None)` for SHA-1, `Ok(Some(()))` for NTLM.
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
    State(shared): State<Arc<Shared>>,
    params: axum::extract::RawPathParams,
    request: Request,
) -> Response {
    match *request.method() {
        Method::GET | Method::HEAD => {}
        Method::OPTIONS => return preflight(),
        _ => return method_not_allowed(),
    }
    let shared = shared.load();
    let Some(prefix) = params
        .iter()
        .next()
        .and_then(|(_, value)| parse_prefix(value))
    else {
        return text(
            StatusCode::BAD_REQUEST,
            "the range prefix must be 5 hex digits: /range/5BAA6",
        );
    };
    let kind = match parse_mode(request.uri().query()) {
        Ok(kind) => kind,
        Err(message) => return text(StatusCode::BAD_REQUEST, &message),
    };
    let served = match kind {
        Kind::Sha1 => shared.sha1.as_ref(),
        Kind::Ntlm => shared.ntlm.as_ref(),
    };
    let Some(served) = served else {
        let message = match kind {
            Kind::Sha1 => "no SHA-1 index is loaded on this server (try mode=ntlm)",
            Kind::Ntlm => "no NTLM index is loaded on this server (mode=ntlm)",
        };
        return text(StatusCode::NOT_FOUND, message);
    };
    let headers = request.headers();
    let padding = wants_padding(headers);
    let damaged = |e: seekless_pwned::Error| {
        text(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("index damaged: {e}"),
        )
    };
    // The range's pairs, decoded at most once per request.
    let mut items = None;
    let etag = if padding {
        None
    } else {
        match validator(&shared, served, kind, prefix, &mut items) {
            Ok(etag) => Some(etag),
            Err(e) => return damaged(e),
        }
    };
    let fresh = etag
        .as_ref()
        .is_some_and(|etag| not_modified(headers, etag, served));
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let encoding = negotiate(headers);
        let body = match answer(&shared, served, kind, prefix, padding, encoding, items) {
            Ok(body) => body,
            Err(e) => return damaged(e),
        };
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
    response
}

/// The range's strong validator: from the cache when there, else computed
/// from its pairs (decoded into `items` for the body to reuse).
fn validator(
    shared: &Indexes,
    served: &Served,
    kind: Kind,
    prefix: u64,
    items: &mut Option<Vec<(Key, u64)>>,
) -> seekless_pwned::Result<HeaderValue> {
    let key = cache_key(kind, prefix, CachedAs::Etag);
    if let Some(tag) = shared.cache.as_ref().and_then(|c| c.get(key))
        && let Ok(value) = HeaderValue::from_maybe_shared(tag)
    {
        return Ok(value);
    }
    let decoded = served.index.range(prefix, 20)?;
    let tag = seekless_pwned::range_etag(kind, &decoded);
    *items = Some(decoded);
    if let Some(cache) = &shared.cache {
        cache.insert(key, Bytes::from(tag.clone()));
    }
    Ok(HeaderValue::from_str(&tag).expect("hex in quotes is a valid header value"))
}

/// What a cache entry of a range holds: its body in one coding, or its
/// validator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CachedAs {
    Body(Encoding),
    Etag,
}

fn cache_key(kind: Kind, prefix: u64, what: CachedAs) -> u32 {
    let slot = match what {
        CachedAs::Body(encoding) => encoding as u32,
        CachedAs::Etag => 3,
    };
    prefix as u32 | u32::from(kind == Kind::Ntlm) << 20 | slot << 21
}

/// A content coding of range answers kept in the cache.
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

/// The body of a range answer in `encoding`: from the cache when there,
/// else rendered from the index (and compressed, and kept, when a cache
/// is on). Padded answers are fresh every time and never kept.
fn answer(
    shared: &Indexes,
    served: &Served,
    kind: Kind,
    prefix: u64,
    padding: bool,
    encoding: Encoding,
    items: Option<Vec<(Key, u64)>>,
) -> seekless_pwned::Result<Bytes> {
    let render = || -> seekless_pwned::Result<Bytes> {
        let items = match items {
            Some(items) => items,
            None => served.index.range(prefix, 20)?,
        };
        Ok(Bytes::from(if padding {
            let seed = shared
                .seed
                .fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed);
            range_body(kind, &pad(&items, kind, prefix, seed))
        } else {
            range_body(kind, &items)
        }))
    };
    let Some(cache) = shared.cache.as_ref().filter(|_| !padding) else {
        let plain = render()?;
        return Ok(match encoding {
            Encoding::Identity => plain,
            _ => Bytes::from(compress(&plain, encoding, Effort::Fresh)),
        });
    };
    let key = |encoding: Encoding| cache_key(kind, prefix, CachedAs::Body(encoding));
    if let Some(body) = cache.get(key(encoding)) {
        return Ok(body);
    }
    let plain = match cache.get(key(Encoding::Identity)) {
        Some(body) => body,
        None => {
            let body = render()?;
            cache.insert(key(Encoding::Identity), body.clone());
            body
        }
    };
    if encoding == Encoding::Identity {
        return Ok(plain);
    }
    let packed = Bytes::from(compress(&plain, encoding, Effort::Kept));
    cache.insert(key(encoding), packed.clone());
    Ok(packed)
}

/// How hard to compress: a body compressed for one answer is compressed
/// fast (gzip level 1, brotli quality 1, as nginx's default level), one kept
/// in the cache harder (gzip 6, brotli 5: paid once per range). The value
/// is the gzip level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Effort {
    Fresh = 1,
    Kept = 6,
}

/// Compresses a range body (gzip by libdeflate, whose level 1 packs random
/// hex to 54%, where zlib's fast level leaves it at 96%).
fn compress(body: &[u8], encoding: Encoding, effort: Effort) -> Vec<u8> {
    use std::io::Write as _;
    match encoding {
        Encoding::Identity => body.to_vec(),
        Encoding::Gzip => seekless_pwned::gzip(body, effort as u32),
        Encoding::Br => {
            let quality = match effort {
                Effort::Fresh => 1,
                Effort::Kept => 5,
            };
            let mut out = Vec::with_capacity(body.len() / 2 + 64);
            let mut encoder = brotli::CompressorWriter::new(&mut out, 4096, quality, 22);
            // Writing to a Vec cannot fail.
            let _ = encoder.write_all(body);
            let _ = encoder.flush();
            drop(encoder);
            out
        }
    }
}

/// Whether the client's cached copy is still good (`If-None-Match` wins
/// over `If-Modified-Since`, which must repeat our `Last-Modified`).
fn not_modified(headers: &HeaderMap, etag: &HeaderValue, served: &Served) -> bool {
    let ours = etag.as_bytes();
    let ours = ours.strip_prefix(b"W/").unwrap_or(ours);
    let tags: Vec<&[u8]> = headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .flat_map(|v| v.as_bytes().split(|&b| b == b','))
        .map(|t| t.trim_ascii())
        .collect();
    if !tags.is_empty() {
        return tags
            .iter()
            .any(|t| *t == b"*" || t.strip_prefix(b"W/").unwrap_or(t) == ours);
    }
    match (
        &served.last_modified,
        headers.get(header::IF_MODIFIED_SINCE),
    ) {
        (Some(ours), Some(theirs)) => ours == theirs,
        _ => false,
    }
}

/// Uppercase hex digits of every byte value.
const HEX_PAIRS: [[u8; 2]; 256] = {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    let mut table = [[0u8; 2]; 256];
    let mut i = 0;
    while i < 256 {
        table[i] = [DIGITS[i >> 4], DIGITS[i & 15]];
        i += 1;
    }
    table
};

/// The range body: `SUFFIX:COUNT` lines (the hex after the 5-digit
/// prefix, uppercase) joined by CRLF, no trailing newline.
pub fn range_body(kind: Kind, items: &[(Key, u64)]) -> Vec<u8> {
    let line = kind.hex_len() - 5 + 3;
    let mut body = Vec::with_capacity(items.len() * (line + 8));
    let mut hex = [0u8; 40];
    let hex_len = kind.hex_len();
    for (i, &(key, count)) in items.iter().enumerate() {
        if i > 0 {
            body.extend_from_slice(b"\r\n");
        }
        // Two digits a byte from a table: formatting dominates a range's
        // cost otherwise.
        for (pair, &byte) in hex.chunks_exact_mut(2).zip(&key.to_bytes()) {
            pair.copy_from_slice(&HEX_PAIRS[usize::from(byte)]);
        }
        body.extend_from_slice(&hex[5..hex_len]);
        body.push(b':');
        let mut digits = [0u8; 20];
        let mut n = count;
        let mut at = digits.len();
        loop {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        body.extend_from_slice(&digits[at..]);
    }
    body
}

/// splitmix64: padding needs only unpredictable-looking suffixes (they
/// carry count 0, so whoever reads the body knows them anyway).
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The range with random `:0` entries mixed in (see the module
/// documentation for how many), in hash order, none equal to a real hash.
pub fn pad(items: &[(Key, u64)], kind: Kind, prefix: u64, seed: u64) -> Vec<(Key, u64)> {
    let mut state = seed;
    let spread = (next(&mut state) % (PAD_SPREAD as u64 + 1)) as usize;
    let target = items.len().max(PAD_MIN) + spread;
    let wanted = target - items.len();
    let mut fake: Vec<Key> = Vec::with_capacity(wanted);
    // A clash with a real or another fake hash has probability ~2^-130 a
    // draw; the loop is bounded all the same.
    for _ in 0..8 {
        while fake.len() < wanted {
            let key = Key {
                hi: prefix << 44 | next(&mut state) >> 20,
                mid: next(&mut state),
                lo: match kind {
                    Kind::Sha1 => next(&mut state) as u32,
                    Kind::Ntlm => 0,
                },
            };
            fake.push(key);
        }
        fake.sort_unstable();
        fake.dedup();
        fake.retain(|k| items.binary_search_by(|(real, _)| real.cmp(k)).is_err());
        if fake.len() == wanted {
            break;
        }
    }
    let mut out = Vec::with_capacity(items.len() + fake.len());
    let mut fake = fake.into_iter().peekable();
    for &(key, count) in items {
        while let Some(f) = fake.next_if(|f| *f < key) {
            out.push((f, 0));
        }
        out.push((key, count));
    }
    out.extend(fake.map(|f| (f, 0)));
    out
}

/// One logfmt line per request on standard error.
async fn log(request: Request, next: axum::middleware::Next) -> Response {
    let start = Instant::now();
    let method = request.method().clone();
    let path = request.uri().to_string();
    let response = next.run(request).await;
    let bytes = axum::body::HttpBody::size_hint(response.body())
        .exact()
        .map_or_else(|| "-".to_string(), |n| n.to_string());
    let shown: String = path.chars().take(200).collect();
    eprintln!(
        "time={} method={method} path={shown:?} status={} bytes={bytes} micros={}",
        rfc3339(SystemTime::now()),
        response.status().as_u16(),
        start.elapsed().as_micros()
    );
    response
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
    fn padding_is_sorted_disjoint_and_sized() {
        for kind in [Kind::Sha1, Kind::Ntlm] {
            let prefix = 0x5BAA6;
            let real: Vec<(Key, u64)> = (0..1000u64)
                .map(|i| {
                    let key = Key {
                        hi: prefix << 44 | i << 20,
                        mid: i,
                        lo: 0,
                    };
                    (key, i + 1)
                })
                .collect();
            for n in [0, 1, 799, 800, 1000] {
                for seed in 0..20 {
                    let padded = pad(&real[..n], kind, prefix, seed);
                    assert!(padded.len() >= n.max(PAD_MIN));
                    assert!(padded.len() <= n.max(PAD_MIN) + PAD_SPREAD);
                    assert!(padded.windows(2).all(|w| w[0].0 < w[1].0));
                    assert!(padded.iter().all(|(k, _)| k.hi >> 44 == prefix));
                    let zeros: Vec<_> = padded.iter().filter(|(_, c)| *c == 0).collect();
                    assert_eq!(zeros.len(), padded.len() - n);
                    if kind == Kind::Ntlm {
                        assert!(padded.iter().all(|(k, _)| k.lo == 0));
                    }
                }
            }
        }
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
    fn body_format() {
        let kind = Kind::Sha1;
        let a = Key::from_hex(kind, b"5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8").unwrap();
        let b = Key::from_hex(kind, b"5BAA6FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF").unwrap();
        assert_eq!(range_body(kind, &[]), b"");
        assert_eq!(
            range_body(kind, &[(a, 9_545_824), (b, u64::MAX)]),
            b"1E4C9B93F3F0682250B6CF8331B7EE68FD8:9545824\r\nFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF:18446744073709551615"
        );
    }
}
