//! The chain, linked after the scan: parents, heights, cumulative work, best
//! tip, stale blocks, orphans and duplicates, in 88 bytes per block.
//!
//! Entries are sorted by hash so a parent is found by binary search, with no
//! hash map. Once a block's parent index is known its previous-block hash is
//! no longer needed, so the same 32 bytes then hold the parent index, the
//! height and the cumulative work.

use std::cmp::Ordering;

use crate::entry::{
    Entry, FLAG_BAD_CHAIN, FLAG_BEST, FLAG_INVALID, HEIGHT_ORPHAN, HEIGHT_UNSET, HEIGHT_VISITING,
    NONE, OFFSET_BITS, SIZE_MASK,
};
use crate::hash::BlockHash;
use crate::header::block_work;
use crate::network::Network;
use crate::scan::ScanOutput;
use crate::u256::U256;

/// The first 8 bytes of a hash as a big-endian number: ordering by it first
/// is ordering by the bytes, with one integer comparison.
fn key(hash: &[u8; 32]) -> u64 {
    u64::from_be_bytes(hash[..8].try_into().expect("8 bytes"))
}

/// Sorts entries by hash (then position, so duplicates keep their first
/// record first) on up to `threads` threads, for keys in `low..=high`:
/// splits at the middle key and sorts both sides at once. Block hashes are
/// uniform in their first bytes, so the halves are even; skewed keys cost
/// balance, never order. In place: no memory beyond the entries.
fn sort_entries(entries: &mut [Entry], threads: usize, low: u64, high: u64) {
    let order =
        |a: &Entry, b: &Entry| (key(&a.hash), &a.hash, a.pos).cmp(&(key(&b.hash), &b.hash, b.pos));
    if threads < 2 || entries.len() < 1 << 14 || low == high {
        return entries.sort_unstable_by(order);
    }
    let middle = low + (high - low) / 2;
    let mut below = 0;
    for i in 0..entries.len() {
        if key(&entries[i].hash) <= middle {
            entries.swap(below, i);
            below += 1;
        }
    }
    let (left, right) = entries.split_at_mut(below);
    let left_threads = threads / 2;
    std::thread::scope(|scope| {
        scope.spawn(|| sort_entries(left, left_threads, low, middle));
        sort_entries(right, threads - left_threads, middle + 1, high);
    });
}

/// Finds `hash` in entries sorted by hash. Block hashes are uniform in
/// their first bytes (the low-order bytes of a proof-of-work hash), so
/// interpolation search needs a handful of probes, each a cache miss in a
/// large array, where binary search needs twenty; it falls back to binary
/// search if the keys turn out not to be uniform.
fn find(entries: &[Entry], hash: &[u8; 32]) -> Option<usize> {
    let target = key(hash);
    let (mut lo, mut hi) = (0usize, entries.len());
    for _ in 0..16 {
        if lo >= hi {
            return None;
        }
        let (lo_key, hi_key) = (key(&entries[lo].hash), key(&entries[hi - 1].hash));
        if target < lo_key || target > hi_key {
            return None;
        }
        let span = (hi_key - lo_key) as u128;
        let scaled = (target - lo_key) as u128 * (hi - 1 - lo) as u128;
        let probe = lo + scaled.checked_div(span).unwrap_or(0) as usize;
        match entries[probe].hash.cmp(hash) {
            Ordering::Equal => return Some(probe),
            Ordering::Less => lo = probe + 1,
            Ordering::Greater => hi = probe,
        }
    }
    entries[lo..hi]
        .binary_search_by(|e| e.hash.cmp(hash))
        .ok()
        .map(|i| lo + i)
}

/// One block as seen in the chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockInfo {
    /// The block hash.
    pub hash: BlockHash,
    /// Height from genesis; `None` for orphans.
    pub height: Option<u32>,
    /// The parent's hash, when the parent was found.
    pub parent: Option<BlockHash>,
    /// Index of its file in the scan's file list.
    pub file: usize,
    /// Offset of its record (the magic) in that file.
    pub offset: u64,
    /// Serialized block size.
    pub size: u32,
    /// Compact target.
    pub bits: u32,
    /// Block time.
    pub time: u32,
    /// Block version.
    pub version: i32,
    /// Cumulative chain work up to and including this block (saturated at
    /// 2^192; zero for orphans).
    pub chain_work: U256,
    /// Whether it is on the best chain.
    pub on_best_chain: bool,
    /// Whether it failed `--verify`.
    pub invalid: bool,
}

