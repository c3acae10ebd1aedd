//! `seekless blocks utxo` end to end: generated chains whose transactions
//! spend earlier outputs, the snapshot read back and held to a model built
//! from the same transactions, the totals printed, a block that does not
//! connect.
#![cfg(feature = "blocks")]

use std::collections::HashMap;
use std::path::Path;
use std::process::Output;

use seekless_blocks::generate::spends::{GenTx, SpendingChain};
use seekless_blocks::{
    Coin, Network, OutPoint, SnapshotMetadata, SnapshotReader, UtxoStats, XorKey, is_unspendable,
};
use serde_json::Value;

use crate::common::seekless;
use seekless_testkit::TempDir;

fn json(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// A valid spending chain of 130 blocks with a stale fork, XORed and out of
/// order in `dir`; a bad block on top when `bad`. Returns the chain and the
/// best chain's block indices from genesis.
fn write_spending_chain(dir: &Path, bad: bool) -> (SpendingChain, Vec<usize>) {
    let mut chain = SpendingChain::new(21);
    for _ in 0..130 {
        chain.extend(5);
    }
    let mut path = vec![chain.tip()];
    while let Some(parent) = chain.builder.blocks[*path.last().unwrap()].parent {
        path.push(parent);
    }
    path.reverse();
    chain.builder.extend_chain(path[100], 2);
    if bad {
        let ghost = OutPoint {
            txid: [7; 32],
            vout: 1,
        };
        let tx = GenTx::spend(&[ghost], &[(5, vec![0x51])], false);
        chain.extend_with(&[1, 2, 3], &[(50, vec![0x51])], vec![tx]);
    }
    let key = XorKey([3, 1, 4, 1, 5, 9, 2, 6]);
    chain.write_dir(dir, 30_000, key).unwrap();
    (chain, path)
}

/// The UTXO set at `height`, from the generator's transactions, in Core's order.
fn utxo_model(chain: &SpendingChain, path: &[usize], height: usize) -> Vec<(OutPoint, Coin)> {
    let mut set = HashMap::new();
    for &index in &path[1..=height] {
        for tx in &chain.txs[index] {
            for input in &tx.inputs {
                set.remove(input).unwrap();
            }
            for (vout, (value, script)) in tx.outputs.iter().enumerate() {
                if !is_unspendable(script) {
                    let coin = Coin {
                        value: *value as u64,
                        height: chain.builder.blocks[index].height,
                        coinbase: tx.coinbase,
                        script: script.clone(),
                    };
                    let vout = vout as u32;
                    set.insert(
                        OutPoint {
                            txid: tx.txid,
                            vout,
                        },
                        coin,
                    );
                }
            }
        }
    }
    let mut coins: Vec<(OutPoint, Coin)> = set.into_iter().collect();
    coins.sort_by(|a, b| a.0.core_cmp(&b.0));
    coins
}

fn read_snapshot(path: &Path) -> (SnapshotMetadata, Vec<(OutPoint, Coin)>) {
    let reader = SnapshotReader::new(std::fs::File::open(path).unwrap()).unwrap();
    let metadata = *reader.metadata();
    (metadata, reader.map(Result::unwrap).collect())
}

#[test]
fn utxo_writes_the_snapshot_and_prints_the_totals() {
    let dir = TempDir::new("cli-utxo-in");
    let out = TempDir::new("cli-utxo-out");
    let (chain, path) = write_spending_chain(&dir, false);
    let snapshot = out.join("utxo.dat");
    let snap = snapshot.to_str().unwrap();
    let run = seekless(&[
        "blocks",
        "utxo",
        dir.to_str().unwrap(),
        "-o",
        snap,
        "--json",
    ]);
    let text = String::from_utf8(run.stdout.clone()).unwrap();
    let v = json(&run);
    let model = utxo_model(&chain, &path, 130);
    let tip = chain.builder.blocks[path[130]].hash;
    assert_eq!(v["height"], 130);
    assert_eq!(v["bestblock"], tip.to_string());
    assert_eq!(v["txouts"], model.len());
    assert_eq!(v["path"], snap);
    let sats: u64 = model.iter().map(|(_, c)| c.value).sum();
    let amount = format!("{}.{:08}", sats / 100_000_000, sats % 100_000_000);
    assert!(
        text.contains(&format!("\"total_amount\":{amount},")),
        "{text}"
    );
    let mut stats = UtxoStats::new();
    for (outpoint, coin) in &model {
        stats.add(outpoint, coin);
    }
    assert_eq!(v["muhash"], stats.muhash_hex());
    assert_eq!(v["bogosize"], stats.bogosize);
    let (metadata, coins) = read_snapshot(&snapshot);
    assert_eq!(
        (metadata.network, metadata.base, metadata.coins),
        (Network::Regtest, tip, model.len() as u64)
    );
    assert_eq!(coins, model);
    // Nothing but the snapshot is left beside it.
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 1);

    // Lower, as text, over the earlier snapshot.
    let run = seekless(&[
        "blocks",
        "utxo",
        dir.to_str().unwrap(),
        "-o",
        snap,
        "--height",
        "115",
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let text = String::from_utf8(run.stdout).unwrap();
    let model = utxo_model(&chain, &path, 115);
    let hash = chain.builder.blocks[path[115]].hash;
    assert!(
        text.starts_with(&format!(
            "height        115\nbestblock     {hash}\ntxouts        {}\n",
            model.len()
        )),
        "{text}"
    );
    assert!(text.ends_with(&format!("snapshot      {snap}\n")), "{text}");
    assert_eq!(read_snapshot(&snapshot).1, model);

    // With 4 KiB of memory the coins live in files (in --tmp-dir): the
    // same bytes; the files are gone after, and a store directory a killed
    // run left beside the output is cleared first.
    let expected = std::fs::read(&snapshot).unwrap();
    let scratch = TempDir::new("cli-utxo-scratch");
    let left = out.join(".utxo.dat.utxo-store");
    std::fs::create_dir(&left).unwrap();
    std::fs::write(left.join("part-00"), b"left by a killed run").unwrap();
    for extra in [
        &["--memory", "4K"][..],
        &["--memory", "4K", "--tmp-dir", scratch.to_str().unwrap()],
    ] {
        let mut args = vec![
            "blocks",
            "utxo",
            dir.to_str().unwrap(),
            "-o",
            snap,
            "--height",
            "115",
        ];
        args.extend_from_slice(extra);
        let run = seekless(&args);
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        assert_eq!(std::fs::read(&snapshot).unwrap(), expected);
        assert_eq!(std::fs::read_dir(&out).unwrap().count(), 1);
        assert_eq!(std::fs::read_dir(&scratch).unwrap().count(), 0);
    }

    // Past the tip: one line, status 2, the snapshot untouched.
    let before = std::fs::read(&snapshot).unwrap();
    let run = seekless(&[
        "blocks",
        "utxo",
        dir.to_str().unwrap(),
        "-o",
        snap,
        "--height",
        "131",
    ]);
    assert_eq!(run.status.code(), Some(2));
    assert_eq!(
        String::from_utf8(run.stderr).unwrap(),
        "seekless: height 131 is past the best chain's tip at 130\n"
    );
    assert_eq!(std::fs::read(&snapshot).unwrap(), before);
    // An input as the output: refused.
    let input = dir.join("blk00000.dat");
    let run = seekless(&[
        "blocks",
        "utxo",
        dir.to_str().unwrap(),
        "-o",
        input.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(2));
}

#[test]
fn utxo_stops_at_a_block_that_does_not_connect() {
    let dir = TempDir::new("cli-utxo-bad");
    let out = TempDir::new("cli-utxo-bad-out");
    let (chain, path) = write_spending_chain(&dir, true);
    let bad = chain.builder.blocks[chain.tip()].hash;
    let snapshot = out.join("utxo.dat");
    let run = seekless(&[
        "blocks",
        "utxo",
        dir.to_str().unwrap(),
        "-o",
        snapshot.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(1));
    let stderr = String::from_utf8(run.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "seekless: block {bad} at height 131 does not connect: transaction "
        )),
        "{stderr}"
    );
    assert!(stderr.contains("input 0 spends 0707070707070707070707070707070707070707070707070707070707070707:1, missing or spent (bad-txns-inputs-missingorspent)"), "{stderr}");
    assert!(
        stderr.ends_with("; the snapshot is the set at height 130\n"),
        "{stderr}"
    );
    let text = String::from_utf8(run.stdout).unwrap();
    assert!(text.starts_with("height        130\n"), "{text}");
    assert_eq!(read_snapshot(&snapshot).1, utxo_model(&chain, &path, 130));
}
