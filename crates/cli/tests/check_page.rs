//! The password check page of `seekless pwned serve`, in a real headless
//! browser (Debian's chromium, driven through chromedriver's WebDriver
//! protocol): listed passwords show their counts, unlisted ones "not found",
//! for a SHA-1 index and an NTLM-only one (the page's MD4), each opened by
//! 127.0.0.1 (SHA-1 by WebCrypto) and by another name over plain HTTP (no
//! secure context, so no WebCrypto: the page's own SHA-1), and the access
//! log shows only the page and `/range/` requests with 5-digit prefixes.
//! Skipped when chromium or chromedriver is absent, unless
//! `SEEKLESS_REQUIRE_CHROMIUM=1` (CI installs both and sets it).
#![cfg(feature = "serve")]

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use seekless_pwned::Kind;
use serde_json::{Value, json};

use seekless_testkit::TempDir;

use crate::common;

use common::prepare_index;
use common::serve::{Probe, Server};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// A name for 127.0.0.1 that is not loopback to the browser: a page opened
/// by it over plain HTTP is no secure context, so it has no WebCrypto.
const NON_LOOPBACK: &str = "pwned.internal";

/// A child process killed on drop.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One HTTP/1.1 request to 127.0.0.1:`port`, with `body` as JSON:
/// (status, body).
fn http(port: u16, method: &str, path: &str, body: Option<&Value>) -> (u16, Vec<u8>) {
    let body = body.map(Value::to_string).unwrap_or_default();
    let json = [("Content-Type", "application/json")];
    let answer = Probe { port }.send(method, path, &json, body.as_bytes());
    (answer.status, answer.body)
}

/// A WebDriver session in headless chromium.
struct Browser {
    port: u16,
    session: String,
    _driver: Running,
}

impl Browser {
    /// Chromium with a fresh profile in `profile`, resolving
    /// [`NON_LOOPBACK`] to 127.0.0.1.
    fn start(profile: &Path) -> Browser {
        let port = {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let driver = Running(
            Command::new(CHROMEDRIVER)
                .arg(format!("--port={port}"))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": CHROMIUM,
                "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                         "--disable-dev-shm-usage", "--no-first-run",
                         "--disable-background-networking", "--disable-component-update",
                         "--disable-sync",
                         format!("--user-data-dir={}", profile.display()),
                         format!("--host-resolver-rules=MAP {NON_LOOPBACK} 127.0.0.1")]
            }
        }}});
        let (status, body) = http(port, "POST", "/session", Some(&capabilities));
        let value: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(status, 200, "new session: {value}");
        let session = value["value"]["sessionId"].as_str().unwrap().to_string();
        Browser {
            port,
            session,
            _driver: driver,
        }
    }

    fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Value {
        let path = format!("/session/{}{path}", self.session);
        let (status, body) = http(self.port, method, &path, body);
        let value: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(status, 200, "{method} {path}: {value}");
        value["value"].clone()
    }

    fn go(&self, url: &str) {
        self.call("POST", "/url", Some(&json!({ "url": url })));
    }

    /// Runs `script` (a function body) in the page and returns its value.
    fn execute(&self, script: &str) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            Some(&json!({ "script": script, "args": [] })),
        )
    }

    fn element(&self, css: &str) -> String {
        let found = self.call(
            "POST",
            "/element",
            Some(&json!({"using": "css selector", "value": css})),
        );
        found
            .as_object()
            .and_then(|o| o.values().next())
            .and_then(Value::as_str)
            .unwrap()
            .to_string()
    }

    fn text(&self, element: &str) -> String {
        let text = self.call("GET", &format!("/element/{element}/text"), None);
        text.as_str().unwrap_or_default().to_string()
    }

    /// Types `password` into the page's field, submits, and waits for the
    /// verdict: (its text, its `data-count`).
    fn check(&self, password: &str) -> (String, String) {
        let field = self.element("#password");
        self.call("POST", &format!("/element/{field}/clear"), Some(&json!({})));
        self.call(
            "POST",
            &format!("/element/{field}/value"),
            Some(&json!({ "text": password })),
        );
        let button = self.element("#submit");
        self.call(
            "POST",
            &format!("/element/{button}/click"),
            Some(&json!({})),
        );
        let result = self.element("#result");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let text = self.text(&result);
            if !text.is_empty() && !text.starts_with("Checking") {
                let count = self.call(
                    "GET",
                    &format!("/element/{result}/attribute/data-count"),
                    None,
                );
                return (text, count.as_str().unwrap_or_default().to_string());
            }
            assert!(Instant::now() < deadline, "no verdict for {password:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let path = format!("/session/{}", self.session);
        let _ = http(self.port, "DELETE", &path, None);
    }
}

