//! The transaction index built from generated chains (XOR'd, out of
//! order, with a stale fork): every best-chain transaction found with its
//! bytes, height, position and block; stale and unknown txids not found;
//! the same index whatever the memory; damaged indexes and changed block
//! files refused with an error, never a panic or a wrong answer.

use std::path::{Path, PathBuf};

use seekless_blocks::generate::Rng;
use seekless_blocks::generate::spends::{SUBSIDY, SpendingChain};
use seekless_blocks::{
    BlockFile, Chain, ErrorKind, ScanOptions, Transaction, TxIndex, TxIndexOptions, TxIndexReport,
    XorKey, build_txindex, list_block_files, scan, tx_json,
};
use seekless_testkit::TempDir;
use sha2::{Digest, Sha256};

const KEY: XorKey = XorKey([0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]);

/// A valid chain of `len` blocks, and a 3-block stale fork off height 10.
fn chain_with_fork(seed: u64, len: usize) -> (SpendingChain, usize) {
    let mut chain = SpendingChain::new(seed);
    for _ in 0..len {
        chain.extend(6);
    }
    let at_ten = path_to(&chain, chain.tip())[10];
    let stale = chain.builder.extend_chain(at_ten, 3);
    (chain, stale)
}

fn path_to(chain: &SpendingChain, tip: usize) -> Vec<usize> {
    let mut path = vec![tip];
    while let Some(parent) = chain.builder.blocks[*path.last().unwrap()].parent {
        path.push(parent);
    }
    path.reverse();
    path
}

fn build(blocks: &Path, out: &Path, memory: u64) -> (TxIndexReport, Vec<BlockFile>) {
    build_on(blocks, out, memory, 4)
}

fn build_on(
    blocks: &Path,
    out: &Path,
    memory: u64,
    threads: usize,
) -> (TxIndexReport, Vec<BlockFile>) {
    let files = list_block_files(&[blocks.to_path_buf()], None).unwrap();
    let mut output = scan(files, &ScanOptions::default(), &mut |_| {}).unwrap();
    let chain = Chain::build(&mut output);
    let mut read = 0;
    let report = build_txindex(
        &chain,
        &output.files,
        out,
        &TxIndexOptions { memory, threads },
        &mut |n| read += n,
    )
    .unwrap();
    assert_eq!(read, report.block_bytes);
    (report, output.files)
}

/// Every transaction of the blocks of `path`: (txid, bytes, height, position).
fn transactions(chain: &SpendingChain, path: &[usize]) -> Vec<([u8; 32], Vec<u8>, u32, u32)> {
    let mut out = Vec::new();
    for &index in path {
        let block = &chain.builder.blocks[index];
        let mut at = 81; // header, then a one-byte count (fewer than 253 here)
        let count = block.bytes[80] as u32;
        for position in 0..count {
            let (tx, len) = Transaction::parse(&block.bytes[at..], at).unwrap();
            out.push((tx.txid(), tx.raw().to_vec(), block.height, position));
            at += len;
        }
        assert_eq!(at, block.bytes.len());
    }
    out
}

fn setup(name: &str, seed: u64) -> (TempDir, SpendingChain, usize, PathBuf) {
    let dir = TempDir::new(name);
    let blocks = dir.join("blocks");
    std::fs::create_dir(&blocks).unwrap();
    let (mut chain, stale) = chain_with_fork(seed, 130);
    chain.write_dir(&blocks, 8_000, KEY).unwrap();
    let index = dir.join("index");
    build(&blocks, &index, 1 << 30);
    (dir, chain, stale, index)
}

