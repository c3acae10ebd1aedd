//! A chainstate kept between runs ([`ChainState`]) held to one run from
//! genesis on generated chains: runs in steps (files added one at a time)
//! end in the same snapshot bytes; reorgs (a fork that overtakes, and back)
//! disconnect and end as a fresh run on the final chain; a reorg or a
//! height deeper than the undo kept is refused, the state unchanged; a
//! block that does not connect leaves the state at its parent; damaged,
//! foreign and locked states are refused, a torn journal recovered.

use std::path::{Path, PathBuf};

use seekless_blocks::generate::spends::SpendingChain;
use seekless_blocks::generate::{self, GenBlock};
use seekless_blocks::{BlockHash, Chain, ScanOutput};
use seekless_blocks::{
    ChainState, CoinStore, ErrorKind, MemoryCoins, Network, ScanOptions, SnapshotWriter,
    StateOptions, XorKey, connect, list_block_files, scan,
};
use seekless_testkit::TempDir;

const KEY: XorKey = XorKey([0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]);

/// Lays `blocks` out as XORed block files of about 12 KB in `dir`, in
/// headers-first order; returns their paths.
fn write_blocks(dir: &Path, blocks: &[&GenBlock], seed: u64) -> Vec<PathBuf> {
    let mut rng = generate::Rng::new(seed);
    generate::write_core_dir(dir, blocks, 6, 12_000, KEY, &mut rng)
        .unwrap()
        .paths
}

fn scanned(paths: &[PathBuf]) -> (Chain, ScanOutput) {
    let files = list_block_files(paths, None).unwrap();
    let mut output = scan(files, &ScanOptions::default(), &mut |_| {}).unwrap();
    (Chain::build(&mut output), output)
}

fn snapshot(coins: &dyn CoinStore, base: BlockHash) -> Vec<u8> {
    let mut writer = SnapshotWriter::new(Vec::new(), Network::Regtest, base, coins.len()).unwrap();
    coins
        .visit_in_core_order(&mut |op, coin| writer.push(op, coin))
        .unwrap();
    writer.finish().unwrap()
}

/// One run from genesis, in memory: the snapshot and the height.
fn fresh(paths: &[PathBuf], height: Option<u32>) -> (Vec<u8>, u32) {
    let (chain, output) = scanned(paths);
    let mut coins = MemoryCoins::new();
    let report = connect(&chain, &output.files, height, &mut coins, &mut |_| {}).unwrap();
    (snapshot(&coins, report.hash), report.height)
}

fn options(undo_blocks: u32) -> StateOptions {
    StateOptions {
        memory: 3000,
        undo_blocks,
    }
}

/// Opens the state, brings it to `paths`' best chain: the snapshot, the
/// height and the blocks disconnected.
fn step(state: &Path, paths: &[PathBuf], height: Option<u32>, undo: u32) -> (Vec<u8>, u32, u32) {
    let (chain, output) = scanned(paths);
    let mut state = ChainState::open(state, Network::Regtest, &options(undo)).unwrap();
    let report = state
        .update(&chain, &output.files, height, &mut |_| {})
        .unwrap();
    assert!(
        report.connect.failure.is_none(),
        "{:?}",
        report.connect.failure
    );
    assert_eq!(state.height(), report.connect.height);
    let bytes = snapshot(state.coins(), state.hash());
    (bytes, report.connect.height, report.disconnected)
}

fn spending_chain(seed: u64, blocks: usize) -> SpendingChain {
    let mut chain = SpendingChain::new(seed);
    for _ in 0..blocks {
        chain.extend(8);
    }
    chain
}

/// The blocks of `chain`'s best chain, genesis included.
fn best(chain: &SpendingChain) -> Vec<&GenBlock> {
    let mut path = vec![chain.tip()];
    while let Some(parent) = chain.builder.blocks[*path.last().unwrap()].parent {
        path.push(parent);
    }
    path.iter()
        .rev()
        .map(|&i| &chain.builder.blocks[i])
        .collect()
}

