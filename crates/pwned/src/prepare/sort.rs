//! Records as `prepare` holds them, where the parser puts them, and sorting
//! a partition of them.

use crate::error::Result;
use crate::format::hash::Key;
use crate::prefetch::prefetch;

/// Where the parser puts the records of a chunk of lines.
pub(crate) trait Sink {
    fn put(&mut self, record: Record) -> Result<()>;
}

/// One parsed line: a hash and its (capped) count, 24 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(C)]
pub(crate) struct Record {
    pub hi: u64,
    pub mid: u64,
    pub lo: u32,
    pub count: u32,
}

/// Bytes of a record in a spill file.
pub(crate) const RECORD_BYTES: usize = 24;

// Four integers, no padding: a record's memory is its spill encoding on a
// little-endian machine (see `as_bytes`).
const _: () = assert!(std::mem::size_of::<Record>() == RECORD_BYTES);

/// The memory of `records`, which on a little-endian machine is what a
/// spill file holds for them ([`Record::write`]'s encoding).
pub(crate) fn as_bytes(records: &[Record]) -> &[u8] {
    // SAFETY: a record is four integers with no padding (repr(C), size
    // asserted above), so its memory is initialised bytes; the length is
    // the slice's.
    unsafe { std::slice::from_raw_parts(records.as_ptr().cast(), std::mem::size_of_val(records)) }
}

/// `bytes` as the records they encode in memory ([`as_bytes`]'s
/// inverse): a whole number of records, at an address aligned for them.
pub(crate) fn records_mut(bytes: &mut [u8]) -> &mut [Record] {
    assert!(
        bytes.len().is_multiple_of(RECORD_BYTES)
            && (bytes.as_ptr() as usize).is_multiple_of(std::mem::align_of::<Record>()),
        "records are read into whole, aligned records' memory"
    );
    // SAFETY: the bytes are a whole number of records at an address
    // aligned for them (asserted), and every byte pattern is a valid
    // record (four integers, no padding); the borrow is `bytes`'.
    unsafe { std::slice::from_raw_parts_mut(bytes.as_mut_ptr().cast(), bytes.len() / RECORD_BYTES) }
}

impl Record {
    pub(crate) fn new(key: Key, count: u32) -> Record {
        Record {
            hi: key.hi,
            mid: key.mid,
            lo: key.lo,
            count,
        }
    }

    #[inline]
    pub(crate) fn key(&self) -> Key {
        Key {
            hi: self.hi,
            mid: self.mid,
            lo: self.lo,
        }
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.hi.to_le_bytes());
        out.extend_from_slice(&self.mid.to_le_bytes());
        out.extend_from_slice(&self.lo.to_le_bytes());
        out.extend_from_slice(&self.count.to_le_bytes());
    }

    /// The record whose encoding ([`Record::write`]) was read into its
    /// memory as it is ([`records_mut`]): itself on a little-endian
    /// machine.
    pub(crate) fn decoded(self) -> Record {
        Record {
            hi: u64::from_le(self.hi),
            mid: u64::from_le(self.mid),
            lo: u32::from_le(self.lo),
            count: u32::from_le(self.count),
        }
    }
}

/// Sorts the records of `sources`, which share their top `skip` bits, by
/// hash into `out` (its memory reused): one counting-sort pass on the next
/// bits spreads them into about two buckets per record, straight from the
/// sources (no copy gathers them first), then one insertion pass puts each
/// bucket in order. A partition of [`TWO_PASS`] records or more is first
/// spread by its next [`COARSE`] bits into `spare` (memory reused too), and
/// each of those ranges sorted on its own: the buckets of one pass over a
/// partition that large (a billion hashes make partitions of four million
/// records) would span more memory than any cache holds. `counts` is the
/// counting sort's memory, reused too.
pub(crate) fn sort_into(
    sources: &[&[Record]],
    skip: u32,
    out: &mut Vec<Record>,
    spare: &mut Vec<Record>,
    counts: &mut Vec<u32>,
) {
    let n: usize = sources.iter().map(|s| s.len()).sum();
    // Every record of `out` is written below: what it held is only
    // overwritten, and only what it lacks is made.
    room_for(out, n);
    if n < TWO_PASS || skip + COARSE >= 64 {
        sort_slice(sources, skip, out, counts);
        return;
    }
    room_for(spare, n);
    let mut coarse = Vec::new();
    scatter(sources, skip, COARSE, spare, &mut coarse);
    for w in coarse.windows(2) {
        let range = w[0] as usize..w[1] as usize;
        sort_slice(
            &[&spare[range.clone()]],
            skip + COARSE,
            &mut out[range],
            counts,
        );
    }
}

