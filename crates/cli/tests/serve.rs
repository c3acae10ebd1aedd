//! `seekless pwned serve` as a process, over real loopback connections on
//! an ephemeral port: health and signals, access logs, replaced index files,
//! hostile requests (which must never bring the server down), `--listen`,
//! `update` from the server, and flags reaching the library. What the range
//! API answers (every range, format, padding, compression, validators,
//! errors, CORS, NTLM) is tested in process by the pwned crate's
//! tests/api.rs.
#![cfg(feature = "serve")]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use seekless_testkit::{Rng, TempDir};

use crate::common;

use common::serve::{Response, Server, wait_healthy};
use common::{SEEKLESS, announced, prepare_index};

/// A corpus of `hex_len`-digit hashes: many in a few ranges (some sharing
/// more than the prefix), and singletons spread over the space; mixed case.
fn corpus(hex_len: usize, seed: u64) -> String {
    let mut rng = Rng::splitmix64(seed);
    let mut text = String::new();
    let hex = |rng: &mut Rng, prefix: Option<&str>| -> String {
        let mut h = seekless_testkit::hex(rng, hex_len).to_lowercase();
        if let Some(p) = prefix {
            h.replace_range(..p.len(), p);
        }
        h
    };
    for r in 0..40 {
        let prefix = format!("{:05X}", rng.below(1 << 20));
        for i in 0..30 {
            // Some share 8 digits, so the suffixes differ late.
            let p = if i % 3 == 0 {
                format!("{prefix}ABC")
            } else {
                prefix.clone()
            };
            let mut h = hex(&mut rng, Some(&p));
            if (r + i) % 2 == 0 {
                h = h.to_uppercase();
            }
            text.push_str(&format!("{h}:{}\r\n", 1 + rng.below(100_000)));
        }
    }
    // The edges of the space.
    text.push_str(&format!("{}:7\n", "0".repeat(hex_len)));
    text.push_str(&format!("{}:4294967295\n", "F".repeat(hex_len)));
    for _ in 0..300 {
        let h = hex(&mut rng, None);
        text.push_str(&format!("{h}:{}\n", 1 + rng.below(50)));
    }
    text
}

fn prepare(dir: &Path, name: &str, text: &str) -> PathBuf {
    let input = dir.join(format!("{name}.txt"));
    prepare_index(text, &input, &dir.join(format!("{name}.idx")))
}

/// A SHA-1 index of a generated corpus in a fresh directory: (the
/// directory, the index, its ranges as the server must answer them).
fn sha1_index(what: &str, seed: u64) -> (TempDir, PathBuf, BTreeMap<String, Vec<u8>>) {
    let dir = TempDir::new(&format!("cli-{what}"));
    let index = prepare(&dir, "sha1", &corpus(40, seed));
    let expected = expected_ranges(&index);
    (dir, index, expected)
}

/// The expected body of every non-empty range, from `export`.
fn expected_ranges(index: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut ranges: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for line in String::from_utf8(export(index)).unwrap().lines() {
        let body = ranges.entry(line[..5].to_string()).or_default();
        if !body.is_empty() {
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(&line.as_bytes()[5..]);
    }
    ranges
}

/// `--cache-mib` reaches the library's body cache: gzip kept there is
/// compressed harder than an answer made fresh (pinned in process by the
/// pwned crate's tests/api.rs, where the cache itself is tested), so the
/// same request differs in its bytes, not in its text.
#[test]
fn cache_mib_turns_the_body_cache_on() {
    let (_dir, index, expected) = sha1_index("cache", 6);
    let (prefix, body) = expected.iter().max_by_key(|(_, b)| b.len()).unwrap();
    let path = format!("/range/{prefix}");
    let gzip = |server: &Server| {
        let r = server.get(&path, &[("Accept-Encoding", "gzip")]);
        assert_eq!(r.header("content-encoding"), Some("gzip"));
        let mut plain = Vec::new();
        flate2::read::GzDecoder::new(&r.body[..])
            .read_to_end(&mut plain)
            .unwrap();
        assert_eq!(plain, *body);
        r.body
    };
    let fresh = gzip(&Server::start(&[&index], &[]));
    let kept = gzip(&Server::start(&[&index], &["--cache-mib", "1"]));
    assert_ne!(fresh, kept, "--cache-mib 1 left the cache off");
}

/// `-i` given twice: one index of each kind, each answering its mode; two
/// of one kind are refused.
#[test]
fn one_index_of_each_kind() {
    let dir = TempDir::new("cli-ntlm");
    let sha1 = prepare(&dir, "sha1", &corpus(40, 3));
    let ntlm = prepare(&dir, "ntlm", &corpus(32, 4));
    let server = Server::start(&[&ntlm, &sha1], &[]);
    for (index, query) in [(&ntlm, "?mode=ntlm"), (&sha1, "")] {
        let expected = expected_ranges(index);
        let (prefix, body) = expected.iter().next().unwrap();
        let r = server.get(&format!("/range/{prefix}{query}"), &[]);
        assert_eq!((r.status, &r.body), (200, body), "{query}");
    }
    drop(server);
    let out = Command::new(SEEKLESS)
        .args(["pwned", "serve", "--listen", "127.0.0.1:0", "-i"])
        .arg(&sha1)
        .arg("-i")
        .arg(&sha1)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("both SHA-1 indexes"));
}

