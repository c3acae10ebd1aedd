//! `seekless pwned serve`: the Have I Been Pwned range API
//! (`GET /range/{5 hex}`) over HTTP and HTTPS, answered from seekless
//! indexes, so that existing clients work unchanged when pointed at this
//! server. What the API answers is the library's
//! ([`seekless_pwned::RangeApi`]: ranges, whole-hash checks, health,
//! metrics); this is the shell around it: flags, the listening sockets,
//! TLS ([`tls`]), signals, the access log, and noticing replaced
//! index and certificate files.
//!
//! The indexes are opened once (memory-mapped) and shared by all workers,
//! verified in the background after start (`/health` answers 503 until
//! then); several server processes can map the same file, which is how to
//! scale past one machine's cores (replicas behind a load balancer). A file
//! that takes a served index's name (noticed within a second, or on SIGHUP)
//! is opened, verified and then served in its place, with no request
//! dropped.

mod file_identity;
mod tls;

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use seekless_pwned::server::{self, Reload};
use seekless_pwned::{GzipRanges, Kind, RangeApi, Served, rfc3339};
use tower::Service;

use file_identity::Identity;
use tls::Tls;

/// How long a client may take to send a request's headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long shutdown waits for requests in flight.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Serve the HIBP range API (`GET /range/{5 hex}`) from indexes.
#[derive(Debug, Clone, clap::Args)]
#[command(group(clap::ArgGroup::new("tls_source").args(["tls_cert", "tls_ca_dir"])))]
pub struct Args {
    /// An index to serve: one SHA-1 index and/or one NTLM index
    /// (`?mode=ntlm`); each index's kind decides which it answers.
    #[arg(short, long = "index", value_name = "INDEX", required = true)]
    pub indexes: Vec<PathBuf>,
    /// Address to answer plain HTTP on: HOST:PORT (a name such as
    /// localhost:8080, an IPv4 or `[IPv6]` address) or a bare PORT, on
    /// 127.0.0.1 (give 0.0.0.0:PORT for every interface). Port 0 picks a
    /// free port; each address listened on is printed on standard output.
    /// May be given more than once, and beside --tls-listen; without
    /// either, 127.0.0.1:8080.
    #[arg(long, value_name = "[HOST:]PORT")]
    pub listen: Vec<String>,
    /// Address to answer HTTPS on (HTTP/2 and HTTP/1.1), as --listen; needs
    /// --tls-cert and --tls-key, or --tls-ca-dir and --tls-name. May be
    /// given more than once.
    #[arg(long, value_name = "[HOST:]PORT", requires = "tls_source")]
    pub tls_listen: Vec<String>,
    /// The certificate chain for HTTPS, PEM (the server's certificate
    /// first). Re-read when the file changes, and on SIGHUP.
    #[arg(long, value_name = "PEM", requires_all = ["tls_listen", "tls_key"])]
    pub tls_cert: Option<PathBuf>,
    /// The private key for HTTPS, PEM (PKCS#8, RSA or EC). Re-read with
    /// the certificate.
    #[arg(long, value_name = "PEM", requires_all = ["tls_listen", "tls_cert"])]
    pub tls_key: Option<PathBuf>,
    /// Instead of --tls-cert and --tls-key: a CA of this server's own in
    /// DIR (made on the first start: ca.pem, to install where clients must
    /// trust this server, and ca.key), which signs a certificate for the
    /// --tls-name names and renews it while serving. For clients that
    /// hardcode api.pwnedpasswords.com: docs/stand-in.md.
    #[arg(long, value_name = "DIR", requires_all = ["tls_listen", "tls_names"])]
    pub tls_ca_dir: Option<PathBuf>,
    /// A name the certificate of --tls-ca-dir holds: a DNS name
    /// (api.pwnedpasswords.com) or an IP address. Repeatable.
    #[arg(long = "tls-name", value_name = "NAME", requires = "tls_ca_dir")]
    pub tls_names: Vec<String>,
    /// How long a certificate of --tls-ca-dir is valid (renewed when a
    /// third of it is left); for tests.
    #[arg(long, value_name = "AGE", value_parser = crate::pwned::span::parse, hide = true)]
    pub tls_lifetime: Option<Duration>,
    /// Make /health answer 503 while an index is older than this (its last
    /// update, or its build): 8d, 36h, 90m, or seconds.
    #[arg(long, value_name = "AGE", value_parser = crate::pwned::span::parse)]
    pub max_age: Option<Duration>,
    /// Do not offer the whole-hash lookups (`GET /check/sha1/…`,
    /// `GET /check/ntlm/…`, `POST /check`). They receive whole hashes (no
    /// k-anonymity): offer them to trusted callers only.
    #[arg(long)]
    pub no_check_api: bool,
    /// Do not offer `GET /metrics` (Prometheus text format).
    #[arg(long)]
    pub no_metrics: bool,
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
    /// Serve the delta bundles in DIR (as `pwned diff` and `pwned update
    /// --bundle-out DIR` write them) at `GET /bundles/{identity}`, so that
    /// replicas refresh by `update --base-url` with a download of what
    /// changed. Files added later are served without a restart.
    #[cfg(feature = "update")]
    #[arg(long, value_name = "DIR")]
    pub bundles: Option<PathBuf>,
}

