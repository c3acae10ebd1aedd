//! The UTXO set built by connecting generated chains, held coin by coin to
//! a model: a plain `HashMap` the test builds from the same transactions
//! (the generator's description of them, not the block bytes). Every rule
//! that stops a block from connecting is broken once, and the run must stop
//! at the block before, with the set as it was there.

use std::collections::HashMap;
use std::path::Path;

use seekless_blocks::generate::Rng;
use seekless_blocks::generate::spends::{GenTx, SUBSIDY, SpendingChain};
use seekless_blocks::{
    COINBASE_MATURITY, Chain, Coin, CoinStore, ConnectReport, ErrorKind, MAX_MONEY, MemoryCoins,
    Network, OutPoint, Reject, ScanOptions, SnapshotReader, UtxoStats, XorKey, connect,
    connect_each, is_unspendable, list_block_files, scan, write_snapshot,
};
use seekless_testkit::TempDir;

const KEY: XorKey = XorKey([0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]);

/// The block indices of the chain from genesis to `tip`.
fn path_to(chain: &SpendingChain, tip: usize) -> Vec<usize> {
    let mut path = vec![tip];
    while let Some(parent) = chain.builder.blocks[*path.last().unwrap()].parent {
        path.push(parent);
    }
    path.reverse();
    path
}

/// The UTXO set after connecting the blocks of `path` up to `height`, as
/// Core's rules say it is, built from the generator's transactions.
fn model(chain: &SpendingChain, path: &[usize], height: u32) -> HashMap<OutPoint, Coin> {
    let mut set = HashMap::new();
    for &index in path.iter().skip(1).take(height as usize) {
        let at = chain.builder.blocks[index].height;
        for tx in &chain.txs[index] {
            for input in &tx.inputs {
                set.remove(input).expect("the generator spends what exists");
            }
            for (vout, (value, script)) in tx.outputs.iter().enumerate() {
                if is_unspendable(script) {
                    continue;
                }
                let outpoint = OutPoint {
                    txid: tx.txid,
                    vout: vout as u32,
                };
                let coin = Coin {
                    value: *value as u64,
                    height: at,
                    coinbase: tx.coinbase,
                    script: script.clone(),
                };
                // A repeated coinbase overwrites (BIP 30's two exceptions).
                let old = set.insert(outpoint, coin);
                assert!(old.is_none() || tx.coinbase);
            }
        }
    }
    set
}

fn run(dir: &Path, height: Option<u32>) -> (ConnectReport, MemoryCoins) {
    let files = list_block_files(&[dir.to_path_buf()], None).unwrap();
    let mut output = scan(files, &ScanOptions::default(), &mut |_| {}).unwrap();
    let chain = Chain::build(&mut output);
    let mut coins = MemoryCoins::new();
    let mut read = 0;
    let report = connect(&chain, &output.files, height, &mut coins, &mut |n| {
        read += n
    })
    .unwrap();
    assert!(read >= report.bytes);
    (report, coins)
}

fn assert_same(coins: &MemoryCoins, model: &HashMap<OutPoint, Coin>) {
    assert_eq!(coins.len(), model.len() as u64);
    for (outpoint, coin) in coins.iter() {
        assert_eq!(model.get(&outpoint), Some(&coin), "{outpoint:?}");
    }
}

/// A valid chain of `len` blocks with up to `max_txs` spends a block.
fn valid_chain(seed: u64, len: usize, max_txs: u64) -> SpendingChain {
    let mut chain = SpendingChain::new(seed);
    for _ in 0..len {
        chain.extend(max_txs);
    }
    chain
}