#[test]
fn every_best_chain_transaction_is_found_and_nothing_else() {
    let (dir, chain, stale, path) = setup("txindex-all", 1);
    let index = TxIndex::open(&path).unwrap();
    let best = path_to(&chain, chain.tip());
    let txs = transactions(&chain, &best);
    assert!(txs.len() > 150, "{}", txs.len());
    assert_eq!(index.len(), txs.len() as u64);
    assert_eq!(
        index.tip(),
        Some((chain.builder.blocks[chain.tip()].hash, 130))
    );
    for (txid, raw, height, position) in &txs {
        let found = index.get(txid).unwrap().expect("indexed");
        assert_eq!(&found.raw, raw);
        assert_eq!(
            (found.location.height, found.location.position),
            (*height, *position)
        );
        let block = index.block(*height).unwrap();
        assert_eq!(
            block.hash,
            chain.builder.blocks[best[*height as usize]].hash
        );
        let json: serde_json::Value =
            serde_json::from_str(&tx_json(&found, &block, 130).unwrap()).unwrap();
        assert_eq!(json["blockhash"], block.hash.to_string());
        assert_eq!(json["height"], *height);
        assert_eq!(json["confirmations"], 131 - height);
        assert_eq!(json["size"], raw.len());
    }
    // The stale fork's transactions and made-up txids are not there.
    let fork: Vec<usize> = path_to(&chain, stale).into_iter().skip(11).collect();
    assert_eq!(fork.len(), 3);
    for (txid, ..) in transactions(&chain, &fork) {
        assert_eq!(index.get(&txid).unwrap(), None);
    }
    let mut rng = Rng::new(9);
    for _ in 0..2000 {
        let mut txid = [0u8; 32];
        rng.fill(&mut txid);
        assert_eq!(index.get(&txid).unwrap(), None);
    }
    // A txid sharing an indexed one's first 6 bytes is read, hashed, and
    // not taken for it.
    let mut near = txs[5].0;
    near[31] ^= 1;
    assert_eq!(index.locate(&near).unwrap().len(), 1);
    assert_eq!(index.get(&near).unwrap(), None);
    // The files are found elsewhere when told where.
    let moved = dir.join("moved");
    std::fs::rename(dir.join("blocks"), &moved).unwrap();
    assert!(matches!(
        TxIndex::open(&path)
            .unwrap()
            .get(&txs[0].0)
            .unwrap_err()
            .kind(),
        ErrorKind::Io { .. }
    ));
    let index = TxIndex::open(&path).unwrap().with_blocks_dir(&moved);
    assert_eq!(index.get(&txs[3].0).unwrap().unwrap().raw, txs[3].1);
}

#[test]
fn a_tiny_memory_and_one_thread_give_the_same_index() {
    let dir = TempDir::new("txindex-spill");
    let blocks = dir.join("blocks");
    std::fs::create_dir(&blocks).unwrap();
    let (mut chain, _) = chain_with_fork(2, 130);
    chain.write_dir(&blocks, 8_000, KEY).unwrap();
    let (memory, _) = build(&blocks, &dir.join("a"), 1 << 30);
    let (spilled, _) = build_on(&blocks, &dir.join("b"), 1000, 1);
    assert_eq!(memory.runs, 0);
    assert!(spilled.runs > 5, "{}", spilled.runs);
    assert_eq!(
        (memory.transactions, memory.index_bytes),
        (spilled.transactions, spilled.index_bytes)
    );
    assert_eq!(
        std::fs::read(dir.join("a")).unwrap(),
        std::fs::read(dir.join("b")).unwrap()
    );
    // One record a run: more runs than are merged at once, merged into
    // one on the way.
    let (tiny, _) = build_on(&blocks, &dir.join("c"), 1, 2);
    assert!(tiny.runs > 3 * 64, "{}", tiny.runs);
    assert_eq!(
        std::fs::read(dir.join("a")).unwrap(),
        std::fs::read(dir.join("c")).unwrap()
    );
    // Nothing is left beside the output but the index.
    let mut names: Vec<String> = std::fs::read_dir(&*dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["a", "b", "blocks", "c"]);
}

#[test]
fn a_repeated_txid_is_indexed_at_the_later_block() {
    let dir = TempDir::new("txindex-bip30");
    let mut chain = SpendingChain::new(3);
    for _ in 0..20 {
        chain.extend(2);
    }
    let outputs = vec![(SUBSIDY as i64, vec![0x51])];
    chain.extend_with(&[0x51, 0x52], &outputs, Vec::new());
    let first = chain.tip();
    for _ in 0..5 {
        chain.extend(2);
    }
    chain.extend_with(&[0x51, 0x52], &outputs, Vec::new());
    let txid = chain.txs[first][0].txid;
    assert_eq!(txid, chain.txs[chain.tip()][0].txid);
    chain.extend(2);
    chain.write_dir(&dir, 8_000, KEY).unwrap();
    let (report, _) = build(&dir, &dir.join("index"), 1 << 30);
    assert_eq!(report.repeated, 1);
    let index = TxIndex::open(&dir.join("index")).unwrap();
    let found = index.get(&txid).unwrap().unwrap();
    assert_eq!((found.location.height, found.location.position), (27, 0));
}

fn one_line(error: &seekless_blocks::Error) -> String {
    let text = error.to_string();
    assert!(!text.contains('\n'), "{text}");
    text
}

