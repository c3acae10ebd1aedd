//! okon-cli compatibility: `okon-cli --path INDEX --hash HEX` (argv[0]),
//! `seekless --path … --hash …` and `seekless pwned okon …` print `1`/`0`
//! and exit 1 (present), 0 (absent) or 2 (error), as KeePassXC expects.
#![cfg(feature = "pwned")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SEEKLESS: &str = env!("CARGO_BIN_EXE_seekless");

/// SHA-1 of "password" and of "123456" (in the index), and of
/// "correct horse battery staple" (not in it).
const PASSWORD: &str = "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8";
const DIGITS: &str = "7C4A8D09CA3762AF61E59520943DC26494F8941B";
const ABSENT: &str = "BFD3617727EAB0E800E62A776C76381DEFBC4145";

fn tempdir(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("seekless-cli-okon-{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Builds `DIR/pwned.okon` holding PASSWORD and DIGITS.
fn index(dir: &Path) -> PathBuf {
    let corpus = dir.join("corpus.txt");
    std::fs::write(
        &corpus,
        format!("{PASSWORD}:9545824\r\n{DIGITS}:37359195\r\n"),
    )
    .unwrap();
    let path = dir.join("pwned.okon");
    let out = Command::new(SEEKLESS)
        .args(["pwned", "prepare"])
        .arg(&corpus)
        .arg("-o")
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    path
}

/// The ways to reach the okon-compatible command line.
fn invocations(dir: &Path) -> Vec<(String, Vec<String>)> {
    let link = dir.join("okon-cli");
    let _ = std::fs::remove_file(&link);
    #[cfg(unix)]
    std::os::unix::fs::symlink(SEEKLESS, &link).unwrap();
    #[cfg(not(unix))]
    std::fs::copy(SEEKLESS, &link).unwrap();
    vec![
        (link.to_string_lossy().into_owned(), vec![]),
        (SEEKLESS.to_string(), vec![]),
        (
            SEEKLESS.to_string(),
            vec!["pwned".to_string(), "okon".to_string()],
        ),
    ]
}

fn okon(program: &str, prefix: &[String], path: &Path, hash: &str) -> Output {
    Command::new(program)
        .args(prefix)
        .arg("--path")
        .arg(path)
        .arg("--hash")
        .arg(hash)
        .output()
        .unwrap()
}

#[test]
fn present_absent_and_errors_in_every_invocation() {
    let dir = tempdir("codes");
    let path = index(&dir);
    for (program, prefix) in invocations(&dir) {
        let what = format!("{program} {prefix:?}");
        for hash in [PASSWORD, &PASSWORD.to_lowercase(), DIGITS] {
            let out = okon(&program, &prefix, &path, hash);
            assert_eq!(out.status.code(), Some(1), "{what} {hash}");
            assert_eq!(out.stdout, b"1\n", "{what} {hash}");
        }
        for hash in [ABSENT, &ABSENT.to_lowercase()] {
            let out = okon(&program, &prefix, &path, hash);
            assert_eq!(out.status.code(), Some(0), "{what} {hash}");
            assert_eq!(out.stdout, b"0\n", "{what} {hash}");
        }
        // Malformed hashes: wrong length, non-hex, empty, NTLM-sized.
        for hash in [
            &PASSWORD[..39],
            &format!("{PASSWORD}0"),
            "Z".repeat(40).as_str(),
            "",
            &PASSWORD[..32],
        ] {
            let out = okon(&program, &prefix, &path, hash);
            assert_eq!(out.status.code(), Some(2), "{what} {hash:?}");
            assert!(out.stdout.is_empty(), "{what} {hash:?}");
            assert!(
                String::from_utf8_lossy(&out.stderr).contains("malformed hash"),
                "{what} {hash:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        // Missing, empty and damaged index files.
        let empty = dir.join("empty.okon");
        std::fs::write(&empty, b"").unwrap();
        let damaged = dir.join("damaged.okon");
        let mut bytes = std::fs::read(&path).unwrap();
        let n = bytes.len();
        bytes.truncate(n - 3);
        std::fs::write(&damaged, &bytes).unwrap();
        for bad in [dir.join("missing.okon"), empty, damaged, dir.clone()] {
            let out = okon(&program, &prefix, &bad, PASSWORD);
            assert_eq!(out.status.code(), Some(2), "{what} {}", bad.display());
            assert!(out.stdout.is_empty());
            assert!(
                String::from_utf8_lossy(&out.stderr).starts_with("okon-cli: cannot open index"),
                "{what}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        // Missing arguments are usage errors: status 2 too.
        let out = Command::new(&program)
            .args(&prefix)
            .arg("--path")
            .arg(&path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{what} without --hash");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn argument_order_and_equals_forms() {
    let dir = tempdir("forms");
    let path = index(&dir);
    let path_arg = format!("--path={}", path.display());
    let out = Command::new(SEEKLESS)
        .args([&format!("--hash={}", PASSWORD.to_lowercase()), &path_arg])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(out.stdout, b"1\n");
    // The ordinary command line is untouched.
    let out = Command::new(SEEKLESS)
        .args(["pwned", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("okon"));
    std::fs::remove_dir_all(&dir).unwrap();
}
