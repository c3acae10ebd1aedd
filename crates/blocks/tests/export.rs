//! `export_utxos` and `balances` (feature `export`): a snapshot of a
//! generated chain, and one of hand-made coins whose scripts repeat and
//! take every standard shape, written to CSV, SQLite and Parquet and read
//! back with other readers (line splitting, rusqlite, the parquet crate's
//! row reader), held to the coins `SnapshotReader` gives and to a
//! `HashMap` model of the balances; the SQLite schema held to the text of
//! Core's utxo_to_sqlite.py; damaged snapshots and unwritable outputs.
#![cfg(feature = "export")]

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::RowAccessor;
use seekless_blocks::generate::spends::SpendingChain;
use seekless_blocks::generate::{self, Rng};
use seekless_blocks::{
    BalanceOptions, BalancesTo, BlockHash, Chain, Coin, ErrorKind, ExportFormat, MemoryCoins,
    Network, OutPoint, ScanOptions, SnapshotReader, SnapshotWriter, XorKey, balances, connect,
    export_utxos, list_block_files, scan, script_address, write_snapshot,
};
use seekless_testkit::TempDir;

/// The statement utxo_to_sqlite.py (Bitcoin Core, contrib/utxo-tools)
/// creates its table with.
const UTXO_TO_SQLITE_PY: &str = "CREATE TABLE utxos(txid TEXT, vout INT, value INT, coinbase INT, height INT, scriptpubkey TEXT)";

/// A row of the utxos table as text, in the script's forms.
type UtxoRow = (String, i64, i64, i64, i64, String);

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn txid_hex(txid: &[u8; 32]) -> String {
    let mut reversed = *txid;
    reversed.reverse();
    hex(&reversed)
}

/// A snapshot of a generated regtest chain's UTXO set at its tip.
fn chain_snapshot(dir: &Path) -> PathBuf {
    let mut chain = SpendingChain::new(70);
    for _ in 0..125 {
        chain.extend(6);
    }
    let blocks = dir.join("blocks");
    std::fs::create_dir(&blocks).unwrap();
    let (files, _) = generate::layout_files(
        Network::Regtest,
        chain.builder.blocks.iter().map(|b| b.bytes.as_slice()),
        1 << 20,
        XorKey::default(),
    );
    generate::write_block_files(&blocks, &files, None).unwrap();
    let files = list_block_files(&[blocks], None).unwrap();
    let mut output = scan(files, &ScanOptions::default(), &mut |_| {}).unwrap();
    let chain = Chain::build(&mut output);
    let mut coins = MemoryCoins::new();
    let report = connect(&chain, &output.files, None, &mut coins, &mut |_| {}).unwrap();
    let path = dir.join("chain.dat");
    write_snapshot(&coins, Network::Regtest, report.hash, &path, &mut |_| {}).unwrap();
    path
}

