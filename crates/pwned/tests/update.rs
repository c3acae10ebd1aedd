//! `update` against a range-API server on 127.0.0.1 that this test runs:
//! full builds, refreshes that fetch only what changed, and injected faults.
//!
//! Every online update asks for all 2^20 ranges (~40 s of a test build on
//! two cores), so each test checks in turn what builds on one index rather
//! than each behaviour building its own: one full SHA-1 update serves the
//! refresh, its bundle and the offline copy; the NTLM build meets the
//! injected faults; the subset's first build is the interrupted one, its
//! last tests `full`.
#![cfg(feature = "update")]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use seekless_pwned::test_util::Words;
use seekless_pwned::{
    ErrorKind, Index, Key, Kind, NoUpdateProgress, Proxies, UpdateOptions, update,
};
use seekless_testkit::{Rng, TempDir};

/// What the server answers for one request.
enum Reply {
    /// 200 with the range's body and ETag (gzip when asked for and set).
    Range { gzip: bool },
    /// 200 with this body instead of the range's.
    Body(Vec<u8>),
    /// This status, with `Retry-After` when given.
    Status(u16, Option<u32>),
    /// Half of the body, then the connection is closed.
    ResetMidBody,
    /// A gzip body cut short (its declared length matches what is sent).
    TruncatedGzip,
    /// Headers and part of the body, then nothing for longer than the
    /// client's timeout.
    Stall,
}

/// The corpus the server serves, which a test can change between updates.
type Corpus = BTreeMap<Key, u64>;

type Faults = dyn Fn(u32, u32) -> Option<Reply> + Send + Sync;

struct Server {
    addr: String,
    corpus: Arc<RwLock<Corpus>>,
    /// Answers with a body (200) given, by prefix.
    bodies: Arc<Mutex<HashMap<u32, u32>>>,
    stop: Arc<AtomicBool>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(self.addr.trim_start_matches("http://"));
    }
}

impl Server {
    /// Serves `corpus` of `kind`; `faults(prefix, attempt)` may replace an
    /// answer (attempts count from 0 per prefix).
    fn start(kind: Kind, corpus: Corpus, faults: Box<Faults>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = format!("http://{}", listener.local_addr().unwrap());
        let corpus = Arc::new(RwLock::new(corpus));
        let bodies = Arc::new(Mutex::new(HashMap::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let faults: Arc<Faults> = Arc::from(faults);
        let attempts = Arc::new(Mutex::new(HashMap::<u32, u32>::new()));
        let (c, b, s) = (corpus.clone(), bodies.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if s.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (c, b, f, a, s) = (
                    c.clone(),
                    b.clone(),
                    faults.clone(),
                    attempts.clone(),
                    s.clone(),
                );
                std::thread::spawn(move || {
                    let _ = serve(kind, stream, &c, &b, &*f, &a, &s);
                });
            }
        });
        Server {
            addr,
            corpus,
            bodies,
            stop,
        }
    }

    fn bodies_served(&self) -> u64 {
        self.bodies
            .lock()
            .unwrap()
            .values()
            .map(|&n| u64::from(n))
            .sum()
    }
}

fn range_body(kind: Kind, corpus: &Corpus, prefix: u32) -> Vec<u8> {
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
        let hex = key.to_hex(kind);
        body.extend_from_slice(&hex.as_bytes()[5..]);
        body.extend_from_slice(format!(":{count}").as_bytes());
    }
    body
}

