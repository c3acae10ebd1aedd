//! Phase 2 of a build: partitions grouped so that groups pack
//! independently, each group sorted, its duplicates merged and its pages
//! packed on a packer thread; the pages written in order by the caller.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, mpsc};

use crate::error::{Error, Result};
use crate::format::layout::{Layout, PAGE};
use crate::format::page::{DirEntry, Encoder, PageBuf, page_bytes};
use crate::prepare::direct_io::Aligned;
use crate::prepare::options::Progress;
use crate::prepare::partition::{Budget, PART_BITS, ReadAhead, Segment, Spill};
use crate::prepare::sort::{self, RECORD_BYTES, Record};

/// partly empty, so groups must span many pages (about 140 here).
pub(super) const MIN_GROUP: u64 = 32 << 10;

/// Splits the partitions into consecutive groups that are packed
/// independently (in parallel): each at least `MIN_GROUP` records, except
/// the last, and made of whole runs of `run` partitions (those that share
/// their top 8 bits: the groups, and so the pages, are the same however
/// many partitions hold the records). Partitions can only be split apart
/// where a partition boundary is also a bucket boundary (`aligned`);
/// otherwise all form one group.
pub(super) fn group_partitions(sizes: &[u64], aligned: bool, run: usize) -> Vec<Vec<usize>> {
    if !aligned {
        return vec![(0..sizes.len()).collect()];
    }
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut current = Vec::new();
    let mut held = 0;
    for (p, &size) in sizes.iter().enumerate() {
        current.push(p);
        held += size;
        if held >= MIN_GROUP && (p + 1).is_multiple_of(run) {
            groups.push(std::mem::take(&mut current));
            held = 0;
        }
    }
    if !current.is_empty() {
        match groups.last_mut() {
            Some(last) if held < MIN_GROUP / 2 => last.extend(current),
            _ => groups.push(current),
        }
    }
    groups
}

/// Pages packed from one group of partitions.
pub(super) struct Packed {
    pub(super) pages: Vec<PageBuf>,
    pub(super) dir: Vec<DirEntry>,
    pub(super) hashes: u64,
    pub(super) duplicates: u64,
}

/// Spills read ahead of the packers, and where their memory goes back.
pub(super) struct Ahead<'a> {
    pub(super) read: &'a ReadAhead,
    pub(super) give: mpsc::Sender<Aligned>,
}

/// Memory a packing thread reuses from one partition to the next.
#[derive(Default)]
pub(super) struct Scratch {
    /// A partition's spilled records, read back here when no read-ahead
    /// did.
    pub(super) spilled: Aligned,
    pub(super) sorted: Vec<Record>,
    /// The first pass of a large partition's sort.
    pub(super) spare: Vec<Record>,
    /// The sort's buckets.
    pub(super) counts: Vec<u32>,
}

/// Sorts the partitions of a group, merges duplicates and packs pages.
pub(super) fn pack(
    layout: Layout,
    group: &[usize],
    buffers: &[Mutex<Vec<Segment>>],
    spill: &Spill,
    ahead: Option<&Ahead>,
    scratch: &mut Scratch,
    pages: Vec<PageBuf>,
) -> Result<Packed> {
    let mut encoder = Encoder::new(layout);
    encoder.pages = pages;
    let mut hashes = 0;
    let mut duplicates = 0;
    for &p in group {
        let held = std::mem::take(&mut *buffers[p].lock().expect("buffers lock"));
        let mut read = match ahead {
            Some(ahead) => ahead.read.take(spill, p).transpose()?,
            None => None,
        };
        let spilled: &[Record] = match &mut read {
            Some((memory, n)) => sort::records_mut(memory.first_mut(*n * RECORD_BYTES)),
            None => spill.read(p, &mut scratch.spilled)?,
        };
        let sources: Vec<&[Record]> = held.iter().map(|s| &s[..]).chain([spilled]).collect();
        sort::sort_into(
            &sources,
            // The partition's own bits, which its records share.
            spill.parts().trailing_zeros(),
            &mut scratch.sorted,
            &mut scratch.spare,
            &mut scratch.counts,
        );
        drop(sources);
        if let (Some(ahead), Some((memory, _))) = (ahead, read) {
            let _ = ahead.give.send(memory);
        }
        let merged = encoder.push_sorted(scratch.sorted.iter().map(|r| (r.key(), r.count)));
        hashes += merged.hashes;
        duplicates += merged.duplicates;
    }
    encoder.flush();
    Ok(Packed {
        pages: encoder.pages,
        dir: encoder.dir,
        hashes,
        duplicates,
    })
}