/// The linked chain of every block found.
#[derive(Debug)]
pub struct Chain {
    network: Network,
    entries: Vec<Entry>,
    best: Vec<u32>,
    duplicates: u64,
    stale: u64,
    orphans: u64,
}

impl Chain {
    /// Links the blocks of a scan (consuming its entries).
    pub fn build(scan: &mut ScanOutput) -> Chain {
        let entries = std::mem::take(&mut scan.entries);
        Chain::from_entries(scan.network, entries, scan.threads)
    }

    /// Links `entries`, sorting them on up to `threads` threads.
    pub(crate) fn from_entries(network: Network, mut entries: Vec<Entry>, threads: usize) -> Chain {
        sort_entries(&mut entries, threads, 0, u64::MAX);
        let before = entries.len();
        entries.dedup_by(|later, first| later.hash == first.hash);
        let duplicates = (before - entries.len()) as u64;
        entries.shrink_to_fit();
        assert!(
            entries.len() < HEIGHT_VISITING as usize,
            "more blocks than heights"
        );

        link_parents(&mut entries, threads);
        resolve_heights(&mut entries, &network.genesis().0);
        let best = mark_best_chain(&mut entries);
        let orphans = entries.iter().filter(|e| !e.connected()).count() as u64;
        let stale = entries.len() as u64 - orphans - best.len() as u64;
        Chain {
            network,
            entries,
            best,
            duplicates,
            stale,
            orphans,
        }
    }

    /// The network.
    pub fn network(&self) -> Network {
        self.network
    }

    /// Number of distinct blocks (stale and orphans included).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no block was found.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Records whose hash was already seen (the first is kept).
    pub fn duplicates(&self) -> u64 {
        self.duplicates
    }

    /// Blocks linked to genesis but not on the best chain.
    pub fn stale(&self) -> u64 {
        self.stale
    }

    /// Blocks whose ancestry never reaches genesis.
    pub fn orphans(&self) -> u64 {
        self.orphans
    }

    /// The best tip, if any block is linked to genesis.
    pub fn tip(&self) -> Option<BlockInfo> {
        self.best.last().map(|&i| self.info(i as usize))
    }

    /// The best chain from genesis to the tip.
    pub fn best_chain(&self) -> impl ExactSizeIterator<Item = BlockInfo> + '_ {
        self.best.iter().map(|&i| self.info(i as usize))
    }

    /// Every block, in hash order.
    pub fn blocks(&self) -> impl ExactSizeIterator<Item = BlockInfo> + '_ {
        (0..self.entries.len()).map(|i| self.info(i))
    }

    /// A block by hash.
    pub fn get(&self, hash: &BlockHash) -> Option<BlockInfo> {
        let index = self
            .entries
            .binary_search_by(|e| e.hash.cmp(&hash.0))
            .ok()?;
        Some(self.info(index))
    }

    /// Bytes of memory held per block (the entry array's capacity).
    pub fn memory_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<Entry>() + self.best.capacity() * 4
    }

    fn info(&self, index: usize) -> BlockInfo {
        let entry = &self.entries[index];
        let parent = entry.parent();
        BlockInfo {
            hash: BlockHash(entry.hash),
            height: entry.connected().then(|| entry.height()),
            parent: (parent != NONE).then(|| BlockHash(self.entries[parent as usize].hash)),
            file: (entry.pos >> OFFSET_BITS) as usize,
            offset: entry.pos & (Entry::MAX_OFFSET - 1),
            size: entry.size_flags & SIZE_MASK,
            bits: entry.bits,
            time: entry.time,
            version: entry.version,
            chain_work: if entry.connected() {
                entry.work()
            } else {
                U256::ZERO
            },
            on_best_chain: entry.size_flags & FLAG_BEST != 0,
            invalid: entry.size_flags & FLAG_INVALID != 0,
        }
    }
}

