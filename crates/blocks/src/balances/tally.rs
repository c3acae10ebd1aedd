//! Sums by script in a memory budget: the scripts one after another in an
//! arena, an entry a distinct script (where its bytes are, its balance and
//! coin count), and a hash table of entry numbers keyed by the script's
//! hash, seeded per run (scripts are chosen by whoever pays to them).
//! Its memory is what its three allocations hold, counted before each
//! grows, so a tally refuses a script rather than pass its budget.

use std::cmp::Ordering;
use std::hash::BuildHasher;

use hashbrown::{DefaultHashBuilder, HashTable};

/// A distinct script's sums.
#[derive(Clone, Copy, Debug)]
struct Entry {
    start: usize,
    len: u32,
    balance: u64,
    coins: u64,
}

/// The fewest entries (and arena bytes) an allocation starts with.
const FIRST: usize = 1 << 10;

pub(crate) struct Tally {
    arena: Vec<u8>,
    entries: Vec<Entry>,
    table: HashTable<u32>,
    hasher: DefaultHashBuilder,
    budget: usize,
}

impl Tally {
    /// An empty tally that stays within about `budget` bytes (see
    /// [`Tally::add`]).
    pub(crate) fn new(budget: usize) -> Tally {
        Tally {
            arena: Vec::new(),
            entries: Vec::new(),
            table: HashTable::new(),
            hasher: DefaultHashBuilder::default(),
            budget,
        }
    }

    /// Distinct scripts held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Bytes its allocations hold.
    pub(crate) fn memory(&self) -> usize {
        self.arena.capacity()
            + self.entries.capacity() * size_of::<Entry>()
            + self.table.allocation_size()
    }

    /// Adds `balance` and `coins` to `script`'s sums. A script not held yet
    /// that would grow an allocation past the budget is refused (false),
    /// unless `force` or the tally is empty: the caller spills the tally
    /// and tries again.
    pub(crate) fn add(&mut self, script: &[u8], balance: u64, coins: u64, force: bool) -> bool {
        let hash = self.hasher.hash_one(script);
        let (arena, entries) = (&self.arena, &mut self.entries);
        let found = self
            .table
            .find(hash, |&i| {
                let e = &entries[i as usize];
                &arena[e.start..e.start + e.len as usize] == script
            })
            .copied();
        if let Some(i) = found {
            let entry = &mut entries[i as usize];
            entry.balance = entry.balance.saturating_add(balance);
            entry.coins += coins;
            return true;
        }
        if !force && !self.entries.is_empty() && !self.room_for(script.len()) {
            return false;
        }
        let index = self.entries.len() as u32;
        self.entries.push(Entry {
            start: self.arena.len(),
            len: script.len() as u32,
            balance,
            coins,
        });
        self.arena.extend_from_slice(script);
        let (arena, entries, hasher) = (&self.arena, &self.entries, &self.hasher);
        self.table.insert_unique(hash, index, |&i| {
            let e = &entries[i as usize];
            hasher.hash_one(&arena[e.start..e.start + e.len as usize])
        });
        true
    }

    /// Whether one more entry of `len` script bytes keeps the tally within
    /// its budget, its allocations grown ahead as pushing would grow them
    /// (doubling) where it fits.
    fn room_for(&mut self, len: usize) -> bool {
        let grown = |used: usize, capacity: usize, more: usize| {
            if used + more <= capacity {
                capacity
            } else {
                (capacity * 2).max(used + more).max(FIRST)
            }
        };
        let arena = grown(self.arena.len(), self.arena.capacity(), len);
        let entries = grown(self.entries.len(), self.entries.capacity(), 1);
        let table = if self.table.len() < self.table.capacity() {
            self.table.allocation_size()
        } else {
            // Buckets double: a u32 and a control byte each.
            (self.table.allocation_size() * 2).max(FIRST * 8)
        };
        if arena + entries * size_of::<Entry>() + table > self.budget {
            return false;
        }
        self.arena.reserve_exact(arena - self.arena.len());
        self.entries.reserve_exact(entries - self.entries.len());
        true
    }

    /// Forgets every script, keeping the allocations.
    pub(crate) fn clear(&mut self) {
        self.arena.clear();
        self.entries.clear();
        self.table.clear();
    }

    /// Each script with its sums, in no order.
    pub(crate) fn for_each(&self, mut f: impl FnMut(&[u8], u64, u64)) {
        for e in &self.entries {
            f(self.script(e), e.balance, e.coins);
        }
    }

    /// Sorts the entries in the output's order (balance descending, then
    /// script bytes ascending) and gives each in that order.
    pub(crate) fn sorted(
        &mut self,
        mut f: impl FnMut(&[u8], u64, u64) -> crate::Result<()>,
    ) -> crate::Result<()> {
        let arena = &self.arena;
        let script = |e: &Entry| &arena[e.start..e.start + e.len as usize];
        self.entries
            .sort_unstable_by(|a, b| order(a.balance, script(a), b.balance, script(b)));
        for e in &self.entries {
            f(script(e), e.balance, e.coins)?;
        }
        Ok(())
    }

    fn script(&self, e: &Entry) -> &[u8] {
        &self.arena[e.start..e.start + e.len as usize]
    }
}

impl std::fmt::Debug for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tally")
            .field("scripts", &self.entries.len())
            .field("memory", &self.memory())
            .finish_non_exhaustive()
    }
}

/// The balances' order: balance descending, then script bytes ascending
/// (the order of their hex too).
pub(crate) fn order(a_balance: u64, a: &[u8], b_balance: u64, b: &[u8]) -> Ordering {
    b_balance.cmp(&a_balance).then_with(|| a.cmp(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_by_script_and_sorts() {
        let mut tally = Tally::new(1 << 20);
        for (script, value) in [(&b"a"[..], 5), (b"bb", 7), (b"a", 2), (b"c", 7), (b"", 1)] {
            assert!(tally.add(script, value, 1, false));
        }
        assert_eq!(tally.len(), 4);
        let mut rows = Vec::new();
        tally
            .sorted(|s, b, c| {
                rows.push((s.to_vec(), b, c));
                Ok(())
            })
            .unwrap();
        assert_eq!(
            rows,
            [
                (b"a".to_vec(), 7, 2),
                (b"bb".to_vec(), 7, 1),
                (b"c".to_vec(), 7, 1),
                (b"".to_vec(), 1, 1),
            ]
        );
    }

    #[test]
    fn stays_in_its_budget() {
        let budget = 64 << 10;
        let mut tally = Tally::new(budget);
        let mut added = 0u32;
        while tally.add(&added.to_le_bytes(), 1, 1, false) {
            added += 1;
            assert!(tally.memory() <= budget, "{}", tally.memory());
        }
        assert!(added > 500, "{added}");
        // What it holds still sums; forced, it grows.
        assert!(tally.add(&0u32.to_le_bytes(), 1, 1, false));
        assert!(tally.add(&added.to_le_bytes(), 1, 1, true));
        tally.clear();
        assert_eq!(tally.len(), 0);
        assert!(tally.add(b"x", 1, 1, false));
    }
}
