//! `--mirror`: the mirror fleet of issue #59. Replicas refresh from a
//! primary `pwned serve --bundles DIR` on 127.0.0.1, side by side with the
//! per-range refresh of the same change, medians of [`RUNS`] runs in turn:
//!
//! - nothing changed: update asks `/identity` and stops (target ≤ 1 s);
//! - 1% of the ranges changed: update downloads the one bundle from the
//!   replica's identity and applies it (target ≤ 0.5× the per-range
//!   refresh of the same change, downloading ≤ 1.05× the bundle's bytes),
//!   beside the same bundle applied from a file (`update --from-bundle`:
//!   what of that time is not the network's);
//! - two replicas through nginx `proxy_cache` in front of the primary: the
//!   second gets the bundle from the cache (target: the primary answers one
//!   bundle request for the two).
//!
//! The per-range anchors need a replica the primary has no bundle for, so
//! that update goes range by range exactly as it did before mirrors (one
//! `/identity` and one `/bundles/…` answered 404 first):
//! - for 1% changed, the same primary with its bundle moved out of DIR;
//! - for nothing changed, a replica one range behind: no replica at the
//!   primary's identity refreshes range by range any more, so the anchor
//!   is the old index against a primary serving it with one range changed
//!   (1,048,575 revalidations answered 304 and one range fetched: today's
//!   refresh with nothing changed, plus one range).
//!
//! Every replica starts as `update` makes one (its identity and every
//! range's validator recorded): a full update from a primary serving the
//! old index, copied afresh (and synced) before each run. After each
//! refresh the replica must hold the primary's identity (`pwned stats`)
//! and the same pairs as the primary's index.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use seekless_pwned::{Index, RANGES};

use super::{CHANGED, Measured, ONE_RANGE, Server, generate, get, measure, median};

/// Runs of each refresh; figures are their medians.
const RUNS: usize = 3;

/// The path as an argument.
fn arg(path: &Path) -> &str {
    path.to_str().unwrap()
}

