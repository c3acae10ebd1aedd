//! A fleet of seekless mirrors: `update` against a server on 127.0.0.1 that
//! serves `RangeApi::router()` and `RangeApi::bundles(DIR)` (what `pwned
//! serve --bundles DIR` serves), wrapped by a layer that logs every request
//! and can misbehave on demand.
//!
//! The corpora are small, but an update that goes range by range still asks
//! for all 2^20 ranges (~20-40 s of a test build): only the two tests whose
//! names begin with `walk_all_ranges_` do (scripts/test-emulated.sh skips
//! them under qemu and Wine, where each would take minutes). Where a refused bundle makes update
//! turn to the ranges, the server answers `/range/…` 404 instead, so the
//! update stops at once at range 00000; the log shows the turn, and the
//! index file shows it was left alone.

mod common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use seekless_pwned::test_util::identity;
use seekless_pwned::{
    CheckSummary, Index, Key, Kind, NoUpdateProgress, Proxies, RANGES, RangeApi, Served,
    UpdateOptions, UpdatePath, UpdateSummary, check_upstream, identity_hex, update, write_bundle,
};
use seekless_testkit::TempDir;

type Lines = Vec<(String, u64)>;

/// Three corpora, each made of the one before: some hashes gone, some
/// recounted, some new.
fn corpora() -> [Lines; 3] {
    let a = common::corpus(Kind::Sha1, 400, 3_000, 59);
    let b = evolve(Kind::Sha1, &a, 60);
    let c = evolve(Kind::Sha1, &b, 61);
    [a, b, c]
}

fn evolve(kind: Kind, lines: &[(String, u64)], seed: u64) -> Lines {
    let mut next: Lines = lines
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 13 != 5)
        .map(|(i, (hash, count))| (hash.clone(), count + u64::from(i % 7 == 3)))
        .collect();
    next.extend(common::corpus(kind, 40, 120, seed));
    next
}

/// The corpora A, B and C as index files' bytes, their identities, and a
/// directory to work in.
struct Scene {
    dir: TempDir,
    bytes: [Vec<u8>; 3],
    ids: [[u8; 32]; 3],
}

const A: usize = 0;
const B: usize = 1;
const C: usize = 2;

impl Scene {
    fn new(label: &str) -> Scene {
        let dir = TempDir::new(&format!("pwned-mirror-{label}"));
        let bytes = corpora().map(|lines| common::index_bytes(&lines, 1));
        let ids =
            [0, 1, 2].map(|i| identity(&Index::from_bytes(bytes[i].clone()).unwrap()).unwrap());
        assert!(ids[A] != ids[B] && ids[B] != ids[C] && ids[A] != ids[C]);
        Scene { dir, bytes, ids }
    }

    fn index(&self, at: usize) -> Index {
        Index::from_bytes(self.bytes[at].clone()).unwrap()
    }

    /// The index `at`, verified (so its identity is known) for serving.
    fn served(&self, at: usize) -> Served {
        let served = Served::new(self.index(at), format!("corpus {at}")).unwrap();
        served.verify().unwrap();
        served
    }

    /// A directory under the scene's, made empty.
    fn subdir(&self, name: &str) -> PathBuf {
        let path = self.dir.join(name);
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        path
    }

    /// The bundle that makes `to` of `from`, written into `dir` under the
    /// name `update --bundle-out DIR` gives it.
    fn bundle(&self, dir: &Path, from: usize, to: usize) -> PathBuf {
        let path = dir.join(bundle_name(&self.ids[from], &self.ids[to]));
        write_bundle(&path, Some(&self.index(from)), &self.index(to)).unwrap();
        path
    }

    /// A replica's index file at `at`, alone in a directory of its own.
    fn replica(&self, name: &str, at: usize) -> PathBuf {
        let path = self.subdir(name).join("replica.idx");
        std::fs::write(&path, &self.bytes[at]).unwrap();
        path
    }
}

/// `{first 16 hex digits of from}-{… of to}.bundle`.
fn bundle_name(from: &[u8; 32], to: &[u8; 32]) -> String {
    format!(
        "{}-{}.bundle",
        &identity_hex(from)[..16],
        &identity_hex(to)[..16]
    )
}

fn pairs(index: &Index) -> Vec<(Key, u64)> {
    index.iter().map(Result::unwrap).collect()
}