/// Makes `v` `n` records long. Grown, it drops what it held rather than
/// copy it, and takes an eighth more than asked: partitions differ in size
/// by a little, and growing to each new largest one by doubling, as `Vec`
/// does, copied the last one's records into fresh memory twice its size
/// (at a billion hashes, partitions of ~94 MB: ~1% of a build's time in
/// the copy, more in faulting the memory in).
fn room_for(v: &mut Vec<Record>, n: usize) {
    if v.capacity() < n {
        v.clear();
        v.reserve_exact(n + n / 8);
    }
    v.resize(n, Record::default());
}

/// Records from which a partition is sorted in two passes.
const TWO_PASS: usize = 1 << 19;

/// Bits the first of two passes spreads records by.
const COARSE: u32 = 8;

/// [`sort_into`]'s one pass: the records of `sources` sorted into `out`,
/// which has room for exactly all of them.
fn sort_slice(sources: &[&[Record]], skip: u32, out: &mut [Record], counts: &mut Vec<u32>) {
    let n = out.len();
    if n < 256 {
        let mut at = 0;
        for source in sources {
            out[at..at + source.len()].copy_from_slice(source);
            at += source.len();
        }
        out.sort_unstable_by_key(Record::key);
        return;
    }
    // About two buckets a record: the offsets stay small and cache-resident.
    let radix = (64 - n.leading_zeros()).clamp(8, 22).min(64 - skip);
    scatter(sources, skip, radix, out, counts);
    // Each record is now in its bucket, buckets in order: one insertion
    // pass sorts them, its branch rarely taken (a bucket holds about two
    // records) where a call a bucket is a coin toss. A record never moves
    // past its bucket's start, so when one has to move far (many records
    // share their top bits, as crafted input can make them), the buckets
    // are sorted one by one instead.
    if !insertion_sort(out, NEAR) {
        for w in counts.windows(2) {
            let bucket = &mut out[w[0] as usize..w[1] as usize];
            if bucket.len() > 1 {
                bucket.sort_unstable_by_key(Record::key);
            }
        }
    }
}

/// Counting sort of `sources` into `out` (room for exactly all of them)
/// by the `radix` bits after the top `skip`; leaves in `bounds` where each
/// bucket starts, and the end.
fn scatter(
    sources: &[&[Record]],
    skip: u32,
    radix: u32,
    out: &mut [Record],
    bounds: &mut Vec<u32>,
) {
    let shift = 64 - skip - radix;
    let mask = (1u64 << radix) - 1;
    let digit = |r: &Record| ((r.hi >> shift) & mask) as usize;
    // Bucket `d` is counted at `d + 2`, then each entry made the sum of
    // those before it: `d + 1` holds where bucket `d` starts, and serves as
    // its next place as records go in; it ends where bucket `d + 1` starts,
    // and `bounds[..=1 << radix]` is then every bucket's start, and the end.
    bounds.clear();
    bounds.resize((1 << radix) + 2, 0);
    for source in sources {
        for (i, r) in source.iter().enumerate() {
            prefetch(source, i + COUNT_AHEAD);
            bounds[digit(r) + 2] += 1;
        }
    }
    for i in 2..bounds.len() {
        bounds[i] += bounds[i - 1];
    }
    for r in sources.iter().flat_map(|s| s.iter()) {
        let next = &mut bounds[digit(r) + 1];
        out[*next as usize] = *r;
        *next += 1;
    }
    bounds.pop();
}

