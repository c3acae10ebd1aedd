//! The Python package's block files (crates/python/tests/data/blocks): a
//! small generated regtest chain with spends, XOR'd and out of order as
//! Core writes it, with a stale fork; its UTXO snapshot at the tip
//! (`utxo.dat`, written by `write_snapshot`); and the facts the Python
//! tests check against (`facts.json`). The tests there need no Rust.
//!
//! Regenerate (after a change to the generator or the formats):
//!
//! ```text
//! cargo test -p seekless-blocks --test python_fixture -- --ignored
//! ```
//!
//! The test that is not ignored holds the committed files to the library:
//! scanned and connected again here, they give the committed snapshot,
//! byte for byte, and the committed facts.

use std::path::{Path, PathBuf};

use seekless_blocks::generate::spends::SpendingChain;
use seekless_blocks::generate::{self};
use seekless_blocks::{
    BlockHash, Chain, MemoryCoins, ScanOptions, XorKey, connect_each, list_block_files, scan,
    write_snapshot,
};
use seekless_testkit::TempDir;
use serde_json::{Value, json};

const KEY: XorKey = XorKey([0x5e, 0xe1, 0x35, 0x5b, 0x10, 0xc5, 0x2a, 0x07]);
const SEED: u64 = 70;
/// Blocks past genesis.
const LEN: usize = 120;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../python/tests/data")
}

/// Writes the chain's blocks into `dir` (created) as Core would: in
/// headers-first order, in files of at most 24 kB, XOR'd with xor.dat.
fn write_blocks(dir: &Path) {
    let mut chain = SpendingChain::new(SEED);
    for _ in 0..LEN {
        chain.extend(3);
    }
    // A stale fork of two blocks off height 100: on no best chain.
    let mut path = vec![chain.tip()];
    while let Some(parent) = chain.builder.blocks[*path.last().unwrap()].parent {
        path.push(parent);
    }
    path.reverse();
    chain.builder.extend_chain(path[100], 2);
    std::fs::create_dir_all(dir).unwrap();
    let mut rng = chain.rng().clone();
    let blocks: Vec<_> = chain.builder.blocks.iter().collect();
    generate::write_core_dir(dir, &blocks, 8, 24_000, KEY, &mut rng).unwrap();
}

/// Scans and connects the blocks in `dir`, writes the snapshot at `snapshot`
/// and returns the facts.
fn facts(dir: &Path, snapshot: &Path) -> Value {
    let files = list_block_files(&[dir.to_path_buf()], None).unwrap();
    let mut output = scan(files, &ScanOptions::default(), &mut |_| {}).unwrap();
    let chain = Chain::build(&mut output);
    let tip = chain.tip().unwrap();
    let mut coins = MemoryCoins::new();
    let (mut created, mut spent, mut inputs, mut multi_input) = (0u128, 0u128, 0u64, 0u64);
    let mut txids = Vec::new();
    let report = connect_each(&chain, &output.files, None, &mut coins, &mut |block| {
        let height = block.info().height.unwrap();
        for (position, (tx, txid)) in block.transactions().enumerate() {
            created += tx.outputs().map(|o| o.value as u128).sum::<u128>();
            if !tx.is_coinbase() {
                inputs += tx.input_count();
                multi_input += u64::from(tx.input_count() > 1);
            }
            // A few transactions for TxIndex: one in every 20 blocks.
            if height % 20 == 0 {
                txids.push(json!({
                    "txid": BlockHash(txid).to_string(),
                    "height": height,
                    "position": position,
                    "size": tx.raw().len(),
                }));
            }
        }
        spent += block
            .spent()
            .map(|(_, coin)| coin.value as u128)
            .sum::<u128>();
        Ok(())
    })
    .unwrap();
    assert!(report.failure.is_none(), "{:?}", report.failure);
    let stats =
        write_snapshot(&coins, chain.network(), report.hash, snapshot, &mut |_| {}).unwrap();
    let best: Vec<_> = chain.best_chain().collect();
    json!({
        "network": chain.network().name(),
        "height": tip.height,
        "tip": tip.hash.to_string(),
        "blocks": chain.len(),
        "best_chain": best.len(),
        "genesis": best[0].hash.to_string(),
        "hashes": best.iter().step_by(10).map(|b| json!([b.height, b.hash.to_string()])).collect::<Vec<_>>(),
        "transactions": report.transactions + 1,
        "inputs": inputs,
        "multi_input_transactions": multi_input,
        "created": created as u64,
        "spent": spent as u64,
        "coins": stats.coins,
        "total_amount": stats.total_amount as u64,
        "muhash": stats.muhash_hex(),
        "txids": txids,
        "files": output.files.len(),
    })
}

fn pretty(facts: &Value) -> String {
    serde_json::to_string_pretty(facts).unwrap() + "\n"
}

#[test]
#[ignore = "writes crates/python/tests/data: run to regenerate the fixture"]
fn regenerate_python_fixture() {
    let data = data_dir();
    let blocks = data.join("blocks");
    if blocks.exists() {
        std::fs::remove_dir_all(&blocks).unwrap();
    }
    write_blocks(&blocks);
    let facts = facts(&blocks, &data.join("utxo.dat"));
    std::fs::write(data.join("facts.json"), pretty(&facts)).unwrap();
}

#[test]
fn the_python_fixture_is_what_the_library_makes_of_it() {
    let data = data_dir();
    let out = TempDir::new("python-fixture");
    let snapshot = out.join("utxo.dat");
    let facts = facts(&data.join("blocks"), &snapshot);
    let committed: Value =
        serde_json::from_str(&std::fs::read_to_string(data.join("facts.json")).unwrap()).unwrap();
    assert_eq!(facts, committed, "regenerate: see this file's docs");
    assert_eq!(
        std::fs::read(&snapshot).unwrap(),
        std::fs::read(data.join("utxo.dat")).unwrap()
    );
    // What the Python tests rely on: spends of several inputs, a stale
    // fork, more than one file.
    assert!(facts["multi_input_transactions"].as_u64().unwrap() > 5);
    assert!(facts["blocks"].as_u64() > facts["best_chain"].as_u64());
    assert!(facts["files"].as_u64().unwrap() > 1);
}