/// What a bundle request is answered with.
#[derive(Default)]
enum BundleReply {
    /// What `RangeApi::bundles` answers.
    #[default]
    Mirror,
    /// An HTML page with status 200 (a captive portal, a proxy's error).
    Html,
    /// The mirror's answer, its `Content-Length` kept, cut off halfway.
    Truncated,
    /// This file, whatever identity was asked for.
    File(PathBuf),
}

/// How the test server departs from the mirror it wraps.
#[derive(Default)]
struct Tweaks {
    /// `/range/…` answered 404.
    no_ranges: bool,
    /// `/identity` answered 404 (a server that is no seekless mirror).
    no_identity: bool,
    bundles: BundleReply,
    /// Served in place of the index of its kind once the first bundle has
    /// been answered (the mirror moving on while a replica follows it).
    swap: Option<Served>,
}

struct Shared {
    api: RangeApi,
    tweaks: Mutex<Tweaks>,
    /// `METHOD PATH` of every request, in order, but of the requests for
    /// ranges only the first [`LOGGED_RANGES`] since the log was taken.
    log: Mutex<Vec<String>>,
    /// Requests for ranges since the log was taken.
    ranges: AtomicU64,
}

const LOGGED_RANGES: u64 = 1000;

/// The mirror on 127.0.0.1: stopped when dropped.
struct Mirror {
    url: String,
    shared: Arc<Shared>,
    _runtime: tokio::runtime::Runtime,
}

impl Mirror {
    fn start(bundles: &Path, served: Served, tweaks: Tweaks) -> Mirror {
        let api = RangeApi::new();
        api.put(served);
        let shared = Arc::new(Shared {
            api: api.clone(),
            tweaks: Mutex::new(tweaks),
            log: Mutex::new(Vec::new()),
            ranges: AtomicU64::new(0),
        });
        let app: Router = api
            .router()
            .merge(api.bundles(bundles))
            .layer(axum::middleware::from_fn_with_state(shared.clone(), tweak));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        runtime.spawn(async move { axum::serve(listener, app).await });
        Mirror {
            url,
            shared,
            _runtime: runtime,
        }
    }

    /// The requests so far, forgotten.
    fn take_log(&self) -> Vec<String> {
        let mut log = self.shared.log.lock().unwrap();
        self.shared.ranges.store(0, Ordering::Relaxed);
        std::mem::take(&mut *log)
    }

    /// The requests for ranges since the log was taken.
    fn ranges(&self) -> u64 {
        self.shared.ranges.load(Ordering::Relaxed)
    }

    /// Waits until requests stop coming (those an update that failed sent
    /// before it stopped), then forgets them.
    fn settle(&self) {
        loop {
            let seen = self.ranges() + self.shared.log.lock().unwrap().len() as u64;
            std::thread::sleep(Duration::from_millis(100));
            if self.ranges() + self.shared.log.lock().unwrap().len() as u64 == seen {
                break;
            }
        }
        self.take_log();
    }

    fn tweak(&self, change: impl FnOnce(&mut Tweaks)) {
        change(&mut self.shared.tweaks.lock().unwrap());
    }

    fn options(&self) -> UpdateOptions {
        let mut o = UpdateOptions::default();
        o.base_url = self.url.clone();
        o.concurrency = 32;
        o.timeout = Duration::from_secs(10);
        o.tries = 1;
        o.proxies = Proxies::none();
        // The scene's corpora lose hashes from one to the next (a primary
        // rebuilt), which range by range would be suspect: here the
        // upstream really removed them.
        o.accept_removals = true;
        o
    }

    fn update(&self, index: &Path) -> seekless_pwned::Result<UpdateSummary> {
        update(index, &self.options(), &NoUpdateProgress)
    }

    fn update_keeping(&self, index: &Path, out: &Path) -> seekless_pwned::Result<UpdateSummary> {
        let options = {
            let mut o = self.options();
            o.bundle_out = Some(out.to_path_buf());
            o
        };
        update(index, &options, &NoUpdateProgress)
    }

    fn check(&self, index: &Path) -> CheckSummary {
        check_upstream(index, &self.options(), &NoUpdateProgress).unwrap()
    }
}