/// A strong validator from the content: FNV-1a over the body.
fn etag(body: &[u8]) -> String {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for &b in body {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("\"{h:016x}-{}\"", body.len())
}

fn gzip(body: &[u8]) -> Vec<u8> {
    // Most ranges of a test corpus are empty, and a compressor's setup was
    // a seventh of a full update's time: the empty body's gzip (the same
    // bytes every time) is made once.
    static EMPTY: OnceLock<Vec<u8>> = OnceLock::new();
    let compress = |body: &[u8]| {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(body).unwrap();
        gz.finish().unwrap()
    };
    if body.is_empty() {
        return EMPTY.get_or_init(|| compress(b"")).clone();
    }
    compress(body)
}

#[allow(clippy::too_many_arguments)]
fn serve(
    kind: Kind,
    stream: TcpStream,
    corpus: &RwLock<Corpus>,
    bodies: &Mutex<HashMap<u32, u32>>,
    faults: &Faults,
    attempts: &Mutex<HashMap<u32, u32>>,
    stop: &AtomicBool,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = std::io::BufWriter::new(stream.try_clone()?);
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let path = line.split(' ').nth(1).unwrap_or("").to_string();
        let (mut if_none_match, mut accepts_gzip) = (None, false);
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
                "accept-encoding" => accepts_gzip = value.contains("gzip"),
                _ => {}
            }
        }
        let mode_ok = path.ends_with("?mode=ntlm") == (kind == Kind::Ntlm);
        let prefix = path
            .strip_prefix("/range/")
            .and_then(|p| u32::from_str_radix(&p[..5.min(p.len())], 16).ok());
        let Some(prefix) = prefix.filter(|_| mode_ok) else {
            write!(out, "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")?;
            out.flush()?;
            continue;
        };
        let attempt = {
            let mut a = attempts.lock().unwrap();
            let n = a.entry(prefix).or_insert(0);
            *n += 1;
            *n - 1
        };
        let body = range_body(kind, &corpus.read().unwrap(), prefix);
        let tag = etag(&body);
        let reply = faults(prefix, attempt).unwrap_or(Reply::Range {
            gzip: accepts_gzip && prefix % 2 == 0,
        });
        if let Reply::Range { .. } = reply
            && if_none_match.as_deref() == Some(tag.as_str())
        {
            write!(out, "HTTP/1.1 304 Not Modified\r\netag: {tag}\r\n\r\n")?;
            out.flush()?;
            continue;
        }
        let head = |out: &mut dyn Write, len: usize, extra: &str| {
            write!(
                out,
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\netag: {tag}\r\ncontent-length: {len}\r\n{extra}\r\n"
            )
        };
        let counted = !matches!(reply, Reply::Status(..));
        match reply {
            Reply::Range { gzip: true } => {
                let gz = gzip(&body);
                head(&mut out, gz.len(), "content-encoding: gzip\r\n")?;
                out.write_all(&gz)?;
            }
            Reply::Range { gzip: false } => {
                head(&mut out, body.len(), "")?;
                out.write_all(&body)?;
            }
            Reply::Body(other) => {
                head(&mut out, other.len(), "")?;
                out.write_all(&other)?;
            }
            Reply::Status(code, retry_after) => {
                let extra = retry_after.map_or(String::new(), |s| format!("retry-after: {s}\r\n"));
                write!(
                    out,
                    "HTTP/1.1 {code} Fault\r\ncontent-length: 0\r\n{extra}\r\n"
                )?;
            }
            Reply::ResetMidBody => {
                let gz = gzip(&body);
                head(&mut out, gz.len(), "content-encoding: gzip\r\n")?;
                out.write_all(&gz[..gz.len() / 2])?;
                out.flush()?;
                stream.shutdown(Shutdown::Both)?;
                return Ok(());
            }
            Reply::TruncatedGzip => {
                let gz = gzip(&body);
                let cut = &gz[..gz.len() - 6];
                head(&mut out, cut.len(), "content-encoding: gzip\r\n")?;
                out.write_all(cut)?;
            }
            Reply::Stall => {
                head(&mut out, body.len() + 100, "")?;
                out.write_all(&body)?;
                out.flush()?;
                for _ in 0..100 {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
                return Ok(());
            }
        }
        if counted {
            *bodies.lock().unwrap().entry(prefix).or_insert(0) += 1;
        }
        out.flush()?;
    }
}

/// A corpus of `n` random hashes of `kind` with counts.
fn corpus(kind: Kind, n: usize, seed: u64) -> Corpus {
    let hashes = seekless_testkit::hashes(&mut Rng::splitmix64(seed), n, kind.bytes(), 5000);
    hashes
        .into_iter()
        .map(|(hash, count)| (Key::from_bytes(&hash), count))
        .collect()
}

fn options(server: &Server, kind: Kind) -> UpdateOptions {
    let mut o = UpdateOptions::default();
    o.base_url = server.addr.clone();
    o.kind = kind;
    o.concurrency = 32;
    o.timeout = Duration::from_secs(2);
    o.tries = 4;
    o.backoff = Duration::from_millis(5);
    // Whatever proxy the machine's environment names: not for 127.0.0.1.
    o.proxies = Proxies::none();
    o
}

