//! The set on disk ([`DiskCoins`]) under budgets that flush every few
//! coins, held to the set in memory ([`MemoryCoins`], itself held to a
//! `HashMap` model in `utxo.rs`) on generated chains: the same coins in
//! Core's order at the tip and below, the same snapshot bytes whatever the
//! budget, the same last good height when a block breaks a rule, and an
//! I/O error returned, not a panic.

use std::path::{Path, PathBuf};

use seekless_blocks::generate::spends::{GenTx, SpendingChain};
use seekless_blocks::{
    Chain, Coin, CoinStore, ConnectReport, DiskCoins, ErrorKind, MemoryCoins, Network, OutPoint,
    Reject, ScanOptions, ScanOutput, SnapshotWriter, XorKey, connect, list_block_files, scan,
};
use seekless_testkit::TempDir;

const KEY: XorKey = XorKey([0x21, 0x32, 0x43, 0x54, 0x65, 0x76, 0x87, 0x98]);

fn scanned(dir: &Path) -> (Chain, ScanOutput) {
    let files = list_block_files(&[dir.to_path_buf()], None).unwrap();
    let mut output = scan(files, &ScanOptions::default(), &mut |_| {}).unwrap();
    (Chain::build(&mut output), output)
}

fn run(dir: &Path, height: Option<u32>, coins: &mut dyn CoinStore) -> ConnectReport {
    let (chain, output) = scanned(dir);
    connect(&chain, &output.files, height, coins, &mut |_| {}).unwrap()
}

fn contents(coins: &dyn CoinStore) -> Vec<(OutPoint, Coin)> {
    let mut seen = Vec::new();
    coins
        .visit_in_core_order(&mut |op, coin| {
            seen.push((*op, coin.clone()));
            Ok(())
        })
        .unwrap();
    seen
}

fn snapshot(coins: &dyn CoinStore, report: &ConnectReport) -> Vec<u8> {
    let mut writer =
        SnapshotWriter::new(Vec::new(), Network::Regtest, report.hash, coins.len()).unwrap();
    coins
        .visit_in_core_order(&mut |op, coin| writer.push(op, coin))
        .unwrap();
    writer.finish().unwrap()
}

fn store_dir(parent: &Path) -> PathBuf {
    parent.join("store")
}

#[test]
fn a_tiny_budget_gives_the_set_in_memory_at_the_tip_and_below() {
    let mut chain = SpendingChain::new(11);
    for _ in 0..140 {
        chain.extend(14);
    }
    let dir = TempDir::new("utxo-disk");
    chain.write_dir(&dir, 40_000, KEY).unwrap();
    for height in [None, Some(0), Some(1), Some(100), Some(139)] {
        let mut memory = MemoryCoins::new();
        let expected = run(&dir, height, &mut memory);
        let work = TempDir::new("utxo-disk-store");
        let mut disk = DiskCoins::create(&store_dir(&work), 8 << 10).unwrap();
        let report = run(&dir, height, &mut disk);
        assert!(report.failure.is_none(), "{:?}", report.failure);
        assert_eq!(
            (report.height, report.hash),
            (expected.height, expected.hash)
        );
        assert_eq!(disk.len(), memory.len());
        assert_eq!(contents(&disk), contents(&memory));
        if height.is_none() {
            assert!(disk.flushes() > 50, "{}", disk.flushes());
            assert!(memory.len() > 200, "{}", memory.len());
        }
    }
}

#[test]
fn the_snapshot_is_the_same_bytes_whatever_the_budget() {
    let mut chain = SpendingChain::new(12);
    for _ in 0..125 {
        chain.extend(20);
    }
    let dir = TempDir::new("utxo-disk-bytes");
    chain.write_dir(&dir, 40_000, KEY).unwrap();
    let mut memory = MemoryCoins::new();
    let report = run(&dir, None, &mut memory);
    let expected = snapshot(&memory, &report);
    for budget in [1, 4 << 10, 64 << 10, 1 << 30] {
        let work = TempDir::new("utxo-disk-budget");
        let mut disk = DiskCoins::create(&store_dir(&work), budget).unwrap();
        let report = run(&dir, None, &mut disk);
        assert!(snapshot(&disk, &report) == expected, "budget {budget}");
    }
}

#[test]
fn a_block_that_breaks_a_rule_leaves_the_set_at_its_parent() {
    let mut chain = SpendingChain::new(13);
    for _ in 0..110 {
        chain.extend(10);
    }
    // A block that spends a real coin, then one that does not exist: the
    // first spend is undone through the disk.
    let real = *chain.unspent.iter().find(|s| !s.coinbase).unwrap();
    let p2pkh = [&[0x76, 0xa9, 0x14][..], &[7; 20], &[0x88, 0xac]].concat();
    let ghost = OutPoint {
        txid: [0xab; 32],
        vout: 0,
    };
    let txs = vec![
        GenTx::spend(&[real.outpoint], &[(1, p2pkh.clone())], false),
        GenTx::spend(&[ghost], &[(1, p2pkh)], false),
    ];
    chain.extend_with(&[1, 111, 0], &[(50, vec![0x51])], txs);
    let dir = TempDir::new("utxo-disk-bad");
    chain.write_dir(&dir, 40_000, KEY).unwrap();
    let mut memory = MemoryCoins::new();
    let expected = run(&dir, None, &mut memory);
    let work = TempDir::new("utxo-disk-bad-store");
    let mut disk = DiskCoins::create(&store_dir(&work), 2 << 10).unwrap();
    let report = run(&dir, None, &mut disk);
    assert_eq!(report.height, 110);
    let failure = report.failure.expect("the block does not connect");
    match failure.kind() {
        ErrorKind::NotConnected { height, reject, .. } => {
            assert_eq!(*height, 111);
            assert!(matches!(
                reject,
                Reject::MissingOrSpent { prev_txid, prev_vout, .. }
                    if (*prev_txid, *prev_vout) == (ghost.txid, ghost.vout)
            ));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(expected.height, 110);
    assert_eq!(contents(&disk), contents(&memory));
}

#[test]
fn an_io_error_stops_the_run_with_the_file_named() {
    let mut chain = SpendingChain::new(14);
    for _ in 0..105 {
        chain.extend(10);
    }
    let dir = TempDir::new("utxo-disk-io");
    chain.write_dir(&dir, 40_000, KEY).unwrap();
    let work = TempDir::new("utxo-disk-io-store");
    let store = store_dir(&work);
    let mut disk = DiskCoins::create(&store, 1 << 10).unwrap();
    std::fs::remove_dir_all(&store).unwrap();
    let (built, output) = scanned(&dir);
    let err = connect(&built, &output.files, None, &mut disk, &mut |_| {}).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Io { .. }), "{err}");
    assert!(err.to_string().contains("part-"), "{err}");
}
