//! The page table: what the table knows about each page id besides its
//! bytes ([`PageMeta`]), in fixed chunks that never move.
//!
//! It was one vector, grown by doubling: the insert that grew it copied
//! the whole table into new memory (256 KiB at 16,384 pages, 6.06M random
//! pairs), and a later split freed the old buffer. On the 2-core Zen 3 VM
//! the copy took 41-50 µs and the free 74-90 µs; the copy came on the same
//! insert as a new 2 MiB chunk of pages, which made that insert the
//! longest of an 8M load with small pages, over 100 µs in 7 of 8 runs
//! (95.4-140.0 µs, each put's fastest of three loads). In chunks, growth
//! adds one chunk, made ahead by an earlier split, and nothing is copied
//! or freed until the table is dropped. Lookups never read the page
//! table, and inserts only when they split.

use std::ops::{Index, IndexMut};

use crate::layout::PageMeta;

/// Page ids a chunk covers: 16 KiB of records.
const CHUNK: usize = 1024;

type Chunk = Box<[PageMeta; CHUNK]>;

/// One [`PageMeta`] for each page id below [`PageTable::len`]; ids not in
/// use hold the default (depth 0).
#[derive(Debug, Default)]
pub(crate) struct PageTable {
    chunks: Vec<Chunk>,
    len: usize,
    /// The next chunk, made ahead ([`PageTable::prepare`]).
    spare: Option<Chunk>,
}

fn chunk() -> Chunk {
    vec![PageMeta::default(); CHUNK]
        .into_boxed_slice()
        .try_into()
        .expect("a vector of CHUNK records")
}

impl PageTable {
    /// Number of page ids covered.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Give page id `id` record `m`, covering every id up to it.
    pub(crate) fn set(&mut self, id: usize, m: PageMeta) {
        if id >= self.len {
            while self.chunks.len() * CHUNK <= id {
                let next = self.spare.take().unwrap_or_else(chunk);
                self.chunks.push(next);
            }
            self.len = id + 1;
        }
        self[id] = m;
    }

    /// Make the next chunk now if the table has less than half a chunk
    /// left, so that the insert that needs it finds it made: called by
    /// every split, the one thing that takes new page ids.
    pub(crate) fn prepare(&mut self) {
        if self.spare.is_none() && self.len + CHUNK / 2 >= self.chunks.len() * CHUNK {
            self.spare = Some(chunk());
        }
    }

    /// The records of ids `0..len`, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &PageMeta> {
        self.chunks.iter().flat_map(|c| c.iter()).take(self.len)
    }

    /// Bytes of memory held.
    pub(crate) fn bytes(&self) -> usize {
        (self.chunks.len() + usize::from(self.spare.is_some())) * size_of::<[PageMeta; CHUNK]>()
            + self.chunks.capacity() * size_of::<Chunk>()
    }
}

impl From<Vec<PageMeta>> for PageTable {
    fn from(records: Vec<PageMeta>) -> PageTable {
        let mut table = PageTable::default();
        for (id, m) in records.into_iter().enumerate().rev() {
            table.set(id, m);
        }
        table
    }
}

/// The record of page id `id`, which must be below [`PageTable::len`]
/// (checked in debug builds; past the last chunk, always). Without the
/// check in release builds, a remove takes no more instructions than with
/// one vector (cachegrind, 1M removes: 677.3M instructions in all against
/// 678.0M; with the check 686.9M).
impl Index<usize> for PageTable {
    type Output = PageMeta;

    #[inline]
    fn index(&self, id: usize) -> &PageMeta {
        debug_assert!(id < self.len, "page id {id} past the page table");
        &self.chunks[id / CHUNK][id % CHUNK]
    }
}

impl IndexMut<usize> for PageTable {
    #[inline]
    fn index_mut(&mut self, id: usize) -> &mut PageMeta {
        debug_assert!(id < self.len, "page id {id} past the page table");
        &mut self.chunks[id / CHUNK][id % CHUNK]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: usize) -> PageMeta {
        PageMeta {
            depth: 5,
            prefix: id as u32,
            floor: 7,
            counted: 1,
        }
    }

    #[test]
    fn records_stay_where_set_across_chunks() {
        let mut t = PageTable::default();
        assert_eq!((t.len(), t.iter().count()), (0, 0));
        t.set(3, record(3));
        assert_eq!(t.len(), 4);
        assert_eq!(t[0], PageMeta::default(), "ids skipped over are unused");
        t.set(CHUNK + 6, record(CHUNK + 6));
        let first = &t.chunks[0][3] as *const PageMeta;
        for id in (0..3 * CHUNK).step_by(7) {
            t.set(id, record(id));
        }
        assert_eq!(&t[3] as *const PageMeta, first, "growth moves nothing");
        assert_eq!(
            t.len(),
            3066 + 1,
            "the last id set, 7 * 438, and those before"
        );
        let set: Vec<usize> = t
            .iter()
            .enumerate()
            .filter(|(_, m)| m.depth != 0)
            .map(|(id, m)| {
                assert_eq!(*m, record(id));
                id
            })
            .collect();
        let mut want: Vec<usize> = (0..3 * CHUNK).step_by(7).collect();
        want.extend([3, CHUNK + 6]);
        want.sort();
        assert_eq!(set, want);
        t[CHUNK + 6].floor = 9;
        assert_eq!(t[CHUNK + 6].floor, 9);
    }

    #[test]
    fn the_next_chunk_is_made_ahead_and_taken_by_growth() {
        let mut t = PageTable::default();
        t.set(0, record(0));
        t.prepare();
        assert!(t.spare.is_none(), "most of the first chunk is left");
        t.set(CHUNK / 2, record(1));
        t.prepare();
        let spare = &**t.spare.as_ref().expect("made at half a chunk left") as *const _;
        let bytes = t.bytes();
        t.set(CHUNK, record(2));
        assert!(t.spare.is_none());
        assert_eq!(
            &*t.chunks[1] as *const _, spare,
            "the spare became the chunk"
        );
        assert_eq!(t.bytes(), bytes, "no new memory at growth");
    }

    #[test]
    #[should_panic]
    fn an_id_past_the_chunks_is_refused() {
        let mut t = PageTable::default();
        t.set(CHUNK - 1, record(0));
        let _ = t[CHUNK];
    }

    #[test]
    fn a_table_is_made_from_a_vector_of_records() {
        let records: Vec<PageMeta> = (0..CHUNK + 3).map(record).collect();
        let t = PageTable::from(records.clone());
        assert_eq!(t.chunks.len(), 2);
        assert!(t.iter().copied().eq(records));
    }
}
