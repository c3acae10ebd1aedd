//! What `gettxoutsetinfo` says about a UTXO set, gathered coin by coin.

use crate::coin::{Coin, OutPoint};
use crate::muhash::MuHash3072;

/// Totals over a UTXO set, as Core's `gettxoutsetinfo` reports them with
/// `hash_type` `muhash`: give it every coin ([`UtxoStats::add`]), in any
/// order.
#[derive(Clone, Debug, Default)]
pub struct UtxoStats {
    /// The number of coins (`txouts`).
    pub coins: u64,
    /// The sum of their values in satoshis (`total_amount`, shown by Core
    /// in bitcoin); wide enough that no input overflows it.
    pub total_amount: u128,
    /// Core's `bogosize`: per coin 32 + 4 + 4 + 8 + 2 bytes plus the
    /// script's length, a size independent of the database's encoding.
    pub bogosize: u64,
    /// The set's MuHash3072 (`muhash`).
    pub muhash: MuHash3072,
}

impl UtxoStats {
    /// Nothing counted yet.
    pub fn new() -> UtxoStats {
        UtxoStats::default()
    }

    /// Counts one coin.
    pub fn add(&mut self, outpoint: &OutPoint, coin: &Coin) {
        self.coins += 1;
        self.total_amount += coin.value as u128;
        self.bogosize += 50 + coin.script.len() as u64;
        self.muhash.insert_coin(outpoint, coin);
    }

    /// The `muhash` as Core prints it: the hash's bytes reversed, in hex.
    pub fn muhash_hex(&self) -> String {
        let mut hash = self.muhash.finalize();
        hash.reverse();
        crate::hex::to_hex(&hash)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals() {
        let mut stats = UtxoStats::new();
        assert_eq!(stats.muhash_hex().len(), 64);
        let empty = stats.muhash_hex();
        let coin = Coin {
            value: 3,
            height: 1,
            coinbase: false,
            script: vec![0x51],
        };
        stats.add(
            &OutPoint {
                txid: [1; 32],
                vout: 0,
            },
            &coin,
        );
        stats.add(
            &OutPoint {
                txid: [1; 32],
                vout: 1,
            },
            &coin,
        );
        assert_eq!(
            (stats.coins, stats.total_amount, stats.bogosize),
            (2, 6, 102)
        );
        assert_ne!(stats.muhash_hex(), empty);
    }
}