#[test]
fn runs_in_steps_end_where_one_run_ends() {
    let chain = spending_chain(31, 130);
    let blocks = TempDir::new("state-steps");
    let paths = write_blocks(&blocks, &best(&chain), 5);
    assert!(paths.len() >= 6, "{}", paths.len());
    let state = TempDir::new("state-steps-dir");
    let dir = state.join("state");
    for n in 1..=paths.len() {
        let (bytes, height, disconnected) = step(&dir, &paths[..n], None, 288);
        let (expected, expected_height) = fresh(&paths[..n], None);
        assert_eq!((height, disconnected), (expected_height, 0), "{n} files");
        assert!(bytes == expected, "{n} files: the snapshots differ");
    }
    // Again with nothing new: nothing connected, the same set.
    let (bytes, height, _) = step(&dir, &paths, None, 288);
    assert_eq!((bytes, height), fresh(&paths, None));
    // Fewer files than the state was built from: refused, not a reorg.
    let (chain, output) = scanned(&paths[..2]);
    let mut open = ChainState::open(&dir, Network::Regtest, &options(288)).unwrap();
    let error = open
        .update(&chain, &output.files, None, &mut |_| {})
        .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::StateTipUnknown { height: 130, .. }),
        "{error}"
    );
    drop(open);
    // A height below the tip disconnects down to it; the tip again after.
    for height in [128, 100, 130] {
        let (bytes, at, _) = step(&dir, &paths, Some(height), 288);
        assert_eq!((bytes, at), fresh(&paths, Some(height)), "height {height}");
    }
    // Undo is kept for the last blocks only.
    let undo = std::fs::read_dir(dir.join("undo")).unwrap().count();
    assert_eq!(undo, 130);
    let (_, _, _) = step(&dir, &paths, None, 20);
    assert_eq!(std::fs::read_dir(dir.join("undo")).unwrap().count(), 20);
}

#[test]
fn a_fork_that_overtakes_is_connected_and_so_is_the_way_back() {
    // Two chains from one seed share their first 70 blocks; a draw on one
    // makes the next ones differ.
    let mut a = spending_chain(41, 70);
    let mut b = spending_chain(41, 70);
    b.rng().next_u64();
    for _ in 0..12 {
        b.extend(8);
    }
    for _ in 0..8 {
        a.extend(8);
    }
    let (best_a, best_b) = (best(&a), best(&b));
    assert_eq!(best_a[70].hash, best_b[70].hash);
    assert_ne!(best_a[71].hash, best_b[71].hash);
    let state = TempDir::new("state-reorg-dir");
    let dir = state.join("state");
    let only_a = TempDir::new("state-reorg-a");
    let paths = write_blocks(&only_a, &best_a, 1);
    assert_eq!(step(&dir, &paths, None, 288).1, 78);
    // Both branches: b's is longer, a's 8 blocks leave.
    let both = TempDir::new("state-reorg-both");
    let mut blocks = best_a.clone();
    blocks.extend(&best_b[71..]);
    let paths = write_blocks(&both, &blocks, 2);
    // A state keeping less undo than the reorg needs refuses it, unchanged.
    let (chain, output) = scanned(&paths);
    let mut shallow = ChainState::open(&dir, Network::Regtest, &options(3)).unwrap();
    let error = shallow
        .update(&chain, &output.files, None, &mut |_| {})
        .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::UndoTooShort { height: 78, .. }),
        "{error}"
    );
    assert_eq!(shallow.height(), 78);
    drop(shallow);
    let (bytes, height, disconnected) = step(&dir, &paths, None, 288);
    assert_eq!((height, disconnected), (82, 8));
    assert!(bytes == fresh(&paths, None).0, "after the reorg");
    // a grows past b: back to a, b's 12 blocks disconnected.
    for _ in 0..6 {
        a.extend(8);
    }
    let best_a = best(&a);
    let again = TempDir::new("state-reorg-again");
    let mut blocks = best_a.clone();
    blocks.extend(&best_b[71..]);
    let paths = write_blocks(&again, &blocks, 3);
    let (bytes, height, disconnected) = step(&dir, &paths, None, 288);
    assert_eq!((height, disconnected), (84, 12));
    assert!(bytes == fresh(&paths, None).0, "back to a");
    // Now the undo kept reaches only 3 blocks: --height 80 is refused.
    let (chain, output) = scanned(&paths);
    let mut shallow = ChainState::open(&dir, Network::Regtest, &options(3)).unwrap();
    let error = shallow
        .update(&chain, &output.files, Some(80), &mut |_| {})
        .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::UndoTooShort { reach: 81, .. }),
        "{error}"
    );
}