/// Scripts of every shape, some paid many times.
fn scripts(rng: &mut Rng) -> Vec<Vec<u8>> {
    let mut scripts = Vec::new();
    // Satoshi's genesis output key hash as P2PKH, and BIP 350's P2TR.
    let satoshi = [
        0x62, 0xe9, 0x07, 0xb1, 0x5c, 0xbf, 0x27, 0xd5, 0x42, 0x53, 0x99, 0xeb, 0xf6, 0xf0, 0xfb,
        0x50, 0xeb, 0xb8, 0x8f, 0x18,
    ];
    scripts.push([&[0x76, 0xa9, 20][..], &satoshi, &[0x88, 0xac]].concat());
    let taproot = "79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798";
    let taproot: Vec<u8> = (0..32)
        .map(|i| u8::from_str_radix(&taproot[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    scripts.push([&[0x51, 32][..], &taproot].concat());
    for _ in 0..40 {
        let mut body = [0u8; 65];
        rng.fill(&mut body);
        let script = match rng.below(9) {
            0 => [&[0x76, 0xa9, 20][..], &body[..20], &[0x88, 0xac]].concat(),
            1 => [&[0xa9, 20][..], &body[..20], &[0x87]].concat(),
            2 => [&[0x00, 20][..], &body[..20]].concat(),
            3 => [&[0x00, 32][..], &body[..32]].concat(),
            4 => [&[0x51, 32][..], &body[..32]].concat(),
            5 => [&[0x52, 16][..], &body[..16]].concat(),
            // Bare P2PK (uncompressed: stored plain, as its key is
            // random) and a 1-of-2 bare multisig.
            6 => [&[65][..], &body, &[0xac]].concat(),
            7 => [
                &[0x51, 33][..],
                &body[..33],
                &[33],
                &body[32..65],
                &[0x52, 0xae],
            ]
            .concat(),
            _ => body[..rng.below(30) as usize].to_vec(),
        };
        scripts.push(script);
    }
    scripts
}

/// A mainnet snapshot of `n` hand-made coins in Core's order: most pay one
/// of a few dozen scripts, the rest scripts of their own.
fn made_snapshot(path: &Path, n: usize) -> Vec<(OutPoint, Coin)> {
    let mut rng = Rng::new(0x5eed);
    let shared = scripts(&mut rng);
    let mut coins: Vec<(OutPoint, Coin)> = (0..n)
        .map(|i| {
            let mut txid = [0u8; 32];
            rng.fill(&mut txid);
            let script = if i % 4 == 0 {
                let mut own = vec![0x00, 20];
                own.extend((0..20).map(|_| rng.below(256) as u8));
                own
            } else {
                shared[rng.below(shared.len() as u64) as usize].clone()
            };
            let coin = Coin {
                value: rng.below(5_000_000_000),
                height: rng.below(900_000) as u32,
                coinbase: rng.below(10) == 0,
                script,
            };
            let vout = rng.below(4) as u32;
            (OutPoint { txid, vout }, coin)
        })
        .collect();
    coins.sort_by(|a, b| a.0.core_cmp(&b.0));
    coins.dedup_by(|a, b| a.0 == b.0);
    let file = std::fs::File::create(path).unwrap();
    let mut writer =
        SnapshotWriter::new(file, Network::Main, BlockHash([9; 32]), coins.len() as u64).unwrap();
    for (outpoint, coin) in &coins {
        writer.push(outpoint, coin).unwrap();
    }
    writer.finish().unwrap();
    coins
}

fn read_snapshot(path: &Path) -> Vec<(OutPoint, Coin)> {
    let reader = SnapshotReader::new(std::fs::File::open(path).unwrap()).unwrap();
    reader.map(Result::unwrap).collect()
}

fn utxo_rows(coins: &[(OutPoint, Coin)]) -> Vec<UtxoRow> {
    coins
        .iter()
        .map(|(o, c)| {
            (
                txid_hex(&o.txid),
                o.vout as i64,
                c.value as i64,
                c.coinbase as i64,
                c.height as i64,
                hex(&c.script),
            )
        })
        .collect()
}

fn csv_lines(path: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.ends_with('\n'));
    text.lines()
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

fn utxos_from_csv(path: &Path) -> Vec<UtxoRow> {
    let lines = csv_lines(path);
    assert_eq!(
        lines[0],
        [
            "txid",
            "vout",
            "value",
            "coinbase",
            "height",
            "scriptpubkey"
        ]
    );
    lines[1..]
        .iter()
        .map(|f| {
            assert_eq!(f.len(), 6, "{f:?}");
            let n = |i: usize| f[i].parse::<i64>().unwrap();
            (f[0].clone(), n(1), n(2), n(3), n(4), f[5].clone())
        })
        .collect()
}

/// The database's schema (every object's SQL) and its rows.
/// A row of `sqlite_master`: type, name, SQL.
type SchemaRow = (String, String, Option<String>);

fn utxos_from_sqlite(path: &Path) -> (Vec<SchemaRow>, Vec<UtxoRow>) {
    let db = rusqlite::Connection::open(path).unwrap();
    let schema = db
        .prepare("SELECT type, name, sql FROM sqlite_master")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    // Stored as the script stores them: text, and integers.
    let (bad,): (i64,) = db
        .query_row(
            "SELECT count(*) FROM utxos WHERE typeof(txid) != 'text' \
             OR typeof(scriptpubkey) != 'text' OR typeof(vout) != 'integer' \
             OR typeof(value) != 'integer' OR typeof(coinbase) != 'integer' \
             OR typeof(height) != 'integer'",
            [],
            |r| Ok((r.get(0)?,)),
        )
        .unwrap();
    assert_eq!(bad, 0);
    let rows = db
        .prepare("SELECT * FROM utxos ORDER BY rowid")
        .unwrap()
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
            ))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    (schema, rows)
}

fn utxos_from_parquet(path: &Path) -> Vec<UtxoRow> {
    let reader = SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
    let schema = reader.metadata().file_metadata().schema_descr();
    let columns: Vec<String> = schema
        .columns()
        .iter()
        .map(|c| format!("{} {}", c.name(), c.physical_type()))
        .collect();
    assert_eq!(
        columns,
        [
            "txid BYTE_ARRAY",
            "vout INT32",
            "value INT64",
            "coinbase BOOLEAN",
            "height INT32",
            "scriptpubkey BYTE_ARRAY"
        ]
    );
    reader
        .get_row_iter(None)
        .unwrap()
        .map(|row| {
            let row = row.unwrap();
            (
                row.get_string(0).unwrap().clone(),
                row.get_int(1).unwrap() as i64,
                row.get_long(2).unwrap(),
                row.get_bool(3).unwrap() as i64,
                row.get_int(4).unwrap() as i64,
                row.get_string(5).unwrap().clone(),
            )
        })
        .collect()
}

#[test]
fn a_chains_snapshot_in_every_format_reads_back_as_its_coins() {
    let dir = TempDir::new("export-chain");
    let snapshot = chain_snapshot(&dir);
    let coins = read_snapshot(&snapshot);
    assert!(coins.len() > 200, "{}", coins.len());
    let expected = utxo_rows(&coins);
    assert!(expected.iter().any(|r| r.3 == 1) && expected.iter().any(|r| r.3 == 0));

    for format in ExportFormat::ALL {
        let out = dir.join(format!("utxo.{}", format.name()));
        let mut progress = 0;
        let metadata = export_utxos(&snapshot, &out, format, &mut |n| progress += n).unwrap();
        assert_eq!(metadata.network, Network::Regtest);
        assert_eq!(metadata.coins, coins.len() as u64);
        assert_eq!(progress, coins.len() as u64);
        let rows = match format {
            ExportFormat::Csv => utxos_from_csv(&out),
            ExportFormat::Sqlite => {
                let (schema, rows) = utxos_from_sqlite(&out);
                assert_eq!(
                    schema,
                    [(
                        "table".to_string(),
                        "utxos".to_string(),
                        Some(UTXO_TO_SQLITE_PY.to_string())
                    )]
                );
                rows
            }
            ExportFormat::Parquet => utxos_from_parquet(&out),
            _ => unreachable!(),
        };
        assert_eq!(rows, expected, "{format:?}");
    }
    // Nothing but the snapshot, the blocks and the three files.
    let mut names = seekless_testkit::file_names(&dir);
    names.sort();
    assert_eq!(
        names,
        [
            "blocks",
            "chain.dat",
            "utxo.csv",
            "utxo.parquet",
            "utxo.sqlite"
        ]
    );
}

#[test]
fn a_snapshot_core_wrote_exports_as_utxo_to_sqlite_py_does() {
    // The rows utxo_to_sqlite.py (Core's contrib/utxo-tools, run by hand)
    // wrote from this file: the first, the 58th and the last.
    let snapshot = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/utxo-signet-100.dat");
    let dir = TempDir::new("export-core");
    let out = dir.join("core.sqlite");
    export_utxos(&snapshot, &out, ExportFormat::Sqlite, &mut |_| {}).unwrap();
    let rows = utxos_from_sqlite(&out).1;
    let row = |txid: &str, height, script: &str| {
        (
            txid.to_string(),
            0,
            5_000_000_000,
            1,
            height,
            script.to_string(),
        )
    };
    assert_eq!(rows.len(), 100);
    assert_eq!(
        rows[0],
        row(
            "02a01f18b83e4fbd80c8e8f7c49b1e70fb42e28c45e6e3b5d631e4a6e6f73d00",
            96,
            "0014a529eefabb26f5771ef5d761efe21092bb7908ef"
        )
    );
    assert_eq!(
        rows[57],
        row(
            "c74b3e1b600c85916842bb164fe1546ade0ca54c9a342a612910cdf94074e296",
            25,
            "00149082064217020ebaf25eaef1fed79205764886fc"
        )
    );
    assert_eq!(
        rows[99],
        row(
            "2aa9ffa429bd3054e60cea5abc44db992bdaa516ae69c4bcd9fd1887f67d9afd",
            45,
            "00148764ef08df6dd3afa0e34447c7b55a9ea3147da2"
        )
    );
    assert_eq!(rows.iter().map(|r| r.2).sum::<i64>(), 500_000_000_000);
}

#[test]
fn made_coins_export_with_every_script_shape() {
    let dir = TempDir::new("export-made");
    let snapshot = dir.join("made.dat");
    let coins = made_snapshot(&snapshot, 3000);
    let expected = utxo_rows(&coins);
    for format in ExportFormat::ALL {
        // Replacing what is there.
        let out = dir.join(format!("u.{}", format.name()));
        std::fs::write(&out, b"old").unwrap();
        export_utxos(&snapshot, &out, format, &mut |_| {}).unwrap();
        let rows = match format {
            ExportFormat::Csv => utxos_from_csv(&out),
            ExportFormat::Sqlite => utxos_from_sqlite(&out).1,
            _ => utxos_from_parquet(&out),
        };
        assert_eq!(rows, expected, "{format:?}");
    }
}

/// A balances row: address (empty: none), script hex, balance, coins.
type BalanceRow = (String, String, i64, i64);

/// The balances of `coins` as the output should list them.
fn balance_model(coins: &[(OutPoint, Coin)], network: Network) -> Vec<BalanceRow> {
    let mut sums: HashMap<&[u8], (u64, u64)> = HashMap::new();
    for (_, coin) in coins {
        let sum = sums.entry(&coin.script).or_default();
        sum.0 += coin.value;
        sum.1 += 1;
    }
    let mut rows: Vec<(&[u8], u64, u64)> = sums.into_iter().map(|(s, (b, c))| (s, b, c)).collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    rows.into_iter()
        .map(|(script, balance, coins)| {
            let address = script_address(script, network).unwrap_or_default();
            (address, hex(script), balance as i64, coins as i64)
        })
        .collect()
}

fn balances_from_csv(text: &str) -> Vec<BalanceRow> {
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("address,scriptpubkey,balance,coins"));
    lines
        .map(|line| {
            let f: Vec<&str> = line.split(',').collect();
            assert_eq!(f.len(), 4, "{line}");
            (
                f[0].to_string(),
                f[1].to_string(),
                f[2].parse().unwrap(),
                f[3].parse().unwrap(),
            )
        })
        .collect()
}