/// The index file's modification time reaches the library as the answers'
/// `Last-Modified` (revalidation by it is tested in process, in the pwned
/// crate's tests/api.rs).
#[test]
fn last_modified_is_the_index_files_modification_time() {
    let (_dir, index, expected) = sha1_index("modified", 10);
    let modified = std::fs::metadata(&index).unwrap().modified().unwrap();
    let date = httpdate::fmt_http_date(modified);
    let server = Server::start(&[&index], &[]);
    let (prefix, _) = expected.iter().next().unwrap();
    let path = format!("/range/{prefix}");
    assert_eq!(server.get(&path, &[]).header("last-modified"), Some(&*date));
    let r = server.get(&path, &[("If-Modified-Since", &date)]);
    assert_eq!((r.status, r.body.len()), (304, 0));
}

#[test]
fn health_logs_and_graceful_shutdown() {
    let dir = TempDir::new("cli-health");
    let index = prepare(&dir, "sha1", &corpus(40, 8));
    let mut server = Server::start(&[&index], &[]);
    let health = wait_healthy(&server);
    assert_eq!(health.status, 200, "{}", health.text());
    assert!(health.text().contains("ok"));
    server.get("/range/5BAA6", &[]);
    // SIGTERM: the server stops accepting, finishes, and exits 0.
    server.signal("TERM");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            break status;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "no shutdown");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success());
    // Access logs are off by default: nothing but the shutdown note.
    let stderr = server.stderr_text();
    assert!(!stderr.contains("path="), "{stderr}");

    // With --access-log: one logfmt line per request.
    let mut server = Server::start(&[&index], &["--access-log"]);
    server.get("/range/5BAA6", &[]);
    server.get("/nope", &[]);
    server.signal("INT");
    let status = server.child.wait().unwrap();
    assert!(status.success());
    let stderr = server.stderr_text();
    assert!(
        stderr.contains("method=GET path=\"/range/5BAA6\" status=200"),
        "{stderr}"
    );
    assert!(stderr.contains("path=\"/nope\" status=404"), "{stderr}");

    // A damaged index is refused at start with exit status 2.
    let mut bytes = std::fs::read(&index).unwrap();
    let n = bytes.len();
    bytes[n - 1] ^= 0xff;
    let damaged = dir.join("damaged.idx");
    std::fs::write(&damaged, bytes).unwrap();
    let out = Command::new(SEEKLESS)
        .args(["pwned", "serve", "--listen", "127.0.0.1:0", "-i"])
        .arg(&damaged)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn hostile_requests_never_crash_the_server() {
    let (_dir, index, expected) = sha1_index("hostile", 9);
    let (prefix, body) = expected.iter().next().unwrap();
    let good = format!("/range/{prefix}");
    let mut server = Server::start(&[&index], &[]);
    let long_path = format!(
        "GET /range/{} HTTP/1.1\r\nHost: x\r\n\r\n",
        "A".repeat(100_000)
    );
    let huge_header = format!(
        "GET {good} HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        "b".repeat(1 << 20)
    );
    let many_headers: String = (0..2000).map(|i| format!("X-{i}: {i}\r\n")).collect();
    let many_headers = format!("GET {good} HTTP/1.1\r\nHost: x\r\n{many_headers}\r\n");
    let hostile: Vec<Vec<u8>> = vec![
        long_path.into_bytes(),
        huge_header.into_bytes(),
        many_headers.into_bytes(),
        b"GET /range/\xff\xfe\x80\x81\x82 HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        b"GET /range/5BAA6 HTTP/1.1\r\nHost: \xff\xfe\r\nAdd-Padding: \xff\r\n\r\n".to_vec(),
        b"\x00\x01\x02\x03garbage\r\n\r\n".to_vec(),
        b"GET\r\n\r\n".to_vec(),
        b"GET /range/5BAA6 HTTP/9.9\r\n\r\n".to_vec(),
        b"GET /range/5BAA6 HTTP/1.1\r\nContent-Length: -1\r\n\r\n".to_vec(),
        b"GET /range/5BAA6 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\n".to_vec(),
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec(),
        b"GET /range/5BAA6 HTTP/1.1\r\nHost: x\r\n".to_vec(), // never finished
        Vec::new(),
    ];
    for request in &hostile {
        // The answer may be an error status or a closed connection; the
        // server must survive and keep answering.
        let answer = server.raw_then_eof(request);
        if let Ok(bytes) = &answer
            && bytes.len() > 12
        {
            let status = Response::parse(bytes).status;
            assert!(status < 500 || status == 505, "status {status}");
        }
        assert!(
            server.alive(),
            "died on {:?}",
            String::from_utf8_lossy(&request[..request.len().min(60)])
        );
        assert_eq!(server.get(&good, &[]).body, *body);
    }
    // Many connections at once: some idle, some asking.
    let idle: Vec<TcpStream> = (0..200)
        .filter_map(|_| TcpStream::connect(("127.0.0.1", server.port)).ok())
        .collect();
    let port = server.port;
    let workers: Vec<_> = (0..32)
        .map(|t| {
            let good = good.clone();
            std::thread::spawn(move || {
                let mut ok = 0;
                for i in 0..20 {
                    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
                        continue;
                    };
                    stream
                        .set_read_timeout(Some(Duration::from_secs(20)))
                        .unwrap();
                    let path = if (t + i) % 4 == 0 {
                        "/range/zzzzz"
                    } else {
                        &good
                    };
                    let request =
                        format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
                    if stream.write_all(request.as_bytes()).is_err() {
                        continue;
                    }
                    let mut out = Vec::new();
                    if stream.read_to_end(&mut out).is_ok() && out.starts_with(b"HTTP/1.1 ") {
                        ok += 1;
                    }
                }
                ok
            })
        })
        .collect();
    let answered: usize = workers.into_iter().map(|w| w.join().unwrap()).sum();
    assert_eq!(answered, 32 * 20);
    drop(idle);
    assert!(server.alive());
    assert_eq!(server.get(&good, &[]).body, *body);
}

