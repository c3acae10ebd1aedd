//! UTXO snapshots: a file Core 28.0 wrote read and written back byte for
//! byte, random sets written and read back (by this crate and by the
//! `txoutset` crate), and every way a file can be cut or damaged.

use std::io::Cursor;

use proptest::prelude::*;
use seekless_blocks::{
    BlockHash, Coin, ErrorKind, Network, OutPoint, SNAPSHOT_HEADER_LEN, SnapshotMetadata,
    SnapshotReader, SnapshotWriter, UtxoStats,
};

/// Core 28.0's `dumptxoutset` of signet at height 100 (data/README.md).
const CORE_SNAPSHOT: &[u8] = include_bytes!("data/utxo-signet-100.dat");

fn read_all(bytes: &[u8]) -> seekless_blocks::Result<(SnapshotMetadata, Vec<(OutPoint, Coin)>)> {
    let mut reader = SnapshotReader::new(bytes)?;
    let metadata = *reader.metadata();
    let coins = reader
        .by_ref()
        .collect::<seekless_blocks::Result<Vec<_>>>()?;
    Ok((metadata, coins))
}

fn write_all(metadata: &SnapshotMetadata, coins: &[(OutPoint, Coin)]) -> Vec<u8> {
    let mut writer =
        SnapshotWriter::new(Vec::new(), metadata.network, metadata.base, metadata.coins).unwrap();
    for (outpoint, coin) in coins {
        writer.push(outpoint, coin).unwrap();
    }
    writer.finish().unwrap()
}

#[test]
fn core_snapshot_reads_and_writes_back_byte_for_byte() {
    let (metadata, coins) = read_all(CORE_SNAPSHOT).unwrap();
    assert_eq!(metadata.network, Network::Signet);
    assert_eq!(
        metadata.base.to_string(),
        "000002cfbc285703a0d485b4d308476e85da6876e3d6ae229dc969fa9fe02d1d"
    );
    assert_eq!(metadata.coins, 100);
    assert_eq!(coins.len(), 100);
    // Signet's first 100 blocks: coinbases only, each 50 BTC (less the
    // outputs' split) to heights 1 to 100.
    assert!(
        coins
            .iter()
            .all(|(_, coin)| coin.coinbase && coin.height <= 100)
    );
    let mut stats = UtxoStats::new();
    for (outpoint, coin) in &coins {
        stats.add(outpoint, coin);
    }
    assert_eq!(stats.coins, 100);
    assert_eq!(write_all(&metadata, &coins), CORE_SNAPSHOT);
    compare_with_txoutset(CORE_SNAPSHOT, &metadata, &coins);
}

/// Reads `bytes` with the `txoutset` crate and checks it finds `coins`.
fn compare_with_txoutset(bytes: &[u8], metadata: &SnapshotMetadata, coins: &[(OutPoint, Coin)]) {
    let dump = txoutset::Dump::from_reader(Cursor::new(bytes), txoutset::ComputeAddresses::No)
        .expect("txoutset reads the header");
    assert_eq!(dump.utxo_set_size, metadata.coins);
    assert_eq!(dump.block_hash.to_string(), metadata.base.to_string());
    let theirs: Vec<_> = dump.collect();
    assert_eq!(theirs.len(), coins.len());
    for (their, (outpoint, coin)) in theirs.iter().zip(coins) {
        assert_eq!(
            their.out_point.txid.to_string(),
            BlockHash(outpoint.txid).to_string()
        );
        assert_eq!(their.out_point.vout, outpoint.vout);
        assert_eq!(u64::from(their.amount), coin.value);
        assert_eq!(their.height, coin.height);
        assert_eq!(their.is_coinbase, coin.coinbase);
        assert_eq!(their.script_pubkey.as_bytes(), &coin.script[..]);
    }
}

const GENESIS_KEY: &str = "04678afdb0fe5548271967f1a67130b7105cd6a828e03909a67962e0ea1f61deb6\
                           49f6bc3f4cef38c4f35504e51ec112de5c384df7ba0b8d578a4c702b6bf11d5f";

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

/// A script of each kind the compression treats apart, chosen by `kind`,
/// varied by `seed`.
fn script(kind: u8, seed: u8) -> Vec<u8> {
    let hash = [seed; 20];
    match kind % 9 {
        0 => [&[0x76, 0xa9, 20][..], &hash, &[0x88, 0xac]].concat(),
        1 => [&[0xa9, 20][..], &hash, &[0x87]].concat(),
        2 => [&[33, 0x02 + seed % 2][..], &[seed; 32], &[0xac]].concat(),
        // Uncompressed keys: the genesis coinbase's (on the curve, odd y)...
        3 => [&[65][..], &hex(GENESIS_KEY), &[0xac]].concat(),
        // ...and one off the curve, stored plain.
        4 => {
            let mut key = hex(GENESIS_KEY);
            key[64] ^= 1 + seed % 4;
            [&[65][..], &key, &[0xac]].concat()
        }
        5 => [&[0x00, 0x14][..], &hash].concat(),
        6 => [&[0x51, 0x20][..], &[seed; 32]].concat(),
        7 => vec![],
        _ => vec![0x51; seed as usize * 13],
    }
}

