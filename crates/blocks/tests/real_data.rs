//! Real blocks: a busy mainnet block and a 104-block regtest chain from
//! Bitcoin Core's test data, and two mainnet blocks with segwit
//! transactions and witness commitments (data/README.md says where from).

use seekless_blocks::generate::{self, Rng};
use seekless_blocks::{
    BlockHash, Chain, ErrorKind, Event, HEADER_LEN, Network, ScanOptions, Transaction, XorKey,
    check_block, header_hash, list_block_files, scan, scan_bytes,
};
use seekless_testkit::TempDir;

const BLOCK_413567: &[u8] = include_bytes!("data/block413567.raw");
const STATS_JSON: &str = include_str!("data/rpc_getblockstats.json");
/// Mainnet segwit blocks: (bytes, hash, transactions, segwit transactions).
const SEGWIT_BLOCKS: [(&[u8], &str, u64, u64); 2] = [
    (
        include_bytes!("data/482683.raw"),
        "000000000000000000c238240ef6dcb26c37e75e16514e6ffc0aef7eee73e747",
        12,
        2,
    ),
    (
        include_bytes!("data/542213.raw"),
        "000000000000000000143a2c56c0214236dadfd30df41d4a0345492ad6d861ec",
        4,
        2,
    ),
];

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// The hex strings of the `"blocks"` array.
fn regtest_blocks() -> Vec<Vec<u8>> {
    let start = STATS_JSON.find("\"blocks\"").unwrap();
    let open = start + STATS_JSON[start..].find('[').unwrap();
    let close = open + STATS_JSON[open..].find(']').unwrap();
    STATS_JSON[open + 1..close]
        .split('"')
        .skip(1)
        .step_by(2)
        .map(hex)
        .collect()
}

#[test]
fn block_413567_verifies() {
    let header: &[u8; HEADER_LEN] = BLOCK_413567[..HEADER_LEN].try_into().unwrap();
    assert_eq!(
        header_hash(header),
        BlockHash::from_hex("0000000000000000025aff8be8a55df8f89c77296db6198f272d6577325d4069")
            .unwrap()
    );
    let summary = check_block(BLOCK_413567, Network::Main.pow_limit()).unwrap();
    assert_eq!(summary.tx_count, 1557);
    assert_eq!(summary.segwit_txs, 0, "block 413567 predates segwit");
    assert_eq!(summary.weight, 999_887 * 4);
}

#[test]
fn mainnet_segwit_blocks_verify_and_witness_damage_is_caught() {
    let pow_limit = Network::Main.pow_limit();
    for (bytes, hash, txs, segwit) in SEGWIT_BLOCKS {
        let header: &[u8; HEADER_LEN] = bytes[..HEADER_LEN].try_into().unwrap();
        assert_eq!(header_hash(header), BlockHash::from_hex(hash).unwrap());
        let summary = check_block(bytes, pow_limit).unwrap();
        // The coinbase (with its reserved value) counts as segwit.
        assert_eq!(
            (summary.tx_count, summary.segwit_txs),
            (txs, segwit),
            "{hash}"
        );
        // Every byte of every witness after the coinbase's is committed to:
        // changed, the txids and the merkle root stay, the commitment fails.
        let mut at = HEADER_LEN + 1;
        let mut witness_bytes = 0;
        for i in 0..txs {
            let (tx, len) = Transaction::parse(&bytes[at..], at).unwrap();
            if i > 0 && tx.is_segwit() {
                let witness: usize = tx.witnesses().flatten().map(|item| item.len()).sum();
                assert!(witness > 0);
                // The items' bytes lie before the lock time; change the last
                // ones, one at a time.
                for back in 0..witness.min(64) {
                    let mut block = bytes.to_vec();
                    block[at + len - 5 - back] ^= 0x20;
                    let err = check_block(&block, pow_limit).unwrap_err();
                    // A changed length byte may break parsing instead.
                    assert!(
                        matches!(
                            err.kind(),
                            ErrorKind::BadWitnessCommitment
                                | ErrorKind::UnexpectedEof { .. }
                                | ErrorKind::TrailingBytes { .. }
                                | ErrorKind::SizeTooLarge { .. }
                        ),
                        "{hash} byte {}: {err}",
                        at + len - 5 - back
                    );
                    witness_bytes += matches!(err.kind(), ErrorKind::BadWitnessCommitment) as u32;
                }
            }
            at += len;
        }
        assert_eq!(at, bytes.len());
        assert!(witness_bytes > 32, "{hash}: {witness_bytes}");
        // Every truncation is an error, never a panic.
        for len in 0..bytes.len() {
            assert!(check_block(&bytes[..len], pow_limit).is_err());
        }
    }
}

#[test]
fn block_413567_transactions_reserialize() {
    // Walk the transactions by hand: each re-serializes to its own bytes.
    let mut at = HEADER_LEN + 3; // 1557 is a 3-byte compact size
    let mut count = 0;
    while at < BLOCK_413567.len() {
        let (tx, len) = Transaction::parse(&BLOCK_413567[at..], at).unwrap();
        assert_eq!(tx.serialize(), &BLOCK_413567[at..at + len]);
        at += len;
        count += 1;
    }
    assert_eq!(count, 1557);
}

