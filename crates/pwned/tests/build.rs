//! Building indexes and reading them back: every member found with its
//! exact count, non-members absent, export in order, on every input path.

use std::collections::BTreeMap;

use proptest::prelude::*;
use seekless_pwned::test_util::{SortedWriter, Words, build_to_vec};
use seekless_pwned::{BuildOptions, ErrorKind, Index, Input, Key, Kind, Summary, build};
use seekless_testkit::{Rng, TempDir};

/// `key` moved into range `prefix`: its first 20 bits replaced, the rest
/// shifted down.
fn in_range(key: Key, prefix: u64) -> Key {
    let mut words = Words::from(key);
    words.hi = (prefix << 44) | (words.hi >> 20);
    words.key()
}

/// Random keys from the tests' generator (xorshift64*: the expected
/// numbers below depend on its sequence).
trait RandomKey {
    fn key(&mut self, kind: Kind) -> Key;
}

impl RandomKey for Rng {
    fn key(&mut self, kind: Kind) -> Key {
        Words {
            hi: self.next_u64(),
            mid: self.next_u64(),
            lo: if kind == Kind::Sha1 {
                self.next_u64() as u32
            } else {
                0
            },
        }
        .key()
    }
}

fn options(threads: usize) -> BuildOptions {
    let mut o = BuildOptions::default();
    o.threads = threads;
    o
}

/// Two threads and a 256 KiB budget, spilling into `tmp`.
fn spilling(tmp: std::path::PathBuf) -> BuildOptions {
    let mut o = options(2);
    o.memory = 256 << 10;
    o.tmp_dir = Some(tmp);
    o
}

/// Builds the index file `out` from the file `source`.
fn build_file(
    source: &std::path::Path,
    out: &std::path::Path,
    opts: &BuildOptions,
) -> seekless_pwned::Result<Summary> {
    build(
        vec![Input::Path(source.to_path_buf())],
        out,
        opts,
        &seekless_pwned::NoProgress,
    )
}

/// Writes lines for `entries` in the given order, with a mix of line
/// endings and case, and `:COUNT` left out for a count of 1 now and then.
fn corpus(kind: Kind, entries: &[(Key, u32)], seed: u64) -> Vec<u8> {
    let mut rng = Rng::xorshift64star(seed | 1);
    let mut text = Vec::new();
    for (i, &(key, count)) in entries.iter().enumerate() {
        let mut hex = key.to_hex(kind);
        if rng.next_u64().is_multiple_of(2) {
            hex = hex.to_lowercase();
        }
        text.extend_from_slice(hex.as_bytes());
        if count != 1 || !rng.next_u64().is_multiple_of(3) {
            text.extend_from_slice(format!(":{count}").as_bytes());
        }
        if i + 1 < entries.len() || rng.next_u64().is_multiple_of(2) {
            text.extend_from_slice(if rng.next_u64().is_multiple_of(2) {
                b"\r\n"
            } else {
                b"\n"
            });
        }
    }
    text
}

/// Builds an index in memory from one input named `name` holding `text`.
fn build_text(
    name: &str,
    text: impl Into<Vec<u8>>,
    threads: usize,
) -> seekless_pwned::Result<(Vec<u8>, Summary)> {
    let input = Input::Bytes {
        name: name.into(),
        data: text.into(),
    };
    build_to_vec(vec![input], &options(threads))
}

/// An index of `entries` (written as by `corpus`), built in memory.
fn index_bytes(kind: Kind, entries: &[(Key, u32)], seed: u64) -> Vec<u8> {
    build_text("corpus", corpus(kind, entries, seed), 2)
        .unwrap()
        .0
}

fn expected(entries: &[(Key, u32)]) -> BTreeMap<Key, u64> {
    let mut map = BTreeMap::new();
    for &(key, count) in entries {
        *map.entry(key).or_insert(0u64) += u64::from(count);
    }
    map
}

fn check_index(index: &Index, expect: &BTreeMap<Key, u64>, rng: &mut Rng) {
    assert_eq!(index.len(), expect.len() as u64);
    for (&key, &count) in expect {
        assert_eq!(
            index.count(key).unwrap(),
            count,
            "{}",
            key.to_hex(index.kind())
        );
    }
    for _ in 0..2000 {
        let key = rng.key(index.kind());
        assert_eq!(
            index.count(key).unwrap(),
            expect.get(&key).copied().unwrap_or(0)
        );
    }
    let listed: Vec<(Key, u64)> = index.iter().map(Result::unwrap).collect();
    let want: Vec<(Key, u64)> = expect.iter().map(|(&k, &c)| (k, c)).collect();
    assert_eq!(listed, want);
    index.verify().unwrap();
}

fn random_entries(kind: Kind, n: usize, seed: u64) -> Vec<(Key, u32)> {
    let mut rng = Rng::xorshift64star(seed | 1);
    let mut entries: Vec<(Key, u32)> = (0..n)
        .map(|_| {
            let count = (u64::MAX / (rng.next_u64() | 1)).min(50_000_000) as u32;
            (rng.key(kind), count.max(1))
        })
        .collect();
    // Some duplicates, anywhere in the input.
    for i in 0..n / 50 {
        let j = (rng.next_u64() % n as u64) as usize;
        entries.push((entries[j].0, 1 + i as u32 % 7));
    }
    entries
}

#[test]
fn sha1_and_ntlm_round_trip_on_every_thread_count() {
    for kind in [Kind::Sha1, Kind::Ntlm] {
        let entries = random_entries(kind, 30_000, 7);
        let text = corpus(kind, &entries, 11);
        let expect = expected(&entries);
        let mut built = Vec::new();
        for threads in [1, 2, 3] {
            let input = Input::Bytes {
                name: "corpus".into(),
                data: text.clone(),
            };
            let (bytes, summary) = build_to_vec(vec![input], &options(threads)).unwrap();
            assert_eq!(summary.kind, Some(kind));
            assert_eq!(summary.hashes, expect.len() as u64);
            assert_eq!(
                summary.duplicates,
                entries.len() as u64 - expect.len() as u64
            );
            assert_eq!(summary.lines, entries.len() as u64);
            built.push(bytes);
        }
        assert!(
            built.windows(2).all(|w| w[0] == w[1]),
            "builds differ by thread count"
        );
        let index = Index::from_bytes(built.pop().unwrap()).unwrap();
        assert_eq!(index.kind(), kind);
        check_index(&index, &expect, &mut Rng::xorshift64star(99));
    }
}

