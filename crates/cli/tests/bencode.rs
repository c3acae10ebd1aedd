//! `seekless bencode …` and `seekless torrent …` end to end.
#![cfg(feature = "bencode")]

use std::path::{Path, PathBuf};

use seekless_testkit::TempDir;

use crate::common;
use common::snapshot;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../bencode/tests/data")
        .join(name)
}

/// Writes `content` to `name` under `dir` (making its folders); its path.
fn put(dir: &Path, name: &str, content: &[u8]) -> PathBuf {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&path, content).unwrap();
    path
}

fn run(args: &[&str], stdin: Option<&[u8]>) -> (i32, String, String) {
    let out = common::run(args, stdin.unwrap_or_default());
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn check_prints_one_line_per_file() {
    let tmp = TempDir::new("cli-bencode-check");
    let good = put(
        &tmp,
        "good.torrent",
        include_bytes!("../../bencode/tests/data/sample.torrent"),
    );
    let bad = put(&tmp, "bad.bin", b"d1:ai1e");
    let unsorted = put(&tmp, "unsorted.bin", b"d1:bi1e1:ai2ee");
    let g = good.to_str().unwrap();
    let b = bad.to_str().unwrap();
    let u = unsorted.to_str().unwrap();

    let (code, stdout, stderr) = run(&["bencode", "check", g, u], None);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, format!("{g}\tok\n{u}\tok\n"));
    assert_eq!(
        stderr,
        format!(
            "seekless: {u}: warning: 1 BEP 3 violation, first: unsorted dictionary key at byte 7\n"
        )
    );

    let (code, stdout, _) = run(&["bencode", "check", g, b, u], None);
    assert_eq!(code, 1);
    assert_eq!(
        stdout,
        format!("{g}\tok\n{b}\terror\tunexpected_eof\t7\n{u}\tok\n")
    );

    let (code, stdout, _) = run(&["bencode", "check", "--strict", g, u], None);
    assert_eq!(code, 1);
    assert_eq!(stdout, format!("{g}\tok\n{u}\terror\tunsorted_key\t7\n"));
}

#[test]
fn check_reads_stdin_and_reports_every_kind() {
    for (input, line) in [
        (&b"i12x"[..], "-\terror\texpected_digit\t3\n"),
        (b"12", "-\terror\texpected_colon\t2\n"),
        (b"d1:ae", "-\terror\texpected_value\t4\n"),
        (b"i123456789012345678901e", "-\terror\toverflow\t22\n"),
        (b"le", "-\tok\n"),
    ] {
        let (code, stdout, _) = run(&["bencode", "check", "-"], Some(input));
        assert_eq!(stdout, line);
        assert_eq!(code, if line.ends_with("ok\n") { 0 } else { 1 });
    }
    let deep = [b'l'; 150];
    let (code, stdout, _) = run(&["bencode", "check", "-"], Some(&deep));
    assert_eq!(
        (code, stdout.as_str()),
        (1, "-\terror\tdepth_exceeded\t100\n")
    );
    for (input, kind) in [
        (&b"i-0e"[..], "negative_zero\t1"),
        (b"i01e", "leading_zero\t1"),
        (b"d1:ai1e1:ai1ee", "duplicate_key\t7"),
        (b"i1ei2e", "trailing_data\t3"),
    ] {
        let (code, stdout, _) = run(&["bencode", "check", "--strict", "-"], Some(input));
        assert_eq!((code, stdout), (1, format!("-\terror\t{kind}\n")));
    }
}

#[test]
fn check_missing_file_is_one_clear_error() {
    let (code, stdout, stderr) = run(&["bencode", "check", "/nonexistent/x.torrent"], None);
    assert_eq!(code, 2);
    assert!(stdout.is_empty());
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("seekless: /nonexistent/x.torrent: "),
        "{stderr}"
    );
}

