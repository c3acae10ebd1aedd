//! `seekless blocks txindex` and `blocks tx` end to end, on a generated
//! regtest chain whose transactions spend each other (XOR'd, out of
//! order, with a stale fork).
#![cfg(feature = "blocks")]

use std::path::Path;
use std::process::Output;

use seekless_blocks::generate::spends::SpendingChain;
use seekless_blocks::{BlockHash, Transaction, XorKey};
use serde_json::Value;

use crate::common::seekless;
use seekless_testkit::TempDir;

/// One best-chain transaction: txid (as shown), bytes, height, position.
struct Tx {
    txid: String,
    raw: Vec<u8>,
    height: u32,
    position: u32,
}

/// Writes a 110-block spending chain with a 2-block stale fork into
/// `dir`; returns the best chain's transactions and the fork's txids.
fn write_chain(dir: &Path) -> (Vec<Tx>, Vec<String>) {
    let mut chain = SpendingChain::new(11);
    for _ in 0..110 {
        chain.extend(4);
    }
    let stale = chain.builder.extend_chain(30, 2);
    let key = XorKey([3, 1, 4, 1, 5, 9, 2, 6]);
    chain.write_dir(dir, 10_000, key).unwrap();
    let txs_of = |index: usize| -> Vec<Tx> {
        let block = &chain.builder.blocks[index];
        let (mut at, mut out) = (81, Vec::new());
        for position in 0..block.bytes[80] as u32 {
            let (tx, len) = Transaction::parse(&block.bytes[at..], at).unwrap();
            out.push(Tx {
                txid: BlockHash(tx.txid()).to_string(),
                raw: tx.raw().to_vec(),
                height: block.height,
                position,
            });
            at += len;
        }
        out
    };
    let mut best = Vec::new();
    let mut index = Some(chain.tip());
    while let Some(i) = index {
        best.push(i);
        index = chain.builder.blocks[i].parent;
    }
    best.reverse();
    let txs = best.into_iter().flat_map(txs_of).collect();
    let fork = [stale, chain.builder.blocks[stale].parent.unwrap()]
        .into_iter()
        .flat_map(txs_of)
        .map(|tx| tx.txid)
        .collect();
    (txs, fork)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn one_line_error(output: &Output, status: i32) -> String {
    let stderr = String::from_utf8(output.stderr.clone()).unwrap();
    assert_eq!(output.status.code(), Some(status), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("seekless: "), "{stderr}");
    stderr
}

#[test]
fn txindex_then_tx_prints_transactions_as_core_does() {
    let dir = TempDir::new("cli-txindex");
    let blocks = dir.join("blocks");
    std::fs::create_dir(&blocks).unwrap();
    let (txs, fork) = write_chain(&blocks);
    let index = dir.join("tx.idx");
    let index = index.to_str().unwrap();
    let built = seekless(&["blocks", "txindex", blocks.to_str().unwrap(), "-o", index]);
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let text = String::from_utf8(built.stdout).unwrap();
    assert!(
        text.starts_with(&format!("indexed {} transactions of 111 blocks", txs.len())),
        "{text}"
    );
    // Hex, one a line, in the order asked.
    let picks: Vec<&Tx> = txs.iter().step_by(9).collect();
    let mut args = vec!["blocks", "tx", index];
    args.extend(picks.iter().map(|t| t.txid.as_str()));
    let out = seekless(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    let expected: Vec<String> = picks.iter().map(|t| hex(&t.raw)).collect();
    assert_eq!(lines, expected);
    // JSON: Core's fields, amounts with 8 decimals, height and position.
    let spend = txs.iter().find(|t| t.position > 0).expect("a spend");
    let out = seekless(&["blocks", "tx", index, "--json", &txs[1].txid, &spend.txid]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for value in text.split(r#""value":"#).skip(1) {
        let number = &value[..value.find(',').unwrap()];
        let (units, decimals) = number.split_once('.').unwrap();
        assert!(units.bytes().all(|b| b.is_ascii_digit()), "{number}");
        assert!(
            decimals.len() == 8 && decimals.bytes().all(|b| b.is_ascii_digit()),
            "{number}"
        );
    }
    let objects: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for (object, tx) in objects.iter().zip([&txs[1], spend]) {
        assert_eq!(object["txid"], tx.txid);
        assert_eq!(object["hex"], hex(&tx.raw));
        assert_eq!(object["height"], tx.height);
        assert_eq!(object["position"], tx.position);
        assert_eq!(object["size"], tx.raw.len());
        assert_eq!(object["confirmations"], 111 - tx.height);
        assert!(object["blockhash"].as_str().unwrap().len() == 64);
        assert!(object["vin"].is_array() && object["vout"].is_array());
    }
    assert!(objects[0]["vin"][0]["coinbase"].is_string());
    assert!(objects[1]["vin"][0]["txid"].is_string());
    assert!(objects[1]["vout"][0]["scriptPubKey"]["hex"].is_string());
    // A stale fork's txid and an unknown one: a line each, the rest
    // printed, exit 1.
    let unknown = "00".repeat(32);
    let out = seekless(&["blocks", "tx", index, &fork[0], &txs[2].txid, &unknown]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().trim(),
        hex(&txs[2].raw)
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 2, "{stderr}");
    assert!(
        stderr.contains(&fork[0]) && stderr.contains(&unknown),
        "{stderr}"
    );
    // The same index, byte for byte, from a tiny memory.
    let small = dir.join("small.idx");
    let built = seekless(&[
        "blocks",
        "txindex",
        blocks.to_str().unwrap(),
        "-o",
        small.to_str().unwrap(),
        "--memory",
        "1K",
    ]);
    assert!(built.status.success());
    assert_eq!(
        std::fs::read(index).unwrap(),
        std::fs::read(&small).unwrap()
    );
    // Bad input and bad indexes: one line, exit 2.
    one_line_error(&seekless(&["blocks", "tx", index, "xyz"]), 2);
    std::fs::write(dir.join("junk"), b"not an index at all, clearly").unwrap();
    let junk = dir.join("junk");
    let error = one_line_error(
        &seekless(&["blocks", "tx", junk.to_str().unwrap(), &txs[0].txid]),
        2,
    );
    assert!(error.contains("not a valid transaction index"), "{error}");
    // Block files moved: found with --blocks; cut short: refused.
    let moved = dir.join("moved");
    std::fs::rename(&blocks, &moved).unwrap();
    one_line_error(&seekless(&["blocks", "tx", index, &txs[0].txid]), 2);
    let out = seekless(&[
        "blocks",
        "tx",
        index,
        "--blocks",
        moved.to_str().unwrap(),
        &txs[0].txid,
    ]);
    assert!(out.status.success());
    for n in 0.. {
        let file = moved.join(format!("blk{n:05}.dat"));
        let Ok(bytes) = std::fs::read(&file) else {
            break;
        };
        std::fs::write(&file, &bytes[..bytes.len() - 1]).unwrap();
    }
    let error = one_line_error(
        &seekless(&[
            "blocks",
            "tx",
            index,
            "--blocks",
            moved.to_str().unwrap(),
            &txs[0].txid,
        ]),
        2,
    );
    assert!(
        error.contains("shorter") && error.contains("rebuild"),
        "{error}"
    );
}
