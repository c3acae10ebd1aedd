//! A fleet of mirrors as processes: `pwned serve --bundles DIR` and
//! `pwned update --base-url` against it, `--bundle-out DIR`, `--check`.
//! What update does with each answer of a mirror (refused bundles, a
//! mirror that moves on, which bundle is sent) is tested in process by the
//! pwned crate's tests/mirror.rs; this is the command line around it: the
//! summary lines, exit statuses, the files written, and replicas of
//! replicas. One update here goes range by range (all 2^20 ranges).
#![cfg(all(feature = "serve", feature = "update"))]

use std::path::{Path, PathBuf};

use seekless_testkit::{Rng, TempDir};

use crate::common;

use common::serve::{Server, wait_healthy};
use common::{prepare_index, seekless, snapshot};

/// Three corpora of SHA-1 hashes, each made of the one before: some gone,
/// some recounted, some new.
fn corpora() -> [String; 3] {
    let mut rng = Rng::splitmix64(59);
    let mut lines: Vec<(String, u64)> = (0..600)
        .map(|_| (seekless_testkit::hex(&mut rng, 40), 1 + rng.below(1000)))
        .collect();
    let text = |lines: &[(String, u64)]| -> String {
        lines.iter().map(|(h, c)| format!("{h}:{c}\n")).collect()
    };
    let a = text(&lines);
    let next = |lines: &mut Vec<(String, u64)>, rng: &mut Rng| {
        let mut i = 0;
        lines.retain(|_| {
            i += 1;
            i % 11 != 0
        });
        for (i, line) in lines.iter_mut().enumerate() {
            line.1 += u64::from(i % 7 == 0);
        }
        lines.extend((0..30).map(|_| (seekless_testkit::hex(rng, 40), 1 + rng.below(1000))));
    };
    next(&mut lines, &mut rng);
    let b = text(&lines);
    next(&mut lines, &mut rng);
    [a, b, text(&lines)]
}