pub(super) fn run(bin: &Path, data: &Path, per_range: usize) {
    let b = bin.to_str().unwrap();
    let served = data.join(format!("update-{per_range}.idx"));
    let changed = data.join(format!("update-{per_range}-changed.idx"));
    let ahead = data.join(format!("update-{per_range}-one-range.idx"));
    generate(&served, per_range, 0);
    generate(&changed, per_range, CHANGED);
    generate(&ahead, per_range, ONE_RANGE);
    let work = data.join("mirror-work");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    println!("load average at the start: {}", load());

    // The replicas' starting point, as update makes a replica.
    let old = work.join("replica-old.idx");
    {
        let server = Server::start(bin, &served, free_port(), &[]);
        let identity = served_identity(server.1);
        let (m, _) = measure(
            &[b, "pwned", "update", arg(&old), "--base-url", &server.url()],
            None,
        );
        println!(
            "replica made by a full update from a primary serving the old index: {:.1} s wall",
            m.wall
        );
        check_replica(b, &old, &served, &identity);
    }

    // The primary: the changed index, and in its --bundles DIR the bundle
    // from the old one.
    let bundles = work.join("bundles");
    std::fs::create_dir_all(&bundles).unwrap();
    let bundle = bundles.join("old-changed.bundle");
    let aside = work.join("aside.bundle");
    let (_, out) = measure(
        &[
            b,
            "pwned",
            "diff",
            arg(&served),
            arg(&changed),
            "-o",
            arg(&bundle),
        ],
        None,
    );
    print!("{out}");
    let bundle_bytes = std::fs::metadata(&bundle).unwrap().len();
    let primary = Server::start(bin, &changed, free_port(), &["--bundles", arg(&bundles)]);
    let primary_identity = served_identity(primary.1);
    // The anchor of "nothing changed": the old index, one range changed.
    let one_ahead = Server::start(bin, &ahead, free_port(), &[]);
    let ahead_identity = served_identity(one_ahead.1);

    let replica = work.join("replica.idx");
    let update = |url: &str| {
        let load_before = load();
        let (m, out) = measure(
            &[b, "pwned", "update", arg(&replica), "--base-url", url],
            None,
        );
        (m, out, format!("{load_before} -> {}", load()))
    };
    let mut runs: [Vec<(Measured, String)>; 5] = Default::default();
    let (mut downloaded, mut sent) = (Vec::new(), Vec::new());
    let mut shown = Vec::new();
    for round in 0..RUNS {
        // 1% changed, through the bundle.
        fresh_copy(&old, &replica);
        let before = Metrics::of(primary.1);
        let (m, out, loads) = update(&primary.url());
        let after = Metrics::of(primary.1);
        assert!(out.contains(": 1 delta bundle from the mirror"), "{out}");
        assert_eq!(after.bundles - before.bundles, 1, "one bundle request");
        check_replica(b, &replica, &changed, &primary_identity);
        downloaded.push(number_before(&out, " bytes downloaded"));
        // The first scrape's own body is counted by the second.
        sent.push(after.body_bytes - before.body_bytes - before.length);
        runs[0].push((m, loads));
        if round == 0 {
            shown.push(out);
        }

        // Nothing changed: the replica just brought to the primary's identity.
        let written = std::fs::metadata(&replica).unwrap().modified().unwrap();
        let (m, out, loads) = update(&primary.url());
        assert!(out.contains(" is current: "), "{out}");
        let now = std::fs::metadata(&replica).unwrap().modified().unwrap();
        assert_eq!(written, now, "nothing written");
        check_identity(b, &replica, &primary_identity);
        runs[1].push((m, loads));
        if round == 0 {
            shown.push(out);
        }

        // The same bundle applied from a file: what of the bundle path is
        // not the network's.
        fresh_copy(&old, &replica);
        let load_before = load();
        let (m, _) = measure(
            &[
                b,
                "pwned",
                "update",
                arg(&replica),
                "--from-bundle",
                arg(&bundle),
            ],
            None,
        );
        check_identity(b, &replica, &primary_identity);
        runs[4].push((m, format!("{load_before} -> {}", load())));

        // 1% changed, range by range: the same primary without its bundle.
        fresh_copy(&old, &replica);
        std::fs::rename(&bundle, &aside).unwrap();
        let (m, out, loads) = update(&primary.url());
        std::fs::rename(&aside, &bundle).unwrap();
        assert!(
            out.contains("range by range: the mirror holds no bundle"),
            "{out}"
        );
        check_replica(b, &replica, &changed, &primary_identity);
        runs[2].push((m, loads));
        if round == 0 {
            shown.push(out);
        }

        // Nothing changed, range by range: one range behind.
        fresh_copy(&old, &replica);
        let (m, out, loads) = update(&one_ahead.url());
        assert!(
            out.contains("range by range") && out.contains(", 1 changed,"),
            "{out}"
        );
        check_replica(b, &replica, &ahead, &ahead_identity);
        runs[3].push((m, loads));
        if round == 0 {
            shown.push(out);
        }
    }
    drop(one_ahead);
    let _ = std::fs::remove_file(&replica);

    // Two replicas through a caching proxy in front of the primary.
    let proxied = Nginx::start(primary.1, &work.join("nginx")).map(|proxy| {
        let before = Metrics::of(primary.1);
        let mut walls = Vec::new();
        for name in ["replica-a.idx", "replica-b.idx"] {
            let r = work.join(name);
            fresh_copy(&old, &r);
            let (m, out) = measure(
                &[b, "pwned", "update", arg(&r), "--base-url", &proxy.url()],
                None,
            );
            assert!(out.contains(": 1 delta bundle from the mirror"), "{out}");
            check_replica(b, &r, &changed, &primary_identity);
            std::fs::remove_file(&r).unwrap();
            walls.push(m.wall);
        }
        let after = Metrics::of(primary.1);
        (walls, after.bundles - before.bundles, proxy.bundle_log())
    });
    drop(primary);
    let _ = std::fs::remove_dir_all(&work);

    for out in &shown {
        print!("{out}");
    }
    let hashes = Index::open(&changed).unwrap().len();
    println!();
    println!(
        "mirror fleet: {hashes} hashes ({per_range} a range), primary and replicas on 127.0.0.1; \
         medians of {RUNS} runs in turn; load average before -> after each run in []"
    );
    println!(
        "{:<58} {:>8} {:>7} {:>8}  runs (wall s)",
        "", "wall s", "CPU s", "RSS MiB"
    );
    let names = [
        "refresh, 1% changed: its bundle from the mirror",
        "refresh, nothing changed: /identity, nothing fetched",
        "  per range: 1% changed, the primary without its bundle",
        "  per range: nothing changed (one range behind)",
        "  the same bundle from a file (update --from-bundle)",
    ];
    let medians: Vec<Measured> = runs
        .iter()
        .zip(names)
        .map(|(runs, name)| {
            let m = median(runs.iter().map(|(m, _)| *m).collect());
            let each: Vec<String> = runs
                .iter()
                .map(|(m, loads)| format!("{:.2} [{loads}]", m.wall))
                .collect();
            println!(
                "{name:<58} {:>8.2} {:>7.2} {:>8.0}  {}",
                m.wall,
                m.cpu,
                m.rss_mib,
                each.join(", ")
            );
            m
        })
        .collect();
    let verdict = |met: bool| if met { "met" } else { "NOT met" };
    println!(
        "nothing changed: {:.3} s wall (target <= 1 s: {}); range by range {:.1} s ({:.0}x as long)",
        medians[1].wall,
        verdict(medians[1].wall <= 1.0),
        medians[3].wall,
        medians[3].wall / medians[1].wall
    );
    let ratio = medians[0].wall / medians[2].wall;
    println!(
        "1% changed: bundle {:.2} s against range by range {:.2} s: {ratio:.3}x (target <= 0.5x: {})",
        medians[0].wall,
        medians[2].wall,
        verdict(ratio <= 0.5)
    );
    println!(
        "of the bundle path's {:.2} s, applying the bundle from a file takes {:.2} s; the rest \
         ({:.2} s) is /identity asked twice, the download and its header read",
        medians[0].wall,
        medians[4].wall,
        medians[0].wall - medians[4].wall
    );
    let (sent, downloaded) = (median_u64(sent), median_u64(downloaded));
    let over = sent as f64 / bundle_bytes as f64;
    println!(
        "downloaded: the primary sent {sent} body bytes a refresh (/identity twice, the bundle once), \
         update counted {downloaded} bundle bytes; the bundle file is {bundle_bytes} bytes: {over:.5}x \
         (target <= 1.05x: {})",
        verdict(over <= 1.05)
    );
    match proxied {
        Some((walls, asked, log)) => {
            println!(
                "through nginx proxy_cache: replica A {:.2} s, replica B {:.2} s wall; the primary \
                 answered {asked} bundle request(s) for the two (target 1: {}); nginx's log of \
                 /bundles/: {}",
                walls[0],
                walls[1],
                verdict(asked == 1),
                log.join("; ")
            );
        }
        None => {
            println!("nginx not found (apt-get install nginx): the caching-proxy case is skipped")
        }
    }
    println!(
        "the per-range anchors: update goes range by range only when the primary has no bundle \
         from the replica's identity; for 1% changed the bundle was moved out of --bundles DIR, \
         for nothing changed the replica was one range behind ({} of {RANGES} ranges unchanged)",
        RANGES - 1
    );
}

