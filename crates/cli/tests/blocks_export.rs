//! `seekless blocks export` and `seekless blocks balances` end to end: a
//! generated chain's snapshot (written by `blocks utxo`) exported to each
//! format and read back against `SnapshotReader`'s coins, balances held
//! to a model (in memory, and spilled under a tiny `--memory`), the
//! format from the extension or `--format`, and the refusals: an unknown
//! extension, a damaged snapshot, an output that cannot be written.
#![cfg(feature = "blocks")]

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Output};

use crate::common::seekless;
use seekless_blocks::generate::{self, spends::SpendingChain};
use seekless_blocks::{Coin, Network, OutPoint, SnapshotReader, XorKey, script_address};
use seekless_testkit::TempDir;

fn ok(output: &Output) -> String {
    assert!(
        output.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}

/// One line on standard error, exit status 2; the line.
fn fails(output: &Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "stderr: {stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].starts_with("seekless: "), "{stderr}");
    lines[0].to_string()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A generated regtest chain's UTXO set, written by `blocks utxo` into
/// `dir/utxo.dat`; returns its coins as `SnapshotReader` reads them.
fn snapshot(dir: &Path) -> Vec<(OutPoint, Coin)> {
    let blocks = dir.join("blocks");
    std::fs::create_dir(&blocks).unwrap();
    let mut chain = SpendingChain::new(700);
    for _ in 0..125 {
        chain.extend(6);
    }
    let key = XorKey([7, 0, 7, 0, 7, 0, 7, 0]);
    let (files, _) = generate::layout_files(
        Network::Regtest,
        chain.builder.blocks.iter().map(|b| b.bytes.as_slice()),
        1 << 20,
        key,
    );
    generate::write_block_files(&blocks, &files, Some(key)).unwrap();
    let out = dir.join("utxo.dat");
    let (b, o) = (blocks.to_str().unwrap(), out.to_str().unwrap());
    ok(&seekless(&["blocks", "utxo", b, "-o", o]));
    let reader = SnapshotReader::new(std::fs::File::open(&out).unwrap()).unwrap();
    reader.map(Result::unwrap).collect()
}

/// The coins as utxo_to_sqlite.py's rows, as CSV lines.
fn csv_of(coins: &[(OutPoint, Coin)]) -> String {
    let mut text = "txid,vout,value,coinbase,height,scriptpubkey\n".to_string();
    for (o, c) in coins {
        let mut txid = o.txid;
        txid.reverse();
        text.push_str(&format!(
            "{},{},{},{},{},{}\n",
            hex(&txid),
            o.vout,
            c.value,
            c.coinbase as u8,
            c.height,
            hex(&c.script)
        ));
    }
    text
}

/// Rows of `SELECT * FROM table` as CSV lines (NULL as an empty field).
fn sqlite_as_csv(path: &Path, table: &str) -> Vec<String> {
    let db = rusqlite::Connection::open(path).unwrap();
    let mut statement = db
        .prepare(&format!("SELECT * FROM {table} ORDER BY rowid"))
        .unwrap();
    let columns = statement.column_count();
    statement
        .query_map([], |row| {
            let fields: Vec<String> = (0..columns)
                .map(|i| match row.get_ref(i).unwrap() {
                    rusqlite::types::ValueRef::Null => String::new(),
                    rusqlite::types::ValueRef::Integer(n) => n.to_string(),
                    rusqlite::types::ValueRef::Text(t) => String::from_utf8(t.to_vec()).unwrap(),
                    other => panic!("{other:?}"),
                })
                .collect();
            Ok(fields.join(","))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Rows of a Parquet file as CSV lines (booleans as 0 and 1, NULL empty).
fn parquet_as_csv(path: &Path) -> Vec<String> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;
    let reader = SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
    reader
        .get_row_iter(None)
        .unwrap()
        .map(|row| {
            let fields: Vec<String> = row
                .unwrap()
                .get_column_iter()
                .map(|(_, field)| match field {
                    Field::Null => String::new(),
                    Field::Bool(b) => (*b as u8).to_string(),
                    Field::Int(n) => n.to_string(),
                    Field::Long(n) => n.to_string(),
                    Field::Str(s) => s.clone(),
                    other => panic!("{other:?}"),
                })
                .collect();
            fields.join(",")
        })
        .collect()
}

#[test]
fn export_writes_each_format_from_the_extension_or_format() {
    let dir = TempDir::new("cli-export");
    let coins = snapshot(&dir);
    let expected = csv_of(&coins);
    let rows: Vec<&str> = expected.lines().skip(1).collect();
    let snap = dir.join("utxo.dat");
    let snap = snap.to_str().unwrap();
    let out = TempDir::new("cli-export-out");
    for (name, format) in [
        ("u.csv", None),
        ("u.sqlite3", None),
        ("u.parquet", None),
        ("csv.out", Some("csv")),
        ("sqlite.out", Some("sqlite")),
        ("parquet.out", Some("parquet")),
    ] {
        let path = out.join(name);
        let mut args = vec!["blocks", "export", snap, "-o", path.to_str().unwrap()];
        if let Some(format) = format {
            args.extend(["--format", format]);
        }
        let stdout = ok(&seekless(&args));
        assert!(
            stdout.starts_with(&format!("wrote {} coins (regtest", coins.len())),
            "{stdout}"
        );
        let kind = format.unwrap_or_else(|| name.split('.').nth(1).unwrap());
        match kind {
            "csv" => assert_eq!(std::fs::read_to_string(&path).unwrap(), expected),
            "sqlite" | "sqlite3" => assert_eq!(sqlite_as_csv(&path, "utxos"), rows),
            _ => assert_eq!(parquet_as_csv(&path), rows),
        }
    }
    assert_eq!(out.read_dir().unwrap().count(), 6);

    // An extension that names no format, and no --format: refused, with
    // the choices, before anything is written.
    let line = fails(&seekless(&[
        "blocks",
        "export",
        snap,
        "-o",
        out.join("u.xlsx").to_str().unwrap(),
    ]));
    assert!(line.contains("u.xlsx") && line.contains("--format csv, sqlite or parquet"));
    // The snapshot as its own output.
    fails(&seekless(&[
        "blocks", "export", snap, "-o", snap, "--format", "csv",
    ]));
    assert_eq!(out.read_dir().unwrap().count(), 6);
}

/// `address,scriptpubkey,balance,coins` lines, by balance descending then
/// script, from the coins.
fn balances_model(coins: &[(OutPoint, Coin)]) -> Vec<String> {
    let mut sums: HashMap<&[u8], (u64, u64)> = HashMap::new();
    for (_, coin) in coins {
        let sum = sums.entry(&coin.script).or_default();
        sum.0 += coin.value;
        sum.1 += 1;
    }
    let mut rows: Vec<_> = sums.into_iter().collect();
    rows.sort_by(|a, b| b.1.0.cmp(&a.1.0).then(a.0.cmp(b.0)));
    rows.into_iter()
        .map(|(script, (balance, count))| {
            let address = script_address(script, Network::Regtest).unwrap_or_default();
            format!("{address},{},{balance},{count}", hex(script))
        })
        .collect()
}

#[test]
fn balances_match_a_model_in_memory_and_spilled() {
    let dir = TempDir::new("cli-balances");
    let coins = snapshot(&dir);
    let model = balances_model(&coins);
    assert!(model.iter().any(|l| l.starts_with("bcrt1q")));
    assert!(model.iter().any(|l| l.starts_with(',')));
    let snap = dir.join("utxo.dat");
    let snap = snap.to_str().unwrap();
    let scratch = TempDir::new("cli-balances-scratch");
    let header = "address,scriptpubkey,balance,coins";
    for extra in [
        &[][..],
        &["--memory", "4K"],
        &["--memory", "4K", "--tmp-dir", scratch.to_str().unwrap()],
    ] {
        let mut args = vec!["blocks", "balances", snap];
        args.extend(extra);
        let stdout = ok(&seekless(&args));
        let mut lines = stdout.lines();
        assert_eq!(lines.next(), Some(header));
        assert_eq!(lines.collect::<Vec<_>>(), model, "{extra:?}");
        assert!(scratch.read_dir().unwrap().next().is_none());
    }
    let out = TempDir::new("cli-balances-out");
    for name in ["b.csv", "b.db", "b.parquet"] {
        let path = out.join(name);
        let args = [
            "blocks",
            "balances",
            snap,
            "-o",
            path.to_str().unwrap(),
            "--memory",
            "4K",
        ];
        let stdout = ok(&seekless(&args));
        assert!(
            stdout.starts_with(&format!(
                "wrote {} scripts ({} coins, ",
                model.len(),
                coins.len()
            )),
            "{stdout}"
        );
        let rows = match name {
            "b.csv" => {
                let text = std::fs::read_to_string(&path).unwrap();
                assert!(text.starts_with(header));
                text.lines().skip(1).map(str::to_string).collect()
            }
            "b.db" => sqlite_as_csv(&path, "balances"),
            _ => parquet_as_csv(&path),
        };
        assert_eq!(rows, model, "{name}");
    }
    // Only the three files: the spill files beside them are gone.
    assert_eq!(out.read_dir().unwrap().count(), 3);
    // SQLite and Parquet need a file.
    let line = fails(&seekless(&[
        "blocks", "balances", snap, "--format", "sqlite",
    ]));
    assert!(line.contains("-o"), "{line}");
}

#[test]
fn a_damaged_snapshot_or_an_unwritable_output_fails_and_leaves_nothing() {
    let dir = TempDir::new("cli-export-bad");
    snapshot(&dir);
    let whole = std::fs::read(dir.join("utxo.dat")).unwrap();
    let cut = dir.join("cut.dat");
    std::fs::write(&cut, &whole[..whole.len() - 20]).unwrap();
    let cut = cut.to_str().unwrap();
    let out = TempDir::new("cli-export-bad-out");
    for name in ["u.csv", "u.sqlite", "u.parquet"] {
        let path = out.join(name);
        let path = path.to_str().unwrap();
        for args in [
            &["blocks", "export", cut, "-o", path][..],
            &["blocks", "balances", cut, "-o", path, "--memory", "4K"],
        ] {
            let line = fails(&seekless(args));
            assert!(line.contains(cut), "{line}");
            assert!(out.read_dir().unwrap().next().is_none(), "{args:?}");
        }
        // An output in a directory that does not exist: named.
        let missing = out.join("no-such-dir").join(name);
        let missing = missing.to_str().unwrap();
        let snap = dir.join("utxo.dat");
        for command in ["export", "balances"] {
            let args = ["blocks", command, snap.to_str().unwrap(), "-o", missing];
            let line = fails(&seekless(&args));
            assert!(line.contains(missing), "{line}");
        }
        assert!(out.read_dir().unwrap().next().is_none());
    }
    // Standard output cut: the damage is named, nothing is printed.
    let output = seekless(&["blocks", "balances", cut]);
    let line = fails(&output);
    assert!(line.contains(cut), "{line}");
    assert!(output.stdout.is_empty());
    // Not a snapshot at all.
    let line = fails(&seekless(&[
        "blocks",
        "export",
        dir.join("blocks/blk00000.dat").to_str().unwrap(),
        "-o",
        out.join("u.csv").to_str().unwrap(),
    ]));
    assert!(line.contains("not a UTXO snapshot"), "{line}");
    assert!(out.read_dir().unwrap().next().is_none());
}

#[cfg(unix)]
#[test]
fn balances_to_a_closed_pipe_ends_quietly() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    // 5,000 scripts of their own: rows well past a pipe's buffer.
    let dir = TempDir::new("cli-balances-pipe");
    let path = dir.join("s.dat");
    let mut rng = generate::Rng::new(3);
    let mut coins: Vec<(OutPoint, Coin)> = (0..5000)
        .map(|_| {
            let mut txid = [0u8; 32];
            rng.fill(&mut txid);
            let mut script = vec![0x00, 32];
            script.extend((0..32).map(|_| rng.below(256) as u8));
            let coin = Coin {
                value: rng.below(1 << 40),
                height: 7,
                coinbase: false,
                script,
            };
            (OutPoint { txid, vout: 0 }, coin)
        })
        .collect();
    coins.sort_by(|a, b| a.0.core_cmp(&b.0));
    let file = std::fs::File::create(&path).unwrap();
    let base = seekless_blocks::BlockHash([1; 32]);
    let mut writer =
        seekless_blocks::SnapshotWriter::new(file, Network::Main, base, coins.len() as u64)
            .unwrap();
    for (outpoint, coin) in &coins {
        writer.push(outpoint, coin).unwrap();
    }
    writer.finish().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_seekless"))
        .args(["blocks", "balances", path.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert_eq!(first, "address,scriptpubkey,balance,coins\n");
    let out = child.wait_with_output().unwrap();
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() || out.status.signal() == Some(13),
        "{:?}",
        out.status
    );
}