/// The corpora as index files in `dir` (`a.idx`, `b.idx`, `c.idx`).
fn indexes(dir: &Path) -> [PathBuf; 3] {
    let [a, b, c] = corpora();
    [("a", a), ("b", b), ("c", c)].map(|(name, text)| {
        prepare_index(
            &text,
            &dir.join(format!("{name}.txt")),
            &dir.join(format!("{name}.idx")),
        )
    })
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Runs `seekless ARGS`, which must exit with `code`; its stdout.
fn expect(code: i32, args: &[&str]) -> String {
    let out = seekless(args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(code),
        "{args:?}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// `pwned update INDEX --base-url URL EXTRA…`, which must succeed.
fn update(index: &Path, url: &str, extra: &[&str]) -> String {
    let mut args = vec!["pwned", "update", s(index), "--base-url", url];
    args.extend_from_slice(extra);
    expect(0, &args)
}

/// `pwned update INDEX --check --base-url URL`: its exit status and
/// standard output.
fn check(index: &Path, url: &str) -> (Option<i32>, String) {
    let out = seekless(&["pwned", "update", s(index), "--check", "--base-url", url]);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// The identity `pwned stats` names.
fn identity(index: &Path) -> String {
    let stats = expect(0, &["pwned", "stats", s(index)]);
    stats
        .lines()
        .find_map(|l| l.strip_prefix("identity\t"))
        .unwrap_or_else(|| panic!("no identity: {stats}"))
        .to_string()
}

/// The corpus, as `pwned export` writes it.
fn export(index: &Path) -> String {
    expect(0, &["pwned", "export", s(index)])
}

/// `{first 16 hex digits of from}-{… of to}.bundle`.
fn bundle_name(from: &str, to: &str) -> String {
    format!("{}-{}.bundle", &from[..16], &to[..16])
}

/// `pwned serve -i INDEX --bundles DIR`, answering once its index is
/// verified (its identity known); its base URL.
fn mirror(index: &Path, bundles: &Path) -> (Server, String) {
    let server = Server::start(&[index], &["--bundles", s(bundles)]);
    assert_eq!(wait_healthy(&server).status, 200);
    let url = format!("http://127.0.0.1:{}", server.port);
    (server, url)
}

/// A primary updated range by range from its upstream (a seekless serve
/// that holds no bundle from it) that removed hashes: suspect answers keep
/// the index's and exit 3, unless `--accept-removals`; then it writes the
/// bundle of what changed into `--bundle-out DIR`, under both identities'
/// names; asked again, it is current and writes nothing.
#[test]
fn a_primary_updated_range_by_range_keeps_the_bundle_of_what_changed() {
    let dir = TempDir::new("cli-mirror-primary");
    let [_, b, c] = indexes(&dir);
    let upstream_bundles = dir.join("upstream-bundles");
    std::fs::create_dir(&upstream_bundles).unwrap();
    let (_upstream, url) = mirror(&c, &upstream_bundles);
    let primary = dir.join("primary.idx");
    std::fs::copy(&b, &primary).unwrap();
    let out = dir.join("bundles");
    std::fs::create_dir(&out).unwrap();
    let (from, to) = (identity(&b), identity(&c));

    // Range by range, answers that remove hashes are suspect (HIBP never
    // removes one): asked again, still so, those ranges keep what the
    // index had, are named, and the update exits 3 (`--check` against a
    // mirror compares identities; range by range it is the pwned crate's
    // tests/update_suspect.rs).
    let kept = dir.join("kept.idx");
    std::fs::copy(&b, &kept).unwrap();
    let run = seekless(&["pwned", "update", s(&kept), "--base-url", &url]);
    let (said, warned) = (
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr),
    );
    assert_eq!(run.status.code(), Some(3), "{said}{warned}");
    let removed = gone(&export(&b), &export(&c));
    let first = &removed.iter().next().unwrap()[..5];
    assert!(
        said.contains(&format!(
            " suspect ranges (kept what the index had): {first} "
        )),
        "{said}"
    );
    assert!(warned.contains("--accept-removals"), "{warned}");
    assert!(gone(&export(&b), &export(&kept)).is_empty(), "nothing lost");
    // An operator who knows the upstream removed them.
    let said = update(
        &primary,
        &url,
        &["--bundle-out", s(&out), "--accept-removals"],
    );
    let name = bundle_name(&from, &to);
    assert!(
        said.contains("1048576 ranges checked"),
        "range by range: {said}"
    );
    assert!(
        said.contains(&format!(
            "\n  range by range: the mirror holds no bundle from identity {from}\n"
        )),
        "{said}"
    );
    assert!(
        said.contains(&format!(
            "  wrote the delta bundle {}",
            out.join(&name).display()
        )),
        "{said}"
    );
    assert_eq!(
        seekless_testkit::file_names(&out),
        std::slice::from_ref(&name)
    );
    assert_eq!(identity(&primary), to);
    assert!(export(&primary) == export(&c));
    // The bundle is what `pwned diff` makes of the same two indexes.
    let diffed = dir.join("diffed.bundle");
    expect(0, &["pwned", "diff", s(&b), s(&c), "-o", s(&diffed)]);
    let copy = dir.join("copy.idx");
    std::fs::copy(&b, &copy).unwrap();
    expect(
        0,
        &[
            "pwned",
            "update",
            s(&copy),
            "--from-bundle",
            s(&out.join(&name)),
        ],
    );
    assert!(export(&copy) == export(&c));

    // Nothing changed since: one request, nothing written anywhere.
    let before = snapshot(&dir);
    let said = update(&primary, &url, &["--bundle-out", s(&out)]);
    assert!(
        said.starts_with(&format!(
            "{} is current: {url} serves the same corpus (",
            primary.display()
        )) && said.contains("; nothing fetched, nothing written, ")
            && said.lines().count() == 1,
        "{said}"
    );
    assert!(snapshot(&dir) == before, "nothing written");
}

/// The hashes of `old` (as `pwned export` writes them) that `new` lacks or
/// holds with a lower count.
fn gone(old: &str, new: &str) -> std::collections::BTreeSet<String> {
    let counts = |text: &str| -> std::collections::BTreeMap<String, u64> {
        text.lines()
            .map(|l| {
                let (hash, count) = l.split_once(':').unwrap();
                (hash.to_string(), count.parse().unwrap())
            })
            .collect()
    };
    let new = counts(new);
    counts(old)
        .into_iter()
        .filter(|(hash, count)| new.get(hash).is_none_or(|n| n < count))
        .map(|(hash, _)| hash)
        .collect()
}

/// A primary ← replica ← replica chain: replica 1 takes the primary's
/// bundles and keeps them (`--bundle-out DIR1`), then serves them; replica
/// 2 takes them from replica 1. Every index ends at the primary's
/// identity; `--check` says current (0) or newer (1) in one line.
#[test]
fn replicas_of_replicas_end_at_the_primarys_identity() {
    let dir = TempDir::new("cli-mirror-chain");
    let [a, b, c] = indexes(&dir);
    let (ia, ib, ic) = (identity(&a), identity(&b), identity(&c));
    let primary_dir = dir.join("primary-bundles");
    std::fs::create_dir(&primary_dir).unwrap();
    expect(
        0,
        &[
            "pwned",
            "diff",
            s(&b),
            s(&c),
            "-o",
            s(&primary_dir.join("b-c.bundle")),
        ],
    );
    let (primary, primary_url) = mirror(&c, &primary_dir);
    // Written while the primary serves: seen without a restart.
    expect(
        0,
        &[
            "pwned",
            "diff",
            s(&a),
            s(&b),
            "-o",
            s(&primary_dir.join("a-b.bundle")),
        ],
    );

    let replica1 = dir.join("replica1.idx");
    std::fs::copy(&a, &replica1).unwrap();
    let dir1 = dir.join("replica1-bundles");
    std::fs::create_dir(&dir1).unwrap();
    let said = update(&replica1, &primary_url, &["--bundle-out", s(&dir1)]);
    assert!(
        said.starts_with(&format!(
            "updated {}: 2 delta bundles from the mirror, ",
            replica1.display()
        )),
        "{said}"
    );
    assert!(
        said.contains(&format!(
            "  kept the bundles applied in {}\n",
            dir1.display()
        )),
        "{said}"
    );
    let mut kept = vec![bundle_name(&ia, &ib), bundle_name(&ib, &ic)];
    kept.sort();
    assert_eq!(seekless_testkit::file_names(&dir1), kept);
    assert_eq!(identity(&replica1), ic);
    assert!(export(&replica1) == export(&c));
    drop(primary);

    // Replica 2, at A, from replica 1 alone (the primary is gone).
    let (_replica1_server, replica1_url) = mirror(&replica1, &dir1);
    let replica2 = dir.join("replica2.idx");
    std::fs::copy(&a, &replica2).unwrap();
    let (code, said) = check(&replica2, &replica1_url);
    assert_eq!(code, Some(1), "{said}");
    assert_eq!(
        said,
        format!(
            "{}: newer data: {replica1_url} serves identity {ic} ({} hashes); this index has {ia}\n",
            replica2.display(),
            export(&c).lines().count()
        )
    );
    let said = update(&replica2, &replica1_url, &[]);
    assert!(said.contains(": 2 delta bundles from the mirror"), "{said}");
    assert_eq!(identity(&replica2), ic);
    assert!(export(&replica2) == export(&c));

    // Current: --check exits 0 in one line, update writes nothing.
    let (code, said) = check(&replica2, &replica1_url);
    assert_eq!(code, Some(0), "{said}");
    assert!(
        said.starts_with(&format!("{}: current: ", replica2.display()))
            && said.ends_with(&format!("this index has {ic}\n"))
            && said.lines().count() == 1,
        "{said}"
    );
    let before = snapshot(&dir);
    let said = update(&replica2, &replica1_url, &[]);
    assert!(
        said.starts_with(&format!("{} is current: ", replica2.display())),
        "{said}"
    );
    assert!(snapshot(&dir) == before);

    // One bundle from B; none for an index that is not there (newer).
    let replica3 = dir.join("replica3.idx");
    std::fs::copy(&b, &replica3).unwrap();
    let said = update(&replica3, &replica1_url, &[]);
    assert!(said.contains(": 1 delta bundle from the mirror,"), "{said}");
    let (code, said) = check(&dir.join("none.idx"), &replica1_url);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("newer data: there is no index"), "{said}");

    // No server there: exit 2, one line on stderr, nothing written.
    let out = seekless(&[
        "pwned",
        "update",
        s(&replica2),
        "--check",
        "--base-url",
        "http://127.0.0.1:9",
        "--tries",
        "1",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("range 00000"), "{stderr}");
}
