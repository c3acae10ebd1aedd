//! The update benchmark: `seekless pwned update` side by side with what
//! users do today (curl fetching every range to a file, then `prepare` of
//! that directory), against `seekless pwned serve` on 127.0.0.1, in one run.
//!
//! ```text
//! cargo build --release -p seekless
//! cargo bench -p seekless-pwned --features update --bench pwned_update -- [--per-range 100] [--data DIR] [--ranges-dir DIR]…
//! ```
//!
//! It builds (once, cached in DIR, default `bench-data/`) an index with
//! `--per-range` random SHA-1 hashes in every one of the 1,048,576 ranges
//! and a copy with 1% of the ranges changed, serves the first with the
//! release binary (`SEEKLESS_BIN`, default `target/release/seekless`), and
//! measures with `/usr/bin/time`:
//! - a full update into a new index, against `curl --parallel
//!   --parallel-max 64` writing every range to a file followed by `prepare`
//!   of the directory: wall, CPU seconds, peak RSS, bytes written;
//! - a refresh where nothing changed, and one where 1% of the ranges did
//!   (the changed copy served instead): time and bytes received;
//! - full updates with 16 and 256 requests in flight (the default is 64);
//! - the client's CPU per range at the real size (1,800 lines, gzip):
//!   decompressing and checking one answer, without the HTTP exchange
//!   (`--client-cpu`: only this);
//! - delta bundles of that 1%: `diff` against `export` reading one index,
//!   `update --from-bundle` against the online refresh, the bundle's size
//!   against gzip of the changed ranges' text (medians of 3);
//! - `export --ranges` into each `--ranges-dir` (a tmpfs, say; DIR when
//!   none), beside the same command creating the million files empty.
//!
//! The refreshes go through the mirror's paths where the server offers
//! them: with nothing changed, update asks `/identity` and stops there;
//! with 1% changed, this server holds no bundle, so it goes range by range.
//!
//! `--mirror` runs only the mirror fleet (issue #59; the `mirror` module):
//! replicas refreshing from a primary `serve --bundles` through
//! `/identity` and `/bundles/{identity}`, side by side with the
//! per-range refresh of the same, and two replicas through a caching nginx
//! in front of the primary. It needs nginx (Debian: `apt-get install
//! nginx`) and a third cached index (the old one with one range changed).
//!
//! Server and client share the machine's cores, as on one box they would.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use seekless_pwned::test_util::{
    SortedWriter, Words, decode_body, loses_data, parse_range, parse_range_scalar, read_answer,
};
use seekless_pwned::{Index, Key, Kind, RANGES};

use seekless_testkit::Rng;
use seekless_testkit::measure::time;

// Beside this file, not in benches/ itself, where cargo would take it for
// a benchmark of its own.
#[path = "pwned_update/mirror.rs"]
mod mirror;

/// The variant of the copy with 1% of the ranges changed.
const CHANGED: u64 = 0xC4A6;
/// The variant of the copy with one range changed (`00007`).
const ONE_RANGE: u64 = 0x0E;

/// `per_range` random hashes in range `prefix`, sorted, with counts; the
/// `variant` changes the content of about 1% of the ranges ([`CHANGED`])
/// or of one ([`ONE_RANGE`]).
fn range(prefix: u32, per_range: usize, variant: u64, out: &mut Vec<(Key, u64)>) {
    let changed = match variant {
        0 => false,
        ONE_RANGE => prefix == 7,
        _ => prefix % 100 == 7,
    };
    let mut rng = Rng::xorshift64star(
        0x5EEC_1E55 ^ (u64::from(prefix) << 8) ^ if changed { variant } else { 0 },
    );
    out.clear();
    for _ in 0..per_range {
        let key = Words {
            hi: (u64::from(prefix) << 44) | (rng.next_u64() >> 20),
            mid: rng.next_u64(),
            lo: rng.next_u64() as u32,
        }
        .key();
        out.push((key, 1 + rng.next_u64() % 1000));
    }
    out.sort();
    out.dedup_by_key(|(k, _)| *k);
}

