//! okon-cli compatibility: `okon-cli --path INDEX --hash HEX` (argv[0]),
//! `seekless --path … --hash …` and `seekless pwned okon …` print `1`/`0`
//! and exit 1 (present), 0 (absent) or 2 (error), as KeePassXC expects.
#![cfg(feature = "pwned")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use seekless_testkit::TempDir;

use crate::common;

use common::{SEEKLESS, prepare_index};

/// SHA-1 of "password" and of "123456" (in the index), and of
/// "correct horse battery staple" (not in it).
const PASSWORD: &str = "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8";
const DIGITS: &str = "7C4A8D09CA3762AF61E59520943DC26494F8941B";
const ABSENT: &str = "BFD3617727EAB0E800E62A776C76381DEFBC4145";

/// Builds `DIR/pwned.okon` holding PASSWORD and DIGITS.
fn index(dir: &Path) -> PathBuf {
    let text = format!("{PASSWORD}:9545824\r\n{DIGITS}:37359195\r\n");
    prepare_index(&text, &dir.join("corpus.txt"), &dir.join("pwned.okon"))
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
    let dir = TempDir::new("cli-codes");
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
        for bad in [dir.join("missing.okon"), empty, damaged, dir.to_path_buf()] {
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
}

#[test]
fn argument_order_and_equals_forms() {
    let dir = TempDir::new("cli-forms");
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
}

/// Whether `keepassxc-cli` (Debian package `keepassxc`) is installed.
fn keepassxc_cli() -> bool {
    Command::new("keepassxc-cli")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs `keepassxc-cli ARGS` with `stdin` on standard input.
fn keepassxc(args: &[&std::ffi::OsStr], stdin: &str) -> Output {
    use std::io::Write;
    let mut child = Command::new("keepassxc-cli")
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "keepassxc-cli {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The SHA-1 (uppercase hex) of a password, as `seekless pwned check` says.
fn sha1_hex(password: &str) -> String {
    let out = Command::new(SEEKLESS)
        .args(["pwned", "check", password])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    text.split('\t').nth(1).unwrap().to_string()
}

/// KeePassXC's own `analyze --hibp FILE.okon --okon PATH` reports exactly
/// the entries whose passwords are in the index, through an `okon-cli`
/// symlink and through the seekless binary itself.
#[test]
fn keepassxc_cli_reports_exactly_the_pwned_entries() {
    if !keepassxc_cli() {
        assert!(
            std::env::var_os("SEEKLESS_REQUIRE_KEEPASSXC").is_none(),
            "SEEKLESS_REQUIRE_KEEPASSXC is set but keepassxc-cli is not installed"
        );
        eprintln!("note: keepassxc-cli not installed (Debian package keepassxc); test skipped");
        return;
    }
    let dir = TempDir::new("cli-keepassxc");
    let entries = [
        ("bank", "password", true),
        ("mail", "correct horse battery staple", false),
        ("forum", "123456", true),
        ("wifi", "pässwörd ünïcode", true),
        ("work", "Tr0ub4dor&3-not-listed", false),
        ("old", "letmein", true),
    ];
    let mut corpus = String::new();
    for (i, (_, password, leaked)) in entries.iter().enumerate() {
        if *leaked {
            corpus.push_str(&format!("{}:{}\n", sha1_hex(password), 10 + i));
        }
    }
    // Hashes near the absent ones, so absence is decided by the full hash.
    for (_, password, leaked) in &entries {
        if !*leaked {
            let mut near = sha1_hex(password);
            near.replace_range(39.., if near.ends_with('0') { "1" } else { "0" });
            corpus.push_str(&format!("{near}:5\n"));
        }
    }
    let input = dir.join("corpus.txt");
    std::fs::write(&input, corpus).unwrap();
    // keepassxc-cli insists on the `.okon` extension.
    let index = dir.join("pwned.okon");
    let out = Command::new(SEEKLESS)
        .args(["pwned", "prepare"])
        .arg(&input)
        .arg("-o")
        .arg(&index)
        .output()
        .unwrap();
    assert!(out.status.success());

    let db = dir.join("db.kdbx");
    let db_arg = db.as_os_str();
    let master = "master pw";
    keepassxc(
        &["db-create".as_ref(), "-p".as_ref(), db_arg],
        &format!("{master}\n{master}\n"),
    );
    for (name, password, _) in &entries {
        keepassxc(
            &["add".as_ref(), "-p".as_ref(), db_arg, name.as_ref()],
            &format!("{master}\n{password}\n"),
        );
    }
    let mut expected: Vec<String> = entries
        .iter()
        .filter(|e| e.2)
        .map(|(name, _, _)| format!("Password for '{name}' has been leaked!"))
        .collect();
    expected.sort();
    let link = dir.join("okon-cli");
    #[cfg(unix)]
    std::os::unix::fs::symlink(SEEKLESS, &link).unwrap();
    #[cfg(not(unix))]
    std::fs::copy(SEEKLESS, &link).unwrap();
    for okon in [link.as_os_str(), SEEKLESS.as_ref()] {
        let out = keepassxc(
            &[
                "analyze".as_ref(),
                "--hibp".as_ref(),
                index.as_os_str(),
                "--okon".as_ref(),
                okon,
                db_arg,
            ],
            &format!("{master}\n"),
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let mut reported: Vec<String> = stdout
            .lines()
            .filter(|l| l.starts_with("Password for"))
            .map(str::to_string)
            .collect();
        reported.sort();
        assert_eq!(reported, expected, "{okon:?}: {stdout}");
    }
}
