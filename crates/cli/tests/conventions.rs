//! Conventions every command keeps: a closed standard output (`| head`)
//! ends it quietly, and exit statuses mean one thing everywhere (0
//! success, 1 "the answer is bad news", 2 error).
#![cfg(unix)]

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Command;

use seekless_testkit::TempDir;

use crate::common;

use common::{SEEKLESS, prepare_index};

/// Runs `args` with `stdin`, reads one line of its output, closes the
/// pipe, and checks the command ended quietly: no message, and either
/// success or the end SIGPIPE gives it.
fn ends_quietly_when_the_reader_leaves(args: &[&str], stdin: &[u8]) {
    let mut child = common::spawn(args);
    let mut input = child.stdin.take().unwrap();
    let stdin = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&stdin);
    });
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(!first.is_empty(), "{args:?} printed nothing");
    // The reader is gone (dropped above); the command must notice and stop.
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let quiet = stderr
        .lines()
        .all(|l| l.starts_with("seekless: no index given"));
    assert!(quiet, "{args:?} said: {stderr}");
    assert!(
        out.status.success() || out.status.signal() == Some(SIGPIPE),
        "{args:?}: {:?}",
        out.status
    );
}

/// The signal a write to a closed pipe raises (13 on every Unix).
const SIGPIPE: i32 = 13;

#[test]
fn a_closed_pipe_ends_every_command_quietly() {
    let dir = TempDir::new("cli-pipes");
    let mut corpus = String::new();
    for i in 0..20_000u64 {
        corpus.push_str(&format!(
            "{:040X}:{}\n",
            i.wrapping_mul(0x9E37_79B9_7F4A_7C15) as u128 * 977,
            i + 1
        ));
    }
    let index = prepare_index(&corpus, &dir.join("c.txt"), &dir.join("c.idx"));
    let idx = index.to_str().unwrap();
    ends_quietly_when_the_reader_leaves(&["pwned", "export", idx], b"");
    let passwords: Vec<u8> = (0..50_000)
        .flat_map(|i| format!("password{i}\n").into_bytes())
        .collect();
    ends_quietly_when_the_reader_leaves(&["pwned", "check", "-i", idx], &passwords);
    ends_quietly_when_the_reader_leaves(&["pwned", "check"], &passwords);
    ends_quietly_when_the_reader_leaves(&["pwned", "stats", idx], b"");
    // A bencode document whose JSON is far larger than a pipe holds.
    let mut doc = b"l".to_vec();
    for i in 0..50_000 {
        let item = format!("item number {i}");
        doc.extend_from_slice(format!("{}:{item}", item.len()).as_bytes());
    }
    doc.push(b'e');
    let path = dir.join("big.bencode");
    std::fs::write(&path, &doc).unwrap();
    ends_quietly_when_the_reader_leaves(&["bencode", "dump", path.to_str().unwrap()], b"");
    let ops: Vec<u8> = (0..50_000)
        .flat_map(|i| format!("put {i} {i}\nget {i}\n").into_bytes())
        .collect();
    let db = dir.join("t.exh");
    ends_quietly_when_the_reader_leaves(&["exhash", "apply", db.to_str().unwrap()], &ops);
    let db = dir.join("u.exh");
    let puts: Vec<u8> = (0..50_000)
        .flat_map(|i| format!("put {i} {i}\n").into_bytes())
        .collect();
    assert!(
        common::run(&["exhash", "apply", db.to_str().unwrap()], &puts)
            .status
            .success()
    );
    ends_quietly_when_the_reader_leaves(&["exhash", "dump", db.to_str().unwrap()], b"");
}

fn status(args: &[&str]) -> Option<i32> {
    Command::new(SEEKLESS)
        .args(args)
        .output()
        .unwrap()
        .status
        .code()
}