/// 50,000 random SHA-1 lines: far more than a 256 KiB budget holds.
fn spilling_corpus() -> Vec<u8> {
    corpus(Kind::Sha1, &random_entries(Kind::Sha1, 50_000, 3), 5)
}

#[test]
fn spilling_to_disk_builds_the_same_index() {
    let text = spilling_corpus();
    let input = || Input::Bytes {
        name: "corpus".into(),
        data: text.clone(),
    };
    let (in_memory, summary) = build_to_vec(vec![input()], &options(2)).unwrap();
    assert_eq!(summary.spilled, 0);
    let tmp = TempDir::new("pwned-build-spill");
    let (spilled, summary) = build_to_vec(vec![input()], &spilling(tmp.to_path_buf())).unwrap();
    assert!(summary.spilled > 0, "a 256 KiB budget must spill");
    assert!(spilled == in_memory, "spilling changed the index");
    assert_eq!(
        std::fs::read_dir(&tmp).unwrap().count(),
        0,
        "spill files left behind"
    );
}

#[test]
fn a_spill_that_cannot_be_written_is_an_error() {
    // Spills go to a thread of their own: its failure must come back as
    // the build's error, with nothing left behind and no hang.
    let dir = TempDir::new("pwned-build-spill-fails");
    let missing = dir.join("no-such-dir");
    let out = dir.join("pwned.idx");
    let source = dir.join("corpus.txt");
    std::fs::write(&source, spilling_corpus()).unwrap();
    let err = build_file(&source, &out, &spilling(missing.clone())).unwrap_err();
    assert!(
        err.to_string().contains(&*missing.to_string_lossy()),
        "{err}"
    );
    assert!(!out.exists(), "an index was left after a failed build");
}

/// Per-range files of either kind (the width of their suffixes says which)
/// build the index the same lines in one file build.
#[test]
fn per_range_directory_matches_the_single_file() {
    for kind in [Kind::Sha1, Kind::Ntlm] {
        let mut rng = Rng::xorshift64star(17);
        // Hashes in a few ranges, as the downloader writes them.
        let mut entries = Vec::new();
        for prefix in [0x00000u64, 0x5BAA6, 0xFFFFF] {
            for _ in 0..300 {
                let key = in_range(rng.key(kind), prefix);
                entries.push((key, 1 + (rng.next_u64() % 1000) as u32));
            }
        }
        let dir = TempDir::new(&format!("pwned-build-ranges-{kind:?}"));
        let mut by_prefix: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        for &(key, count) in &entries {
            let hex = key.to_hex(kind);
            let file = by_prefix.entry(hex[..5].to_string()).or_default();
            file.extend_from_slice(format!("{}:{count}\r\n", &hex[5..]).as_bytes());
        }
        for (prefix, text) in &by_prefix {
            std::fs::write(dir.join(format!("{prefix}.txt")), text).unwrap();
        }
        std::fs::write(dir.join("README"), "not a range file").unwrap();
        let (from_dir, _) =
            build_to_vec(vec![Input::Path(dir.to_path_buf())], &options(2)).unwrap();
        let text = corpus(kind, &entries, 1);
        let (from_file, _) = build_to_vec(
            vec![Input::Bytes {
                name: "all".into(),
                data: text,
            }],
            &options(2),
        )
        .unwrap();
        assert!(
            from_dir == from_file,
            "{kind:?}: per-range input built another index"
        );
    }
}