fn assert_holds(path: &Path, corpus: &Corpus) {
    let index = Index::open(path).unwrap();
    index.verify().unwrap();
    let got: Vec<(Key, u64)> = index.iter().map(Result::unwrap).collect();
    let want: Vec<(Key, u64)> = corpus.iter().map(|(&k, &c)| (k, c)).collect();
    assert_eq!(got.len(), want.len());
    assert!(got == want, "the index holds exactly the served corpus");
    // The identity the update recorded is its content's (a run resumed
    // from a checkpoint records none).
    if let Some(recorded) = index.recorded_identity() {
        assert_eq!(
            recorded,
            seekless_pwned::test_util::identity(&index).unwrap()
        );
    }
}

/// Prefixes whose ranges hold at least one hash.
fn prefixes(corpus: &Corpus) -> Vec<u32> {
    let mut v: Vec<u32> = corpus.keys().map(|k| k.prefix()).collect();
    v.dedup();
    v
}

/// What changed from one corpus to another, as an update counts it.
#[derive(Debug, Default)]
struct Changes {
    /// Prefixes whose ranges differ.
    prefixes: BTreeSet<u32>,
    added: u64,
    removed: u64,
    recounted: u64,
}

fn changes(old: &Corpus, new: &Corpus) -> Changes {
    let prefix = |key: &Key| key.prefix();
    let mut c = Changes::default();
    for (key, count) in old {
        match new.get(key) {
            None => c.removed += 1,
            Some(n) if n != count => c.recounted += 1,
            Some(_) => continue,
        }
        c.prefixes.insert(prefix(key));
    }
    for key in new.keys().filter(|k| !old.contains_key(k)) {
        c.added += 1;
        c.prefixes.insert(prefix(key));
    }
    c
}

