use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use memmap2::{MmapOptions, MmapRaw};

use crate::prepare::direct_io::Aligned;
use crate::prepare::sort;

use super::budget::*;
use super::read_ahead::*;
use super::spill::*;
use super::*;

/// Partitions of a budget made for input not known to fit.
const PARTS: usize = 1 << PART_BITS;

#[test]
fn large_inputs_known_to_fit_get_more_partitions() {
    assert_eq!(part_bits(None), PART_BITS);
    assert_eq!(part_bits(Some(0)), PART_BITS);
    assert_eq!(part_bits(Some(1)), PART_BITS);
    // Up to 2^24 records, 2^16 or fewer a partition in 256.
    assert_eq!(part_bits(Some(1 << 24)), 8);
    assert_eq!(part_bits(Some((1 << 24) + 1)), 9);
    assert_eq!(part_bits(Some(1 << 26)), 10);
    assert_eq!(part_bits(Some(u64::MAX)), 10);
    let gib = 1u64 << 30;
    // 2.4 GB of text (55M hashes) is at most 80M records: known to fit
    // 4 GiB, 1,024 partitions; not known to fit 1 GiB (spills may
    // come), or of unknown size, 256.
    let wide = Budget::new(4 * gib, 3, 2_400_000_000).unwrap();
    assert_eq!((wide.part_bits(), wide.parts()), (10, 1024));
    assert_eq!(Budget::new(gib, 3, 2_400_000_000).unwrap().parts(), 256);
    assert_eq!(Budget::new(4 * gib, 3, 0).unwrap().parts(), 256);
    // 441 MB (10M hashes): 256.
    assert_eq!(Budget::new(4 * gib, 3, 441_000_000).unwrap().parts(), 256);
}