/// `seekless pwned serve --access-log` on an ephemeral port: (the server,
/// its port).
fn serve(index: &Path, extra: &[&str]) -> (Server, u16) {
    let mut args = vec!["--access-log"];
    args.extend_from_slice(extra);
    let server = Server::start(&[index], &args);
    let port = server.port;
    (server, port)
}

/// Stops the server and returns the paths its access log shows.
fn logged_paths(mut server: Server) -> Vec<String> {
    let _ = server.child.kill();
    let _ = server.child.wait();
    server
        .stderr_text()
        .lines()
        .filter_map(|line| line.split(" path=\"").nth(1))
        .map(|rest| rest.split('"').next().unwrap().to_string())
        .collect()
}

fn hex(kind: Kind, password: &str) -> String {
    let mut out = Vec::new();
    kind.hash_password(password).write_hex(kind, &mut out);
    String::from_utf8(out).unwrap().to_uppercase()
}

/// An index of `kind` holding `listed` passwords with their counts among
/// random hashes, some in the same ranges.
fn index(dir: &Path, kind: Kind, listed: &[(&str, u64)]) -> std::path::PathBuf {
    let mut text = String::new();
    let mut state = 0x1234_5678_u64;
    for (password, count) in listed {
        let full = hex(kind, password);
        text.push_str(&format!("{full}:{count}\n"));
        for i in 0..300u64 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            let mut neighbour = format!("{}{state:016X}{i:08X}{:016X}", &full[..5], state ^ i);
            neighbour.truncate(kind.hex_len());
            if neighbour != full {
                text.push_str(&format!("{neighbour}:{}\n", i + 1));
            }
        }
    }
    let name = format!("{kind}");
    prepare_index(
        &text,
        &dir.join(format!("{name}.txt")),
        &dir.join(format!("{name}.idx")),
    )
}

fn browser_available() -> bool {
    let present = Path::new(CHROMIUM).exists() && Path::new(CHROMEDRIVER).exists();
    if !present && std::env::var_os("SEEKLESS_REQUIRE_CHROMIUM").is_some() {
        panic!("SEEKLESS_REQUIRE_CHROMIUM is set but {CHROMIUM} or {CHROMEDRIVER} is missing");
    }
    if !present {
        eprintln!(
            "skipped: {CHROMIUM} and {CHROMEDRIVER} are needed (apt-get install chromium chromium-driver)"
        );
    }
    present
}

/// Opens the page of the server on `port` by `host`, and asserts where
/// the browser offers WebCrypto: by 127.0.0.1 (a secure context), not by
/// [`NON_LOOPBACK`] over plain HTTP, where the page hashes SHA-1 in its own
/// script.
fn open(browser: &Browser, host: &str, port: u16) {
    let url = format!("http://{host}:{port}/");
    browser.go(&url);
    let seen =
        browser.execute("return [location.href, window.isSecureContext, typeof crypto.subtle];");
    let expected = if host == NON_LOOPBACK {
        json!([url, false, "undefined"])
    } else {
        json!([url, true, "object"])
    };
    assert_eq!(seen, expected, "{host}");
}

