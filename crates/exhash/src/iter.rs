//! Iteration over every (key, value) pair of a table.

use crate::mix::unmix;
use crate::store::PageStore;
use crate::table::ExHash;

impl<S: PageStore> ExHash<S> {
    /// Every (key, value) pair, in no particular order.
    pub fn iter(&self) -> Iter<'_, S> {
        Iter {
            table: self,
            next_page: 0,
            buf: Vec::new(),
            spill: self.spill.iter(),
        }
    }
}

/// Iterator over a table's pairs.
#[derive(Debug)]
pub struct Iter<'a, S: PageStore> {
    table: &'a ExHash<S>,
    next_page: usize,
    buf: Vec<(u64, u64)>,
    spill: std::collections::btree_map::Iter<'a, u64, u64>,
}

impl<S: PageStore> Iterator for Iter<'_, S> {
    type Item = (u64, u64);

    fn next(&mut self) -> Option<(u64, u64)> {
        loop {
            if let Some(kv) = self.buf.pop() {
                return Some(kv);
            }
            let meta = &self.table.meta;
            while self.next_page < meta.len() && meta[self.next_page].depth == 0 {
                self.next_page += 1;
            }
            if self.next_page >= meta.len() {
                return self.spill.next().map(|(&k, &v)| (k, v));
            }
            let id = self.next_page;
            self.next_page += 1;
            let m = meta[id];
            self.table.page_entries(id as u32, &mut self.buf);
            for kv in &mut self.buf {
                kv.0 = unmix(ExHash::<S>::hash_at(&m, kv.0));
            }
        }
    }
}