#[test]
fn the_set_matches_the_model_at_the_tip_and_below() {
    let mut chain = valid_chain(1, 170, 8);
    let tip = chain.tip();
    // A stale fork of random transactions spending nothing that exists:
    // connecting any of it would fail.
    let fork_base = path_to(&chain, tip)[120];
    chain.builder.extend_chain(fork_base, 3);
    let dir = TempDir::new("utxo-model");
    chain.write_dir(&dir, 40_000, KEY).unwrap();
    let path = path_to(&chain, tip);

    // The generator made what the test is about.
    let txs: Vec<&GenTx> = path.iter().flat_map(|&i| &chain.txs[i]).collect();
    let outputs = || txs.iter().flat_map(|tx| &tx.outputs);
    assert!(outputs().any(|(_, s)| s.first() == Some(&0x6a) && s.len() == 18));
    assert!(outputs().any(|(_, s)| s.len() > 10_000));
    assert!(
        txs.iter()
            .any(|tx| !tx.coinbase && tx.bytes[4..6] == [0, 1])
    );
    assert!(txs.iter().any(|tx| tx.inputs.len() > 1));
    let spent_coinbase = txs
        .iter()
        .flat_map(|tx| &tx.inputs)
        .any(|input| txs.iter().any(|tx| tx.coinbase && tx.txid == input.txid));
    assert!(spent_coinbase);
    let same_block = path.iter().any(|&i| {
        let block = &chain.txs[i];
        block.iter().any(|tx| {
            tx.inputs
                .iter()
                .any(|p| block.iter().any(|t| t.txid == p.txid))
        })
    });
    assert!(same_block);

    let (report, coins) = run(&dir, None);
    assert!(report.failure.is_none(), "{:?}", report.failure);
    assert_eq!(report.height, 170);
    assert_eq!(report.hash, chain.builder.blocks[tip].hash);
    assert_eq!(
        report.transactions,
        path[1..]
            .iter()
            .map(|&i| chain.txs[i].len() as u64)
            .sum::<u64>()
    );
    let full = model(&chain, &path, 170);
    assert_same(&coins, &full);
    assert!(full.len() > 300, "{}", full.len());
    // Genesis's coinbase is not a coin.
    let genesis = &chain.builder.blocks[0].bytes;
    let (genesis_tx, _) = seekless_blocks::Transaction::parse(&genesis[81..], 81).unwrap();
    assert_eq!(
        coins.get(&OutPoint {
            txid: genesis_tx.txid(),
            vout: 0
        }),
        None
    );

    for height in [0, 1, 99, 100, 121, 140, 169] {
        let (report, coins) = run(&dir, Some(height));
        assert!(report.failure.is_none());
        assert_eq!(report.height, height);
        assert_eq!(
            report.hash,
            chain.builder.blocks[path[height as usize]].hash
        );
        assert_same(&coins, &model(&chain, &path, height));
    }
    let files = list_block_files(&[dir.to_path_buf()], None).unwrap();
    let mut output = scan(files, &ScanOptions::default(), &mut |_| {}).unwrap();
    let built = Chain::build(&mut output);
    let err = connect(
        &built,
        &output.files,
        Some(171),
        &mut MemoryCoins::new(),
        &mut |_| {},
    )
    .unwrap_err();
    assert!(matches!(
        err.kind(),
        ErrorKind::HeightPastTip {
            height: 171,
            tip: Some(170)
        }
    ));
    assert_eq!(
        err.to_string(),
        "height 171 is past the best chain's tip at 170"
    );
}

#[test]
fn more_seeds_match_the_model() {
    for seed in 30..34 {
        let mut chain = valid_chain(seed, 115, 12);
        let dir = TempDir::new("utxo-seeds");
        chain.write_dir(&dir, 40_000, KEY).unwrap();
        let (report, coins) = run(&dir, None);
        assert!(report.failure.is_none(), "{seed}: {:?}", report.failure);
        let path = path_to(&chain, chain.tip());
        assert_same(&coins, &model(&chain, &path, 115));
    }
}

#[test]
fn bytes_per_coin_in_memory() {
    let chain = valid_chain(2, 130, 30);
    let mut coins = MemoryCoins::new();
    let path = path_to(&chain, chain.tip());
    for (outpoint, coin) in model(&chain, &path, 130) {
        coins.add(&outpoint, coin.value, coin.code(), &coin.script);
    }
    let per_coin = coins.memory_bytes() as f64 / coins.len() as f64;
    // A table at some load between 7/16 and 7/8 and the coins' bytes:
    // printed for the record (`--nocapture`), bounded loosely.
    println!("{} coins, {per_coin:.1} bytes a coin", coins.len());
    assert!(per_coin < 400.0, "{per_coin}");
}