fn generate(path: &Path, per_range: usize, variant: u64) {
    if path.exists() {
        return;
    }
    let started = Instant::now();
    let written = seekless_testkit::write_via_temp(path, |tmp| {
        let file = std::fs::File::create(tmp).unwrap();
        let mut writer = SortedWriter::new(
            BufWriter::with_capacity(1 << 20, file),
            Kind::Sha1,
            Some(per_range as u64 * u64::from(RANGES)),
        )
        .unwrap();
        let mut items = Vec::new();
        for prefix in 0..RANGES {
            range(prefix, per_range, variant, &mut items);
            for &(key, count) in &items {
                writer.push(key, count).unwrap();
            }
        }
        let (mut out, written) = writer.finish(None).unwrap();
        out.flush().unwrap();
        written
    });
    println!(
        "generated {} ({} hashes, {} bytes) in {:.1} s",
        path.display(),
        written.hashes,
        written.bytes,
        started.elapsed().as_secs_f64()
    );
}

struct Server(Child, u16);

impl Server {
    /// `pwned serve -i index` on 127.0.0.1:`port`, with `extra` arguments.
    fn start(bin: &Path, index: &Path, port: u16, extra: &[&str]) -> Server {
        let child = Command::new(bin)
            .args([
                "pwned",
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "-i",
            ])
            .arg(index)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Ready once it has verified the index (a pass over every page
        // that would otherwise share the cores with the first contender).
        let deadline = Instant::now() + Duration::from_secs(300);
        while !healthy(port) {
            assert!(Instant::now() < deadline, "serve did not become healthy");
            std::thread::sleep(Duration::from_millis(100));
        }
        Server(child, port)
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.1)
    }
}

/// Whether `GET /health` on `port` answers 200.
fn healthy(port: u16) -> bool {
    get(port, "/health").is_some_and(|(status, _)| status == 200)
}

/// `GET path` from 127.0.0.1:`port` over HTTP/1.1: the status and the
/// body (a chunked one put together); `None` when there is no answer.
fn get(port: u16, path: &str) -> Option<(u16, Vec<u8>)> {
    use std::io::Read;
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).ok()?;
    let end = answer.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&answer[..end]).to_ascii_lowercase();
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    let mut body = answer.split_off(end + 4);
    if head.contains("transfer-encoding: chunked") {
        let (mut whole, mut rest) = (Vec::new(), &body[..]);
        loop {
            let line = rest.windows(2).position(|w| w == b"\r\n")?;
            let size = std::str::from_utf8(&rest[..line]).ok()?;
            let size = usize::from_str_radix(size.split(';').next()?.trim(), 16).ok()?;
            if size == 0 {
                break;
            }
            whole.extend_from_slice(rest.get(line + 2..line + 2 + size)?);
            rest = rest.get(line + 4 + size..)?;
        }
        body = whole;
    }
    Some((status, body))
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What `/usr/bin/time` measured of one command.
#[derive(Debug, Default, Clone, Copy)]
struct Measured {
    wall: f64,
    cpu: f64,
    rss_mib: f64,
}

impl std::ops::Add for Measured {
    type Output = Measured;
    fn add(self, o: Measured) -> Measured {
        Measured {
            wall: self.wall + o.wall,
            cpu: self.cpu + o.cpu,
            rss_mib: self.rss_mib.max(o.rss_mib),
        }
    }
}

/// Runs `command` under `/usr/bin/time`, its output thrown away.
fn measure_quiet(command: &[&str]) -> Measured {
    let report = std::env::temp_dir().join(format!("seekless-time-q-{}", std::process::id()));
    let status = Command::new("/usr/bin/time")
        .args(["-f", "%e %U %S %M", "-o"])
        .arg(&report)
        .args(command)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "{command:?} failed");
    parse_time(&std::fs::read_to_string(&report).unwrap())
}