/// The first three fields of /proc/loadavg.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// A port free on 127.0.0.1 now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The identity of the SHA-1 index served on `port`, once known (an index
/// that does not record it has it computed after its verification).
fn served_identity(port: u16) -> String {
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let (status, body) = get(port, "/identity").expect("an answer from /identity");
        assert_eq!(status, 200, "/identity");
        let doc: serde_json::Value = serde_json::from_slice(&body).unwrap();
        if let Some(hex) = doc["sha1"]["identity"].as_str() {
            return hex.to_string();
        }
        assert!(Instant::now() < deadline, "no identity on {port}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `to` as a fresh copy of `from`, on disk before anything is timed.
fn fresh_copy(from: &Path, to: &Path) {
    let _ = std::fs::remove_file(to);
    std::fs::copy(from, to).unwrap();
    std::fs::File::open(to).unwrap().sync_all().unwrap();
}

/// The replica holds `identity` (as `pwned stats` prints it) and the same
/// pairs as `want`.
fn check_replica(b: &str, replica: &Path, want: &Path, identity: &str) {
    check_identity(b, replica, identity);
    let (ours, theirs) = (Index::open(replica).unwrap(), Index::open(want).unwrap());
    assert_eq!(ours.len(), theirs.len(), "{}: hashes", replica.display());
    let mut pairs = ours.iter().zip(theirs.iter());
    assert!(
        pairs.all(|(a, b)| a.unwrap() == b.unwrap()),
        "{}: pairs differ from {}",
        replica.display(),
        want.display()
    );
}

/// `pwned stats` prints `identity\t{identity}` for the replica.
fn check_identity(b: &str, replica: &Path, identity: &str) {
    let out = Command::new(b)
        .args(["pwned", "stats"])
        .arg(replica)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let found = text.lines().find_map(|l| l.strip_prefix("identity\t"));
    assert_eq!(found, Some(identity), "{}: identity", replica.display());
}

/// The number before `what` in an update's summary.
fn number_before(out: &str, what: &str) -> u64 {
    let (head, _) = out.split_once(what).expect(what);
    head.rsplit(' ').next().unwrap().parse().unwrap()
}

fn median_u64(mut values: Vec<u64>) -> u64 {
    values.sort_unstable();
    values[values.len() / 2]
}

/// What the primary's `/metrics` says: bundle requests answered, bytes of
/// bodies sent, and the length of this answer's own body (counted by the
/// next scrape).
struct Metrics {
    bundles: u64,
    body_bytes: u64,
    length: u64,
}

impl Metrics {
    fn of(port: u16) -> Metrics {
        let (status, body) = get(port, "/metrics").expect("an answer from /metrics");
        assert_eq!(status, 200, "/metrics");
        let text = String::from_utf8(body).unwrap();
        let value = |line: &str| -> u64 { line.rsplit(' ').next().unwrap().parse().unwrap() };
        let mut metrics = Metrics {
            bundles: 0,
            body_bytes: 0,
            length: text.len() as u64,
        };
        let mut found = false;
        for line in text.lines() {
            if line.starts_with("seekless_http_requests_total{")
                && line.contains("route=\"bundle\"")
            {
                metrics.bundles += value(line);
            } else if line.starts_with("seekless_http_response_body_bytes_total ") {
                metrics.body_bytes = value(line);
                found = true;
            }
        }
        assert!(found, "no body bytes in /metrics:\n{text}");
        metrics
    }
}

/// nginx as a caching proxy in front of the primary: one process
/// (`master_process off`, so it needs no other user's rights over its
/// files), its configuration, cache and logs in `dir`.
struct Nginx {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Nginx {
    /// `None` when there is no nginx.
    fn start(upstream: u16, dir: &Path) -> Option<Nginx> {
        Command::new("nginx").arg("-v").output().ok()?;
        let port = free_port();
        std::fs::create_dir_all(dir.join("temp")).unwrap();
        let d = dir.display();
        // Cache-Control is honoured (nginx's default): /identity and
        // /health say no-store, bundles `public, max-age=31536000,
        // immutable`; proxy_cache_valid covers answers that say nothing.
        let config = format!(
            r#"daemon off;
master_process off;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    log_format cache '$request_uri $status $upstream_cache_status $body_bytes_sent';
    access_log {d}/access.log cache;
    client_body_temp_path {d}/temp/body;
    proxy_temp_path {d}/temp/proxy;
    fastcgi_temp_path {d}/temp/fastcgi;
    uwsgi_temp_path {d}/temp/uwsgi;
    scgi_temp_path {d}/temp/scgi;
    proxy_cache_path {d}/cache levels=1:2 keys_zone=mirror:10m max_size=4g inactive=1y use_temp_path=off;
    upstream primary {{ server 127.0.0.1:{upstream}; keepalive 8; }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://primary;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_cache mirror;
            proxy_cache_valid 200 1y;
            proxy_cache_lock on;
        }}
    }}
}}
"#
        );
        let conf = dir.join("nginx.conf");
        std::fs::write(&conf, config).unwrap();
        let child = Command::new("nginx")
            .arg("-p")
            .arg(dir)
            .arg("-c")
            .arg(&conf)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let nginx = Nginx {
            child,
            port,
            dir: dir.to_path_buf(),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while get(port, "/health").is_none_or(|(status, _)| status != 200) {
            assert!(
                Instant::now() < deadline,
                "nginx did not start: see {d}/error.log"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Some(nginx)
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The access log's lines of /bundles/: status, cache status, bytes.
    fn bundle_log(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.join("access.log"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with("/bundles/"))
            .map(|l| l.split_once(' ').map_or(l, |(_, rest)| rest).to_string())
            .collect()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