/// What phase 2 wrote after the header block.
pub(super) struct Packing {
    /// The directory of the pages written, in order.
    pub(super) dir: Vec<DirEntry>,
    pub(super) hashes: u64,
    /// Duplicates the sort merged.
    pub(super) duplicates: i64,
}

/// What every packer shares.
struct Work<'w, 'b> {
    layout: Layout,
    groups: &'w [Vec<usize>],
    buffers: &'w [Mutex<Vec<Segment<'b>>>],
    /// The next group to take.
    next: &'w AtomicUsize,
    failed: &'w AtomicBool,
    spill: &'w Spill,
    /// Pages' memory given back by the writer.
    pool: &'w Mutex<mpsc::Receiver<Vec<PageBuf>>>,
}

/// Phase 2: the partitions, in groups that pack independently, sorted and
/// packed by `threads` packers and written to `out` in order, after a
/// header block of zeros (the trailer rewrites it).
pub(super) fn pack_partitions<W: Write>(
    out: &mut W,
    layout: Layout,
    buffers: Vec<Vec<Segment<'_>>>,
    budget: &Budget,
    spill: &Spill,
    threads: usize,
    progress: &dyn Progress,
) -> Result<Packing> {
    // Partitions are independent groups of pages when a partition boundary
    // is also a bucket boundary; with fewer bucket bits, one group.
    let sizes: Vec<u64> = (0..budget.parts())
        .map(|p| {
            let held: usize = buffers[p].iter().map(|s| s.len()).sum();
            held as u64 + spill.records[p].load(Ordering::Relaxed)
        })
        .collect();
    let part_bits = budget.part_bits();
    let run = 1 << part_bits.saturating_sub(PART_BITS);
    let groups = group_partitions(&sizes, layout.h >= part_bits, run);
    progress.writing(groups.len() as u64);
    out.write_all(&[0u8; PAGE])
        .map_err(|e| Error::io(None, e))?;
    let buffers: Vec<Mutex<Vec<Segment>>> = buffers.into_iter().map(Mutex::new).collect();
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    // Spills are read back ahead of the packers, into one buffer more than
    // there are packers, each given back once its partition is sorted.
    let packers = threads;
    let read_ahead = (spill.bytes.load(Ordering::Relaxed) > 0).then(ReadAhead::default);
    let (give, given) = mpsc::channel::<Aligned>();
    if read_ahead.is_some() {
        for _ in 0..=packers {
            let _ = give.send(Aligned::default());
        }
    }
    let (tx, rx) = mpsc::sync_channel::<(usize, Result<Packed>)>(packers);
    // Pages' memory goes back to the packers once written: at a billion
    // hashes, 17 GB of pages would otherwise each be faulted in afresh.
    let (pool_tx, pool_rx) = mpsc::channel::<Vec<PageBuf>>();
    let pool_rx = Mutex::new(pool_rx);
    let mut packing = Packing {
        dir: Vec::new(),
        hashes: 0,
        duplicates: 0,
    };
    let mut first_error = None;
    std::thread::scope(|s| {
        if let Some(read) = &read_ahead {
            let (order, failed) = (groups.iter().flatten().copied(), &failed);
            s.spawn(move || read.serve(spill, order, &given, failed));
        }
        for _ in 0..packers {
            let tx = tx.clone();
            let ahead = read_ahead.as_ref().map(|read| Ahead {
                read,
                give: give.clone(),
            });
            let work = Work {
                layout,
                groups: &groups,
                buffers: &buffers,
                next: &next,
                failed: &failed,
                spill,
                pool: &pool_rx,
            };
            s.spawn(move || packer(&work, ahead.as_ref(), &tx));
        }
        // The read-ahead stops once the packers, its pool's givers, have.
        drop(give);
        drop(tx);
        first_error = write_in_order(rx, out, &pool_tx, &failed, progress, &mut packing);
    });
    match first_error {
        Some(e) => Err(e),
        None => Ok(packing),
    }
}