/// One full update, then what builds on it in turn (each online update a
/// full pass over the 2^20 ranges, so they share the first): a refresh that
/// fetches only what changed and writes the bundle of it, and the bundle
/// applied to an offline copy, which then holds the online index's
/// validators (so a later online refresh of it downloads nothing, as the
/// refresh here shows for the ranges that did not change).
#[test]
fn a_full_update_then_a_refresh_whose_bundle_brings_an_offline_copy_up_to_date() {
    let kind = Kind::Sha1;
    let mut served = corpus(kind, 30_000, 1);
    let server = Server::start(kind, served.clone(), Box::new(|_, _| None));
    let dir = TempDir::new("pwned-update-refresh");
    let online = dir.join("online.idx");

    // A full update: every range fetched once, with its ETag kept.
    let first = update(&online, &options(&server, kind), &NoUpdateProgress).unwrap();
    let full = "the full update";
    assert!(first.created, "{full}: created");
    assert_eq!(
        (first.checked, first.not_modified),
        (1 << 20, 0),
        "{full}: checked, not modified"
    );
    assert_eq!(first.changed, 1 << 20, "{full}: changed");
    assert_eq!(
        (first.hashes, first.added),
        (30_000, 30_000),
        "{full}: hashes, added"
    );
    assert_eq!(first.retries, 0, "{full}: retries");
    assert_holds(&online, &served);
    let source = Index::open(&online).unwrap().source().unwrap().unwrap();
    assert_eq!(source.url, server.addr, "{full}: source URL");
    assert!(source.identity.is_some(), "{full}: the identity recorded");
    assert_eq!(
        source.validators(),
        1 << 20,
        "{full}: every range has its ETag"
    );
    assert_eq!(server.bodies_served(), 1 << 20, "{full}: bodies sent");
    // The offline site's copy, made when both were the same.
    let offline = dir.join("offline.idx");
    std::fs::copy(&online, &offline).unwrap();

    // Between the runs: hashes added to some ranges, removed from others,
    // counts changed in others, one range emptied.
    let old = served.clone();
    let in_use = prefixes(&served);
    let emptied = in_use[7];
    served.retain(|k, _| k.prefix() != emptied);
    let mut rng = Rng::splitmix64(99);
    for i in 0..60 {
        let prefix = in_use[(rng.next_u64() % in_use.len() as u64) as usize];
        let Some(&key) = served.keys().find(|k| k.prefix() == prefix) else {
            continue;
        };
        match i % 3 {
            0 => {
                let mut new = Words::from(key);
                new.lo = new.lo.wrapping_add(1);
                served.insert(new.key(), 7);
            }
            1 => {
                served.remove(&key);
            }
            _ => *served.get_mut(&key).unwrap() += 1,
        }
    }
    let changed = changes(&old, &served);
    assert!(
        changed.added > 0 && changed.removed > 0 && changed.recounted > 0,
        "the corpus changes in every way: {changed:?}"
    );
    *server.corpus.write().unwrap() = served.clone();
    server.bodies.lock().unwrap().clear();

    // A refresh that fetches only the ranges that changed, and writes the
    // bundle of what it changed.
    let before = std::fs::metadata(&online).unwrap().modified().unwrap();
    let bundle = dir.join("changes.bundle");
    let refreshed = update(
        &online,
        &{
            let mut o = options(&server, kind);
            o.bundle_out = Some(bundle.clone());
            // Hashes were removed and an emptied range: not HIBP's way, but
            // this server's (suspect answers: tests/update_suspect.rs).
            o.accept_removals = true;
            o
        },
        &NoUpdateProgress,
    )
    .unwrap();
    let refresh = "the refresh";
    assert!(!refreshed.created, "{refresh}: not created");
    assert!(refreshed.changed > 0, "{refresh}: changed");
    assert_eq!(
        refreshed.changed as usize,
        changed.prefixes.len(),
        "{refresh}: changed"
    );
    assert_eq!(
        refreshed.not_modified as usize,
        (1 << 20) - changed.prefixes.len(),
        "{refresh}: not modified"
    );
    assert_eq!(
        (refreshed.added, refreshed.removed, refreshed.counts_changed),
        (changed.added, changed.removed, changed.recounted),
        "{refresh}: added, removed, counts changed"
    );
    assert_eq!(
        server.bodies_served() as usize,
        changed.prefixes.len(),
        "{refresh}: only changed ranges were sent"
    );
    assert_holds(&online, &served);
    assert_ne!(
        std::fs::metadata(&online).unwrap().modified().unwrap(),
        before,
        "{refresh}: the index was replaced"
    );

    // The bundle applied with no network: exactly what the online index
    // holds, its validators and its source.
    let applied = update(
        &offline,
        &{
            let mut o = UpdateOptions::default();
            o.from_bundle = Some(bundle.clone());
            o.base_url = "http://127.0.0.1:9".into();
            o
        },
        &NoUpdateProgress,
    )
    .unwrap();
    let apply = "the bundle applied offline";
    assert_eq!(applied.changed, refreshed.changed, "{apply}: changed");
    assert_eq!(
        (applied.added, applied.removed, applied.counts_changed),
        (refreshed.added, refreshed.removed, refreshed.counts_changed),
        "{apply}: added, removed, counts changed"
    );
    assert_holds(&offline, &served);
    let (a, b) = (
        Index::open(&online).unwrap(),
        Index::open(&offline).unwrap(),
    );
    assert_eq!(
        a.source().unwrap(),
        b.source().unwrap(),
        "{apply}: the online index's source and validators"
    );
    assert_eq!(
        seekless_pwned::test_util::identity(&a).unwrap(),
        seekless_pwned::test_util::identity(&b).unwrap(),
        "{apply}: the online index's identity"
    );
    drop((a, b));
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "{apply}: left {leftovers:?}");
}

/// Prefixes that get each fault once, then the right answer.
const FAULTS: [(u32, &str); 9] = [
    (0x00010, "429"),
    (0x00020, "503"),
    (0x00030, "reset"),
    (0x00040, "truncated gzip"),
    (0x00050, "garbage"),
    (0x00060, "unsorted"),
    (0x00070, "wrong length"),
    (0x00080, "stall"),
    (0x00090, "huge"),
];

fn fault(kind: Kind, corpus: &Corpus, prefix: u32, name: &str) -> Reply {
    let body = range_body(kind, corpus, prefix);
    let line = |i: usize| body.split(|&b| b == b'\n').nth(i).unwrap().to_vec();
    match name {
        "429" => Reply::Status(429, Some(0)),
        "503" => Reply::Status(503, None),
        "reset" => Reply::ResetMidBody,
        "truncated gzip" => Reply::TruncatedGzip,
        "garbage" => Reply::Body(b"<html>Service Unavailable</html>".to_vec()),
        "unsorted" => {
            let mut b = line(1);
            b.extend_from_slice(b"\n");
            b.extend_from_slice(&line(0));
            Reply::Body(b)
        }
        "wrong length" => Reply::Body(line(0)[1..].to_vec()),
        "stall" => Reply::Stall,
        _ => Reply::Body(vec![b'A'; seekless_pwned::test_util::MAX_RANGE_BODY + 1]),
    }
}

