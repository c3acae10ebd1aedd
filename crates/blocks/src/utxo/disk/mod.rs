//! The UTXO set on disk under a memory budget: [`DiskCoins`].
//!
//! Coins first go to a write-back cache in memory (as Core's `dbcache`):
//! most outputs are spent young, and a coin added and spent between two
//! flushes never reaches the disk. When the cache would pass its budget,
//! all of it is flushed, partition by partition, into 256 partition files
//! (`pages.rs`), one for each value of the txid's first byte, so that at
//! the end each partition can be read and sorted in turn into Core's order
//! without sorting the whole set in memory. Inside a partition a keyed
//! hash (seeded per run) picks the page: txids are chosen by whoever makes
//! a transaction, and grinding them gains nothing against a key they do
//! not know. On disk a coin is Core's compressed coin (`compress.rs`).

mod file_at;
mod journal;
mod kept;
mod pages;
mod tip;

use std::collections::hash_map::RandomState;
use std::fs::{self, File};
use std::hash::{BuildHasher, Hasher};
use std::path::{Path, PathBuf};

use file_at::{read_exact_at, write_all_at};
use journal::JournalWriter;
use pages::{Change, INLINE_MAX, Key, PAGE, POINTER, POINTER_LEN, Pages};
use siphasher::sip::SipHasher13;

#[cfg(feature = "test-util")]
pub(crate) use journal::{Journal, read_journal};
pub(crate) use kept::{KEPT_FILES, TipId, sync_dir};
#[cfg(feature = "test-util")]
pub(crate) use tip::Tip;

use crate::coin::{Coin, OutPoint};
use crate::error::{Error, Result};
use crate::utxo::store::{COIN_HEADER, CoinStore, key, outpoint, unpack_into};

/// Partitions: one per value of the txid's first byte.
const PARTITIONS: usize = 256;

/// Bytes the cache may take past a budget smaller than this: its 256
/// tables at their smallest (a table once used keeps its allocation).
#[cfg(test)]
const MIN_TABLES: u64 = (PARTITIONS * 256) as u64;

/// A coin in the cache is not on disk: spending it forgets it.
const FRESH: u8 = 0;
/// A coin in the cache replaces one on disk: flushing overwrites it.
const DIRTY: u8 = 1;
/// A coin on disk was spent: flushing deletes it.
const SPENT: u8 = 2;

/// A cache entry: where the coin's bytes are in the arena, and its state.
#[derive(Clone, Copy, Debug)]
struct Slot {
    at: u32,
    len: u16,
    state: u8,
}

/// The UTXO set in files under a directory it creates and removes when
/// dropped, with a cache in memory bounded by a budget (the cache's hash
/// tables and the arena of its coins' bytes; the files are read and
/// written with `pread`/`pwrite`, so what the kernel caches of them is the
/// page cache's, reclaimable, not the process's).
///
/// An I/O error does not stop an operation of [`CoinStore`], which cannot
/// fail: the store stops using the disk and [`CoinStore::take_error`]
/// returns the error, which [`connect`](crate::connect) checks after each
/// block.
#[derive(Debug)]
pub struct DiskCoins {
    dir: PathBuf,
    budget: u64,
    /// SipHash-1-3 keys placing coins in pages: random for a set of one
    /// run, kept in the tip record for a set kept between runs.
    keys: [u64; 2],
    /// The set is kept between runs (a chainstate directory): flushes are
    /// commits, through the journal, at block boundaries; the directory
    /// stays.
    kept: bool,
    /// A kept set's cache passed its budget: the next block boundary
    /// commits.
    full: bool,
    cache: Vec<hashbrown::HashMap<Key, Slot>>,
    /// Bytes of the cache's tables.
    tables: u64,
    arena: Vec<u8>,
    parts: Vec<Option<Pages>>,
    overflow: Option<(File, u64)>,
    len: u64,
    error: Option<Error>,
    /// An error was met: the set is no longer what the calls made it.
    failed: bool,
    flushes: u64,
    /// A coin being decoded or encoded.
    coin: Coin,
}

impl std::fmt::Debug for Pages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pages")
            .field("count", &self.count())
            .finish()
    }
}

fn empty_coin() -> Coin {
    Coin {
        value: 0,
        height: 0,
        coinbase: false,
        script: Vec::new(),
    }
}

