//! Generated regtest chains, laid out the way Core stores them and then
//! damaged in every way the scanner must survive: the exact set of blocks
//! that must still be found is known for each case.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use seekless_blocks::generate::{self, ChainBuilder, Rng, SizeMix};
use seekless_blocks::{
    BadKind, BadRecord, BlockHash, Chain, ErrorKind, Event, HEADER_LEN, Network, RecordScanner,
    ScanOptions, ScanOutput, XorKey, check_pow, header_hash, list_block_files, scan, scan_bytes,
};
use seekless_testkit::TempDir;

const REGTEST: Network = Network::Regtest;

/// Everything the scanner reported for one file.
#[derive(Debug, Default, PartialEq)]
struct Found {
    blocks: Vec<(u64, BlockHash)>,
    bad: Vec<BadRecord>,
}

fn scan_whole(network: Network, bytes: &[u8]) -> Found {
    let mut found = Found::default();
    scan_bytes(network, bytes, |event| match event {
        Event::Block(block) => found.blocks.push((block.offset, block.hash)),
        Event::Bad(bad) => found.bad.push(bad),
    });
    found
}

fn scan_headers_only(network: Network, bytes: &[u8]) -> Found {
    let mut found = Found::default();
    RecordScanner::new(network).feed(bytes, 0, true, &mut |event| match event {
        Event::Block(block) => found.blocks.push((block.offset, block.hash)),
        Event::Bad(bad) => found.bad.push(bad),
    });
    found
}

/// Writes `plain` XORed with `key` to a file and scans it with [`scan`].
fn scan_file(plain: &[u8], key: XorKey, map_files: bool) -> Found {
    let dir = TempDir::new("blocks-gen-scan-file");
    let path = dir.join("blk00000.dat");
    let mut bytes = plain.to_vec();
    key.apply(&mut bytes, 0);
    std::fs::write(&path, &bytes).unwrap();
    let files = list_block_files(std::slice::from_ref(&path), Some(key)).unwrap();
    let options = ScanOptions {
        network: Some(REGTEST),
        map_files,
        chunk_size: 4096,
        ..ScanOptions::default()
    };
    let mut output = scan(files, &options, &mut |_| {}).unwrap();
    assert_eq!(output.bytes, plain.len() as u64);
    let bad = output.bad_records.iter().map(|b| b.record).collect();
    let chain = Chain::build(&mut output);
    let mut blocks: Vec<(u64, BlockHash)> = chain.blocks().map(|b| (b.offset, b.hash)).collect();
    blocks.sort();
    Found { blocks, bad }
}

/// Feeds the scanner in random pieces, keeping what it asks for, as the
/// reader loop does: the result must not depend on where reads end.
fn scan_pieces(network: Network, bytes: &[u8], rng: &mut Rng, thorough: bool) -> Found {
    let mut found = Found::default();
    let mut scanner = RecordScanner::new(network);
    if thorough {
        scanner = scanner.thorough();
    }
    let mut keep = 0usize;
    let mut end = 0usize;
    loop {
        end = (end + rng.range(1, 700) as usize).min(bytes.len());
        let eof = end == bytes.len();
        let next = scanner.feed(
            &bytes[keep..end],
            keep as u64,
            eof,
            &mut |event| match event {
                Event::Block(block) => found.blocks.push((block.offset, block.hash)),
                Event::Bad(bad) => found.bad.push(bad),
            },
        );
        keep = next as usize;
        if eof {
            return found;
        }
    }
}

/// A chain of `len` small blocks on top of genesis, as one plain file in
/// height order. Returns the builder, the file and each record's (offset, len).
fn simple_file(seed: u64, len: usize) -> (ChainBuilder, Vec<u8>, Vec<(usize, usize)>) {
    let mut builder = ChainBuilder::new(seed, SizeMix::Small);
    builder.extend_chain(0, len);
    let mut file = Vec::new();
    let mut records = Vec::new();
    for block in &builder.blocks {
        let record = generate::record(REGTEST, &block.bytes);
        records.push((file.len(), record.len()));
        file.extend_from_slice(&record);
    }
    (builder, file, records)
}

fn hashes_except(builder: &ChainBuilder, lost: &BTreeSet<usize>) -> BTreeSet<BlockHash> {
    builder
        .blocks
        .iter()
        .enumerate()
        .filter(|(i, _)| !lost.contains(i))
        .map(|(_, b)| b.hash)
        .collect()
}

fn found_hashes(found: &Found) -> BTreeSet<BlockHash> {
    found.blocks.iter().map(|(_, h)| *h).collect()
}