/// A corpus with at least two hashes in every faulty range.
fn faulty_corpus(kind: Kind) -> Corpus {
    with_faulty_ranges(kind, corpus(kind, 5_000, 3))
}

/// `served` with two more hashes in every faulty range.
fn with_faulty_ranges(kind: Kind, mut served: Corpus) -> Corpus {
    let mut rng = Rng::splitmix64(5);
    for (prefix, _) in FAULTS {
        for _ in 0..2 {
            let mut key = Words {
                hi: (u64::from(prefix) << 44) | (rng.next_u64() >> 20),
                mid: rng.next_u64(),
                lo: rng.next_u64() as u32,
            };
            if kind == Kind::Ntlm {
                key.lo = 0;
            }
            served.insert(key.key(), 3);
        }
    }
    served
}

/// An NTLM update that meets each fault of [`FAULTS`] once: retried, never
/// indexed. Then the NTLM index is not refreshed as SHA-1. (What `full`
/// does is tested with the subset's last update.)
#[test]
fn an_ntlm_update_retries_faults_and_is_not_refreshed_as_sha1() {
    let kind = Kind::Ntlm;
    let served = with_faulty_ranges(kind, corpus(kind, 20_000, 2));
    let model = served.clone();
    let server = Server::start(
        kind,
        served.clone(),
        Box::new(move |prefix, attempt| {
            let (_, name) = FAULTS.iter().find(|(p, _)| *p == prefix)?;
            (attempt == 0).then(|| fault(kind, &model, prefix, name))
        }),
    );
    let dir = TempDir::new("pwned-update-ntlm");
    let path = dir.join("ntlm.idx");
    let summary = update(&path, &options(&server, kind), &NoUpdateProgress).unwrap();
    assert_eq!(
        summary.retries,
        FAULTS.len() as u64,
        "each fault retried once"
    );
    assert_eq!(
        summary.hashes,
        served.len() as u64,
        "the NTLM update: hashes"
    );
    assert_holds(&path, &served);
    // An NTLM index is not refreshed as SHA-1: refused before any request.
    let bytes = std::fs::read(&path).unwrap();
    server.bodies.lock().unwrap().clear();
    let e = update(&path, &options(&server, Kind::Sha1), &NoUpdateProgress).unwrap_err();
    let sha1 = "a SHA-1 refresh of the NTLM index";
    assert!(
        matches!(e.kind(), ErrorKind::WrongKind { .. }),
        "{sha1}: {e}"
    );
    assert_eq!(server.bodies_served(), 0, "{sha1}: requests sent");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        bytes,
        "{sha1}: index changed"
    );
}

#[test]
fn a_fault_that_persists_names_the_range_and_keeps_the_old_index() {
    let kind = Kind::Sha1;
    let served = faulty_corpus(kind);
    let dir = TempDir::new("pwned-update-persist");
    let path = dir.join("pwned.idx");
    std::fs::write(&path, b"not touched").unwrap();
    for (prefix, name) in FAULTS {
        let model = served.clone();
        let server = Server::start(
            kind,
            served.clone(),
            Box::new(move |p, _| (p == prefix).then(|| fault(kind, &model, p, name))),
        );
        // An unindexable file in place: opened first, so refused. A fresh
        // path instead, which must stay absent.
        let fresh = dir.join(format!("{prefix:05X}.idx"));
        let e = update(&fresh, &options(&server, kind), &NoUpdateProgress).unwrap_err();
        let text = e.to_string();
        assert!(text.contains(&format!("{prefix:05X}")), "{name}: {text}");
        assert!(!fresh.exists(), "{name}: nothing written");
        // What a rerun would resume from, and nothing else.
        let mut left: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n != "pwned.idx")
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                format!(".{prefix:05X}.idx.update-journal"),
                format!(".{prefix:05X}.idx.update-partial")
            ],
            "{name}"
        );
        for n in left {
            std::fs::remove_file(dir.join(n)).unwrap();
        }
    }
    // A file that is not an index is never replaced.
    let server = Server::start(kind, served.clone(), Box::new(|_, _| None));
    assert!(update(&path, &options(&server, kind), &NoUpdateProgress).is_err());
    assert_eq!(std::fs::read(&path).unwrap(), b"not touched");
}