/// Each entry's parent, found by interpolation search on the hash; then its
/// previous-block hash is spent and its height unset. The searches only
/// read, so a block of entries at a time is looked up on `threads` threads
/// into a small buffer, then written.
fn link_parents(entries: &mut [Entry], threads: usize) {
    const BLOCK: usize = 1 << 16;
    let mut parents = vec![NONE; BLOCK.min(entries.len())];
    for start in (0..entries.len()).step_by(BLOCK) {
        let end = (start + BLOCK).min(entries.len());
        let parents = &mut parents[..end - start];
        let all: &[Entry] = entries;
        let look_up = |first: usize, out: &mut [u32]| {
            for (slot, entry) in out.iter_mut().zip(&all[first..]) {
                *slot = find(all, &entry.link).map_or(NONE, |index| index as u32);
            }
        };
        if threads < 2 || parents.len() < 1 << 12 {
            look_up(start, parents);
        } else {
            let per = parents.len().div_ceil(threads);
            std::thread::scope(|scope| {
                for (n, out) in parents.chunks_mut(per).enumerate() {
                    scope.spawn(move || look_up(start + n * per, out));
                }
            });
        }
        for (entry, &parent) in entries[start..end].iter_mut().zip(parents.iter()) {
            entry.link = [0; 32];
            entry.set_parent(parent);
            entry.set_height(HEIGHT_UNSET);
        }
    }
}

/// Heights, cumulative work and bad-chain flags, down from the genesis
/// block; what does not reach it is an orphan.
fn resolve_heights(entries: &mut [Entry], genesis: &[u8; 32]) {
    let mut work_cache = (0u32, U256::ZERO);
    let mut own_work = |bits: u32| {
        if work_cache.0 != bits || work_cache.1.is_zero() {
            work_cache = (bits, block_work(bits));
        }
        work_cache.1
    };
    for start in 0..entries.len() {
        if entries[start].height() != HEIGHT_UNSET {
            continue;
        }
        // Walk up to a resolved block or a root, reversing parent links
        // so the way back down needs no stack.
        let mut back = NONE;
        let mut cur = start as u32;
        while cur != NONE && entries[cur as usize].height() == HEIGHT_UNSET {
            let entry = &mut entries[cur as usize];
            let parent = entry.parent();
            entry.set_height(HEIGHT_VISITING);
            entry.set_parent(back);
            back = cur;
            cur = parent;
        }
        // Walk back down, restoring links and resolving heights and work.
        let mut parent = cur;
        while back != NONE {
            let node = back as usize;
            back = entries[node].parent();
            let (height, work, bad) = if parent == NONE {
                if entries[node].hash == *genesis {
                    (0, own_work(entries[node].bits), false)
                } else {
                    (HEIGHT_ORPHAN, U256::ZERO, false)
                }
            } else {
                let p = &entries[parent as usize];
                if p.connected() {
                    let work = p.work().saturating_add(own_work(entries[node].bits));
                    (p.height() + 1, work, p.size_flags & FLAG_BAD_CHAIN != 0)
                } else {
                    // An orphan parent, or (impossibly) a cycle.
                    (HEIGHT_ORPHAN, U256::ZERO, false)
                }
            };
            let entry = &mut entries[node];
            entry.set_parent(parent);
            entry.set_height(height.min(HEIGHT_ORPHAN));
            entry.set_work(work);
            if bad || entry.size_flags & FLAG_INVALID != 0 {
                entry.size_flags |= FLAG_BAD_CHAIN;
            }
            parent = node as u32;
        }
    }
}