fn coin_strategy() -> impl Strategy<Value = (OutPoint, Coin)> {
    (
        0u8..6,
        prop_oneof![0u32..4, 100u32..300, 16_500u32..16_520],
        any::<u8>(),
        any::<u8>(),
        prop_oneof![Just(0u64), 1u64..100_000, Just(21_000_000 * 100_000_000)],
        0u32..1_000_000,
        any::<bool>(),
    )
        .prop_map(|(txid, vout, kind, seed, value, height, coinbase)| {
            let mut id = [0u8; 32];
            id[0] = txid;
            id[31] = txid.wrapping_mul(37);
            let outpoint = OutPoint { txid: id, vout };
            let coin = Coin {
                value,
                height,
                coinbase,
                script: script(kind, seed),
            };
            (outpoint, coin)
        })
}

/// Coins in Core's order, each outpoint once.
fn sorted(mut coins: Vec<(OutPoint, Coin)>) -> Vec<(OutPoint, Coin)> {
    coins.sort_by(|a, b| a.0.core_cmp(&b.0));
    coins.dedup_by(|a, b| a.0 == b.0);
    coins
}

fn metadata(coins: u64) -> SnapshotMetadata {
    SnapshotMetadata {
        network: Network::Main,
        base: Network::Main.genesis(),
        coins,
    }
}

proptest! {
    #[test]
    fn random_sets_round_trip(coins in prop::collection::vec(coin_strategy(), 0..60)) {
        let coins = sorted(coins);
        let meta = metadata(coins.len() as u64);
        let bytes = write_all(&meta, &coins);
        let mut reader = SnapshotReader::new(&bytes[..]).unwrap();
        let back = reader.by_ref().collect::<seekless_blocks::Result<Vec<_>>>().unwrap();
        prop_assert!(reader.canonical());
        prop_assert_eq!(reader.metadata(), &meta);
        prop_assert_eq!(back, coins);
    }
}

/// A fixed set with every script kind, several txids and large indexes.
fn every_kind() -> Vec<(OutPoint, Coin)> {
    let mut coins = Vec::new();
    for i in 0..120u32 {
        let mut txid = [0u8; 32];
        txid[0] = (i % 7) as u8;
        txid[5] = (i % 3) as u8;
        coins.push((
            OutPoint {
                txid,
                vout: i * 139,
            },
            Coin {
                value: (i as u64 * 7_919) % 5_000_000_000,
                height: i * 1_000,
                coinbase: i % 5 == 0,
                script: script(i as u8, (i * 3) as u8),
            },
        ));
    }
    sorted(coins)
}

#[test]
fn txoutset_reads_what_we_write() {
    let coins = every_kind();
    let meta = SnapshotMetadata {
        network: Network::Signet,
        base: BlockHash([9; 32]),
        coins: coins.len() as u64,
    };
    let bytes = write_all(&meta, &coins);
    compare_with_txoutset(&bytes, &meta, &coins);
}

fn small_snapshot() -> (SnapshotMetadata, Vec<(OutPoint, Coin)>, Vec<u8>) {
    let coins: Vec<_> = every_kind().into_iter().step_by(12).collect();
    let meta = metadata(coins.len() as u64);
    let bytes = write_all(&meta, &coins);
    (meta, coins, bytes)
}

#[test]
fn every_truncation_is_refused() {
    let (_, _, bytes) = small_snapshot();
    for len in 0..bytes.len() {
        let err = read_all(&bytes[..len]).expect_err("a cut snapshot");
        assert!(
            matches!(
                err.kind(),
                ErrorKind::UnexpectedEof { .. } | ErrorKind::CoinCount { .. }
            ),
            "cut at {len}: {err}"
        );
    }
}

#[test]
fn trailing_bytes_and_wrong_counts_are_refused() {
    let (_, coins, bytes) = small_snapshot();
    let mut longer = bytes.clone();
    longer.push(0);
    let err = read_all(&longer).unwrap_err();
    assert!(matches!(
        err.kind(),
        ErrorKind::SnapshotTrailingBytes { offset } if *offset == bytes.len() as u64
    ));
    for declared in [coins.len() as u64 - 1, coins.len() as u64 + 1, 0, u64::MAX] {
        let mut changed = bytes.clone();
        changed[43..51].copy_from_slice(&declared.to_le_bytes());
        let err = read_all(&changed).unwrap_err();
        // Fewer declared: the coins after the last declared one are left
        // over (as Core says), unless the last group is too large.
        assert!(
            matches!(err.kind(), ErrorKind::CoinCount { declared: d, .. } if *d == declared)
                || declared < coins.len() as u64
                    && matches!(err.kind(), ErrorKind::SnapshotTrailingBytes { .. }),
            "{declared}: {err}"
        );
    }
}