fn random_garbage(rng: &mut Rng, len: usize) -> Vec<u8> {
    // Non-zero bytes without the regtest magic's first byte: cannot start a record.
    (0..len).map(|_| rng.range(1, 0xf9) as u8).collect()
}

#[derive(Clone, Copy, Debug)]
enum Damage {
    GarbageBetween,
    WrongMagic,
    BadSize,
    BadProofOfWork,
    Truncated,
}

/// Applies one damage to record `k`; returns the file, the offset where the
/// bad stretch starts and its length.
fn damage(
    file: &[u8],
    records: &[(usize, usize)],
    k: usize,
    kind: Damage,
    rng: &mut Rng,
) -> (Vec<u8>, u64, u64) {
    let (at, len) = records[k];
    let mut out = file.to_vec();
    match kind {
        Damage::GarbageBetween => {
            let garbage_len = rng.range(1, 300) as usize;
            let garbage = random_garbage(rng, garbage_len);
            out.splice(at..at, garbage.iter().copied());
            (out, at as u64, garbage.len() as u64)
        }
        Damage::WrongMagic => {
            let byte = rng.below(4) as usize;
            out[at + byte] = out[at + byte].wrapping_add(rng.range(1, 255) as u8).max(1);
            if out[at..at + 4] == REGTEST.magic() {
                out[at + byte] ^= 0x10;
            }
            (out, at as u64, len as u64)
        }
        Damage::BadSize => {
            let size: u32 = if rng.below(2) == 0 {
                rng.below(80) as u32
            } else {
                rng.range(4_000_001, u32::MAX as u64) as u32
            };
            out[at + 4..at + 8].copy_from_slice(&size.to_le_bytes());
            (out, at as u64, len as u64)
        }
        Damage::BadProofOfWork => {
            // Change the nonce until the header no longer meets its target.
            loop {
                let nonce = at + 8 + 76;
                out[nonce] = out[nonce].wrapping_add(1);
                let header: &[u8; HEADER_LEN] = out[at + 8..at + 88].try_into().unwrap();
                if !check_pow(&header_hash(header), 0x207f_ffff, REGTEST.pow_limit()) {
                    break;
                }
            }
            (out, at as u64, len as u64)
        }
        Damage::Truncated => {
            let keep = rng.range(1, len as u64 - 1) as usize;
            out.drain(at + keep..at + len);
            (out, at as u64, keep as u64)
        }
    }
}