#[test]
fn many_small_range_files_are_read_several_to_a_chunk() {
    // Enough files for more than one 4 MiB chunk, so that gathered chunks
    // are packed by the parsers and a chunk boundary falls between files.
    let kind = Kind::Sha1;
    let mut rng = Rng::xorshift64star(19);
    let dir = TempDir::new("pwned-build-many-ranges");
    let mut entries = Vec::new();
    for prefix in (0..2600u64).map(|i| i * 400) {
        let mut file = Vec::new();
        let mut keys: Vec<Key> = (0..45).map(|_| in_range(rng.key(kind), prefix)).collect();
        keys.sort();
        for key in keys {
            let count = 1 + (rng.next_u64() % 50) as u32;
            entries.push((key, count));
            file.extend_from_slice(format!("{}:{count}\r\n", &key.to_hex(kind)[5..]).as_bytes());
        }
        std::fs::write(dir.join(format!("{prefix:05X}.txt")), file).unwrap();
    }
    let (bytes, summary) = build_to_vec(vec![Input::Path(dir.to_path_buf())], &options(2)).unwrap();
    assert!(summary.streamed);
    assert_eq!(summary.lines, entries.len() as u64);
    let index = Index::from_bytes(bytes).unwrap();
    check_index(&index, &expected(&entries), &mut Rng::xorshift64star(5));

    // A malformed line is named by its own file and line.
    let bad = dir.join(format!("{:05X}.txt", 1300 * 400));
    let mut text = std::fs::read_to_string(&bad).unwrap();
    let seventh = text.match_indices("\r\n").nth(5).unwrap().0 + 2;
    text.insert_str(seventh, "XYZ");
    std::fs::write(&bad, text).unwrap();
    let e = build_to_vec(vec![Input::Path(dir.to_path_buf())], &options(2)).unwrap_err();
    match e.kind() {
        ErrorKind::BadLine { file, line, .. } => {
            assert!(file.ends_with(&format!("{:05X}.txt", 1300 * 400)), "{file}");
            assert_eq!(*line, 7);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn malformed_lines_stop_the_build_or_are_counted() {
    let mut text = Vec::new();
    let mut rng = Rng::xorshift64star(5);
    for i in 1..=20_000u32 {
        if i == 12_345 {
            text.extend_from_slice(b"5BAA61E4C9B93F3F0682250B6CF8331B7EE68FZ8:12\r\n");
        } else if i == 17_000 {
            text.extend_from_slice(b"garbage\r\n");
        } else {
            text.extend_from_slice(
                format!("{}:{i}\r\n", rng.key(Kind::Sha1).to_hex(Kind::Sha1)).as_bytes(),
            );
        }
    }
    let input = || Input::Bytes {
        name: "corpus.txt".into(),
        data: text.clone(),
    };
    let err = build_to_vec(vec![input()], &options(2)).unwrap_err();
    assert_eq!(err.to_string(), "corpus.txt:12345: hash is not hexadecimal");
    assert!(matches!(err.kind(), ErrorKind::BadLine { line: 12345, .. }));
    let skipping = {
        let mut o = options(2);
        o.skip_invalid = true;
        o
    };
    let (bytes, summary) = build_to_vec(vec![input()], &skipping).unwrap();
    assert_eq!(summary.invalid, 2);
    assert_eq!(summary.hashes, 19_998);
    assert_eq!(
        summary.first_invalid.as_deref(),
        Some("corpus.txt:12345: hash is not hexadecimal")
    );
    Index::from_bytes(bytes).unwrap().verify().unwrap();
}

/// Files of 8 MiB and more are mapped, smaller input is read: both give
/// the same index and the same answer about an overlong line.
#[test]
fn mapped_and_read_input_agree_even_on_overlong_lines() {
    let dir = TempDir::new("pwned-build-mapped");
    let entries = random_entries(Kind::Sha1, 230_000, 41);
    let text = corpus(Kind::Sha1, &entries, 41);
    assert!(
        text.len() > 9 << 20,
        "{} bytes: too small to be mapped",
        text.len()
    );
    // A line over 4 MiB (a read) at line 100,001; the last line has no
    // line end in `corpus` half the time: cut it off for sure.
    let nl = text
        .iter()
        .enumerate()
        .filter(|&(_, &b)| b == b'\n')
        .nth(99_999)
        .unwrap()
        .0;
    let mut overlong = text[..=nl].to_vec();
    overlong.extend(std::iter::repeat_n(b'A', 5 << 20));
    overlong.extend_from_slice(b"\n");
    overlong.extend_from_slice(&text[nl + 1..]);
    while overlong.last().is_some_and(|b| b.is_ascii_whitespace()) {
        overlong.pop();
    }
    let clean = &overlong[..=nl]
        .iter()
        .chain(&overlong[nl + 2 + (5 << 20)..])
        .copied()
        .collect::<Vec<u8>>();
    let skipping = {
        let mut o = options(2);
        o.skip_invalid = true;
        o
    };
    let path = dir.join("corpus.txt");
    let (read_clean, _) = build_text("corpus.txt", clean.clone(), 2).unwrap();
    std::fs::write(&path, clean).unwrap();
    let (mapped_clean, _) = build_to_vec(vec![Input::Path(path.clone())], &options(2)).unwrap();
    assert_eq!(mapped_clean, read_clean);
    let expect = expected(&entries);
    let mut rng = Rng::xorshift64star(41);
    check_index(
        &Index::from_bytes(mapped_clean.clone()).unwrap(),
        &expect,
        &mut rng,
    );

    std::fs::write(&path, &overlong).unwrap();
    let name = path.display().to_string();
    // Read, the line fits a buffer (a read and what was carried over) and
    // is judged as a line; mapped, a chunk is one read.
    let mapped = build_to_vec(vec![Input::Path(path.clone())], &options(2)).unwrap_err();
    let read = build_text(&name, overlong.clone(), 2).unwrap_err();
    assert_eq!(
        mapped.to_string(),
        format!("{name}:100001: line longer than 4194304 bytes")
    );
    assert!(matches!(
        mapped.kind(),
        ErrorKind::BadLine { line: 100_001, .. }
    ));
    assert!(matches!(
        read.kind(),
        ErrorKind::BadLine { line: 100_001, .. }
    ));
    let (mapped, summary) = build_to_vec(vec![Input::Path(path)], &skipping).unwrap();
    let (read, _) = build_to_vec(
        vec![Input::Bytes {
            name,
            data: overlong,
        }],
        &skipping,
    )
    .unwrap();
    assert_eq!(summary.invalid, 1);
    assert_eq!(mapped, read);
    assert_eq!(mapped, mapped_clean);
}

#[test]
fn mixed_kinds_are_an_error_naming_the_line() {
    let text = b"5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:3\n8846F7EAEE8FB117AD06BDD830B7586C:5\n"
        .to_vec();
    let err = build_text("mix", text, 1).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::MixedKinds { line: 2, .. }),
        "{err}"
    );
}

#[test]
fn counts_are_exact_beyond_32_bits_and_zero_counts_skipped() {
    let hash = "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8";
    let text = format!(
        "{hash}:4294967295\n{hash}:4294967295\n{hash}:99999999999\n7C4A8D09CA3762AF61E59520943DC26494F8941B:0\n"
    );
    let (bytes, summary) = build_text("big", text, 1).unwrap();
    assert_eq!(summary.capped, 1);
    assert_eq!(summary.zero_counts, 1);
    let index = Index::from_bytes(bytes).unwrap();
    assert_eq!(index.count_hex(hash).unwrap(), 3 * u64::from(u32::MAX));
    assert_eq!(
        index
            .count_hex("7C4A8D09CA3762AF61E59520943DC26494F8941B")
            .unwrap(),
        0
    );
    assert_eq!(
        index.count_password("password").unwrap(),
        3 * u64::from(u32::MAX)
    );
    assert!(matches!(
        index.count_hex("5BAA").unwrap_err().kind(),
        ErrorKind::BadHash { .. }
    ));
}

#[test]
fn empty_and_tiny_corpora() {
    for text in ["", "\n\r\n", "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8"] {
        let (bytes, _) = build_text("t", text, 2).unwrap();
        let index = Index::from_bytes(bytes).unwrap();
        let found = index.count_password("password").unwrap();
        assert_eq!(found, u64::from(!text.trim().is_empty()));
        assert_eq!(index.count_password("hunter2").unwrap(), 0);
        index.verify().unwrap();
    }
}

/// `Index::write_range` writes, for every range, the bytes of its pairs'
/// body: small indexes (buckets wider than a range), ones whose ranges
/// span pages, both kinds, counts of every width.
#[test]
fn ranges_written_as_decoded_match_their_pairs_bodies() {
    for kind in [Kind::Sha1, Kind::Ntlm] {
        for (n, seed) in [(1, 3), (300, 5), (40_000, 7)] {
            let mut entries = random_entries(kind, n, seed);
            // Hashes crowded into a few ranges: ranges over several pages.
            let mut rng = Rng::xorshift64star(seed);
            for i in 0..n / 4 {
                let mut key = Words::from(rng.key(kind));
                key.hi = (key.hi & !(0xFFFFF << 44)) | ((i as u64 % 3) << 44);
                let key = key.key();
                entries.push((key, [1, 999, 1000, 123_456_789][i % 4]));
            }
            let index = Index::from_bytes(index_bytes(kind, &entries, seed)).unwrap();
            let expect = expected(&entries);
            let prefixes: std::collections::BTreeSet<u32> =
                expect.keys().map(|k| k.prefix()).collect();
            let mut pairs = Vec::new();
            let some = prefixes.into_iter().step_by(1 + n / 1000);
            for prefix in some.chain([0, 1, 2, 0xFFFFF, 0x5BAA6]) {
                pairs.clear();
                index.range_into(u64::from(prefix), 20, &mut pairs).unwrap();
                let mut want = b"before".to_vec();
                seekless_pwned::test_util::write_range_body(kind, &pairs, &mut want);
                let mut got = b"before".to_vec();
                index.write_range(prefix, &mut got).unwrap();
                assert!(got == want, "{kind} n={n} range {prefix:05X}");
            }
        }
    }
    // A damaged page: an error, and the buffer as it was.
    let entries = random_entries(Kind::Sha1, 5_000, 29);
    let mut bytes = index_bytes(Kind::Sha1, &entries, 3);
    bytes[4096 + 1000] ^= 0x10;
    let index = Index::from_bytes(bytes).unwrap();
    let mut errors = 0;
    for prefix in 0..1 << 12 {
        let mut out = b"kept".to_vec();
        if let Err(e) = index.write_range(prefix << 8, &mut out) {
            assert!(matches!(e.kind(), ErrorKind::Corrupt { .. }), "{e}");
            assert_eq!(out, b"kept");
            errors += 1;
        }
    }
    assert!(errors > 0, "the damaged page went unnoticed");
}

/// The same for an index large enough that its ranges are whole buckets
/// (20 bucket bits or more), which processors with AVX-512 write eight
/// lines at a time: every range the same bytes as its pairs' body, and
/// a damaged page an error with the buffer as it was.
#[test]
fn ranges_of_large_indexes_written_as_decoded_match_their_pairs_bodies() {
    let entries = random_entries(Kind::Sha1, 600_000, 31);
    let mut bytes = index_bytes(Kind::Sha1, &entries, 5);
    let index = Index::from_bytes(bytes.clone()).unwrap();
    assert!(index.stats().bucket_bits >= 20, "{:?}", index.stats());
    let mut pairs = Vec::new();
    for prefix in (0..1 << 20).step_by(997).chain([0, 0xFFFFF]) {
        pairs.clear();
        index.range_into(u64::from(prefix), 20, &mut pairs).unwrap();
        let mut want = b"before".to_vec();
        seekless_pwned::test_util::write_range_body(Kind::Sha1, &pairs, &mut want);
        let mut got = b"before".to_vec();
        index.write_range(prefix, &mut got).unwrap();
        assert!(got == want, "range {prefix:05X}");
    }
    // Page 10 damaged (it holds ranges near 10 / 3,000 of the way).
    bytes[4096 * 11 + 6] ^= 0xFF;
    let damaged = Index::from_bytes(bytes).unwrap();
    let mut errors = 0;
    for prefix in 0..1 << 13 {
        let mut out = b"kept".to_vec();
        if let Err(e) = damaged.write_range(prefix, &mut out) {
            assert!(matches!(e.kind(), ErrorKind::Corrupt { .. }), "{e}");
            assert_eq!(out, b"kept");
            errors += 1;
        }
    }
    assert!(errors > 0, "the damaged page went unnoticed");
}

/// Every renderer this processor has (AVX-512, AVX2, NEON) writes every
/// range that has hashes (and every 16th other one) with the same bytes
/// as the portable one, every hash written once: SHA-1
/// and NTLM, indexes under 2^19 hashes (buckets wider than a range) and
/// over (20 bucket bits or more, where AVX-512 writes SHA-1 ranges),
/// counts of every length from 1 to 19 digits.
#[test]
fn every_renderer_writes_every_range_as_the_portable_one() {
    use seekless_pwned::test_util::{Renderer, write_range_by};
    let fast: Vec<Renderer> = Renderer::ALL
        .into_iter()
        .filter(|&r| r != Renderer::Portable && r.here())
        .collect();
    // Where these processors run the tests, the paths they take are here.
    if cfg!(target_arch = "aarch64") {
        assert!(fast.contains(&Renderer::Neon) || std::env::var_os("SEEKLESS_NO_NEON").is_some());
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        assert!(fast.contains(&Renderer::Avx2) || std::env::var_os("SEEKLESS_NO_AVX2").is_some());
    }
    eprintln!("renderers compared with the portable one: {fast:?}");
    let mut rng = Rng::xorshift64star(41);
    for kind in [Kind::Sha1, Kind::Ntlm] {
        for n in [30_000, 600_000] {
            let mut text = Vec::new();
            // Every range that has hashes, and every 16th of the others.
            let mut ranges = vec![false; 1 << 20];
            for i in 0..n {
                let digits = 1 + i % 19;
                let floor = 10u64.pow(digits as u32 - 1);
                let count = floor + rng.next_u64() % (9 * floor);
                let key = rng.key(kind);
                ranges[key.prefix() as usize] = true;
                text.extend_from_slice(format!("{}:{count}\n", key.to_hex(kind)).as_bytes());
            }
            let index = Index::from_bytes(build_text("corpus", text, 2).unwrap().0).unwrap();
            assert_eq!(index.len(), n as u64);
            // Buckets wider than a range, and ranges of whole buckets.
            assert_eq!(index.stats().bucket_bits >= 20, n > 1 << 19);
            let (mut want, mut got) = (Vec::new(), Vec::new());
            let mut lines = 0;
            for prefix in (0..1 << 20).filter(|&p| ranges[p as usize] || p % 16 == 0) {
                want.clear();
                write_range_by(&index, Renderer::Portable, prefix, &mut want).unwrap();
                lines += want.split(|&b| b == b'\n').count() - usize::from(want.is_empty());
                for &renderer in &fast {
                    got.clear();
                    write_range_by(&index, renderer, prefix, &mut got).unwrap();
                    assert!(got == want, "{kind} n={n} range {prefix:05X} {renderer:?}");
                }
            }
            assert_eq!(lines, n, "{kind} n={n}: every hash written once");
        }
    }
}

#[test]
fn damaged_files_give_errors_never_wrong_answers() {
    let entries = random_entries(Kind::Sha1, 5_000, 23);
    let expect = expected(&entries);
    let bytes = index_bytes(Kind::Sha1, &entries, 2);
    // Truncated anywhere: refused at open.
    for cut in [
        0,
        1,
        63,
        64,
        4095,
        4096,
        5000,
        bytes.len() / 2,
        bytes.len() - 12,
        bytes.len() - 1,
    ] {
        let err = Index::from_bytes(bytes[..cut].to_vec()).unwrap_err();
        assert!(
            matches!(
                err.kind(),
                ErrorKind::Corrupt { .. } | ErrorKind::NotAnIndex
            ),
            "cut {cut}: {err}"
        );
    }
    // One bit flipped anywhere: an error at open, at lookup or at verify,
    // and never a wrong count.
    let mut rng = Rng::xorshift64star(31);
    for round in 0..300 {
        let mut damaged = bytes.clone();
        let at = if round < 40 {
            (rng.next_u64() % 4096) as usize
        } else {
            (rng.next_u64() % bytes.len() as u64) as usize
        };
        damaged[at] ^= 1 << (rng.next_u64() % 8);
        let Ok(index) = Index::from_bytes(damaged) else {
            continue;
        };
        let mut errors = 0;
        for (&key, &count) in &expect {
            match index.count(key) {
                Ok(got) => assert_eq!(got, count, "byte {at}: wrong count presented as right"),
                Err(e) => {
                    assert!(matches!(e.kind(), ErrorKind::Corrupt { .. }));
                    errors += 1;
                }
            }
        }
        assert!(
            errors > 0 || index.verify().is_err(),
            "flip at byte {at} went unnoticed"
        );
    }
    // A newer format version is refused clearly.
    let mut newer = bytes.clone();
    newer[8] = 9;
    let err = Index::from_bytes(newer).unwrap_err();
    assert!(matches!(
        err.kind(),
        ErrorKind::NewerVersion { version: 9, .. }
    ));
    assert!(err.to_string().contains("newer seekless"));
}

#[test]
fn build_writes_atomically_and_cleans_up() {
    let dir = TempDir::new("pwned-build-atomic");
    let out = dir.join("pwned.idx");
    let good = dir.join("good.txt");
    std::fs::write(&good, "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:7\r\n").unwrap();
    let bad = dir.join("bad.txt");
    std::fs::write(
        &bad,
        "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:7\r\nnope\r\n",
    )
    .unwrap();
    let opts = {
        let mut o = options(2);
        o.memory = 1;
        o
    };
    let err = build_file(&bad, &out, &opts).unwrap_err();
    assert!(
        err.to_string()
            .ends_with("bad.txt:2: expected 40 hex digits before ':', found 4 characters"),
        "{err}"
    );
    let names = |d: &std::path::Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into())
            .collect();
        v.sort();
        v
    };
    assert_eq!(names(&dir), ["bad.txt", "good.txt"]);
    let summary = build_file(&good, &out, &opts).unwrap();
    assert_eq!(summary.hashes, 1);
    assert_eq!(names(&dir), ["bad.txt", "good.txt", "pwned.idx"]);
    assert_eq!(
        Index::open(&out)
            .unwrap()
            .count_password("password")
            .unwrap(),
        7
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Any set, any order, any duplicates: every member found with its
    /// summed count, and the export lists exactly the set in order.
    #[test]
    fn any_corpus_round_trips(
        seed in any::<u64>(),
        n in 0usize..3000,
        ntlm in any::<bool>(),
        clustered in any::<bool>(),
    ) {
        let kind = if ntlm { Kind::Ntlm } else { Kind::Sha1 };
        let mut entries = random_entries(kind, n, seed);
        if clustered {
            // Hashes sharing long prefixes stress buckets and pages.
            for (i, e) in entries.iter_mut().enumerate() {
                let mut key = Words::from(e.0);
                key.hi = 0xABCD_0000_0000_0000 | ((key.hi >> 48) * (i as u64 % 3));
                e.0 = key.key();
            }
        }
        let mut rng = Rng::xorshift64star(seed | 1);
        for i in (1..entries.len()).rev() {
            let j = (rng.next_u64() % (i as u64 + 1)) as usize;
            entries.swap(i, j);
        }
        let expect = expected(&entries);
        let bytes = index_bytes(kind, &entries, seed);
        check_once(&bytes, &expect, kind, &mut rng);
        check_index(&Index::from_bytes(bytes).unwrap(), &expect, &mut rng);
    }
}