#[test]
fn a_second_update_of_the_same_index_is_refused() {
    let dir = TempDir::new("pwned-update-locked");
    let path = dir.join("pwned.idx");
    // An update under way holds its partial index locked.
    let held = std::fs::File::create(dir.join(".pwned.idx.update-partial")).unwrap();
    held.try_lock().unwrap();
    let options = {
        let mut o = UpdateOptions::default();
        o.base_url = "http://127.0.0.1:9".into();
        o.tries = 1;
        o.proxies = Proxies::none();
        o
    };
    let e = update(&path, &options, &NoUpdateProgress).unwrap_err();
    assert!(e.to_string().contains("another update"), "{e}");
    assert!(!path.exists());
    assert_eq!(
        std::fs::metadata(dir.join(".pwned.idx.update-partial"))
            .unwrap()
            .len(),
        0
    );
    // Once it is gone, the next one runs (and here fails to connect).
    drop(held);
    let e = update(&path, &options, &NoUpdateProgress).unwrap_err();
    assert!(e.to_string().contains("range 00000"), "{e}");
}

/// The hashes of `corpus` seen at least `min` times.
fn at_least(corpus: &Corpus, min: u64) -> Corpus {
    corpus
        .iter()
        .filter(|&(_, &count)| count >= min)
        .map(|(&key, &count)| (key, count))
        .collect()
}

