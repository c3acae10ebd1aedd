//! The mainnet-shaped generator: its chain connects, every block, and the
//! UTXO set it says it leaves is the one the engine builds.

use seekless_blocks::generate::mainnet::{MainnetShape, write_mainnet_chain};
use seekless_blocks::{
    Chain, CoinStore, MemoryCoins, ScanOptions, connect, list_block_files, scan,
};
use seekless_testkit::TempDir;

fn generate(
    dir: &std::path::Path,
    shape: &MainnetShape,
) -> seekless_blocks::generate::mainnet::MainnetChain {
    write_mainnet_chain(shape, dir, &mut |_| {}).unwrap()
}

#[test]
fn the_chain_connects_to_the_set_the_generator_counted() {
    let dir = TempDir::new("mainnet-gen");
    // A small chain through every era, in files small enough to be several,
    // windows small enough to be many, and stale blocks.
    let shape = MainnetShape {
        blocks: 400,
        tx_scale: 0.2,
        keep: 0.2,
        reservoir: 2_000,
        file_size: 256 << 10,
        window_bytes: 64 << 10,
        stale_every: 50,
        ..MainnetShape::default()
    };
    let summary = generate(dir.path(), &shape);
    assert!(summary.files > 2, "{summary:?}");
    assert_eq!(summary.stale, 7);
    let files = list_block_files(&[dir.path().to_path_buf()], None).unwrap();
    let mut output = scan(files, &ScanOptions::default(), &mut |_| {}).unwrap();
    assert_eq!(output.bytes, summary.bytes);
    let chain = Chain::build(&mut output);
    assert_eq!(chain.tip().and_then(|t| t.height), Some(400));
    assert_eq!(chain.tip().unwrap().hash, summary.tip);
    let mut coins = MemoryCoins::new();
    let report = connect(&chain, &output.files, None, &mut coins, &mut |_| {}).unwrap();
    assert!(report.failure.is_none(), "{:?}", report.failure);
    assert_eq!(report.height, 400);
    assert_eq!(report.transactions, summary.transactions);
    assert_eq!(coins.len(), summary.utxos);
    let amount: u128 = coins.iter().map(|(_, c)| c.value as u128).sum();
    assert_eq!(amount, summary.amount);
    // Same seed, same bytes.
    let again = TempDir::new("mainnet-gen-again");
    assert_eq!(generate(again.path(), &shape), summary);
    for name in ["blk00000.dat", "blk00002.dat", "xor.dat"] {
        assert_eq!(
            std::fs::read(dir.path().join(name)).unwrap(),
            std::fs::read(again.path().join(name)).unwrap()
        );
    }
}