/// One-shot lookups (`Index::count_once_in`) give what the set holds.
fn check_once(bytes: &[u8], expect: &BTreeMap<Key, u64>, kind: Kind, rng: &mut Rng) {
    for (&key, &count) in expect {
        assert_eq!(Index::count_once_in(bytes, key).unwrap(), count);
    }
    for _ in 0..500 {
        let key = rng.key(kind);
        let want = expect.get(&key).copied().unwrap_or(0);
        assert_eq!(Index::count_once_in(bytes, key).unwrap(), want);
    }
}

/// The index as format version 1 wrote it: no block checksums, one
/// checksum over the whole directory.
fn as_version_1(bytes: &[u8]) -> Vec<u8> {
    let u64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap());
    let pages = u64_at(24) as usize;
    let dir_end = 4096 * (1 + pages) + 12 * pages;
    let mut old = bytes[..dir_end].to_vec();
    let dir_crc = crc32c::crc32c(&old[4096 * (1 + pages)..]);
    old[8..10].copy_from_slice(&1u16.to_le_bytes());
    old[40..44].copy_from_slice(&dir_crc.to_le_bytes());
    let crc = crc32c::crc32c(&old[..60]);
    old[60..64].copy_from_slice(&crc.to_le_bytes());
    old
}

#[test]
fn version_2_files_still_open() {
    let entries = random_entries(Kind::Ntlm, 20_000, 17);
    let expect = expected(&entries);
    let mut bytes = index_bytes(Kind::Ntlm, &entries, 2);
    // Version 3 without a source section is version 2 with a new number.
    bytes[8..10].copy_from_slice(&2u16.to_le_bytes());
    let crc = crc32c::crc32c(&bytes[..60]);
    bytes[60..64].copy_from_slice(&crc.to_le_bytes());
    let index = Index::from_bytes(bytes.clone()).unwrap();
    assert_eq!(index.stats().version, 2);
    index.verify().unwrap();
    assert_eq!(index.source().unwrap(), None);
    for (&key, &count) in expect.iter().step_by(13) {
        assert_eq!(index.count(key).unwrap(), count);
        assert_eq!(Index::count_once_in(&bytes, key).unwrap(), count);
    }
    // Its reserved bytes must be zero.
    bytes[50] = 1;
    let crc = crc32c::crc32c(&bytes[..60]);
    bytes[60..64].copy_from_slice(&crc.to_le_bytes());
    assert!(Index::from_bytes(bytes).is_err());
}

