//! `update` never takes a broken upstream answer for data (issue 69): an
//! answer that would remove hashes or lower counts is suspect, asked again
//! past caches, and if still so the range keeps what the index had; a
//! stored fault is asked past the cache that holds it. Against a range
//! server on 127.0.0.1 that this test runs, and through a real cache:
//! nginx's `proxy_cache` holding a 502 and an empty 200 in front of it.
//!
//! The nginx test runs where `/usr/sbin/nginx` (or `nginx` on the PATH) is
//! installed, and is skipped elsewhere unless `SEEKLESS_REQUIRE_NGINX=1`
//! (CI installs nginx-light and sets it). Each update asks all 2^20 ranges,
//! so every test starts from an index built from text (no pass) and makes
//! as few updates as it can.
#![cfg(feature = "update")]

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use seekless_pwned::test_util::{Words, build_to_vec};
use seekless_pwned::{
    BuildOptions, ErrorKind, Index, Input, Key, Kind, NoUpdateProgress, Proxies, RANGES,
    UpdateOptions, UpdateSummary, check_upstream, update,
};
use seekless_testkit::{Rng, TempDir};

type Corpus = BTreeMap<Key, u64>;

/// What the server answers for one request, instead of the range.
#[derive(Clone)]
enum Reply {
    /// 200 with this body (and an ETag of its own).
    Body(Vec<u8>),
    /// This status, empty, with these extra header lines.
    Status(u16, &'static str),
    /// 200, the range's gzip cut short (its length as sent), with `Age`.
    TruncatedGzip,
    /// 304 whatever the request.
    NotModified,
    /// The connection closed without an answer.
    Reset,
}

/// `faults(prefix, attempt)`: attempts count from 0 per prefix.
type Faults = dyn Fn(u32, u32) -> Option<Reply> + Send + Sync;

/// What the server saw of one prefix: requests, and those that asked past
/// caches (`hibp-purge-cache` set).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Seen {
    requests: u32,
    past_cache: u32,
}

struct Server {
    port: u16,
    corpus: Arc<RwLock<Corpus>>,
    faults: Arc<RwLock<Arc<Faults>>>,
    seen: Arc<Mutex<HashMap<u32, Seen>>>,
    stop: Arc<AtomicBool>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

impl Server {
    fn start(corpus: Corpus) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let none: Arc<Faults> = Arc::new(|_, _| None);
        let server = Server {
            port: listener.local_addr().unwrap().port(),
            corpus: Arc::new(RwLock::new(corpus)),
            faults: Arc::new(RwLock::new(none)),
            seen: Arc::default(),
            stop: Arc::default(),
        };
        let (c, f, s, stop) = (
            server.corpus.clone(),
            server.faults.clone(),
            server.seen.clone(),
            server.stop.clone(),
        );
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (c, f, s) = (c.clone(), f.clone(), s.clone());
                std::thread::spawn(move || {
                    let _ = serve(stream, &c, &f, &s);
                });
            }
        });
        server
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn misbehave(&self, faults: impl Fn(u32, u32) -> Option<Reply> + Send + Sync + 'static) {
        *self.faults.write().unwrap() = Arc::new(faults);
        self.seen.lock().unwrap().clear();
    }

    fn heal(&self) {
        self.misbehave(|_, _| None);
    }

    fn seen(&self, prefix: u32) -> Seen {
        self.seen
            .lock()
            .unwrap()
            .get(&prefix)
            .copied()
            .unwrap_or_default()
    }
}