/// Runs `command` under `/usr/bin/time`; returns its measures and stdout.
fn measure(command: &[&str], stdin: Option<&Path>) -> (Measured, String) {
    let report = std::env::temp_dir().join(format!("seekless-time-{}", std::process::id()));
    let mut cmd = Command::new("/usr/bin/time");
    cmd.args(["-f", "%e %U %S %M", "-o"])
        .arg(&report)
        .args(command);
    if let Some(path) = stdin {
        cmd.stdin(std::fs::File::open(path).unwrap());
    }
    let out = cmd.stderr(Stdio::inherit()).output().unwrap();
    assert!(out.status.success(), "{command:?} failed");
    (
        parse_time(&std::fs::read_to_string(&report).unwrap()),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// `/usr/bin/time -f "%e %U %S %M"`'s last line.
fn parse_time(text: &str) -> Measured {
    let f: Vec<f64> = text
        .split_whitespace()
        .rev()
        .take(4)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .map(|x| x.parse().unwrap())
        .collect();
    Measured {
        wall: f[0],
        cpu: f[1] + f[2],
        rss_mib: f[3] / 1024.0,
    }
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum()
}

/// The client's CPU for one real-size answer: what `update` does with every
/// answer it receives whole (`read_answer`: gunzip and check), and each
/// half alone; medians of 9 batches of process CPU time.
fn client_cpu_per_range() -> f64 {
    let mut items = Vec::new();
    range(0x5BAA6, 1800, 0, &mut items);
    let mut body = Vec::new();
    for (i, (key, count)) in items.iter().enumerate() {
        if i > 0 {
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(&key.to_hex(Kind::Sha1).as_bytes()[5..]);
        body.extend_from_slice(format!(":{count}").as_bytes());
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
    gz.write_all(&body).unwrap();
    let gz = gz.finish().unwrap();
    let rounds = 500;
    // µs a round of `f`: the median of 9 batches' CPU time.
    let per_round = |f: &mut dyn FnMut()| {
        let batches = (0..9)
            .map(|_| {
                let (sample, ()) = time(|| (0..rounds).for_each(|_| f()));
                sample.cpu.as_secs_f64() / f64::from(rounds) * 1e6
            })
            .collect();
        seekless_testkit::measure::median(batches)
    };
    let answer = read_answer(Kind::Sha1, 0x5BAA6, Some(b"gzip"), &gz).unwrap();
    assert_eq!(answer, items, "the answer reads back to its pairs");
    let per = per_round(&mut || {
        let answer = read_answer(Kind::Sha1, 0x5BAA6, Some(b"gzip"), &gz).unwrap();
        assert_eq!(answer.len(), items.len());
    });
    // The anchor: the path before read_answer (a fresh buffer inflated,
    // then checked line by line by the scalar parser).
    let mut parsed = Vec::with_capacity(2000);
    let before = per_round(&mut || {
        let text = decode_body(Some(b"gzip"), &gz).unwrap();
        parsed.clear();
        parse_range_scalar(Kind::Sha1, 0x5BAA6, &text, &mut parsed).unwrap();
    });
    let text = decode_body(Some(b"gzip"), &gz).unwrap();
    let inflate = per_round(&mut || {
        assert_eq!(decode_body(Some(b"gzip"), &gz).unwrap().len(), body.len());
    });
    let check = per_round(&mut || {
        parsed.clear();
        parse_range(Kind::Sha1, 0x5BAA6, &text, &mut parsed).unwrap();
    });
    let scalar = per_round(&mut || {
        parsed.clear();
        parse_range_scalar(Kind::Sha1, 0x5BAA6, &text, &mut parsed).unwrap();
    });
    // The suspicion check: the answer against the old range, the same
    // (every pair compared: the whole walk).
    let suspect = per_round(&mut || {
        assert!(!loses_data(&items, &answer, 1));
    });
    println!(
        "client CPU per real-size range (1,800 lines, {} bytes gzip, {} plain): {per:.1} µs \
         (read_answer: decompress + check; goal ≤ 150 µs; {:.3}x of the scalar path's \
         {before:.1} µs); alone: inflate {inflate:.1} µs (decode_body, fresh buffer), \
         check {check:.1} µs (scalar only: {scalar:.1} µs); the suspicion check after it \
         (merge-walk with the old range): {suspect:.2} µs",
        gz.len(),
        body.len(),
        per / before
    );
    per
}

fn main() {
    let mut per_range = 100usize;
    let mut data = PathBuf::from("bench-data");
    let mut client_only = false;
    let mut mirror_only = false;
    let mut ranges_dirs = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--per-range" => per_range = args.next().unwrap().parse().unwrap(),
            "--data" => data = PathBuf::from(args.next().unwrap()),
            "--client-cpu" => client_only = true,
            "--mirror" => mirror_only = true,
            "--ranges-dir" => ranges_dirs.push(PathBuf::from(args.next().unwrap())),
            _ => {}
        }
    }
    if !mirror_only {
        client_cpu_per_range();
    }
    if client_only {
        return;
    }
    let bin = std::env::var_os("SEEKLESS_BIN").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/release/seekless"),
        PathBuf::from,
    );
    if !bin.exists() {
        println!(
            "{} not found: build it (cargo build --release -p seekless) or set SEEKLESS_BIN",
            bin.display()
        );
        return;
    }
    let bin = std::fs::canonicalize(bin).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    if mirror_only {
        mirror::run(&bin, &data, per_range);
        return;
    }
    let curl = Command::new("curl").arg("--version").output().is_ok();
    let served = data.join(format!("update-{per_range}.idx"));
    let changed = data.join(format!("update-{per_range}-changed.idx"));
    generate(&served, per_range, 0);
    generate(&changed, per_range, CHANGED);
    let work = data.join("update-work");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let b = bin.to_str().unwrap();
    let server = Server::start(&bin, &served, 18091, &[]);
    let url = server.url();

    // seekless: one command.
    let ours = work.join("ours.idx");
    let update_from = |url: &str| {
        measure(
            &[
                b,
                "pwned",
                "update",
                ours.to_str().unwrap(),
                "--base-url",
                url,
            ],
            None,
        )
    };
    let (m_ours, out) = update_from(&url);
    print!("{out}");
    let ours_written = std::fs::metadata(&ours).unwrap().len();

    // curl + prepare: every range to a file, then the directory.
    let mut peer = None;
    if curl {
        let ranges = work.join("ranges");
        std::fs::create_dir_all(&ranges).unwrap();
        let config = work.join("curl.cfg");
        let mut cfg = BufWriter::new(std::fs::File::create(&config).unwrap());
        for prefix in 0..RANGES {
            writeln!(
                cfg,
                "url = \"{url}/range/{prefix:05X}\"\noutput = \"{}/{prefix:05X}.txt\"",
                ranges.display()
            )
            .unwrap();
        }
        cfg.into_inner().unwrap().sync_all().unwrap();
        let (m_curl, _) = measure(
            &[
                "curl",
                "--silent",
                "--no-progress-meter",
                "--fail",
                "--compressed",
                // The coding update asks for first, so the server does the
                // same work for both.
                "--header",
                "Accept-Encoding: gzip",
                "--parallel",
                "--parallel-max",
                "64",
                "--config",
                config.to_str().unwrap(),
            ],
            None,
        );
        let text_bytes = dir_bytes(&ranges);
        let theirs = work.join("theirs.idx");
        let (m_prep, _) = measure(
            &[
                b,
                "pwned",
                "prepare",
                ranges.to_str().unwrap(),
                "-o",
                theirs.to_str().unwrap(),
            ],
            None,
        );
        let same = Index::open(&ours).unwrap().len() == Index::open(&theirs).unwrap().len();
        assert!(same, "both hold the same corpus");
        let index_bytes = std::fs::metadata(&theirs).unwrap().len();
        peer = Some((m_curl, m_prep, text_bytes, index_bytes));
    } else {
        println!("curl not found: the peer run is skipped");
    }

    // The window of requests in flight: wall and client CPU at other
    // widths than the default 64 (loopback, so latency does not hide in it).
    let mut widths = Vec::new();
    for concurrency in ["16", "256"] {
        let wide = work.join(format!("c{concurrency}.idx"));
        let (m, _) = measure(
            &[
                b,
                "pwned",
                "update",
                wide.to_str().unwrap(),
                "--base-url",
                &url,
                "--concurrency",
                concurrency,
            ],
            None,
        );
        std::fs::remove_file(&wide).unwrap();
        widths.push((concurrency, m));
    }

    // Refreshes: nothing changed; then 1% of the ranges changed.
    let (m_none, out_none) = update_from(&url);
    drop(server);
    let server = Server::start(&bin, &changed, 18092, &[]);
    let (m_some, out_some) = update_from(&server.url());
    drop(server);

    let hashes = Index::open(&ours).unwrap().len();
    println!();
    println!(
        "full update, {per_range} hashes a range ({hashes} hashes), served on 127.0.0.1 by pwned serve:"
    );
    println!(
        "{:<34} {:>8} {:>8} {:>9} {:>14}",
        "", "wall s", "CPU s", "RSS MiB", "bytes written"
    );
    let row = |name: &str, m: Measured, written: u64| {
        println!(
            "{name:<34} {:>8.1} {:>8.1} {:>9.0} {:>14}",
            m.wall, m.cpu, m.rss_mib, written
        );
    };
    row("seekless pwned update", m_ours, ours_written);
    if let Some((m_curl, m_prep, text_bytes, index_bytes)) = peer {
        row("curl --parallel-max 64", m_curl, text_bytes);
        row("  then seekless pwned prepare", m_prep, index_bytes);
        row("curl + prepare", m_curl + m_prep, text_bytes + index_bytes);
        println!(
            "seekless is {:.2}x faster (wall), {:.2}x less CPU",
            (m_curl.wall + m_prep.wall) / m_ours.wall,
            (m_curl.cpu + m_prep.cpu) / m_ours.cpu
        );
    }
    println!(
        "client CPU per range in the full update (HTTP included): {:.1} µs",
        m_ours.cpu / f64::from(RANGES) * 1e6
    );
    for (concurrency, m) in &widths {
        println!(
            "full update with --concurrency {concurrency}: {:.1} s wall, {:.1} CPU s, {:.0} MiB",
            m.wall, m.cpu, m.rss_mib
        );
    }
    // The summary's third line: "  N bytes received, …".
    let received = |out: &str| -> String {
        out.lines()
            .find_map(|l| l.trim().split_once(" bytes received"))
            .map_or_else(String::new, |(n, _)| n.to_string())
    };
    // Nothing changed: serve answers /identity, so update stops there (the
    // per-range refresh of the same is in --mirror, as its anchor).
    println!(
        "refresh, nothing changed (the identity path): {:.2} s wall, {:.2} CPU s: {}",
        m_none.wall,
        m_none.cpu,
        out_none.lines().next().unwrap_or_default()
    );
    println!(
        "refresh, 1% of ranges changed (range by range: the server holds no bundle): {:.1} s wall, {:.1} CPU s, {} bytes received",
        m_some.wall,
        m_some.cpu,
        received(&out_some)
    );
    print!("{out_some}");

    // Delta bundles of the same 1%: `diff` of the served index and the
    // changed copy against `export` reading one of them; the bundle
    // applied offline against the online refresh above; its size against
    // gzip (level 6) of the changed ranges' text.
    let (served_s, changed_s) = (served.to_str().unwrap(), changed.to_str().unwrap());
    // Three runs each, alternating, medians reported.
    let bundle = work.join("changes.bundle");
    let bundle_s = bundle.to_str().unwrap();
    let offline = work.join("offline.idx");
    let (mut exports, mut diffs, mut applies) = (Vec::new(), Vec::new(), Vec::new());
    let (mut out_diff, mut out_apply) = (String::new(), String::new());
    for _ in 0..3 {
        exports.push(measure_quiet(&[b, "pwned", "export", served_s]));
        let _ = std::fs::remove_file(&bundle);
        let (m, out) = measure(
            &[b, "pwned", "diff", served_s, changed_s, "-o", bundle_s],
            None,
        );
        diffs.push(m);
        out_diff = out;
        std::fs::copy(&served, &offline).unwrap();
        let (m, out) = measure(
            &[
                b,
                "pwned",
                "update",
                offline.to_str().unwrap(),
                "--from-bundle",
                bundle_s,
            ],
            None,
        );
        applies.push(m);
        out_apply = out;
    }
    let (m_export, m_diff, m_apply) = (median(exports), median(diffs), median(applies));
    let (made, want) = (
        Index::open(&offline).unwrap(),
        Index::open(&changed).unwrap(),
    );
    assert_eq!(
        seekless_pwned::test_util::identity(&made).unwrap(),
        seekless_pwned::test_util::identity(&want).unwrap(),
        "the bundle made the changed index"
    );
    let mut text = Vec::new();
    let mut body = Vec::new();
    for prefix in (0..RANGES).filter(|p| p % 100 == 7) {
        body.clear();
        want.write_range(prefix, &mut body).unwrap();
        text.extend_from_slice(&body);
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
    gz.write_all(&text).unwrap();
    let gzipped = gz.finish().unwrap().len() as f64;
    let bundle_bytes = std::fs::metadata(&bundle).unwrap().len() as f64;
    print!("{out_diff}{out_apply}");
    println!(
        "export of the served index (to /dev/null): {:.2} s wall, {:.1} CPU s (median of 3)",
        m_export.wall, m_export.cpu
    );
    println!(
        "diff of it and the changed copy: {:.2} s wall, {:.1} CPU s, {:.0} MiB: {:.2}x export's wall (target <= 1.5x; median of 3)",
        m_diff.wall,
        m_diff.cpu,
        m_diff.rss_mib,
        m_diff.wall / m_export.wall
    );
    println!(
        "update --from-bundle: {:.2} s wall, {:.1} CPU s: {:.2}x the online refresh of 1% (target <= 1.0x; median of 3)",
        m_apply.wall,
        m_apply.cpu,
        m_apply.wall / m_some.wall
    );
    println!(
        "bundle {bundle_bytes:.0} bytes; gzip -6 of the changed ranges' text ({} bytes) {gzipped:.0}: {:.3}x (target <= 1.2x)",
        text.len(),
        bundle_bytes / gzipped
    );
    export_ranges(b, served_s, &work, &ranges_dirs);
    let _ = std::fs::remove_dir_all(&work);
}

/// The measure of the middle wall time.
fn median(mut runs: Vec<Measured>) -> Measured {
    runs.sort_by(|a, b| a.wall.total_cmp(&b.wall));
    runs.swap_remove(runs.len() / 2)
}

/// `export --ranges` of `index` into each of `dirs` (say a tmpfs; `work`
/// when none is given), three runs each, against the same command writing no line
/// (`--min-count` above every count): a million empty files, what the file
/// system alone takes to create them.
fn export_ranges(b: &str, index: &str, work: &Path, dirs: &[PathBuf]) {
    let text_bytes: f64 = {
        let i = Index::open(index).unwrap();
        let mut body = Vec::new();
        (0..RANGES)
            .map(|p| {
                body.clear();
                i.write_range(p, &mut body).unwrap();
                body.len() as f64
            })
            .sum()
    };
    let dirs = if dirs.is_empty() {
        vec![work.to_path_buf()]
    } else {
        dirs.to_vec()
    };
    for dir in dirs {
        let out = dir.join("seekless-bench-ranges");
        let out_s = out.to_str().unwrap();
        let (mut full, mut empty) = (Vec::new(), Vec::new());
        for _ in 0..3 {
            let _ = std::fs::remove_dir_all(&out);
            full.push(measure_quiet(&[
                b, "pwned", "export", index, "--ranges", out_s,
            ]));
            let _ = std::fs::remove_dir_all(&out);
            empty.push(measure_quiet(&[
                b,
                "pwned",
                "export",
                index,
                "--ranges",
                out_s,
                "--min-count",
                "18446744073709551615",
            ]));
        }
        let _ = std::fs::remove_dir_all(&out);
        let (full, empty) = (median(full), median(empty));
        println!(
            "export --ranges into {}: {:.2} s wall, {:.1} CPU s, {:.2} GB/s of text ({:.2} GB); \
             a million empty files: {:.2} s wall, {:.1} CPU s (medians of 3)",
            dir.display(),
            full.wall,
            full.cpu,
            text_bytes / full.wall / 1e9,
            text_bytes / 1e9,
            empty.wall,
            empty.cpu
        );
    }
}