/// Records the counting pass asks for ahead of the one it reads (2 KiB):
/// the records were written long before, by another core, and the
/// hardware's prefetch stops at each 4 KiB page.
const COUNT_AHEAD: usize = 86;

/// Furthest a record moves in the insertion pass before the pass gives up.
const NEAR: usize = 8;

/// Sorts `records` by insertion while no record moves more than `near`
/// places; false when one would have to (the order is then only partly
/// sorted, every record still among the ones it was between).
fn insertion_sort(records: &mut [Record], near: usize) -> bool {
    let less = |a: &Record, b: &Record| (a.hi, a.mid, a.lo) < (b.hi, b.mid, b.lo);
    for i in 1..records.len() {
        if !less(&records[i], &records[i - 1]) {
            continue;
        }
        let r = records[i];
        let mut j = i;
        while j > 0 && less(&r, &records[j - 1]) {
            if i - j == near {
                records[j] = r;
                return false;
            }
            records[j] = records[j - 1];
            j -= 1;
        }
        records[j] = r;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_like_the_standard_sort() {
        let mut rng = seekless_testkit::Rng::xorshift64((0x1234_5678_9abc_def0) | 1);
        let mut next = || rng.next_u64();
        // Crowded buckets (a tenth of the records share all but their low
        // 8 bits) first, last, or none: the insertion pass gives up early,
        // late, or never; in one pass or, from TWO_PASS records, two.
        let cases = [0, 1, 255, 256, 5000, 70_000].map(|n| (n, 0));
        let two_pass = TWO_PASS + 1000;
        let more = [
            (70_000, u64::MAX),
            (70_000, 1),
            (two_pass, 0),
            (two_pass, u64::MAX),
        ];
        for (n, crowd) in cases.into_iter().chain(more) {
            let mut records: Vec<Record> = (0..n)
                .map(|i| Record {
                    // Same top 8 bits, some duplicates.
                    hi: (0xAB << 56)
                        | if i % 10 == 0 && crowd != 1 {
                            (crowd & 0x00ff_ffff_ffff_ff00) | next() & 0xff
                        } else {
                            next() >> 8
                        },
                    mid: next(),
                    lo: next() as u32,
                    count: i as u32,
                })
                .collect();
            let mut expect = records.clone();
            expect.sort_by_key(Record::key);
            // From one source, and from the same records cut in three.
            let (a, rest) = records.split_at(n / 3);
            let (b, c) = rest.split_at(rest.len() / 2);
            let (mut cut, mut spare, mut counts) = (Vec::new(), Vec::new(), Vec::new());
            sort_into(&[a, b, c], 8, &mut cut, &mut spare, &mut counts);
            // Into memory that held more records, and fewer, than it will.
            let mut whole = vec![Record::default(); if n % 2 == 0 { 3 } else { n + 7 }];
            sort_into(&[&records], 8, &mut whole, &mut spare, &mut counts);
            assert_eq!(cut, whole);
            records = whole;
            let keys: Vec<Key> = records.iter().map(Record::key).collect();
            let expect_keys: Vec<Key> = expect.iter().map(Record::key).collect();
            assert_eq!(keys, expect_keys);
        }
    }

    #[test]
    fn the_insertion_pass_gives_up_only_past_its_reach() {
        let record = |hi| Record {
            hi,
            ..Record::default()
        };
        let mut near: Vec<Record> = [5, 1, 2, 3, 4].map(record).to_vec();
        assert!(insertion_sort(&mut near, 4));
        assert_eq!(near, [1, 2, 3, 4, 5].map(record));
        let mut far: Vec<Record> = [2, 3, 4, 5, 6, 1].map(record).to_vec();
        assert!(!insertion_sort(&mut far, 4));
        let mut keys: Vec<u64> = far.iter().map(|r| r.hi).collect();
        keys.sort_unstable();
        assert_eq!(keys, [1, 2, 3, 4, 5, 6]);
    }
}
