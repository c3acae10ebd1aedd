//! `seekless pwned update` as it runs in production: behind an HTTP proxy
//! named in the environment, over TLS checked against the system's CA store
//! and CA certificates added with `--ca-cert`. Everything on 127.0.0.1: a
//! forward proxy (absolute-form requests and `CONNECT` tunnels) and range
//! servers, plain or TLS with certificates from CAs made here. The
//! environment is the child's own: each run starts without the machine's
//! proxy and certificate variables, and sets those it tests. Also the
//! exit status and words of a refresh where one range fails every try.
#![cfg(feature = "update")]

use std::collections::BTreeSet;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use seekless_pwned::{Index, Kind};

use seekless_testkit::TempDir;

use crate::common;

use common::SEEKLESS;

/// Every variable that would send the child elsewhere or make it trust
/// other CAs: removed from each run, then set as the test says.
const VARIABLES: [&str; 10] = [
    "http_proxy",
    "HTTP_PROXY",
    "https_proxy",
    "HTTPS_PROXY",
    "all_proxy",
    "ALL_PROXY",
    "no_proxy",
    "NO_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// Ranges answered before the first 404 that ends a short run: enough to
/// fill the request window many times over, far from a million.
const STOP: u32 = 0x200;

/// `seekless pwned update INDEX --base-url BASE EXTRA…` in `env` (and
/// nothing else of [`VARIABLES`]).
fn update(index: &Path, base: &str, env: &[(&str, &str)], extra: &[&str]) -> Output {
    let mut command = Command::new(SEEKLESS);
    command
        .args(["pwned", "update"])
        .arg(index)
        .args(["--base-url", base, "--concurrency", "64"])
        .args(extra);
    for name in VARIABLES {
        command.env_remove(name);
    }
    command.envs(env.iter().copied()).output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A certificate authority made for one test.
struct Ca {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Ca {
    fn new(name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let key = KeyPair::generate().unwrap();
        let pem = params.self_signed(&key).unwrap().pem();
        Ca {
            pem,
            issuer: Issuer::new(params, key),
        }
    }

    /// A TLS server's configuration with a certificate from this CA for
    /// 127.0.0.1 and localhost.
    fn server(&self) -> Arc<rustls::ServerConfig> {
        let params = CertificateParams::new(["127.0.0.1".into(), "localhost".into()]).unwrap();
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.der().clone()], key)
            .unwrap();
        Arc::new(config)
    }
}

/// A request's line and header lines, or `None` at the end of the stream.
fn read_head(reader: &mut impl BufRead) -> io::Result<Option<(String, Vec<String>)>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let request = line.trim_end().to_string();
    let mut headers = Vec::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        match line.trim_end() {
            "" => return Ok(Some((request, headers))),
            header => headers.push(header.to_string()),
        }
    }
}

/// A server on 127.0.0.1 that handles each connection on a thread of its
/// own, until dropped.
struct Listening {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl Listening {
    fn start(handle: impl Fn(TcpStream) + Send + Sync + 'static) -> Listening {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let handle = Arc::new(handle);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let handle = Arc::clone(&handle);
                std::thread::spawn(move || handle(stream));
            }
        });
        Listening { port, stop }
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// A range server on 127.0.0.1 answering from the built-in sample (19,640
/// hashes), over TLS when given a configuration. Ranges from `stop` on
/// answer 404, which ends an update there: a test sees how ranges travel
/// without a million of them.
struct Upstream {
    listening: Listening,
    /// Ranges answered with their hashes.
    served: Arc<AtomicU64>,
    /// Those of them whose request came through the proxy (its `Via`).
    via_proxy: Arc<AtomicU64>,
}

impl Upstream {
    fn start(tls: Option<Arc<rustls::ServerConfig>>, stop_at: u32) -> Upstream {
        Upstream::failing(tls, stop_at, Arc::default())
    }