#[test]
fn records_go_to_the_partition_of_their_top_bits() {
    let dir = std::env::temp_dir().join(format!("seekless-wide-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut rng = seekless_testkit::Rng::xorshift64((0x1D3A) | 1);
    let mut next = || rng.next_u64();
    for bits in [PART_BITS, 9, 10] {
        TEST_PART_BITS.set(Some(bits));
        let budget = Budget::new(64 << 20, 1, 0).unwrap();
        TEST_PART_BITS.set(None);
        let spill = Spill::new(&dir, budget.parts());
        let mut held = Partitions::new(&budget, &spill);
        let records: Vec<Record> = (0..20_000)
            .map(|_| Record {
                hi: next(),
                mid: next(),
                lo: next() as u32,
                count: 1,
            })
            .collect();
        for &r in &records {
            held.put(r).unwrap();
        }
        let parts = held.into_segments().unwrap();
        assert_eq!(parts.len(), 1 << bits);
        let mut back = Vec::new();
        for (p, segments) in parts.iter().enumerate() {
            for r in segments.iter().flat_map(|s| s.iter()) {
                assert_eq!(r.hi >> (64 - bits), p as u64);
                back.push(*r);
            }
        }
        assert_eq!(spill.bytes.load(Ordering::Relaxed), 0);
        back.sort_by_key(Record::key);
        let mut expect = records;
        expect.sort_by_key(Record::key);
        assert!(back == expect, "{bits} bits");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_budget_holds_the_newest_records_and_spills_the_rest() {
    for threaded in [false, true] {
        let dir =
            std::env::temp_dir().join(format!("seekless-held-{}-{threaded}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let spill = Spill::new(&dir, PARTS);
        // Two holders, 64-record segments, 1,000 segments: 486 beyond
        // the first each buffer has and the two spares.
        let memory = 1000 * 64 * RECORD_BYTES as u64;
        let budget = Budget::new(memory, 2, 0).unwrap();
        assert_eq!(budget.segment, 64);
        assert_eq!(budget.left.load(Ordering::Relaxed), 1000 - 2 * PARTS - 2);
        assert_eq!(budget.spares.load(Ordering::Relaxed), 2);
        let held = if threaded {
            // Spills written on a thread of their own, as a build does.
            std::thread::scope(|s| {
                let (jobs, served) = mpsc::channel();
                s.spawn(|| spill.serve(served));
                let a = Partitions::with_writer(&budget, &spill, jobs.clone());
                let b = Partitions::with_writer(&budget, &spill, jobs);
                fill_and_hold(a, b)
            })
        } else {
            fill_and_hold(
                Partitions::new(&budget, &spill),
                Partitions::new(&budget, &spill),
            )
        };
        // Every segment is within the budget, and all but the last one
        // of each holder's buffer is full; a spare each is taken only
        // when spills go to the writer.
        let segments: usize = held.iter().map(Vec::len).sum();
        assert!(segments <= 1000, "{segments} segments");
        let records: usize = held.iter().flatten().map(|s| s.len()).sum();
        assert!(records > (1000 - 2 * PARTS - 2) * 64, "{records} held");
        assert_eq!(budget.left.load(Ordering::Relaxed), 0);
        let spares = if threaded { 0 } else { 2 };
        assert_eq!(budget.spares.load(Ordering::Relaxed), spares);
        // Held and spilled, every record is there once.
        let mut back: Vec<Record> = Vec::new();
        let mut memory = Aligned::default();
        for (p, segments) in held.iter().enumerate() {
            let start = back.len();
            back.extend_from_slice(spill.read(p, &mut memory).unwrap());
            let spilled = back.len() - start;
            for segment in segments {
                back.extend_from_slice(segment);
            }
            // Partition 3 spilled its oldest records: each record the
            // first holder kept is newer than each one it spilled.
            if p == 3 {
                let (out, kept) = back[start..].split_at(spilled);
                let first = |r: &&Record| r.lo.is_multiple_of(2);
                let newest_out = out.iter().filter(first).map(|r| r.lo).max().unwrap();
                let oldest_kept = kept.iter().filter(first).map(|r| r.lo).min().unwrap();
                assert!(
                    newest_out < oldest_kept,
                    "{newest_out} spilled, {oldest_kept} kept"
                );
            }
        }
        back.sort_by_key(|r| r.lo);
        assert_eq!(back, sent_records());
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn a_failed_spill_refuses_every_later_record_within_the_budget() {
    // Spill files cannot be made in a directory that does not exist:
    // the first spill fails, on the holder's thread or the writer's.
    let missing = std::env::temp_dir().join(format!("seekless-gone-{}", std::process::id()));
    for threaded in [false, true] {
        let spill = Spill::new(&missing, PARTS);
        let memory = 1000 * 64 * RECORD_BYTES as u64;
        let budget = Budget::new(memory, 1, 0).unwrap();
        let mut rng = seekless_testkit::Rng::xorshift64((0x5B17) | 1);
        let mut next = || rng.next_u64();
        let mut record = || Record {
            hi: next(),
            mid: 0,
            lo: 0,
            count: 1,
        };
        let mut put_all = |mut held: Partitions<'_>| {
            let mut first = None;
            // Far more records than the budget holds: each after the
            // failure is refused, none is given memory the budget has
            // not (which would panic).
            for i in 0..200_000 {
                if let Err(e) = held.put(record()) {
                    first.get_or_insert((i, e.to_string()));
                    assert!(held.failed());
                }
            }
            let (at, error) = first.expect("a spill failed");
            assert!(at < 1000 * 64, "the spill failed at record {at}");
            assert!(error.contains(missing.to_str().unwrap()), "{error}");
        };
        if threaded {
            std::thread::scope(|s| {
                let (jobs, served) = mpsc::channel();
                s.spawn(|| spill.serve(served));
                put_all(Partitions::with_writer(&budget, &spill, jobs));
            });
        } else {
            put_all(Partitions::new(&budget, &spill));
        }
        assert!(budget.next.load(Ordering::Relaxed) * 64 * RECORD_BYTES <= memory as usize);
    }
}

/// The records [`fill_and_hold`] sends: partition 3 gets a record in
/// four, in order (its count says when); the rest go anywhere.
fn sent_records() -> Vec<Record> {
    let mut rng = seekless_testkit::Rng::xorshift64((0xb0d9) | 1);
    let mut next = || rng.next_u64();
    (0..200_000u32)
        .map(|i| {
            let hi = if i % 4 == 0 {
                3 << 56 | next() >> 8
            } else {
                next()
            };
            Record {
                hi,
                mid: next(),
                lo: i,
                count: i,
            }
        })
        .collect()
}

/// Puts [`sent_records`] into `a` and `b` in turn; what they hold, by
/// partition.
fn fill_and_hold<'a>(mut a: Partitions<'a>, mut b: Partitions<'a>) -> Vec<Vec<Segment<'a>>> {
    for (i, record) in sent_records().into_iter().enumerate() {
        if i % 2 == 0 {
            a.put(record)
        } else {
            b.put(record)
        }
        .unwrap();
    }
    a.into_segments()
        .unwrap()
        .into_iter()
        .zip(b.into_segments().unwrap())
        .map(|(mut a, b)| {
            a.extend(b);
            a
        })
        .collect()
}

#[test]
fn memory_given_back_reads_as_zeros() {
    // Large enough to be given back on threads.
    let len = 80 << 20;
    let map = MmapRaw::from(MmapOptions::new().len(len).map_anon().unwrap());
    // SAFETY: the mapping is `len` bytes, only this test uses it.
    let bytes = unsafe { std::slice::from_raw_parts_mut(map.as_mut_ptr(), len) };
    bytes.fill(0xAB);
    give_back(&map, len - 5000);
    // SAFETY: as above.
    let bytes = unsafe { std::slice::from_raw_parts(map.as_ptr(), len) };
    let given = len - 5000;
    // Whole pages are given back, the last one begun too: what
    // follows it keeps its bytes.
    let kept = given.next_multiple_of(PAGE_BYTES).min(len);
    let multi = std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2);
    if cfg!(target_os = "linux") && multi {
        assert!(
            bytes[..given - PAGE_BYTES]
                .iter()
                .step_by(997)
                .all(|&b| b == 0)
        );
        assert_eq!(bytes[0], 0);
    }
    assert!(bytes[kept..].iter().all(|&b| b == 0xAB));
}

#[test]
fn input_known_to_fit_is_held_in_small_segments_handed_out_in_order() {
    let memory = 1 << 30;
    // Two holders, 512 buffers: eight segments a buffer are 10,922
    // records each, when the input is not known or may not fit (2 GB
    // of text may be 1.6 GB of records), made 10,752 (21 x 512): a
    // segment is a whole number of direct I/O blocks.
    let budget_sized = (memory / (512 * 8 * RECORD_BYTES as u64)) as usize;
    assert_eq!(budget_sized, 10_922);
    let budget_sized = budget_sized / DIRECT_RECORDS * DIRECT_RECORDS;
    assert_eq!(budget_sized, 10_752);
    assert!((budget_sized * RECORD_BYTES).is_multiple_of(ALIGN));
    assert_eq!(Budget::new(memory, 2, 0).unwrap().segment, budget_sized);
    let large = Budget::new(memory, 2, 2_000_000_000).unwrap();
    assert_eq!(large.segment, budget_sized);
    // 100 MB of text is at most 80 MB of records: small segments, and
    // room for those records and a segment begun a buffer.
    let budget = Budget::new(memory, 2, 100_000_000).unwrap();
    assert_eq!(budget.segment, FIT_SEGMENT);
    // Known to fit in huge pages: each one is claimed, faulted in and
    // timed by the holder whose segment first reaches it.
    #[cfg(target_os = "linux")]
    if let Some(huge) = &budget.huge {
        let bytes = FIT_SEGMENT * RECORD_BYTES;
        let segments = HUGE_PAGE / bytes + 2;
        let held: Vec<Segment> = (0..segments).map(|_| budget.hand_out()).collect();
        let base = budget.memory.as_mut_ptr() as usize;
        let reached = base + segments * bytes;
        let claimed = (reached - base.next_multiple_of(HUGE_PAGE)).div_ceil(HUGE_PAGE);
        assert_eq!(huge.claimed.load(Ordering::Relaxed), claimed);
        assert!(huge.faulted.load(Ordering::Relaxed) <= claimed);
        assert!(held.iter().all(|s| s.is_empty()));
    }
    let bytes = FIT_SEGMENT * RECORD_BYTES;
    assert_eq!(
        budget.memory.len(),
        (80_000_000usize.div_ceil(bytes) + 512 + 2) * bytes
    );
    let mut segments: Vec<Segment> = (0..3).map(|_| budget.hand_out()).collect();
    for (i, segment) in segments.iter_mut().enumerate() {
        assert!(segment.is_empty() && !segment.is_full());
        while !segment.is_full() {
            let n = segment.len() as u32;
            segment.push(Record {
                lo: n,
                count: i as u32,
                ..Record::default()
            });
        }
    }
    for (i, segment) in segments.iter().enumerate() {
        assert_eq!(segment.len(), FIT_SEGMENT);
        assert!(
            segment
                .iter()
                .enumerate()
                .all(|(n, r)| r.lo == n as u32 && r.count == i as u32)
        );
    }
    // One after the other in the mapping.
    let end = segments[0].as_ptr_range().end;
    assert_eq!(end, segments[1].as_ptr());
    // A budget smaller than one segment a buffer still has each
    // buffer's first, and none beyond.
    let tiny = Budget::new(1000, 2, 0).unwrap();
    assert_eq!(tiny.segment, 64);
    let firsts: Vec<Segment> = (0..512).map(|_| tiny.hand_out()).collect();
    assert!(firsts.iter().all(|s| s.records.len() == 64));
    assert!(tiny.take().is_none());
}

#[test]
fn spills_read_ahead_come_to_their_partitions_and_a_stop_leaves_the_rest() {
    let dir = std::env::temp_dir().join(format!("seekless-ahead-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut rng = seekless_testkit::Rng::xorshift64((0xA4EAD) | 1);
    let mut next = || rng.next_u64();
    let spill = Spill::new(&dir, PARTS);
    let mut encoded = Vec::new();
    // Partitions 3, 5, 6 and 9 spill (9 torn); the others do not.
    let mut written = vec![Vec::new(); PARTS];
    for (p, n) in [(3, 10), (5, 70_000), (6, 1), (9, 2)] {
        written[p] = (0..n)
            .map(|_| Record {
                hi: next(),
                mid: next(),
                lo: next() as u32,
                count: next() as u32,
            })
            .collect::<Vec<_>>();
        spill.write(p, &written[p], &mut encoded).unwrap();
    }
    {
        let mut file = spill.files[9].lock().unwrap();
        let f = file.as_mut().unwrap();
        crate::file_at::write_all_at(&f.file.file, &[1, 2, 3], f.len).unwrap();
    }
    let ahead = ReadAhead::default();
    let stop = AtomicBool::new(false);
    let (give, pool) = mpsc::channel();
    // Two buffers: the reader waits for one given back before the third.
    for _ in 0..2 {
        give.send(Aligned::default()).unwrap();
    }
    std::thread::scope(|s| {
        let (ahead, spill, stop) = (&ahead, &spill, &stop);
        s.spawn(move || ahead.serve(spill, 0..PARTS, &pool, stop));
        for (p, written) in written.iter().enumerate().take(9) {
            match ahead.take(spill, p) {
                None => assert!(written.is_empty(), "partition {p}"),
                Some(read) => {
                    let (mut memory, n) = read.unwrap();
                    let records = sort::records_mut(memory.first_mut(n * RECORD_BYTES));
                    assert!(records[..] == written[..], "partition {p}");
                    // Refused once the reader has read the last spill
                    // and gone, as a packer's give-back may be.
                    let _ = give.send(memory);
                }
            }
        }
        let err = ahead.take(spill, 9).unwrap().unwrap_err();
        assert!(err.to_string().contains("torn"), "{err}");
    });

    // Stopped before it reads anything: each partition is left to its
    // packer, which reads it itself.
    spill.write(4, &written[5], &mut encoded).unwrap();
    let ahead = ReadAhead::default();
    stop.store(true, Ordering::Relaxed);
    let (give, pool) = mpsc::channel();
    give.send(Aligned::default()).unwrap();
    ahead.serve(&spill, 0..PARTS, &pool, &stop);
    assert!(ahead.take(&spill, 4).is_none());
    let mut memory = Aligned::default();
    assert!(spill.read(4, &mut memory).unwrap() == &written[5][..]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn spilled_records_come_back_as_written_and_a_torn_file_is_an_error() {
    let dir = std::env::temp_dir().join(format!("seekless-spill-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut rng = seekless_testkit::Rng::xorshift64((0x5111) | 1);
    let mut next = || rng.next_u64();
    let mut random = |n: usize| -> Vec<Record> {
        (0..n)
            .map(|_| Record {
                hi: next(),
                mid: next(),
                lo: next() as u32,
                count: next() as u32,
            })
            .collect()
    };
    // Whole segments in aligned memory (as the budget's are), and
    // records anywhere.
    let blocks = 5 * DIRECT_RECORDS;
    let mut segment = Aligned::default();
    let aligned = sort::records_mut(segment.first_mut(blocks * RECORD_BYTES));
    aligned.copy_from_slice(&random(blocks));
    let loose = random(70_000);
    for direct in [true, false] {
        let mut spill = Spill::new(&dir, PARTS);
        spill.direct &= direct;
        let mut encoded = Vec::new();
        // Aligned, then loose in two writes (the second longer than an
        // encoding piece), then aligned records at an offset that is
        // not, which go the usual way.
        spill.write(7, aligned, &mut encoded).unwrap();
        spill.write(7, &loose[..100], &mut encoded).unwrap();
        spill.write(7, &loose[100..], &mut encoded).unwrap();
        spill.write(7, aligned, &mut encoded).unwrap();
        let n = 2 * blocks + loose.len();
        assert_eq!(spill.records[7].load(Ordering::Relaxed), n as u64);
        assert_eq!(spill.bytes.load(Ordering::Relaxed), (n * 24) as u64);
        if direct && direct_io_works(&dir) {
            let file = spill.files[7].lock().unwrap();
            assert!(file.as_ref().unwrap().direct, "direct I/O was refused");
        }
        let mut expected = aligned.to_vec();
        expected.extend_from_slice(&loose);
        expected.extend_from_slice(aligned);
        let mut memory = Aligned::default();
        assert!(spill.read(7, &mut memory).unwrap() == &expected[..]);
        // Read once; a partition never written gives nothing.
        assert!(spill.read(7, &mut memory).unwrap().is_empty());
        assert!(spill.read(8, &mut memory).unwrap().is_empty());

        // A file that does not end with a whole record is torn.
        spill.write(9, aligned, &mut encoded).unwrap();
        let mut file = spill.files[9].lock().unwrap();
        let f = file.as_mut().unwrap();
        crate::file_at::write_all_at(&f.file.file, &[1, 2, 3], f.len).unwrap();
        drop(file);
        let err = spill.read(9, &mut memory).unwrap_err();
        assert!(err.to_string().contains("torn"), "{err}");
    }
    // The encoding is each field little-endian, in order.
    let mut bytes = Vec::new();
    loose[0].write(&mut bytes);
    assert_eq!(bytes, sort::as_bytes(&loose[..1]));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Whether files in `dir` can be opened for direct I/O (never, but on
/// Linux).
#[cfg(not(target_os = "linux"))]
fn direct_io_works(_dir: &Path) -> bool {
    false
}

/// Whether files in `dir` can be opened for direct I/O.
#[cfg(target_os = "linux")]
fn direct_io_works(dir: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    let probe = dir.join("direct-probe");
    let works = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT)
        .open(&probe)
        .is_ok();
    let _ = std::fs::remove_file(&probe);
    works
}

/// Its own test: qemu-user keeps bookkeeping for every page mapped, so
/// under qemu this reservation costs gigabytes of real memory
/// (scripts/test-emulated.sh skips it there).
#[test]
fn a_budget_beyond_the_address_space_is_what_it_has_room_for() {
    let vast = Budget::new(1 << 62, 2, 0).unwrap();
    assert!(vast.memory.len() < 1 << 50, "{}", vast.memory.len());
    assert!(vast.take().is_some());
}