/// The layer in front of the mirror: logs, then answers as [`Tweaks`] say.
async fn tweak(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    let path = request.uri().path().to_string();
    // Of the requests for ranges (a million in a walk), the first few.
    let range = path.starts_with("/range/");
    if !range || shared.ranges.fetch_add(1, Ordering::Relaxed) < LOGGED_RANGES {
        shared
            .log
            .lock()
            .unwrap()
            .push(format!("{} {path}", request.method()));
    }
    enum Do {
        Pass,
        NotFound,
        Html,
        Truncate,
        File(PathBuf),
    }
    let what = {
        let tweaks = shared.tweaks.lock().unwrap();
        if path.starts_with("/range/") && tweaks.no_ranges
            || path == "/identity" && tweaks.no_identity
        {
            Do::NotFound
        } else if path.starts_with("/bundles/") {
            match &tweaks.bundles {
                BundleReply::Mirror => Do::Pass,
                BundleReply::Html => Do::Html,
                BundleReply::Truncated => Do::Truncate,
                BundleReply::File(file) => Do::File(file.clone()),
            }
        } else {
            Do::Pass
        }
    };
    let response = match what {
        Do::NotFound => (StatusCode::NOT_FOUND, "not here").into_response(),
        Do::Html => (
            [(header::CONTENT_TYPE, "text/html")],
            "<!doctype html><html><body>Sign in to continue</body></html>",
        )
            .into_response(),
        Do::File(file) => std::fs::read(file).unwrap().into_response(),
        Do::Pass => next.run(request).await,
        Do::Truncate => {
            let whole = next.run(request).await;
            assert_eq!(whole.status(), StatusCode::OK);
            let bytes = axum::body::to_bytes(whole.into_body(), usize::MAX)
                .await
                .unwrap();
            let half = bytes.slice(..bytes.len() / 2);
            let cut: [Result<Bytes, std::io::Error>; 2] =
                [Ok(half), Err(std::io::Error::other("cut off"))];
            Response::builder()
                .header(header::CONTENT_LENGTH, bytes.len())
                .body(Body::from_stream(futures_util::stream::iter(cut)))
                .unwrap()
        }
    };
    if path.starts_with("/bundles/") && response.status() == StatusCode::OK {
        let swap = shared.tweaks.lock().unwrap().swap.take();
        if let Some(served) = swap {
            shared.api.put(served);
        }
    }
    response
}

/// What tells that a file was left alone: its bytes, modification time
/// and (on Unix) inode.
#[derive(Debug, PartialEq)]
struct Untouched {
    bytes: Vec<u8>,
    modified: SystemTime,
    inode: u64,
}

impl Untouched {
    fn of(path: &Path) -> Untouched {
        let meta = std::fs::metadata(path).unwrap();
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(&meta);
        #[cfg(not(unix))]
        let inode = 0;
        Untouched {
            bytes: std::fs::read(path).unwrap(),
            modified: meta.modified().unwrap(),
            inode,
        }
    }
}

fn get(hex: &[u8; 32]) -> String {
    format!("GET /bundles/{}", identity_hex(hex))
}

const IDENTITY: &str = "GET /identity";
const RANGE_0: &str = "GET /range/00000";

/// The requests of `log` up to the first range's, with that one (requests
/// for ranges go out many at a time, in any order): what was asked before
/// update turned to the ranges.
fn turned(log: &[String]) -> Vec<&str> {
    let first = log.iter().position(|l| l.starts_with("GET /range/"));
    let mut before: Vec<&str> = log[..first.unwrap_or(log.len())]
        .iter()
        .map(String::as_str)
        .collect();
    if first.is_some() && log.iter().any(|l| l == RANGE_0) {
        before.push(RANGE_0);
    }
    before
}