#[test]
fn the_page_answers_in_a_real_browser_and_sends_only_prefixes() {
    if !browser_available() {
        return;
    }
    let dir = TempDir::new("cli-check-page");
    let sha1 = index(
        &dir,
        Kind::Sha1,
        &[("password", 9_545_824), ("hunter2", 17), ("letmein", 1)],
    );
    // Non-ASCII and longer than one MD4 block in UTF-16.
    let long = "Pässwort-€-".repeat(4);
    let ntlm = index(&dir, Kind::Ntlm, &[("password", 42), (&long, 3)]);
    let browser = Browser::start(&dir.join("profile"));
    // Each page by both names: SHA-1 by WebCrypto, then by the page's own
    // script; MD4 is the page's own by either.
    let hosts = ["127.0.0.1", NON_LOOPBACK];

    let (server, port) = serve(&sha1, &[]);
    for host in hosts {
        open(&browser, host, port);
        let (text, count) = browser.check("password");
        assert!(text.contains("9,545,824 times"), "{host}: {text}");
        assert_eq!(count, "9545824");
        let (text, count) = browser.check("hunter2");
        assert!(text.contains("17 times"), "{host}: {text}");
        assert_eq!(count, "17");
        let (text, _) = browser.check("letmein");
        assert!(text.contains("seen once"), "{host}: {text}");
        let (text, count) = browser.check("correct horse battery staple 7");
        assert!(text.starts_with("Not found"), "{host}: {text}");
        assert_eq!(count, "0");
    }
    let page_text = browser.text(&browser.element("main"));
    assert!(
        page_text.contains("never leave this browser"),
        "{page_text}"
    );
    let sha1_paths = logged_paths(server);

    // Only an NTLM index: the page hashes with its own MD4.
    let (server, port) = serve(&ntlm, &[]);
    for host in hosts {
        open(&browser, host, port);
        let (text, count) = browser.check("password");
        assert!(text.contains("42 times"), "{host}: {text}");
        assert_eq!(count, "42");
        let (text, count) = browser.check(&long);
        assert!(text.contains("3 times"), "{host}: {text}");
        assert_eq!(count, "3");
        let (text, _) = browser.check("correct horse battery staple 7");
        assert!(text.starts_with("Not found"), "{host}: {text}");
    }
    let ntlm_paths = logged_paths(server);

    // The log: the page, then range requests with 5-digit prefixes only,
    // one per check by each name; neither passwords nor whole hashes.
    for (paths, kind, query, checks) in [
        (&sha1_paths, Kind::Sha1, "", 4),
        (&ntlm_paths, Kind::Ntlm, "?mode=ntlm", 3),
    ] {
        let ranges: Vec<&String> = paths.iter().filter(|p| *p != "/").collect();
        assert_eq!(ranges.len(), checks * hosts.len(), "{paths:?}");
        for path in ranges {
            let prefix = path
                .strip_prefix("/range/")
                .and_then(|p| p.strip_suffix(query))
                .unwrap_or_else(|| panic!("not a range request: {path}"));
            assert!(
                prefix.len() == 5 && prefix.bytes().all(|b| b.is_ascii_hexdigit()),
                "{path}"
            );
        }
        for password in ["password", "hunter2", &long] {
            let full = hex(kind, password);
            assert!(
                !paths
                    .iter()
                    .any(|p| p.contains(&full[..10]) || p.contains(password))
            );
        }
    }
}

#[test]
fn no_page_turns_the_page_off() {
    let dir = TempDir::new("cli-no-page");
    let sha1 = index(&dir, Kind::Sha1, &[("password", 3)]);
    let (_server, port) = serve(&sha1, &[]);
    let (status, body) = http(port, "GET", "/", None);
    assert_eq!(status, 200);
    assert!(String::from_utf8_lossy(&body).contains("<script>"));
    let (_server, port) = serve(&sha1, &["--no-page"]);
    let (status, _) = http(port, "GET", "/", None);
    assert_eq!(status, 404);
    let (status, body) = http(port, "GET", "/range/5BAA6", None);
    assert_eq!(status, 200);
    assert!(String::from_utf8_lossy(&body).contains("1E4C9B93F3F0682250B6CF8331B7EE68FD8:3"));
}