#[test]
fn block_413567_damage_is_caught() {
    let pow_limit = Network::Main.pow_limit();
    // A flipped byte in a transaction changes the merkle root (or breaks parsing).
    for at in [200usize, 5_000, 500_000, 999_000] {
        let mut block = BLOCK_413567.to_vec();
        block[at] ^= 0x40;
        assert!(check_block(&block, pow_limit).is_err(), "flip at {at}");
    }
    // A flipped header byte breaks proof of work.
    let mut block = BLOCK_413567.to_vec();
    block[10] ^= 1;
    assert!(matches!(
        check_block(&block, pow_limit).unwrap_err().kind(),
        ErrorKind::BadProofOfWork
    ));
    // Every truncation is an error, never a panic.
    for len in (0..BLOCK_413567.len()).step_by(9_973) {
        assert!(check_block(&BLOCK_413567[..len], pow_limit).is_err());
    }
    // Trailing bytes are rejected.
    let mut block = BLOCK_413567.to_vec();
    block.push(0);
    assert!(matches!(
        check_block(&block, pow_limit).unwrap_err().kind(),
        ErrorKind::TrailingBytes { offset: 999_887 }
    ));
}

#[test]
fn block_413567_scans_as_mainnet() {
    let mut file = Vec::new();
    for _ in 0..3 {
        file.extend_from_slice(&generate::record(Network::Main, BLOCK_413567));
    }
    let mut found = Vec::new();
    scan_bytes(Network::Main, &file, |event| match event {
        Event::Block(block) => found.push((block.offset, block.size, block.hash)),
        Event::Bad(bad) => panic!("unexpected {bad:?}"),
    });
    assert_eq!(found.len(), 3);
    assert_eq!(found[2].0, 2 * (999_887 + 8));
    // As regtest, nothing is found and everything is garbage.
    let mut bad = 0;
    scan_bytes(Network::Regtest, &file, |event| {
        assert!(matches!(event, Event::Bad(_)));
        bad += 1;
    });
    assert_eq!(bad, 1);
}

#[test]
fn regtest_genesis_matches_core() {
    let blocks = regtest_blocks();
    assert_eq!(blocks.len(), 104);
    assert_eq!(blocks[0], generate::regtest_genesis());
    let hash = header_hash(blocks[0][..HEADER_LEN].try_into().unwrap());
    assert_eq!(hash, Network::Regtest.genesis());
}

#[test]
fn core_regtest_chain_links_out_of_order() {
    let blocks = regtest_blocks();
    for block in &blocks {
        check_block(block, Network::Regtest.pow_limit()).unwrap();
    }
    let order = generate::headers_first_order((0..blocks.len()).collect(), 16, &mut Rng::new(7));
    let key = XorKey([0x5a, 1, 2, 3, 4, 5, 6, 0xa5]);
    let (files, _) = generate::layout_files(
        Network::Regtest,
        order.iter().map(|&i| blocks[i].as_slice()),
        4_000,
        key,
    );
    let dir = TempDir::new("blocks-core-regtest");
    for (n, bytes) in files.iter().enumerate() {
        std::fs::write(dir.join(format!("blk{n:05}.dat")), bytes).unwrap();
    }
    std::fs::write(dir.join("xor.dat"), key.0).unwrap();
    let listed = list_block_files(&[dir.to_path_buf()], None).unwrap();
    assert_eq!(listed.len(), files.len());
    let options = ScanOptions {
        verify: true,
        ..ScanOptions::default()
    };
    let mut output = scan(listed, &options, &mut |_| {}).unwrap();
    assert_eq!(output.network, Network::Regtest);
    assert!(output.bad_records.is_empty(), "{:?}", output.bad_records);
    assert!(output.invalid.is_empty());
    let chain = Chain::build(&mut output);
    let tip = chain.tip().unwrap();
    assert_eq!(tip.height, Some(103));
    assert_eq!(
        tip.hash,
        header_hash(blocks[103][..HEADER_LEN].try_into().unwrap())
    );
    let heights: Vec<_> = chain.best_chain().map(|b| b.height.unwrap()).collect();
    assert_eq!(heights, (0..104).collect::<Vec<_>>());
    assert_eq!(
        (chain.stale(), chain.orphans(), chain.duplicates()),
        (0, 0, 0)
    );
}

#[test]
fn verify_in_parallel_reports_the_damaged_copy() {
    let mut file = Vec::new();
    let mut offsets = Vec::new();
    for copy in 0..5 {
        let mut block = BLOCK_413567.to_vec();
        if copy == 3 {
            block[700_000] ^= 0x01;
        }
        offsets.push(file.len() as u64);
        file.extend_from_slice(&generate::record(Network::Main, &block));
    }
    let dir = TempDir::new("blocks-parallel-verify");
    let path = dir.join("blk00000.dat");
    std::fs::write(&path, &file).unwrap();
    let files = list_block_files(std::slice::from_ref(&path), None).unwrap();
    let options = ScanOptions {
        verify: true,
        chunk_size: 3 << 20,
        ..ScanOptions::default()
    };
    let output = scan(files, &options, &mut |_| {}).unwrap();
    assert_eq!(output.records, 5);
    assert_eq!(output.invalid.len(), 1);
    assert_eq!(output.invalid[0].offset, offsets[3]);
    assert!(matches!(
        output.invalid[0].error.kind(),
        ErrorKind::BadMerkleRoot | ErrorKind::UnexpectedEof { .. }
    ));
}
