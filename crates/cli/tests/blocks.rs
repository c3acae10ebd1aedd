//! `seekless blocks` end to end, on generated regtest block directories.
#![cfg(feature = "blocks")]

use std::path::Path;
use std::process::Output;

use seekless_blocks::generate::{self, ChainBuilder, SizeMix};
use seekless_blocks::{Network, XorKey};
use serde_json::Value;

use seekless_testkit::TempDir;

use crate::common;
use crate::common::seekless;
use common::snapshot;

/// A 50-block chain with a 3-block stale fork, out of order, split in
/// files, obfuscated with xor.dat. Returns the builder, the best tip index
/// and the stale tip index.
fn write_chain(dir: &Path, key: XorKey) -> (ChainBuilder, usize, usize) {
    let mut builder = ChainBuilder::new(7, SizeMix::Small);
    let tip = builder.extend_chain(0, 50);
    let stale = builder.extend_chain(20, 3);
    let mut by_height: Vec<usize> = (0..builder.blocks.len()).collect();
    by_height.sort_by_key(|&i| builder.blocks[i].height);
    let order = generate::headers_first_order(by_height, 16, builder.rng());
    let (files, _) = generate::layout_files(
        Network::Regtest,
        order.iter().map(|&i| builder.blocks[i].bytes.as_slice()),
        6_000,
        key,
    );
    for (n, bytes) in files.iter().enumerate() {
        std::fs::write(dir.join(format!("blk{n:05}.dat")), bytes).unwrap();
    }
    if !key.is_zero() {
        std::fs::write(dir.join("xor.dat"), key.0).unwrap();
    }
    (builder, tip, stale)
}