fn balances_from_sqlite(path: &Path) -> Vec<BalanceRow> {
    let db = rusqlite::Connection::open(path).unwrap();
    let sql: String = db
        .query_row("SELECT sql FROM sqlite_master", [], |r| r.get(0))
        .unwrap();
    assert_eq!(
        sql,
        "CREATE TABLE balances(address TEXT, scriptpubkey TEXT, balance INT, coins INT)"
    );
    db.prepare("SELECT * FROM balances ORDER BY rowid")
        .unwrap()
        .query_map([], |r| {
            let address: Option<String> = r.get(0)?;
            Ok((address.unwrap_or_default(), r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn balances_from_parquet(path: &Path) -> Vec<BalanceRow> {
    let reader = SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
    reader
        .get_row_iter(None)
        .unwrap()
        .map(|row| {
            let row = row.unwrap();
            // No address is a null, not an empty string.
            let address = row.get_string(0).ok().cloned();
            assert_ne!(address.as_deref(), Some(""));
            (
                address.unwrap_or_default(),
                row.get_string(1).unwrap().clone(),
                row.get_long(2).unwrap(),
                row.get_long(3).unwrap(),
            )
        })
        .collect()
}

#[test]
fn balances_match_a_model_in_memory_and_spilled() {
    let dir = TempDir::new("balances-made");
    let snapshot = dir.join("made.dat");
    let coins = made_snapshot(&snapshot, 4000);
    let model = balance_model(&coins, Network::Main);
    // The hand-made scripts' addresses are there, and scripts without one.
    let addressed = |a: &str| model.iter().any(|r| r.0 == a);
    assert!(addressed("1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa"));
    assert!(addressed(
        "bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0"
    ));
    assert!(model.iter().any(|r| r.0.is_empty()));
    assert!(model.iter().any(|r| r.3 > 50) && model.iter().any(|r| r.3 == 1));

    let scratch = TempDir::new("balances-scratch");
    for (memory, tmp_dir) in [
        (1 << 30, None),
        (4 << 10, None),
        (64 << 10, Some(scratch.to_path_buf())),
    ] {
        let options = BalanceOptions { memory, tmp_dir };
        let mut text = Vec::new();
        let mut read = 0;
        let report = balances(&snapshot, BalancesTo::Csv(&mut text), &options, &mut |n| {
            read += n
        })
        .unwrap();
        assert_eq!(read, coins.len() as u64);
        assert_eq!(report.coins, coins.len() as u64);
        assert_eq!(report.scripts, model.len() as u64);
        assert_eq!(report.amount, coins.iter().map(|c| c.1.value).sum::<u64>());
        assert_eq!(report.partitions > 0, memory < 1 << 20, "{memory}");
        let text = String::from_utf8(text).unwrap();
        assert_eq!(balances_from_csv(&text), model, "memory {memory}");
        for format in ExportFormat::ALL {
            let out = dir.join(format!("b.{}", format.name()));
            let to = BalancesTo::File { path: &out, format };
            balances(&snapshot, to, &options, &mut |_| {}).unwrap();
            let rows = match format {
                ExportFormat::Csv => balances_from_csv(&std::fs::read_to_string(&out).unwrap()),
                ExportFormat::Sqlite => balances_from_sqlite(&out),
                _ => balances_from_parquet(&out),
            };
            assert_eq!(rows, model, "{format:?}, memory {memory}");
        }
        // The spill files are gone.
        assert!(seekless_testkit::file_names(&scratch).is_empty());
        let mut names = seekless_testkit::file_names(&dir);
        names.sort();
        assert_eq!(names, ["b.csv", "b.parquet", "b.sqlite", "made.dat"]);
    }

    // A chain's snapshot: regtest addresses.
    let snapshot = chain_snapshot(&dir);
    let coins = read_snapshot(&snapshot);
    let mut text = Vec::new();
    let options = BalanceOptions {
        memory: 8 << 10,
        tmp_dir: None,
    };
    balances(&snapshot, BalancesTo::Csv(&mut text), &options, &mut |_| {}).unwrap();
    let rows = balances_from_csv(&String::from_utf8(text).unwrap());
    assert_eq!(rows, balance_model(&coins, Network::Regtest));
    assert!(rows.iter().any(|r| r.0.starts_with("bcrt1q")));
}

#[test]
fn a_damaged_snapshot_fails_and_leaves_nothing() {
    let dir = TempDir::new("export-damaged");
    let whole = dir.join("whole.dat");
    made_snapshot(&whole, 500);
    let bytes = std::fs::read(&whole).unwrap();
    let out = TempDir::new("export-damaged-out");
    for cut in [10, 60, bytes.len() / 2, bytes.len() - 1] {
        let damaged = dir.join("cut.dat");
        std::fs::write(&damaged, &bytes[..cut]).unwrap();
        for format in ExportFormat::ALL {
            let path = out.join(format!("u.{}", format.name()));
            let e = export_utxos(&damaged, &path, format, &mut |_| {}).unwrap_err();
            assert!(
                matches!(
                    e.kind(),
                    ErrorKind::UnexpectedEof { .. } | ErrorKind::CoinCount { .. }
                ),
                "{cut}: {e}"
            );
            let to = BalancesTo::File {
                path: &path,
                format,
            };
            let options = BalanceOptions {
                memory: 4 << 10,
                tmp_dir: None,
            };
            let e = balances(&damaged, to, &options, &mut |_| {}).unwrap_err();
            assert!(
                matches!(
                    e.kind(),
                    ErrorKind::UnexpectedEof { .. } | ErrorKind::CoinCount { .. }
                ),
                "{cut}: {e}"
            );
            assert!(seekless_testkit::file_names(&out).is_empty(), "{cut}");
        }
    }
    // A missing snapshot names itself.
    let missing = dir.join("missing.dat");
    let e = export_utxos(&missing, &out.join("u.csv"), ExportFormat::Csv, &mut |_| {});
    let e = e.unwrap_err().to_string();
    assert!(e.contains("missing.dat"), "{e}");
}

#[test]
fn an_unwritable_output_is_named_and_nothing_is_left() {
    let dir = TempDir::new("export-unwritable");
    let snapshot = dir.join("s.dat");
    made_snapshot(&snapshot, 200);
    for format in ExportFormat::ALL {
        let out = dir.join("no-such-dir").join(format!("u.{}", format.name()));
        let e = export_utxos(&snapshot, &out, format, &mut |_| {}).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::Io { .. }), "{e}");
        let text = e.to_string();
        assert!(text.contains(out.to_str().unwrap()), "{text}");
        let to = BalancesTo::File { path: &out, format };
        let e = balances(&snapshot, to, &BalanceOptions::default(), &mut |_| {}).unwrap_err();
        assert!(e.to_string().contains(out.to_str().unwrap()), "{e}");
    }
    assert_eq!(seekless_testkit::file_names(&dir), ["s.dat"]);
}

#[test]
fn an_empty_snapshot_makes_empty_tables() {
    let dir = TempDir::new("export-empty");
    let snapshot = dir.join("empty.dat");
    let file = std::fs::File::create(&snapshot).unwrap();
    SnapshotWriter::new(file, Network::Signet, BlockHash([1; 32]), 0)
        .unwrap()
        .finish()
        .unwrap();
    for format in ExportFormat::ALL {
        let out = dir.join(format!("u.{}", format.name()));
        export_utxos(&snapshot, &out, format, &mut |_| {}).unwrap();
        let rows = match format {
            ExportFormat::Csv => utxos_from_csv(&out),
            ExportFormat::Sqlite => utxos_from_sqlite(&out).1,
            _ => utxos_from_parquet(&out),
        };
        assert!(rows.is_empty(), "{format:?}");
        let out = dir.join(format!("b.{}", format.name()));
        let to = BalancesTo::File { path: &out, format };
        let report = balances(&snapshot, to, &BalanceOptions::default(), &mut |_| {}).unwrap();
        assert_eq!((report.scripts, report.coins), (0, 0));
    }
}