#[test]
fn dump_prints_json() {
    let (code, stdout, _) = run(
        &["bencode", "dump", "-"],
        Some(b"d3:cow3:moo4:spaml1:ai-7ee3:bin2:\xff\x00e"),
    );
    assert_eq!(code, 0);
    assert_eq!(
        stdout,
        "{\"cow\":\"moo\",\"spam\":[\"a\",-7],\"bin\":{\"$hex\":\"ff00\"}}\n"
    );
    // What the first mapping printed alike prints apart.
    let (_, a, _) = run(&["bencode", "dump", "-"], Some(b"d3:hex2:ffe"));
    let (_, b, _) = run(&["bencode", "dump", "-"], Some(b"1:\xff"));
    assert_eq!(
        (a.as_str(), b.as_str()),
        ("{\"hex\":\"ff\"}\n", "{\"$hex\":\"ff\"}\n")
    );
    let (_, dup, _) = run(&["bencode", "dump", "-"], Some(b"d1:ai1e1:ai2ee"));
    assert_eq!(dup, "{\"$dict\":[[\"a\",1],[\"a\",2]]}\n");
    let (code, stdout, _) = run(
        &["bencode", "dump", data("sample.torrent").to_str().unwrap()],
        None,
    );
    assert_eq!(code, 0);
    assert!(
        stdout.starts_with('{') && stdout.contains("\"piece length\":"),
        "{stdout}"
    );
    // Invalid input is an error: status 2.
    let (code, stdout, stderr) = run(&["bencode", "dump", "-"], Some(b"d1:a"));
    assert_eq!(code, 2);
    assert!(stdout.is_empty());
    assert_eq!(stderr, "seekless: -: unexpected end of input at byte 4\n");
}

/// `seekless bencode encode INPUT -o OUTPUT`.
fn encode(input: &Path, output: &Path) -> (i32, String, String) {
    let (input, output) = (input.to_str().unwrap(), output.to_str().unwrap());
    run(&["bencode", "encode", input, "-o", output], None)
}

#[test]
fn dump_then_encode_gives_back_the_exact_bytes() {
    let tmp = TempDir::new("cli-bencode-encode");
    let mut inputs: Vec<Vec<u8>> = [
        "sample.torrent",
        "base-v1.torrent",
        "base-v2.torrent",
        "v2_hybrid.torrent",
        "v2_multiple_files.torrent",
        "many-pad-files.torrent",
    ]
    .iter()
    .map(|name| std::fs::read(data(name)).unwrap())
    .collect();
    inputs.extend(
        [
            &b"d1:bi007e1:ai-0e1:a03:abc2:\xff\xfele4:$hexi1ee"[..],
            b"i1e and more",
            b"d4:$raw0:e",
        ]
        .map(<[u8]>::to_vec),
    );
    for (i, bytes) in inputs.iter().enumerate() {
        let input = put(&tmp, &format!("in-{i}"), bytes);
        let (code, json, stderr) = run(&["bencode", "dump", input.to_str().unwrap()], None);
        assert_eq!(code, 0, "{stderr}");
        // To standard output, from standard input.
        let out = common::run(&["bencode", "encode"], json.as_bytes());
        assert_eq!(out.status.code(), Some(0));
        assert!(out.stdout == *bytes, "{i}: {json}");
        // To a file, from a file.
        let json_file = put(&tmp, &format!("in-{i}.json"), json.as_bytes());
        let output = tmp.join(format!("out-{i}"));
        let (code, stdout, stderr) = encode(&json_file, &output);
        assert_eq!((code, stdout.as_str(), stderr.as_str()), (0, "", ""));
        assert!(std::fs::read(&output).unwrap() == *bytes, "{i}");
    }
}

#[test]
fn encode_names_the_line_and_column_of_bad_json_and_writes_nothing() {
    let tmp = TempDir::new("cli-bencode-encode-bad");
    let output = tmp.join("out.torrent");
    for (json, expected) in [
        (
            &b"{\"a\": [1,\n  2.5]}"[..],
            "2:4: bencode has integers only: no fraction or exponent at byte 13",
        ),
        (
            b"{\"a\": true}",
            "1:7: true, false and null have no bencode form at byte 6",
        ),
        (b"[1, 2", "1:6: expected ',' or ']' at byte 5"),
        (
            b"{\"$hex\": \"f\"}",
            "1:10: expected a string of hex digits at byte 9",
        ),
        (b"\xff", "1:1: JSON text must be UTF-8 at byte 0"),
    ] {
        let input = put(&tmp, "in.json", json);
        let (code, stdout, stderr) = encode(&input, &output);
        assert_eq!(code, 2, "{stderr}");
        assert!(stdout.is_empty());
        assert_eq!(
            stderr,
            format!("seekless: {}:{expected}\n", input.display())
        );
        assert!(!output.exists());
    }
    // Its own input as its output is refused, the input unchanged.
    let input = put(&tmp, "same.json", b"[1]");
    let (code, _, stderr) = encode(&input, &input);
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(std::fs::read(&input).unwrap(), b"[1]");
}

