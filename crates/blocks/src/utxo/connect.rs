//! Connecting one block to the UTXO set as Core's `ConnectBlock` does with
//! scripts not executed (as under `assumevalid`): the block-level checks of
//! `CheckBlock` and `CheckTransaction` first, then each transaction in
//! order, its inputs spending coins (`CheckTxInputs`) and its outputs
//! becoming coins (`AddCoins`). Every change is recorded, so a block that
//! breaks a rule half-way is undone and the set stays at its parent.

use crate::block::merkle_root;
use crate::chain::BlockInfo;
use crate::coin::{Coin, OutPoint, is_unspendable};
use crate::error::Reject;
use crate::header::HEADER_LEN;
use crate::tx::{Cursor, Transaction};
use crate::utxo::store::CoinStore;

use crate::compress::MAX_MONEY;

/// Core's `COINBASE_MATURITY`: blocks before a coinbase output may be spent.
pub const COINBASE_MATURITY: u32 = 100;

/// A rule broken: the transaction (when one) and the rule.
pub(crate) type Broken = (Option<[u8; 32]>, Reject);

/// One change made to the set: kept until the block is connected, and in
/// a chainstate directory as the block's undo data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Change {
    /// A coin spent (to put back).
    Spent(OutPoint, Coin),
    /// A coin added, and the coin it replaced (a duplicate coinbase).
    Added(OutPoint, Option<Coin>),
}

/// What connecting a block did, for the caller's counts.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct BlockCounts {
    pub(crate) transactions: u64,
}

/// Where each transaction of a checked block starts, and its txid: what
/// [`check_block`] hands to [`connect_checked`].
pub(crate) type CheckedTxs = Vec<(usize, [u8; 32])>;

/// Connects `block` at `height` to `coins`, its transactions as
/// [`check_block`] found them; on a broken rule, `coins` is left as it was.
/// `changes` (cleared first, its room reused block after block) ends
/// holding what the block did, in order.
pub(crate) fn connect_checked(
    block: &[u8],
    txs: &CheckedTxs,
    height: u32,
    coins: &mut (impl CoinStore + ?Sized),
    changes: &mut Vec<Change>,
) -> Result<BlockCounts, Broken> {
    changes.clear();
    let result = txs.iter().try_for_each(|(start, txid)| {
        // Parsed once already by check_block: it cannot fail here.
        let (tx, _) = Transaction::parse(&block[*start..], *start)
            .map_err(|e| (Some(*txid), unparsable(e)))?;
        connect_tx(&tx, txid, height, coins, changes)
    });
    if let Err(broken) = result {
        undo(changes.drain(..), coins);
        return Err(broken);
    }
    Ok(BlockCounts {
        transactions: txs.len() as u64,
    })
}

/// [`check_block`], then [`connect_checked`]: a block read on the thread
/// that connects it.
pub(crate) fn connect_block(
    block: &[u8],
    height: u32,
    coins: &mut (impl CoinStore + ?Sized),
    changes: &mut Vec<Change>,
) -> Result<BlockCounts, Broken> {
    changes.clear();
    let txs = check_block(block)?;
    connect_checked(block, &txs, height, coins, changes)
}

/// A block just connected, as [`connect_each`](crate::connect_each) shows
/// it: where it is, its transactions, and the coin each of their inputs
/// spent (what blocks_iterator calls prevouts; Core's undo data).
#[derive(Debug)]
pub struct ConnectedBlock<'a> {
    pub(crate) info: BlockInfo,
    pub(crate) bytes: &'a [u8],
    pub(crate) txs: &'a [(usize, [u8; 32])],
    pub(crate) changes: &'a [Change],
}

impl<'a> ConnectedBlock<'a> {
    /// The block as the chain knows it (height, hash, file and offset).
    pub fn info(&self) -> &BlockInfo {
        &self.info
    }

