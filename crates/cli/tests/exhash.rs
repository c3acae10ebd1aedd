//! `seekless exhash` end to end: apply, persistence, malformed input,
//! corrupt files, `kill -9` in the middle of commits, two writers of one
//! table, and bench output.
#![cfg(feature = "exhash")]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use seekless_testkit::TempDir;

use crate::common;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_seekless"))
}

fn apply(db: &Path, input: &str) -> Output {
    // The tool may exit (on a bad file) before reading its input.
    common::run(&["exhash", "apply", db.to_str().unwrap()], input.as_bytes())
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

#[test]
fn apply_puts_gets_deletes_and_persists() {
    let dir = TempDir::new("cli-basic");
    let db = dir.join("t.exh");
    let out = apply(
        &db,
        "put 1 10\nput 2 20\nget 1\nget 3\n\ndel 1\nget 1\nput 18446744073709551615 0\ncommit\nget 2\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "10\n-\n-\n20\n");
    // Ends with a commit: a second run sees everything.
    let out = apply(&db, "get 1\nget 2\nget 18446744073709551615\n");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "-\n20\n0\n");
    assert!(!dir.join("t.exh.tmp").exists());
}

/// Long runs of puts (loaded together) between gets, deletes and commits
/// answer as one put at a time would.
#[test]
fn runs_of_puts_are_seen_by_what_follows_them() {
    let dir = TempDir::new("cli-runs");
    let db = dir.join("t.exh");
    let key = |i: u64| i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut input = String::new();
    let mut want = String::new();
    for i in 0..70_000u64 {
        input += &format!("put {} {i}\n", key(i));
    }
    input += &format!(
        "get {}\nget {}\ndel {}\nget {}\n",
        key(5),
        key(69_999),
        key(5),
        key(5)
    );
    want += "5\n69999\n-\n";
    for i in 60_000..80_000u64 {
        input += &format!("put {} {}\n", key(i), i + 1);
    }
    input += "commit\n";
    for i in [1, 59_999, 60_000, 79_999] {
        input += &format!("get {}\n", key(i));
    }
    want += "1\n59999\n60001\n80000\n";
    let out = apply(&db, &input);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), want);
    let out = apply(
        &db,
        &format!("get {}\nget {}\nget {}\n", key(5), key(6), key(79_999)),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "-\n6\n80000\n");
}

/// A table that grows and shrinks before one commit keeps the ids of its
/// merged pages unused: more page ids than its file has slots. The next
/// run opened it as "corrupt" until the reader stopped bounding page ids
/// by the file's slots; nothing was lost on disk.
#[test]
fn a_table_that_grew_and_shrank_before_its_commit_reopens() {
    let dir = TempDir::new("cli-shrank");
    let db = dir.join("t.exh");
    let mut input = String::new();
    // A get after each put keeps the puts apart (no load writing pages
    // ahead), so the file only gets the pages left at the commit.
    for k in 0..20_000u64 {
        input += &format!("put {k} {}\nget {k}\n", k ^ 0x5555);
    }
    for k in 2_000..20_000u64 {
        input += &format!("del {k}\n");
    }
    let out = apply(&db, &input);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = apply(&db, "get 5\nget 1999\nget 2000\n");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!("{}\n{}\n-\n", 5 ^ 0x5555, 1999 ^ 0x5555)
    );
}

