//! Where the UTXO set lives while blocks connect: the [`CoinStore`] trait
//! the connect engine uses, and [`MemoryCoins`], the set in memory.
//!
//! The trait is the whole of what connecting needs (add, spend, count, and
//! the coins in Core's order at the end), so a store on disk under a memory
//! budget can take the in-memory one's place without the engine changing.

use crate::coin::{Coin, OutPoint};
use crate::error::{Error, Result};

/// A UTXO set the connect engine can write to.
pub trait CoinStore {
    /// Adds the coin at `outpoint` (value in satoshis, `code` as
    /// [`Coin::code`]: height × 2 + coinbase); returns the coin it replaces,
    /// if one was there.
    fn add(&mut self, outpoint: &OutPoint, value: u64, code: u32, script: &[u8]) -> Option<Coin>;

    /// Removes and returns the coin at `outpoint`, if there is one.
    fn spend(&mut self, outpoint: &OutPoint) -> Option<Coin>;

    /// How many coins the set holds.
    fn len(&self) -> u64;

    /// Whether the set holds no coin.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The error that made the store fail, once: a store on disk that
    /// cannot read or write says so here, and [`connect`](crate::connect)
    /// checks after each block and stops with it. A store that failed
    /// stays failed (its set is no longer what the calls made it).
    fn take_error(&mut self) -> Option<Error> {
        None
    }

    /// Calls `visit` with every coin in Core's order ([`OutPoint::core_cmp`]),
    /// stopping at its first error.
    fn visit_in_core_order(
        &self,
        visit: &mut dyn FnMut(&OutPoint, &Coin) -> Result<()>,
    ) -> Result<()>;
}

/// Bytes of an outpoint as a key: the txid, then the index little-endian.
pub(super) type Key = [u8; 36];

/// Bytes of a coin as stored: value (8, little-endian), code (4), script.
pub(super) const COIN_HEADER: usize = 12;

pub(super) fn key(outpoint: &OutPoint) -> Key {
    let mut key = [0u8; 36];
    key[..32].copy_from_slice(&outpoint.txid);
    key[32..].copy_from_slice(&outpoint.vout.to_le_bytes());
    key
}

pub(super) fn outpoint(key: &Key) -> OutPoint {
    OutPoint {
        txid: key[..32].try_into().expect("32 bytes"),
        vout: u32::from_le_bytes(key[32..].try_into().expect("4 bytes")),
    }
}

/// Fills `coin` from its stored bytes, reusing its script's allocation.
pub(super) fn unpack_into(bytes: &[u8], coin: &mut Coin) {
    let code = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    coin.value = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
    coin.height = code >> 1;
    coin.coinbase = code & 1 == 1;
    coin.script.clear();
    coin.script.extend_from_slice(&bytes[COIN_HEADER..]);
}

fn unpack(bytes: &[u8]) -> Coin {
    let mut coin = Coin {
        value: 0,
        height: 0,
        coinbase: false,
        script: Vec::with_capacity(bytes.len() - COIN_HEADER),
    };
    unpack_into(bytes, &mut coin);
    coin
}

/// An outpoint as [`MemoryCoins`]' key: the txid as four words, so
/// comparing two is four word compares, not a call to `memcmp`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Slot {
    txid: [u64; 4],
    vout: u32,
}

impl Slot {
    fn of(outpoint: &OutPoint) -> Slot {
        let word = |i: usize| {
            u64::from_le_bytes(outpoint.txid[i * 8..i * 8 + 8].try_into().expect("8 bytes"))
        };
        Slot {
            txid: [word(0), word(1), word(2), word(3)],
            vout: outpoint.vout,
        }
    }

    fn outpoint(&self) -> OutPoint {
        let mut txid = [0u8; 32];
        for (bytes, word) in txid.chunks_exact_mut(8).zip(self.txid) {
            bytes.copy_from_slice(&word.to_le_bytes());
        }
        OutPoint {
            txid,
            vout: self.vout,
        }
    }
}