fn json(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn scan_json_reports_the_chain() {
    let dir = TempDir::new("cli-scan");
    let (builder, tip, _) = write_chain(&dir, XorKey([9, 8, 7, 6, 5, 4, 3, 2]));
    let v = json(&seekless(&[
        "blocks",
        "scan",
        dir.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(v["network"], "regtest");
    assert_eq!(v["blocks"], 54);
    assert_eq!(v["tip_hash"], builder.blocks[tip].hash.to_string());
    assert_eq!(v["tip_height"], 50);
    assert_eq!(v["stale"], 3);
    assert_eq!(
        (
            v["orphans"].as_u64(),
            v["duplicates"].as_u64(),
            v["bad_records"].as_u64()
        ),
        (Some(0), Some(0), Some(0))
    );
    let total: u64 = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_str().unwrap().starts_with("blk"))
        .map(|e| e.metadata().unwrap().len())
        .sum();
    assert_eq!(v["bytes"], total);
    assert!(v["files"].as_u64().unwrap() > 1);
    assert!(v.get("invalid").is_none());
    // --verify adds the (empty) invalid list; the human summary names the tip.
    let v = json(&seekless(&[
        "blocks",
        "scan",
        dir.to_str().unwrap(),
        "--json",
        "--verify",
    ]));
    assert_eq!(v["invalid"], serde_json::json!([]));
    let text = seekless(&["blocks", "scan", dir.to_str().unwrap()]);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains(&format!(
            "tip         {} at height 50",
            builder.blocks[tip].hash
        )),
        "{text}"
    );
}

#[test]
fn damaged_records_are_listed_by_file_and_offset() {
    let dir = TempDir::new("cli-damaged");
    write_chain(&dir, XorKey::default());
    let path = dir.join("blk00001.dat");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[0] ^= 0xff; // the first record's magic
    let torn = bytes.len() - 20;
    bytes.truncate(torn); // the last record loses its end
    std::fs::write(&path, &bytes).unwrap();
    let v = json(&seekless(&[
        "blocks",
        "scan",
        dir.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(v["bad_records"], 2);
    let list = v["bad_record_list"].as_array().unwrap();
    assert_eq!(list[0]["file"], path.to_str().unwrap());
    assert_eq!(
        (list[0]["offset"].as_u64(), list[0]["kind"].as_str()),
        (Some(0), Some("garbage"))
    );
    assert_eq!(list[1]["kind"], "truncated");
    assert_eq!(v["blocks"], 52);
}

#[test]
fn list_prints_the_best_chain() {
    let dir = TempDir::new("cli-list");
    let (builder, tip, stale) = write_chain(&dir, XorKey::default());
    let out = seekless(&["blocks", "list", dir.to_str().unwrap()]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 51);
    let first: Vec<&str> = lines[0].split(' ').collect();
    assert_eq!(first[0], "0");
    assert_eq!(first[1], Network::Regtest.genesis().to_string());
    let last: Vec<&str> = lines[50].split(' ').collect();
    assert_eq!(
        (last[0], last[1]),
        ("50", builder.blocks[tip].hash.to_string().as_str())
    );
    assert!(!text.contains(&builder.blocks[stale].hash.to_string()));
    // FILE OFFSET point at the record: its magic is there.
    let offset: usize = last[3].parse().unwrap();
    let file = std::fs::read(last[2]).unwrap();
    assert_eq!(file[offset..offset + 4], Network::Regtest.magic());
    // --json: the same blocks, one object a line.
    let out = seekless(&["blocks", "list", "--json", dir.to_str().unwrap()]);
    assert!(out.status.success());
    let json = String::from_utf8(out.stdout).unwrap();
    let objects: Vec<serde_json::Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(objects.len(), lines.len());
    for (object, line) in objects.iter().zip(&lines) {
        let fields: Vec<&str> = line.split(' ').collect();
        assert_eq!(object["height"].to_string(), fields[0]);
        assert_eq!(object["hash"], fields[1]);
        assert_eq!(object["file"], fields[2]);
        assert_eq!(object["offset"].to_string(), fields[3]);
    }
}

#[test]
fn linearize_writes_height_order() {
    let dir = TempDir::new("cli-linearize-in");
    let out_dir = TempDir::new("cli-linearize-out");
    let (builder, tip, _) = write_chain(&dir, XorKey([1, 2, 3, 4, 5, 6, 7, 8]));
    let out = seekless(&[
        "blocks",
        "linearize",
        dir.to_str().unwrap(),
        "-o",
        out_dir.to_str().unwrap(),
        "--max-file-size",
        "4000",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut names: Vec<String> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| name != seekless_blocks::MANIFEST)
        .collect();
    names.sort();
    assert!(
        names.len() > 2
            && names
                .iter()
                .all(|n| n.ends_with(".dat") && n.starts_with("blk")),
        "{names:?}"
    );
    for name in &names {
        assert!(std::fs::metadata(out_dir.join(name)).unwrap().len() <= 4000);
    }
    // Plain files, in height order, the same best chain, nothing stale.
    let v = json(&seekless(&[
        "blocks",
        "scan",
        out_dir.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(
        (v["blocks"].as_u64(), v["stale"].as_u64()),
        (Some(51), Some(0))
    );
    assert_eq!(v["tip_hash"], builder.blocks[tip].hash.to_string());
    let listed =
        String::from_utf8(seekless(&["blocks", "list", out_dir.to_str().unwrap()]).stdout).unwrap();
    let positions: Vec<(String, u64)> = listed
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f[2].to_string(), f[3].parse().unwrap())
        })
        .collect();
    let mut sorted = positions.clone();
    sorted.sort();
    assert_eq!(positions, sorted, "records are in height order");
}

#[test]
fn verify_failure_exits_1_and_names_the_block() {
    let dir = TempDir::new("cli-verify");
    let mut builder = ChainBuilder::new(3, SizeMix::Small);
    let tip = builder.extend_chain(0, 10);
    let mut file = Vec::new();
    for (i, block) in builder.blocks.iter().enumerate() {
        let mut bytes = block.bytes.clone();
        if i == 5 {
            let n = bytes.len();
            bytes[n - 2] ^= 1;
        }
        file.extend_from_slice(&generate::record(Network::Regtest, &bytes));
    }
    std::fs::write(dir.join("blk00000.dat"), &file).unwrap();
    let out = seekless(&[
        "blocks",
        "scan",
        dir.to_str().unwrap(),
        "--json",
        "--verify",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["invalid"],
        serde_json::json!([builder.blocks[5].hash.to_string()])
    );
    assert_eq!(v["tip_height"], 4);
    // list and linearize follow the valid chain with --verify, the header
    // chain without.
    let d = dir.to_str().unwrap();
    let heights = |args: &[&str]| -> Vec<String> {
        let out = seekless(args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| l.split(' ').next().unwrap().to_string())
            .collect()
    };
    assert_eq!(heights(&["blocks", "list", d, "--verify"]).len(), 5);
    assert_eq!(heights(&["blocks", "list", d]).len(), 11);
    let out_dir = dir.join("linear");
    let out = seekless(&[
        "blocks",
        "linearize",
        d,
        "--verify",
        "-o",
        out_dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("wrote 5 blocks"));
    assert_eq!(
        heights(&["blocks", "list", out_dir.to_str().unwrap()]).len(),
        5
    );
    // Without --verify the header chain is all there is.
    let v = json(&seekless(&[
        "blocks",
        "scan",
        dir.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(v["tip_hash"], builder.blocks[tip].hash.to_string());
}

#[test]
fn mainnet_block_file_with_duplicates() {
    let dir = TempDir::new("cli-mainnet");
    let block = include_bytes!("../../blocks/tests/data/block413567.raw");
    let mut file = Vec::new();
    for _ in 0..3 {
        file.extend_from_slice(&generate::record(Network::Main, block));
    }
    let path = dir.join("blk00000.dat");
    std::fs::write(&path, &file).unwrap();
    let v = json(&seekless(&[
        "blocks",
        "scan",
        path.to_str().unwrap(),
        "--json",
        "--verify",
    ]));
    assert_eq!(v["network"], "main");
    assert_eq!(
        (
            v["blocks"].as_u64(),
            v["duplicates"].as_u64(),
            v["orphans"].as_u64()
        ),
        (Some(1), Some(2), Some(1))
    );
    assert_eq!(v["tip_hash"], Value::Null);
    assert_eq!(v["invalid"], serde_json::json!([]));
    // Forced to the wrong network: no block found is an error that says
    // what may be wrong.
    let out = seekless(&[
        "blocks",
        "scan",
        path.to_str().unwrap(),
        "--json",
        "--network",
        "testnet4",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no testnet4 block found in 1 file (1 bad records); wrong --network?"),
        "{stderr}"
    );
}

#[test]
fn threads_print_what_one_thread_prints() {
    let plain = TempDir::new("cli-threads-plain");
    write_chain(&plain, XorKey::default());
    let xor = TempDir::new("cli-threads-xor");
    write_chain(&xor, XorKey([1, 2, 3, 4, 5, 6, 7, 8]));
    // A damaged record in the middle of the plain directory.
    let path = plain.join("blk00002.dat");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[100..140].fill(0xee);
    std::fs::write(&path, bytes).unwrap();
    for dir in [plain.to_str().unwrap(), xor.to_str().unwrap()] {
        for args in [
            vec!["blocks", "scan", dir],
            vec!["blocks", "scan", dir, "--json", "--verify"],
            vec!["blocks", "scan", dir, "--thorough"],
            vec!["blocks", "list", dir],
            vec!["blocks", "list", dir, "--json"],
        ] {
            let one = seekless(&[args.as_slice(), &["--threads", "1"]].concat());
            // Exit 1 when --verify finds the damaged block invalid.
            assert!(matches!(one.status.code(), Some(0 | 1)), "{args:?}");
            assert!(!one.stdout.is_empty(), "{args:?}");
            for threads in ["2", "5"] {
                let many = seekless(&[args.as_slice(), &["--threads", threads]].concat());
                assert_eq!(many.stdout, one.stdout, "{args:?} --threads {threads}");
                assert_eq!(many.status.code(), one.status.code());
            }
            assert_eq!(seekless(&args).stdout, one.stdout, "{args:?}");
        }
    }
    let out = seekless(&["blocks", "scan", plain.to_str().unwrap(), "--threads", "0"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn bad_arguments_fail_with_one_line() {
    let dir = TempDir::new("cli-errors");
    write_chain(&dir, XorKey::default());
    let d = dir.to_str().unwrap();
    for args in [
        vec!["blocks", "scan", "/nonexistent/blocks"],
        vec!["blocks", "scan", d, "--network", "moonnet"],
        vec!["blocks", "scan", d, "--xor-key", "12"],
        vec!["blocks", "list", "/dev/null"],
    ] {
        let out = seekless(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("seekless: "), "{stderr}");
    }
}

/// Runs `seekless blocks linearize IN -o OUT EXTRA…`.
fn linearize(input: &Path, output: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "blocks",
        "linearize",
        input.to_str().unwrap(),
        "-o",
        output.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    seekless(&args)
}

fn refused(out: &Output, what: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(what), "{stderr}");
    assert!(stderr.contains("nothing was changed"), "{stderr}");
}

#[test]
fn linearize_refuses_to_write_where_its_input_is() {
    let dir = TempDir::new("cli-linearize-self");
    write_chain(&dir, XorKey([1, 2, 3, 4, 5, 6, 7, 8]));
    let before = snapshot(&dir);
    // Into the input directory itself, by any name, and into a directory
    // that holds it; with --force too.
    let parent = dir.join("..");
    let dotted = dir.join(".");
    for (out, extra) in [
        (dir.path(), &[][..]),
        (dir.path(), &["--force"][..]),
        (&dotted, &["--force"][..]),
        (&parent, &["--force"][..]),
    ] {
        refused(&linearize(&dir, out, extra), "holds the input");
        assert_eq!(snapshot(&dir), before, "{out:?}");
    }
}

#[test]
fn linearize_never_mixes_old_and_new_files() {
    let dir = TempDir::new("cli-linearize-mix");
    let input = dir.join("in");
    let out = dir.join("out");
    std::fs::create_dir(&input).unwrap();
    let (builder, tip, _) = write_chain(&input, XorKey::default());
    let small = linearize(&input, &out, &["--max-file-size", "4000"]);
    assert!(
        small.status.success(),
        "{}",
        String::from_utf8_lossy(&small.stderr)
    );
    let first = snapshot(&out);
    assert!(first.len() > 3, "{first:?}");

    // A second run into the full directory is refused, and changes nothing.
    refused(&linearize(&input, &out, &[]), "not empty");
    assert_eq!(snapshot(&out), first);

    // A user's own files stay; a block file seekless did not write stops --force.
    std::fs::write(out.join("notes.txt"), b"mine").unwrap();
    std::fs::write(out.join("blk99999.dat"), b"someone else's").unwrap();
    let with_foreign = snapshot(&out);
    refused(&linearize(&input, &out, &["--force"]), "blk99999.dat");
    assert_eq!(snapshot(&out), with_foreign);
    std::fs::remove_file(out.join("blk99999.dat")).unwrap();

    // --force replaces exactly what the first run wrote: one big file now.
    let forced = linearize(&input, &out, &["--force"]);
    assert!(
        forced.status.success(),
        "{}",
        String::from_utf8_lossy(&forced.stderr)
    );
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [seekless_blocks::MANIFEST, "blk00000.dat", "notes.txt"]
    );
    assert_eq!(std::fs::read(out.join("notes.txt")).unwrap(), b"mine");
    let v = json(&seekless(&[
        "blocks",
        "scan",
        out.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(
        (
            v["blocks"].as_u64(),
            v["duplicates"].as_u64(),
            v["stale"].as_u64()
        ),
        (Some(51), Some(0), Some(0))
    );
    assert_eq!(v["tip_hash"], builder.blocks[tip].hash.to_string());
    // Nothing left beside the output: no staging directory.
    let mut beside: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    beside.sort();
    assert_eq!(beside, ["in", "out"]);
}

#[test]
fn linearize_counts_in_words() {
    let dir = TempDir::new("cli-linearize-words");
    let out_dir = dir.join("out");
    write_chain(&dir, XorKey::default());
    let out = linearize(&dir, &out_dir, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("wrote 51 blocks (") && stdout.contains(" in 1 file to "),
        "{stdout}"
    );
}

#[test]
fn obfuscated_files_without_a_key_say_so_and_none_means_plain() {
    let dir = TempDir::new("cli-xor-missing");
    let key = XorKey([9, 8, 7, 6, 5, 4, 3, 2]);
    write_chain(&dir, key);
    std::fs::remove_file(dir.join("xor.dat")).unwrap();
    let d = dir.to_str().unwrap();
    let out = seekless(&["blocks", "scan", d]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no valid block record found") && stderr.contains("is xor.dat missing?"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1);
    // The key given: the chain is there.
    let v = json(&seekless(&[
        "blocks",
        "scan",
        d,
        "--json",
        "--xor-key",
        "0908070605040302",
    ]));
    assert_eq!(v["tip_height"], 50);
    // --xor-key none reads plain files, even beside an xor.dat.
    let plain = TempDir::new("cli-xor-none");
    write_chain(&plain, XorKey::default());
    std::fs::write(plain.join("xor.dat"), key.0).unwrap();
    let p = plain.to_str().unwrap();
    let v = json(&seekless(&[
        "blocks",
        "scan",
        p,
        "--json",
        "--xor-key",
        "none",
    ]));
    assert_eq!(v["tip_height"], 50);
    assert_eq!(seekless(&["blocks", "scan", p]).status.code(), Some(2));
}