/// An index at A follows A→B, B→C to the mirror's C; one at B takes B→C
/// alone; once there, a refresh is one request that writes nothing.
#[test]
fn an_index_follows_the_chain_of_bundles_to_the_mirrors_identity() {
    let scene = Scene::new("chain");
    let dir = scene.subdir("bundles");
    let ab = scene.bundle(&dir, A, B);
    let bc = scene.bundle(&dir, B, C);
    let mirror = Mirror::start(&dir, scene.served(C), Tweaks::default());
    let want = pairs(&scene.index(C));

    let replica = scene.replica("from-a", A);
    // A path ending in a separator: the directory is made.
    let kept = scene.dir.join(format!("kept{}", std::path::MAIN_SEPARATOR));
    assert!(!kept.exists());
    let s = mirror.update_keeping(&replica, &kept).unwrap();
    assert_eq!(s.path, UpdatePath::Bundles { count: 2 });
    assert_eq!(
        mirror.take_log(),
        [IDENTITY, &get(&scene.ids[A]), &get(&scene.ids[B]), IDENTITY]
    );
    let index = Index::open(&replica).unwrap();
    assert_eq!(pairs(&index), want);
    assert_eq!(index.recorded_identity(), Some(scene.ids[C]));
    assert_eq!(identity(&index).unwrap(), scene.ids[C]);
    assert_eq!((s.hashes, s.created), (want.len() as u64, false));
    let sizes = |paths: &[&PathBuf]| -> u64 {
        paths
            .iter()
            .map(|p| std::fs::metadata(p).unwrap().len())
            .sum()
    };
    assert_eq!(s.received, sizes(&[&ab, &bc]), "the two bundles' bytes");
    drop(index);
    // The bundles applied are kept under their names, as the mirror has
    // them (this replica can serve them in turn); nothing else is left.
    let mut both = vec![
        bundle_name(&scene.ids[A], &scene.ids[B]),
        bundle_name(&scene.ids[B], &scene.ids[C]),
    ];
    both.sort();
    assert_eq!(seekless_testkit::file_names(&kept), both);
    for original in [&ab, &bc] {
        let copy = kept.join(original.file_name().unwrap());
        assert!(std::fs::read(copy).unwrap() == std::fs::read(original).unwrap());
    }
    assert_eq!(
        seekless_testkit::file_names(replica.parent().unwrap()),
        ["replica.idx"]
    );

    let from_b = scene.replica("from-b", B);
    let s = mirror.update(&from_b).unwrap();
    assert_eq!(s.path, UpdatePath::Bundles { count: 1 });
    assert_eq!(mirror.take_log(), [IDENTITY, &get(&scene.ids[B]), IDENTITY]);
    assert_eq!(pairs(&Index::open(&from_b).unwrap()), want);
    assert_eq!(
        seekless_testkit::file_names(from_b.parent().unwrap()),
        ["replica.idx"]
    );

    // Nothing changed since: one request, nothing written, not even a
    // bundle for --bundle-out.
    let before = Untouched::of(&replica);
    let started = Instant::now();
    let s = mirror.update_keeping(&replica, &kept).unwrap();
    let took = started.elapsed();
    assert_eq!(s.path, UpdatePath::Current);
    assert_eq!(s.hashes, want.len() as u64);
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert_eq!(mirror.take_log(), [IDENTITY]);
    assert_eq!(Untouched::of(&replica), before);
    assert_eq!(seekless_testkit::file_names(&kept).len(), 2);
    assert_eq!(
        seekless_testkit::file_names(replica.parent().unwrap()),
        ["replica.idx"]
    );

    // An index that does not record its identity (one prepare built) is
    // current by the identity computed from its pages.
    let prepared = scene.replica("prepared-c", C);
    assert_eq!(Index::open(&prepared).unwrap().recorded_identity(), None);
    let before = Untouched::of(&prepared);
    assert_eq!(mirror.update(&prepared).unwrap().path, UpdatePath::Current);
    assert_eq!(Untouched::of(&prepared), before);
    mirror.take_log();

    // --check: one request either way.
    let check = mirror.check(&replica);
    assert!(check.current, "{check:?}");
    assert_eq!(check.requests, 1);
    assert_eq!(check.changed, None);
    assert_eq!(check.identity, Some(scene.ids[C]));
    assert_eq!(check.upstream, Some((scene.ids[C], want.len() as u64)));
    let behind = scene.replica("behind", A);
    let before = Untouched::of(&behind);
    let check = mirror.check(&behind);
    assert!(!check.current, "{check:?}");
    assert_eq!((check.requests, check.identity), (1, Some(scene.ids[A])));
    assert_eq!(Untouched::of(&behind), before);
    let check = mirror.check(&scene.dir.join("none.idx"));
    assert!(!check.current && check.identity.is_none(), "{check:?}");
    assert_eq!(mirror.take_log(), [IDENTITY; 3]);
}