#[test]
fn torrent_info_text_and_json() {
    let path = data("v2_hybrid.torrent");
    let (code, stdout, stderr) = run(&["torrent", "info", path.to_str().unwrap()], None);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("version:       hybrid\n"), "{stdout}");
    assert!(stdout.contains("info hash v1:  514c76c1f27ec61ca8b37851bcd1cbf0b26cf120\n"));
    assert!(stdout.contains(
        "info hash v2:  518fbaf39b37020c896e8768a967da6d76bbd5ef7a02c761021b65a72c6cfa11\n"
    ));
    assert!(stdout.contains("magnet:        magnet:?xt=urn:btih:514c76c1"));
    let (code, stdout, _) = run(&["torrent", "info", "--json", path.to_str().unwrap()], None);
    assert_eq!(code, 0);
    assert!(
        stdout.starts_with("{\"name\":\"bittorrent-v1-v2-hybrid-test\",\"version\":\"hybrid\"")
    );
    assert!(stdout.ends_with("}\n"));
    let (code, _, stderr) = run(&["torrent", "info", "-"], Some(b"d4:infod4:name1:aee"));
    assert_eq!(code, 2);
    assert_eq!(
        stderr,
        "seekless: -: invalid torrent: info.piece length: missing\n"
    );
}

#[test]
fn torrent_create_then_verify() {
    let tmp = TempDir::new("cli-bencode-create");
    put(&tmp, "share/a.bin", &vec![7u8; 50_000]);
    put(&tmp, "share/sub/b.txt", b"hello");
    let share = tmp.join("share");
    for version in ["--v1", "--v2", "--hybrid"] {
        let out = tmp.join(format!("share{version}.torrent"));
        let (code, _, stderr) = run(
            &[
                "torrent",
                "create",
                share.to_str().unwrap(),
                "-o",
                out.to_str().unwrap(),
                version,
                "--piece-length",
                "16K",
                "--tracker",
                "http://tracker.example/announce",
            ],
            None,
        );
        assert_eq!(code, 0, "{stderr}");
        let t = out.to_str().unwrap();
        let d = tmp.to_str().unwrap();
        let (code, stdout, stderr) = run(&["torrent", "verify", t, d], None);
        assert_eq!(code, 0, "{version}: {stdout}{stderr}");
        assert!(stdout.contains("share/a.bin\tok\t"), "{stdout}");
        assert!(
            stdout.contains("share/sub/b.txt\tok\tgood 1\tbad 0\tmissing 0\n"),
            "{stdout}"
        );
        // Damage a byte: exit 1 and the file is reported bad.
        put(&tmp, "share/sub/b.txt", b"hellO");
        let (code, stdout, _) = run(&["torrent", "verify", t, d], None);
        assert_eq!(code, 1);
        assert!(stdout.contains("share/sub/b.txt\tbad\t"), "{stdout}");
        put(&tmp, "share/sub/b.txt", b"hello");
    }
    let (code, _, stderr) = run(
        &[
            "torrent",
            "create",
            share.to_str().unwrap(),
            "-o",
            "/nonexistent-dir/x.torrent",
        ],
        None,
    );
    assert_eq!(code, 2);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let (code, _, stderr) = run(
        &[
            "torrent",
            "create",
            share.to_str().unwrap(),
            "-o",
            "x.torrent",
            "--piece-length",
            "1000",
        ],
        None,
    );
    assert_eq!(code, 2);
    assert!(stderr.contains("not a power of two"), "{stderr}");
    // Sizes take K/M suffixes; anything else is a usage error.
    let out = tmp.join("suffix.torrent");
    let share = share.to_str().unwrap();
    let args = ["torrent", "create", share, "-o", out.to_str().unwrap()];
    let (code, _, stderr) = run(&[&args[..], &["--piece-length", "1M"]].concat(), None);
    assert_eq!(code, 0, "{stderr}");
    let (_, stdout, _) = run(&["torrent", "info", out.to_str().unwrap()], None);
    assert!(stdout.contains("piece length:  1048576\n"), "{stdout}");
    let (code, _, stderr) = run(&[&args[..], &["--piece-length", "3X"]].concat(), None);
    assert_eq!(code, 2);
    assert!(stderr.contains("unknown unit"), "{stderr}");
}