pub fn run(args: Args) -> ExitCode {
    match serve(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => crate::report::fail(e),
    }
}

pub type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// The index at `path`, and the identity of the file it was opened from
/// (taken first, so that a file taking the name after it is noticed).
fn open(path: &Path) -> Result<(Served, Identity)> {
    let identity = Identity::of(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let index = crate::pwned::index_file::open(path)?;
    let mut served = Served::new(index, path.display().to_string())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if let Some(modified) = identity.modified() {
        served = served.last_modified(modified);
    }
    attach_gzip_ranges(&served, path);
    Ok((served, identity))
}

/// Answers gzip requests for the index at `path` from its gzip ranges
/// file (`pwned gzip-ranges`) when there is one made from it, saying so;
/// one that cannot be used is reported, and answers are then compressed as
/// they go. The file now there, to be looked at again when it changes.
fn attach_gzip_ranges(served: &Served, path: &Path) -> Option<Identity> {
    let file = GzipRanges::path_for(path);
    let identity = Identity::of(&file).ok()?;
    match GzipRanges::open(&file, served.index()) {
        Ok(ranges) => {
            served.attach_gzip_ranges(ranges);
            eprintln!("seekless: gzip answers from {}", file.display());
        }
        Err(e) => eprintln!("seekless: {e}; gzip answers are compressed as they go"),
    }
    Some(identity)
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
    #[cfg(feature = "update")]
    if let Some(dir) = &args.bundles {
        std::fs::read_dir(dir).map_err(|e| format!("--bundles {}: {e}", dir.display()))?;
    }
    let api = RangeApi::with_cache(args.cache_mib.saturating_mul(1 << 20));
    api.set_max_age(args.max_age);
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
    let tls = match (&args.tls_cert, &args.tls_key, &args.tls_ca_dir) {
        _ if args.tls_listen.is_empty() => None,
        (Some(cert), Some(key), _) => Some(Arc::new(Tls::load(cert, key)?)),
        (_, _, Some(dir)) => {
            let lifetime = args.tls_lifetime.unwrap_or(tls::stand_in::LIFETIME);
            Some(Arc::new(Tls::stand_in(dir, &args.tls_names, lifetime)?))
        }
        _ => None,
    };
    // Verify in the background: /health answers 503 until done. Then watch
    // for replaced indexes and certificates.
    let (reload_tx, reload_rx) = std::sync::mpsc::channel();
    {
        let (api, tls) = (api.clone(), tls.clone());
        std::thread::Builder::new()
            .name("verify".into())
            .spawn(move || {
                for kind in [Kind::Sha1, Kind::Ntlm] {
                    if let Some(served) = api.get(kind) {
                        let _ = verify(&served);
                    }
                }
                watch(&api, files, tls.as_deref(), &reload_rx);
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
    // Every address is bound before any is announced or served.
    let listeners = runtime.block_on(bind_all(&args, tls.as_deref()))?;
    let app = router(&api, &args);
    // Ranges and lookups answered without the Router (whether with the
    // whole-hash lookups), unless every request is logged.
    let fast = (!args.access_log).then_some(!args.no_check_api);
    let mut workers = Vec::new();
    let mut handoffs = Vec::new();
    for i in 0..threads {
        let (handoff, streams) = tokio::sync::mpsc::unbounded_channel();
        handoffs.push(handoff);
        let (app, api, tls) = (app.clone(), api.clone(), tls.clone());
        workers.push(
            std::thread::Builder::new()
                .name(format!("serve-{i}"))
                .spawn(move || -> Result<()> {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()?;
                    runtime.block_on(worker(streams, app, api, tls, fast));
                    Ok(())
                })?,
        );
    }
    runtime.spawn(hangups(reload_tx));
    // When it returns, the handoffs are dropped: the workers finish.
    let accepted = runtime.block_on(accept_all(listeners, args.max_connections, handoffs));
    for worker in workers {
        worker.join().map_err(|_| "a worker thread panicked")??;
    }
    accepted
}

/// How often the watcher looks at the served files' names.
const WATCH_EVERY: Duration = Duration::from_secs(1);

/// Sends a reload request on every SIGHUP. Where there is no SIGHUP
/// (Windows), or it cannot be had, the watcher polls alone, as long as
/// this sender lives: dropping it would end the watcher.
async fn hangups(reload: std::sync::mpsc::Sender<()>) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut hangup) = signal(SignalKind::hangup()) {
            while hangup.recv().await.is_some() {
                if reload.send(()).is_err() {
                    return;
                }
            }
        }
    }
    let _alive = reload;
    std::future::pending::<()>().await;
}

/// Switches to an index file that took a served one's name (`pwned update`
/// renames the new index over the old one), when it is noticed (every
/// [`WATCH_EVERY`]) or on SIGHUP. The new index is opened and verified
/// while the old one goes on answering; requests that started on the old
/// one finish on it. A new file that cannot be opened, fails verification
/// or is of the other kind is reported and the old one kept. The TLS
/// certificate and key are re-read the same way ([`Tls::refresh`]).
fn watch(
    api: &RangeApi,
    mut files: Vec<(PathBuf, Identity)>,
    tls: Option<&Tls>,
    reload: &std::sync::mpsc::Receiver<()>,
) {
    // Files already tried and refused, so each is reported once.
    let mut refused: Vec<Identity> = Vec::new();
    // Each index's gzip ranges file as last looked at, and whether its
    // damage was reported.
    let mut gzip: Vec<(Option<Identity>, bool)> = files
        .iter()
        .map(|(path, _)| (Identity::of(&GzipRanges::path_for(path)).ok(), false))
        .collect();
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
                    server::reloaded(api, Reload::Index, true);
                }
                Err(e) => {
                    eprintln!(
                        "seekless: {} was replaced, but the new file is not served: {e}; \
                         still serving the one opened before",
                        path.display()
                    );
                    refused.push(identity);
                    server::reloaded(api, Reload::Index, false);
                }
            }
        }
        for ((path, _), seen) in files.iter().zip(&mut gzip) {
            watch_gzip_ranges(api, path, seen);
        }
        let certificate = tls.and_then(|tls| Some((tls, tls.refresh(asked)?)));
        if let Some((tls, reloaded)) = certificate {
            let (cert, key) = tls.files();
            server::reloaded(api, Reload::Certificate, reloaded.is_ok());
            match reloaded {
                Ok(()) => eprintln!(
                    "seekless: new TLS connections get the certificate now in {} (key {})",
                    cert.display(),
                    key.display()
                ),
                Err(e) => eprintln!(
                    "seekless: the TLS certificate was not reloaded: {e}; \
                     still serving the one loaded before"
                ),
            }
        } else if asked && !changed {
            eprintln!("seekless: SIGHUP: no index file was replaced");
        }
    }
}

