//! A found transaction as Core's `getrawtransaction TXID 1` shows it: the
//! same field names in the same order, amounts in BTC with 8 decimals as
//! Core writes them; scripts as hex only (no `asm`, address or type), and
//! the block's `height` and the transaction's `position` in it added.

use std::fmt::Write;

use super::lookup::{FoundTx, IndexedBlock};
use crate::error::Result;
use crate::hash::BlockHash;
use crate::tx::Transaction;

fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(2 * bytes.len());
    for byte in bytes {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// Satoshis as Core's `ValueFromAmount` writes them: `-0.00000001`, `50.00000000`.
fn amount(value: i64) -> String {
    let sign = if value < 0 { "-" } else { "" };
    let abs = value.unsigned_abs();
    format!("{sign}{}.{:08}", abs / 100_000_000, abs % 100_000_000)
}

/// Renders `found` (in `block`, with the index's tip at `tip_height`) as one
/// line of JSON.
pub fn tx_json(found: &FoundTx, block: &IndexedBlock, tip_height: u32) -> Result<String> {
    let (tx, _) = Transaction::parse(&found.raw, 0)?;
    let size = found.raw.len();
    let weight = tx.stripped_size() * 3 + size;
    let mut out = String::new();
    let _ = write!(
        out,
        r#"{{"txid":"{}","hash":"{}","version":{},"size":{size},"vsize":{},"weight":{weight},"locktime":{},"vin":["#,
        BlockHash(tx.txid()),
        BlockHash(tx.wtxid()),
        tx.version(),
        weight.div_ceil(4),
        tx.lock_time(),
    );
    let coinbase = tx.is_coinbase();
    let witnesses: Vec<Vec<&[u8]>> = tx.witnesses().collect();
    for (i, input) in tx.inputs().enumerate() {
        if i > 0 {
            out.push(',');
        }
        if coinbase {
            let _ = write!(out, r#"{{"coinbase":"{}""#, hex(input.script_sig));
        } else {
            let _ = write!(
                out,
                r#"{{"txid":"{}","vout":{},"scriptSig":{{"hex":"{}"}}"#,
                BlockHash(input.prev_txid),
                input.prev_index,
                hex(input.script_sig)
            );
        }
        if let Some(items) = witnesses.get(i).filter(|items| !items.is_empty()) {
            let items: Vec<String> = items
                .iter()
                .map(|item| format!("\"{}\"", hex(item)))
                .collect();
            let _ = write!(out, r#","txinwitness":[{}]"#, items.join(","));
        }
        let _ = write!(out, r#","sequence":{}}}"#, input.sequence);
    }
    out.push_str(r#"],"vout":["#);
    for (n, output) in tx.outputs().enumerate() {
        if n > 0 {
            out.push(',');
        }
        let _ = write!(
            out,
            r#"{{"value":{},"n":{n},"scriptPubKey":{{"hex":"{}"}}}}"#,
            amount(output.value),
            hex(output.script_pubkey)
        );
    }
    let _ = write!(
        out,
        r#"],"hex":"{}","blockhash":"{}","height":{},"position":{},"confirmations":{},"time":{},"blocktime":{}}}"#,
        hex(&found.raw),
        block.hash,
        block.height,
        found.location.position,
        tip_height.saturating_sub(block.height) as u64 + 1,
        block.time,
        block.time,
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::amount;

    #[test]
    fn amounts_as_core_writes_them() {
        assert_eq!(amount(0), "0.00000000");
        assert_eq!(amount(5_000_000_000), "50.00000000");
        assert_eq!(amount(1), "0.00000001");
        assert_eq!(amount(-1), "-0.00000001");
        assert_eq!(amount(i64::MIN), "-92233720368.54775808");
    }
}