/// The best tip (most work, ties to the first seen; never on an invalid
/// chain) and the chain down to it, flagged: the block index at each
/// height.
fn mark_best_chain(entries: &mut [Entry]) -> Vec<u32> {
    let mut tip: Option<usize> = None;
    for (i, entry) in entries.iter().enumerate() {
        if !entry.connected() || entry.size_flags & FLAG_BAD_CHAIN != 0 {
            continue;
        }
        let better = match tip {
            None => true,
            Some(t) => match entry.work().cmp(&entries[t].work()) {
                Ordering::Greater => true,
                Ordering::Equal => entry.pos < entries[t].pos,
                Ordering::Less => false,
            },
        };
        if better {
            tip = Some(i);
        }
    }
    let mut best = Vec::new();
    if let Some(tip) = tip {
        best = vec![NONE; entries[tip].height() as usize + 1];
        let mut cur = tip as u32;
        while cur != NONE {
            let entry = &mut entries[cur as usize];
            entry.size_flags |= FLAG_BEST;
            best[entry.height() as usize] = cur;
            cur = entry.parent();
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry with only a hash and a position.
    fn entry(hash: [u8; 32], pos: u64) -> Entry {
        Entry {
            hash,
            link: [0; 32],
            bits: 0,
            time: 0,
            version: 0,
            size_flags: 0,
            pos,
        }
    }

    #[test]
    fn interpolation_search_finds_every_hash() {
        let mut rng = crate::generate::Rng::new(3);
        for n in [0usize, 1, 2, 3, 10, 1000] {
            let mut entries: Vec<Entry> = (0..n)
                .map(|i| {
                    let mut hash = [0u8; 32];
                    rng.fill(&mut hash);
                    if i % 7 == 0 {
                        hash[..8].copy_from_slice(&[0; 8]); // equal keys
                    }
                    entry(hash, 0)
                })
                .collect();
            entries.sort_unstable_by_key(|e| e.hash);
            for (i, entry) in entries.iter().enumerate() {
                assert_eq!(find(&entries, &entry.hash), Some(i));
                let mut missing = entry.hash;
                missing[31] ^= 1;
                assert_eq!(
                    find(&entries, &missing),
                    entries.iter().position(|e| e.hash == missing)
                );
            }
        }
    }

    #[test]
    fn sorting_on_threads_gives_one_thread_order() {
        let mut rng = crate::generate::Rng::new(5);
        let mut uniform = Vec::new();
        let mut skewed = Vec::new();
        for i in 0..40_000u64 {
            let mut hash = [0u8; 32];
            rng.fill(&mut hash);
            if i % 5 == 0 {
                hash[..8].copy_from_slice(&[0x80, 0, 0, 0, 0, 0, 0, 0]); // equal keys at the split
            }
            if i % 11 == 0 && i > 0 {
                let earlier: &Entry = &uniform[(i / 2) as usize];
                hash = earlier.hash; // duplicates, told apart by position
            }
            uniform.push(entry(hash, 40_000 - i));
            hash[0] = 0; // every key in the lowest part
            skewed.push(entry(hash, i));
        }
        for entries in [uniform, skewed] {
            let mut one = entries.clone();
            sort_entries(&mut one, 1, 0, u64::MAX);
            assert!(
                one.windows(2)
                    .all(|w| (key(&w[0].hash), &w[0].hash, w[0].pos)
                        < (key(&w[1].hash), &w[1].hash, w[1].pos))
            );
            for threads in [2, 3, 8] {
                let mut many = entries.clone();
                sort_entries(&mut many, threads, 0, u64::MAX);
                let order = |v: &[Entry]| v.iter().map(|e| (e.hash, e.pos)).collect::<Vec<_>>();
                assert_eq!(order(&many), order(&one), "{threads} threads");
            }
        }
    }

    #[test]
    fn linking_on_threads_gives_one_thread_chain() {
        let mut rng = crate::generate::Rng::new(6);
        let network = Network::Regtest;
        let mut entries: Vec<Entry> = Vec::new();
        for i in 0..70_000u64 {
            let mut hash = [0u8; 32];
            rng.fill(&mut hash);
            let link = match i {
                0 => {
                    hash = network.genesis().0;
                    [0; 32]
                }
                // Mostly a chain, some forks, some orphans.
                _ if i % 97 == 0 => {
                    let mut unknown = [0u8; 32];
                    rng.fill(&mut unknown);
                    unknown
                }
                _ if i % 13 == 0 => entries[rng.range(0, i - 1) as usize].hash,
                _ => entries[i as usize - 1].hash,
            };
            entries.push(Entry {
                link,
                bits: 0x207f_ffff,
                time: i as u32,
                version: 4,
                size_flags: 300,
                ..entry(hash, i)
            });
        }
        let one = format!("{:?}", Chain::from_entries(network, entries.clone(), 1));
        assert!(one.len() > 1 << 20);
        for threads in [2, 3, 8] {
            let many = format!(
                "{:?}",
                Chain::from_entries(network, entries.clone(), threads)
            );
            assert!(many == one, "{threads} threads");
        }
    }

    #[test]
    fn entry_is_compact() {
        assert_eq!(std::mem::size_of::<Entry>(), 88);
    }
}