/// A subset built from nothing, interrupted and resumed from its last
/// checkpoint; then refreshed with its minimum raised, refused lower, and
/// rebuilt whole with `full`. (One test: each step builds on the index the
/// one before left, and each update is a full pass over the 2^20 ranges.)
#[test]
fn an_interrupted_subset_build_resumes_then_stays_a_subset_and_its_minimum_moves_up_not_down() {
    let kind = Kind::Sha1;
    // Counts from 1 to 5,000: a minimum of 2,500 keeps about half.
    let mut served = corpus(kind, 20_000, 13);
    // Range 09000 fails until the fault is mended: two checkpoints
    // (after 04000 and 08000) are written before it.
    let broken = Arc::new(AtomicBool::new(true));
    let fault = broken.clone();
    let server = Server::start(
        kind,
        served.clone(),
        Box::new(move |prefix, _| {
            (prefix == 0x09000 && fault.load(Ordering::Relaxed)).then_some(Reply::Status(404, None))
        }),
    );
    let dir = TempDir::new("pwned-update-subset");
    let path = dir.join("top.idx");
    let subset = |min_count| {
        let mut o = options(&server, kind);
        o.min_count = Some(min_count);
        // A count falls between the runs: not HIBP's way, but this
        // server's (suspect answers: tests/update_suspect.rs).
        o.accept_removals = true;
        o
    };
    let e = update(&path, &subset(2500), &NoUpdateProgress).unwrap_err();
    let interrupted = "the interrupted update";
    assert!(e.to_string().contains("09000"), "{interrupted}: {e}");
    assert!(!path.exists(), "{interrupted}: no index");
    broken.store(false, Ordering::Relaxed);
    server.bodies.lock().unwrap().clear();
    let first = update(&path, &subset(2500), &NoUpdateProgress).unwrap();
    let resumed = "the update resumed";
    assert_eq!(first.resumed_from, 0x8000, "{resumed}: from the checkpoint");
    assert_eq!(
        Index::open(&path).unwrap().recorded_identity(),
        None,
        "{resumed}: the ranges before the checkpoint were not digested"
    );
    assert_eq!(first.checked, 1 << 20, "{resumed}: checked");
    // (Requests of the first run still in flight when it stopped may be
    // answered after the count was cleared: counted per prefix.)
    let bodies = server.bodies.lock().unwrap().clone();
    assert!(
        bodies.keys().all(|&p| p >= 0x8000),
        "{resumed}: ranges before the checkpoint are not fetched again"
    );
    assert_eq!(
        bodies.len(),
        (1 << 20) - 0x8000,
        "{resumed}: all the others are"
    );
    let kept = at_least(&served, 2500);
    assert!(kept.len() > 8_000 && kept.len() < 12_000, "{}", kept.len());
    assert_eq!(
        (first.hashes, first.added),
        (kept.len() as u64, kept.len() as u64),
        "{resumed}: hashes, added"
    );
    assert_eq!(first.min_count, 2500, "{resumed}: the subset's minimum");
    assert_holds(&path, &kept);
    let index = Index::open(&path).unwrap();
    assert_eq!((index.stats().version, index.stats().min_count), (5, 2500));
    let (below, _) = served.iter().find(|&(_, &c)| c < 2500).unwrap();
    assert_eq!(index.count(*below).unwrap(), 0);
    assert_eq!(
        index.source().unwrap().unwrap().validators(),
        1 << 20,
        "{resumed}: every range has its ETag"
    );
    drop(index);
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(
        left.len(),
        1,
        "{resumed}: journal and partial index are gone"
    );

    // Between the runs: a hash rises past the new minimum, one falls below
    // the old, one is added above the new and one between the two.
    let before = served.clone();
    let old = at_least(&served, 2500);
    let pick = |skip: usize, above: u64| {
        let mut keys = served.iter().filter(|&(_, &c)| c >= above);
        *keys.nth(skip).unwrap().0
    };
    let rises = *served.iter().filter(|&(_, &c)| c < 2500).nth(10).unwrap().0;
    let falls = pick(20, 4000);
    let (mut new_above, mut new_between) =
        (Words::from(pick(30, 4000)), Words::from(pick(40, 4000)));
    served.insert(rises, 4000);
    served.insert(falls, 2499);
    new_above.lo ^= 1;
    new_between.lo ^= 1;
    served.insert(new_above.key(), 4000);
    served.insert(new_between.key(), 3999);
    *server.corpus.write().unwrap() = served.clone();
    server.bodies.lock().unwrap().clear();

    // Raised in a refresh: the ranges that changed are fetched and the
    // unchanged ones copied and filtered. (That a refresh without a minimum
    // keeps the index's is the unit test of `min_count`.)
    let raised = update(&path, &subset(4000), &NoUpdateProgress).unwrap();
    let kept = at_least(&served, 4000);
    let changed = changes(&old, &kept);
    assert_eq!(
        changes(&before, &served).prefixes.len(),
        4,
        "four ranges changed"
    );
    assert_eq!(
        server.bodies_served(),
        4,
        "raised: only the changed ranges sent"
    );
    assert_eq!(raised.not_modified, (1 << 20) - 4, "raised: not modified");
    assert_eq!(
        (raised.added, raised.removed, raised.counts_changed),
        (changed.added, changed.removed, changed.recounted),
        "raised: added, removed, counts changed"
    );
    assert!(
        changed.removed > 100,
        "raised: hashes below 4,000 filtered out"
    );
    assert_eq!(raised.min_count, 4000, "raised: the new minimum");
    assert_holds(&path, &kept);
    assert_eq!(Index::open(&path).unwrap().stats().min_count, 4000);
    server.bodies.lock().unwrap().clear();

    // Lowered: the index lacks what it left out, so only --full will do;
    // refused before any request, the index untouched.
    let before = std::fs::read(&path).unwrap();
    for lower in [subset(100), {
        let mut o = subset(5000);
        o.bundle_out = Some(dir.join("changes.bundle"));
        o
    }] {
        let e = update(&path, &lower, &NoUpdateProgress).unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::MinCount { index: 4000, .. }),
            "{e}"
        );
        assert_eq!(server.bodies_served(), 0);
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }
    let e = update(&path, &subset(100), &NoUpdateProgress).unwrap_err();
    assert!(e.to_string().contains("--full"), "{e}");
    let full = {
        let mut o = subset(1);
        o.full = true;
        o
    };
    let whole = update(&path, &full, &NoUpdateProgress).unwrap();
    assert_eq!(whole.hashes, served.len() as u64);
    // `full` ignores the stored validators: every range is sent again and
    // none is "not modified"; changed are only the ranges whose content
    // differs (here those holding hashes below the old minimum).
    assert_eq!(
        server.bodies_served(),
        1 << 20,
        "full: every range is sent again"
    );
    let lowered = changes(&at_least(&served, 4000), &served);
    assert_eq!(
        (whole.not_modified, whole.changed as usize),
        (0, lowered.prefixes.len()),
        "full: not modified, changed"
    );
    assert_eq!(
        (whole.added, whole.removed, whole.counts_changed),
        (lowered.added, 0, 0),
        "full: added, removed, counts changed"
    );
    assert_holds(&path, &served);
    let index = Index::open(&path).unwrap();
    assert_eq!((index.stats().version, index.stats().min_count), (3, 1));
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(left.len(), 1, "only the index");
}
