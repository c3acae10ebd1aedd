//! Helpers shared by the command-line tests (each test file uses some).
#![allow(dead_code)]

use std::io::Write;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

pub mod serve;

/// The binary under test.
pub const SEEKLESS: &str = env!("CARGO_BIN_EXE_seekless");

/// Writes `text` to `input`, runs `seekless pwned prepare INPUT -o OUTPUT`
/// and asserts it succeeded; returns `output`.
pub fn prepare_index(text: &str, input: &Path, output: &Path) -> PathBuf {
    std::fs::write(input, text).unwrap();
    let out = Command::new(SEEKLESS)
        .args(["pwned", "prepare"])
        .arg(input)
        .arg("-o")
        .arg(output)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    output.to_path_buf()
}

/// Every file under `path` (or `path` itself when it is a file), by path,
/// with its bytes: taken before and after a refused command to show that
/// nothing changed.
pub fn snapshot(path: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut files = std::collections::BTreeMap::new();
    let mut pending = vec![path.to_path_buf()];
    while let Some(path) = pending.pop() {
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).unwrap() {
                pending.push(entry.unwrap().path());
            }
        } else {
            files.insert(path.clone(), std::fs::read(&path).unwrap());
        }
    }
    files
}

/// What a starting `seekless pwned serve` announces on the first line of
/// its standard output (`listening on http://ADDRESS:PORT`): the port, and
/// the line. The child's standard output must be piped.
pub fn announced(child: &mut Child) -> (u16, String) {
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout is piped"))
        .read_line(&mut line)
        .unwrap();
    let port = line
        .trim()
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no address announced: {line:?}"));
    (port, line)
}

/// `seekless ARGS` started with its standard input, output and error piped.
pub fn spawn(args: &[&str]) -> Child {
    Command::new(SEEKLESS)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run seekless")
}

/// Runs `seekless ARGS` (standard input empty) and collects what it
/// printed.
pub fn seekless(args: &[&str]) -> Output {
    Command::new(SEEKLESS).args(args).output().unwrap()
}

/// Runs `seekless ARGS` with `stdin` as its standard input (written from
/// another thread, so a large output cannot stall it; a command that exits
/// before reading it all is fine) and collects what it printed.
pub fn run(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = spawn(args);
    let mut pipe = child.stdin.take().expect("stdin is piped");
    let input = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}