    /// As [`start`](Upstream::start), with the range `failing` holds (if
    /// not 0) answering 503 to every request.
    fn failing(
        tls: Option<Arc<rustls::ServerConfig>>,
        stop_at: u32,
        failing: Arc<AtomicU64>,
    ) -> Upstream {
        let index = Arc::new(seekless_pwned::sample::index().unwrap());
        let served = Arc::new(AtomicU64::new(0));
        let via_proxy = Arc::new(AtomicU64::new(0));
        let (s, v) = (served.clone(), via_proxy.clone());
        let listening = Listening::start(move |stream| {
            let stop_at = (stop_at, failing.load(Ordering::Relaxed) as u32);
            let _ = match &tls {
                Some(config) => match rustls::ServerConnection::new(config.clone()) {
                    Ok(conn) => answer(
                        rustls::StreamOwned::new(conn, stream),
                        &index,
                        stop_at,
                        &s,
                        &v,
                    ),
                    Err(e) => Err(io::Error::other(e)),
                },
                None => answer(stream, &index, stop_at, &s, &v),
            };
        });
        Upstream {
            listening,
            served,
            via_proxy,
        }
    }

    fn url(&self, scheme: &str, host: &str) -> String {
        format!("{scheme}://{host}:{}", self.listening.port)
    }
}

/// Answers the requests of one connection.
fn answer(
    stream: impl Read + Write,
    index: &Index,
    (stop, failing): (u32, u32),
    served: &AtomicU64,
    via_proxy: &AtomicU64,
) -> io::Result<()> {
    let mut stream = BufReader::new(stream);
    while let Some((request, headers)) = read_head(&mut stream)? {
        let prefix = request
            .split(' ')
            .nth(1)
            .and_then(|target| target.strip_prefix("/range/"))
            .and_then(|hex| u32::from_str_radix(hex, 16).ok())
            .filter(|&prefix| prefix < stop.min(1 << 20));
        // One write a response: over TLS, one record.
        let mut response = Vec::new();
        match prefix {
            Some(prefix) if prefix == failing && failing != 0 => response.extend_from_slice(
                b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\n\r\n",
            ),
            Some(prefix) => {
                let items = index.range(u64::from(prefix), 20).unwrap();
                let body = seekless_pwned::test_util::range_body(Kind::Sha1, &items);
                let etag = seekless_pwned::test_util::range_etag(Kind::Sha1, &items);
                write!(
                    response,
                    "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\netag: {etag}\r\ncontent-length: {}\r\n\r\n",
                    body.len()
                )?;
                response.extend_from_slice(&body);
                served.fetch_add(1, Ordering::Relaxed);
                if headers
                    .iter()
                    .any(|h| h.to_ascii_lowercase().starts_with("via:"))
                {
                    via_proxy.fetch_add(1, Ordering::Relaxed);
                }
            }
            None => {
                response.extend_from_slice(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
            }
        }
        stream.get_mut().write_all(&response)?;
        stream.get_mut().flush()?;
    }
    Ok(())
}

/// What went through the forward proxy.
#[derive(Default)]
struct Seen {
    /// Absolute-form requests passed on.
    forwarded: AtomicU64,
    /// `CONNECT` targets, one a tunnel.
    tunnels: Mutex<Vec<String>>,
    /// The `Proxy-Authorization` values sent.
    auth: Mutex<BTreeSet<String>>,
}

/// A forward proxy on 127.0.0.1: `GET http://host:port/path` is passed on
/// to that server in origin form with a `Via` header, `CONNECT host:port`
/// opens a tunnel to it.
struct ForwardProxy {
    listening: Listening,
    seen: Arc<Seen>,
}

impl ForwardProxy {
    fn start() -> ForwardProxy {
        let seen = Arc::new(Seen::default());
        let s = seen.clone();
        let listening = Listening::start(move |client| {
            let _ = relay(client, &s);
        });
        ForwardProxy { listening, seen }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.listening.port)
    }
}

/// Copies `from` to `to` on a thread of its own, then ends `to`'s sending.
fn pipe(mut from: TcpStream, mut to: TcpStream) {
    std::thread::spawn(move || {
        let _ = io::copy(&mut from, &mut to);
        let _ = to.shutdown(Shutdown::Write);
    });
}