/// What each broken rule looks like: a block made on a valid chain.
fn bad_block(chain: &mut SpendingChain, case: &str) -> Reject {
    let height = chain.next_height();
    let p2pkh = |b: u8| [&[0x76, 0xa9, 0x14][..], &[b; 20], &[0x88, 0xac]].concat();
    // The youngest spendable output that no coinbase made.
    let valid = *chain.unspent.iter().rfind(|s| !s.coinbase).unwrap();
    let (txs, reject) = match case {
        "missing" => {
            let ghost = OutPoint {
                txid: [0xab; 32],
                vout: 0,
            };
            let tx = GenTx::spend(&[ghost], &[(1, p2pkh(1))], false);
            (
                vec![tx],
                Reject::MissingOrSpent {
                    input: 0,
                    prev_txid: ghost.txid,
                    prev_vout: ghost.vout,
                },
            )
        }
        "vout past the end" => {
            let tx_outputs = chain
                .txs
                .iter()
                .flatten()
                .find(|tx| tx.txid == valid.outpoint.txid)
                .unwrap()
                .outputs
                .len();
            let past = OutPoint {
                txid: valid.outpoint.txid,
                vout: tx_outputs as u32,
            };
            let tx = GenTx::spend(&[valid.outpoint, past], &[(1, p2pkh(2))], true);
            (
                vec![tx],
                Reject::MissingOrSpent {
                    input: 1,
                    prev_txid: past.txid,
                    prev_vout: past.vout,
                },
            )
        }
        "double spend in a block" => {
            let first = GenTx::spend(&[valid.outpoint], &[(1, p2pkh(3))], false);
            let second = GenTx::spend(&[valid.outpoint], &[(2, p2pkh(4))], true);
            (
                vec![first, second],
                Reject::MissingOrSpent {
                    input: 0,
                    prev_txid: valid.outpoint.txid,
                    prev_vout: valid.outpoint.vout,
                },
            )
        }
        "duplicate input" => {
            let tx = GenTx::spend(&[valid.outpoint, valid.outpoint], &[(1, p2pkh(5))], false);
            (vec![tx], Reject::DuplicateInput { input: 1 })
        }
        "immature coinbase" => {
            let young = chain
                .unspent
                .iter()
                .find(|s| s.coinbase && height - s.height == COINBASE_MATURITY - 1)
                .copied()
                .unwrap();
            let ok = GenTx::spend(&[valid.outpoint], &[(1, p2pkh(6))], false);
            let tx = GenTx::spend(&[young.outpoint], &[(1, p2pkh(7))], false);
            (
                vec![ok, tx],
                Reject::PrematureCoinbaseSpend {
                    input: 0,
                    coin_height: young.height,
                },
            )
        }
        "value over MAX_MONEY" => {
            let value = MAX_MONEY as i64 + 1;
            let tx = GenTx::spend(
                &[valid.outpoint],
                &[(1, p2pkh(8)), (value, p2pkh(9))],
                false,
            );
            (vec![tx], Reject::OutputValueOutOfRange { output: 1, value })
        }
        "negative value" => {
            let tx = GenTx::spend(&[valid.outpoint], &[(-1, p2pkh(8))], false);
            (
                vec![tx],
                Reject::OutputValueOutOfRange {
                    output: 0,
                    value: -1,
                },
            )
        }
        "outputs sum over MAX_MONEY" => {
            let half = MAX_MONEY as i64 / 2 + 1;
            let tx = GenTx::spend(
                &[valid.outpoint],
                &[(half, p2pkh(8)), (half, p2pkh(9))],
                false,
            );
            (vec![tx], Reject::OutputTotalTooLarge)
        }
        "inputs below outputs" => {
            let tx = GenTx::spend(
                &[valid.outpoint],
                &[(valid.value as i64 + 1, p2pkh(10))],
                true,
            );
            (
                vec![tx],
                Reject::InputsBelowOutputs {
                    inputs: valid.value,
                    outputs: valid.value + 1,
                },
            )
        }
        "coinbase script of 1 byte" => (
            Vec::new(),
            Reject::Malformed {
                reason: "bad-cb-length",
            },
        ),
        other => panic!("no case {other}"),
    };
    let mut script_sig = height.to_le_bytes().to_vec();
    script_sig.push(0xbb);
    if case == "coinbase script of 1 byte" {
        script_sig.truncate(1);
    }
    chain.extend_with(&script_sig, &[(SUBSIDY as i64, p2pkh(0))], txs);
    reject
}