/// Of two bundles from the index's identity, the one that makes the index
/// the mirror serves is sent, even when the other is newer.
#[test]
fn of_two_bundles_from_one_identity_the_one_making_the_served_index_is_taken() {
    let scene = Scene::new("choice");
    let dir = scene.subdir("bundles");
    let ac = scene.bundle(&dir, A, C);
    scene.bundle(&dir, B, C);
    let ab = scene.bundle(&dir, A, B);
    let older = SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&ac)
        .unwrap()
        .set_modified(older)
        .unwrap();
    assert!(std::fs::metadata(&ab).unwrap().modified().unwrap() > older);
    let mirror = Mirror::start(&dir, scene.served(C), Tweaks::default());
    let replica = scene.replica("replica", A);
    let s = mirror.update(&replica).unwrap();
    assert_eq!(s.path, UpdatePath::Bundles { count: 1 });
    assert_eq!(s.received, std::fs::metadata(&ac).unwrap().len());
    assert_eq!(mirror.take_log(), [IDENTITY, &get(&scene.ids[A]), IDENTITY]);
    assert_eq!(
        pairs(&Index::open(&replica).unwrap()),
        pairs(&scene.index(C))
    );
}

/// The mirror moves from B to C while a replica at A follows it: the
/// replica ends at C.
#[test]
fn a_mirror_that_moves_on_mid_chain_is_followed_to_its_latest() {
    let scene = Scene::new("moving");
    let dir = scene.subdir("bundles");
    scene.bundle(&dir, A, B);
    scene.bundle(&dir, B, C);
    let tweaks = Tweaks {
        swap: Some(scene.served(C)),
        ..Tweaks::default()
    };
    let mirror = Mirror::start(&dir, scene.served(B), tweaks);
    let replica = scene.replica("replica", A);
    let s = mirror.update(&replica).unwrap();
    assert_eq!(s.path, UpdatePath::Bundles { count: 2 });
    let log = mirror.take_log();
    let bundles: Vec<&String> = log.iter().filter(|l| l.contains("/bundles/")).collect();
    assert_eq!(
        bundles,
        [&get(&scene.ids[A]), &get(&scene.ids[B])],
        "{log:?}"
    );
    let index = Index::open(&replica).unwrap();
    assert_eq!(pairs(&index), pairs(&scene.index(C)));
    assert_eq!(index.recorded_identity(), Some(scene.ids[C]));
}

/// A replica with no index yet takes the bundle from the empty index (the
/// whole corpus) and says it wrote the index; `--bundle-out DIR` on
/// another file system than the index (here tmpfs, where Linux has
/// `/dev/shm`) still gets the bundle applied, renamed into place whole.
#[test]
fn a_new_replica_starts_from_the_bundle_of_the_empty_index() {
    let scene = Scene::new("new-replica");
    let dir = scene.subdir("bundles");
    let whole = dir.join("empty-c.bundle");
    write_bundle(&whole, None, &scene.index(C)).unwrap();
    let empty = seekless_pwned::test_util::BundleReader::new(std::fs::File::open(&whole).unwrap())
        .unwrap()
        .header()
        .old_identity;
    let mirror = Mirror::start(&dir, scene.served(C), Tweaks::default());
    let replica = scene.subdir("replica").join("replica.idx");
    let elsewhere = OtherFileSystem::new(&scene.dir);
    let s = mirror.update_keeping(&replica, elsewhere.path()).unwrap();
    assert_eq!(s.path, UpdatePath::Bundles { count: 1 });
    assert!(s.created, "{s:?}");
    assert_eq!(mirror.take_log(), [IDENTITY, &get(&empty), IDENTITY]);
    let index = Index::open(&replica).unwrap();
    assert_eq!(pairs(&index), pairs(&scene.index(C)));
    assert_eq!(index.recorded_identity(), Some(scene.ids[C]));
    assert_eq!(
        seekless_testkit::file_names(elsewhere.path()),
        [bundle_name(&empty, &scene.ids[C])]
    );
    assert!(
        std::fs::read(elsewhere.path().join(bundle_name(&empty, &scene.ids[C]))).unwrap()
            == std::fs::read(&whole).unwrap()
    );
    assert_eq!(
        seekless_testkit::file_names(replica.parent().unwrap()),
        ["replica.idx"]
    );
}

/// A directory on another file system than `near` where there is one
/// (tmpfs at `/dev/shm` on Linux), else one beside it; removed when
/// dropped.
struct OtherFileSystem(PathBuf);

impl OtherFileSystem {
    fn new(near: &Path) -> OtherFileSystem {
        let path = Self::tmpfs(near).unwrap_or_else(|| {
            eprintln!("no /dev/shm on another file system: --bundle-out DIR beside the index");
            near.join("other")
        });
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        OtherFileSystem(path)
    }