    /// Its serialization (XOR undone), header first.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Its transactions in order, each with its txid.
    pub fn transactions(&self) -> impl Iterator<Item = (Transaction<'a>, [u8; 32])> + '_ {
        let bytes = self.bytes;
        // Each parsed when the block was checked: none fails here.
        self.txs.iter().filter_map(move |(start, txid)| {
            let (tx, _) = Transaction::parse(&bytes[*start..], *start).ok()?;
            Some((tx, *txid))
        })
    }

    /// The coin each input spent, with the outpoint it was at: every input
    /// of every transaction but the coinbase, in the block's order.
    pub fn spent(&self) -> impl Iterator<Item = (&'a OutPoint, &'a Coin)> + '_ {
        self.changes.iter().filter_map(|change| match change {
            Change::Spent(outpoint, coin) => Some((outpoint, coin)),
            Change::Added(..) => None,
        })
    }
}

fn unparsable(e: crate::error::Error) -> Reject {
    Reject::Unparsable {
        detail: e.to_string(),
    }
}

/// `CheckBlock` without proof of work (the scan checked it) and without
/// the witness commitment (`--verify` checks it): the transactions parse,
/// the first and only the first is a coinbase, the merkle root matches and
/// the tree is not mutated, and each transaction passes `CheckTransaction`.
/// Needs no coin, so it runs ahead of connecting (on the reader thread).
pub(crate) fn check_block(block: &[u8]) -> Result<CheckedTxs, Broken> {
    let unparsable = |e| (None, unparsable(e));
    let malformed = |reason| (None, Reject::Malformed { reason });
    let mut c = Cursor::new(block, 0);
    c.take(HEADER_LEN, "block header").map_err(unparsable)?;
    let count = c.count(10, "transaction count").map_err(unparsable)?;
    let mut txs = Vec::with_capacity(count as usize);
    for i in 0..count {
        let at = c.pos();
        let (tx, len) = Transaction::parse(&block[at..], at).map_err(unparsable)?;
        c.take(len, "transaction").map_err(unparsable)?;
        match (i, tx.is_coinbase()) {
            (0, false) => return Err(malformed("bad-cb-missing")),
            (1.., true) => return Err(malformed("bad-cb-multiple")),
            _ => {}
        }
        let txid = tx.txid();
        check_transaction(&tx).map_err(|reject| (Some(txid), reject))?;
        txs.push((at, txid));
    }
    if txs.is_empty() {
        return Err(malformed("bad-cb-missing"));
    }
    if c.remaining() != 0 {
        return Err(malformed("bad-blk-length"));
    }
    let header_root: [u8; 32] = block[36..68].try_into().expect("32 bytes");
    let (root, mutated) = merkle_root(txs.iter().map(|(_, txid)| *txid).collect());
    if mutated {
        return Err(malformed("bad-txns-duplicate"));
    }
    if root != header_root {
        return Err(malformed("bad-txnmrklroot"));
    }
    Ok(txs)
}

/// `CheckTransaction`'s rules on amounts and inputs: inputs and outputs
/// present, a coinbase's script of 2 to 100 bytes, each output's value and
/// their sum in `0..=MAX_MONEY`, no input spent twice.
fn check_transaction(tx: &Transaction<'_>) -> Result<(), Reject> {
    if tx.input_count() == 0 {
        return Err(Reject::Malformed {
            reason: "bad-txns-vin-empty",
        });
    }
    if tx.output_count() == 0 {
        return Err(Reject::Malformed {
            reason: "bad-txns-vout-empty",
        });
    }
    if tx.is_coinbase()
        && !tx
            .inputs()
            .next()
            .is_some_and(|input| (2..=100).contains(&input.script_sig.len()))
    {
        return Err(Reject::Malformed {
            reason: "bad-cb-length",
        });
    }
    let mut total = 0u64;
    for (output, out) in tx.outputs().enumerate() {
        if out.value < 0 || out.value as u64 > MAX_MONEY {
            return Err(Reject::OutputValueOutOfRange {
                output: output as u32,
                value: out.value,
            });
        }
        total += out.value as u64;
        if total > MAX_MONEY {
            return Err(Reject::OutputTotalTooLarge);
        }
    }
    if tx.input_count() > 1 {
        let mut spent: Vec<([u8; 32], u32, u32)> = tx
            .inputs()
            .enumerate()
            .map(|(i, input)| (input.prev_txid, input.prev_index, i as u32))
            .collect();
        spent.sort_unstable();
        if let Some(pair) = spent
            .windows(2)
            .find(|w| w[0].0 == w[1].0 && w[0].1 == w[1].1)
        {
            return Err(Reject::DuplicateInput {
                input: pair[0].2.max(pair[1].2),
            });
        }
    }
    Ok(())
}