#[test]
fn a_damaged_index_is_refused_never_misread() {
    let (_dir, chain, _, path) = setup("txindex-damaged", 4);
    let good = std::fs::read(&path).unwrap();
    let txs = transactions(&chain, &path_to(&chain, chain.tip()));
    // Cut anywhere: refused at open.
    for cut in (0..good.len()).step_by(997).chain([good.len() - 1, 63, 64]) {
        let error = TxIndex::from_bytes("cut", good[..cut].to_vec()).unwrap_err();
        assert!(
            one_line(&error).contains("not a valid transaction index"),
            "{error}"
        );
    }
    // A flipped bit: refused at open, or at the lookup that reads it, or
    // the answer is still right; never a panic, never a wrong answer.
    let mut rng = Rng::new(5);
    let mut refused = 0;
    for round in 0..400 {
        let mut bytes = good.clone();
        let at = if round < 150 {
            round % 150 // the header and metadata, byte by byte
        } else {
            rng.below(bytes.len() as u64) as usize
        };
        bytes[at] ^= 1 << rng.below(8);
        let Ok(index) = TxIndex::from_bytes("flipped", bytes) else {
            refused += 1;
            continue;
        };
        for (txid, raw, height, _) in txs.iter().step_by(7) {
            match index.get(txid) {
                Ok(Some(found)) => {
                    assert_eq!(&found.raw, raw);
                    if let Ok(block) = index.block(*height) {
                        assert_eq!(block.height, *height);
                    }
                }
                Ok(None) => panic!("a flip at {at} lost a transaction without an error"),
                Err(e) => {
                    one_line(&e);
                    refused += 1;
                }
            }
        }
    }
    assert!(refused >= 150, "{refused}");
    // A newer version, checksum and all, is named as such.
    let mut newer = good.clone();
    newer[8] = 2;
    let meta_len = u32::from_le_bytes(newer[44..48].try_into().unwrap()) as usize;
    let sum = Sha256::new()
        .chain_update(&newer[..56])
        .chain_update(&newer[64..64 + meta_len])
        .finalize();
    newer[56..64].copy_from_slice(&sum[..8]);
    let error = TxIndex::from_bytes("newer", newer).unwrap_err();
    assert!(matches!(
        error.kind(),
        ErrorKind::TxIndexTooNew { version: 2, .. }
    ));
    assert!(one_line(&error).contains("newer seekless"));
}

#[test]
fn changed_block_files_are_refused() {
    let (dir, chain, _, path) = setup("txindex-changed", 6);
    let txs = transactions(&chain, &path_to(&chain, chain.tip()));
    let index = TxIndex::open(&path).unwrap();
    // A transaction rewritten in place (same length): named.
    let (txid, ..) = &txs[40];
    let location = index.get(txid).unwrap().unwrap().location;
    let file = index.files()[location.file].path.clone();
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[location.offset as usize + 5] ^= 0x40;
    std::fs::write(&file, &bytes).unwrap();
    let error = index.get(txid).unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::TxChanged { .. }),
        "{error}"
    );
    assert!(one_line(&error).contains("rebuild"));
    // A file cut shorter than indexed: named, for any transaction in it.
    bytes.truncate(bytes.len() - 1);
    std::fs::write(&file, &bytes).unwrap();
    let error = index.get(txid).unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::BlockFileShorter { .. }),
        "{error}"
    );
    // A file that grew (Core appends) is fine.
    let (other, raw, ..) = &txs[0];
    let other_file = index.files()[index.get(other).unwrap().unwrap().location.file]
        .path
        .clone();
    if other_file != file {
        let mut longer = std::fs::read(&other_file).unwrap();
        longer.extend_from_slice(&[0; 100]);
        std::fs::write(&other_file, &longer).unwrap();
        assert_eq!(&index.get(other).unwrap().unwrap().raw, raw);
    }
    drop(dir);
}

#[test]
fn an_unparsable_best_chain_block_is_named_and_nothing_is_left() {
    let dir = TempDir::new("txindex-unparsable");
    let blocks = dir.join("blocks");
    std::fs::create_dir(&blocks).unwrap();
    let mut chain = SpendingChain::new(8);
    for _ in 0..30 {
        chain.extend(2);
    }
    // A block whose header is valid and whose body is not: the scan (no
    // --verify) keeps it on the best chain, the index cannot.
    let bad = chain.extend(2);
    chain.builder.blocks[bad].bytes[80] += 1; // one transaction more than there are
    for _ in 0..40 {
        chain.extend(2);
    }
    chain.write_dir(&blocks, 8_000, KEY).unwrap();
    let files = list_block_files(std::slice::from_ref(&blocks), None).unwrap();
    let mut output = scan(files, &ScanOptions::default(), &mut |_| {}).unwrap();
    let best = Chain::build(&mut output);
    for threads in [1, 4] {
        let options = TxIndexOptions {
            memory: 1000,
            threads,
        };
        let out = dir.join("index");
        let error = build_txindex(&best, &output.files, &out, &options, &mut |_| {}).unwrap_err();
        assert!(
            matches!(error.kind(), ErrorKind::UnparsableBlock { height: 31, .. }),
            "{error}"
        );
        one_line(&error);
        let names: Vec<_> = std::fs::read_dir(&*dir).unwrap().collect();
        assert_eq!(names.len(), 1, "only the blocks directory is left");
    }
}