#[test]
fn damaged_foreign_and_busy_states_are_refused() {
    let chain = spending_chain(51, 30);
    let blocks = TempDir::new("state-bad");
    let paths = write_blocks(&blocks, &best(&chain), 7);
    let state = TempDir::new("state-bad-dir");
    let dir = state.join("state");
    let (expected, _, _) = step(&dir, &paths, None, 288);
    // One run at a time.
    let open = ChainState::open(&dir, Network::Regtest, &options(288)).unwrap();
    let error = ChainState::open(&dir, Network::Regtest, &options(288)).unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::StateInUse { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("lock"), "{error}");
    drop(open);
    // Another network.
    let error = ChainState::open(&dir, Network::Main, &options(288)).unwrap_err();
    assert!(error.to_string().contains("regtest"), "{error}");
    // A torn journal (a run killed while writing it) is removed; one whole
    // but damaged is refused, naming it.
    let journal = dir.join("journal");
    let mut torn = b"SLJOURNL\x01\0\0\0\x01\x05".to_vec();
    torn.extend_from_slice(&[0xab; 3000]);
    std::fs::write(&journal, &torn).unwrap();
    // So is a partition file of no committed record (a run died making it).
    let empty = (0..=255u8)
        .map(|p| dir.join(format!("part-{p:02x}")))
        .find(|p| !p.exists())
        .unwrap();
    std::fs::write(&empty, b"").unwrap();
    let (bytes, _, _) = step(&dir, &paths, None, 288);
    assert!(bytes == expected && !journal.exists() && !empty.exists());
    std::fs::write(&journal, b"SLJOURNL\x01\0\0\0\x09").unwrap();
    let error = ChainState::open(&dir, Network::Regtest, &options(288)).unwrap_err();
    assert!(error.to_string().contains("journal"), "{error}");
    std::fs::remove_file(&journal).unwrap();
    // A flipped byte in the tip record.
    let tip = dir.join("tip");
    let mut bytes = std::fs::read(&tip).unwrap();
    bytes[20] ^= 1;
    std::fs::write(&tip, &bytes).unwrap();
    let error = ChainState::open(&dir, Network::Regtest, &options(288)).unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("tip") && message.contains("checksum"),
        "{message}"
    );
    // A directory that is not a state.
    let other = state.join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("notes.txt"), "mine").unwrap();
    let error = ChainState::open(&other, Network::Regtest, &options(288)).unwrap_err();
    assert!(error.to_string().contains("not a state"), "{error}");
}

#[test]
fn a_block_that_does_not_connect_leaves_the_state_at_its_parent() {
    use seekless_blocks::OutPoint;
    use seekless_blocks::generate::spends::GenTx;
    let mut chain = spending_chain(71, 40);
    let ghost = OutPoint {
        txid: [7; 32],
        vout: 1,
    };
    let tx = GenTx::spend(&[ghost], &[(5, vec![0x51])], false);
    chain.extend_with(&[1, 2, 3], &[(50, vec![0x51])], vec![tx.clone()]);
    chain.extend(8);
    let blocks = TempDir::new("state-bad-block");
    let paths = write_blocks(&blocks, &best(&chain), 9);
    let state = TempDir::new("state-bad-block-dir");
    let dir = state.join("state");
    for _ in 0..2 {
        let (chain, output) = scanned(&paths);
        let mut open = ChainState::open(&dir, Network::Regtest, &options(288)).unwrap();
        let report = open
            .update(&chain, &output.files, None, &mut |_| {})
            .unwrap();
        let failure = report.connect.failure.expect("block 41 does not connect");
        match failure.kind() {
            ErrorKind::NotConnected { height, txid, .. } => {
                assert_eq!((*height, *txid), (41, Some(tx.txid)));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!((open.height(), report.connect.height), (40, 40));
        let bytes = snapshot(open.coins(), open.hash());
        assert!(bytes == fresh(&paths, None).0);
    }
    // A partition cut short is refused, naming it.
    let part = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("part-")
        })
        .unwrap();
    std::fs::File::options()
        .write(true)
        .open(&part)
        .unwrap()
        .set_len(100)
        .unwrap();
    let error = ChainState::open(&dir, Network::Regtest, &options(288)).unwrap_err();
    assert!(
        error.to_string().contains(part.to_str().unwrap()),
        "{error}"
    );
}