/// Serves one client connection of the proxy.
fn relay(client: TcpStream, seen: &Seen) -> io::Result<()> {
    let mut reader = BufReader::new(client.try_clone()?);
    let mut server: Option<TcpStream> = None;
    while let Some((request, headers)) = read_head(&mut reader)? {
        let mut parts = request.split(' ');
        let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        for header in &headers {
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("proxy-authorization")
            {
                seen.auth.lock().unwrap().insert(value.trim().to_string());
            }
        }
        if method == "CONNECT" {
            seen.tunnels.lock().unwrap().push(target.to_string());
            let mut tunnel = TcpStream::connect(target)?;
            (&client).write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")?;
            tunnel.write_all(reader.buffer())?;
            pipe(tunnel.try_clone()?, client.try_clone()?);
            let mut rest = reader.into_inner();
            io::copy(&mut rest, &mut tunnel)?;
            return tunnel.shutdown(Shutdown::Write);
        }
        let rest = target.strip_prefix("http://").unwrap_or(target);
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        if server.is_none() {
            let stream = TcpStream::connect(authority)?;
            pipe(stream.try_clone()?, client.try_clone()?);
            server = Some(stream);
        }
        let mut head = format!("{method} {path} HTTP/1.1\r\n");
        for header in headers
            .iter()
            .filter(|h| !h.to_ascii_lowercase().starts_with("proxy-"))
        {
            head.push_str(header);
            head.push_str("\r\n");
        }
        head.push_str("via: 1.1 seekless-test-proxy\r\n\r\n");
        server
            .as_mut()
            .expect("connected")
            .write_all(head.as_bytes())?;
        seen.forwarded.fetch_add(1, Ordering::Relaxed);
    }
    if let Some(server) = server {
        server.shutdown(Shutdown::Write)?;
    }
    Ok(())
}

/// The 404 that ends a short run, as `update` reports it.
fn stopped(out: &Output) -> bool {
    out.status.code() == Some(2)
        && stderr(out).contains(&format!(
            "range {STOP:05X}: HTTP 404 Not Found (tried once)"
        ))
}

/// Stands for the URL of the proxy a run starts, in the values of its
/// environment.
const PROXY: &str = "{proxy}";

/// A short run from `upstream` in `env`, through a forward proxy of its own
/// (a request of an earlier run, still on its way, cannot count): it must
/// fetch the ranges before [`STOP`] and stop there; returns whether they
/// went through the proxy.
fn short_run(
    dir: &Path,
    upstream: &Upstream,
    base: &str,
    env: &[(&str, &str)],
    extra: &[&str],
) -> bool {
    let proxy = ForwardProxy::start();
    let url = proxy.url();
    let given: Vec<(&str, String)> = env
        .iter()
        .map(|&(name, value)| (name, value.replace(PROXY, &url)))
        .collect();
    let given: Vec<(&str, &str)> = given.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let (served, via) = (
        upstream.served.load(Ordering::Relaxed),
        upstream.via_proxy.load(Ordering::Relaxed),
    );
    let index = dir.join("short.idx");
    let out = update(&index, base, &given, extra);
    assert!(stopped(&out), "{env:?} {extra:?}: {}", stderr(&out));
    assert!(!index.exists());
    for name in [".short.idx.update-partial", ".short.idx.update-journal"] {
        let _ = std::fs::remove_file(dir.join(name));
    }
    assert_eq!(
        upstream.served.load(Ordering::Relaxed) - served,
        u64::from(STOP),
        "{env:?}: every range before the stop, once"
    );
    let forwarded = proxy.seen.forwarded.load(Ordering::Relaxed);
    let tunnels = proxy.seen.tunnels.lock().unwrap().len();
    if base.starts_with("https:") {
        assert_eq!(forwarded, 0, "{env:?}: https:// is tunnelled");
        tunnels > 0
    } else {
        assert_eq!(tunnels, 0, "{env:?}: http:// is passed on");
        // Each request passed on by the proxy says so in its `Via`.
        let via = upstream.via_proxy.load(Ordering::Relaxed) - via;
        assert_eq!(
            via,
            if forwarded > 0 { u64::from(STOP) } else { 0 },
            "{env:?}"
        );
        forwarded > 0
    }
}