/// Connects one transaction: spends its inputs (unless a coinbase), checks
/// `CheckTxInputs`' rules, adds its spendable outputs.
fn connect_tx(
    tx: &Transaction<'_>,
    txid: &[u8; 32],
    height: u32,
    coins: &mut (impl CoinStore + ?Sized),
    changes: &mut Vec<Change>,
) -> Result<(), Broken> {
    let broken = |reject| (Some(*txid), reject);
    let coinbase = tx.is_coinbase();
    if !coinbase {
        let mut value_in = 0u64;
        for (i, input) in tx.inputs().enumerate() {
            let input_index = i as u32;
            let prev = OutPoint {
                txid: input.prev_txid,
                vout: input.prev_index,
            };
            let Some(coin) = coins.spend(&prev) else {
                return Err(broken(Reject::MissingOrSpent {
                    input: input_index,
                    prev_txid: prev.txid,
                    prev_vout: prev.vout,
                }));
            };
            let (coin_height, coin_coinbase, coin_value) = (coin.height, coin.coinbase, coin.value);
            changes.push(Change::Spent(prev, coin));
            if coin_coinbase && height.saturating_sub(coin_height) < COINBASE_MATURITY {
                return Err(broken(Reject::PrematureCoinbaseSpend {
                    input: input_index,
                    coin_height,
                }));
            }
            value_in += coin_value;
            if coin_value > MAX_MONEY || value_in > MAX_MONEY {
                return Err(broken(Reject::InputValuesOutOfRange { input: input_index }));
            }
        }
        // check_transaction bounded every value and the sum.
        let value_out: u64 = tx.outputs().map(|o| o.value as u64).sum();
        if value_in < value_out {
            return Err(broken(Reject::InputsBelowOutputs {
                inputs: value_in,
                outputs: value_out,
            }));
        }
    }
    let code = (height << 1) | coinbase as u32;
    for (vout, output) in tx.outputs().enumerate() {
        if is_unspendable(output.script_pubkey) {
            continue;
        }
        let outpoint = OutPoint {
            txid: *txid,
            vout: vout as u32,
        };
        let replaced = coins.add(&outpoint, output.value as u64, code, output.script_pubkey);
        let exists = replaced.is_some() && !coinbase;
        changes.push(Change::Added(outpoint, replaced));
        if exists {
            return Err(broken(Reject::OutputExists {
                output: vout as u32,
            }));
        }
    }
    Ok(())
}

/// Puts back what `changes` changed, last first; false when the set does
/// not hold what they say (a coin to remove missing, or one to put back
/// there already): undo data that is not this set's.
pub(crate) fn undo(
    changes: impl DoubleEndedIterator<Item = Change>,
    coins: &mut (impl CoinStore + ?Sized),
) -> bool {
    let mut matched = true;
    for change in changes.rev() {
        matched &= match change {
            Change::Spent(outpoint, coin) => coins
                .add(&outpoint, coin.value, coin.code(), &coin.script)
                .is_none(),
            Change::Added(outpoint, None) => coins.spend(&outpoint).is_some(),
            Change::Added(outpoint, Some(coin)) => coins
                .add(&outpoint, coin.value, coin.code(), &coin.script)
                .is_some(),
        };
    }
    matched
}
