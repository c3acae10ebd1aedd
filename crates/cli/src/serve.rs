//! `seekless pwned serve`: the Have I Been Pwned range API
//! (`GET /range/{5 hex}`) over HTTP, answered from seekless indexes, so that
//! existing clients work unchanged when pointed at this server. What the API
//! answers is the library's ([`seekless_pwned::RangeApi`]); this is the
//! shell around it: flags, the listening socket, signals, the access log,
//! and noticing replaced index files.
//!
//! The indexes are opened once (memory-mapped) and shared by all workers,
//! verified in the background after start (`/health` answers 503 until
//! then); several server processes can map the same file, which is how to
//! scale past one machine's cores (replicas behind a load balancer). A file
//! that takes a served index's name (noticed within a second, or on SIGHUP)
//! is opened, verified and then served in its place, with no request
//! dropped.

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime};

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use seekless_pwned::date::rfc3339;
use seekless_pwned::{Kind, RangeApi, Served};
use tower::Service;

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
    /// Address to listen on: HOST:PORT (a name such as localhost:8080, an
    /// IPv4 or `[IPv6]` address) or a bare PORT, on 127.0.0.1 (give
    /// 0.0.0.0:PORT for every interface). Port 0 picks a free port; the
    /// chosen address is printed on standard output.
    #[arg(long, value_name = "[HOST:]PORT", default_value = "127.0.0.1:8080")]
    pub listen: String,
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
    /// Do not serve the password check page at `/`.
    #[arg(long)]
    pub no_page: bool,
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

pub fn run(args: Args) -> ExitCode {
    match serve(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => crate::fail(e),
    }
}