impl DiskCoins {
    /// An empty set whose files live in `dir`, which must not exist: it is
    /// created, and removed with everything in it when the set is dropped.
    /// `budget`: bytes of memory for the cache.
    pub fn create(dir: &Path, budget: u64) -> Result<Self> {
        fs::create_dir(dir).map_err(|e| Error::io(dir, "create", e))?;
        Ok(Self::empty(dir, budget, random_keys(), false))
    }

    /// A set of no coins over `dir`, placing coins by `keys`.
    fn empty(dir: &Path, budget: u64, keys: [u64; 2], kept: bool) -> Self {
        DiskCoins {
            dir: dir.to_path_buf(),
            budget,
            keys,
            kept,
            full: false,
            cache: (0..PARTITIONS).map(|_| hashbrown::HashMap::new()).collect(),
            tables: 0,
            arena: Vec::new(),
            parts: (0..PARTITIONS).map(|_| None).collect(),
            overflow: None,
            len: 0,
            error: None,
            failed: false,
            flushes: 0,
            coin: empty_coin(),
        }
    }

    /// The budget `blocks utxo` takes when none is given: half of the
    /// machine's memory, at most 4 GiB (1 GiB where the machine's memory
    /// cannot be read), as `pwned prepare` budgets its buffers.
    pub fn default_budget() -> u64 {
        const AT_MOST: u64 = 4 << 30;
        let total = fs::read_to_string("/proc/meminfo").ok().and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024)
        });
        total.map_or(1 << 30, |t| (t / 2).min(AT_MOST))
    }

    /// Bytes of memory the cache takes now (its tables and its arena).
    pub fn memory_bytes(&self) -> u64 {
        self.tables + self.arena.capacity() as u64
    }

    /// Coins in the cache now (spent coins still to delete on disk too).
    pub fn cached(&self) -> u64 {
        self.cache.iter().map(|c| c.len() as u64).sum()
    }

    /// Bytes of the files on disk.
    pub fn disk_bytes(&self) -> u64 {
        let pages: u64 = self.parts.iter().flatten().map(Pages::file_bytes).sum();
        pages + self.overflow.as_ref().map_or(0, |o| o.1)
    }

    /// Times the cache was written out.
    pub fn flushes(&self) -> u64 {
        self.flushes
    }

    fn hash(&self, key: &[u8]) -> u64 {
        sip(self.keys, key)
    }

    /// Flushes the cache if `bytes` more in the arena and an entry more in
    /// partition `p`'s table could pass the budget.
    fn make_room(&mut self, p: usize, bytes: usize) -> Result<()> {
        let table = &self.cache[p];
        let table_growth = if table.len() == table.capacity() {
            table.allocation_size().max(256) as u64
        } else {
            0
        };
        let arena = (self.arena.len() + bytes).max(self.arena.capacity()) as u64;
        let arena_growth = if self.arena.len() + bytes > self.arena.capacity() {
            arena
        } else {
            0
        };
        let total = self.tables + table_growth + arena + arena_growth;
        if (total > self.budget && self.cached() > 0) || arena > u32::MAX as u64 {
            if self.kept {
                // A kept set commits whole blocks only: at the next
                // boundary (a block adds well under the arena's 4 GiB).
                self.full = true;
            } else {
                self.flush(None)?;
            }
        }
        Ok(())
    }

    /// Inserts `slot` for `key` into partition `p`'s table, counting the
    /// table's growth.
    fn insert(&mut self, p: usize, key: Key, slot: Slot) {
        let table = &mut self.cache[p];
        let before = table.allocation_size() as u64;
        table.insert(key, slot);
        self.tables = self.tables + table.allocation_size() as u64 - before;
    }

    /// Appends a coin's raw bytes to the arena.
    fn stash(&mut self, value: u64, code: u32, script: &[u8]) -> (u32, u16) {
        let at = self.arena.len() as u32;
        self.arena.extend_from_slice(&value.to_le_bytes());
        self.arena.extend_from_slice(&code.to_le_bytes());
        self.arena.extend_from_slice(script);
        (at, (COIN_HEADER + script.len()) as u16)
    }

    fn cached_coin(&self, slot: Slot) -> Coin {
        let mut coin = empty_coin();
        unpack_into(
            &self.arena[slot.at as usize..slot.at as usize + slot.len as usize],
            &mut coin,
        );
        coin
    }

    /// The coin at `key` on disk.
    fn load(&self, key: &Key) -> Result<Option<Coin>> {
        let Some(part) = &self.parts[key[0] as usize] else {
            return Ok(None);
        };
        let mut page = [0u8; PAGE];
        part.get(key, self.hash(key), &mut page, |field, data| {
            let mut coin = empty_coin();
            self.decode(field, data, &mut coin)?;
            Ok(coin)
        })
    }

    /// Decodes a record's data (a compressed coin, or a pointer to one).
    fn decode(&self, field: u16, data: &[u8], coin: &mut Coin) -> Result<()> {
        let bytes;
        let data = if field & POINTER != 0 {
            let offset = u64::from_le_bytes(data[..8].try_into().expect("8 bytes"));
            let len = u32::from_le_bytes(data[8..12].try_into().expect("4 bytes"));
            let path = self.dir.join("overflow");
            let Some((file, end)) = &self.overflow else {
                return Err(corrupt(&path, offset));
            };
            if offset.checked_add(len as u64).is_none_or(|e| e > *end) {
                return Err(corrupt(&path, offset));
            }
            let mut read = vec![0u8; len as usize];
            read_exact_at(file, &mut read, offset).map_err(|e| Error::io(&path, "read", e))?;
            bytes = read;
            &bytes[..]
        } else {
            data
        };
        *coin = Coin::read_compressed(data, 0)?.0;
        Ok(())
    }

    /// Writes the cache out: each partition's changes sorted by page, in
    /// place or into `journal`.
    fn flush(&mut self, mut journal: Option<&mut JournalWriter>) -> Result<()> {
        self.flushes += 1;
        let mut changes = Vec::new();
        let mut data = Vec::new();
        let mut coin = std::mem::replace(&mut self.coin, empty_coin());
        for p in 0..PARTITIONS {
            if self.cache[p].is_empty() {
                continue;
            }
            changes.clear();
            data.clear();
            let mut table = std::mem::take(&mut self.cache[p]);
            for (key, slot) in table.drain() {
                let hash = self.hash(&key);
                if slot.state == SPENT {
                    changes.push(Change {
                        hash,
                        key,
                        record: None,
                    });
                    continue;
                }
                unpack_into(
                    &self.arena[slot.at as usize..slot.at as usize + slot.len as usize],
                    &mut coin,
                );
                let at = data.len();
                coin.write_compressed(&mut data);
                let mut field = (data.len() - at) as u16;
                if data.len() - at > INLINE_MAX {
                    let offset = self.spill(&data[at..])?;
                    let len = (data.len() - at) as u32;
                    data.truncate(at);
                    data.extend_from_slice(&offset.to_le_bytes());
                    data.extend_from_slice(&len.to_le_bytes());
                    field = POINTER | POINTER_LEN as u16;
                }
                changes.push(Change {
                    hash,
                    key,
                    record: Some((at as u32, field)),
                });
            }
            self.cache[p] = table;
            changes.sort_unstable_by_key(|c| c.hash);
            if self.parts[p].is_none() {
                let path = self.dir.join(format!("part-{p:02x}"));
                self.parts[p] = Some(Pages::create(path, p as u8, self.kept)?);
            }
            let keys = self.keys;
            let part = self.parts[p].as_mut().expect("created above");
            part.apply(
                &changes,
                &data,
                &|key| sip(keys, key),
                journal.as_deref_mut(),
            )?;
        }
        self.arena.clear();
        self.coin = coin;
        Ok(())
    }

    /// Appends a long coin to the overflow file; returns its offset.
    fn spill(&mut self, bytes: &[u8]) -> Result<u64> {
        let path = self.dir.join("overflow");
        if self.overflow.is_none() {
            let file = File::options()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)
                .map_err(|e| Error::io(&path, "create", e))?;
            self.overflow = Some((file, 0));
        }
        let (file, end) = self.overflow.as_mut().expect("opened above");
        let offset = *end;
        write_all_at(file, bytes, offset).map_err(|e| Error::io(&path, "write", e))?;
        *end += bytes.len() as u64;
        Ok(offset)
    }

    fn try_add(
        &mut self,
        outpoint: &OutPoint,
        value: u64,
        code: u32,
        script: &[u8],
    ) -> Result<Option<Coin>> {
        let key = key(outpoint);
        let p = key[0] as usize;
        self.make_room(p, COIN_HEADER + script.len())?;
        let (replaced, state) = match self.cache[p].get(&key).copied() {
            Some(slot) if slot.state == SPENT => (None, DIRTY),
            Some(slot) => (Some(self.cached_coin(slot)), slot.state),
            None => match self.load(&key)? {
                Some(coin) => (Some(coin), DIRTY),
                None => (None, FRESH),
            },
        };
        let (at, len) = self.stash(value, code, script);
        self.insert(p, key, Slot { at, len, state });
        if replaced.is_none() {
            self.len += 1;
        }
        Ok(replaced)
    }

    fn try_spend(&mut self, outpoint: &OutPoint) -> Result<Option<Coin>> {
        let key = key(outpoint);
        let p = key[0] as usize;
        self.make_room(p, 0)?;
        let spent = SPENT_SLOT;
        let coin = match self.cache[p].get(&key).copied() {
            Some(slot) if slot.state == SPENT => return Ok(None),
            Some(slot) => {
                let coin = self.cached_coin(slot);
                if slot.state == FRESH {
                    self.cache[p].remove(&key);
                } else {
                    self.insert(p, key, spent);
                }
                coin
            }
            None => match self.load(&key)? {
                Some(coin) => {
                    self.insert(p, key, spent);
                    coin
                }
                None => return Ok(None),
            },
        };
        self.len -= 1;
        Ok(Some(coin))
    }

    /// Calls `visit` with partition `p`'s coins in Core's order.
    fn visit_partition(
        &self,
        p: usize,
        visit: &mut dyn FnMut(&OutPoint, &Coin) -> Result<()>,
    ) -> Result<()> {
        /// Where a row's coin is: a disk record's data in `bytes`, or the
        /// cache.
        enum From {
            Disk(u32, u16),
            Cache(Slot),
        }
        let cache = &self.cache[p];
        let mut rows: Vec<(OutPoint, From)> = Vec::new();
        let mut bytes = Vec::new();
        if let Some(part) = &self.parts[p] {
            rows.reserve(part.count() as usize);
            part.visit(&mut |key, field, data| {
                if !cache.contains_key(key) {
                    rows.push((outpoint(key), From::Disk(bytes.len() as u32, field)));
                    bytes.extend_from_slice(data);
                }
                Ok(())
            })?;
        }
        rows.extend(
            cache
                .iter()
                .filter(|(_, slot)| slot.state != SPENT)
                .map(|(key, slot)| (outpoint(key), From::Cache(*slot))),
        );
        rows.sort_unstable_by(|a, b| a.0.core_cmp(&b.0));
        let mut coin = empty_coin();
        for (outpoint, from) in rows {
            match from {
                From::Disk(at, field) => self.decode(field, &bytes[at as usize..], &mut coin)?,
                From::Cache(slot) => unpack_into(
                    &self.arena[slot.at as usize..slot.at as usize + slot.len as usize],
                    &mut coin,
                ),
            }
            visit(&outpoint, &coin)?;
        }
        Ok(())
    }
}