#[test]
fn http_proxy_is_read_as_curl_reads_it_and_no_proxy_goes_around_it() {
    let dir = TempDir::new("cli-proxy-http");
    let upstream = Upstream::start(None, STOP);
    let url = PROXY;
    let ip = upstream.url("http", "127.0.0.1");
    let name = upstream.url("http", "localhost");
    // Which variables are read.
    let upper_no = ("NO_PROXY", "localhost");
    for (base, env, proxied) in [
        (&ip, &[][..], false),
        (&ip, &[("http_proxy", url)][..], true),
        // Upper case is never read for http:// (as curl: "httpoxy").
        (&ip, &[("HTTP_PROXY", url)][..], false),
        (&ip, &[("ALL_PROXY", url)][..], true),
        (&ip, &[("all_proxy", url), ("HTTPS_PROXY", url)][..], true),
        // A proxy for https:// URLs only.
        (&ip, &[("https_proxy", url)][..], false),
        (&name, &[("http_proxy", url), upper_no][..], false),
        // The lower case wins.
        (
            &name,
            &[("http_proxy", url), ("no_proxy", "x"), upper_no][..],
            true,
        ),
    ] {
        let through = short_run(&dir, &upstream, base, env, &[]);
        assert_eq!(through, proxied, "{base} {env:?}");
    }
    // What the no-proxy list covers: addresses, networks, names and the
    // names under them, everything.
    for (base, list, proxied) in [
        (&ip, "127.0.0.1", false),
        (&ip, "10.0.0.1, 127.0.0.0/8", false),
        (&ip, "127.0.0.2,example.com", true),
        (&ip, "*", false),
        (&name, "localhost", false),
        (&name, ".localhost", false),
        (&name, "host", true),
    ] {
        let env = [("http_proxy", url), ("no_proxy", list)];
        let through = short_run(&dir, &upstream, base, &env, &[]);
        assert_eq!(through, proxied, "{base} {list}");
    }
}

/// A TLS range server whose certificate a CA made for the test signed;
/// PEM files in a fresh directory: `ours` holds that
/// CA, `theirs` another one, `both` the two.
struct Tls {
    dir: TempDir,
    upstream: Upstream,
    base: String,
    ours: String,
    theirs: String,
    both: String,
}

impl Tls {
    fn start(what: &str, stop: u32) -> Tls {
        let dir = TempDir::new(&format!("cli-{what}"));
        let ca = Ca::new("seekless test CA");
        let other = Ca::new("some other CA");
        let upstream = Upstream::start(Some(ca.server()), stop);
        let base = upstream.url("https", "127.0.0.1");
        let pem = |name: &str, cas: &[&Ca]| {
            let path = dir.join(name);
            std::fs::write(
                &path,
                cas.iter().map(|ca| ca.pem.as_str()).collect::<String>(),
            )
            .unwrap();
            path.to_str().unwrap().to_string()
        };
        Tls {
            ours: pem("ours.pem", &[&ca]),
            theirs: pem("theirs.pem", &[&other]),
            both: pem("both.pem", &[&other, &ca]),
            dir,
            upstream,
            base,
        }
    }

    /// [`short_run`] against this server.
    fn short_run(&self, env: &[(&str, &str)], extra: &[&str]) -> bool {
        short_run(&self.dir, &self.upstream, &self.base, env, extra)
    }
}

