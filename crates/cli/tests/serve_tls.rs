//! `seekless pwned serve` as a process: HTTPS beside plain HTTP (HTTP/2 and
//! HTTP/1.1 by ALPN), certificates renewed without a restart, a bad pair
//! refused, `--max-age`, and the flags that turn the whole-hash lookups
//! and metrics off. What the API answers is tested in process by the
//! pwned crate's own tests; these check what only a running server shows.
#![cfg(feature = "serve")]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, SystemTime};

use seekless_testkit::{TempDir, write_atomic};

use crate::common;
use common::{SEEKLESS, prepare_index};

/// A certificate authority made for one test, and certificates it signs
/// for `localhost` and 127.0.0.1.
struct Authority {
    issuer: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
}

impl Authority {
    fn new(name: &str) -> Authority {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let key = rcgen::KeyPair::generate().unwrap();
        Authority {
            issuer: rcgen::CertifiedIssuer::self_signed(params, key).unwrap(),
        }
    }

    fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A server certificate and its key, as PEM.
    fn sign(&self) -> (String, String) {
        let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
        let params = rcgen::CertificateParams::new(names).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    }
}

/// A running `serve`, killed on drop, with its stderr lines as they come.
struct Server {
    child: Child,
    http: String,
    https: Option<String>,
    stderr: mpsc::Receiver<String>,
}

impl Server {
    fn start(args: &[&str]) -> Server {
        let mut child = Command::new(SEEKLESS)
            .args(["pwned", "serve"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (mut http, mut https) = (None, None);
        for line in stdout.lines() {
            let line = line.unwrap();
            let address = line.strip_prefix("listening on ").unwrap_or_else(|| {
                panic!("not an announcement: {line:?}");
            });
            if address.starts_with("https://") {
                https = Some(address.replace("127.0.0.1", "localhost"));
            } else {
                http = Some(address.to_string());
            }
            let want_https = args.contains(&"--tls-listen");
            if http.is_some() && (https.is_some() || !want_https) {
                break;
            }
        }
        let stderr = lines(child.stderr.take().unwrap());
        Server {
            child,
            http: http.expect("a plain address announced"),
            https,
            stderr,
        }
    }

    fn https(&self) -> &str {
        self.https.as_deref().expect("an https address announced")
    }

    /// Waits for a line of stderr holding `text`; the lines before it.
    fn wait_for(&self, text: &str) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            let line = self
                .stderr
                .recv_timeout(Duration::from_secs(20))
                .unwrap_or_else(|_| panic!("no {text:?} on stderr; saw {seen:?}"));
            if line.contains(text) {
                return seen;
            }
            seen.push(line);
        }
    }

    /// Every stderr line so far.
    fn stderr_so_far(&self) -> Vec<String> {
        self.stderr.try_iter().collect()
    }

    fn hangup(&self) {
        let sent = Command::new("kill")
            .args(["-HUP", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The lines read from `stderr`, on a thread of their own.
fn lines(stderr: ChildStderr) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            if tx.send(line.unwrap_or_default()).is_err() {
                return;
            }
        }
    });
    rx
}

/// A client trusting only `ca` (PEM), speaking HTTP/1.1 only when `http1`,
/// else whatever ALPN settles.
fn client(ca: &str, http1: bool) -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let ca = reqwest::Certificate::from_pem(ca.as_bytes()).unwrap();
    let mut builder = reqwest::Client::builder()
        .no_proxy()
        .tls_certs_only([ca])
        .tls_info(true)
        .timeout(Duration::from_secs(20));
    if http1 {
        builder = builder.http1_only();
    }
    builder.build().unwrap()
}

/// The DER of the certificate the server showed for `response`.
fn peer(response: &reqwest::Response) -> Vec<u8> {
    response
        .extensions()
        .get::<reqwest::tls::TlsInfo>()
        .and_then(|info| info.peer_certificate())
        .expect("TLS info")
        .to_vec()
}

fn der(pem: &str) -> Vec<u8> {
    use rustls::pki_types::pem::PemObject;
    rustls::pki_types::CertificateDer::from_pem_slice(pem.as_bytes())
        .unwrap()
        .to_vec()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

const CORPUS: &str = "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:9545824\n\
    5BAA6000000000000000000000000000000000AA:3\n\
    7C4A8D09CA3762AF61E59520943DC26494F8941B:37359195\n";

/// A directory with an index of [`CORPUS`] and a certificate and key from
/// `ca` written in it.
fn setup(what: &str, ca: &Authority) -> (TempDir, PathBuf, PathBuf, PathBuf) {
    let dir = TempDir::new(&format!("cli-{what}"));
    let index = prepare_index(CORPUS, &dir.join("corpus.txt"), &dir.join("pwned.idx"));
    let (cert, key) = ca.sign();
    let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert_path, cert).unwrap();
    std::fs::write(&key_path, key).unwrap();
    (dir, index, cert_path, key_path)
}