/// The slot of a spent coin (no bytes in the arena).
const SPENT_SLOT: Slot = Slot {
    at: 0,
    len: 0,
    state: SPENT,
};

fn corrupt(path: &Path, offset: u64) -> Error {
    Error::io(
        path,
        "read",
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("a record points past the end (offset {offset})"),
        ),
    )
}

impl CoinStore for DiskCoins {
    fn add(&mut self, outpoint: &OutPoint, value: u64, code: u32, script: &[u8]) -> Option<Coin> {
        if self.failed {
            return None;
        }
        self.try_add(outpoint, value, code, script)
            .unwrap_or_else(|e| {
                self.error = Some(e);
                self.failed = true;
                None
            })
    }

    fn spend(&mut self, outpoint: &OutPoint) -> Option<Coin> {
        if self.failed {
            return None;
        }
        self.try_spend(outpoint).unwrap_or_else(|e| {
            self.error = Some(e);
            self.failed = true;
            None
        })
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn take_error(&mut self) -> Option<Error> {
        self.error.take()
    }

    fn visit_in_core_order(
        &self,
        visit: &mut dyn FnMut(&OutPoint, &Coin) -> Result<()>,
    ) -> Result<()> {
        (0..PARTITIONS).try_for_each(|p| self.visit_partition(p, visit))
    }
}

impl Drop for DiskCoins {
    fn drop(&mut self) {
        self.parts.clear();
        self.overflow = None;
        if !self.kept {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

/// SipHash-1-3 of `key` under `keys` (std's `HashMap` hash, keyed by us).
fn sip(keys: [u64; 2], key: &[u8]) -> u64 {
    let mut hasher = SipHasher13::new_with_keys(keys[0], keys[1]);
    hasher.write(key);
    hasher.finish()
}

/// 128 random bits: std's per-process random SipHash keys, hashed.
fn random_keys() -> [u64; 2] {
    [
        RandomState::new().hash_one(1u8),
        RandomState::new().hash_one(2u8),
    ]
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    fn contents(coins: &DiskCoins) -> Vec<(OutPoint, Coin)> {
        let mut seen = Vec::new();
        coins
            .visit_in_core_order(&mut |op, coin| {
                seen.push((*op, coin.clone()));
                Ok(())
            })
            .unwrap();
        seen
    }

    /// Random adds (some replacing), spends (some of nothing) and long
    /// scripts, with a budget that flushes every few operations, held to a
    /// `HashMap` after every step and in Core's order at the end.
    #[test]
    fn random_operations_match_a_hash_map() {
        let dir = std::env::temp_dir().join(format!("seekless-disk-coins-{}", std::process::id()));
        let mut coins = DiskCoins::create(&dir, 6000).unwrap();
        let mut model: HashMap<OutPoint, Coin> = HashMap::new();
        let mut live: Vec<OutPoint> = Vec::new();
        let mut rng = 7u64;
        for step in 0..20_000u32 {
            let r = xorshift(&mut rng);
            if r % 5 < 3 || live.is_empty() {
                let outpoint = if r.is_multiple_of(17) && !live.is_empty() {
                    live[(r >> 8) as usize % live.len()]
                } else {
                    let mut txid = [0u8; 32];
                    txid[..8].copy_from_slice(&xorshift(&mut rng).to_le_bytes());
                    OutPoint {
                        txid,
                        vout: (r >> 40) as u32 % 40_000,
                    }
                };
                let len = match r % 97 {
                    0 => 3000,
                    1..=3 => 500,
                    _ => 25,
                };
                let script: Vec<u8> = (0..len).map(|i| (i as u8) ^ (r as u8)).collect();
                let coin = Coin {
                    value: r >> 20,
                    height: step,
                    coinbase: r & 1 == 1,
                    script,
                };
                let old = coins.add(&outpoint, coin.value, coin.code(), &coin.script);
                let expected = model.insert(outpoint, coin);
                if expected.is_none() {
                    live.push(outpoint);
                }
                assert_eq!(old, expected, "step {step}");
            } else {
                let outpoint = if r.is_multiple_of(11) {
                    OutPoint {
                        txid: [0xee; 32],
                        vout: 1,
                    }
                } else {
                    live.swap_remove((r >> 8) as usize % live.len())
                };
                assert_eq!(
                    coins.spend(&outpoint),
                    model.remove(&outpoint),
                    "step {step}"
                );
            }
            assert_eq!(coins.len(), model.len() as u64);
            assert!(coins.take_error().is_none());
        }
        assert!(coins.flushes() > 100, "{}", coins.flushes());
        // Past the budget: at most the floor of 256 small tables.
        assert!(
            coins.memory_bytes() <= 6000 + MIN_TABLES,
            "{}",
            coins.memory_bytes()
        );
        let mut expected: Vec<(OutPoint, Coin)> = model.into_iter().collect();
        expected.sort_by(|a, b| a.0.core_cmp(&b.0));
        assert_eq!(contents(&coins), expected);
        drop(coins);
        assert!(!dir.exists());
    }

    /// A directory gone under the store: the error is kept, not a panic,
    /// and the store stops.
    #[test]
    fn an_io_error_is_kept_for_take_error() {
        let dir = std::env::temp_dir().join(format!("seekless-disk-gone-{}", std::process::id()));
        let mut coins = DiskCoins::create(&dir, 1000).unwrap();
        fs::remove_dir_all(&dir).unwrap();
        let mut error = None;
        for vout in 0..1000 {
            let outpoint = OutPoint {
                txid: [vout as u8; 32],
                vout,
            };
            coins.add(&outpoint, 1, 2, &[0x51; 30]);
            if let Some(e) = coins.take_error() {
                error = Some(e);
                break;
            }
        }
        let error = error.expect("a flush fails");
        assert!(error.to_string().contains("part-"), "{error}");
        assert_eq!(
            coins.spend(&OutPoint {
                txid: [0; 32],
                vout: 0
            }),
            None
        );
    }
}