fn range_body(corpus: &Corpus, prefix: u32) -> Vec<u8> {
    let first = Words {
        hi: u64::from(prefix) << 44,
        mid: 0,
        lo: 0,
    };
    let mut body = Vec::new();
    for (key, count) in corpus.range(first.key()..) {
        if key.prefix() != prefix {
            break;
        }
        if !body.is_empty() {
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(&key.to_hex(Kind::Sha1).as_bytes()[5..]);
        body.extend_from_slice(format!(":{count}").as_bytes());
    }
    body
}

fn etag(body: &[u8]) -> String {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for &b in body {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("\"{h:016x}-{}\"", body.len())
}

fn gzip(body: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(body).unwrap();
    gz.finish().unwrap()
}

/// As HIBP's answers say: caches key stored answers on these headers.
const CACHED: &str =
    "cache-control: public, max-age=2678400\r\nvary: add-padding, hibp-purge-cache\r\n";

/// One connection, keep-alive: requests of `GET /range/PREFIX`.
fn serve(
    stream: TcpStream,
    corpus: &RwLock<Corpus>,
    faults: &RwLock<Arc<Faults>>,
    seen: &Mutex<HashMap<u32, Seen>>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = std::io::BufWriter::new(stream);
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let path = line.split(' ').nth(1).unwrap_or("").to_string();
        let (mut if_none_match, mut past_cache) = (None, false);
        loop {
            line.clear();
            reader.read_line(&mut line)?;
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            let (name, value) = header.split_once(':').unwrap_or((header, ""));
            match name.to_ascii_lowercase().as_str() {
                "if-none-match" => if_none_match = Some(value.trim().to_string()),
                "hibp-purge-cache" => past_cache = true,
                _ => {}
            }
        }
        let Some(prefix) = path
            .strip_prefix("/range/")
            .and_then(|p| u32::from_str_radix(p, 16).ok())
        else {
            write!(out, "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")?;
            out.flush()?;
            continue;
        };
        let attempt = {
            let mut seen = seen.lock().unwrap();
            let s = seen.entry(prefix).or_default();
            s.requests += 1;
            s.past_cache += u32::from(past_cache);
            s.requests - 1
        };
        let body = range_body(&corpus.read().unwrap(), prefix);
        let fault = faults.read().unwrap().clone()(prefix, attempt);
        let head = |out: &mut dyn Write, body: &[u8], extra: &str| {
            write!(
                out,
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\netag: {}\r\n{CACHED}content-length: {}\r\n{extra}\r\n",
                etag(body),
                body.len()
            )
        };
        match fault {
            None if if_none_match.as_deref() == Some(etag(&body).as_str()) => write!(
                out,
                "HTTP/1.1 304 Not Modified\r\netag: {}\r\n{CACHED}\r\n",
                etag(&body)
            )?,
            None => {
                head(&mut out, &body, "")?;
                out.write_all(&body)?;
            }
            Some(Reply::Body(other)) => {
                head(&mut out, &other, "")?;
                out.write_all(&other)?;
            }
            Some(Reply::Status(code, extra)) => write!(
                out,
                "HTTP/1.1 {code} Fault\r\n{CACHED}content-length: 0\r\n{extra}\r\n"
            )?,
            Some(Reply::TruncatedGzip) => {
                let gz = gzip(&body);
                let cut = &gz[..gz.len() - 6];
                head(&mut out, cut, "content-encoding: gzip\r\nage: 5120\r\n")?;
                out.write_all(cut)?;
            }
            Some(Reply::NotModified) => write!(
                out,
                "HTTP/1.1 304 Not Modified\r\netag: \"stale\"\r\nage: 30\r\n{CACHED}\r\n"
            )?,
            Some(Reply::Reset) => return Ok(()),
        }
        out.flush()?;
    }
}

/// `n` random hashes, and three more (count 5) in each of `full` ranges.
fn corpus(n: usize, seed: u64, full: &[u32]) -> Corpus {
    let mut rng = Rng::splitmix64(seed);
    let mut corpus: Corpus = seekless_testkit::hashes(&mut rng, n, 20, 5000)
        .into_iter()
        .map(|(hash, count)| (Key::from_bytes(&hash), count))
        .collect();
    for &prefix in full {
        for _ in 0..3 {
            corpus.insert(in_range(&mut rng, prefix), 5);
        }
    }
    corpus
}

fn in_range(rng: &mut Rng, prefix: u32) -> Key {
    Words {
        hi: (u64::from(prefix) << 44) | (rng.next_u64() >> 20),
        mid: rng.next_u64(),
        lo: rng.next_u64() as u32,
    }
    .key()
}

/// An index of `corpus` built from text (no validators, as `prepare`
/// makes): every range of its first update is fetched whole.
fn built(dir: &TempDir, corpus: &Corpus) -> PathBuf {
    let mut text = String::new();
    for (key, count) in corpus {
        text.push_str(&format!("{}:{count}\n", key.to_hex(Kind::Sha1)));
    }
    let input = Input::Bytes {
        name: "corpus".into(),
        data: text.into_bytes(),
    };
    let (bytes, _) = build_to_vec(vec![input], &BuildOptions::default()).unwrap();
    let path = dir.join("pwned.idx");
    std::fs::write(&path, bytes).unwrap();
    path
}

fn options(url: &str) -> UpdateOptions {
    let mut o = UpdateOptions::default();
    o.base_url = url.to_string();
    o.concurrency = 32;
    o.timeout = Duration::from_secs(5);
    o.tries = 4;
    o.backoff = Duration::from_millis(5);
    o.proxies = Proxies::none();
    o
}

fn pairs(path: &Path) -> Vec<(Key, u64)> {
    let index = Index::open(path).unwrap();
    index.verify().unwrap();
    index.iter().map(Result::unwrap).collect()
}

fn holds(path: &Path, corpus: &Corpus) -> bool {
    pairs(path) == corpus.iter().map(|(&k, &c)| (k, c)).collect::<Vec<_>>()
}

/// A full run accounts for every range.
fn adds_up(s: &UpdateSummary) {
    assert_eq!(s.checked, RANGES, "{s:?}");
    assert_eq!(
        s.fetched + s.not_modified + s.suspect.len() as u32 + s.failed.len() as u32,
        s.checked,
        "{s:?}"
    );
}

/// The body of `prefix`'s range in `corpus` with its first line changed by
/// `change` (`None`: left out).
fn edited(corpus: &Corpus, prefix: u32, change: impl Fn(&str) -> Option<String>) -> Vec<u8> {
    let body = String::from_utf8(range_body(corpus, prefix)).unwrap();
    let mut lines: Vec<String> = body.split("\r\n").map(str::to_string).collect();
    match change(&lines[0]) {
        Some(line) => lines[0] = line,
        None => drop(lines.remove(0)),
    }
    lines.join("\r\n").into_bytes()
}

fn lowered(line: &str) -> Option<String> {
    let (suffix, count) = line.split_once(':').unwrap();
    Some(format!("{suffix}:{}", count.parse::<u64>().unwrap() - 1))
}

const EMPTY: u32 = 0x11111;
const DROPS: u32 = 0x22222;
const LOWERS: u32 = 0x33333;

/// One refresh against an upstream that answers three ranges with data
/// lost (emptied, one hash dropped, one count lowered: a `200` on every
/// try) and fails five on every try (a stored 502 with `Age`, a cached
/// truncated gzip, a 304 for a range the index has no validator for, a
/// 503, a connection closed without an answer). Suspect answers are asked
/// again past caches, faults past caches where they show one. Each of those
/// ranges keeps what the index had byte for byte and no validator (the
/// next run asks again) and is named; the refresh takes the other ranges;
/// `--check` says the same; the healed upstream's run ends right. (One
/// test, not two: each update asks all 2^20 ranges.)
#[test]
fn answers_that_would_lose_data_or_fail_keep_the_index_and_the_refresh_finishes() {
    let dir = TempDir::new("pwned-update-suspect");
    let faults: [(u32, Reply, u32); 5] = [
        (0x00010, Reply::Status(502, "age: 689562\r\n"), 3),
        (0x00020, Reply::TruncatedGzip, 3),
        (0x00030, Reply::NotModified, 3),
        (0x00040, Reply::Status(503, ""), 0),
        (0x00050, Reply::Reset, 0),
    ];
    let failing: Vec<u32> = faults.iter().map(|f| f.0).collect();
    let suspect = [EMPTY, DROPS, LOWERS];
    let kept: Vec<u32> = suspect.iter().chain(&failing).copied().collect();
    let old = corpus(20_000, 1, &kept);
    let path = built(&dir, &old);
    let range_of = |path: &Path, prefix: u32| {
        let mut range = Vec::new();
        Index::open(path)
            .unwrap()
            .range_into(u64::from(prefix), 20, &mut range)
            .unwrap();
        range
    };
    let before: Vec<_> = kept.iter().map(|&p| range_of(&path, p)).collect();
    let mut served = old.clone();
    // New hashes: one elsewhere (taken), one in a failing range (not).
    served.insert(in_range(&mut Rng::splitmix64(2), 0x44444), 9);
    served.insert(in_range(&mut Rng::splitmix64(5), 0x00020), 4);
    let server = Server::start(served.clone());
    let model = served.clone();
    let replies: HashMap<u32, Reply> = faults.iter().map(|f| (f.0, f.1.clone())).collect();
    server.misbehave(move |prefix, _| match prefix {
        EMPTY => Some(Reply::Body(Vec::new())),
        DROPS => Some(Reply::Body(edited(&model, prefix, |_| None))),
        LOWERS => Some(Reply::Body(edited(&model, prefix, lowered))),
        _ => replies.get(&prefix).cloned(),
    });
    let s = update(&path, &options(&server.url()), &NoUpdateProgress).unwrap();
    adds_up(&s);
    assert_eq!(s.suspect, suspect);
    assert_eq!(s.failed, failing);
    assert_eq!((s.not_modified, s.past_cache), (0, 3));
    assert_eq!((s.added, s.removed, s.counts_changed), (1, 0, 0));
    // Three more tries a fault, two more asks a suspect range.
    assert_eq!(s.retries, 5 * 3 + 3 * 2);
    for prefix in suspect {
        // The first answer, then two asked past caches.
        let want = Seen {
            requests: 3,
            past_cache: 2,
        };
        assert_eq!(server.seen(prefix), want, "{prefix:05X}");
    }
    for (prefix, _, past_cache) in &faults {
        // Every try after the first that showed a cache asked past it.
        let want = Seen {
            requests: 4,
            past_cache: *past_cache,
        };
        assert_eq!(server.seen(*prefix), want, "{prefix:05X}");
    }
    let source = Index::open(&path).unwrap().source().unwrap().unwrap();
    for (prefix, before) in kept.iter().zip(&before) {
        assert_eq!(&range_of(&path, *prefix), before, "{prefix:05X}: kept");
        assert_eq!(source.validator(*prefix), None, "{prefix:05X}");
    }
    assert!(source.validator(0x44444).is_some());
    assert_eq!(pairs(&path).len(), old.len() + 1);

    // `--check` against the same faults: the other ranges not modified,
    // these counted, not current.
    let c = check_upstream(&path, &options(&server.url()), &NoUpdateProgress).unwrap();
    assert_eq!(c.suspect, suspect);
    assert_eq!(c.failed, failing);
    assert_eq!(
        (c.changed, c.not_modified, c.unchanged, c.current),
        (Some(0), RANGES - 8, 0, false)
    );

    // Healed, with a new hash in the range that was emptied: every kept
    // range asked again (no validator), taken.
    served.insert(in_range(&mut Rng::splitmix64(3), EMPTY), 2);
    *server.corpus.write().unwrap() = served.clone();
    server.heal();
    let s = update(&path, &options(&server.url()), &NoUpdateProgress).unwrap();
    adds_up(&s);
    assert!(s.suspect.is_empty() && s.failed.is_empty(), "{s:?}");
    assert_eq!((s.fetched, s.added, s.removed), (8, 2, 0));
    assert!(holds(&path, &served));
}

/// Building a new index, a range that fails every try has nothing to keep:
/// the update stops naming it, resumable, and no index is written; the
/// healed upstream's run goes on from the last checkpoint and ends right.
#[test]
fn a_failing_range_stops_a_fresh_build() {
    let dir = TempDir::new("pwned-update-fresh-fault");
    let served = corpus(5_000, 7, &[0x60000]);
    let path = dir.join("new.idx");
    let server = Server::start(served.clone());
    server.misbehave(|p, _| (p == 0x60000).then_some(Reply::Status(503, "")));
    let e = update(&path, &options(&server.url()), &NoUpdateProgress).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Fetch { .. }), "{e}");
    assert!(e.to_string().contains("60000"), "{e}");
    assert!(!path.exists());
    server.heal();
    let s = update(&path, &options(&server.url()), &NoUpdateProgress).unwrap();
    adds_up(&s);
    assert!(s.created && s.failed.is_empty());
    assert_eq!(s.resumed_from, 0x60000 / (1 << 14) * (1 << 14));
    assert!(holds(&path, &served));
}

