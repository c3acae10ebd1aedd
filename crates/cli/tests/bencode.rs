//! `seekless bencode …` and `seekless torrent …` end to end.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const SEEKLESS: &str = env!("CARGO_BIN_EXE_seekless");

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../bencode/tests/data")
        .join(name)
}

struct Temp(PathBuf);

impl Temp {
    fn new(name: &str) -> Temp {
        let dir = std::env::temp_dir().join(format!(
            "seekless-bencode-cli-{}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Temp(dir)
    }
    fn file(&self, name: &str, content: &[u8]) -> PathBuf {
        let path = self.0.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&path, content).unwrap();
        path
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn run(args: &[&str], stdin: Option<&[u8]>) -> (i32, String, String) {
    let mut child = Command::new(SEEKLESS)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        let mut pipe = child.stdin.take().unwrap();
        if let Some(input) = stdin {
            pipe.write_all(input).unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn check_prints_one_line_per_file() {
    let tmp = Temp::new("check");
    let good = tmp.file(
        "good.torrent",
        include_bytes!("../../bencode/tests/data/sample.torrent"),
    );
    let bad = tmp.file("bad.bin", b"d1:ai1e");
    let unsorted = tmp.file("unsorted.bin", b"d1:bi1e1:ai2ee");
    let g = good.to_str().unwrap();
    let b = bad.to_str().unwrap();
    let u = unsorted.to_str().unwrap();

    let (code, stdout, stderr) = run(&["bencode", "check", g, u], None);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, format!("{g}\tok\n{u}\tok\n"));

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
        "{\"cow\":\"moo\",\"spam\":[\"a\",-7],\"bin\":{\"hex\":\"ff00\"}}\n"
    );
    let (code, stdout, _) = run(
        &["bencode", "dump", data("sample.torrent").to_str().unwrap()],
        None,
    );
    assert_eq!(code, 0);
    assert!(
        stdout.starts_with('{') && stdout.contains("\"piece length\":"),
        "{stdout}"
    );
    let (code, stdout, stderr) = run(&["bencode", "dump", "-"], Some(b"d1:a"));
    assert_eq!(code, 1);
    assert!(stdout.is_empty());
    assert_eq!(stderr, "seekless: -: unexpected end of input at byte 4\n");
}