/// A packer thread: groups taken in turn and packed until there are no
/// more or one failed.
fn packer(work: &Work, ahead: Option<&Ahead>, tx: &mpsc::SyncSender<(usize, Result<Packed>)>) {
    let mut scratch = Scratch::default();
    loop {
        let g = work.next.fetch_add(1, Ordering::Relaxed);
        if g >= work.groups.len() || work.failed.load(Ordering::Relaxed) {
            break;
        }
        let pages = work
            .pool
            .lock()
            .expect("pool lock")
            .try_recv()
            .unwrap_or_default();
        let packed = pack(
            work.layout,
            &work.groups[g],
            work.buffers,
            work.spill,
            ahead,
            &mut scratch,
            pages,
        );
        if packed.is_err() {
            work.failed.store(true, Ordering::Relaxed);
        }
        if tx.send((g, packed)).is_err() {
            break;
        }
    }
}

/// Writes the packers' groups to `out` in group order as they come, gives
/// their pages' memory back, and adds them up in `packing`. Returns the
/// first error (the packers stop at it).
fn write_in_order<W: Write>(
    rx: mpsc::Receiver<(usize, Result<Packed>)>,
    out: &mut W,
    pool_tx: &mpsc::Sender<Vec<PageBuf>>,
    failed: &AtomicBool,
    progress: &dyn Progress,
    packing: &mut Packing,
) -> Option<Error> {
    let mut first_error = None;
    let mut pending = BTreeMap::new();
    let mut want = 0;
    for (g, packed) in rx {
        pending.insert(g, packed);
        while let Some(packed) = pending.remove(&want) {
            want += 1;
            match packed.and_then(|p| {
                out.write_all(page_bytes(&p.pages))
                    .map_err(|e| Error::io(None, e))?;
                Ok(p)
            }) {
                Ok(mut p) => {
                    packing.dir.extend(p.dir);
                    p.pages.clear();
                    let _ = pool_tx.send(p.pages);
                    packing.hashes += p.hashes;
                    packing.duplicates += p.duplicates as i64;
                    progress.written();
                }
                Err(e) => {
                    failed.store(true, Ordering::Relaxed);
                    first_error.get_or_insert(e);
                }
            }
        }
    }
    first_error
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_large_and_cover_every_partition() {
        const PARTS: usize = 256;
        let flat = |groups: &[Vec<usize>]| groups.concat();
        let all: Vec<usize> = (0..PARTS).collect();
        let small = vec![3u64; PARTS];
        assert_eq!(group_partitions(&small, true, 1), vec![all.clone()]);
        let big = vec![MIN_GROUP * 2; PARTS];
        let groups = group_partitions(&big, true, 1);
        assert_eq!(groups.len(), PARTS);
        assert_eq!(flat(&groups), all);
        let medium = vec![MIN_GROUP / 10; PARTS];
        let groups = group_partitions(&medium, true, 1);
        assert_eq!(flat(&groups), all);
        assert!(groups.iter().all(|g| g.len() >= 10));
        assert_eq!(group_partitions(&big, false, 1), vec![all]);
        // Four times the partitions, each a quarter: the same groups, of
        // whole runs of four.
        let quarter = vec![MIN_GROUP / 10 / 4; PARTS * 4];
        let wide = group_partitions(&quarter, true, 4);
        let narrow = group_partitions(&medium, true, 1);
        assert_eq!(wide.len(), narrow.len());
        for (w, n) in wide.iter().zip(&narrow) {
            let runs: Vec<usize> = w.iter().step_by(4).map(|p| p / 4).collect();
            assert_eq!(&runs, n);
            assert_eq!(w.len(), 4 * n.len());
        }
    }
}
