//! The `seekless pwned` command line: outputs, exit codes, files left behind.
#![cfg(feature = "pwned")]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use seekless_testkit::{Rng, TempDir};

use crate::common;
use common::snapshot;

fn seekless(args: &[&str], stdin: &[u8]) -> Output {
    common::run(args, stdin)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `seekless pwned prepare INPUT -o OUTPUT EXTRA…`.
fn prepare(input: &Path, output: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "pwned",
        "prepare",
        input.to_str().unwrap(),
        "-o",
        output.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    seekless(&args, b"")
}

fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The count at the head of each line `pwned check` printed.
fn counts(out: &Output) -> Vec<String> {
    text(&out.stdout)
        .lines()
        .map(|l| l.split('\t').next().unwrap().to_string())
        .collect()
}

/// What the okon-cli mode answers for `hash` in `index`: its exit status
/// and output.
fn okon(index: &str, hash: &str) -> (Option<i32>, String) {
    let out = seekless(&["--path", index, "--hash", hash], b"");
    (out.status.code(), text(&out.stdout))
}

const CORPUS: &str = "7C4A8D09CA3762AF61E59520943DC26494F8941B:37359195\r\n\
    5baa61e4c9b93f3f0682250b6cf8331b7ee68fd8:9545824\r\n\
    B1B3773A05C0ED0176787A4F1574FF0075F7521E:4\r\n\
    5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:1\r\n\
    F7C3BC1D808E04732ADF679965CCC34CA7AE3441";

#[test]
fn check_answers_from_the_sample_without_an_index() {
    let out = seekless(
        &["pwned", "check", "password", "correct horse battery staple"],
        b"",
    );
    assert!(out.status.success());
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(
        lines[0].starts_with("1\t5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8"),
        "{stdout}"
    );
    assert!(lines[1].starts_with("0\t"), "{stdout}");
    assert!(
        text(&out.stderr).contains("sample"),
        "the output must say it is the sample"
    );
    // Piped, one per line, CR tolerated.
    let out = seekless(
        &["pwned", "check"],
        b"123456\r\nqwerty\nnot-a-common-password-xyz\n",
    );
    let firsts: Vec<String> = text(&out.stdout)
        .lines()
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect();
    assert_eq!(firsts, ["1", "1", "0"]);
}

#[test]
fn prepare_check_stats_verify_export() {
    let dir = TempDir::new("cli-flow");
    let corpus = dir.join("corpus.txt");
    std::fs::write(&corpus, CORPUS).unwrap();
    let index = dir.join("pwned.idx");
    let idx = index.to_str().unwrap();
    let out = seekless(
        &["pwned", "prepare", corpus.to_str().unwrap(), "-o", idx],
        b"",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let summary = text(&out.stdout);
    assert!(summary.contains("4 SHA-1 hashes from 5 lines"), "{summary}");
    assert!(
        summary.contains("1 duplicate merged, 0 invalid lines skipped"),
        "{summary}"
    );

    let out = seekless(
        &[
            "pwned", "check", "-i", idx, "password", "123456", "hunter2", "nope",
        ],
        b"",
    );
    assert_eq!(counts(&out), ["9545825", "37359195", "0", "0"]);

    let out = seekless(&["pwned", "check", "-i", idx, "--hashes"], b"f7c3bc1d808e04732adf679965ccc34ca7ae3441\nB1B3773A05C0ED0176787A4F1574FF0075F7521E\n0000000000000000000000000000000000000000\n");
    assert_eq!(
        text(&out.stdout)
            .lines()
            .map(|l| l.split('\t').next().unwrap())
            .collect::<Vec<_>>(),
        ["1", "4", "0"]
    );

    let out = seekless(&["pwned", "check", "-i", idx, "--hashes", "5BAA61E4"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("\"5BAA61E4\""),
        "{}",
        text(&out.stderr)
    );

    let out = seekless(&["pwned", "stats", idx], b"");
    let stats = text(&out.stdout);
    assert!(
        stats.contains("kind\tsha1")
            && stats.contains("hashes\t4")
            && stats.contains("format_version\t3")
            && stats.contains("min_count\t1"),
        "{stats}"
    );
    // The identity bundles and mirrors compare: computed from the pages of
    // an index prepare built.
    let identity =
        seekless_pwned::test_util::identity(&seekless_pwned::Index::open(idx).unwrap()).unwrap();
    assert!(
        stats.contains(&format!(
            "identity\t{}\n",
            seekless_pwned::identity_hex(&identity)
        )),
        "{stats}"
    );
    // --json: every field of the text form, numbers unrounded.
    let out = seekless(&["pwned", "stats", "--json", idx], b"");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for line in stats.lines() {
        let (name, value) = line.split_once('\t').unwrap();
        let field = &json[name];
        match field {
            serde_json::Value::String(s) => assert_eq!(s, value, "{name}"),
            serde_json::Value::Number(n) if name == "bytes_per_hash" => {
                assert_eq!(format!("{:.3}", n.as_f64().unwrap()), value)
            }
            other => assert_eq!(other.to_string(), value, "{name}"),
        }
    }
    assert_eq!(json.as_object().unwrap().len(), stats.lines().count());
    let out = seekless(
        &["pwned", "check", "--json", "-i", idx, "password", "nope"],
        b"",
    );
    assert_eq!(
        text(&out.stdout),
        "{\"count\":9545825,\"hash\":\"5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8\"}\n\
         {\"count\":0,\"hash\":\"76272DC4FAF660733711F58C736830D27159FB55\"}\n"
    );

    let out = seekless(&["pwned", "verify", idx], b"");
    assert!(out.status.success());

    let out = seekless(&["pwned", "export", idx], b"");
    assert_eq!(
        text(&out.stdout),
        "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:9545825\n\
         7C4A8D09CA3762AF61E59520943DC26494F8941B:37359195\n\
         B1B3773A05C0ED0176787A4F1574FF0075F7521E:4\n\
         F7C3BC1D808E04732ADF679965CCC34CA7AE3441:1\n"
    );
    // Export, then prepare the export: the same corpus.
    let exported = dir.join("exported.txt");
    let out = seekless(
        &[
            "pwned",
            "export",
            idx,
            "--crlf",
            "-o",
            exported.to_str().unwrap(),
        ],
        b"",
    );
    assert!(out.status.success());
    let again = dir.join("again.idx");
    let out = prepare(&exported, &again, &[]);
    assert!(out.status.success());
    let reexported = seekless(&["pwned", "export", again.to_str().unwrap(), "--crlf"], b"");
    assert_eq!(
        text(&reexported.stdout),
        std::fs::read_to_string(&exported).unwrap()
    );

    // Damage a page: verify says so with exit 1.
    let mut bytes = std::fs::read(&index).unwrap();
    bytes[4096 + 100] ^= 0x10;
    std::fs::write(&index, bytes).unwrap();
    let out = seekless(&["pwned", "verify", idx], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stdout).contains("checksum"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn a_bad_line_stops_prepare_with_file_and_line() {
    let dir = TempDir::new("cli-bad");
    let corpus = dir.join("corpus.txt");
    std::fs::write(
        &corpus,
        format!("{CORPUS}\r\n5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:x\r\n"),
    )
    .unwrap();
    let index = dir.join("pwned.idx");
    let out = prepare(&corpus, &index, &["--memory", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        format!(
            "{}:6: count \"x\" is not a decimal number\n",
            corpus.display()
        )
    );
    assert_eq!(files(&dir), ["corpus.txt"], "nothing may be left behind");

    let out = prepare(&corpus, &index, &["--skip-invalid"]);
    assert!(out.status.success());
    assert!(
        text(&out.stdout).contains("4 SHA-1 hashes from 6 lines (1 skipped) in")
            && text(&out.stdout).contains("1 invalid line skipped"),
        "{}",
        text(&out.stdout)
    );

    // Standard input, NTLM.
    let out = seekless(
        &["pwned", "prepare", "-", "-o", index.to_str().unwrap()],
        b"8846F7EAEE8FB117AD06BDD830B7586C:5\n",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = seekless(
        &["pwned", "check", "-i", index.to_str().unwrap(), "password"],
        b"",
    );
    assert!(
        text(&out.stdout).starts_with("5\t8846F7EAEE8FB117AD06BDD830B7586C"),
        "{}",
        text(&out.stdout)
    );

    let out = seekless(
        &["pwned", "check", "-i", corpus.to_str().unwrap(), "x"],
        b"",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("not a seekless pwned index"));
}

/// A build killed with SIGKILL while it spills and writes leaves nothing
/// behind: its spill files and the half-written index have no names.
#[cfg(target_os = "linux")]
#[test]
fn a_killed_prepare_leaves_no_files() {
    let dir = TempDir::new("cli-killed");
    let input = dir.join("corpus.txt");
    let mut text = String::with_capacity(400_000 * 48);
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for i in 0..400_000u64 {
        let mut hex = String::new();
        for _ in 0..3 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            hex.push_str(&format!("{x:016X}"));
        }
        text.push_str(&hex[..40]);
        text.push_str(&format!(":{}\r\n", 1 + i % 97));
    }
    std::fs::write(&input, text).unwrap();
    let out_dir = dir.join("out");
    std::fs::create_dir_all(&out_dir).unwrap();
    let output = out_dir.join("pwned.idx");
    let mut child = Command::new(env!("CARGO_BIN_EXE_seekless"))
        .args(["pwned", "prepare", "--memory", "1M", "--threads", "2", "-o"])
        .arg(&output)
        .arg(&input)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the build holds files in the output directory (spills or
    // the index), then kill it there.
    let fds = format!("/proc/{}/fd", child.id());
    let out_prefix = out_dir.to_string_lossy().into_owned();
    let mut held = false;
    for _ in 0..2000 {
        held = std::fs::read_dir(&fds)
            .into_iter()
            .flatten()
            .flatten()
            .any(|fd| {
                std::fs::read_link(fd.path())
                    .is_ok_and(|target| target.to_string_lossy().starts_with(&out_prefix))
            });
        if held || child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    assert!(
        held,
        "the build never opened a file in its output directory"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(files(&out_dir), Vec::<String>::new());
}

fn refused(out: &Output, what: &str) {
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(what), "{stderr}");
    assert!(stderr.contains("nothing was changed"), "{stderr}");
}

#[test]
fn commands_never_write_over_their_input() {
    let dir = TempDir::new("cli-self-overwrite");
    let corpus = dir.join("same.txt");
    std::fs::write(&corpus, CORPUS).unwrap();
    let index = common::prepare_index(CORPUS, &dir.join("c.txt"), &dir.join("p.idx"));
    std::fs::create_dir(dir.join("ranges")).unwrap();
    std::fs::write(
        dir.join("ranges/5BAA6.txt"),
        "1E4C9B93F3F0682250B6CF8331B7EE68FD8:3\r\n",
    )
    .unwrap();
    // The same file by another name: a hard link, a symbolic link.
    std::fs::hard_link(&corpus, dir.join("hard.txt")).unwrap();
    std::os::unix::fs::symlink(&index, dir.join("link.idx")).unwrap();
    let before = snapshot(&dir);
    let d = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    for (args, what) in [
        (
            vec!["pwned", "prepare", &d("same.txt"), "-o", &d("same.txt")],
            "is the input",
        ),
        (
            vec!["pwned", "prepare", &d("same.txt"), "-o", &d("hard.txt")],
            "is the input",
        ),
        (
            vec![
                "pwned",
                "prepare",
                &d("c.txt"),
                &d("same.txt"),
                "-o",
                &d("same.txt"),
            ],
            "is the input",
        ),
        (
            vec![
                "pwned",
                "prepare",
                &d("ranges"),
                "-o",
                &d("ranges/5BAA6.txt"),
            ],
            "inside the input directory",
        ),
        (
            vec!["pwned", "export", &d("p.idx"), "-o", &d("p.idx")],
            "is the input",
        ),
        (
            vec!["pwned", "export", &d("link.idx"), "-o", &d("p.idx")],
            "is the input",
        ),
        (
            vec!["pwned", "export", &d("p.idx"), "-o", &d("link.idx")],
            "is the input",
        ),
    ] {
        refused(&seekless(&args, b""), what);
        assert_eq!(snapshot(&dir), before, "{args:?}");
    }
    let verified = seekless(&["pwned", "verify", &d("p.idx")], b"");
    assert!(verified.status.success(), "{}", text(&verified.stdout));
    // Another output in the same places works.
    let out = prepare(&corpus, &dir.join("other.idx"), &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn sorted_standard_input_streams_and_a_late_disorder_falls_back() {
    let dir = TempDir::new("cli-sorted-stdin");
    // 250,000 distinct hashes, sorted: about 11 MB, three read chunks.
    let mut rng = Rng::lcg(0x5eed);
    let mut lines: Vec<String> = (0..250_000)
        .map(|i| {
            let mut hex = String::new();
            while hex.len() < 40 {
                let state = rng.next_u64();
                hex.push_str(&format!("{:016X}", state ^ (state >> 29)));
            }
            hex.truncate(40);
            format!("{hex}:{}", 1 + i % 97)
        })
        .collect();
    lines.sort();
    let sorted = lines.join("\r\n");
    // Disorder late: the second line moved to the very end, after the
    // whole input streamed through. Other orders, repeated hashes and the
    // counts merged on the way are the library's tests (tests/build.rs of
    // seekless-pwned); here, what a pipe and a redirected file change.
    let mut late = lines.clone();
    let second = late.remove(1);
    late.push(second);
    let late = late.join("\n");
    let index = dir.join("p.idx");
    let idx = index.to_str().unwrap();
    let mut exports = Vec::new();
    for (input, streamed, read) in [(&sorted, true, 250_000), (&late, false, 250_000)] {
        let out = seekless(&["pwned", "prepare", "-", "-o", idx], input.as_bytes());
        assert!(out.status.success(), "{}", text(&out.stderr));
        let stdout = text(&out.stdout);
        assert!(
            stdout.contains(&format!("250000 SHA-1 hashes from {read} lines")),
            "{stdout}"
        );
        assert_eq!(stdout.contains("input in hash order"), streamed, "{stdout}");
        assert!(seekless(&["pwned", "verify", idx], b"").status.success());
        exports.push(seekless(&["pwned", "export", idx], b"").stdout);
        // Standard input redirected from a file is mapped as the named
        // file is (over 8 MiB): the same index, streamed or not alike.
        let piped = std::fs::read(&index).unwrap();
        let file = dir.join("input.txt");
        std::fs::write(&file, input).unwrap();
        let out = Command::new(common::SEEKLESS)
            .args(["pwned", "prepare", "-", "-o", idx])
            .stdin(std::fs::File::open(&file).unwrap())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout).contains("input in hash order"), streamed);
        assert!(std::fs::read(&index).unwrap() == piped);
    }
    // A redirected file something has read part of is read from where
    // it stands.
    let file = dir.join("input.txt");
    std::fs::write(&file, &sorted).unwrap();
    let mut partly = std::fs::File::open(&file).unwrap();
    std::io::Seek::seek(
        &mut partly,
        std::io::SeekFrom::Start(lines[0].len() as u64 + 2),
    )
    .unwrap();
    let out = Command::new(common::SEEKLESS)
        .args(["pwned", "prepare", "-", "-o", idx])
        .stdin(partly)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("249999 SHA-1 hashes from 249999 lines"),
        "{}",
        text(&out.stdout)
    );
    assert!(
        exports.iter().all(|e| *e == exports[0]),
        "the same corpus whatever the order"
    );
    let mut want = sorted.replace("\r\n", "\n");
    want.push('\n');
    assert!(exports[0] == want.as_bytes());
}

#[test]
fn a_compact_index_answers_check_and_okon_and_refuses_what_needs_whole_hashes() {
    let dir = TempDir::new("cli-compact");
    let corpus = dir.join("corpus.txt");
    // Two hashes that share their top 64 bits (and differ after).
    let twin = "5BAA61E4C9B93F3F0000000000000000000000AA:10\n";
    std::fs::write(&corpus, format!("{CORPUS}\n{twin}")).unwrap();
    let index = dir.join("compact.idx");
    let idx = index.to_str().unwrap();
    let out = prepare(&corpus, &index, &["--key-bits", "64"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let summary = text(&out.stdout);
    assert!(summary.contains("4 SHA-1 hashes from 6 lines"), "{summary}");
    assert!(
        summary.contains("top 64 bits of each hash kept"),
        "{summary}"
    );

    let out = seekless(
        &["pwned", "check", "-i", idx, "password", "123456", "nope"],
        b"",
    );
    // "password" shares its top 64 bits with the twin: the counts summed.
    assert_eq!(counts(&out), ["9545835", "37359195", "0"]);
    assert_eq!(
        okon(idx, "7C4A8D09CA3762AF61E59520943DC26494F8941B"),
        (Some(1), "1\n".into())
    );
    assert_eq!(
        okon(idx, "7C4A8D09CA3762AE61E59520943DC26494F8941B"),
        (Some(0), "0\n".into())
    );

    let out = seekless(&["pwned", "stats", idx], b"");
    let stats = text(&out.stdout);
    assert!(
        stats.contains("format_version\t4")
            && stats.contains("key_bits\t64")
            && stats.contains("false_positive_rate\t2.168e-19"),
        "{stats}"
    );
    let out = seekless(&["pwned", "verify", idx], b"");
    assert!(out.status.success(), "{}", text(&out.stdout));

    // Export and serve need whole hashes: refused, nothing written.
    let exported = dir.join("out.txt");
    let out = seekless(
        &["pwned", "export", idx, "-o", exported.to_str().unwrap()],
        b"",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("top 64 bits"),
        "{}",
        text(&out.stderr)
    );
    assert!(!exported.exists());
    #[cfg(feature = "serve")]
    {
        let mut child = Command::new(env!("CARGO_BIN_EXE_seekless"))
            .args(["pwned", "serve", "--index", idx, "--listen", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while child.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap();
            panic!("serve started on a compact index");
        }
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(
            text(&out.stderr).contains("top 64 bits"),
            "{}",
            text(&out.stderr)
        );
    }

    // Fewer than 32 bits, or more than SHA-1 has: refused.
    for bits in ["31", "161"] {
        let out = prepare(&corpus, &dir.join("no.idx"), &["--key-bits", bits]);
        assert_eq!(out.status.code(), Some(2));
        assert!(
            text(&out.stderr).contains("from 32 to 160 bits"),
            "{}",
            text(&out.stderr)
        );
    }
}

#[test]
fn a_subset_answers_0_for_the_hashes_it_left_out() {
    let dir = TempDir::new("cli-subset");
    let corpus = dir.join("corpus.txt");
    std::fs::write(&corpus, CORPUS).unwrap();
    let index = dir.join("top.idx");
    let idx = index.to_str().unwrap();
    // "password" is listed twice (9545824 and 1): kept, by its sum.
    let out = prepare(&corpus, &index, &["--min-count", "9545825"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let summary = text(&out.stdout);
    assert!(summary.contains("2 SHA-1 hashes from 5 lines"), "{summary}");
    assert!(
        summary.contains("only the hashes seen at least 9545825 times kept: 2 hashes left out"),
        "{summary}"
    );

    let out = seekless(
        &["pwned", "check", "-i", idx, "--hashes"],
        b"5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8\n7C4A8D09CA3762AF61E59520943DC26494F8941B\n\
          B1B3773A05C0ED0176787A4F1574FF0075F7521E\nF7C3BC1D808E04732ADF679965CCC34CA7AE3441\n",
    );
    assert!(out.status.success());
    assert_eq!(counts(&out), ["9545825", "37359195", "0", "0"]);
    assert_eq!(
        okon(idx, "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8"),
        (Some(1), "1\n".into())
    );
    assert_eq!(
        okon(idx, "B1B3773A05C0ED0176787A4F1574FF0075F7521E"),
        (Some(0), "0\n".into()),
        "left out: not found"
    );

    let out = seekless(&["pwned", "stats", idx], b"");
    let stats = text(&out.stdout);
    assert!(
        stats.contains("format_version\t5") && stats.contains("min_count\t9545825"),
        "{stats}"
    );
    let out = seekless(&["pwned", "stats", "--json", idx], b"");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["min_count"], 9545825);
    assert!(seekless(&["pwned", "verify", idx], b"").status.success());
    let out = seekless(&["pwned", "export", idx], b"");
    assert_eq!(
        text(&out.stdout),
        "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:9545825\n\
         7C4A8D09CA3762AF61E59520943DC26494F8941B:37359195\n"
    );

    // 0 is no minimum; a bundle cannot take an index to another minimum.
    let out = prepare(&corpus, &dir.join("zero.idx"), &["--min-count", "0"]);
    assert_eq!(out.status.code(), Some(2));
    #[cfg(feature = "update")]
    {
        let out = seekless(
            &[
                "pwned",
                "update",
                idx,
                "--from-bundle",
                "changes.bundle",
                "--min-count",
                "2",
            ],
            b"",
        );
        assert_eq!(out.status.code(), Some(2));
        assert!(
            text(&out.stderr).contains("cannot be used with"),
            "{}",
            text(&out.stderr)
        );
    }
    assert_eq!(files(&dir), ["corpus.txt", "top.idx"]);
}

#[test]
fn check_reports_malformed_inputs_by_line() {
    let dir = TempDir::new("cli-check-lines");
    let corpus = dir.join("corpus.txt");
    std::fs::write(&corpus, CORPUS).unwrap();
    let index = dir.join("pwned.idx");
    assert!(prepare(&corpus, &index, &[]).status.success());
    let idx = index.to_str().unwrap();
    let input = b"f7c3bc1d808e04732adf679965ccc34ca7ae3441\n\
        B1B3773A05C0ED0176787A4F1574FF0075F7521E\r\n\
        \n\
        5BAA61E4\n\
        0000000000000000000000000000000000000000\n";
    // Stops at the first bad line (line 3, blank), after answering those
    // before it; status 2.
    let out = seekless(&["pwned", "check", "-i", idx, "--hashes"], input);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stdout).lines().count(), 2);
    assert_eq!(text(&out.stderr), "-:3: blank line: expected a hash\n");
    // --skip-invalid: every bad line reported, the others answered.
    let out = seekless(
        &["pwned", "check", "-i", idx, "--hashes", "--skip-invalid"],
        input,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(counts(&out), ["1", "4", "0"]);
    assert_eq!(
        text(&out.stderr),
        "-:3: blank line: expected a hash (skipped)\n\
         -:4: bad hash \"5BAA61E4\": expected 40 hex digits of SHA-1 (skipped)\n"
    );
    // Line numbers run on across batches (4,096 lines each).
    let mut many = b"0000000000000000000000000000000000000000\n".repeat(5000);
    many.extend_from_slice(b"not hex\n");
    let out = seekless(&["pwned", "check", "-i", idx, "--hashes"], &many);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stdout).lines().count(), 5000);
    assert!(
        text(&out.stderr).starts_with("-:5001: bad hash \"not hex\""),
        "{}",
        text(&out.stderr)
    );
    // Arguments are numbered too; bytes that are not UTF-8 are named.
    let out = seekless(
        &[
            "pwned",
            "check",
            "-i",
            idx,
            "--hashes",
            &"0".repeat(40),
            "xyz",
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).starts_with("arg:2: bad hash \"xyz\""));
    let out = seekless(&["pwned", "check", "-i", idx], b"password\n\xff\xfe\n");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stderr), "-:2: not UTF-8\n");
}

#[test]
fn inputs_of_the_wrong_kind_are_named_or_read() {
    use std::io::Write as _;
    let dir = TempDir::new("cli-wrong-kind");
    let corpus = dir.join("corpus.txt");
    std::fs::write(&corpus, CORPUS).unwrap();
    let plain = dir.join("plain.idx");
    assert!(prepare(&corpus, &plain, &[]).status.success());
    // gzip (in several members, as concatenated .gz files are) is read
    // through a decompressor: the same index.
    let gz = dir.join("corpus.txt.gz");
    let (first, second) = CORPUS.split_at(CORPUS.len() / 2);
    let mut bytes = Vec::new();
    for part in [first, second] {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(part.as_bytes()).unwrap();
        bytes.extend(encoder.finish().unwrap());
    }
    std::fs::write(&gz, bytes).unwrap();
    let from_gz = dir.join("gz.idx");
    let out = prepare(&gz, &from_gz, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let export = |index: &Path| seekless(&["pwned", "export", index.to_str().unwrap()], b"").stdout;
    assert_eq!(export(&from_gz), export(&plain));
    // A damaged gzip file is an error naming it, and leaves no index.
    let broken = dir.join("broken.gz");
    let whole = std::fs::read(&gz).unwrap();
    let mut damaged = whole[..whole.len() / 2].to_vec();
    damaged.extend_from_slice(&[0xFF; 16]);
    std::fs::write(&broken, damaged).unwrap();
    let out = prepare(&broken, &dir.join("broken.idx"), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains(broken.to_str().unwrap()),
        "{}",
        text(&out.stderr)
    );
    assert!(!dir.join("broken.idx").exists());
    // Formats prepare cannot read, and an index given as a corpus: named,
    // with what to do instead; status 2.
    for (name, head, says) in [
        (
            "c.zst",
            &[0x28u8, 0xB5, 0x2F, 0xFD, 0, 0][..],
            "is zstd-compressed: decompress it",
        ),
        (
            "c.7z",
            &[0x37, 0x7A, 0xBC, 0xAF, 0x27, 0x1C, 0, 4][..],
            "is a 7z archive",
        ),
        ("c.zip", b"PK\x03\x04rest", "is a zip archive"),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, head).unwrap();
        let out = prepare(&path, &dir.join("x.idx"), &[]);
        assert_eq!(out.status.code(), Some(2));
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains(path.to_str().unwrap()) && stderr.contains(says),
            "{stderr}"
        );
    }
    let out = prepare(&plain, &dir.join("x.idx"), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("is a seekless index, not a corpus"),
        "{}",
        text(&out.stderr)
    );
    // A directory or a corpus given as an index: the file named.
    let d = dir.to_str().unwrap();
    let c = corpus.to_str().unwrap();
    for args in [
        vec!["pwned", "check", "-i", d, "x"],
        vec!["pwned", "stats", d],
        vec!["pwned", "verify", d],
        vec!["pwned", "export", d],
    ] {
        let out = seekless(&args, b"");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(
            text(&out.stderr),
            format!("seekless: {d}: is a directory, not an index\n"),
            "{args:?}"
        );
    }
    for args in [
        vec!["pwned", "check", "-i", c, "x"],
        vec!["pwned", "stats", c],
    ] {
        let out = seekless(&args, b"");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).starts_with(&format!("seekless: {c}: not a seekless pwned index")),
            "{args:?}"
        );
    }
}

/// `pwned check` on a terminal (a pseudo-terminal from util-linux's
/// `script`): what is typed is not shown, the answers are.
#[test]
fn typed_passwords_are_not_echoed() {
    use std::io::Read as _;
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: util-linux script is needed for a pseudo-terminal");
        return;
    }
    let command = format!("{} pwned check", env!("CARGO_BIN_EXE_seekless"));
    let mut child = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut seen = Vec::new();
    let mut wait_for = |text: &str, seen: &mut Vec<u8>| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(seen).contains(text) {
            assert!(
                std::time::Instant::now() < deadline,
                "no {text:?} in {}",
                text_of(seen)
            );
            let n = stdout.read(&mut buf).unwrap();
            assert!(n > 0, "ended before {text:?}: {}", text_of(seen));
            seen.extend_from_slice(&buf[..n]);
        }
    };
    // The prompt comes once echo is off; then type.
    wait_for("end with Ctrl-D", &mut seen);
    stdin.write_all(b"correct horse 77\n").unwrap();
    stdin.flush().unwrap();
    // Its answer: the hash of what was typed.
    wait_for("CF273D5FF79AC305B553FB930CB5149ABA57A5BD", &mut seen);
    stdin.write_all(b"\x04").unwrap();
    drop(stdin);
    let mut rest = Vec::new();
    let _ = stdout.read_to_end(&mut rest);
    seen.extend(rest);
    let _ = child.wait();
    let shown = text_of(&seen);
    assert!(
        !shown.contains("correct horse"),
        "the password was echoed: {shown}"
    );
}

fn text_of(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `n` random hashes of `hex` digits with counts from 1 to 1,000, a few
/// of them in the first and last ranges, as `HASH:COUNT` lines.
fn random_corpus(hex: usize, n: usize, seed: u64) -> String {
    let mut x = seed;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut text = String::new();
    for i in 0..n {
        let digits: String = (0..hex.div_ceil(16))
            .map(|_| format!("{:016X}", next()))
            .collect();
        let digits = match i % 100 {
            0 => format!("00000{}", &digits[5..hex]),
            1 => format!("FFFFF{}", &digits[5..hex]),
            _ => digits[..hex].to_string(),
        };
        text.push_str(&format!("{digits}:{}\n", 1 + next() % 1000));
    }
    text
}

/// `pwned export --ranges` writes every range as the downloader does (the
/// range API's answer: CRLF between lines, none after the last), and
/// `prepare` reads the directory back into the same index; `--min-count`
/// leaves out the rarer hashes in both forms. SHA-1: the million files
/// take half a minute a kind, and what differs for NTLM (the width of the
/// suffixes) the pwned crate's tests check, in `export.rs` and
/// tests/build.rs.
#[test]
fn export_ranges_reads_back_as_the_same_index() {
    // A million files: in memory where there is a tmpfs.
    let dir = TempDir::in_memory("cli-export-ranges");
    let d = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let (kind, hex) = ("sha1", 40);
    let corpus = random_corpus(hex, 20_000, 0x9E37_79B9 + hex as u64);
    let index = d(&format!("{kind}.idx"));
    common::prepare_index(&corpus, &dir.join(format!("{kind}.txt")), Path::new(&index));
    let ranges = d(&format!("{kind}-ranges"));
    // An empty directory is filled; the new one appears whole.
    std::fs::create_dir(&ranges).unwrap();
    let out = seekless(&["pwned", "export", &index, "--ranges", &ranges], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("1048576 files, 20000 hashes"),
        "{}",
        text(&out.stdout)
    );
    let names = files(Path::new(&ranges));
    assert_eq!(names.len(), 1 << 20);
    assert_eq!(
        (&names[0][..], &names[(1 << 20) - 1][..]),
        ("00000.txt", "FFFFF.txt")
    );
    // The first range as the API answers it: its lines sorted, suffixes
    // uppercase, CRLF between lines and none after the last.
    let mut want: Vec<String> = corpus
        .lines()
        .filter(|l| l.starts_with("00000"))
        .map(|l| l[5..].to_string())
        .collect();
    want.sort();
    let first = std::fs::read_to_string(dir.join(format!("{kind}-ranges/00000.txt"))).unwrap();
    assert_eq!(first, want.join("\r\n"));
    let empty = names.iter().any(|n| {
        std::fs::metadata(dir.join(format!("{kind}-ranges")).join(n))
            .unwrap()
            .len()
            == 0
    });
    assert!(empty, "20,000 hashes leave most ranges empty");
    let back = d(&format!("{kind}-back.idx"));
    let out = prepare(Path::new(&ranges), Path::new(&back), &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let exported = |index: &str, extra: &[&str]| {
        let mut args = vec!["pwned", "export", index];
        args.extend_from_slice(extra);
        seekless(&args, b"").stdout
    };
    let whole = exported(&index, &[]);
    assert_eq!(whole.iter().filter(|&&b| b == b'\n').count(), 20_000);
    assert!(whole == exported(&back, &[]), "{kind}: not the same corpus");
    std::fs::remove_dir_all(&ranges).unwrap();

    // Only counts of 500 and more (per-range files filter the same
    // way: the library's tests check it, without a million files).
    let common = exported(&index, &["--min-count", "500"]);
    let whole = text(&whole);
    let want: Vec<&str> = whole
        .lines()
        .filter(|l| l.rsplit(':').next().unwrap().parse::<u64>().unwrap() >= 500)
        .collect();
    assert!(!want.is_empty() && want.len() < 20_000);
    assert_eq!(text(&common).lines().collect::<Vec<_>>(), want);
}

/// A directory in the way of `export --ranges` (not empty, or a file) is
/// refused before anything is written, and left as it was.
#[test]
fn export_ranges_refuses_what_is_in_the_way() {
    let dir = TempDir::new("cli-export-refused");
    let d = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let index = d("p.idx");
    common::prepare_index(CORPUS, &dir.join("p.txt"), Path::new(&index));
    std::fs::create_dir(dir.join("taken")).unwrap();
    std::fs::write(dir.join("taken/00000.txt"), b"mine").unwrap();
    let before = snapshot(&dir);
    for (target, what) in [
        (d("taken"), "exists and is not empty"),
        (index.clone(), "exists and is not a directory"),
    ] {
        let out = seekless(&["pwned", "export", &index, "--ranges", &target], b"");
        assert_eq!(out.status.code(), Some(2), "{target}");
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains(&target) && stderr.contains(what) && stderr.lines().count() == 1,
            "{stderr}"
        );
        assert_eq!(snapshot(&dir), before, "{target}");
    }
    // --crlf is for the sorted file; -o and --ranges exclude each other.
    for extra in [&["--crlf"][..], &["-o", "x.txt"]] {
        let mut args = vec!["pwned", "export", &index, "--ranges", "elsewhere"];
        args.extend_from_slice(extra);
        assert_eq!(seekless(&args, b"").status.code(), Some(2), "{extra:?}");
    }
}

/// `text` as UTF-16 after its byte-order mark, as Windows PowerShell 5.1's
/// `>` and `Out-File` write it (little-endian), or big-endian.
fn utf16(text: &str, big: bool) -> Vec<u8> {
    let units = "\u{feff}".encode_utf16().chain(text.encode_utf16());
    let swap = |u: u16| if big { u.swap_bytes() } else { u };
    units.flat_map(|u| swap(u).to_le_bytes()).collect()
}

/// Text written on Windows: a UTF-8 byte-order mark is skipped, UTF-16 LE
/// and BE with their marks are read as they are (files, gzip, standard
/// input), each to the same index as the plain file; UTF-16 without a
/// mark, or cut in the middle of a character, is refused saying so.
#[test]
fn corpora_written_on_windows_are_read() {
    use std::io::Write as _;
    let dir = TempDir::new("cli-windows-text");
    // Larger than prepare maps (8 MiB), CRLF as Windows writes.
    let corpus = random_corpus(40, 200_000, 77).replace('\n', "\r\n");
    let plain = dir.join("plain.txt");
    std::fs::write(&plain, &corpus).unwrap();
    let want = dir.join("plain.idx");
    assert!(prepare(&plain, &want, &[]).status.success());
    let export = |index: &Path| seekless(&["pwned", "export", index.to_str().unwrap()], b"").stdout;
    let want = export(&want);
    let mut bom = vec![0xEF, 0xBB, 0xBF];
    bom.extend_from_slice(corpus.as_bytes());
    let gzip = |bytes: &[u8]| {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    };
    let le = utf16(&corpus, false);
    for (name, bytes) in [
        ("utf8-bom.txt", bom.clone()),
        ("utf16le.txt", le.clone()),
        ("utf16be.txt", utf16(&corpus, true)),
        ("utf16le.txt.gz", gzip(&le)),
        ("utf8-bom.txt.gz", gzip(&bom)),
    ] {
        let input = dir.join(name);
        std::fs::write(&input, bytes).unwrap();
        let index = dir.join(format!("{name}.idx"));
        let out = prepare(&input, &index, &[]);
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        assert!(text(&out.stdout).contains("200000 SHA-1 hashes"), "{name}");
        assert!(export(&index) == want, "{name}: another corpus");
    }
    // Standard input: a pipe, and a file redirected (which prepare maps
    // when it can).
    let index = dir.join("stdin.idx");
    let args = ["pwned", "prepare", "-", "-o", index.to_str().unwrap()];
    let out = seekless(&args, &le);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(export(&index) == want, "UTF-16 on a pipe");
    for name in ["utf8-bom.txt", "utf16be.txt"] {
        let out = Command::new(env!("CARGO_BIN_EXE_seekless"))
            .args(args)
            .stdin(std::fs::File::open(dir.join(name)).unwrap())
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        assert!(export(&index) == want, "{name} on standard input");
    }
    // Refused: no mark, an odd length; nothing is written.
    let no_mark = dir.join("no-mark.txt");
    std::fs::write(&no_mark, &le[2..]).unwrap();
    let mut odd = le.clone();
    odd.push(b'7');
    let odd_file = dir.join("odd.txt");
    std::fs::write(&odd_file, odd).unwrap();
    for (input, what) in [
        (&no_mark, "looks like UTF-16 LE without a byte-order mark"),
        (&odd_file, "odd number of bytes"),
    ] {
        let index = dir.join("refused.idx");
        let out = prepare(input, &index, &[]);
        assert_eq!(out.status.code(), Some(2), "{what}");
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains(input.to_str().unwrap()) && stderr.contains(what),
            "{stderr}"
        );
        assert!(!index.exists());
    }
    assert!(text(&prepare(&no_mark, &dir.join("r.idx"), &[]).stderr).contains("iconv -f UTF-16LE"));
}