#[test]
fn one_shot_lookups_read_one_directory_block() {
    // ~870 pages: three directory blocks of 341 entries.
    let entries = random_entries(Kind::Sha1, 200_000, 41);
    let expect = expected(&entries);
    let bytes = index_bytes(Kind::Sha1, &entries, 5);
    let pages = u64::from_le_bytes(bytes[24..32].try_into().unwrap()) as usize;
    assert!(pages > 2 * 341, "{pages} pages");
    let mut rng = Rng::xorshift64star(43);
    for (&key, &count) in expect.iter().step_by(11) {
        assert_eq!(Index::count_once_in(&bytes, key).unwrap(), count);
    }
    for _ in 0..2000 {
        let key = rng.key(Kind::Sha1);
        let want = expect.get(&key).copied().unwrap_or(0);
        assert_eq!(Index::count_once_in(&bytes, key).unwrap(), want);
    }

    // The same from a file.
    let dir = TempDir::new("pwned-build-once");
    let path = dir.join("i.idx");
    std::fs::write(&path, &bytes).unwrap();
    for (&key, &count) in expect.iter().step_by(997) {
        assert_eq!(Index::count_once(&path, key).unwrap(), count);
    }

    // A damaged directory block: lookups routed through it fail, the
    // others still answer right.
    let dir_at = 4096 * (1 + pages);
    let mut damaged = bytes.clone();
    damaged[dir_at + 12 * 400 + 3] ^= 0x10; // page 400: block 1
    let (mut failed, mut answered) = (0, 0);
    for (&key, &count) in expect.iter().step_by(37) {
        match Index::count_once_in(&damaged, key) {
            Ok(got) => {
                assert_eq!(got, count);
                answered += 1;
            }
            Err(e) => {
                assert!(e.to_string().contains("directory block 1"), "{e}");
                failed += 1;
            }
        }
    }
    assert!(
        failed > 0 && answered > failed,
        "{failed} failed, {answered} answered"
    );
    // A damaged checksum table, page or header; a truncated file.
    let key = *expect.keys().next().unwrap();
    let mut table = bytes.clone();
    let last = table.len() - 1;
    table[last] ^= 1;
    let mut every_page = bytes.clone();
    for p in 0..pages {
        every_page[4096 * (1 + p) + 100] ^= 1;
    }
    for bad in [table, every_page, bytes[..bytes.len() - 4].to_vec()] {
        let err = Index::count_once_in(&bad, key).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Corrupt { .. }), "{err}");
    }

    // Version 1 files (one directory checksum) still open and answer.
    let old = as_version_1(&bytes);
    let index = Index::from_bytes(old.clone()).unwrap();
    assert_eq!(index.stats().version, 1);
    for (&key, &count) in expect.iter().step_by(101) {
        assert_eq!(index.count(key).unwrap(), count);
        assert_eq!(Index::count_once_in(&old, key).unwrap(), count);
    }
    index.verify().unwrap();
}