fn tls_args<'a>(index: &'a Path, cert: &'a Path, key: &'a Path) -> Vec<&'a str> {
    vec![
        "-i",
        index.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
        "--tls-listen",
        "127.0.0.1:0",
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ]
}

#[test]
fn https_beside_http_answers_the_same_by_http2_and_http1() {
    let ca = Authority::new("seekless test CA");
    let (_dir, index, cert, key) = setup("tls-alpn", &ca);
    let server = Server::start(&tls_args(&index, &cert, &key));
    runtime().block_on(async {
        let plain = reqwest::Client::builder().no_proxy().build().unwrap();
        let want = plain
            .get(format!("{}/range/5BAA6", server.http))
            .send()
            .await
            .unwrap();
        assert_eq!(want.status(), 200);
        let want = want.bytes().await.unwrap();
        assert!(want.ends_with(b"1E4C9B93F3F0682250B6CF8331B7EE68FD8:9545824"));
        for (http1, version) in [
            (false, reqwest::Version::HTTP_2),
            (true, reqwest::Version::HTTP_11),
        ] {
            let client = client(&ca.pem(), http1);
            let url = format!("{}/range/5BAA6", server.https());
            let response = client.get(&url).send().await.unwrap();
            assert_eq!(response.version(), version);
            assert_eq!(response.status(), 200);
            assert_eq!(response.bytes().await.unwrap(), want);
            // The whole-hash lookup and health over the same connection.
            let url = format!(
                "{}/check/sha1/5baa61e4c9b93f3f0682250b6cf8331b7ee68fd8",
                server.https()
            );
            let check = client.get(&url).send().await.unwrap();
            assert_eq!(check.version(), version);
            assert_eq!(
                check.text().await.unwrap(),
                r#"{"hash":"5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8","count":9545824}"#
            );
        }
        // A client that does not trust the CA is refused in the handshake.
        let stranger = client(&Authority::new("another CA").pem(), false);
        let refused = stranger.get(server.https()).send().await;
        assert!(refused.is_err());
    });
}

#[test]
fn a_renewed_certificate_serves_new_connections_and_open_ones_go_on() {
    let ca = Authority::new("seekless test CA");
    let (_dir, index, cert, key) = setup("tls-renew", &ca);
    let first_cert = std::fs::read_to_string(&cert).unwrap();
    let server = Server::start(&tls_args(&index, &cert, &key));
    runtime().block_on(async {
        let url = format!("{}/range/5BAA6", server.https());
        let open = client(&ca.pem(), false);
        let response = open.get(&url).send().await.unwrap();
        assert_eq!(peer(&response), der(&first_cert));

        // Renewed: a new pair renamed over the files (noticed within a
        // second, no signal).
        let (second_cert, second_key) = ca.sign();
        write_atomic(&key, &second_key);
        write_atomic(&cert, &second_cert);
        server.wait_for("new TLS connections get the certificate now in");
        let fresh = client(&ca.pem(), false).get(&url).send().await.unwrap();
        assert_eq!(peer(&fresh), der(&second_cert));
        // The connection opened before goes on, with the certificate it
        // began with.
        let again = open.get(&url).send().await.unwrap();
        assert_eq!(again.status(), 200);
        assert_eq!(peer(&again), der(&first_cert));

        // A broken key: reported once, the pair before kept.
        write_atomic(
            &key,
            "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n",
        );
        let message = server.wait_for_line("the TLS certificate was not reloaded");
        assert!(message.contains(key.to_str().unwrap()), "{message}");
        std::thread::sleep(Duration::from_millis(2500));
        let later: Vec<String> = server.stderr_so_far();
        assert!(
            later.iter().all(|l| !l.contains("not reloaded")),
            "reported again: {later:?}"
        );
        let still = client(&ca.pem(), true).get(&url).send().await.unwrap();
        assert_eq!(peer(&still), der(&second_cert));
        // The key of another certificate: the pair is refused, named.
        let (_, stranger_key) = ca.sign();
        write_atomic(&key, &stranger_key);
        let message = server.wait_for_line("the TLS certificate was not reloaded");
        assert!(message.contains("do not make a pair"), "{message}");
        // The key that matches again.
        write_atomic(&key, &second_key);
        server.wait_for("new TLS connections get the certificate now in");
        // SIGHUP reads the pair again even when nothing changed.
        server.hangup();
        server.wait_for("new TLS connections get the certificate now in");

        let metrics = reqwest::Client::builder().no_proxy().build().unwrap();
        let text = metrics
            .get(format!("{}/metrics", server.http))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            text.contains("seekless_reloads_total{what=\"certificate\"} 3"),
            "{text}"
        );
        assert!(
            text.contains("seekless_reload_failures_total{what=\"certificate\"} 2"),
            "{text}"
        );
    });
}