/// An upstream that is down fails every range: a refresh stops after 64
/// in a row instead of asking a million times, naming the first, and
/// leaves the index as it was.
#[test]
fn an_upstream_that_is_down_stops_the_refresh_early() {
    let dir = TempDir::new("pwned-update-down");
    let old = corpus(2_000, 8, &[]);
    let path = built(&dir, &old);
    let before = std::fs::read(&path).unwrap();
    let server = Server::start(old);
    server.misbehave(|_, _| Some(Reply::Status(503, "")));
    let mut o = options(&server.url());
    o.tries = 1;
    let e = update(&path, &o, &NoUpdateProgress).unwrap_err();
    let text = e.to_string();
    assert!(
        text.starts_with("range 00000: HTTP 503") && text.contains("so did the 63 ranges after it"),
        "{text}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
    let asked = (0..RANGES).filter(|&p| server.seen(p).requests > 0).count();
    // The run stops at the 64th; the window of concurrent requests and
    // the answers waiting to be taken may have asked a few more.
    assert!((64..1024).contains(&asked), "{asked}");
}

/// nginx, as a child process on 127.0.0.1 with everything under `dir`.
struct Nginx {
    child: Child,
    port: u16,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn nginx_binary() -> Option<PathBuf> {
    let found = ["/usr/sbin/nginx", "/usr/local/sbin/nginx"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .or_else(|| {
            let status = Command::new("nginx")
                .arg("-v")
                .stderr(Stdio::null())
                .status();
            status.is_ok().then(|| PathBuf::from("nginx"))
        });
    if found.is_none() && std::env::var_os("SEEKLESS_REQUIRE_NGINX").is_some() {
        panic!("SEEKLESS_REQUIRE_NGINX is set but nginx is not installed");
    }
    found
}

impl Nginx {
    /// nginx caching every answer (`proxy_cache_valid any`) of the ranges
    /// 00000-0000F from `origin`, passing the others through; it says
    /// `X-Cache` (HIT, MISS) as CDNs do.
    fn start(binary: &Path, dir: &Path, origin: u16) -> Nginx {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let d = dir.display();
        let config = format!(
            "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\n\
             error_log {d}/error.log;\nevents {{ worker_connections 1024; }}\n\
             http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n\
             proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fastcgi;\n\
             uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
             proxy_cache_path {d}/cache keys_zone=ranges:1m;\n\
             upstream origin {{ server 127.0.0.1:{origin}; keepalive 64; }}\n\
             map $uri $pass {{ ~^/range/0000 0; default 1; }}\n\
             server {{\n    listen 127.0.0.1:{port};\n    location / {{\n\
             proxy_pass http://origin;\n      proxy_http_version 1.1;\n\
             proxy_set_header Connection \"\";\n      proxy_cache ranges;\n\
             proxy_cache_valid any 10m;\n      proxy_no_cache $pass;\n\
             proxy_cache_bypass $pass;\n      add_header X-Cache $upstream_cache_status always;\n\
             }}\n  }}\n}}\n"
        );
        std::fs::write(dir.join("nginx.conf"), config).unwrap();
        let child = Command::new(binary)
            .arg("-p")
            .arg(dir)
            .arg("-c")
            .arg(dir.join("nginx.conf"))
            .arg("-e")
            .arg(dir.join("error.log"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut nginx = Nginx { child, port };
        for _ in 0..200 {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return nginx;
            }
            if let Ok(Some(status)) = nginx.child.try_wait() {
                let log = std::fs::read_to_string(dir.join("error.log")).unwrap_or_default();
                panic!("nginx exited ({status}): {log}");
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("nginx did not listen on 127.0.0.1:{port}");
    }

    /// A plain `GET` of `prefix`'s range (no header to get past a cache):
    /// the status line, `X-Cache` and the body length.
    fn get(&self, prefix: u32) -> (String, String, usize) {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        write!(
            stream,
            "GET /range/{prefix:05X} HTTP/1.1\r\nhost: x\r\naccept-encoding: gzip\r\nconnection: close\r\n\r\n"
        )
        .unwrap();
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).unwrap();
        let text = String::from_utf8_lossy(&answer);
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        let status = head.lines().next().unwrap().to_string();
        let cache = head
            .lines()
            .find_map(|l| l.strip_prefix("X-Cache: "))
            .unwrap_or("")
            .to_string();
        (status, cache, body.len())
    }
}

/// Broken answers stored in a real cache (nginx `proxy_cache`) before the
/// update asks: a 502 with `Age`, an empty 200, a truncated gzip, a 200
/// dropping one hash, one lowering a count, a 304 for a range the index
/// has no validator for. The origin answers right from
/// its second request on; the update gets past the stored answers and
/// ends with the right index in one run.
#[test]
fn stored_faults_in_nginx_are_asked_past() {
    let Some(binary) = nginx_binary() else {
        eprintln!("nginx is not installed: skipped");
        return;
    };
    let dir = TempDir::new("pwned-update-nginx");
    let cache_dir = dir.join("nginx");
    std::fs::create_dir_all(&cache_dir).unwrap();
    // nginx started as root runs as nobody where it can (not with
    // master_process off, but the directory does not depend on it).
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&cache_dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let (bad_gateway, empty, truncated, drops, lowers, not_modified) = (1, 2, 3, 4, 5, 6);
    let faulty = [bad_gateway, empty, truncated, drops, lowers, not_modified];
    let served = corpus(5_000, 6, &faulty);
    let path = built(&dir, &served);
    let server = Server::start(served.clone());
    let model = served.clone();
    server.misbehave(move |prefix, attempt| {
        (attempt == 0).then_some(())?;
        Some(match prefix {
            1 => Reply::Status(502, "age: 689562\r\n"),
            2 => Reply::Body(Vec::new()),
            3 => Reply::TruncatedGzip,
            4 => Reply::Body(edited(&model, prefix, |_| None)),
            5 => Reply::Body(edited(&model, prefix, lowered)),
            6 => Reply::NotModified,
            _ => return None,
        })
    });
    let nginx = Nginx::start(&binary, &cache_dir, server.port);
    // The broken answers are stored: asked twice without a way past the
    // cache, the second comes from it.
    for prefix in faulty {
        nginx.get(prefix);
        let (status, cache, len) = nginx.get(prefix);
        assert_eq!(cache, "HIT", "{prefix:05X}: {status}");
        match prefix {
            1 => assert!(status.contains(" 502 "), "{status}"),
            2 => assert_eq!(len, 0),
            6 => assert!(status.contains(" 304 "), "{status}"),
            _ => assert!(status.contains(" 200 "), "{status}"),
        }
        assert_eq!(server.seen(prefix).requests, 1, "{prefix:05X}");
    }
    let url = format!("http://127.0.0.1:{}", nginx.port);
    let s = update(&path, &options(&url), &NoUpdateProgress).unwrap();
    adds_up(&s);
    assert!(s.suspect.is_empty(), "{s:?}");
    assert_eq!((s.added, s.removed, s.counts_changed), (0, 0, 0));
    assert_eq!(s.past_cache, faulty.len() as u32, "{s:?}");
    for prefix in faulty {
        // Past the cache to the origin, once.
        let want = Seen {
            requests: 2,
            past_cache: 1,
        };
        assert_eq!(server.seen(prefix), want, "{prefix:05X}");
    }
    assert!(holds(&path, &served));
}