#[test]
fn headers_are_checked() {
    let (_, _, bytes) = small_snapshot();
    let with = |at: usize, new: &[u8]| {
        let mut changed = bytes.clone();
        changed[at..at + new.len()].copy_from_slice(new);
        SnapshotReader::new(&changed[..]).unwrap_err()
    };
    let err = with(0, b"utxp");
    assert!(matches!(err.kind(), ErrorKind::NotASnapshot { .. }));
    let err = with(5, &3u16.to_le_bytes());
    assert!(matches!(
        err.kind(),
        ErrorKind::SnapshotVersion { version: 3, .. }
    ));
    assert!(err.to_string().contains("newer"), "{err}");
    let err = with(5, &1u16.to_le_bytes());
    assert!(!err.to_string().contains("newer"), "{err}");
    let err = with(7, &[1, 2, 3, 4]);
    assert!(matches!(
        err.kind(),
        ErrorKind::SnapshotNetwork {
            magic: [1, 2, 3, 4]
        }
    ));
    // Core before 28.0 wrote no magic: the base hash came first.
    let err = SnapshotReader::new(&bytes[11..]).unwrap_err();
    assert!(err.to_string().contains("before 28.0"), "{err}");
}

#[test]
fn order_is_checked_when_reading() {
    // Two groups of one txid, in order, then the same txid again.
    let coin = Coin {
        value: 1,
        height: 1,
        coinbase: false,
        script: vec![0x51],
    };
    let group = |txid: u8, vouts: &[u8]| {
        let mut out = vec![txid; 32];
        out.push(vouts.len() as u8);
        for vout in vouts {
            out.push(*vout);
            coin.write_compressed(&mut out);
        }
        out
    };
    let file = |groups: &[Vec<u8>], coins: u64| {
        let mut meta = write_all(&metadata(0), &[]);
        meta[43..51].copy_from_slice(&coins.to_le_bytes());
        for g in groups {
            meta.extend_from_slice(g);
        }
        meta
    };
    assert!(read_all(&file(&[group(1, &[0, 2]), group(2, &[1])], 3)).is_ok());
    for (groups, coins) in [
        (vec![group(1, &[2, 0])], 2),
        (vec![group(1, &[0, 0])], 2),
        (vec![group(2, &[0]), group(1, &[1])], 2),
        (vec![group(1, &[0]), group(1, &[1])], 2),
        (vec![group(1, &[]), group(2, &[0])], 1),
    ] {
        let err = read_all(&file(&groups, coins)).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::SnapshotOrder { .. }),
            "{err}"
        );
    }
}

#[test]
fn writer_refuses_what_core_would_not_write() {
    let (meta, coins, _) = small_snapshot();
    let mut writer = SnapshotWriter::new(Vec::new(), meta.network, meta.base, meta.coins).unwrap();
    writer.push(&coins[1].0, &coins[1].1).unwrap();
    for earlier in [&coins[0], &coins[1]] {
        let err = writer.push(&earlier.0, &earlier.1).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::CoinOrder { index: 1 }));
    }
    let later = coins.last().unwrap();
    for (script, value, height) in [
        (vec![0x6a, 1, 2], 1, 1),
        (vec![0x51; 10_001], 1, 1),
        (vec![0x51], 21_000_000 * 100_000_000 + 1, 1),
        (vec![0x51], 1, 1 << 31),
    ] {
        let coin = Coin {
            value,
            height,
            coinbase: false,
            script,
        };
        let err = writer.push(&later.0, &coin).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::UnwritableCoin { index: 1, .. }),
            "{err}"
        );
    }
    let err = writer.finish().unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::CoinCount { found: 1, .. }));
    // One more coin than declared.
    let mut writer = SnapshotWriter::new(Vec::new(), meta.network, meta.base, 1).unwrap();
    writer.push(&coins[0].0, &coins[0].1).unwrap();
    let err = writer.push(&coins[1].0, &coins[1].1).unwrap_err();
    assert!(matches!(
        err.kind(),
        ErrorKind::CoinCount {
            declared: 1,
            found: 2
        }
    ));
}

#[test]
fn bit_flips_never_panic_and_what_reads_writes_back() {
    let (_, _, bytes) = small_snapshot();
    let mut read_ok = 0;
    for bit in 0..bytes.len() * 8 {
        let mut changed = bytes.clone();
        changed[bit / 8] ^= 1 << (bit % 8);
        let Ok(mut reader) = SnapshotReader::new(&changed[..]) else {
            continue;
        };
        let meta = *reader.metadata();
        let Ok(coins) = reader.by_ref().collect::<seekless_blocks::Result<Vec<_>>>() else {
            continue;
        };
        read_ok += 1;
        if reader.canonical() {
            assert_eq!(write_all(&meta, &coins), changed, "bit {bit}");
        }
    }
    // Flips inside hashes, values and heights still read.
    assert!(read_ok > bytes.len());
}

#[test]
fn header_is_51_bytes() {
    assert_eq!(write_all(&metadata(0), &[]).len(), SNAPSHOT_HEADER_LEN);
    assert_eq!(SNAPSHOT_HEADER_LEN, 51);
}