#[test]
fn torrent_create_never_writes_over_what_it_shares() {
    let t = TempDir::new("cli-bencode-create-self");
    let file = put(&t, "data.bin", &[7u8; 50_000]);
    put(&t, "dir/a.bin", &[1u8; 40_000]);
    let kept = put(&t, "dir/kept.torrent", b"d4:infod4:name1:xee");
    let dir = t.join("dir");
    let before = snapshot(&t);
    for (path, output, what) in [
        (&file, &file, "is the input"),
        (&dir, &kept, "inside the input directory"),
        (&dir, &dir, "is a directory"),
    ] {
        let (code, _, stderr) = run(
            &[
                "torrent",
                "create",
                path.to_str().unwrap(),
                "-o",
                output.to_str().unwrap(),
            ],
            None,
        );
        assert_eq!(code, 2, "{stderr}");
        assert!(stderr.contains(what), "{stderr}");
        assert_eq!(snapshot(&t), before);
    }
}

#[test]
fn torrent_create_says_what_it_made_and_takes_mktorrent_flags() {
    use std::process::Command;
    let tmp = TempDir::new("cli-bencode-create-flags");
    put(&tmp, "share/a.bin", &vec![3u8; 40_000]);
    put(&tmp, "share/b.txt", b"hello");
    let share = tmp.join("share");
    let s = share.to_str().unwrap();
    let raw = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_seekless"))
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    };
    // To a file: the summary on standard output.
    let file = tmp.join("s.torrent");
    let out = raw(&[
        "torrent",
        "create",
        s,
        "-o",
        file.to_str().unwrap(),
        "--no-date",
    ]);
    let summary = String::from_utf8(out.stdout).unwrap();
    let t = seekless_bencode::torrent::Torrent::from_bytes(&std::fs::read(&file).unwrap()).unwrap();
    let v1 = seekless_bencode::torrent::hex(&t.info_hash_v1.unwrap());
    let v2 = seekless_bencode::torrent::hex(&t.info_hash_v2.unwrap());
    assert!(
        summary.starts_with(&format!(
            "{}: share (hybrid), 40005 bytes in 2 files, ",
            file.display()
        )),
        "{summary}"
    );
    assert!(
        summary.contains(&format!("info hash v1: {v1}\n"))
            && summary.contains(&format!("info hash v2: {v2}\n"))
    );
    assert!(summary.contains("magnet: magnet:?xt="), "{summary}");
    // -o -: the torrent on standard output, the summary on standard error;
    // with --no-date the same bytes as the file.
    let out = raw(&["torrent", "create", s, "-o", "-", "--no-date"]);
    assert_eq!(out.stdout, std::fs::read(&file).unwrap());
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("-: share (hybrid)"));
    // --name, --source, --private: in the info dictionary; the source and
    // the flag change the info-hashes.
    let out = raw(&[
        "torrent", "create", s, "-o", "-", "-d", "-n", "renamed", "-s", "TRACKER", "-p",
    ]);
    let doc = seekless_bencode::decode(&out.stdout).unwrap();
    let info = doc.root().get(b"info").unwrap();
    assert_eq!(info.get(b"name").unwrap().as_str(), Some("renamed"));
    assert_eq!(info.get(b"source").unwrap().as_str(), Some("TRACKER"));
    assert_eq!(info.get(b"private").unwrap().as_int().unwrap(), 1);
    assert!(doc.root().get(b"creation date").is_none());
    let renamed = seekless_bencode::torrent::Torrent::from_bytes(&out.stdout).unwrap();
    assert_ne!(renamed.info_hash_v1, t.info_hash_v1);
    // Without --no-date there is a creation date.
    let dated = raw(&["torrent", "create", s, "-o", "-"]).stdout;
    assert!(
        seekless_bencode::decode(&dated)
            .unwrap()
            .root()
            .get(b"creation date")
            .is_some()
    );
    // A bad name is refused.
    let out = Command::new(env!("CARGO_BIN_EXE_seekless"))
        .args(["torrent", "create", s, "-o", "-", "-n", "../up"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    // verify takes the torrent's own directory as well as its parent.
    let t = file.to_str().unwrap();
    for dir in [tmp.to_str().unwrap(), s] {
        let (code, stdout, stderr) = run(&["torrent", "verify", t, dir], None);
        assert_eq!(code, 0, "{dir}: {stdout}{stderr}");
        assert!(stdout.contains("share/b.txt\tok\t"), "{stdout}");
    }
}