impl Server {
    /// The line of stderr holding `text`, waited for.
    fn wait_for_line(&self, text: &str) -> String {
        loop {
            let line = self
                .stderr
                .recv_timeout(Duration::from_secs(20))
                .unwrap_or_else(|_| panic!("no {text:?} on stderr"));
            if line.contains(text) {
                return line;
            }
        }
    }
}

#[test]
fn plain_http_and_garbage_to_the_tls_port_are_closed_and_counted() {
    let ca = Authority::new("seekless test CA");
    let (_dir, index, cert, key) = setup("tls-plain", &ca);
    let server = Server::start(&tls_args(&index, &cert, &key));
    let port = server.https().rsplit(':').next().unwrap().to_string();
    for request in [
        &b"GET /range/5BAA6 HTTP/1.1\r\nHost: localhost\r\n\r\n"[..],
        &[0x16, 0x03, 0x01, 0xff, 0xff, 0x01][..],
        &[0u8; 4096][..],
    ] {
        let mut stream = TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let _ = stream.write_all(request);
        let mut answer = Vec::new();
        // Closed: at most a TLS alert comes back, never an HTTP answer.
        let _ = stream.read_to_end(&mut answer);
        assert!(!answer.starts_with(b"HTTP/"), "{answer:?}");
    }
    runtime().block_on(async {
        let url = format!("{}/range/5BAA6", server.https());
        let response = client(&ca.pem(), false).get(&url).send().await.unwrap();
        assert_eq!(response.status(), 200);
        let metrics = reqwest::Client::builder().no_proxy().build().unwrap();
        let text = metrics
            .get(format!("{}/metrics", server.http))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            text.contains("seekless_tls_handshake_failures_total 3"),
            "{text}"
        );
    });
    assert_eq!(server.stderr_so_far(), Vec::<String>::new());
}

#[test]
fn a_bad_pair_at_start_is_an_error_naming_the_file() {
    let ca = Authority::new("seekless test CA");
    let (dir, index, cert, key) = setup("tls-bad", &ca);
    let missing = dir.join("missing.pem");
    let garbage = dir.join("garbage.pem");
    std::fs::write(&garbage, "not a PEM file\n").unwrap();
    let (_, other_key) = ca.sign();
    let other = dir.join("other-key.pem");
    std::fs::write(&other, other_key).unwrap();
    for (cert, key, says) in [
        (
            &missing,
            &key,
            vec![missing.to_str().unwrap(), "No such file"],
        ),
        (
            &cert,
            &missing,
            vec![missing.to_str().unwrap(), "No such file"],
        ),
        (
            &garbage,
            &key,
            vec![garbage.to_str().unwrap(), "expected a certificate"],
        ),
        (
            &cert,
            &garbage,
            vec![garbage.to_str().unwrap(), "expected a private key"],
        ),
        // The key in the certificate's place.
        (
            &key,
            &key,
            vec![key.to_str().unwrap(), "expected a certificate"],
        ),
        (
            &cert,
            &other,
            vec!["do not make a pair", other.to_str().unwrap()],
        ),
    ] {
        let out = Command::new(SEEKLESS)
            .args(["pwned", "serve"])
            .args(tls_args(&index, cert, key))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(out.stdout.is_empty(), "nothing announced");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        for text in says {
            assert!(stderr.contains(text), "{stderr} should say {text:?}");
        }
    }
    // TLS flags go together.
    let out = Command::new(SEEKLESS)
        .args(["pwned", "serve", "-i", index.to_str().unwrap()])
        .args(["--tls-listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--tls-cert"));
}

