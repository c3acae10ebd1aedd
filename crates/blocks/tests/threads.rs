//! `ScanOptions::threads`: several files scanned at once give exactly what
//! one thread gives (every entry, bad record, invalid block and the chain
//! built from them, in the same order), on out-of-order, damaged,
//! obfuscated and real mainnet files, in every scan mode; and a failing file
//! gives the same error.

use std::path::Path;

use seekless_blocks::generate::{self, ChainBuilder, SizeMix};
use seekless_blocks::{BlockFile, Chain, Network, ScanOptions, XorKey, list_block_files, scan};
use seekless_testkit::TempDir;

const THREADS: [usize; 3] = [2, 3, 8];

/// Everything a scan and the chain built from it show, as text, and the
/// bytes `progress` was told about.
fn scan_text(files: &[BlockFile], options: &ScanOptions) -> (String, u64) {
    let mut progressed = 0;
    let text = match scan(files.to_vec(), options, &mut |n| progressed += n) {
        Ok(mut output) => {
            let scanned = format!("{output:?}");
            let chain = Chain::build(&mut output);
            let blocks: Vec<_> = chain.blocks().collect();
            let best: Vec<_> = chain.best_chain().map(|b| b.hash).collect();
            format!(
                "{scanned}\n{blocks:?}\n{best:?}\nstale {} orphans {} duplicates {}",
                chain.stale(),
                chain.orphans(),
                chain.duplicates()
            )
        }
        Err(e) => format!("error: {e}"),
    };
    (text, progressed)
}

/// The modes a scan can run in: mapped headers, every byte read (with and
/// without the reader thread, in small chunks), thorough and verify.
fn modes(network: Network) -> Vec<ScanOptions> {
    let base = ScanOptions {
        network: Some(network),
        ..ScanOptions::default()
    };
    vec![
        base.clone(),
        ScanOptions {
            map_files: false,
            ..base.clone()
        },
        ScanOptions {
            read_ahead: false,
            chunk_size: 4096,
            ..base.clone()
        },
        ScanOptions {
            thorough: true,
            ..base.clone()
        },
        ScanOptions {
            verify: true,
            ..base.clone()
        },
        // Network detection, then a scan.
        ScanOptions {
            network: None,
            ..base
        },
    ]
}

/// Scans `dir` in every mode with one thread and with several: the same
/// text every time. Returns the one-thread texts.
fn same_for_any_threads(dir: &Path, xor: Option<XorKey>, network: Network) -> Vec<String> {
    let files = list_block_files(&[dir.to_path_buf()], xor).unwrap();
    let total: u64 = files.iter().map(|f| f.len).sum();
    let mut texts = Vec::new();
    for options in modes(network) {
        let one = ScanOptions {
            threads: 1,
            ..options.clone()
        };
        let (expected, progressed) = scan_text(&files, &one);
        if !expected.starts_with("error") {
            assert_eq!(progressed, total, "progress adds up to the bytes");
        }
        for threads in THREADS {
            let many = ScanOptions {
                threads,
                ..options.clone()
            };
            let (text, many_progressed) = scan_text(&files, &many);
            assert_eq!(text, expected, "{threads} threads, {options:?}");
            if !expected.starts_with("error") {
                assert_eq!(many_progressed, total, "{threads} threads, {options:?}");
            }
        }
        texts.push(expected);
    }
    texts
}

/// An out-of-order chain with forks over many small files, each damaged in
/// its own way: garbage between records, a torn tail, zero padding, an
/// empty file, a block body changed (only `verify` sees it).
fn damaged_files(seed: u64, key: XorKey) -> Vec<Vec<u8>> {
    let mut builder = ChainBuilder::new(seed, SizeMix::Small);
    builder.extend_chain(0, 60);
    for _ in 0..4 {
        let from = builder.rng().range(1, 55) as usize;
        builder.extend_chain(from, 2);
    }
    let mut by_height: Vec<usize> = (0..builder.blocks.len()).collect();
    by_height.sort_by_key(|&i| builder.blocks[i].height);
    let order = generate::headers_first_order(by_height, 16, builder.rng());
    let mut blocks: Vec<Vec<u8>> = order
        .iter()
        .map(|&i| builder.blocks[i].bytes.clone())
        .collect();
    // A changed body byte in the 20th block written: its header still hashes.
    let len = blocks[20].len();
    blocks[20][len - 3] ^= 0x55;
    let (mut files, _) = generate::layout_files(
        Network::Regtest,
        blocks.iter().map(Vec::as_slice),
        4_000,
        XorKey::default(),
    );
    assert!(files.len() > 8, "{} files", files.len());
    let middle = files[1].len() / 2;
    files[1].splice(middle..middle, (1..=200).map(|b| b as u8));
    let torn = files[3].len() - 7;
    files[3].truncate(torn);
    files[5].extend_from_slice(&[0; 300]);
    files[6].clear();
    let end = files.len() - 1;
    let cut = files[end].len() / 3;
    files[end].truncate(cut);
    for file in &mut files {
        key.apply(file, 0);
    }
    files
}

#[test]
fn damaged_out_of_order_files_plain_and_obfuscated() {
    let key = XorKey(*b"\x13\x57\x9b\xdf\x02\x46\x8a\xce");
    for (name, key) in [("plain", None), ("xor", Some(key))] {
        let dir = TempDir::new(&format!("blocks-threads-{name}"));
        let files = damaged_files(7, key.unwrap_or_default());
        generate::write_block_files(&dir, &files, key).unwrap();
        let texts = same_for_any_threads(&dir, None, Network::Regtest);
        // The damage is there to be found.
        let verify = &texts[4];
        assert!(verify.contains("BadMerkleRoot"), "{verify}");
        assert!(texts[0].contains("Truncated") && texts[0].contains("Garbage"));
        // The wrong network: nothing found, in the same way.
        same_for_any_threads(&dir, None, Network::Testnet4);
    }
}

#[test]
fn real_mainnet_blocks_with_duplicates() {
    let dir = TempDir::new("blocks-threads-main");
    let blocks: [&[u8]; 3] = [
        include_bytes!("data/block413567.raw"),
        include_bytes!("data/482683.raw"),
        include_bytes!("data/542213.raw"),
    ];
    let files: Vec<Vec<u8>> = (0..5)
        .map(|n| {
            let mut file = Vec::new();
            for block in blocks.iter().cycle().skip(n).take(n % 3 + 1) {
                file.extend_from_slice(&generate::record(Network::Main, block));
            }
            file
        })
        .collect();
    generate::write_block_files(&dir, &files, None).unwrap();
    let texts = same_for_any_threads(&dir, None, Network::Main);
    assert!(!texts[4].contains("error"), "{}", texts[4]);
}

#[test]
fn a_missing_file_fails_the_same_way() {
    let dir = TempDir::new("blocks-threads-missing");
    generate::write_block_files(&dir, &damaged_files(8, XorKey::default()), None).unwrap();
    let files = list_block_files(&[dir.to_path_buf()], None).unwrap();
    // Gone between listing and scanning: the first missing file is named.
    std::fs::remove_file(&files[4].path).unwrap();
    std::fs::remove_file(&files[7].path).unwrap();
    for options in modes(Network::Regtest) {
        let one = ScanOptions {
            threads: 1,
            ..options.clone()
        };
        let (expected, _) = scan_text(&files, &one);
        assert!(
            expected.starts_with("error") && expected.contains("blk00004.dat"),
            "{expected}"
        );
        for threads in THREADS {
            let many = ScanOptions {
                threads,
                ..options.clone()
            };
            assert_eq!(scan_text(&files, &many).0, expected);
        }
    }
}