#[test]
fn errors_are_status_2_and_bad_news_status_1() {
    let dir = TempDir::new("cli-statuses");
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    std::fs::write(dir.join("not.torrent"), b"d4:infod4:name1:xee").unwrap();
    std::fs::write(dir.join("not.bencode"), b"d3:cow").unwrap();
    std::fs::create_dir(dir.join("a-directory")).unwrap();
    // Errors: unreadable or invalid input, whatever the command.
    assert_eq!(status(&["torrent", "info", &path("not.torrent")]), Some(2));
    assert_eq!(
        status(&[
            "torrent",
            "verify",
            &path("not.torrent"),
            dir.to_str().unwrap()
        ]),
        Some(2)
    );
    assert_eq!(status(&["bencode", "dump", &path("not.bencode")]), Some(2));
    assert_eq!(status(&["bencode", "dump", &path("absent")]), Some(2));
    assert_eq!(status(&["exhash", "apply", &path("a-directory")]), Some(2));
    assert_eq!(status(&["pwned", "stats", &path("absent.idx")]), Some(2));
    assert_eq!(
        status(&["pwned", "check", "-i", &path("not.bencode"), "x"]),
        Some(2)
    );
    assert_eq!(status(&["pwned", "no-such-command"]), Some(2));
    // Bad news: a file that is not bencode, for `bencode check`; a damaged
    // index, for `pwned verify`.
    assert_eq!(status(&["bencode", "check", &path("not.bencode")]), Some(1));
    let index = prepare_index(
        "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:3\n",
        &dir.join("p.txt"),
        &dir.join("p.idx"),
    );
    let mut bytes = std::fs::read(&index).unwrap();
    bytes[4096 + 10] ^= 0x40;
    std::fs::write(&index, bytes).unwrap();
    assert_eq!(
        status(&["pwned", "verify", index.to_str().unwrap()]),
        Some(1)
    );
    assert!(Path::new(&index).exists());
    // A damaged table, for `exhash check`; one that is not there is an
    // error.
    let db = dir.join("t.exh");
    let puts: String = (0..3000).map(|i| format!("put {i} {i}\n")).collect();
    assert!(
        common::run(&["exhash", "apply", db.to_str().unwrap()], puts.as_bytes())
            .status
            .success()
    );
    let mut bytes = std::fs::read(&db).unwrap();
    for at in (8192 + 10..bytes.len()).step_by(8192) {
        bytes[at] ^= 0x40;
    }
    std::fs::write(&db, bytes).unwrap();
    assert_eq!(status(&["exhash", "check", db.to_str().unwrap()]), Some(1));
    assert_eq!(status(&["exhash", "check", &path("absent.exh")]), Some(2));
}

#[test]
fn sizes_read_one_way_for_every_flag() {
    let dir = TempDir::new("cli-sizes");
    let index = dir.join("p.idx");
    let corpus = dir.join("p.txt");
    std::fs::write(&corpus, "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:3\n").unwrap();
    std::fs::create_dir(dir.join("share")).unwrap();
    std::fs::write(dir.join("share/a"), vec![1u8; 100]).unwrap();
    let c = corpus.to_str().unwrap();
    let i = index.to_str().unwrap();
    let share = dir.join("share");
    let s = share.to_str().unwrap();
    // The same spellings are accepted by every size flag...
    for unit in ["64K", "64KiB", "64 kb", "65536"] {
        assert_eq!(
            status(&["pwned", "prepare", c, "-o", i, "--memory", unit]),
            Some(0),
            "{unit}"
        );
        assert_eq!(
            status(&["torrent", "create", s, "-o", "-", "--piece-length", unit]),
            Some(0),
            "{unit}"
        );
        assert_eq!(
            status(&["exhash", "bench", "--keys", unit]),
            Some(0),
            "{unit}"
        );
    }
    // ...and the same mistakes refused with one message.
    for flags in [
        vec!["pwned", "prepare", c, "-o", i, "--memory", "8X"],
        vec!["torrent", "create", s, "-o", "-", "--piece-length", "8X"],
        vec!["exhash", "bench", "--keys", "8X"],
        vec!["blocks", "linearize", s, "-o", i, "--max-file-size", "8X"],
    ] {
        let out = Command::new(SEEKLESS).args(&flags).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{flags:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("\"8X\": unknown unit (use K, M, G or T)"),
            "{flags:?}: {stderr}"
        );
    }
    let out = Command::new(SEEKLESS)
        .args(["blocks", "linearize", s, "-o", i, "--max-file-size", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