    #[cfg(target_os = "linux")]
    fn tmpfs(near: &Path) -> Option<PathBuf> {
        use std::os::unix::fs::MetadataExt;
        let shm = Path::new("/dev/shm");
        let device = |p: &Path| std::fs::metadata(p).map(|m| m.dev()).ok();
        (device(shm)? != device(near)?).then(|| shm.join(near.file_name().unwrap()))
    }

    #[cfg(not(target_os = "linux"))]
    fn tmpfs(_: &Path) -> Option<PathBuf> {
        None
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for OtherFileSystem {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Every answer that is not the bundle asked for, or no bundle at all, is
/// refused and update turns to the ranges (here answered 404, so it stops
/// at range 00000 with the index as it was and no download left beside).
#[test]
fn refused_bundles_leave_the_index_and_turn_to_the_ranges() {
    let scene = Scene::new("refused");
    let dir = scene.subdir("bundles");
    let ab = scene.bundle(&dir, A, B);
    let bc = scene.bundle(&dir, B, C);
    // A bundle of NTLM indexes, and A→B damaged past its header.
    let ntlm = {
        let lines = common::corpus(Kind::Ntlm, 50, 300, 62);
        let old = Index::from_bytes(common::index_bytes(&lines, 1)).unwrap();
        let new =
            Index::from_bytes(common::index_bytes(&evolve(Kind::Ntlm, &lines, 63), 1)).unwrap();
        let path = scene.dir.join("ntlm.bundle");
        write_bundle(&path, Some(&old), &new).unwrap();
        path
    };
    let damaged = scene.dir.join("damaged.bundle");
    let mut bytes = std::fs::read(&ab).unwrap();
    let at = bytes.len() - 12;
    bytes[at] ^= 0x5a;
    std::fs::write(&damaged, bytes).unwrap();
    let tweaks = Tweaks {
        no_ranges: true,
        ..Tweaks::default()
    };
    let mirror = Mirror::start(&dir, scene.served(C), tweaks);

    let cases: Vec<(&str, BundleReply)> = vec![
        ("an HTML page", BundleReply::Html),
        ("a body cut off", BundleReply::Truncated),
        ("a bundle of NTLM indexes", BundleReply::File(ntlm)),
        ("a bundle from another identity", BundleReply::File(bc)),
        ("a damaged bundle", BundleReply::File(damaged)),
    ];
    for (what, reply) in cases {
        let replica = scene.replica("replica", A);
        let before = Untouched::of(&replica);
        mirror.tweak(|t| t.bundles = reply);
        mirror.settle();
        let e = mirror.update(&replica).unwrap_err();
        assert!(e.to_string().contains("range 00000"), "{what}: {e}");
        let log = mirror.take_log();
        assert_eq!(
            turned(&log),
            [IDENTITY, &get(&scene.ids[A]), RANGE_0],
            "{what}: {log:?}"
        );
        assert_eq!(Untouched::of(&replica), before, "{what}");
        assert!(
            !seekless_testkit::file_names(replica.parent().unwrap())
                .iter()
                .any(|n| n.ends_with(".bundle-download")),
            "{what}: the download removed"
        );
    }

    // An index of another minimum count: no bundle joins the two, none is
    // asked for.
    mirror.tweak(|t| t.bundles = BundleReply::Mirror);
    mirror.settle();
    let subset = scene.subdir("subset").join("replica.idx");
    std::fs::write(&subset, common::index_bytes(&corpora()[A], 100_000)).unwrap();
    let before = Untouched::of(&subset);
    let e = mirror.update(&subset).unwrap_err();
    assert!(e.to_string().contains("range 00000"), "{e}");
    let log = mirror.take_log();
    assert_eq!(turned(&log), [IDENTITY, RANGE_0], "{log:?}");
    assert_eq!(Untouched::of(&subset), before);

    // A server without /identity is asked range by range at once.
    mirror.tweak(|t| t.no_identity = true);
    mirror.settle();
    let replica = scene.replica("replica", A);
    let e = mirror.update(&replica).unwrap_err();
    assert!(e.to_string().contains("range 00000"), "{e}");
    let log = mirror.take_log();
    assert_eq!(turned(&log), [IDENTITY, RANGE_0], "{log:?}");
}

/// `GET /bundles/{identity}`: immutable, a strong and stable ETag, 304,
/// HEAD; 404 and 400; files added later; dot-files passed over; the
/// bundle making the served index first, else the newest.
#[tokio::test]
async fn bundles_are_found_by_identity_and_cached_for_good() {
    let scene = Scene::new("answers");
    let dir = scene.subdir("bundles");
    let api = RangeApi::new();
    api.put(scene.served(C));
    let mut app = api.router().merge(api.bundles(&dir));
    let path = |id: &[u8; 32]| format!("/bundles/{}", identity_hex(id));

    let r = common::get(&mut app, &path(&scene.ids[A]), &[]).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert!(
        r.text().contains(&identity_hex(&scene.ids[A])),
        "{}",
        r.text()
    );
    // Added after the router was made; a file being written (a dot-file)
    // is passed over.
    let ab = scene.bundle(&dir, A, B);
    let hidden = scene.bundle(&scene.dir, B, C);
    std::fs::rename(&hidden, dir.join(".incoming.bundle")).unwrap();
    let r = common::get(&mut app, &path(&scene.ids[A]), &[]).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body == std::fs::read(&ab).unwrap());
    let h = |r: &common::Reply, name: &str| {
        r.headers.get(name).map(|v| v.to_str().unwrap().to_string())
    };
    assert_eq!(
        h(&r, "cache-control").as_deref(),
        Some("public, max-age=31536000, immutable")
    );
    assert_eq!(
        h(&r, "content-type").as_deref(),
        Some("application/octet-stream")
    );
    let etag = h(&r, "etag").unwrap();
    assert!(
        etag.starts_with('"') && etag.ends_with('"') && etag.len() > 2,
        "strong: {etag}"
    );
    assert_eq!(
        common::get(&mut app, &path(&scene.ids[B]), &[])
            .await
            .status,
        StatusCode::NOT_FOUND,
        "dot-files are not served"
    );
    // Stable, and the same for uppercase hex.
    let upper = path(&scene.ids[A])
        .to_uppercase()
        .replace("/BUNDLES/", "/bundles/");
    let again = common::get(&mut app, &upper, &[]).await;
    assert_eq!(again.status, StatusCode::OK);
    assert_eq!(h(&again, "etag"), Some(etag.clone()));
    let r = common::get(&mut app, &path(&scene.ids[A]), &[("if-none-match", &etag)]).await;
    assert_eq!(r.status, StatusCode::NOT_MODIFIED);
    assert!(r.body.is_empty());
    assert_eq!(h(&r, "etag"), Some(etag.clone()));
    let other = format!("\"x\", {etag}");
    let r = common::get(&mut app, &path(&scene.ids[A]), &[("if-none-match", &other)]).await;
    assert_eq!(r.status, StatusCode::NOT_MODIFIED);
    let weak = format!("W/{etag}");
    let r = common::get(&mut app, &path(&scene.ids[A]), &[("if-none-match", &weak)]).await;
    assert_eq!(r.status, StatusCode::NOT_MODIFIED, "compared weakly");
    let r = common::get(
        &mut app,
        &path(&scene.ids[A]),
        &[("if-none-match", "\"x\"")],
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
    let r = common::send(
        &mut app,
        Method::HEAD,
        &path(&scene.ids[A]),
        &[],
        Vec::new(),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body.is_empty());
    assert_eq!(
        h(&r, "content-length"),
        Some(std::fs::metadata(&ab).unwrap().len().to_string())
    );
    assert_eq!(h(&r, "etag"), Some(etag.clone()));
    let r = common::send(
        &mut app,
        Method::POST,
        &path(&scene.ids[A]),
        &[],
        Vec::new(),
    )
    .await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);

    for bad in ["xyz", &"a".repeat(63), &"g".repeat(64), &"a".repeat(65)] {
        let r = common::get(&mut app, &format!("/bundles/{bad}"), &[]).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{bad}");
        assert!(r.text().contains("64 hex digits"), "{}", r.text());
    }

    // Two bundles from A: the newer one while neither makes the served
    // index; the one that does, once it is served, though older.
    api.put(scene.served(B));
    let ac = scene.bundle(&dir, A, C);
    let older = SystemTime::now() - Duration::from_secs(3600);
    let set = |path: &Path, time| {
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(time)
            .unwrap();
    };
    set(&ab, older);
    let r = common::get(&mut app, &path(&scene.ids[A]), &[]).await;
    assert!(r.body == std::fs::read(&ab).unwrap(), "A→B makes B, served");
    let other = Index::from_bytes(common::index_bytes(&corpora()[A][..10], 1)).unwrap();
    let other = Served::new(other, "other").unwrap();
    other.verify().unwrap();
    api.put(other);
    let r = common::get(&mut app, &path(&scene.ids[A]), &[]).await;
    assert!(r.body == std::fs::read(&ac).unwrap(), "the newest, A→C");
    api.put(scene.served(B));
    set(&ab, SystemTime::now() + Duration::from_secs(60));
    set(&ac, older);
    let r = common::get(&mut app, &path(&scene.ids[A]), &[]).await;
    assert!(
        r.body == std::fs::read(&ab).unwrap(),
        "A→B, served and newest"
    );
}

/// No bundle from the index's identity: update goes range by range and
/// still ends at the mirror's corpus, saying why; `--bundle-out DIR/`
/// (made when missing) gets the bundle of what changed.
#[test]
fn walk_all_ranges_when_no_bundle_leads_from_the_index() {
    let scene = Scene::new("no-bundle");
    let dir = scene.subdir("bundles");
    scene.bundle(&dir, B, C);
    let mirror = Mirror::start(&dir, scene.served(C), Tweaks::default());
    let replica = scene.replica("replica", A);
    let out = scene.dir.join(format!("out{}", std::path::MAIN_SEPARATOR));
    assert!(!out.exists());
    let s = mirror.update_keeping(&replica, &out).unwrap();
    let UpdatePath::RangesInstead(why) = &s.path else {
        panic!("{:?}", s.path)
    };
    assert!(
        why.contains(&format!(
            "no bundle from identity {}",
            identity_hex(&scene.ids[A])
        )),
        "{why}"
    );
    assert_eq!(s.checked, RANGES);
    let log = mirror.take_log();
    assert_eq!(
        turned(&log),
        [IDENTITY, &get(&scene.ids[A]), RANGE_0],
        "{:?}",
        &log[..3]
    );
    let index = Index::open(&replica).unwrap();
    assert_eq!(pairs(&index), pairs(&scene.index(C)));
    assert_eq!(index.recorded_identity(), Some(scene.ids[C]));
    let name = bundle_name(&scene.ids[A], &scene.ids[C]);
    assert_eq!(
        seekless_testkit::file_names(&out),
        std::slice::from_ref(&name)
    );
    assert_eq!(s.bundle, Some(out.join(&name)));
    let reader =
        seekless_pwned::test_util::BundleReader::new(std::fs::File::open(out.join(&name)).unwrap())
            .unwrap();
    let header = reader.header();
    assert_eq!(
        (header.old_identity, header.new_identity),
        (scene.ids[A], scene.ids[C])
    );
}

/// `--check` against a server without `/identity`: every range asked,
/// the ranges that differ counted.
#[test]
fn walk_all_ranges_to_check_a_server_that_is_no_mirror() {
    let scene = Scene::new("check-ranges");
    let dir = scene.subdir("bundles");
    let tweaks = Tweaks {
        no_identity: true,
        ..Tweaks::default()
    };
    let mirror = Mirror::start(&dir, scene.served(C), tweaks);
    let replica = scene.replica("replica", B);
    let before = Untouched::of(&replica);
    let check = mirror.check(&replica);
    let (b, c) = (
        common::expected(&scene.index(B)),
        common::expected(&scene.index(C)),
    );
    let differ = b
        .keys()
        .chain(c.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .filter(|prefix| b.get(*prefix) != c.get(*prefix))
        .count();
    assert!(differ > 100, "{differ}");
    assert_eq!(check.changed, Some(differ as u32), "{check:?}");
    assert!(!check.current);
    assert_eq!(check.requests, 1 + u64::from(RANGES));
    assert_eq!(check.identity, Some(scene.ids[B]));
    assert_eq!(check.upstream, None);
    assert!(
        check
            .ranges_because
            .as_deref()
            .is_some_and(|why| why.contains("not a seekless mirror")),
        "{check:?}"
    );
    assert_eq!(Untouched::of(&replica), before);
    assert_eq!(
        seekless_testkit::file_names(replica.parent().unwrap()),
        ["replica.idx"]
    );
    assert_eq!(mirror.ranges(), u64::from(RANGES));
    let log = mirror.take_log();
    assert_eq!(log.len(), 1 + LOGGED_RANGES as usize);
    assert_eq!(log[0], IDENTITY);
}