/// A gzip ranges file written after its index was served (by
/// `gzip-ranges`, or by `update` after renaming the new index into
/// place) is attached when it appears; a damaged member found while
/// serving is reported once.
fn watch_gzip_ranges(api: &RangeApi, path: &Path, (seen, reported): &mut (Option<Identity>, bool)) {
    let name = path.display().to_string();
    let Some(served) = [Kind::Sha1, Kind::Ntlm]
        .into_iter()
        .filter_map(|kind| api.get(kind))
        .find(|served| served.name() == name)
    else {
        return;
    };
    if let Some(damage) = served.gzip_ranges_damage() {
        if !*reported {
            eprintln!("seekless: {damage}; gzip answers are compressed as they go");
            *reported = true;
        }
        return;
    }
    *reported = false;
    let now = Identity::of(&GzipRanges::path_for(path)).ok();
    if served.gzip_ranges().is_none() && now.is_some() && now != *seen {
        *seen = attach_gzip_ranges(&served, path);
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

fn router(api: &RangeApi, args: &Args) -> axum::Router {
    let mut app = api.router();
    if !args.no_page {
        app = app.merge(api.page());
    }
    if !args.no_check_api {
        app = app.merge(api.check_api());
    }
    if !args.no_metrics {
        app = app.merge(api.metrics());
    }
    #[cfg(feature = "update")]
    if let Some(dir) = &args.bundles {
        app = app.merge(api.bundles(dir));
    }
    if args.access_log {
        app.layer(axum::middleware::from_fn(log))
    } else {
        app
    }
}

/// A connection handed to a worker: whether it came to a TLS address, and
/// its place under the limit of connections open at once.
struct Handoff {
    stream: std::net::TcpStream,
    tls: bool,
    permit: tokio::sync::OwnedSemaphorePermit,
}

type Handoffs = Arc<Vec<tokio::sync::mpsc::UnboundedSender<Handoff>>>;

/// A bound address, and whether it speaks TLS.
struct Listener {
    socket: tokio::net::TcpListener,
    tls: bool,
}

/// Binds every `--listen` and `--tls-listen` address (127.0.0.1:8080 when
/// neither is given) and announces each on standard output, plain ones
/// first: `listening on http://ADDRESS`, `listening on https://ADDRESS`;
/// before them, the stand-in's CA: `CA certificate to distribute: PATH`.
async fn bind_all(args: &Args, tls: Option<&Tls>) -> Result<Vec<Listener>> {
    let default = ["127.0.0.1:8080".to_string()];
    let plain = if args.listen.is_empty() && args.tls_listen.is_empty() {
        &default[..]
    } else {
        &args.listen[..]
    };
    let mut listeners = Vec::new();
    for (addresses, tls) in [(plain, false), (&args.tls_listen[..], true)] {
        for address in addresses {
            listeners.push(Listener {
                socket: bind(address).await?,
                tls,
            });
        }
    }
    let mut stdout = std::io::stdout().lock();
    if let Some(ca) = tls.and_then(Tls::authority) {
        let ca = std::path::absolute(ca).unwrap_or_else(|_| ca.to_path_buf());
        writeln!(stdout, "CA certificate to distribute: {}", ca.display())?;
    }
    for listener in &listeners {
        let scheme = if listener.tls { "https" } else { "http" };
        writeln!(
            stdout,
            "listening on {scheme}://{}",
            listener.socket.local_addr()?
        )?;
    }
    stdout.flush()?;
    Ok(listeners)
}

/// Accepts connections on every listener until SIGINT or SIGTERM, handing
/// them to the workers in turn.
async fn accept_all(
    listeners: Vec<Listener>,
    max_connections: usize,
    handoffs: Vec<tokio::sync::mpsc::UnboundedSender<Handoff>>,
) -> Result<()> {
    let limit = Arc::new(tokio::sync::Semaphore::new(max_connections.max(1)));
    let handoffs: Handoffs = Arc::new(handoffs);
    let turn = Arc::new(AtomicUsize::new(0));
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let mut accepting = tokio::task::JoinSet::new();
    for listener in listeners {
        let (limit, handoffs, turn) =
            (Arc::clone(&limit), Arc::clone(&handoffs), Arc::clone(&turn));
        accepting.spawn(accept_on(listener, limit, handoffs, turn, stopped.clone()));
    }
    drop(handoffs);
    let mut outcome = Ok(());
    tokio::select! {
        () = shutdown_signal() => {}
        Some(ended) = accepting.join_next() => {
            outcome = ended.map_err(|e| e.to_string().into()).and_then(|r| r);
        }
    }
    let _ = stop.send(true);
    while let Some(ended) = accepting.join_next().await {
        if let Ok(Err(e)) = ended {
            outcome = outcome.and(Err(e));
        }
    }
    eprintln!("seekless: shutting down");
    outcome
}

/// Accepts connections on one listener until told to stop.
async fn accept_on(
    listener: Listener,
    limit: Arc<tokio::sync::Semaphore>,
    handoffs: Handoffs,
    turn: Arc<AtomicUsize>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> Result<()> {
    loop {
        let permit = tokio::select! {
            permit = Arc::clone(&limit).acquire_owned() => permit?,
            _ = stop.changed() => return Ok(()),
        };
        let accepted = tokio::select! {
            accepted = listener.socket.accept() => accepted,
            _ = stop.changed() => return Ok(()),
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
        let next = turn.fetch_add(1, Ordering::Relaxed) % handoffs.len();
        let handoff = Handoff {
            stream,
            tls: listener.tls,
            permit,
        };
        if handoffs[next].send(handoff).is_err() {
            return Err("a worker thread stopped".into());
        }
    }
}

/// Serves the connections handed to it until no more can come (the
/// server is shutting down), then waits for those open to finish (up to
/// [`SHUTDOWN_GRACE`]). A TLS connection is served by HTTP/2 when the
/// client chose it by ALPN, else by HTTP/1.1.
async fn worker(
    mut streams: tokio::sync::mpsc::UnboundedReceiver<Handoff>,
    app: axum::Router,
    api: RangeApi,
    tls: Option<Arc<Tls>>,
    fast: Option<bool>,
) {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut http1 = hyper::server::conn::http1::Builder::new();
    http1
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .keep_alive(true);
    let mut http2 = hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new());
    http2.timer(hyper_util::rt::TokioTimer::new());
    while let Some(handoff) = streams.recv().await {
        let Ok(stream) = tokio::net::TcpStream::from_std(handoff.stream) else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let (app, direct_api) = (app.clone(), api.clone());
        let service = hyper::service::service_fn(move |request: hyper::Request<_>| {
            // Range and whole-hash lookups, nearly all the traffic, skip
            // the Router's dispatch (the same answers: 0.76 to 0.8x nginx's
            // requests a second for ranges, 124k to 150k+ a second for
            // lookups on 2 cores); logged requests take the Router.
            let direct = fast
                .and_then(|check_api| server::answer_directly(&direct_api, &request, check_api));
            let mut app = app.clone();
            async move {
                match direct {
                    Some(response) => Ok(response),
                    None => app.call(request.map(Body::new)).await,
                }
            }
        });
        let open = (server::connection(&api), handoff.permit);
        let Some(tls) = tls.as_ref().filter(|_| handoff.tls) else {
            let connection = graceful
                .watch(http1.serve_connection(hyper_util::rt::TokioIo::new(stream), service));
            tokio::spawn(async move {
                let _ = connection.await;
                drop(open);
            });
            continue;
        };
        let (acceptor, watcher) = (tls.acceptor(), graceful.watcher());
        let (http1, http2, api) = (http1.clone(), http2.clone(), api.clone());
        tokio::spawn(async move {
            let handshake = tokio::time::timeout(HEADER_TIMEOUT, acceptor.accept(stream)).await;
            let Ok(Ok(stream)) = handshake else {
                // Not TLS (plain HTTP to this port), a client refusing the
                // certificate, or too slow: the connection closes.
                server::tls_handshake_failed(&api);
                return;
            };
            let h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
            let io = hyper_util::rt::TokioIo::new(stream);
            if h2 {
                let _ = watcher.watch(http2.serve_connection(io, service)).await;
            } else {
                let _ = watcher.watch(http1.serve_connection(io, service)).await;
            }
            drop(open);
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
