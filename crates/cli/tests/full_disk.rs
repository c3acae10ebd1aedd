//! Commands that write on a file system that fills up: each ends with one
//! line naming the path and what failed, exit status 2, no panic, and no
//! partial output left behind.
//!
//! Two ways to fill up, each tried where the machine allows: a small tmpfs
//! mounted by the test (root only: the kernel's own `ENOSPC`), and a limit
//! on the size of any file the command writes (`RLIMIT_FSIZE`: `EFBIG`
//! past it, with `SIGXFSZ` ignored), which any user can set.
#![cfg(all(feature = "pwned", target_os = "linux"))]

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use seekless_testkit::TempDir;

use crate::common;
use common::SEEKLESS;

/// How a command's writes are made to fail.
#[derive(Debug, Clone, Copy)]
enum Full {
    /// Files go to a tmpfs of this many bytes, mounted by the test.
    Tmpfs(u64),
    /// No file the command writes may grow past this many bytes.
    FileSize(u64),
}

/// A tmpfs of `bytes` mounted on `dir` while it lives.
struct Mounted(PathBuf);

impl Mounted {
    /// `None` where this process may not mount (not root, or in a
    /// container that forbids it).
    fn tmpfs(dir: &Path, bytes: u64) -> Option<Mounted> {
        std::fs::create_dir_all(dir).unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o"])
            .arg(format!("size={bytes}"))
            .arg("tmpfs")
            .arg(dir)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        mounted.then(|| Mounted(dir.to_path_buf()))
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// `seekless ARGS` with every file it writes limited to `limit` bytes
/// (`None`: no limit).
fn seekless(args: &[&str], limit: Option<u64>) -> Output {
    seekless_to(args, limit, None)
}

/// [`seekless`] with its standard output redirected to `stdout` (as a
/// shell's `>` does) instead of captured.
fn seekless_to(args: &[&str], limit: Option<u64>, stdout: Option<std::fs::File>) -> Output {
    let mut command = Command::new(SEEKLESS);
    command.args(args);
    if let Some(file) = stdout {
        command.stdout(file);
    }
    if let Some(limit) = limit {
        // SAFETY: between fork and exec only async-signal-safe calls are
        // made (setrlimit, signal), touching no memory of the parent's.
        unsafe {
            command.pre_exec(move || {
                let rlimit = libc::rlimit {
                    rlim_cur: limit,
                    rlim_max: limit,
                };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &rlimit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                Ok(())
            })
        };
    }
    command.output().unwrap()
}

/// Runs `args` (in which `{out}` stands for `out`, a directory on the
/// file system that fills up) the ways this machine allows, and checks
/// each time that the command fails cleanly, naming a path that begins
/// with `out` (or the directory itself), and leaves `out` as it found it.
/// Returns how many ways ran.
fn fails_cleanly(dir: &Path, args: &[&str], bytes: u64) -> usize {
    fails_cleanly_to(dir, args, bytes, None)
}

/// [`fails_cleanly`], with standard output redirected to the file `stdout`
/// in `out` when given (created empty first, as a shell's `>` does): the
/// message then names "standard output", and the file must be left empty.
fn fails_cleanly_to(dir: &Path, args: &[&str], bytes: u64, stdout: Option<&str>) -> usize {
    let mut ran = 0;
    for full in [Full::Tmpfs(bytes), Full::FileSize(bytes)] {
        let out = dir.join(match full {
            Full::Tmpfs(_) => "tmpfs",
            Full::FileSize(_) => "limited",
        });
        let (_mounted, limit) = match full {
            Full::Tmpfs(bytes) => match Mounted::tmpfs(&out, bytes) {
                Some(m) => (Some(m), None),
                None => {
                    eprintln!("no tmpfs can be mounted here: only the file size limit is tried");
                    continue;
                }
            },
            Full::FileSize(bytes) => {
                std::fs::create_dir_all(&out).unwrap();
                (None, Some(bytes))
            }
        };
        let before = seekless_testkit::file_names(&out);
        let out_text = out.to_str().unwrap();
        let args: Vec<String> = args.iter().map(|a| a.replace("{out}", out_text)).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let redirected = stdout.map(|name| std::fs::File::create(out.join(name)).unwrap());
        let output = seekless_to(&args, limit, redirected);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{full:?}: {args:?} should fail with status 2; stderr:\n{stderr}"
        );
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{full:?}: one line expected:\n{stderr}");
        let line = lines[0];
        assert!(line.starts_with("seekless: "), "{full:?}: {line}");
        let named = if stdout.is_some() {
            "standard output"
        } else {
            out_text
        };
        assert!(
            line.contains(named),
            "{full:?}: the path is not named: {line}"
        );
        let failed = match full {
            Full::Tmpfs(_) => "No space left on device",
            Full::FileSize(_) => "File too large",
        };
        assert!(line.contains(failed), "{full:?}: {line}");
        if let Some(name) = stdout {
            let left = std::fs::metadata(out.join(name)).unwrap().len();
            assert_eq!(left, 0, "{full:?}: partial output left in {name}");
            std::fs::remove_file(out.join(name)).unwrap();
        }
        assert_eq!(
            seekless_testkit::file_names(&out),
            before,
            "{full:?}: files left in {out_text}"
        );
        ran += 1;
    }
    ran
}

/// `n` lines of random SHA-1 hashes and counts (in no order: a build
/// of them partitions and, in a small budget, spills).
fn corpus(n: usize) -> String {
    corpus_of(n, 0x2545_F491_4F6C_DD1D)
}

/// [`corpus`] from another seed.
fn corpus_of(n: usize, seed: u64) -> String {
    let mut text = String::with_capacity(n * 48);
    let mut x = seed;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..n {
        let (a, b, c) = (next(), next(), next());
        text.push_str(&format!(
            "{a:016X}{b:016X}{:08X}:{}\n",
            c >> 32,
            1 + c % 1000
        ));
    }
    text
}

/// `text` written to `dir/NAME.txt` and prepared into `dir/NAME.idx`
/// (room enough); the index's path.
fn prepared(dir: &Path, name: &str, text: &str) -> PathBuf {
    let input = dir.join(format!("{name}.txt"));
    std::fs::write(&input, text).unwrap();
    let index = dir.join(format!("{name}.idx"));
    let (i, o) = (input.to_str().unwrap(), index.to_str().unwrap());
    let out = seekless(&["pwned", "prepare", i, "-o", o], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    index
}

#[test]
fn prepare_spilling_to_a_full_disk_names_it_and_leaves_nothing() {
    let dir = TempDir::new("cli-full-spill");
    let input = dir.join("corpus.txt");
    // Several chunks of input: parsers still have some to take when the
    // disk fills up (the last of them once put records into memory the
    // budget did not have, and the build panicked).
    std::fs::write(&input, corpus(1_000_000)).unwrap();
    // The index goes to the same file system: a file size limit holds for
    // every file the command writes.
    let args = [
        "pwned",
        "prepare",
        input.to_str().unwrap(),
        "-o",
        "{out}/pwned.idx",
        "--memory",
        "1M",
        "--threads",
        "2",
        "--tmp-dir",
        "{out}",
    ];
    // A million records spill ~23 MB; the file system holds 1 MiB.
    assert!(fails_cleanly(&dir, &args, 1 << 20) > 0);
}

#[test]
fn prepare_writing_its_index_to_a_full_disk_names_it_and_leaves_nothing() {
    let dir = TempDir::new("cli-full-index");
    let input = dir.join("corpus.txt");
    std::fs::write(&input, corpus(200_000)).unwrap();
    let args = [
        "pwned",
        "prepare",
        input.to_str().unwrap(),
        "-o",
        "{out}/pwned.idx",
    ];
    // The index takes ~3.5 MB.
    assert!(fails_cleanly(&dir, &args, 1 << 20) > 0);
}

#[cfg(feature = "update")]
#[test]
fn an_update_on_a_full_disk_keeps_its_journal_and_resumes() {
    let dir = TempDir::new("cli-full-update");
    let served = prepared(&dir, "served", &corpus(200_000));
    let upstream = common::serve::Server::start(&[&served], &[]);
    let upstream_url = format!("http://127.0.0.1:{}", upstream.port);
    let export =
        |index: &Path| seekless(&["pwned", "export", index.to_str().unwrap()], None).stdout;
    let want = export(&served);
    // Room for the first checkpoint (16,384 ranges), not the second.
    for full in [Full::Tmpfs(2 << 20), Full::FileSize(1 << 20)] {
        let out_dir = dir.join(format!("{full:?}").replace(['(', ')'], "-"));
        let (mounted, limit) = match full {
            Full::Tmpfs(bytes) => match Mounted::tmpfs(&out_dir, bytes) {
                Some(m) => (Some(m), None),
                None => continue,
            },
            Full::FileSize(bytes) => {
                std::fs::create_dir_all(&out_dir).unwrap();
                (None, Some(bytes))
            }
        };
        let index = out_dir.join("pwned.idx");
        let args = [
            "pwned",
            "update",
            index.to_str().unwrap(),
            "--base-url",
            &upstream_url,
        ];
        let out = seekless(&args, limit);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{full:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{full:?}: {stderr}");
        assert!(
            stderr.contains(out_dir.to_str().unwrap()),
            "{full:?}: {stderr}"
        );
        assert!(
            stderr.contains("run the same command again"),
            "{full:?}: {stderr}"
        );
        assert!(!index.exists(), "{full:?}: no index until complete");
        // The journal stays: with room (the journal and the index's source
        // section hold a validator for each of the 2^20 ranges: ~36 MB
        // each), the same command goes on.
        let names = seekless_testkit::file_names(&out_dir);
        assert!(
            names.iter().any(|n| n.ends_with(".update-journal")),
            "{names:?}"
        );
        // Going on is shown once, after the file size limit (any user can
        // set it): the rerun is a full pass over the 2^20 ranges, and both
        // ways stop at the same kind of point (here each fails writing the
        // journal, leaving its last record torn).
        if mounted.is_some() {
            continue;
        }
        let out = seekless(&args, None);
        assert!(
            out.status.success(),
            "{full:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("resumed"),
            "{full:?}"
        );
        assert_eq!(export(&index), want, "{full:?}");
        assert_eq!(
            seekless_testkit::file_names(&out_dir),
            ["pwned.idx"],
            "{full:?}"
        );
    }
}

#[cfg(feature = "update")]
#[test]
fn a_bundle_written_to_a_full_disk_names_it_and_leaves_nothing() {
    let dir = TempDir::new("cli-full-bundle");
    let mut indexes = Vec::new();
    for (name, seed) in [("old", 1), ("new", 2)] {
        indexes.push(prepared(&dir, name, &corpus_of(100_000, seed)));
    }
    // Every range changed: ~4 MB of lines, ~2 MB compressed.
    let args = [
        "pwned",
        "diff",
        indexes[0].to_str().unwrap(),
        indexes[1].to_str().unwrap(),
        "-o",
        "{out}/changes.bundle",
    ];
    assert!(fails_cleanly(&dir, &args, 1 << 20) > 0);
}

/// An index of `n` random SHA-1 hashes (several chunks of each range) and
/// 400 more in the range 00000, whose file is then ~16 KB: larger than a
/// page of tmpfs and than a small file size limit, and written first.
fn export_source(dir: &Path, n: usize) -> PathBuf {
    let mut text = corpus(n);
    for i in 0..400u32 {
        text.push_str(&format!("00000{i:035X}:{}\n", 1 + i));
    }
    prepared(dir, "pwned", &text)
}

#[test]
fn an_export_to_a_full_disk_names_its_file_and_leaves_nothing() {
    let dir = TempDir::new("cli-full-export");
    let index = export_source(&dir, 200_000);
    // ~8.6 MB of lines; the file system holds 1 MiB.
    let args = [
        "pwned",
        "export",
        index.to_str().unwrap(),
        "-o",
        "{out}/pwned.txt",
    ];
    assert!(fails_cleanly(&dir, &args, 1 << 20) > 0);
    // To standard output redirected to a file there: what was written of
    // it is cut off again.
    let args = ["pwned", "export", index.to_str().unwrap()];
    assert!(fails_cleanly_to(&dir, &args, 1 << 20, Some("pwned.txt")) > 0);
}

#[test]
fn per_range_files_on_a_full_disk_name_the_file_and_leave_nothing() {
    let dir = TempDir::new("cli-full-ranges");
    let index = export_source(&dir, 1_000);
    // The first range's file takes more than the one page the file system
    // holds, and more than the file size limit.
    let args = [
        "pwned",
        "export",
        index.to_str().unwrap(),
        "--ranges",
        "{out}/ranges",
    ];
    assert!(fails_cleanly(&dir, &args, 4096) > 0);
}

#[cfg(feature = "blocks")]
#[test]
fn a_utxo_snapshot_on_a_full_disk_names_it_and_leaves_nothing() {
    let dir = TempDir::new("cli-full-utxo");
    let blocks = one_file_chain(&dir, 5);
    let ok = dir.join("whole.dat");
    let (b, o) = (blocks.to_str().unwrap(), ok.to_str().unwrap());
    let out = seekless(&["blocks", "utxo", b, "-o", o], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A snapshot of some 10 KB into 4 KB.
    let len = std::fs::metadata(&ok).unwrap().len();
    assert!(len > 8 << 10, "{len}");
    let args = ["blocks", "utxo", b, "-o", "{out}/utxo.dat"];
    assert!(fails_cleanly(&dir, &args, 4 << 10) > 0);
}

#[cfg(feature = "blocks")]
#[test]
fn a_txindex_written_to_a_full_disk_names_it_and_leaves_nothing() {
    use seekless_blocks::generate::{self, ChainBuilder, SizeMix};
    let dir = TempDir::new("cli-full-txindex");
    let blocks = dir.join("blocks");
    std::fs::create_dir(&blocks).unwrap();
    let mut builder = ChainBuilder::new(5, SizeMix::Realistic);
    builder.extend_chain(0, 60);
    let (files, _) = generate::layout_files(
        seekless_blocks::Network::Regtest,
        builder.blocks.iter().map(|b| b.bytes.as_slice()),
        1 << 20,
        seekless_blocks::XorKey::default(),
    );
    seekless_blocks::generate::write_block_files(&blocks, &files, None).unwrap();
    // Hundreds of transactions: pages past the 16 KiB the disk holds,
    // sorted runs (of 18 records) that fit.
    let args = [
        "blocks",
        "txindex",
        blocks.to_str().unwrap(),
        "--memory",
        "1K",
        "-o",
        "{out}/tx.idx",
    ];
    assert!(fails_cleanly(&dir, &args, 16 << 10) > 0);
}

/// A generated chain of 140 blocks spending earlier outputs, in one plain
/// block file in `DIR/blocks`; returns that directory.
#[cfg(feature = "blocks")]
fn one_file_chain(dir: &Path, seed: u64) -> PathBuf {
    use seekless_blocks::Network;
    use seekless_blocks::generate::{self, spends::SpendingChain};
    let blocks = dir.join("blocks");
    std::fs::create_dir(&blocks).unwrap();
    let mut chain = SpendingChain::new(seed);
    for _ in 0..140 {
        chain.extend(10);
    }
    let (files, _) = generate::layout_files(
        Network::Regtest,
        chain.builder.blocks.iter().map(|b| b.bytes.as_slice()),
        1 << 20,
        Default::default(),
    );
    std::fs::write(blocks.join("blk00000.dat"), &files[0]).unwrap();
    blocks
}

#[cfg(feature = "blocks")]
#[test]
fn an_export_or_balances_on_a_full_disk_names_it_and_leaves_nothing() {
    let dir = TempDir::new("cli-full-export");
    let blocks = one_file_chain(&dir, 9);
    let snapshot = dir.join("utxo.dat");
    let (b, s) = (blocks.to_str().unwrap(), snapshot.to_str().unwrap());
    let out = seekless(&["blocks", "utxo", b, "-o", s], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Hundreds of coins: every table is tens of KB, into 4 KB; the
    // balances' spill files (4K of memory) go beside the output too.
    for name in ["u.csv", "u.sqlite", "u.parquet"] {
        let target = format!("{{out}}/{name}");
        let args = ["blocks", "export", s, "-o", &target];
        assert!(fails_cleanly(&dir, &args, 4 << 10) > 0, "{name}");
        let args = ["blocks", "balances", s, "-o", &target, "--memory", "4K"];
        assert!(fails_cleanly(&dir, &args, 4 << 10) > 0, "{name}");
    }
}

#[cfg(feature = "blocks")]
#[test]
fn a_state_that_cannot_write_names_the_file_and_stays_at_its_last_commit() {
    let dir = TempDir::new("cli-full-state");
    let blocks = one_file_chain(&dir, 6);
    let (whole, out, state) = (
        dir.join("whole.dat"),
        dir.join("out.dat"),
        dir.join("state"),
    );
    let text = |p: &Path| p.to_str().unwrap().to_string();
    let (b, s) = (text(&blocks), text(&state));
    let clean = seekless(&["blocks", "utxo", &b, "-o", &text(&whole)], None);
    assert!(clean.status.success());
    let run = |height: Option<&str>, limit| {
        let mut args = vec!["blocks", "utxo", &b, "-o", "", "--state", &s];
        let o = text(&out);
        args[4] = &o;
        if let Some(h) = height {
            args.extend(["--height", h]);
        }
        seekless(&args, limit)
    };
    assert!(run(Some("60"), None).status.success());
    let tip = std::fs::read(state.join("tip")).unwrap();
    // No file may pass 8 KB: the commit's journal cannot be written.
    let failed = run(None, Some(8 << 10));
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert_eq!(failed.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(&s) && stderr.contains("File too large"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(state.join("tip")).unwrap(), tip);
    // Room again: the same command ends where one run from genesis ends.
    assert!(run(None, None).status.success());
    assert!(std::fs::read(&out).unwrap() == std::fs::read(&whole).unwrap());
}