#[test]
fn a_block_that_breaks_a_rule_is_named_and_the_set_stays_at_its_parent() {
    for (n, case) in [
        "missing",
        "vout past the end",
        "double spend in a block",
        "duplicate input",
        "immature coinbase",
        "value over MAX_MONEY",
        "negative value",
        "outputs sum over MAX_MONEY",
        "inputs below outputs",
        "coinbase script of 1 byte",
    ]
    .into_iter()
    .enumerate()
    {
        let mut chain = valid_chain(10 + n as u64, 110, 4);
        let good = chain.tip();
        let reject = bad_block(&mut chain, case);
        let bad = chain.tip();
        // Blocks on top of the bad one are never reached.
        chain.extend(2);
        let dir = TempDir::new("utxo-bad");
        chain.write_dir(&dir, 40_000, KEY).unwrap();
        let (report, coins) = run(&dir, None);
        assert_eq!(report.height, 110, "{case}");
        assert_eq!(report.hash, chain.builder.blocks[good].hash);
        let failure = report.failure.expect(case);
        let ErrorKind::NotConnected {
            hash,
            height,
            txid,
            reject: got,
        } = failure.kind()
        else {
            panic!("{case}: {failure}");
        };
        assert_eq!(
            (*hash, *height),
            (chain.builder.blocks[bad].hash.0, 111),
            "{case}"
        );
        assert_eq!(got, &reject, "{case}");
        let expected_txid = match case {
            "double spend in a block" | "immature coinbase" => chain.txs[bad][2].txid,
            "coinbase script of 1 byte" => chain.txs[bad][0].txid,
            _ => chain.txs[bad][1].txid,
        };
        assert_eq!(*txid, Some(expected_txid), "{case}");
        let message = failure.to_string();
        assert!(
            message.contains(&format!(
                "block {} at height 111",
                chain.builder.blocks[bad].hash
            )),
            "{message}"
        );
        assert!(message.contains(reject.reason()), "{message}");
        // Whatever the bad block's first transactions did is undone.
        let path = path_to(&chain, good);
        assert_same(&coins, &model(&chain, &path, 110));
    }
}

#[test]
fn a_repeated_coinbase_overwrites_the_coin_it_repeats() {
    // BIP 30's exceptions on main (91,842 and 91,880): Core keeps one coin,
    // at the newer height.
    let mut chain = valid_chain(3, 20, 0);
    let script = [0x51, 0x52, 0x53];
    let outputs = vec![
        (SUBSIDY as i64, vec![0x51]),
        (0, vec![0x6a, 1, 2]),
        (7, vec![0x52]),
    ];
    chain.extend_with(&script, &outputs, Vec::new());
    let first = chain.tip();
    for _ in 0..5 {
        chain.extend(0);
    }
    chain.extend_with(&script, &outputs, Vec::new());
    let second = chain.tip();
    assert_eq!(chain.txs[first][0].txid, chain.txs[second][0].txid);
    chain.extend(0);
    let dir = TempDir::new("utxo-bip30");
    chain.write_dir(&dir, 40_000, KEY).unwrap();
    let (report, coins) = run(&dir, None);
    assert!(report.failure.is_none());
    let path = path_to(&chain, chain.tip());
    assert_same(&coins, &model(&chain, &path, report.height));
    let txid = chain.txs[first][0].txid;
    let coin = coins.get(&OutPoint { txid, vout: 0 }).unwrap();
    assert_eq!((coin.height, coin.coinbase), (27, true));
    assert_eq!(coins.get(&OutPoint { txid, vout: 1 }), None);
    assert_eq!(coins.get(&OutPoint { txid, vout: 2 }).unwrap().height, 27);
    // The repeat adds no coin; below it, the first is there at its own height.
    let (_, before) = run(&dir, Some(26));
    let (_, after) = run(&dir, Some(27));
    assert_eq!(before.len(), after.len());
    assert_eq!(before.get(&OutPoint { txid, vout: 0 }).unwrap().height, 21);
}