#[test]
fn a_full_update_over_tls_through_a_connect_proxy_with_an_added_ca() {
    let tls = Tls::start("proxy-tls-full", 1 << 20);
    let proxy = ForwardProxy::start();
    let index = tls.dir.join("pwned.idx");
    let with_password = format!("http://user:secret@127.0.0.1:{}", proxy.listening.port);
    // The system's store lacks the CA; the file added holds another CA
    // first: every certificate in it is read.
    let env = [
        ("HTTPS_PROXY", with_password.as_str()),
        ("SSL_CERT_FILE", &tls.theirs),
    ];
    let out = update(&index, &tls.base, &env, &["--ca-cert", &tls.both]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", stderr(&out));
    assert!(
        stdout.contains("1048576 ranges checked, 1048576 changed, 0 not modified"),
        "{stdout}"
    );
    assert_eq!(tls.upstream.served.load(Ordering::Relaxed), 1 << 20);
    let sample = seekless_pwned::sample::index().unwrap();
    let built = Index::open(&index).unwrap();
    built.verify().unwrap();
    assert!(
        built
            .iter()
            .map(Result::unwrap)
            .eq(sample.iter().map(Result::unwrap)),
        "the index holds the served corpus"
    );
    assert_eq!(built.source().unwrap().unwrap().url, tls.base);
    // Every connection was a tunnel to the server, opened with the
    // proxy's credentials; nothing was passed on in the clear.
    let tunnels = proxy.seen.tunnels.lock().unwrap().clone();
    assert!(!tunnels.is_empty());
    let target = format!("127.0.0.1:{}", tls.upstream.listening.port);
    assert!(tunnels.iter().all(|t| *t == target), "{tunnels:?}");
    assert_eq!(proxy.seen.forwarded.load(Ordering::Relaxed), 0);
    let auth: Vec<String> = proxy.seen.auth.lock().unwrap().iter().cloned().collect();
    assert_eq!(auth, ["Basic dXNlcjpzZWNyZXQ="], "user:secret");
}

#[test]
fn the_system_store_is_trusted_and_added_cas_go_beside_it() {
    let tls = Tls::start("proxy-tls-trust", STOP);
    let certs = tls.dir.join("certs");
    std::fs::create_dir(&certs).unwrap();
    std::fs::copy(&tls.theirs, certs.join("a.pem")).unwrap();
    std::fs::copy(&tls.ours, certs.join("b.pem")).unwrap();
    let (certs, url) = (certs.to_str().unwrap(), PROXY);
    let (ours, theirs) = (tls.ours.as_str(), tls.theirs.as_str());
    for (env, extra, proxied) in [
        // Where the system's store is read from on Linux
        // (rustls-native-certs: SSL_CERT_FILE, SSL_CERT_DIR, else the
        // distribution's bundle as OpenSSL finds it): a CA added there is
        // trusted, no option needed.
        (&[("SSL_CERT_FILE", tls.both.as_str())][..], &[][..], false),
        (&[("SSL_CERT_DIR", certs)][..], &[][..], false),
        // --ca-cert adds to the store, never replaces it, either way
        // round; and the same through the proxy's tunnels, unless
        // no_proxy goes around it.
        (
            &[("SSL_CERT_FILE", ours)][..],
            &["--ca-cert", theirs][..],
            false,
        ),
        (
            &[("SSL_CERT_FILE", theirs)][..],
            &["--ca-cert", ours][..],
            false,
        ),
        (
            &[("SSL_CERT_FILE", theirs), ("https_proxy", url)][..],
            &["--ca-cert", ours][..],
            true,
        ),
        (
            &[
                ("SSL_CERT_FILE", theirs),
                ("https_proxy", url),
                ("no_proxy", "127.0.0.1"),
            ][..],
            &["--ca-cert", ours][..],
            false,
        ),
    ] {
        assert_eq!(tls.short_run(env, extra), proxied, "{env:?} {extra:?}");
    }
}

#[test]
fn a_certificate_no_trusted_ca_signed_is_refused_at_once() {
    let tls = Tls::start("proxy-tls-refused", STOP);
    let proxy = ForwardProxy::start();
    let (theirs, url) = (tls.theirs.as_str(), proxy.url());
    let index = tls.dir.join("pwned.idx");
    for (env, extra) in [
        (&[("SSL_CERT_FILE", theirs)][..], &[][..]),
        (
            &[("SSL_CERT_FILE", theirs), ("HTTPS_PROXY", &url)][..],
            &[][..],
        ),
        (&[][..], &["--ca-cert", theirs][..]),
    ] {
        let tunnels = proxy.seen.tunnels.lock().unwrap().len();
        let out = update(&index, &tls.base, env, extra);
        let text = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{text}");
        // Named as what it is, and not tried again (8 tries by default).
        assert!(
            text.contains(
                "range 00000: TLS certificate refused: the certificate of 127.0.0.1 is \
                 signed by a CA this machine does not trust"
            ) && text.contains("(tried once)"),
            "{env:?}: {text}"
        );
        if env.len() == 2 {
            let more = proxy.seen.tunnels.lock().unwrap().len() > tunnels;
            assert!(more, "through the proxy's tunnel");
        }
        assert!(!index.exists());
    }
    assert_eq!(tls.upstream.served.load(Ordering::Relaxed), 0);
}

#[test]
fn bad_ca_files_and_proxy_urls_stop_the_update_before_any_request() {
    let dir = TempDir::new("cli-proxy-refused");
    // A server that must never see a connection.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let key = dir.join("key.pem");
    std::fs::write(&key, KeyPair::generate().unwrap().serialize_pem()).unwrap();
    let text = dir.join("notes.txt");
    std::fs::write(&text, "not a certificate\n").unwrap();
    let missing = dir.join("missing.pem");
    let index = dir.join("pwned.idx");
    let before = common::snapshot(&dir);
    let named = |path: &Path, what: &str| format!("seekless: {}: {what}", path.display());
    for (env, extra, wanted) in [
        (
            &[][..],
            vec!["--ca-cert".to_string(), missing.display().to_string()],
            named(&missing, "cannot read CA certificates: "),
        ),
        (
            &[][..],
            vec!["--ca-cert".into(), key.display().to_string()],
            named(&key, "no CA certificate in it"),
        ),
        (
            &[][..],
            vec!["--ca-cert".into(), text.display().to_string()],
            named(&text, "no CA certificate in it"),
        ),
        (
            &[("https_proxy", "socks5h://127.0.0.1:1080")][..],
            vec![],
            "seekless: https_proxy: socks5h proxies are not supported".into(),
        ),
        (
            &[("http_proxy", "http://user:secret@[::1")][..],
            vec![],
            "seekless: http_proxy: not a proxy URL".into(),
        ),
    ] {
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        let out = update(&index, &base, env, &extra);
        let text = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{text}");
        assert!(text.contains(&wanted), "{wanted}: {text}");
        assert!(!text.contains("secret"), "{text}");
        assert!(
            common::snapshot(&dir) == before,
            "{wanted}: no file written"
        );
    }
    assert_eq!(
        listener.accept().map(|_| ()).unwrap_err().kind(),
        io::ErrorKind::WouldBlock,
        "no request was sent"
    );
}

/// A refresh where one range fails every try (503) finishes the others,
/// names it, says so in its summary and exits 3; the range keeps what the
/// index had. (The healed rerun is pwned's tests/update_suspect.rs: each
/// run here asks all 2^20 ranges.)
#[test]
fn a_range_failing_every_try_is_named_and_the_refresh_exits_3() {
    let dir = TempDir::new("cli-update-failed-range");
    let failing = Arc::new(AtomicU64::new(0));
    let upstream = Upstream::failing(None, 1 << 20, failing.clone());
    let base = upstream.url("http", "127.0.0.1");
    let index = dir.join("pwned.idx");
    let out = update(&index, &base, &[], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let before = std::fs::read(&index).unwrap();
    failing.store(0x5BAA6, Ordering::Relaxed);
    let out = update(&index, &base, &[], &["--tries", "2"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout}{}", stderr(&out));
    assert!(
        stdout.contains("1048575 fetched, 0 suspect, 1 failed"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  1 failed ranges (kept what the index had): 5BAA6\n"),
        "{stdout}"
    );
    assert!(stderr(&out).contains("1 ranges failed every try: 5BAA6"));
    let (old, new) = (
        Index::from_bytes(before).unwrap(),
        Index::open(&index).unwrap(),
    );
    assert_eq!(
        old.range(0x5BAA6, 20).unwrap(),
        new.range(0x5BAA6, 20).unwrap()
    );
}