type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// The index at `path`, and the identity of the file it was opened from
/// (taken first, so that a file taking the name after it is noticed).
fn open(path: &Path) -> Result<(Served, Identity)> {
    let identity = Identity::of(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let index = crate::index_file::open(path)?;
    let mut served = Served::new(index, path.display().to_string())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if let Some(modified) = identity.modified {
        served = served.last_modified(modified);
    }
    Ok((served, identity))
}

/// Verifies a served index, saying so when it is damaged.
fn verify(served: &Served) -> std::result::Result<(), String> {
    served.verify().map_err(|e| {
        let message = format!("{}: {e}", served.name());
        eprintln!("seekless: index damaged: {message}");
        message
    })
}

fn serve(args: Args) -> Result<()> {
    let api = RangeApi::with_cache(args.cache_mib.saturating_mul(1 << 20));
    let mut files: Vec<(PathBuf, Identity)> = Vec::new();
    for path in &args.indexes {
        let (served, identity) = open(path)?;
        let kind = served.index().kind();
        if let Some(other) = api.put(served) {
            return Err(format!(
                "{} and {} are both {kind} indexes; give one of each kind",
                other.name(),
                path.display(),
            )
            .into());
        }
        files.push((path.clone(), identity));
    }
    // Verify in the background: /health answers 503 until done. Then watch
    // for replaced indexes.
    let (reload_tx, reload_rx) = std::sync::mpsc::channel();
    {
        let api = api.clone();
        std::thread::Builder::new()
            .name("verify".into())
            .spawn(move || {
                for kind in [Kind::Sha1, Kind::Ntlm] {
                    if let Some(served) = api.get(kind) {
                        let _ = verify(&served);
                    }
                }
                watch(&api, files, &reload_rx);
            })?;
    }
    // A thread per core, each with a runtime of its own, as nginx's
    // workers are: connections are accepted here and handed to the workers
    // in turn, and a connection's requests are then served on its worker
    // alone, never waking another thread (tokio's work-stealing runtime
    // spent a tenth of the server's time in the kernel waking its threads).
    let threads = args
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let app = router(&api, !args.no_page, args.access_log);
    let mut workers = Vec::new();
    let mut handoffs = Vec::new();
    for i in 0..threads {
        let (handoff, streams) = tokio::sync::mpsc::unbounded_channel();
        handoffs.push(handoff);
        let app = app.clone();
        workers.push(
            std::thread::Builder::new()
                .name(format!("serve-{i}"))
                .spawn(move || -> Result<()> {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()?;
                    runtime.block_on(worker(streams, app));
                    Ok(())
                })?,
        );
    }
    runtime.spawn(hangups(reload_tx));
    // When it returns, the handoffs are dropped: the workers finish.
    let accepted = runtime.block_on(accept_loop(&args, handoffs));
    for worker in workers {
        worker.join().map_err(|_| "a worker thread panicked")??;
    }
    accepted
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
fn watch(
    api: &RangeApi,
    mut files: Vec<(PathBuf, Identity)>,
    reload: &std::sync::mpsc::Receiver<()>,
) {
    // Files already tried and refused, so each is reported once.
    let mut refused: Vec<Identity> = Vec::new();
    loop {
        let asked = match reload.recv_timeout(WATCH_EVERY) {
            Ok(()) => true,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => false,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
        };
        let mut changed = false;
        for (path, served_identity) in &mut files {
            let Ok(identity) = Identity::of(path) else {
                continue;
            };
            if identity == *served_identity || refused.contains(&identity) {
                continue;
            }
            match replacement(api, path) {
                Ok((hashes, was)) => {
                    eprintln!(
                        "seekless: now serving the new {}: {hashes} hashes (were {was})",
                        path.display(),
                    );
                    *served_identity = identity;
                    changed = true;
                }
                Err(e) => {
                    eprintln!(
                        "seekless: {} was replaced, but the new file is not served: {e}; \
                         still serving the one opened before",
                        path.display()
                    );
                    refused.push(identity);
                }
            }
        }
        if asked && !changed {
            eprintln!("seekless: SIGHUP: no index file was replaced");
        }
    }
}

/// Opens and verifies the file now at `path` and serves it in place of the
/// index of its kind, which must be served already: (hashes now, before).
fn replacement(api: &RangeApi, path: &Path) -> Result<(u64, u64)> {
    let (new, _) = open(path)?;
    let kind = new.index().kind();
    let Some(old) = api.get(kind) else {
        let other = match kind {
            Kind::Sha1 => Kind::Ntlm,
            Kind::Ntlm => Kind::Sha1,
        };
        return Err(format!("it is a {kind} index, this one serves {other}").into());
    };
    verify(&new)?;
    let hashes = new.index().len();
    api.put(new);
    Ok((hashes, old.index().len()))
}

fn router(api: &RangeApi, page: bool, access_log: bool) -> axum::Router {
    let mut app = api.router();
    if page {
        app = app.merge(api.page());
    }
    if access_log {
        app.layer(axum::middleware::from_fn(log))
    } else {
        app
    }
}

/// A connection handed to a worker, and its place under the limit of
/// connections open at once.
type Handoff = (std::net::TcpStream, tokio::sync::OwnedSemaphorePermit);

/// Accepts connections until SIGINT or SIGTERM, handing them to the
/// workers in turn.
async fn accept_loop(
    args: &Args,
    handoffs: Vec<tokio::sync::mpsc::UnboundedSender<Handoff>>,
) -> Result<()> {
    let listener = bind(&args.listen).await?;
    let local = listener.local_addr()?;
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "listening on http://{local}")?;
        stdout.flush()?;
    }
    let limit = std::sync::Arc::new(tokio::sync::Semaphore::new(args.max_connections.max(1)));
    let shutdown = shutdown_signal();
    tokio::pin!(shutdown);
    for next in (0..handoffs.len()).cycle() {
        let permit = tokio::select! {
            permit = std::sync::Arc::clone(&limit).acquire_owned() => permit?,
            () = &mut shutdown => break,
        };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let stream = match accepted.and_then(|(stream, _peer)| stream.into_std()) {
            Ok(stream) => stream,
            Err(e) => {
                // Out of file descriptors and the like: wait, go on.
                eprintln!("seekless: accept: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        if handoffs[next].send((stream, permit)).is_err() {
            return Err("a worker thread stopped".into());
        }
    }
    drop(listener);
    eprintln!("seekless: shutting down");
    Ok(())
}

/// Serves the connections handed to it until no more can come (the
/// server is shutting down), then waits for those open to finish (up to
/// [`SHUTDOWN_GRACE`]).
async fn worker(mut streams: tokio::sync::mpsc::UnboundedReceiver<Handoff>, app: axum::Router) {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .keep_alive(true);
    while let Some((stream, permit)) = streams.recv().await {
        let Ok(stream) = tokio::net::TcpStream::from_std(stream) else {
            continue;
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
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(SHUTDOWN_GRACE) => {
            eprintln!("seekless: closing connections still open after {SHUTDOWN_GRACE:?}");
        }
    }
}

/// Listens on `listen` (`HOST:PORT` or a bare port on 127.0.0.1): the
/// first of the name's addresses that binds; an error names the address
/// and what each attempt met.
async fn bind(listen: &str) -> Result<tokio::net::TcpListener> {
    let target = if !listen.is_empty() && listen.bytes().all(|b| b.is_ascii_digit()) {
        format!("127.0.0.1:{listen}")
    } else {
        listen.to_string()
    };
    let addresses: Vec<SocketAddr> = tokio::net::lookup_host(&target)
        .await
        .map_err(|e| format!("cannot listen on {listen}: {e} (give HOST:PORT or a port)"))?
        .collect();
    if addresses.is_empty() {
        return Err(format!("cannot listen on {listen}: the name has no address").into());
    }
    let mut failures = Vec::new();
    for address in &addresses {
        match tokio::net::TcpListener::bind(address).await {
            Ok(listener) => return Ok(listener),
            Err(e) => failures.push(format!("{address}: {e}")),
        }
    }
    Err(format!("cannot listen on {listen}: {}", failures.join("; ")).into())
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