#[test]
fn a_replaced_index_is_served_without_dropping_requests() {
    let (dir, first, old) = sha1_index("reload", 31);
    let second = prepare(&dir, "second", &corpus(40, 32));
    let new = expected_ranges(&second);
    let served = dir.join("served.idx");
    std::fs::copy(&first, &served).unwrap();
    let mut server = Server::start(&[&served], &[]);
    assert_eq!(wait_healthy(&server).status, 200);
    // A prefix whose answer differs between the two indexes.
    let (prefix, body) = new.iter().find(|(p, _)| !old.contains_key(*p)).unwrap();
    let path = format!("/range/{prefix}");
    assert_eq!(server.get(&path, &[]).body, b"");

    // Requests go on, one after another, while the file is replaced: every
    // one is answered, from the old index or the new, and /health stays
    // 200 (the new file is verified while the old one answers), so that a
    // readiness probe never takes a reloading mirror out of service.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let client = {
        let (stop, probe, path, body) = (stop.clone(), server.probe, path.clone(), body.clone());
        std::thread::spawn(move || {
            let mut answered = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let response = probe.get(&path, &[]);
                assert_eq!(response.status, 200, "{}", response.text());
                assert!(response.body.is_empty() || response.body == body);
                let health = probe.get("/health", &[]);
                assert_eq!(health.status, 200, "{}", health.text());
                answered += 1;
            }
            answered
        })
    };
    let replace = |with: &Path| {
        let staged = dir.join("staged.idx");
        std::fs::copy(with, &staged).unwrap();
        std::fs::rename(&staged, &served).unwrap();
    };
    let wait_for = |server: &Server, want: &[u8]| {
        let deadline = Instant::now() + Duration::from_secs(20);
        while server.get(&path, &[]).body != want {
            assert!(Instant::now() < deadline, "the new index was not served");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    replace(&second);
    wait_for(&server, body);
    std::thread::sleep(Duration::from_millis(200));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(client.join().unwrap() > 0);
    assert_eq!(wait_healthy(&server).status, 200);

    // A damaged file, or one of the other kind, is refused: the index
    // served before goes on.
    let mut damaged = std::fs::read(&first).unwrap();
    damaged[4096 + 100] ^= 0x40;
    std::fs::write(dir.join("damaged.idx"), damaged).unwrap();
    replace(&dir.join("damaged.idx"));
    let ntlm = prepare(&dir, "ntlm", &corpus(32, 33));
    std::thread::sleep(Duration::from_millis(2500));
    replace(&ntlm);
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(server.get(&path, &[]).body, *body);
    // SIGHUP: looks at once; the file there now is served.
    replace(&first);
    server.signal("HUP");
    wait_for(&server, b"");
    server.signal("HUP");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(wait_healthy(&server).status, 200);
    server.signal("TERM");
    assert!(server.child.wait().unwrap().success());
    let stderr = server.stderr_text();
    assert_eq!(stderr.matches("now serving the new").count(), 2, "{stderr}");
    assert!(stderr.contains("checksum"), "{stderr}");
    assert!(stderr.contains("it is a NTLM index"), "{stderr}");
    assert!(
        stderr.contains("SIGHUP: no index file was replaced"),
        "{stderr}"
    );
}

/// `seekless pwned update INDEX --base-url URL EXTRA…`.
#[cfg(feature = "update")]
fn update_command(index: &Path, base_url: &str, extra: &[&str]) -> Command {
    let mut command = Command::new(SEEKLESS);
    command
        .args(["pwned", "update"])
        .arg(index)
        .args(["--base-url", base_url])
        .args(extra);
    command
}

/// Runs an update from `server` that must succeed; returns its stdout.
#[cfg(feature = "update")]
fn update(index: &Path, server: &Server, extra: &[&str]) -> String {
    let url = format!("http://127.0.0.1:{}", server.port);
    let out = update_command(index, &url, extra).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The corpus of `index`, as `pwned export` writes it.
fn export(index: &Path) -> Vec<u8> {
    let out = Command::new(SEEKLESS)
        .args(["pwned", "export"])
        .arg(index)
        .output()
        .unwrap();
    assert!(out.status.success());
    out.stdout
}

/// `pwned stats` of `index` says it came from `server`, with a validator for
/// every range.
#[cfg(feature = "update")]
fn assert_sourced_from(index: &Path, server: &Server) {
    let stats = Command::new(SEEKLESS)
        .args(["pwned", "stats"])
        .arg(index)
        .output()
        .unwrap();
    let stats = String::from_utf8(stats.stdout).unwrap();
    assert!(
        stats.contains(&format!("source\thttp://127.0.0.1:{}\n", server.port))
            && stats.contains("validators\t1048576\n"),
        "{stats}"
    );
}

#[cfg(feature = "update")]
/// Whether the update journal at `path` holds its header and one whole
/// record after it (layout in the pwned crate's `journal.rs`: a header of
/// 28 bytes and the URL, whose length is the u16 at byte 10; a record is
/// its payload's length as a u32, the payload and a u32 checksum).
fn holds_a_record(path: &Path) -> bool {
    let Ok(bytes) = std::fs::read(path) else {
        return false;
    };
    let u32_at = |at: usize| {
        let b = bytes.get(at..at + 4)?;
        Some(u32::from_le_bytes(b.try_into().ok()?) as usize)
    };
    let Some(url) = bytes
        .get(10..12)
        .map(|b| usize::from(u16::from_le_bytes([b[0], b[1]])))
    else {
        return false;
    };
    let header = 28 + url;
    u32_at(header).is_some_and(|payload| bytes.len() >= header + 4 + payload + 4)
}

/// `update` from serve, killed once it wrote a checkpoint, then run again:
/// the old index is kept, the rerun goes on from the checkpoint and ends
/// at the served corpus. NTLM (`--ntlm`), SHA-1 beside it on the server.
/// (What `update` does with each range: the pwned crate's tests/update.rs.
/// Each update here is a full pass over the 2^20 ranges: one test.)
#[cfg(feature = "update")]
#[test]
fn a_killed_update_leaves_the_old_index_and_resumes() {
    let (dir, sha1, _) = sha1_index("update-kill", 23);
    let ntlm = prepare(&dir, "ntlm", &corpus(32, 22));
    let server = Server::start(&[&sha1, &ntlm], &[]);
    let index = dir.join("kept.idx");
    std::fs::copy(&ntlm, &index).unwrap();
    let before = common::snapshot(&dir);
    let journal = dir.join(".kept.idx.update-journal");
    let url = format!("http://127.0.0.1:{}", server.port);
    let mut child = update_command(&index, &url, &["--ntlm", "--full"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed once the journal holds a whole checkpoint record. Its size
    // alone does not say so: a record carries a validator for each of its
    // 16,384 ranges (hundreds of KB), and the file grows while it is
    // written, so a kill then tears the only record and the rerun rightly
    // starts over.
    let deadline = Instant::now() + Duration::from_secs(120);
    while !holds_a_record(&journal) {
        assert!(Instant::now() < deadline, "no checkpoint written");
        assert!(child.try_wait().unwrap().is_none(), "still fetching");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let after = common::snapshot(&dir);
    for (path, bytes) in &before {
        assert!(after.get(path) == Some(bytes), "{path:?} unchanged");
    }
    // The rerun goes on from the checkpoint, with every range from serve
    // (--full: none "not modified", none changed), and writes the index's
    // gzip ranges file once it is in place; then nothing else is left
    // beside.
    let stdout = update(&index, &server, &["--ntlm", "--full", "--gzip-ranges"]);
    let sidecar = dir.join("kept.idx.gz-ranges");
    assert!(
        stdout.contains(&format!("wrote {}: ", sidecar.display())),
        "{stdout}"
    );
    assert!(
        stdout.contains("resumed an interrupted update at range"),
        "{stdout}"
    );
    assert!(
        stdout.contains("1048576 ranges checked, 0 changed, 0 not modified"),
        "{stdout}"
    );
    assert!(export(&index) == export(&ntlm), "the served corpus");
    assert_sourced_from(&index, &server);
    let mut names: Vec<PathBuf> = common::snapshot(&dir).into_keys().collect();
    names.sort();
    let mut expected: Vec<PathBuf> = before.into_keys().chain([sidecar]).collect();
    expected.sort();
    assert_eq!(names, expected);
    let verify = Command::new(SEEKLESS)
        .args(["pwned", "verify"])
        .arg(&index)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&verify.stdout);
    assert!(
        verify.status.success() && said.contains("kept.idx.gz-ranges: ok ("),
        "{said}"
    );
    // A server that is not there: an error naming a range, the index kept.
    drop(server);
    let kept = std::fs::read(&index).unwrap();
    let out = update_command(&index, "http://127.0.0.1:9", &["--ntlm", "--tries", "2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("range 00000"), "{stderr}");
    assert_eq!(std::fs::read(&index).unwrap(), kept);
}

#[test]
fn listen_takes_names_and_bare_ports_and_names_what_failed() {
    let dir = TempDir::new("cli-listen");
    let index = prepare(&dir, "sha1", &corpus(40, 9));
    let announce = |listen: &str| {
        let mut child = Command::new(SEEKLESS)
            .args(["pwned", "serve", "--listen", listen, "-i"])
            .arg(&index)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let (_, line) = announced(&mut child);
        let _ = child.kill();
        let _ = child.wait();
        line
    };
    let named = announce("localhost:0");
    assert!(
        named.starts_with("listening on http://127.0.0.1:")
            || named.starts_with("listening on http://[::1]:"),
        "{named}"
    );
    assert!(announce("0").starts_with("listening on http://127.0.0.1:"));
    // A port in use, and a value that is no address: status 2, the
    // address named.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    for (listen, wanted) in [
        (
            port.as_str(),
            format!("cannot listen on {port}: 127.0.0.1:{port}: "),
        ),
        (
            "not:an:address",
            "cannot listen on not:an:address".to_string(),
        ),
    ] {
        let out = Command::new(SEEKLESS)
            .args(["pwned", "serve", "--listen", listen, "-i"])
            .arg(&index)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{listen}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(&wanted), "{listen}: {stderr}");
    }
    drop(taken);
}

/// Range `prefix`'s member in the gzip ranges file at `path`, by the
/// format (docs/format-pwned.md).
fn gzip_member(path: &Path, prefix: &str) -> (usize, Vec<u8>) {
    let bytes = std::fs::read(path).unwrap();
    let i = usize::from_str_radix(prefix, 16).unwrap();
    let offset = |i: usize| {
        let at = 4096 + 8 * i;
        u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize
    };
    (offset(i), bytes[offset(i)..offset(i + 1)].to_vec())
}

/// `pwned gzip-ranges` beside a served index: picked up by the running
/// server, its members sent as written; run again, it keeps the file;
/// `verify` checks it and names a damaged range; `prepare` writes one
/// when asked and rewrites one that is there.
#[test]
fn gzip_ranges_written_served_verified_and_kept_current() {
    let (dir, index, expected) = sha1_index("gzip-ranges", 9);
    let (prefix, body) = expected.iter().max_by_key(|(_, b)| b.len()).unwrap();
    let path = format!("/range/{prefix}");
    let sidecar = dir.join("sha1.idx.gz-ranges");
    let index_arg = index.to_str().unwrap();
    let mut server = Server::start(&[&index], &[]);
    let inflate = |r: &Response| {
        assert_eq!(r.header("content-encoding"), Some("gzip"));
        let mut plain = Vec::new();
        flate2::read::GzDecoder::new(&r.body[..])
            .read_to_end(&mut plain)
            .unwrap();
        plain
    };
    let before = server.get(&path, &[("Accept-Encoding", "gzip")]);
    assert_eq!(inflate(&before), *body);

    let out = common::run(&["pwned", "gzip-ranges", index_arg], b"");
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        said.starts_with(&format!("wrote {}: ", sidecar.display())),
        "{said}"
    );
    let (start, member) = gzip_member(&sidecar, prefix);
    assert_ne!(before.body, member, "compressed as it went, not as level 6");
    let written = std::fs::read(&sidecar).unwrap();
    let again = common::run(&["pwned", "gzip-ranges", index_arg], b"");
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("up to date"),
        "{again:?}"
    );
    assert_eq!(std::fs::read(&sidecar).unwrap(), written, "rewritten");

    // The running server attaches it when it appears (looked for every
    // second).
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = server.get(&path, &[("Accept-Encoding", "gzip")]);
        assert_eq!(inflate(&r), *body);
        if r.body == member {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the gzip ranges file was not picked up"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    server.signal("TERM");
    let _ = server.child.wait();
    let log = server.stderr_text();
    assert!(
        log.contains(&format!("gzip answers from {}", sidecar.display())),
        "{log}"
    );

    let verify = common::run(&["pwned", "verify", index_arg], b"");
    let said = String::from_utf8_lossy(&verify.stdout).to_string();
    assert!(verify.status.success(), "{said}");
    assert!(
        said.contains(&format!("{}: ok (", sidecar.display())),
        "{said}"
    );
    // A byte changed in a member: verify fails, naming the file and range.
    let mut damaged = written.clone();
    damaged[start + member.len() / 2] ^= 0x08;
    std::fs::write(&sidecar, &damaged).unwrap();
    let verify = common::run(&["pwned", "verify", index_arg], b"");
    let said = String::from_utf8_lossy(&verify.stdout).to_string();
    assert_eq!(verify.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&sidecar.display().to_string()) && said.contains(&format!("range {prefix}")),
        "{said}"
    );
    // A server given the damaged file answers gzip right all the same.
    let server = Server::start(&[&index], &[]);
    assert_eq!(
        inflate(&server.get(&path, &[("Accept-Encoding", "gzip")])),
        *body
    );
    drop(server);

    // prepare over the index with another corpus rewrites the file that
    // is there for the new index; --gzip-ranges writes one for a new one.
    let text = corpus(40, 10);
    let input = dir.join("other.txt");
    std::fs::write(&input, &text).unwrap();
    let out = common::run(
        &["pwned", "prepare", input.to_str().unwrap(), "-o", index_arg],
        b"",
    );
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!("wrote {}", sidecar.display())),
        "{out:?}"
    );
    let fresh = dir.join("fresh.idx");
    let out = common::run(
        &[
            "pwned",
            "prepare",
            input.to_str().unwrap(),
            "-o",
            fresh.to_str().unwrap(),
            "--gzip-ranges",
        ],
        b"",
    );
    assert!(out.status.success(), "{out:?}");
    for idx in [&index, &fresh] {
        let verify = common::run(&["pwned", "verify", idx.to_str().unwrap()], b"");
        let said = String::from_utf8_lossy(&verify.stdout).to_string();
        assert!(
            verify.status.success() && said.contains(".gz-ranges: ok ("),
            "{said}"
        );
    }
    let new_expected = expected_ranges(&index);
    let (prefix, body) = new_expected.iter().max_by_key(|(_, b)| b.len()).unwrap();
    let (_, member) = gzip_member(&sidecar, prefix);
    let mut plain = Vec::new();
    flate2::read::GzDecoder::new(&member[..])
        .read_to_end(&mut plain)
        .unwrap();
    assert_eq!(plain, *body);
}
