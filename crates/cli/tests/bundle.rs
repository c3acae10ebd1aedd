//! `seekless pwned diff` and `update --from-bundle` as commands: outputs,
//! exit statuses, and a refused bundle leaving everything as it was.
#![cfg(feature = "update")]

use seekless_testkit::TempDir;

use crate::common;
use common::{prepare_index, run, snapshot};

const OLD: &str = "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:9545824\n\
    7C4A8D09CA3762AF61E59520943DC26494F8941B:37359195\n\
    B1B3773A05C0ED0176787A4F1574FF0075F7521E:4\n";
const NEW: &str = "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:9545830\n\
    7C4A8D09CA3762AF61E59520943DC26494F8941B:37359195\n\
    21BD12DC183F740EE76F27B78EB39C8AD972A757:52579\n";

/// Neither OLD nor NEW, of as many hashes as both.
const OTHER: &str = "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:1\n\
    7C4A8D09CA3762AF61E59520943DC26494F8941B:2\n\
    B1B3773A05C0ED0176787A4F1574FF0075F7521E:3\n";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn diff_then_update_from_the_bundle_makes_the_new_index() {
    let dir = TempDir::new("cli-bundle-cli");
    let old = prepare_index(OLD, &dir.join("old.txt"), &dir.join("old.idx"));
    let new = prepare_index(NEW, &dir.join("new.txt"), &dir.join("new.idx"));
    let bundle = dir.join("changes.bundle");
    let out = diff(&old, &new, &bundle);
    let s = |p: &std::path::Path| p.to_str().unwrap().to_string();
    // Three ranges changed: one recounted, one gone, one new.
    assert!(
        text(&out.stdout).contains("3 ranges changed"),
        "{}",
        text(&out.stdout)
    );

    let copy = dir.join("copy.idx");
    std::fs::copy(&old, &copy).unwrap();
    let out = run(
        &["pwned", "update", &s(&copy), "--from-bundle", &s(&bundle)],
        b"",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(
        said.contains("updated") && said.contains("3 changed"),
        "{said}"
    );
    assert!(
        said.contains("1 added, 1 removed, 1 counts changed"),
        "{said}"
    );
    let export = |p: &std::path::Path| run(&["pwned", "export", &s(p)], b"").stdout;
    assert_eq!(export(&copy), export(&new));

    // Applied again: the index already is its result; nothing written.
    let before = snapshot(&dir);
    let out = run(
        &["pwned", "update", &s(&copy), "--from-bundle", &s(&bundle)],
        b"",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(
        said.contains("is already at the result of") && said.contains("nothing to do"),
        "{said}"
    );
    assert_eq!(snapshot(&dir), before);
    // Applied to an index that is neither the one it was made for nor its
    // result: refused in one line, nothing changed.
    let other = prepare_index(OTHER, &dir.join("other.txt"), &dir.join("other.idx"));
    let before = snapshot(&dir);
    let out = run(
        &["pwned", "update", &s(&other), "--from-bundle", &s(&bundle)],
        b"",
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("seekless: bundle refused: "), "{stderr}");
    assert!(stderr.contains("a bundle for another index"), "{stderr}");
    assert_eq!(snapshot(&dir), before);
    // A bundle of SHA-1 indexes given to an NTLM update.
    let out = run(
        &[
            "pwned",
            "update",
            "--ntlm",
            &s(&dir.join("n.idx")),
            "--from-bundle",
            &s(&bundle),
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("a bundle of SHA-1 indexes, not NTLM"),
        "{}",
        text(&out.stderr)
    );
    assert!(!dir.join("n.idx").exists());
    // The network flags do not go with a bundle.
    let out = run(
        &[
            "pwned",
            "update",
            &s(&copy),
            "--from-bundle",
            &s(&bundle),
            "--full",
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(2));
    // diff never writes over its inputs.
    let out = run(&["pwned", "diff", &s(&old), &s(&new), "-o", &s(&old)], b"");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(snapshot(&dir), before);
}

/// OLD and NEW as text: `n` random hashes, and of them a quarter
/// recounted, a twentieth gone and an eighth more.
fn corpora(n: usize) -> (String, String) {
    let mut rng = seekless_testkit::Rng::splitmix64(59);
    let (mut old, mut new) = (String::new(), String::new());
    for i in 0..n + n / 8 {
        let line = format!("{}:", seekless_testkit::hex(&mut rng, 40));
        let count = 1 + rng.below(5000);
        if i < n {
            old.push_str(&format!("{line}{count}\n"));
        }
        match i % 20 {
            _ if i >= n => new.push_str(&format!("{line}{count}\n")),
            0 => {}
            1..=5 => new.push_str(&format!("{line}{}\n", count + 1)),
            _ => new.push_str(&format!("{line}{count}\n")),
        }
    }
    (old, new)
}

/// Whole records in the update journal at `path` (docs/format-journal.md:
/// a header of 28 bytes and the URL, whose length is the u16 at byte 10;
/// a record is its payload's length as a u32, the payload and a u32
/// checksum); `None` when there is no journal.
fn journal_records(path: &std::path::Path) -> Option<usize> {
    let bytes = std::fs::read(path).ok()?;
    let Some(url) = bytes.get(10..12) else {
        return Some(0);
    };
    let mut at = 28 + usize::from(u16::from_le_bytes([url[0], url[1]]));
    let mut records = 0;
    while let Some(len) = bytes.get(at..at + 4) {
        let len = u32::from_le_bytes(len.try_into().unwrap()) as usize;
        if bytes.len() < at + 8 + len {
            break;
        }
        records += 1;
        at += 8 + len;
    }
    Some(records)
}

/// Hidden files beside the index (an update's partial index and journal).
fn leftovers(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect()
}

/// `kill -9` at every moment of `update --from-bundle`, then the same
/// command again: it ends at the bundle's result, exit 0, nothing left
/// beside. Kills land at increasing delays across a whole apply's time
/// (some runs are killed twice); which moment each hit is told by the
/// files it left. The instant between the rename and the journal's
/// removal is too short to hit by a delay, so its files are made: a
/// journal a killed run left, beside the result.
#[cfg(unix)]
#[test]
fn update_from_a_bundle_killed_at_any_moment_ends_at_its_result() {
    use std::time::Instant;
    let dir = TempDir::new("cli-bundle-kill");
    let (old_text, new_text) = corpora(80_000);
    let old = prepare_index(&old_text, &dir.join("old.txt"), &dir.join("old.idx"));
    let new = prepare_index(&new_text, &dir.join("new.txt"), &dir.join("new.idx"));
    let bundle = dir.join("changes.bundle");
    diff(&old, &new, &bundle);
    let s = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let index = work.join("pwned.idx");
    let (partial, journal) = (
        work.join(".pwned.idx.update-partial"),
        work.join(".pwned.idx.update-journal"),
    );
    let args = ["pwned", "update", &s(&index), "--from-bundle", &s(&bundle)];
    let command = || {
        let mut c = std::process::Command::new(common::SEEKLESS);
        c.args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        c
    };

    // The result, and when each moment of an apply comes: the files
    // beside the index watched while it runs whole.
    let old_bytes = std::fs::read(&old).unwrap();
    std::fs::write(&index, &old_bytes).unwrap();
    use std::os::unix::fs::MetadataExt;
    let old_inode = std::fs::metadata(&index).unwrap().ino();
    let started = Instant::now();
    let mut child = command().spawn().unwrap();
    // Times of: the partial index made, the first checkpoint, the last,
    // the rename.
    let mut seen = [None; 4];
    let mut journal_len = 0;
    while child.try_wait().unwrap().is_none() {
        let at = started.elapsed();
        let len = std::fs::metadata(&journal).map_or(0, |m| m.len());
        let records = if len != journal_len {
            journal_len = len;
            journal_records(&journal).unwrap_or(0)
        } else {
            0
        };
        let renamed = std::fs::metadata(&index).is_ok_and(|m| m.ino() != old_inode);
        for (i, now) in [partial.exists(), records >= 1, records >= 63, renamed]
            .into_iter()
            .enumerate()
        {
            if now && seen[i].is_none() {
                seen[i] = Some(at);
            }
        }
        std::thread::sleep(std::time::Duration::from_micros(300));
    }
    let whole = started.elapsed();
    assert!(child.wait().unwrap().success());
    let result = std::fs::read(&index).unwrap();
    let export = |p: &std::path::Path| run(&["pwned", "export", &s(p)], b"").stdout;
    assert!(export(&index) == export(&new), "the bundle's result is NEW");
    let identity = |p: &std::path::Path| {
        let stats = text(&run(&["pwned", "stats", &s(p)], b"").stdout);
        let line = stats.lines().find(|l| l.starts_with("identity\t"));
        line.expect("stats names the identity").to_string()
    };
    assert_eq!(identity(&index), identity(&new));

    // Where a kill left the files: the moment it hit.
    let moment = || -> &'static str {
        let now = std::fs::read(&index).unwrap();
        let records = journal_records(&journal);
        if now == result {
            return if records.is_some() {
                "renamed, journal left"
            } else {
                "done"
            };
        }
        assert!(
            now == old_bytes,
            "the index is OLD or the result, never else"
        );
        match (partial.exists(), records) {
            (false, None) => "before the partial index",
            (_, None | Some(0)) => "journal begun",
            // 63 checkpoints in all, the last at range FC000.
            (_, Some(1..63)) => "checkpointed",
            (_, Some(_)) => "last checkpoint passed",
        }
    };
    // Kills a quarter, half and three quarters into each moment's time,
    // and past the end; every third run killed again as it goes on.
    let mut bounds = vec![std::time::Duration::ZERO];
    bounds.extend(seen.iter().flatten().copied());
    bounds.push(whole);
    let mut delays: Vec<_> = bounds
        .windows(2)
        .flat_map(|w| [0.25, 0.5, 0.75].map(|f| w[0] + (w[1] - w[0]).mul_f64(f)))
        .collect();
    // Past the end, by more and more: a loaded machine runs the apply
    // slower than the measured one, and a kill after it ended must land.
    delays.extend([1.2, 2.0, 4.0].map(|f| whole.mul_f64(f)));
    let mut hit = std::collections::BTreeMap::new();
    let mut mid_write: Option<Vec<u8>> = None;
    for (round, &delay) in delays.iter().enumerate() {
        std::fs::write(&index, &old_bytes).unwrap();
        let mut delays = vec![delay];
        if round % 3 == 1 {
            delays.push(whole.mul_f64((round as f64 * 0.37) % 1.0));
        }
        let mut last = "";
        for delay in delays {
            let mut child = command().spawn().unwrap();
            std::thread::sleep(delay);
            let _ = child.kill();
            child.wait().unwrap();
            last = moment();
            *hit.entry(last).or_insert(0) += 1;
            if last == "checkpointed" && mid_write.is_none() {
                mid_write = Some(std::fs::read(&journal).unwrap());
            }
        }
        let out = run(&args, b"");
        let said = text(&out.stdout);
        assert!(
            out.status.success(),
            "round {round}, after a kill {last}: {}{said}",
            text(&out.stderr)
        );
        let expected = match last {
            "checkpointed" | "last checkpoint passed" => "resumed an interrupted update",
            "renamed, journal left" | "done" => "nothing to do",
            _ => "updated",
        };
        assert!(said.contains(expected), "after a kill {last}: {said}");
        assert!(
            std::fs::read(&index).unwrap() == result,
            "round {round}: the result"
        );
        assert!(leftovers(&work).is_empty(), "{:?}", leftovers(&work));
    }
    eprintln!("kills landed: {hit:?} (a whole apply: {seen:?} of {whole:?})");
    assert!(
        hit.len() >= 3 && hit.contains_key("checkpointed"),
        "kills landed at too few moments: {hit:?} (a whole apply: {seen:?} of {whole:?})"
    );

    // Killed between the rename and the journal's removal: the result in
    // place, a journal whose terms name OLD beside it (and a partial index
    // another kill may leave).
    let mid_write = mid_write.expect("a kill landed mid-write");
    for with_partial in [false, true] {
        std::fs::write(&journal, &mid_write).unwrap();
        if with_partial {
            std::fs::write(&partial, &result[..result.len() / 2]).unwrap();
        }
        let out = run(&args, b"");
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(text(&out.stdout).contains("nothing to do"));
        assert!(std::fs::read(&index).unwrap() == result);
        assert!(leftovers(&work).is_empty(), "{:?}", leftovers(&work));
    }
}

/// `pwned diff OLD NEW -o BUNDLE`, which must succeed.
fn diff(
    old: &std::path::Path,
    new: &std::path::Path,
    bundle: &std::path::Path,
) -> std::process::Output {
    let s = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let out = run(&["pwned", "diff", &s(old), &s(new), "-o", &s(bundle)], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    out
}