/// The UTXO set in memory: a hash table from an outpoint to one
/// allocation holding value, height, coinbase flag and script. 120 to 160
/// bytes a coin with mainnet's script lengths (a 57-byte slot, the
/// outpoint, a pointer and a control byte, in a table 44 to 87% full, and
/// an allocation of 12 bytes and the script, 48 bytes for most): see
/// [`MemoryCoins::memory_bytes`].
/// The table hashes with hashbrown's default hasher, seeded per process:
/// txids are chosen by whoever makes a transaction, so a fixed hash of
/// their bytes could be ground into collisions.
#[derive(Debug, Default)]
pub struct MemoryCoins {
    map: hashbrown::HashMap<Slot, Box<[u8]>>,
    heap: usize,
}

impl MemoryCoins {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes the set takes: the table, and the coins' allocations (their
    /// requested sizes; the allocator rounds each up a little).
    pub fn memory_bytes(&self) -> usize {
        self.map.allocation_size() + self.heap
    }

    /// The coin at `outpoint`, if there is one.
    pub fn get(&self, outpoint: &OutPoint) -> Option<Coin> {
        self.map.get(&Slot::of(outpoint)).map(|bytes| unpack(bytes))
    }

    /// Every coin, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (OutPoint, Coin)> + '_ {
        self.map.iter().map(|(k, v)| (k.outpoint(), unpack(v)))
    }
}

impl CoinStore for MemoryCoins {
    fn add(&mut self, outpoint: &OutPoint, value: u64, code: u32, script: &[u8]) -> Option<Coin> {
        let mut bytes = Vec::with_capacity(COIN_HEADER + script.len());
        bytes.extend_from_slice(&value.to_le_bytes());
        bytes.extend_from_slice(&code.to_le_bytes());
        bytes.extend_from_slice(script);
        self.heap += bytes.len();
        let old = self
            .map
            .insert(Slot::of(outpoint), bytes.into_boxed_slice())?;
        self.heap -= old.len();
        Some(unpack(&old))
    }

    fn spend(&mut self, outpoint: &OutPoint) -> Option<Coin> {
        let old = self.map.remove(&Slot::of(outpoint))?;
        self.heap -= old.len();
        Some(unpack(&old))
    }

    fn len(&self) -> u64 {
        self.map.len() as u64
    }

    fn visit_in_core_order(
        &self,
        visit: &mut dyn FnMut(&OutPoint, &Coin) -> Result<()>,
    ) -> Result<()> {
        let mut entries: Vec<(OutPoint, &[u8])> = self
            .map
            .iter()
            .map(|(k, v)| (k.outpoint(), &v[..]))
            .collect();
        entries.sort_unstable_by(|a, b| a.0.core_cmp(&b.0));
        let mut coin = Coin {
            value: 0,
            height: 0,
            coinbase: false,
            script: Vec::new(),
        };
        for (outpoint, bytes) in entries {
            unpack_into(bytes, &mut coin);
            visit(&outpoint, &coin)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_replace_spend_and_order() {
        let mut coins = MemoryCoins::new();
        let at = |t: u8, vout| OutPoint {
            txid: [t; 32],
            vout,
        };
        assert_eq!(coins.add(&at(2, 0), 5, 7, &[0x51]), None);
        assert_eq!(coins.add(&at(1, 200), 6, 8, &[0x52, 0x53]), None);
        assert_eq!(coins.add(&at(1, 3), 7, 9, &[]), None);
        let old = coins.add(&at(2, 0), 50, 21, &[0x54]).unwrap();
        assert_eq!((old.value, old.height, old.coinbase), (5, 3, true));
        assert_eq!(coins.len(), 3);
        let mut seen = Vec::new();
        coins
            .visit_in_core_order(&mut |op, coin| {
                seen.push((*op, coin.clone()));
                Ok(())
            })
            .unwrap();
        let order: Vec<OutPoint> = seen.iter().map(|s| s.0).collect();
        assert_eq!(order, [at(1, 3), at(1, 200), at(2, 0)]);
        assert_eq!(seen[1].1.script, [0x52, 0x53]);
        assert_eq!((seen[2].1.value, seen[2].1.height), (50, 10));
        assert_eq!(coins.spend(&at(1, 3)).unwrap().value, 7);
        assert_eq!(coins.spend(&at(1, 3)), None);
        assert_eq!(coins.len(), 2);
        assert_eq!(coins.heap, 2 * COIN_HEADER + 3);
    }
}