/// `GET url` on a plain address: (status, body).
fn get(url: &str) -> (u16, String) {
    let (host, path) = url
        .strip_prefix("http://")
        .and_then(|rest| rest.split_once('/').map(|(h, p)| (h, format!("/{p}"))))
        .unwrap();
    let mut stream = TcpStream::connect(host).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer[9..12].parse().unwrap();
    let body = answer
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

/// Waits (boundedly) for the background verification to finish.
fn healthy(server: &Server) -> (u16, String) {
    for _ in 0..1000 {
        let (status, body) = get(&format!("{}/health", server.http));
        if !body.contains("verifying") {
            return (status, body);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("still verifying");
}

#[test]
fn max_age_fails_health_for_an_old_index_and_flags_turn_endpoints_off() {
    let dir = TempDir::new("cli-max-age");
    let index = prepare_index(CORPUS, &dir.join("corpus.txt"), &dir.join("pwned.idx"));
    let index_arg = index.to_str().unwrap();
    let listen = ["--listen", "127.0.0.1:0"];
    // Fresh: healthy under --max-age 8d.
    let server = Server::start(&[&["-i", index_arg, "--max-age", "8d"][..], &listen].concat());
    let (status, body) = healthy(&server);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\tok\tupdated "), "{body}");
    drop(server);
    // Built nine days ago (its file's time).
    let nine_days = SystemTime::now() - Duration::from_secs(9 * 86_400);
    std::fs::File::options()
        .write(true)
        .open(&index)
        .unwrap()
        .set_modified(nine_days)
        .unwrap();
    let server = Server::start(&[&["-i", index_arg, "--max-age", "8d"][..], &listen].concat());
    let (status, body) = healthy(&server);
    assert_eq!(status, 503, "{body}");
    assert!(
        body.contains("stale: 9d 0h old, more than the 8d 0h allowed"),
        "{body}"
    );
    drop(server);
    // No --max-age: however old.
    let server = Server::start(&[&["-i", index_arg][..], &listen].concat());
    assert_eq!(healthy(&server).0, 200);
    // Malformed whole-hash lookups: 400s, nothing logged.
    for path in [
        "/check/sha1/5BAA6",
        "/check/ntlm/5BAA61E4C9B93F3F0682250B6CF8331B",
        "/check/x/y",
    ] {
        let (status, body) = get(&format!("{}{path}", server.http));
        assert_eq!(status, 400, "{path}: {body}");
        assert!(body.starts_with("{\"error\":"), "{body}");
    }
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(server.stderr_so_far(), Vec::<String>::new());
    drop(server);
    // Turned off.
    let args = [
        &["-i", index_arg, "--no-check-api", "--no-metrics"][..],
        &listen,
    ]
    .concat();
    let server = Server::start(&args);
    let path = "/check/sha1/5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8";
    assert_eq!(get(&format!("{}{path}", server.http)).0, 404);
    assert_eq!(get(&format!("{}/metrics", server.http)).0, 404);
    assert_eq!(get(&format!("{}/range/5BAA6", server.http)).0, 200);
    drop(server);
    // A malformed age.
    for age in ["8x", "d", "0", "-1d"] {
        let out = Command::new(SEEKLESS)
            .args([
                "pwned",
                "serve",
                "-i",
                index_arg,
                &format!("--max-age={age}"),
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{age}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("--max-age"),
            "{age}"
        );
    }
}

#[test]
fn several_addresses_are_announced_and_served() {
    let ca = Authority::new("seekless test CA");
    let (_dir, index, cert, key) = setup("tls-many", &ca);
    let mut args = tls_args(&index, &cert, &key);
    args.extend(["--listen", "127.0.0.1:0", "--tls-listen", "127.0.0.1:0"]);
    let mut child = Command::new(SEEKLESS)
        .args(["pwned", "serve"])
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut announced = Vec::new();
    for _ in 0..4 {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        announced.push(line.trim().to_string());
    }
    let schemes: Vec<&str> = announced
        .iter()
        .map(|l| l.split("://").next().unwrap())
        .collect();
    assert_eq!(
        schemes,
        [
            "listening on http",
            "listening on http",
            "listening on https",
            "listening on https"
        ],
        "{announced:?}"
    );
    runtime().block_on(async {
        for line in &announced {
            let address = line.strip_prefix("listening on ").unwrap();
            let url = format!("{}/range/5BAA6", address.replace("127.0.0.1", "localhost"));
            let response = client(&ca.pem(), false).get(&url).send().await.unwrap();
            assert_eq!(response.status(), 200, "{url}");
        }
    });
    let _ = child.kill();
    let _ = child.wait();
}