#[test]
fn a_torn_record_removes_only_the_blocks_it_cuts_off() {
    let mut chain = valid_chain(4, 130, 5);
    let tip = chain.tip();
    let path = path_to(&chain, tip);
    let dir = TempDir::new("utxo-torn");
    let positions = chain.write_dir(&dir, 40_000, KEY).unwrap();
    let mut rng = Rng::new(5);
    for (lost_height, how) in [(117u32, "magic"), (125, "size")] {
        let (file, offset) = positions[path[lost_height as usize]];
        let name = dir.join(format!("blk{file:05}.dat"));
        let mut bytes = std::fs::read(&name).unwrap();
        let at = offset as usize + if how == "magic" { 1 } else { 5 };
        let keep = bytes.clone();
        bytes[at] ^= rng.range(1, 255) as u8;
        std::fs::write(&name, &bytes).unwrap();
        let (report, coins) = run(&dir, None);
        assert!(report.failure.is_none());
        assert_eq!(report.height, lost_height - 1, "{how}");
        assert_same(&coins, &model(&chain, &path, lost_height - 1));
        std::fs::write(&name, &keep).unwrap();
    }
}

#[test]
fn a_body_changed_under_its_header_stops_the_run_at_its_parent() {
    let mut chain = valid_chain(6, 125, 5);
    let path = path_to(&chain, chain.tip());
    let dir = TempDir::new("utxo-body");
    let positions = chain.write_dir(&dir, 40_000, KEY).unwrap();
    let block = &chain.builder.blocks[path[120]];
    let (file, offset) = positions[path[120]];
    let name = dir.join(format!("blk{file:05}.dat"));
    let mut bytes = std::fs::read(&name).unwrap();
    // The coinbase's version (after the header and a one-byte count): the
    // block still parses, its txid changes.
    assert!(block.bytes[80] < 0xfd);
    let at = offset as usize + 8 + 81;
    bytes[at] ^= 0x40;
    std::fs::write(&name, &bytes).unwrap();
    let (report, coins) = run(&dir, None);
    assert_eq!(report.height, 119);
    let failure = report.failure.unwrap();
    assert!(
        matches!(
            failure.kind(),
            ErrorKind::NotConnected {
                height: 120,
                txid: None,
                reject: Reject::Malformed {
                    reason: "bad-txnmrklroot"
                },
                ..
            }
        ),
        "{failure}"
    );
    assert_same(&coins, &model(&chain, &path, 119));
}

#[test]
fn the_snapshot_holds_the_set_in_core_order_with_its_totals() {
    // More coins than a stats thread takes at once, some sharing a txid.
    let mut rng = Rng::new(8);
    let mut coins = MemoryCoins::new();
    let mut expected = Vec::new();
    while expected.len() < 10_000 {
        let mut txid = [0u8; 32];
        rng.fill(&mut txid);
        for vout in 0..rng.range(1, 3) as u32 {
            let coin = Coin {
                value: rng.below(MAX_MONEY / 10_000),
                height: rng.below(800_000) as u32,
                coinbase: rng.below(10) == 0,
                script: [&[0x00, 0x14][..], &txid[..20]].concat(),
            };
            let outpoint = OutPoint {
                txid,
                vout: vout * 200,
            };
            coins.add(&outpoint, coin.value, coin.code(), &coin.script);
            expected.push((outpoint, coin));
        }
    }
    expected.sort_by(|a, b| a.0.core_cmp(&b.0));
    let mut sequential = UtxoStats::new();
    for (outpoint, coin) in &expected {
        sequential.add(outpoint, coin);
    }
    let dir = TempDir::new("utxo-snapshot");
    let path = dir.join("utxo.dat");
    let base = Network::Regtest.genesis();
    let mut written = 0;
    let stats =
        write_snapshot(&coins, Network::Regtest, base, &path, &mut |n| written += n).unwrap();
    assert_eq!(written, expected.len() as u64);
    assert_eq!(
        (stats.coins, stats.total_amount, stats.bogosize),
        (
            sequential.coins,
            sequential.total_amount,
            sequential.bogosize
        )
    );
    assert_eq!(stats.muhash_hex(), sequential.muhash_hex());
    let reader = SnapshotReader::new(std::fs::File::open(&path).unwrap()).unwrap();
    assert_eq!(reader.metadata().base, base);
    let read: Vec<(OutPoint, Coin)> = reader.map(Result::unwrap).collect();
    assert_eq!(read, expected);
    // Nothing but the snapshot beside it.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
}