#[test]
fn malformed_line_names_the_line_and_keeps_the_last_commit() {
    let dir = TempDir::new("cli-malformed");
    let db = dir.join("t.exh");
    for (bad, what) in [
        ("put 5", "missing VALUE"),
        ("put x 1", "KEY `x`"),
        ("get 18446744073709551616", "not a decimal u64"),
        ("del -1", "not a decimal u64"),
        ("get +1", "not a decimal u64"),
        ("frobnicate 1", "unknown operation"),
        ("commit now", "unexpected `now`"),
    ] {
        let input = format!("put 1 1\ncommit\nput 2 2\n{bad}\nput 3 3\n");
        let out = apply(&db, &input);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = stderr(&out);
        assert!(err.contains("line 4") && err.contains(what), "{bad}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        let out = apply(&db, "get 1\nget 2\nget 3\n");
        assert_eq!(stdout(&out), "1\n-\n-\n", "{bad}");
    }
}

#[test]
fn corrupt_file_gives_one_clear_line_and_status_2() {
    let dir = TempDir::new("cli-corrupt");
    let db = dir.join("t.exh");
    std::fs::write(&db, b"definitely not a table, just some text\n").unwrap();
    let out = apply(&db, "get 1\n");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("not an exhash file"), "{err}");
    assert_eq!(err.lines().count(), 1);

    let db = dir.join("u.exh");
    let mut input = String::new();
    for i in 0..5000 {
        input.push_str(&format!("put {i} {}\n", i * 7));
    }
    assert!(apply(&db, &input).status.success());
    let mut bytes = std::fs::read(&db).unwrap();
    let len = bytes.len();
    for b in &mut bytes[8192..len] {
        *b ^= 0x5A;
    }
    std::fs::write(&db, &bytes).unwrap();
    let out = apply(&db, "get 1\n");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("checksum") || err.contains("corrupt"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// Every commit overwrites all keys with values of one batch; whatever
/// moment `kill -9` hits, the reopened table holds exactly one batch.
#[test]
fn kill_9_reopens_the_last_commit() {
    let dir = TempDir::new("cli-kill");
    let db = dir.join("t.exh");
    const KEYS: u64 = 3000;
    let mut last_seen = 0u64;
    for round in 0..6u64 {
        let mut child = bin()
            .args(["exhash", "apply"])
            .arg(&db)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let writer = std::thread::spawn(move || {
            for batch in 1.. {
                let tag = (round + 1) * 1_000_000 + batch;
                let mut text = String::new();
                for k in 0..KEYS {
                    // Deleting a varying third of the keys makes pages merge and split.
                    if (k + batch) % 3 == 0 {
                        text.push_str(&format!("del {k}\n"));
                    } else {
                        text.push_str(&format!("put {k} {}\n", tag * 10_000 + k));
                    }
                }
                text.push_str("commit\n");
                if stdin.write_all(text.as_bytes()).is_err() {
                    return;
                }
            }
        });
        std::thread::sleep(Duration::from_millis(150 + 97 * round));
        child.kill().unwrap();
        child.wait().unwrap();
        writer.join().unwrap();

        let mut input = String::new();
        for k in 0..KEYS {
            input.push_str(&format!("get {k}\n"));
        }
        let out = apply(&db, &input);
        assert!(out.status.success(), "round {round}: {}", stderr(&out));
        let values: Vec<Option<u64>> = stdout(&out).lines().map(|l| l.parse().ok()).collect();
        assert_eq!(values.len(), KEYS as usize);
        let tag = values.iter().flatten().map(|v| v / 10_000).next();
        let Some(tag) = tag else {
            assert_eq!(last_seen, 0, "round {round}: table lost its commits");
            continue;
        };
        let batch = tag % 1_000_000;
        assert!(
            tag >= last_seen,
            "round {round}: went back from {last_seen} to {tag}"
        );
        for (k, v) in values.iter().enumerate() {
            let k = k as u64;
            let want = (!(k + batch).is_multiple_of(3)).then_some(tag * 10_000 + k);
            assert_eq!(*v, want, "round {round}: key {k} is not from commit {tag}");
        }
        last_seen = tag;
    }
    assert!(last_seen > 0, "no commit ever completed");
}

#[test]
fn bench_prints_json_with_every_key() {
    let out = bin()
        .args([
            "exhash",
            "bench",
            "--keys",
            "20000",
            "--pattern",
            "sequential",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(v["keys"], 20000);
    for key in [
        "put_ns",
        "get_ns",
        "bytes_per_entry",
        "put_many_ns",
        "get_many_ns",
        "std_put_ns",
        "std_get_ns",
        "std_bytes_per_entry",
    ] {
        let x = v[key].as_f64().unwrap_or_else(|| panic!("{key} missing"));
        assert!(x > 0.0, "{key} = {x}");
    }
    assert!(v["bytes_per_entry"].as_f64().unwrap() < v["std_bytes_per_entry"].as_f64().unwrap());

    let out = bin()
        .args(["exhash", "bench", "--keys", "1000"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(stdout(&out).contains("HashMap"));
    assert!(stdout(&out).contains("exhash many"));
    let out = bin()
        .args(["exhash", "bench", "--keys", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// `put` lines for keys `from..from + n`, each with the value `tag + key`,
/// and a commit.
fn puts(from: u64, n: u64, tag: u64) -> String {
    let mut text: String = (from..from + n)
        .map(|k| format!("put {k} {}\n", tag + k))
        .collect();
    text.push_str("commit\n");
    text
}

/// Whether every key of `from..from + n` holds `tag + key` in `db`.
fn holds(db: &Path, from: u64, n: u64, tag: u64) -> bool {
    let gets: String = (from..from + n).map(|k| format!("get {k}\n")).collect();
    let out = apply(db, &gets);
    assert!(out.status.success(), "{}", stderr(&out));
    let want: String = (from..from + n).map(|k| format!("{}\n", tag + k)).collect();
    stdout(&out) == want
}

/// `apply` on `db`, started and left holding the table (its input still
/// open) once its pid is in the lock file.
fn holding_writer(db: &Path) -> std::process::Child {
    let mut child = bin()
        .args(["exhash", "apply"])
        .arg(db)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lock = db.with_file_name(format!(
        "{}.lock",
        db.file_name().unwrap().to_str().unwrap()
    ));
    let pid = child.id().to_le_bytes();
    // Not a timing: how long it takes to start does not matter, only that
    // it does (a minute at most, rather than hanging the tests).
    for _ in 0..6000 {
        if std::fs::read(&lock).is_ok_and(|b| b.len() >= 16 && b[12..16] == pid) {
            return child;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    panic!("the first writer never took the lock: {}", stderr(&out));
}

/// Feed `input` to a holding writer, end its input and check it commits.
fn finish(mut child: std::process::Child, input: &str) {
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

/// The one line a second writer gets, naming the table and (on Linux) the
/// first writer.
fn assert_refused(out: &Output, db: &Path, holder: Option<u32>) {
    assert_eq!(out.status.code(), Some(2), "{}", stderr(out));
    let err = stderr(out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(&db.display().to_string()), "{err}");
    assert!(err.contains("open for writing in another process"), "{err}");
    if let (Some(pid), true) = (holder, cfg!(target_os = "linux")) {
        assert!(err.contains(&format!("(pid {pid})")), "{err}");
    }
}

/// The issue's scenario: a second `apply` while one writes is refused,
/// with exit 2 and one line, and nothing of the first is lost, on an
/// existing table and on a new one.
#[test]
fn a_second_writer_is_refused_and_the_first_loses_nothing() {
    let dir = TempDir::new("cli-two-writers");
    for (name, existing) in [("old.exh", true), ("new.exh", false)] {
        let db = dir.join(name);
        if existing {
            assert!(apply(&db, &puts(0, 1000, 0)).status.success());
        }
        let first = holding_writer(&db);
        let pid = first.id();
        let second = apply(&db, &puts(100_000, 2000, 7));
        assert_refused(&second, &db, Some(pid));
        assert!(stderr(&second).contains("--wait"));
        finish(first, &puts(10_000, 3000, 1));
        assert!(
            holds(&db, 10_000, 3000, 1),
            "{name}: the first writer lost puts"
        );
        assert_eq!(holds(&db, 0, 1000, 0), existing, "{name}");
        assert!(!holds(&db, 100_000, 1, 7), "{name}");
    }
}

/// Two writers started at once on a new table: each ends with its puts
/// committed or refused as above, never with a lost commit or another
/// error (the rename of the new file failed before there was a lock).
#[test]
fn two_writers_started_at_once_on_a_new_table() {
    let dir = TempDir::new("cli-race");
    for round in 0..4u64 {
        let db = dir.join(format!("t{round}.exh"));
        let outs: Vec<Output> = std::thread::scope(|s| {
            let runs: Vec<_> = (0..2u64)
                .map(|who| {
                    let db = &db;
                    s.spawn(move || apply(db, &puts(who * 100_000, 3000, who)))
                })
                .collect();
            runs.into_iter().map(|r| r.join().unwrap()).collect()
        });
        let mut winners = 0;
        for (who, out) in outs.iter().enumerate() {
            let who = who as u64;
            if out.status.success() {
                winners += 1;
                assert!(holds(&db, who * 100_000, 3000, who), "round {round}");
            } else {
                assert_refused(out, &db, None);
            }
        }
        assert!(winners >= 1, "round {round}");
    }
}

#[test]
fn wait_takes_the_table_when_the_first_writer_ends() {
    let dir = TempDir::new("cli-wait");
    let db = dir.join("t.exh");
    let first = holding_writer(&db);
    // Waiting up to 0 seconds gives up at once, without the hint.
    let out = common::run(
        &["exhash", "apply", "--wait=0", db.to_str().unwrap()],
        b"put 1 1\n",
    );
    assert_refused(&out, &db, Some(first.id()));
    assert!(!stderr(&out).contains("--wait"), "{}", stderr(&out));
    let second = std::thread::spawn({
        let db = db.clone();
        move || {
            common::run(
                &["exhash", "apply", "--wait", db.to_str().unwrap()],
                puts(100_000, 2000, 7).as_bytes(),
            )
        }
    });
    finish(first, &puts(0, 3000, 1));
    let out = second.join().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(holds(&db, 0, 3000, 1));
    assert!(holds(&db, 100_000, 2000, 7));
}

/// A writer killed with `kill -9` leaves its pid in the lock file but no
/// lock: the next writer gets in, and a later refusal names the process
/// that holds the table, not the dead one (the library's tests leave a
/// dead pid in a held lock file).
#[test]
fn a_killed_writer_leaves_no_lock_behind() {
    let dir = TempDir::new("cli-kill-lock");
    let db = dir.join("t.exh");
    assert!(apply(&db, &puts(0, 1000, 0)).status.success());
    let mut first = holding_writer(&db);
    let dead = first.id();
    first.kill().unwrap();
    first.wait().unwrap();
    let out = apply(&db, &puts(5000, 2000, 3));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(holds(&db, 0, 1000, 0) && holds(&db, 5000, 2000, 3));

    let third = holding_writer(&db);
    let out = apply(&db, "put 1 1\n");
    assert_refused(&out, &db, Some(third.id()));
    assert!(!stderr(&out).contains(&format!("pid {dead})")));
    finish(third, "");
}

fn tool(args: &[&str], db: &Path) -> Output {
    let mut cmd = bin();
    cmd.arg("exhash").arg(args[0]).arg(db).args(&args[1..]);
    cmd.output().unwrap()
}

/// `get`, `stats`, `dump` and `check` on a table `apply` wrote, in text
/// and JSON; a dump read back by `apply` makes the same table.
#[test]
fn get_stats_dump_and_check_read_a_table() {
    let dir = TempDir::new("cli-tools");
    let db = dir.join("t.exh");
    let mut input = puts(0, 3000, 5);
    input += "del 7\ncommit\n";
    assert!(apply(&db, &input).status.success());

    let out = tool(&["get", "1", "7", "2999", "3000"], &db);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "6\n-\n3004\n-\n");
    let out = tool(&["get", "1", "7", "--json"], &db);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"pairs": [{"key": 1, "value": 6}, {"key": 7, "value": null}]})
    );

    let out = tool(&["stats"], &db);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("pairs            2999\n"),
        "{}",
        stdout(&out)
    );
    let out = tool(&["stats", "--json"], &db);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["pairs"], 2999);
    assert_eq!(v["readers"], 0);
    assert_eq!(v["file_bytes"], std::fs::metadata(&db).unwrap().len());
    for key in [
        "pages",
        "global_depth",
        "bytes_per_pair",
        "journal_bytes",
        "journal_used",
    ] {
        assert!(v[key].is_number(), "{key}: {v}");
    }

    let out = tool(&["dump", "--sorted"], &db);
    assert!(out.status.success(), "{}", stderr(&out));
    let want: String = (0..3000u64)
        .filter(|&k| k != 7)
        .map(|k| format!("put {k} {}\n", k + 5))
        .collect();
    assert_eq!(stdout(&out), want);
    let out = tool(&["dump"], &db);
    let text = stdout(&out);
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_by_key(|l| l.split(' ').nth(1).unwrap().parse::<u64>().unwrap());
    assert_eq!(lines.join("\n") + "\n", want);
    let copy = dir.join("copy.exh");
    assert!(apply(&copy, &text).status.success());
    assert_eq!(stdout(&tool(&["dump", "--sorted"], &copy)), want);
    let out = tool(&["dump", "--sorted", "--json"], &db);
    let first = stdout(&out).lines().next().unwrap().to_string();
    assert_eq!(first, r#"{"key":0,"value":5}"#);
    assert_eq!(stdout(&out).lines().count(), 2999);

    let out = tool(&["check"], &db);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(": ok (2999 pairs"),
        "{}",
        stdout(&out)
    );
    let out = tool(&["check", "--json"], &db);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        (v["ok"].clone(), v["pairs"].clone()),
        (true.into(), 2999.into())
    );
}

/// `check` says what is damaged with exit status 1; a file it cannot read
/// at all is an error (2), as for every command.
#[test]
fn check_finds_a_damaged_page() {
    let dir = TempDir::new("cli-check");
    let db = dir.join("t.exh");
    assert!(apply(&db, &puts(0, 3000, 5)).status.success());
    let mut bytes = std::fs::read(&db).unwrap();
    // A byte of every slot past the headers: whichever hold pages.
    for at in (8192 + 100..bytes.len()).step_by(8192) {
        bytes[at] ^= 0x40;
    }
    std::fs::write(&db, &bytes).unwrap();
    let out = tool(&["check"], &db);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("checksum mismatch") && text.contains("t.exh"),
        "{text}"
    );
    let out = tool(&["check", "--json"], &db);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["ok"], false);
    assert!(v["error"].as_str().unwrap().contains("checksum"), "{v}");

    for command in ["check", "get", "stats", "dump"] {
        let mut args = vec![command];
        if command == "get" {
            args.push("1");
        }
        let out = tool(&args, &dir.join("missing.exh"));
        assert_eq!(out.status.code(), Some(2), "{command}");
        assert_eq!(stderr(&out).lines().count(), 1, "{command}");
        assert!(!dir.join("missing.exh").exists());
    }
}

/// The reading commands take the writer's lock too (other processes
/// reading beside a writer are still to come): refused while `apply`
/// writes, or waiting with `--wait`.
#[test]
fn reading_commands_wait_for_a_writer() {
    let dir = TempDir::new("cli-tools-lock");
    let db = dir.join("t.exh");
    // Made first: the writer below takes the lock before it makes a table.
    assert!(apply(&db, "").status.success());
    let first = holding_writer(&db);
    for args in [&["get", "1"][..], &["stats"], &["dump"], &["check"]] {
        assert_refused(&tool(args, &db), &db, Some(first.id()));
    }
    let waiting = std::thread::spawn({
        let db = db.clone();
        move || tool(&["get", "1", "--wait"], &db)
    });
    finish(first, &puts(0, 10, 1));
    let out = waiting.join().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "2\n");
}