#[test]
fn every_damage_at_many_positions_loses_only_the_damaged_record() {
    let (builder, file, records) = simple_file(1, 40);
    let mut rng = Rng::new(99);
    let kinds = [
        Damage::GarbageBetween,
        Damage::WrongMagic,
        Damage::BadSize,
        Damage::BadProofOfWork,
        Damage::Truncated,
    ];
    let cases = 400;
    for case in 0..cases {
        for kind in kinds {
            // Never the last record for truncation: that is the torn-tail case below.
            let k = rng.below(records.len() as u64 - 1) as usize;
            let (bytes, offset, skipped) = damage(&file, &records, k, kind, &mut rng);
            let found = scan_whole(REGTEST, &bytes);
            let lost: BTreeSet<usize> = match kind {
                Damage::GarbageBetween => BTreeSet::new(),
                _ => [k].into(),
            };
            let context = format!("case {case} {kind:?} record {k}: {:?}", found.bad);
            assert_eq!(
                found_hashes(&found),
                hashes_except(&builder, &lost),
                "{context}"
            );
            assert_eq!(found.bad.len(), 1, "{context}");
            let bad = found.bad[0];
            assert_eq!((bad.offset, bad.skipped), (offset, skipped), "{context}");
            match kind {
                Damage::GarbageBetween | Damage::WrongMagic => {
                    assert_eq!(bad.kind, BadKind::Garbage, "{context}")
                }
                Damage::BadSize => {
                    assert!(matches!(bad.kind, BadKind::BadSize { .. }), "{context}")
                }
                Damage::BadProofOfWork => {
                    assert_eq!(bad.kind, BadKind::BadProofOfWork, "{context}")
                }
                Damage::Truncated => {} // garbage, bad size, bad pow or truncated, by where the cut is
            }
            // Reading in pieces changes nothing.
            assert_eq!(
                scan_pieces(REGTEST, &bytes, &mut rng, true),
                found,
                "{context}"
            );
            // Neither does reading only headers, unless a torn record's
            // claimed end falls exactly on a later record's start.
            let lazy = scan_headers_only(REGTEST, &bytes);
            let torn_end_on_record = matches!(kind, Damage::Truncated) && {
                let removed = records[k].1 - skipped as usize;
                let claimed_end = offset as usize + records[k].1;
                claimed_end == file.len() - removed
                    || records[k + 1..]
                        .iter()
                        .any(|&(at, _)| at - removed == claimed_end)
            };
            if !torn_end_on_record {
                assert_eq!(lazy, found, "{context} (lazy)");
            }
            assert_eq!(
                scan_pieces(REGTEST, &bytes, &mut rng, false),
                lazy,
                "{context} (lazy, pieces)"
            );
            // The file-level scan (header hopping over a mapping, plain and
            // obfuscated, and the read path) reports the same.
            if case % 4 == 0 {
                for key in [
                    XorKey::default(),
                    XorKey([0x11, 0xfa, 0xbf, 0, 0xb5, 0xda, 0x42, 0x99]),
                ] {
                    for map_files in [true, false] {
                        // Bytes that are zero on disk are padding, so with a
                        // key the plain bytes equal to the key are.
                        let mut expected = Found::default();
                        RecordScanner::new(REGTEST).padding(key).feed(
                            &bytes,
                            0,
                            true,
                            &mut |event| match event {
                                Event::Block(block) => {
                                    expected.blocks.push((block.offset, block.hash))
                                }
                                Event::Bad(bad) => expected.bad.push(bad),
                            },
                        );
                        if key.is_zero() {
                            assert_eq!(expected, lazy);
                        }
                        let got = scan_file(&bytes, key, map_files);
                        assert_eq!(
                            got, expected,
                            "{context} (file, key {key:?}, mapped {map_files})"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn several_damages_at_once_lose_exactly_the_damaged_records() {
    let (builder, file, records) = simple_file(2, 60);
    let mut rng = Rng::new(5);
    let kinds = [
        Damage::WrongMagic,
        Damage::BadSize,
        Damage::BadProofOfWork,
        Damage::Truncated,
    ];
    for case in 0..300 {
        let mut targets = BTreeSet::new();
        // Damaged records are never adjacent: a record truncated right before
        // another damaged one can end inside it, and then its header (which is
        // intact) is all a header-only scan can judge; `--verify` catches it.
        for _ in 0..rng.range(2, 6) {
            let k = rng.below(records.len() as u64 - 1) as usize;
            if !targets.contains(&(k + 1)) && (k == 0 || !targets.contains(&(k - 1))) {
                targets.insert(k);
            }
        }
        // Apply from the back so earlier offsets stay put.
        let mut bytes = file.clone();
        let mut applied = Vec::new();
        for &k in targets.iter().rev() {
            let kind = kinds[rng.below(kinds.len() as u64) as usize];
            let (damaged, offset, skipped) = damage(&bytes, &records, k, kind, &mut rng);
            bytes = damaged;
            applied.push((k, kind, offset, skipped));
        }
        let found = scan_whole(REGTEST, &bytes);
        let expected = hashes_except(&builder, &targets);
        let got = found_hashes(&found);
        let missing: Vec<usize> = (0..builder.blocks.len())
            .filter(|&i| {
                expected.contains(&builder.blocks[i].hash) && !got.contains(&builder.blocks[i].hash)
            })
            .collect();
        assert_eq!(
            got, expected,
            "case {case}: missing {missing:?} after {applied:?}; bad {:?}",
            found.bad
        );
        assert!(
            !found.bad.is_empty() && found.bad.len() <= targets.len(),
            "case {case}"
        );
        assert_eq!(
            scan_pieces(REGTEST, &bytes, &mut rng, true),
            found,
            "case {case}"
        );
    }
}

#[test]
fn torn_tail_and_zero_padding() {
    let (builder, file, records) = simple_file(3, 12);
    let last = records.len() - 1;
    let (at, len) = records[last];
    for keep in [1, 3, 4, 7, 8, 50, 87, 88, 89, len - 1] {
        let bytes = &file[..at + keep];
        let found = scan_whole(REGTEST, bytes);
        assert_eq!(
            found_hashes(&found),
            hashes_except(&builder, &[last].into()),
            "keep {keep}"
        );
        assert_eq!(found.bad.len(), 1);
        assert_eq!(
            (found.bad[0].offset, found.bad[0].skipped),
            (at as u64, keep as u64)
        );
        if keep < 4 {
            // Not even the magic is whole.
            assert_eq!(found.bad[0].kind, BadKind::Garbage);
        } else {
            assert!(
                matches!(found.bad[0].kind, BadKind::Truncated { .. }),
                "keep {keep}: {:?}",
                found.bad
            );
        }
    }
    // Core preallocates files with zeros: padding is not an error.
    let mut padded = file.clone();
    padded.resize(file.len() + 100_000, 0);
    let found = scan_whole(REGTEST, &padded);
    assert_eq!(found.blocks.len(), builder.blocks.len());
    assert!(found.bad.is_empty());
    // Zeros between records, then garbage after zeros: reported from the first non-zero byte.
    let mut bytes = file[..records[5].0].to_vec();
    bytes.extend_from_slice(&[0; 100]);
    bytes.extend_from_slice(&[7; 10]);
    let garbage_at = bytes.len() as u64 - 10;
    bytes.extend_from_slice(&file[records[5].0..]);
    let found = scan_whole(REGTEST, &bytes);
    assert_eq!(found.blocks.len(), builder.blocks.len());
    assert_eq!(
        found.bad,
        vec![BadRecord {
            offset: garbage_at,
            kind: BadKind::Garbage,
            skipped: 10
        }]
    );
}

#[test]
fn wrong_network_finds_nothing() {
    let (_, file, _) = simple_file(4, 5);
    for network in [
        Network::Main,
        Network::Testnet3,
        Network::Testnet4,
        Network::Signet,
    ] {
        let found = scan_whole(network, &file);
        assert!(found.blocks.is_empty());
        assert_eq!(
            found.bad,
            vec![BadRecord {
                offset: 0,
                kind: BadKind::Garbage,
                skipped: file.len() as u64
            }]
        );
    }
}

/// The expected chain: heights from the builder, best tip = greatest height
/// (equal work per block), ties to the first written.
struct Model {
    tip: BlockHash,
    tip_height: u32,
    best: Vec<BlockHash>,
    stale: u64,
    orphans: u64,
}

fn model(builder: &ChainBuilder, written: &[usize]) -> Model {
    let present: BTreeSet<usize> = written.iter().copied().collect();
    let first_seen: HashMap<usize, usize> = written
        .iter()
        .enumerate()
        .rev()
        .map(|(order, &i)| (i, order))
        .collect();
    let connected = |mut i: usize| loop {
        if !present.contains(&i) {
            return false;
        }
        match builder.blocks[i].parent {
            None => return true,
            Some(p) => i = p,
        }
    };
    let linked: Vec<usize> = present.iter().copied().filter(|&i| connected(i)).collect();
    let tip = *linked
        .iter()
        .max_by(|&&a, &&b| {
            builder.blocks[a]
                .height
                .cmp(&builder.blocks[b].height)
                .then(first_seen[&b].cmp(&first_seen[&a]))
        })
        .unwrap();
    let mut best = Vec::new();
    let mut cur = Some(tip);
    while let Some(i) = cur {
        best.push(builder.blocks[i].hash);
        cur = builder.blocks[i].parent;
    }
    best.reverse();
    Model {
        tip: builder.blocks[tip].hash,
        tip_height: builder.blocks[tip].height,
        stale: (linked.len() - best.len()) as u64,
        orphans: (present.len() - linked.len()) as u64,
        best,
    }
}

/// Scans `dir`; one thread and three give the same output (`threads.rs`
/// checks that in depth).
fn scan_dir(dir: &Path, xor: Option<XorKey>, options: &ScanOptions) -> (ScanOutput, Chain) {
    let files = list_block_files(&[dir.to_path_buf()], xor).unwrap();
    let [one, three] = [1, 3].map(|threads| {
        let options = ScanOptions {
            threads,
            ..options.clone()
        };
        scan(files.clone(), &options, &mut |_| {}).unwrap()
    });
    assert_eq!(format!("{one:?}"), format!("{three:?}"));
    let mut output = one;
    let chain = Chain::build(&mut output);
    (output, chain)
}

fn check_against_model(chain: &Chain, model: &Model) {
    let tip = chain.tip().unwrap();
    assert_eq!((tip.hash, tip.height), (model.tip, Some(model.tip_height)));
    let best: Vec<BlockHash> = chain.best_chain().map(|b| b.hash).collect();
    assert_eq!(best, model.best);
    assert_eq!(
        (chain.stale(), chain.orphans()),
        (model.stale, model.orphans)
    );
}

/// A tree with stale forks and a reorg-shaped branch that overtakes the
/// first chain, written out of order across many small obfuscated files.
fn forked_tree(seed: u64) -> (ChainBuilder, Vec<usize>) {
    let mut builder = ChainBuilder::new(seed, SizeMix::Small);
    let main_tip = builder.extend_chain(0, 80);
    let _ = main_tip;
    for _ in 0..6 {
        let from = builder.rng().range(1, 75) as usize;
        let len = builder.rng().range(1, 3) as usize;
        builder.extend_chain(from, len);
    }
    // Reorg: a branch from height 60 that ends two blocks above the old tip.
    builder.extend_chain(60, 22);
    let mut by_height: Vec<usize> = (0..builder.blocks.len()).collect();
    by_height.sort_by_key(|&i| builder.blocks[i].height);
    let order = generate::headers_first_order(by_height, 16, builder.rng());
    (builder, order)
}

#[test]
fn forks_reorgs_out_of_order_split_and_obfuscated() {
    let (mut builder, order) = forked_tree(10);
    let before_parent = order
        .iter()
        .enumerate()
        .filter(|(pos, i)| {
            builder.blocks[**i]
                .parent
                .is_some_and(|p| order[*pos..].contains(&p))
        })
        .count();
    assert!(
        before_parent > order.len() / 4,
        "the layout must put many blocks before their parent"
    );
    let mut key = [0u8; 8];
    builder.rng().fill(&mut key);
    let key = XorKey(key);
    let (files, _) = generate::layout_files(
        REGTEST,
        order.iter().map(|&i| builder.blocks[i].bytes.as_slice()),
        5_000,
        key,
    );
    assert!(files.len() > 5);
    let expected = model(&builder, &order);
    assert_eq!(expected.tip_height, 82);
    let small_reads = ScanOptions {
        chunk_size: 4096,
        buffers: 2,
        ..ScanOptions::default()
    };
    let verify = ScanOptions {
        verify: true,
        ..ScanOptions::default()
    };

    // With the key file.
    let dir = TempDir::new("blocks-gen-xor-file");
    generate::write_block_files(&dir, &files, Some(key)).unwrap();
    let inline = ScanOptions {
        read_ahead: false,
        chunk_size: 5000,
        ..ScanOptions::default()
    };
    for options in [&ScanOptions::default(), &small_reads, &verify, &inline] {
        let (output, chain) = scan_dir(&dir, None, options);
        assert!(output.bad_records.is_empty() && output.invalid.is_empty());
        assert_eq!(chain.len(), builder.blocks.len());
        check_against_model(&chain, &expected);
    }
    // Without it, the key given explicitly.
    std::fs::remove_file(dir.join("xor.dat")).unwrap();
    let (_, chain) = scan_dir(&dir, Some(key), &ScanOptions::default());
    check_against_model(&chain, &expected);
    // Without any key nothing is recognised.
    let files_list = list_block_files(&[dir.to_path_buf()], None).unwrap();
    assert!(
        scan(files_list, &ScanOptions::default(), &mut |_| {}).is_err(),
        "network cannot be detected"
    );
    let options = ScanOptions {
        network: Some(REGTEST),
        ..ScanOptions::default()
    };
    let (output, chain) = scan_dir(&dir, None, &options);
    assert!(chain.is_empty() && chain.tip().is_none());
    assert_eq!(output.bad_records.len(), files.len());
}

#[test]
fn ties_go_to_the_first_seen_and_duplicates_are_kept_once() {
    let mut builder = ChainBuilder::new(20, SizeMix::Small);
    let fork = builder.extend_chain(0, 10);
    let a = builder.extend_chain(fork, 3);
    let b = builder.extend_chain(fork, 3);
    let mut order: Vec<usize> = (0..builder.blocks.len()).collect();
    for (first, second) in [(a, b), (b, a)] {
        // Move `first`'s tip before `second`'s.
        order.retain(|&i| i != first);
        let at = order.iter().position(|&i| i == second).unwrap();
        order.insert(at, first);
        let mut written = order.clone();
        written.extend_from_slice(&order[3..9]); // duplicates
        let (files, _) = generate::layout_files(
            REGTEST,
            written.iter().map(|&i| builder.blocks[i].bytes.as_slice()),
            usize::MAX,
            XorKey::default(),
        );
        let dir = TempDir::new("blocks-gen-ties");
        generate::write_block_files(&dir, &files, None).unwrap();
        let (output, chain) = scan_dir(&dir, None, &ScanOptions::default());
        assert_eq!(output.records as usize, written.len());
        assert_eq!(chain.duplicates(), 6);
        assert_eq!(chain.len(), builder.blocks.len());
        let tip = chain.tip().unwrap();
        assert_eq!(tip.hash, builder.blocks[first].hash);
        assert_eq!(chain.stale(), 3);
        // The kept copy of a duplicate is the first one.
        let dup = chain.get(&builder.blocks[order[3]].hash).unwrap();
        assert_eq!(
            dup.offset,
            files[0].len() as u64
                - written[..]
                    .iter()
                    .skip(3)
                    .map(|&i| 8 + builder.blocks[i].bytes.len() as u64)
                    .sum::<u64>()
        );
    }
}

#[test]
fn missing_blocks_make_orphans() {
    let (builder, order) = forked_tree(30);
    let mut rng = Rng::new(31);
    for _ in 0..5 {
        let mut written = order.clone();
        // Drop a few blocks (never genesis): their descendants become orphans.
        for _ in 0..rng.range(1, 4) {
            let at = rng.range(1, written.len() as u64 - 1) as usize;
            if builder.blocks[written[at]].parent.is_some() {
                written.remove(at);
            }
        }
        let (files, _) = generate::layout_files(
            REGTEST,
            written.iter().map(|&i| builder.blocks[i].bytes.as_slice()),
            3_000,
            XorKey::default(),
        );
        let dir = TempDir::new("blocks-gen-orphans");
        generate::write_block_files(&dir, &files, None).unwrap();
        let (_, chain) = scan_dir(&dir, None, &ScanOptions::default());
        check_against_model(&chain, &model(&builder, &written));
    }
}

/// The chain of `builder` written with `blocks` (its blocks, `victim`
/// damaged below `tip`) into a temporary directory: a scan finds `tip`, a scan with `--verify` finds
/// `victim` invalid and the tip at its parent. The error `--verify` gave.
fn verify_moves_the_tip_below(
    builder: &ChainBuilder,
    blocks: &[Vec<u8>],
    tip: usize,
    victim: usize,
    name: &str,
) -> seekless_blocks::Error {
    let (files, _) = generate::layout_files(
        REGTEST,
        blocks.iter().map(Vec::as_slice),
        usize::MAX,
        XorKey::default(),
    );
    let dir = TempDir::new(&format!("blocks-gen-{name}"));
    generate::write_block_files(&dir, &files, None).unwrap();
    let (output, chain) = scan_dir(&dir, None, &ScanOptions::default());
    assert!(output.invalid.is_empty());
    assert_eq!(chain.tip().unwrap().hash, builder.blocks[tip].hash);
    let verify = ScanOptions {
        verify: true,
        ..ScanOptions::default()
    };
    let (mut output, chain) = scan_dir(&dir, None, &verify);
    assert_eq!(output.invalid.len(), 1);
    assert_eq!(output.invalid[0].hash, builder.blocks[victim].hash);
    assert_eq!(
        chain.tip().unwrap().hash,
        builder.blocks[builder.blocks[victim].parent.unwrap()].hash
    );
    assert!(chain.get(&builder.blocks[victim].hash).unwrap().invalid);
    output.invalid.remove(0).error
}

#[test]
fn verify_rejects_a_damaged_body_and_the_tip_moves_back() {
    let mut builder = ChainBuilder::new(40, SizeMix::Small);
    let tip = builder.extend_chain(0, 30);
    let victim = builder.blocks[tip].parent.unwrap();
    let mut blocks: Vec<Vec<u8>> = builder.blocks.iter().map(|b| b.bytes.clone()).collect();
    // Flip a byte after the header: the header (and its hash) stay valid.
    let len = blocks[victim].len();
    blocks[victim][len - 3] ^= 0x55;
    verify_moves_the_tip_below(&builder, &blocks, tip, victim, "verify");
}

/// Where the last witness byte of each segwit transaction after the
/// coinbase is in `block` (under 253 transactions: a one-byte count).
fn witness_bytes(block: &[u8]) -> Vec<usize> {
    assert!(block[HEADER_LEN] < 0xfd);
    let mut at = HEADER_LEN + 1;
    let mut found = Vec::new();
    for i in 0..block[HEADER_LEN] {
        let (tx, len) = seekless_blocks::Transaction::parse(&block[at..], at).unwrap();
        if i > 0 && tx.is_segwit() {
            // The lock time's 4 bytes end it; the witness's last byte is before.
            found.push(at + len - 5);
        }
        at += len;
    }
    found
}

#[test]
fn verify_rejects_altered_witness_data_and_the_tip_moves_back() {
    let mut builder = ChainBuilder::new(41, SizeMix::Small);
    let tip = builder.extend_chain(0, 30);
    // The highest block below the tip with a segwit transaction besides
    // the coinbase.
    let mut victim = builder.blocks[tip].parent.unwrap();
    while witness_bytes(&builder.blocks[victim].bytes).is_empty() {
        victim = builder.blocks[victim].parent.unwrap();
    }
    let mut blocks: Vec<Vec<u8>> = builder.blocks.iter().map(|b| b.bytes.clone()).collect();
    let at = witness_bytes(&blocks[victim])[0];
    blocks[victim][at] ^= 0x01;
    // The header and the merkle root stay valid: only the commitment tells.
    assert!(matches!(
        seekless_blocks::check_block(&blocks[victim], REGTEST.pow_limit())
            .unwrap_err()
            .kind(),
        ErrorKind::BadWitnessCommitment
    ));
    let error = verify_moves_the_tip_below(&builder, &blocks, tip, victim, "verify-witness");
    assert!(
        matches!(error.kind(), ErrorKind::BadWitnessCommitment),
        "{error}"
    );
}

#[test]
fn generated_blocks_verify_and_transactions_round_trip() {
    let mut builder = ChainBuilder::new(50, SizeMix::Realistic);
    builder.extend_chain(0, 40);
    for block in &builder.blocks {
        let summary = seekless_blocks::check_block(&block.bytes, REGTEST.pow_limit()).unwrap();
        assert!(summary.tx_count >= 1);
    }
    let mut rng = Rng::new(51);
    for _ in 0..200 {
        let segwit = rng.below(2) == 0;
        let (inputs, outputs) = (rng.range(1, 4), rng.range(0, 4));
        let script_len = rng.range(0, 300) as usize;
        let tx = generate::random_tx(&mut rng, segwit, inputs, outputs, script_len);
        let (parsed, len) = seekless_blocks::Transaction::parse(&tx, 0).unwrap();
        assert_eq!(len, tx.len());
        assert_eq!(parsed.is_segwit(), segwit);
        assert_eq!(parsed.serialize(), tx);
        assert_eq!(parsed.inputs().count() as u64, inputs);
        assert_eq!(parsed.outputs().count() as u64, outputs);
        // Every truncation fails cleanly.
        for cut in 0..tx.len() {
            assert!(seekless_blocks::Transaction::parse(&tx[..cut], 0).is_err());
        }
    }
}

#[test]
fn a_record_short_by_a_few_bytes_loses_only_itself() {
    // The next record's magic then starts in the last bytes of the claimed
    // body and must still be found.
    let (builder, file, records) = simple_file(6, 10);
    for k in [2, 5] {
        let (at, len) = records[k];
        for short in 1..=12 {
            let mut bytes = file.clone();
            bytes.drain(at + len - short..at + len);
            let found = scan_whole(REGTEST, &bytes);
            assert_eq!(
                found_hashes(&found),
                hashes_except(&builder, &[k].into()),
                "record {k} short by {short}"
            );
            assert_eq!(found.bad.len(), 1);
            assert_eq!(
                (found.bad[0].offset, found.bad[0].skipped),
                (at as u64, (len - short) as u64)
            );
            // The header-only scan sees an implausible end and searches too.
            assert_eq!(
                scan_headers_only(REGTEST, &bytes),
                found,
                "record {k} short by {short} (lazy)"
            );
        }
    }
}

#[test]
fn linearize_streams_the_best_chain_in_height_order() {
    let (builder, order) = forked_tree(60);
    let key = XorKey([3, 1, 4, 1, 5, 9, 2, 6]);
    let (files, _) = generate::layout_files(
        REGTEST,
        order.iter().map(|&i| builder.blocks[i].bytes.as_slice()),
        4_000,
        key,
    );
    let dir = TempDir::new("blocks-gen-linearize-in");
    generate::write_block_files(&dir, &files, Some(key)).unwrap();
    let (output, chain) = scan_dir(&dir, None, &ScanOptions::default());
    let best: Vec<BlockHash> = chain.best_chain().map(|b| b.hash).collect();
    for max in [1u64, 2_500, 1 << 30] {
        let out = TempDir::new("blocks-gen-linearize-out");
        let options = seekless_blocks::LinearizeOptions {
            max_file_size: max,
            force: false,
        };
        let report =
            seekless_blocks::linearize(&chain, &output.files, &out, &options, &mut |_| {}).unwrap();
        assert_eq!(report.blocks as usize, best.len());
        if max == 1 {
            // A block larger than the limit gets a file of its own.
            assert_eq!(report.files.len(), best.len());
        }
        if max == 1 << 30 {
            assert_eq!(report.files.len(), 1);
        }
        let mut names: Vec<String> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|name| name != seekless_blocks::MANIFEST)
            .collect();
        names.sort();
        let expected: Vec<String> = (0..report.files.len())
            .map(|n| format!("blk{n:05}.dat"))
            .collect();
        assert_eq!(names, expected, "no temporary files left");
        let manifest = std::fs::read_to_string(out.join(seekless_blocks::MANIFEST)).unwrap();
        assert_eq!(manifest.lines().collect::<Vec<_>>(), expected);
        // Reading the output back in file order gives the best chain, in order.
        let mut seen = Vec::new();
        for name in &names {
            let bytes = std::fs::read(out.join(name)).unwrap();
            let found = scan_whole(REGTEST, &bytes);
            assert!(found.bad.is_empty());
            // Only a lone block may exceed the limit.
            if found.blocks.len() > 1 {
                assert!(bytes.len() as u64 <= max);
            }
            seen.extend(found.blocks.iter().map(|(_, h)| *h));
        }
        assert_eq!(seen, best);
    }
}

#[test]
fn linearize_that_fails_half_way_leaves_nothing() {
    let (builder, order) = forked_tree(40);
    let (files, _) = generate::layout_files(
        REGTEST,
        order.iter().map(|&i| builder.blocks[i].bytes.as_slice()),
        4_000,
        XorKey::default(),
    );
    let dir = TempDir::new("blocks-gen-linearize-changed");
    generate::write_block_files(&dir, &files, None).unwrap();
    let (output, chain) = scan_dir(&dir, None, &ScanOptions::default());
    // The tip's header changes on disk after the scan: the copy stops there,
    // after every block below it was written.
    let tip = chain.tip().unwrap();
    let path = &output.files[tip.file].path;
    let mut bytes = std::fs::read(path).unwrap();
    bytes[tip.offset as usize + 8 + 76] ^= 1;
    std::fs::write(path, &bytes).unwrap();
    let parent = TempDir::new("blocks-gen-linearize-changed-out");
    let out = parent.join("out");
    let options = seekless_blocks::LinearizeOptions {
        max_file_size: 2_000,
        force: false,
    };
    let error =
        seekless_blocks::linearize(&chain, &output.files, &out, &options, &mut |_| {}).unwrap_err();
    assert!(
        matches!(
            error.kind(),
            seekless_blocks::ErrorKind::BlockChanged { .. }
        ),
        "{error}"
    );
    assert_eq!(
        std::fs::read_dir(&parent).unwrap().count(),
        0,
        "neither the output nor a staging directory is left"
    );
}

#[test]
fn obfuscated_files_end_in_raw_zero_padding() {
    // Core preallocates block files; the unwritten space is zeros on disk,
    // which de-obfuscate to the key: still padding, not garbage.
    let (builder, file, records) = simple_file(8, 10);
    let key = XorKey([0x5e, 0x77, 0x01, 0xc3, 0x9a, 0x11, 0x2b, 0xf0]);
    let mut bytes = file.clone();
    key.apply(&mut bytes, 0);
    bytes.resize(bytes.len() + 50_001, 0);
    let dir = TempDir::new("blocks-gen-raw-zeros");
    generate::write_block_files(&dir, &[bytes.clone()], Some(key)).unwrap();
    for map_files in [true, false] {
        let options = ScanOptions {
            map_files,
            chunk_size: 4096,
            ..ScanOptions::default()
        };
        let (output, chain) = scan_dir(&dir, None, &options);
        assert!(
            output.bad_records.is_empty(),
            "mapped {map_files}: {:?}",
            output.bad_records
        );
        assert_eq!(chain.len(), builder.blocks.len());
    }
    // Zeros in the de-obfuscated data (raw key bytes on disk) are garbage.
    let mut bytes = file[..records[4].0].to_vec();
    bytes.extend_from_slice(&[0; 16]);
    bytes.extend_from_slice(&file[records[4].0..]);
    key.apply(&mut bytes, 0);
    generate::write_block_files(&dir, &[bytes], Some(key)).unwrap();
    for map_files in [true, false] {
        let options = ScanOptions {
            map_files,
            chunk_size: 4096,
            ..ScanOptions::default()
        };
        let (output, chain) = scan_dir(&dir, None, &options);
        let bad: Vec<_> = output
            .bad_records
            .iter()
            .map(|b| (b.record.offset, b.record.kind, b.record.skipped))
            .collect();
        assert_eq!(
            bad,
            vec![(records[4].0 as u64, BadKind::Garbage, 16)],
            "mapped {map_files}"
        );
        assert_eq!(chain.len(), builder.blocks.len());
    }
}
