//! Bulk loading: many pairs inserted in the order of their pages, so that
//! each page is filled (and split) in one stretch while it is in cache,
//! and is finished for good once the load has passed it. A file store
//! writes the finished pages while the load goes on (`PageStore::settled`),
//! which leaves its commit little more than the sync.

use crate::layout::slot_page;
use crate::mix::{mix, position_high};
use crate::page::PageId;
use crate::store::PageStore;
use crate::table::ExHash;

/// Below this many pairs a load is plain inserts: ordering them would cost
/// more than it saves.
const ORDERED_FROM: usize = 4096;

/// Finished pages handed to the store at once: 1 MiB of writes.
const SETTLE_BATCH: usize = 128;

/// Bits of the position high part that order the pairs: about 1024 pairs
/// a bucket (three pages or so, which stay in cache while the bucket is
/// inserted in any order), at most 2^20 buckets. Finer buckets cost more
/// than they save: at 1M pairs, 16 pairs a bucket took the ordering 18 ms
/// against 10 (65,536 places written at once instead of 1,024).
fn bucket_bits(n: usize) -> u32 {
    (usize::BITS - (n / 1024).leading_zeros()).clamp(4, 20)
}

/// The pairs of `pairs` ordered by the high `bits` of their position,
/// stably (so that among equal keys the later one is still inserted later),
/// and where each bucket of them ends.
fn by_position(pairs: &[(u64, u64)], bits: u32) -> (Vec<(u64, u64)>, Vec<usize>) {
    let bucket = |key: u64| (position_high(mix(key)) >> (33 - bits)) as usize;
    let mut next = vec![0usize; (1 << bits) + 1];
    for &(key, _) in pairs {
        next[bucket(key) + 1] += 1;
    }
    for i in 1..next.len() {
        next[i] += next[i - 1];
    }
    let mut ordered = vec![(0, 0); pairs.len()];
    for &(key, value) in pairs {
        let at = &mut next[bucket(key)];
        ordered[*at] = (key, value);
        *at += 1;
    }
    // Each bucket's next place is now where it ends.
    next.pop();
    (ordered, next)
}

/// The pages the load has passed, found by walking the directory from
/// where the last walk stopped.
struct Frontier {
    /// Position high part where the first page not known finished starts.
    from: u64,
    finished: Vec<PageId>,
}

impl<S: PageStore> ExHash<S> {
    /// Insert many pairs (later ones win), in the order of their pages
    /// rather than as given: the load walks the table once, page by page,
    /// instead of touching a random page at every pair.
    ///
    /// On a file-backed table, each page the load has finished is written
    /// to the file (not yet as part of any commit) while the load goes on,
    /// so that the next [`commit`](ExHash::commit) finds most of its pages
    /// on their way to storage.
    ///
    /// Takes an ordered copy of the pairs (16 bytes each) for the length of
    /// the call.
    pub fn load(&mut self, pairs: &[(u64, u64)]) {
        if pairs.len() < ORDERED_FROM {
            return self.insert_many(pairs);
        }
        self.store.unjournaled();
        let bits = bucket_bits(pairs.len());
        let (ordered, ends) = by_position(pairs, bits);
        let mut frontier = Frontier {
            from: 0,
            finished: Vec::with_capacity(2 * SETTLE_BATCH),
        };
        let mut start = 0;
        for (bucket, end) in (1u64..).zip(ends) {
            for &(key, value) in &ordered[start..end] {
                self.insert(key, value);
            }
            start = end;
            self.pass(bucket << (33 - bits), &mut frontier);
        }
        // Every page is finished now: the last ones go out with those
        // still being written, rather than after them in the commit.
        self.store.settled(&frontier.finished);
    }

    /// Note the pages that lie wholly below position high part `end`, which
    /// no later pair of the load reaches, and hand them to the store in
    /// batches.
    fn pass(&mut self, end: u64, frontier: &mut Frontier) {
        let shift = 33 - self.global_depth as u32;
        let mut i = (frontier.from >> shift) as usize;
        while let Some(&slot) = self.dir.get(i) {
            let span = 1usize << (self.global_depth - (slot & 63) as u8);
            if ((i + span) as u64) << shift > end {
                break;
            }
            frontier.finished.push(slot_page(slot));
            i += span;
        }
        frontier.from = (i as u64) << shift;
        if frontier.finished.len() >= SETTLE_BATCH {
            self.store.settled(&frontier.finished);
            frontier.finished.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` pairs of well-mixed keys, value the index.
    fn pairs(n: usize) -> Vec<(u64, u64)> {
        (1..=n as u64)
            .map(|i| (mix(i.wrapping_mul(0x9E37_79B9_7F4A_7C15)), i))
            .collect()
    }

    #[test]
    fn buckets_hold_about_a_thousand_pairs() {
        assert_eq!(bucket_bits(0), 4);
        assert_eq!(bucket_bits(1 << 20), 11);
        assert_eq!(bucket_bits(usize::MAX), 20);
    }

    #[test]
    fn ordering_keeps_every_pair_and_the_order_of_equal_keys() {
        let mut input = pairs(50_000);
        let again: Vec<(u64, u64)> = (0..1000).map(|i| (input[i * 7].0, i as u64)).collect();
        input.extend(again);
        let bits = bucket_bits(input.len());
        let (ordered, ends) = by_position(&input, bits);
        let bucket = |k: u64| (position_high(mix(k)) >> (33 - bits)) as usize;
        let mut start = 0;
        for (b, &end) in ends.iter().enumerate() {
            assert!(ordered[start..end].iter().all(|p| bucket(p.0) == b));
            start = end;
        }
        assert_eq!(start, input.len());
        let (mut a, mut b) = (input.clone(), ordered.clone());
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b);
        // The later of two equal keys stays later.
        for i in 0..1000 {
            let k = input[i * 7].0;
            let at: Vec<u64> = ordered.iter().filter(|p| p.0 == k).map(|p| p.1).collect();
            assert_eq!(at.last(), Some(&(i as u64)), "key {k:#x}");
        }
    }
}