/// Builds `text` cut at line ends into `pieces` inputs (each read as its
/// own chunks, so order is also checked across them).
fn build_pieces(
    text: &[u8],
    pieces: usize,
    options: &BuildOptions,
) -> seekless_pwned::Result<(Vec<u8>, Summary)> {
    let mut inputs = Vec::new();
    let mut rest = text;
    for i in 0..pieces {
        let want = rest.len() / (pieces - i);
        let cut = if i + 1 == pieces {
            rest.len()
        } else {
            rest[want..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(rest.len(), |p| want + p + 1)
        };
        inputs.push(Input::Bytes {
            name: format!("piece{i}"),
            data: rest[..cut].to_vec(),
        });
        rest = &rest[cut..];
    }
    build_to_vec(inputs, options)
}

#[test]
fn input_in_hash_order_streams_and_any_disorder_falls_back() {
    for kind in [Kind::Sha1, Kind::Ntlm] {
        let mut entries = random_entries(kind, 20_000, 41);
        entries.sort_by_key(|&(key, _)| key);
        let n = entries.len();
        // Each case: a name, the lines, and whether they are in order.
        type Case = (&'static str, Vec<(Key, u32)>, bool);
        let mut cases: Vec<Case> = vec![("sorted", entries.clone(), true)];
        for (name, from, to) in [
            ("first line last", 0, n - 1),
            ("a middle line first", n / 2, 0),
            ("last line in the middle", n - 1, n / 2),
            ("one line a little late", n / 3, n / 3 + 40),
        ] {
            let mut moved = entries.clone();
            let line = moved.remove(from);
            moved.insert(to, line);
            cases.push((name, moved, false));
        }
        let mut reversed = entries.clone();
        reversed.reverse();
        cases.push(("reversed", reversed, false));
        let mut repeated = entries.clone();
        repeated.push(entries[n / 4]);
        cases.push(("a hash again at the end", repeated, false));
        for (name, lines, in_order) in cases {
            let text = corpus(kind, &lines, 5);
            let expect = expected(&lines);
            for pieces in [1, 7] {
                for (threads, memory) in [(1, 1 << 30), (2, 1 << 30), (2, 256 << 10)] {
                    let options = {
                        let mut o = BuildOptions::default();
                        o.threads = threads;
                        o.memory = memory;
                        o.tmp_dir = Some(std::env::temp_dir());
                        o
                    };
                    let what =
                        format!("{kind:?} {name}, {pieces} pieces, {threads} threads, {memory} B");
                    let (bytes, summary) = build_pieces(&text, pieces, &options).unwrap();
                    assert_eq!(summary.streamed, in_order, "{what}");
                    assert_eq!(summary.hashes, expect.len() as u64, "{what}");
                    assert_eq!(summary.lines, lines.len() as u64, "{what}");
                    assert_eq!(
                        summary.duplicates,
                        (lines.len() - expect.len()) as u64,
                        "{what}"
                    );
                    assert_eq!(summary.bytes, bytes.len() as u64, "{what}");
                    let index = Index::from_bytes(bytes).unwrap();
                    check_index(&index, &expect, &mut Rng::xorshift64star(3));
                }
            }
        }
    }
}

#[test]
fn counts_merged_while_streaming_survive_the_fall_back() {
    let kind = Kind::Sha1;
    let mut entries = random_entries(kind, 2_000, 43);
    entries.sort_by_key(|&(key, _)| key);
    // One hash three times in a row: 3 × (2^32 − 1) once merged.
    let big = entries[10].0;
    for _ in 0..3 {
        entries.insert(11, (big, u32::MAX));
    }
    let late = entries[5];
    entries.push(late);
    let (bytes, summary) = build_pieces(&corpus(kind, &entries, 9), 3, &options(2)).unwrap();
    assert!(!summary.streamed);
    let expect = expected(&entries);
    assert_eq!(
        expect[&big],
        3 * u64::from(u32::MAX) + u64::from(entries[10].1)
    );
    assert_eq!(summary.duplicates, (entries.len() - expect.len()) as u64);
    check_index(
        &Index::from_bytes(bytes).unwrap(),
        &expect,
        &mut Rng::xorshift64star(5),
    );
}

/// The model of a compact index: the top `bits` bits of each hash, with
/// the counts of the hashes that share them summed.
fn kept(expect: &BTreeMap<Key, u64>, bits: u32) -> BTreeMap<Key, u64> {
    let mut map = BTreeMap::new();
    for (&key, &count) in expect {
        let sum = map.entry(key.truncated(bits)).or_insert(0u64);
        *sum = sum.saturating_add(count);
    }
    map
}

#[test]
fn compact_indexes_sum_the_counts_of_hashes_that_share_their_top_bits() {
    for kind in [Kind::Sha1, Kind::Ntlm] {
        let mut entries = random_entries(kind, 6_000, 47);
        let mut rng = Rng::xorshift64star(53);
        for i in 0..300 {
            let (key, count) = entries[(rng.next_u64() % 6_000) as usize];
            // Twins below bit 64 (the same top 40 and 64 bits), and below
            // bit 40 only (the same top 40 bits, other top 64 bits).
            let words = Words::from(key);
            let mut low = words;
            low.mid ^= 1 + i;
            entries.push((low.key(), count / 2 + 1));
            let mut high = words;
            high.hi ^= 1 << (i % 24);
            entries.push((high.key(), 3));
            // And one that differs in the last bit alone.
            let mut last = words;
            match kind {
                Kind::Sha1 => last.lo ^= 1,
                Kind::Ntlm => last.mid ^= 1,
            }
            entries.push((last.key(), 1));
        }
        let whole = expected(&entries);
        let mut sorted = entries.clone();
        sorted.sort_by_key(|&(key, _)| key);
        for key_bits in [40, 64, kind.bits() - 1] {
            let model = kept(&whole, key_bits);
            assert!(model.len() < whole.len(), "the twins share kept bits");
            for (order, lines) in [("by count", &entries), ("in hash order", &sorted)] {
                let text = corpus(kind, lines, 9);
                for memory in [1 << 30, 128 << 10] {
                    let what = format!("{kind} {key_bits} bits {order}, {memory} B");
                    let options = {
                        let mut o = BuildOptions::default();
                        o.threads = 2;
                        o.memory = memory;
                        o.tmp_dir = Some(std::env::temp_dir());
                        o.key_bits = Some(key_bits);
                        o
                    };
                    let (bytes, summary) = build_pieces(&text, 3, &options).unwrap();
                    assert_eq!(summary.streamed, order == "in hash order", "{what}");
                    assert_eq!(summary.hashes, model.len() as u64, "{what}");
                    assert_eq!(summary.key_bits, Some(key_bits));
                    for (&key, &count) in whole.iter().step_by(5) {
                        let sum = model[&key.truncated(key_bits)];
                        assert_eq!(Index::count_once_in(&bytes, key).unwrap(), sum, "{what}");
                        assert!(sum >= count);
                    }
                    let index = Index::from_bytes(bytes).unwrap();
                    let stats = index.stats();
                    // Format version 4: the first with compact keys
                    // (docs/format-pwned.md); 5 only for a subset.
                    assert_eq!((stats.key_bits, stats.version), (key_bits, 4));
                    assert!(stats.is_compact());
                    for &key in whole.keys() {
                        assert_eq!(
                            index.count(key).unwrap(),
                            model[&key.truncated(key_bits)],
                            "{what}"
                        );
                    }
                    let listed: Vec<(Key, u64)> = index.iter().map(Result::unwrap).collect();
                    let want: Vec<(Key, u64)> = model.iter().map(|(&k, &c)| (k, c)).collect();
                    assert!(listed == want, "{what}");
                    index.verify().unwrap();
                    let e = index.range(0x5BAA6, 20).unwrap_err();
                    assert!(matches!(e.kind(), ErrorKind::Compact { .. }), "{e}");
                }
            }
        }
        // Too few bits, or more than the hashes have.
        for key_bits in [31, kind.bits() + 1] {
            let options = {
                let mut o = options(2);
                o.key_bits = Some(key_bits);
                o
            };
            let e = build_to_vec(
                vec![Input::Bytes {
                    name: "corpus".into(),
                    data: corpus(kind, &entries[..10], 1),
                }],
                &options,
            )
            .unwrap_err();
            assert!(matches!(e.kind(), ErrorKind::KeyBits { .. }), "{e}");
        }
    }
}

#[test]
fn a_compact_index_finds_random_non_members_at_the_stated_rate() {
    // 2^20 hashes kept to 32 bits: a random hash outside them shares its
    // top 32 bits with one of them with probability 2^20 / 2^32.
    let mut rng = Rng::xorshift64star(59);
    let mut keys: Vec<Key> = (0..1 << 20).map(|_| rng.key(Kind::Sha1)).collect();
    keys.sort();
    let out = std::io::Cursor::new(Vec::new());
    let mut writer = SortedWriter::compact(out, Kind::Sha1, 32, None).unwrap();
    for &key in &keys {
        writer.push(key, 1).unwrap();
    }
    let index = Index::from_bytes(writer.finish(None).unwrap().0.into_inner()).unwrap();
    let stats = index.stats();
    let rate = stats.false_positive_rate();
    assert!((rate - stats.hashes as f64 / 2f64.powi(32)).abs() < 1e-12);
    assert!(stats.hashes > (1 << 20) - 1000, "few collisions at 2^20");
    let probes = 400_000;
    let found = (0..probes)
        .filter(|_| index.count(rng.key(Kind::Sha1)).unwrap() > 0)
        .count();
    let want = rate * probes as f64;
    assert!(
        (found as f64 - want).abs() < 0.35 * want,
        "{found} found, {want:.0} expected"
    );
    // Whole SHA-1 hashes at 160 bits: nothing found by chance.
    assert_eq!(
        Index::from_bytes(index_bytes(
            Kind::Sha1,
            &random_entries(Kind::Sha1, 100, 1),
            1
        ))
        .unwrap()
        .stats()
        .false_positive_rate(),
        0.0
    );
}

/// The hashes of `expect` seen at least `min` times.
fn at_least(expect: &BTreeMap<Key, u64>, min: u64) -> BTreeMap<Key, u64> {
    expect
        .iter()
        .filter(|&(_, &count)| count >= min)
        .map(|(&key, &count)| (key, count))
        .collect()
}

#[test]
fn subsets_keep_exactly_the_hashes_seen_at_least_n_times() {
    let dir = TempDir::new("pwned-build-subset");
    for kind in [Kind::Sha1, Kind::Ntlm] {
        // Counts of the long tail (half seen once), some hashes again.
        let mut entries = random_entries(kind, 12_000, 67);
        let mut rng = Rng::xorshift64star(71);
        // Listed twice, 1 and 2: seen 3 times. Listed once with 2: twice.
        // Listed three times with 1, far apart in the input: 3 times.
        let (twice, once, thrice) = (rng.key(kind), rng.key(kind), rng.key(kind));
        entries.extend([(twice, 1), (once, 2), (thrice, 1)]);
        entries.insert(3, (thrice, 1));
        entries.insert(5_000, (twice, 2));
        entries.insert(9_000, (thrice, 1));
        let whole = expected(&entries);
        assert_eq!((whole[&twice], whole[&once], whole[&thrice]), (3, 2, 3));
        let mut sorted = entries.clone();
        sorted.sort_by_key(|&(key, _)| key);
        for (order, lines) in [("in hash order", &sorted), ("in any order", &entries)] {
            let text = corpus(kind, lines, 73);
            for (min_count, threads) in [(3, 2), (10, 1), (2, 2), (1000, 2)] {
                let what = format!("{kind} {order}, at least {min_count}, {threads} threads");
                let options = {
                    let mut o = options(threads);
                    o.min_count = min_count;
                    o
                };
                let (bytes, summary) = build_pieces(&text, 3, &options).unwrap();
                // Both build paths: straight into pages, and partitions.
                assert_eq!(summary.streamed, order == "in hash order", "{what}");
                let want = at_least(&whole, min_count);
                assert!(want.len() > 3 && want.len() < whole.len(), "{what}");
                assert_eq!(summary.hashes, want.len() as u64, "{what}");
                assert_eq!(summary.left_out, (whole.len() - want.len()) as u64);
                assert_eq!(summary.min_count, min_count);
                assert_eq!(summary.bytes, bytes.len() as u64, "{what}");
                for (&key, &count) in &whole {
                    let kept = if count >= min_count { count } else { 0 };
                    assert_eq!(Index::count_once_in(&bytes, key).unwrap(), kept, "{what}");
                }
                let index = Index::from_bytes(bytes).unwrap();
                let stats = index.stats();
                assert_eq!((stats.version, stats.min_count), (5, min_count));
                assert_eq!(stats.total_count, want.values().sum::<u64>());
                check_index(&index, &want, &mut Rng::xorshift64star(79));
                if min_count == 3 {
                    assert_eq!(index.count(twice).unwrap(), 3, "{what}: 1 + 2");
                    assert_eq!(index.count(thrice).unwrap(), 3, "{what}: 1 + 1 + 1");
                    assert_eq!(index.count(once).unwrap(), 0, "{what}: 2 < 3");
                }
            }
        }
        // Kept to their top 40 bits: the threshold applies to the entries'
        // sums. And a minimum of 1 is no subset: version 3, as before.
        let text = corpus(kind, &entries, 83);
        let compact = {
            let mut o = options(2);
            o.key_bits = Some(40);
            o.min_count = 4;
            o
        };
        let (bytes, summary) = build_pieces(&text, 2, &compact).unwrap();
        let want = at_least(&kept(&whole, 40), 4);
        assert_eq!(summary.hashes, want.len() as u64);
        let listed: BTreeMap<Key, u64> = Index::from_bytes(bytes)
            .unwrap()
            .iter()
            .map(Result::unwrap)
            .collect();
        assert!(listed == want, "{kind} compact");
        let every = {
            let mut o = options(2);
            o.min_count = 1;
            o
        };
        let (bytes, summary) = build_pieces(&text, 2, &every).unwrap();
        assert_eq!((summary.hashes, summary.left_out), (whole.len() as u64, 0));
        assert_eq!(Index::from_bytes(bytes).unwrap().stats().version, 3);
    }
    // Into a file, spilling: the whole index is a scratch file beside the
    // spills, and nothing but the subset is left.
    let source = dir.join("corpus.txt");
    let entries = random_entries(Kind::Sha1, 50_000, 89);
    std::fs::write(&source, corpus(Kind::Sha1, &entries, 97)).unwrap();
    let out = dir.join("top.idx");
    let spill = dir.join("spill");
    std::fs::create_dir_all(&spill).unwrap();
    let options = {
        let mut o = spilling(spill.clone());
        o.min_count = 5;
        o
    };
    let summary = build_file(&source, &out, &options).unwrap();
    assert!(summary.spilled > 0);
    let want = at_least(&expected(&entries), 5);
    assert_eq!(summary.hashes, want.len() as u64);
    check_index(
        &Index::open(&out).unwrap(),
        &want,
        &mut Rng::xorshift64star(101),
    );
    assert_eq!(std::fs::read_dir(dir.join("spill")).unwrap().count(), 0);
    let mut left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into())
        .collect();
    left.sort();
    assert_eq!(left, ["corpus.txt", "spill", "top.idx"]);
}
