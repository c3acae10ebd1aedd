//! `seekless pwned probe`: the container's health check. Against a real
//! `seekless pwned serve` on an ephemeral port, and against small fake
//! servers for the answers serve does not give on demand (a 503, a chunked
//! body, bodies cut short, silence, something that is not HTTP).
#![cfg(feature = "serve")]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use seekless_testkit::TempDir;

use crate::common;

use common::serve::Server;
use common::{SEEKLESS, prepare_index};

fn probe(args: &[&str]) -> Output {
    Command::new(SEEKLESS)
        .args(["pwned", "probe"])
        .args(args)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn probes_a_running_server() {
    let dir = TempDir::new("cli-probe");
    // SHA-1 of "password" and two more in its range.
    let corpus = "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:9545824\n\
                  5BAA6000000000000000000000000000000000FF:2\n\
                  0000000000000000000000000000000000000001:1\n";
    let index = prepare_index(corpus, &dir.join("in.txt"), &dir.join("pwned.idx"));
    let server = Server::start(&[&index], &[]);
    let port = server.port;
    let base = format!("http://127.0.0.1:{port}");

    // /health: 503 while the index is verified, then 200; the body either way.
    let health = format!("{base}/health");
    let start = Instant::now();
    let out = loop {
        let out = probe(&[&health]);
        if out.status.code() != Some(1) || start.elapsed() > Duration::from_secs(30) {
            break out;
        }
        assert!(text(&out.stderr).contains("503"), "{}", text(&out.stderr));
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // `sha1 NAME N hashes ok …`, tab-separated: the state is the fourth.
    let body = text(&out.stdout);
    let state = body.lines().next().and_then(|line| line.split('\t').nth(3));
    assert!(
        body.starts_with("sha1\t") && state == Some("ok"),
        "{body:?}"
    );
    assert!(out.stderr.is_empty());

    // A range: the body exactly as served (CRLF between lines, none after).
    let out = probe(&[&format!("{base}/range/5bAA6")]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        text(&out.stdout),
        "000000000000000000000000000000000FF:2\r\n1E4C9B93F3F0682250B6CF8331B7EE68FD8:9545824"
    );

    // Any status other than 2xx: exit 1, the body printed, the status on stderr.
    let out = probe(&[&format!("{base}/nope")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).starts_with("not found"));
    assert!(
        text(&out.stderr).contains("404 Not Found"),
        "{}",
        text(&out.stderr)
    );
    let out = probe(&[&format!("{base}/range/XYZ")]);
    assert_eq!(out.status.code(), Some(1));

    // A name that resolves to several addresses (::1 may come first, and
    // serve listens on 127.0.0.1 only): each is tried in turn.
    let out = probe(&[&format!("http://localhost:{port}/health")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    drop(server);
    // The server gone: no answer, exit 2.
    let out = probe(&[&health]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("cannot connect"),
        "{}",
        text(&out.stderr)
    );
    assert!(out.stdout.is_empty());
}

/// A server on 127.0.0.1 that answers one connection by reading the
/// request's head and writing `answer` (nothing and holding on when
/// `None`); its URL.
fn fake(answer: Option<&'static [u8]>) -> (String, std::thread::JoinHandle<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/health", listener.local_addr().unwrap());
    let thread = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut request = Vec::new();
        let mut byte = [0u8];
        while !request.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap() == 1 {
            request.push(byte[0]);
        }
        match answer {
            Some(answer) => stream.write_all(answer).unwrap(),
            None => std::thread::sleep(Duration::from_secs(3)),
        }
        request
    });
    (url, thread)
}

#[test]
fn statuses_and_failures() {
    // A chunked 503: exit 1, the body decoded.
    let (url, server) = fake(Some(
        b"HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\n\r\n\
          e\r\nsha1\tverifying\r\n1\r\n\n\r\n0\r\n\r\n",
    ));
    let out = probe(&[&url]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "sha1\tverifying\n");
    assert!(text(&out.stderr).contains("503 Service Unavailable"));
    let request = text(&server.join().unwrap());
    assert!(request.starts_with("GET /health HTTP/1.1\r\n"), "{request}");
    let authority = url
        .trim_start_matches("http://")
        .trim_end_matches("/health");
    assert!(
        request.contains(&format!("\r\nHost: {authority}\r\n")),
        "{request}"
    );
    assert!(request.contains("\r\nConnection: close\r\n"), "{request}");

    // A 204 with no body, ended by the close.
    let (url, server) = fake(Some(b"HTTP/1.1 204 No Content\r\n\r\n"));
    let out = probe(&[&url]);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    server.join().unwrap();

    // A body that ends with the connection (HTTP/1.0, no length): whole.
    let (url, server) = fake(Some(b"HTTP/1.0 404 Not Found\r\n\r\nnope"));
    let out = probe(&[&url]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "nope");
    assert!(text(&out.stderr).ends_with(": HTTP/1.0 404 Not Found\n"));
    server.join().unwrap();

    // Bodies cut short by the close: exit 2, nothing printed.
    for (answer, why) in [
        (
            &b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"[..],
            "body cut short: 3 of 10 bytes",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
            "the connection closed inside a chunked body",
        ),
    ] {
        let (url, server) = fake(Some(answer));
        let out = probe(&[&url]);
        assert_eq!(out.status.code(), Some(2), "{why}");
        assert!(out.stdout.is_empty(), "{why}");
        assert!(text(&out.stderr).contains(why), "{}", text(&out.stderr));
        server.join().unwrap();
    }

    // Something that is not HTTP: exit 2.
    let (url, server) = fake(Some(b"SSH-2.0-OpenSSH_9.2\r\n"));
    let out = probe(&[&url]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("not an HTTP"),
        "{}",
        text(&out.stderr)
    );
    server.join().unwrap();

    // Silence: exit 2 once the timeout has passed, not before.
    let (url, server) = fake(None);
    let start = Instant::now();
    let out = probe(&["--timeout", "1", &url]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("timed out"),
        "{}",
        text(&out.stderr)
    );
    assert!(start.elapsed() >= Duration::from_secs(1));
    server.join().unwrap();

    // URLs it cannot ask: exit 2, saying why.
    for (url, why) in [
        ("https://127.0.0.1:8443/health", "https"),
        ("127.0.0.1:8080/health", "http://"),
        ("http://127.0.0.1:http/", "port"),
    ] {
        let out = probe(&[url]);
        assert_eq!(out.status.code(), Some(2), "{url}");
        assert!(
            text(&out.stderr).contains(why),
            "{url}: {}",
            text(&out.stderr)
        );
    }
}