/// `connect_each` shows every best-chain block once connected, in height
/// order: its transactions (txids as the generator made them) and, for
/// every input of every transaction but the coinbase, in order, the coin
/// it spent, equal to the output it names as created. An error from the
/// visitor stops the run with it.
#[test]
fn each_block_is_shown_with_the_coin_every_input_spent() {
    let mut chain = valid_chain(7, 150, 8);
    let tip = chain.tip();
    chain.builder.extend_chain(path_to(&chain, tip)[100], 2);
    let dir = TempDir::new("utxo-each");
    chain.write_dir(&dir, 40_000, KEY).unwrap();
    let path = path_to(&chain, tip);
    let mut created: HashMap<OutPoint, Coin> = HashMap::new();
    for &index in &path[1..] {
        let at = chain.builder.blocks[index].height;
        for tx in &chain.txs[index] {
            for (vout, (value, script)) in tx.outputs.iter().enumerate() {
                let coin = Coin {
                    value: *value as u64,
                    height: at,
                    coinbase: tx.coinbase,
                    script: script.clone(),
                };
                let vout = vout as u32;
                created.insert(
                    OutPoint {
                        txid: tx.txid,
                        vout,
                    },
                    coin,
                );
            }
        }
    }

    let files = list_block_files(&[dir.to_path_buf()], None).unwrap();
    let mut output = scan(files, &ScanOptions::default(), &mut |_| {}).unwrap();
    let best = Chain::build(&mut output);
    let mut coins = MemoryCoins::new();
    let (mut shown, mut inputs) = (0u32, 0usize);
    let report = connect_each(&best, &output.files, None, &mut coins, &mut |block| {
        shown += 1;
        let index = path[shown as usize];
        assert_eq!(block.info().height, Some(shown));
        assert_eq!(block.info().hash, chain.builder.blocks[index].hash);
        assert_eq!(block.bytes(), chain.builder.blocks[index].bytes);
        let txids: Vec<[u8; 32]> = block.transactions().map(|(_, txid)| txid).collect();
        let want: Vec<[u8; 32]> = chain.txs[index].iter().map(|tx| tx.txid).collect();
        assert_eq!(txids, want);
        let named: Vec<&OutPoint> = chain.txs[index].iter().flat_map(|tx| &tx.inputs).collect();
        let spent: Vec<(&OutPoint, &Coin)> = block.spent().collect();
        assert_eq!(spent.len(), named.len());
        for ((outpoint, coin), want) in spent.into_iter().zip(named) {
            assert_eq!(outpoint, want);
            assert_eq!(Some(coin), created.get(want), "{want:?}");
        }
        inputs += block.spent().count();
        Ok(())
    })
    .unwrap();
    assert!(report.failure.is_none());
    assert_eq!((report.height, shown), (150, 150));
    assert!(inputs > 300, "{inputs}");

    // The visitor's error stops the run at that block.
    let mut coins = MemoryCoins::new();
    let mut last = 0;
    let e = connect_each(&best, &output.files, None, &mut coins, &mut |block| {
        last = block.info().height.unwrap();
        match last {
            40 => Err(seekless_blocks::Error::from(ErrorKind::HeightPastTip {
                height: 40,
                tip: None,
            })),
            _ => Ok(()),
        }
    })
    .unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::HeightPastTip { .. }), "{e}");
    assert_eq!(last, 40);
}
