//! Delta bundles without a network: `diff` of two indexes, applied by
//! `update --from-bundle`; identities that depend on content alone; and
//! every bundle that does not fit refused with the index left as it was.
#![cfg(feature = "update")]

use std::collections::BTreeMap;
use std::io::{Cursor, Read, Write};
use std::path::{Path, PathBuf};

use seekless_pwned::test_util::{BundleReader, SortedWriter, Words, build_to_vec, identity};
use seekless_pwned::{
    BuildOptions, ErrorKind, Index, Input, Key, Kind, NoUpdateProgress, Source, UpdateOptions,
    UpdatePath, diff, update, write_bundle,
};
use seekless_testkit::{Rng, TempDir};

type Corpus = BTreeMap<Key, u64>;
/// Validators by prefix.
type Validators = BTreeMap<u32, Vec<u8>>;

/// A corpus of `n` random hashes of `kind` with counts.
fn corpus(kind: Kind, n: usize, seed: u64) -> Corpus {
    let hashes = seekless_testkit::hashes(&mut Rng::splitmix64(seed), n, kind.bytes(), 10_000);
    hashes
        .into_iter()
        .map(|(hash, count)| (Key::from_bytes(&hash), count))
        .collect()
}

fn prefix(key: &Key) -> u32 {
    key.prefix()
}

/// An index file of `corpus` at `path`, with `validators` (by prefix) and
/// a source section when given.
fn write_index(path: &Path, kind: Kind, corpus: &Corpus, source: Option<(&str, u64, &Validators)>) {
    let mut writer = SortedWriter::new(Cursor::new(Vec::new()), kind, None).unwrap();
    for (&key, &count) in corpus {
        writer.push(key, count).unwrap();
    }
    let source = source.map(|(url, updated, validators)| {
        let mut source = Source::new(url, updated);
        for p in 0..seekless_pwned::RANGES {
            source.push_validator(validators.get(&p).map(Vec::as_slice));
        }
        source
    });
    let bytes = writer.finish(source.as_ref()).unwrap().0.into_inner();
    std::fs::write(path, bytes).unwrap();
}

fn pairs(path: &Path) -> Vec<(Key, u64)> {
    Index::open(path)
        .unwrap()
        .iter()
        .map(Result::unwrap)
        .collect()
}

/// Applies `bundle` to `index` offline.
fn apply(
    index: &Path,
    bundle: &Path,
    kind: Kind,
) -> seekless_pwned::Result<seekless_pwned::UpdateSummary> {
    update(
        index,
        &{
            let mut o = UpdateOptions::default();
            o.kind = kind;
            o.from_bundle = Some(bundle.to_path_buf());
            o
        },
        &NoUpdateProgress,
    )
}

/// OLD, and NEW made of it: ranges with hashes added, removed, recounted,
/// one emptied, one filled anew; validators changed with the content, and
/// one changed alone.
fn old_and_new(kind: Kind) -> (Corpus, Corpus, Validators, Validators) {
    let old = corpus(kind, 8_000, 3);
    let mut new = old.clone();
    let prefixes: Vec<u32> = old.keys().map(prefix).collect();
    let emptied = prefixes[100];
    new.retain(|k, _| prefix(k) != emptied);
    let mut rng = Rng::splitmix64(77);
    for i in 0..30u64 {
        let key = *old
            .keys()
            .nth((rng.next_u64() % old.len() as u64) as usize)
            .unwrap();
        match i % 3 {
            0 => {
                let mut near = Words::from(key);
                near.mid ^= 1;
                new.insert(near.key(), 5);
            }
            1 => {
                new.remove(&key);
            }
            _ => {
                if let Some(c) = new.get_mut(&key) {
                    *c += 1;
                }
            }
        }
    }
    // A range that had nothing.
    let mut fresh = Words {
        hi: 0x0000_1234_5678_9abc,
        mid: 1,
        lo: 0,
    };
    while old.keys().any(|k| prefix(k) == fresh.key().prefix()) {
        fresh.hi += 1 << 44;
    }
    new.insert(fresh.key(), 42);
    let old_validators: Validators = prefixes
        .iter()
        .map(|&p| (p, format!("\"old-{p:05x}\"").into_bytes()))
        .collect();
    let mut new_validators = old_validators.clone();
    for (k, _) in new.iter().filter(|(k, c)| old.get(k) != Some(c)) {
        new_validators.insert(prefix(k), format!("\"new-{:05x}\"", prefix(k)).into_bytes());
    }
    new_validators.remove(&emptied);
    // The validator alone changes in one range.
    new_validators.insert(prefixes[200], b"\"revalidated\"".to_vec());
    (old, new, old_validators, new_validators)
}

#[test]
fn a_bundle_makes_new_of_old_with_its_validators_and_source() {
    for kind in [Kind::Sha1, Kind::Ntlm] {
        let dir = TempDir::new(&format!("pwned-bundle-apply-{kind}"));
        let (old, new, old_v, new_v) = old_and_new(kind);
        let (old_path, new_path) = (dir.join("old.idx"), dir.join("new.idx"));
        write_index(
            &old_path,
            kind,
            &old,
            Some(("http://127.0.0.1:1", 1_000, &old_v)),
        );
        write_index(
            &new_path,
            kind,
            &new,
            Some(("https://mirror.example", 2_000, &new_v)),
        );
        let bundle = dir.join("changes.bundle");
        let (old_index, new_index) = (
            Index::open(&old_path).unwrap(),
            Index::open(&new_path).unwrap(),
        );
        let summary = write_bundle(&bundle, Some(&old_index), &new_index).unwrap();
        let changed: std::collections::BTreeSet<u32> = old
            .iter()
            .filter(|(k, c)| new.get(k) != Some(c))
            .chain(new.iter().filter(|(k, c)| old.get(k) != Some(c)))
            .map(|(k, _)| prefix(k))
            .collect();
        assert_eq!(summary.changed as usize, changed.len());
        assert_eq!(summary.validators, 1);

        // The header names both identities, computed from content alone.
        let reader = BundleReader::new(std::fs::File::open(&bundle).unwrap()).unwrap();
        let header = reader.header().clone();
        assert_eq!(header.kind, kind);
        assert_eq!(header.old_identity, identity(&old_index).unwrap());
        assert_eq!(header.new_identity, identity(&new_index).unwrap());
        assert_eq!(
            (header.old_hashes, header.new_hashes, new_index.len()),
            (old.len() as u64, new.len() as u64, new.len() as u64)
        );
        assert_eq!(
            (header.url.as_str(), header.updated),
            ("https://mirror.example", 2_000)
        );
        drop((old_index, new_index));

        let copy = dir.join("copy.idx");
        std::fs::copy(&old_path, &copy).unwrap();
        let applied = apply(&copy, &bundle, kind).unwrap();
        assert_eq!(applied.changed as usize, changed.len());
        assert_eq!(pairs(&copy), pairs(&new_path));
        let (got, want) = (Index::open(&copy).unwrap(), Index::open(&new_path).unwrap());
        // The same validators, URL and time, and the identity recorded.
        let mut source = want.source().unwrap().unwrap();
        source.identity = Some(header.new_identity);
        assert_eq!(got.source().unwrap(), Some(source));
        assert_eq!(got.identity().unwrap(), identity(&got).unwrap());
        got.verify().unwrap();
        // Nothing left beside it.
        let names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.starts_with('.')), "{names:?}");
    }
}

#[test]
fn identity_depends_on_content_alone() {
    let kind = Kind::Sha1;
    let corpus = corpus(kind, 5_000, 9);
    let dir = TempDir::new("pwned-bundle-identity");
    let streamed = dir.join("streamed.idx");
    write_index(
        &streamed,
        kind,
        &corpus,
        Some(("http://x", 5, &BTreeMap::new())),
    );
    // The same hashes built by prepare from text in another order, counts
    // split over duplicate lines.
    let mut text = String::new();
    for (key, count) in corpus.iter().rev() {
        let hex = key.to_hex(kind);
        text.push_str(&format!("{hex}:{}\n{}:1\n", count - 1, hex.to_lowercase()));
    }
    let built = build_to_vec(
        vec![Input::Bytes {
            name: "text".into(),
            data: text.into_bytes(),
        }],
        &{
            let mut o = BuildOptions::default();
            o.threads = 2;
            o
        },
    )
    .unwrap()
    .0;
    let built = Index::from_bytes(built).unwrap();
    let streamed = Index::open(&streamed).unwrap();
    assert_ne!(built.stats().bytes, 0);
    assert_eq!(identity(&built).unwrap(), identity(&streamed).unwrap());
    // One count more: another identity.
    let mut other = corpus.clone();
    *other.values_mut().next().unwrap() += 1;
    let other_path = dir.join("other.idx");
    write_index(&other_path, kind, &other, None);
    assert_ne!(
        identity(&Index::open(&other_path).unwrap()).unwrap(),
        identity(&streamed).unwrap()
    );
}

/// Every file in `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

fn refused(result: seekless_pwned::Result<seekless_pwned::UpdateSummary>, says: &str) {
    let e = result.expect_err("the bundle should be refused");
    assert!(matches!(e.kind(), ErrorKind::BadBundle { .. }), "{e}");
    assert!(e.to_string().contains(says), "{e} should say {says:?}");
}

/// Applying `bundle` to `target` is refused, saying `says`, and nothing in
/// `work` (where `target` is) changes.
fn refused_untouched(work: &Path, target: &Path, bundle: &Path, kind: Kind, says: &str) {
    let before = snapshot(work);
    refused(apply(target, bundle, kind), says);
    assert_eq!(
        snapshot(work),
        before,
        "{says}: the index and its directory are as they were"
    );
}

/// `old` and `new` written as `dir/old.idx` and `dir/new.idx`, updated
/// from the same base URL at times 1 and 2; their paths.
fn write_old_and_new(
    dir: &Path,
    kind: Kind,
    old: (&Corpus, &Validators),
    new: (&Corpus, &Validators),
) -> (PathBuf, PathBuf) {
    let (old_path, new_path) = (dir.join("old.idx"), dir.join("new.idx"));
    write_index(
        &old_path,
        kind,
        old.0,
        Some(("http://127.0.0.1:1", 1, old.1)),
    );
    write_index(
        &new_path,
        kind,
        new.0,
        Some(("http://127.0.0.1:1", 2, new.1)),
    );
    (old_path, new_path)
}

#[test]
fn bundles_that_do_not_fit_are_refused_and_change_nothing() {
    let kind = Kind::Sha1;
    let dir = TempDir::new("pwned-bundle-refused");
    let (old, new, old_v, new_v) = old_and_new(kind);
    let (old_path, new_path) = write_old_and_new(&dir, kind, (&old, &old_v), (&new, &new_v));
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let bundle = dir.join("changes.bundle");
    write_bundle(
        &bundle,
        Some(&Index::open(&old_path).unwrap()),
        &Index::open(&new_path).unwrap(),
    )
    .unwrap();
    let good = std::fs::read(&bundle).unwrap();
    let try_on = |index_corpus: &Corpus, bytes: &[u8], says: &str| {
        let target = work.join("target.idx");
        write_index(
            &target,
            kind,
            index_corpus,
            Some(("http://127.0.0.1:1", 1, &old_v)),
        );
        let candidate = dir.join("candidate.bundle");
        std::fs::write(&candidate, bytes).unwrap();
        refused_untouched(&work, &target, &candidate, kind, says);
    };

    // Another index of as many hashes: found while applying, discarded.
    let mut other = old.clone();
    *other.values_mut().nth(10).unwrap() += 1;
    try_on(&other, &good, "a bundle for another index");
    // Another number of hashes: refused before anything is written.
    let mut fewer = old.clone();
    let first = *fewer.keys().next().unwrap();
    fewer.remove(&first);
    try_on(&fewer, &good, "applies to an index of 8000 hashes");
    // Truncated anywhere.
    for cut in [
        0,
        10,
        good.len() / 3,
        good.len() / 2,
        good.len() - 40,
        good.len() - 1,
    ] {
        try_on(&old, &good[..cut], "");
    }
    // A byte of the compressed stream changed: gzip's CRC or the
    // structure catches it.
    let mut flipped = good.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x20;
    try_on(&old, &flipped, "");
    // Content changed and compressed again: the checksum catches it.
    let mut content = Vec::new();
    flate2::read::MultiGzDecoder::new(&good[..])
        .read_to_end(&mut content)
        .unwrap();
    let at = content
        .windows(3)
        .position(|w| w == b":42")
        .expect("the fresh range's line");
    content[at + 1] = b'9';
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(&content).unwrap();
    try_on(&old, &encoder.finish().unwrap(), "checksum mismatch");
    // Something after the end.
    let mut longer = good.clone();
    longer.extend_from_slice(b"more");
    try_on(&old, &longer, "");
    // Not a bundle at all.
    try_on(&old, b"SEEKPWND not a bundle", "");

    // The other kind.
    let ntlm = seekless_pwned::Kind::Ntlm;
    let ntlm_old = corpus(ntlm, 500, 4);
    let (a, b) = (dir.join("ntlm-a.idx"), dir.join("ntlm-b.idx"));
    write_index(&a, ntlm, &ntlm_old, None);
    let mut ntlm_new = ntlm_old.clone();
    ntlm_new.insert(
        Words {
            hi: 5,
            mid: 5,
            lo: 0,
        }
        .key(),
        5,
    );
    write_index(&b, ntlm, &ntlm_new, None);
    let ntlm_bundle = dir.join("ntlm.bundle");
    let mut out = Vec::new();
    diff(
        Some(&Index::open(&a).unwrap()),
        &Index::open(&b).unwrap(),
        &mut out,
    )
    .unwrap();
    std::fs::write(&ntlm_bundle, &out).unwrap();
    let target = work.join("target.idx");
    write_index(&target, kind, &old, None);
    refused_untouched(
        &work,
        &target,
        &ntlm_bundle,
        kind,
        "a bundle of NTLM indexes, not SHA-1",
    );
}

#[test]
fn a_first_bundle_builds_the_index_from_nothing() {
    let kind = Kind::Sha1;
    let dir = TempDir::new("pwned-bundle-first");
    let new = corpus(kind, 3_000, 12);
    let new_path = dir.join("new.idx");
    write_index(&new_path, kind, &new, None);
    let bundle = dir.join("all.bundle");
    let summary = write_bundle(&bundle, None, &Index::open(&new_path).unwrap()).unwrap();
    let ranges: std::collections::BTreeSet<u32> = new.keys().map(prefix).collect();
    assert_eq!(summary.changed as usize, ranges.len());
    let made = dir.join("made.idx");
    let applied = apply(&made, &bundle, kind).unwrap();
    assert!(applied.created);
    assert_eq!(pairs(&made), pairs(&new_path));
    // Applied again to what it made: nothing to do.
    let again = apply(&made, &bundle, kind).unwrap();
    assert_eq!(again.path, UpdatePath::AlreadyApplied);
    assert_eq!(pairs(&made), pairs(&new_path));
}

/// The names in `dir` of files an update leaves beside an index.
fn leftovers(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    names.sort();
    names
}

#[test]
fn a_bundle_applied_again_does_nothing_and_clears_what_a_kill_left() {
    let kind = Kind::Sha1;
    let dir = TempDir::new("pwned-bundle-again");
    let (old, new, old_v, new_v) = old_and_new(kind);
    let (old_path, new_path) = write_old_and_new(&dir, kind, (&old, &old_v), (&new, &new_v));
    let bundle = dir.join("changes.bundle");
    write_bundle(
        &bundle,
        Some(&Index::open(&old_path).unwrap()),
        &Index::open(&new_path).unwrap(),
    )
    .unwrap();
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let index = work.join("copy.idx");
    std::fs::copy(&old_path, &index).unwrap();
    let first = apply(&index, &bundle, kind).unwrap();
    assert_eq!(first.path, UpdatePath::BundleFile);
    let applied = snapshot(&work);

    // Again: nothing written, the index as it was.
    let again = apply(&index, &bundle, kind).unwrap();
    assert_eq!(again.path, UpdatePath::AlreadyApplied);
    assert_eq!((again.hashes, again.changed), (new.len() as u64, 0));
    assert_eq!(snapshot(&work), applied);

    // What a run killed after its rename leaves: the journal (its terms
    // name the old index), maybe the partial index. Removed.
    let (partial, journal) = (
        work.join(".copy.idx.update-partial"),
        work.join(".copy.idx.update-journal"),
    );
    for left in [vec![&journal], vec![&journal, &partial], vec![&partial]] {
        for path in &left {
            std::fs::write(path, b"SEEKUPJ1 left by a killed run").unwrap();
        }
        let again = apply(&index, &bundle, kind).unwrap();
        assert_eq!(again.path, UpdatePath::AlreadyApplied);
        assert_eq!(snapshot(&work), applied, "{left:?} removed");
    }

    // While another update of the index runs (it holds the partial
    // index): refused, its files untouched.
    let running = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&partial)
        .unwrap();
    running.try_lock().unwrap();
    std::fs::write(&journal, b"SEEKUPJ1 of the running update").unwrap();
    let e = apply(&index, &bundle, kind).unwrap_err();
    assert!(
        e.to_string()
            .contains("another update of this index is running"),
        "{e}"
    );
    assert_eq!(
        leftovers(&work),
        [".copy.idx.update-journal", ".copy.idx.update-partial"]
    );
    drop(running);
    std::fs::remove_file(&journal).unwrap();
    std::fs::remove_file(&partial).unwrap();

    // NEW's content built another way (no identity recorded: computed):
    // nothing to do either.
    let rebuilt = work.join("rebuilt.idx");
    write_index(&rebuilt, kind, &new, None);
    assert_eq!(
        apply(&rebuilt, &bundle, kind).unwrap().path,
        UpdatePath::AlreadyApplied
    );

    // An index at neither OLD nor NEW, of NEW's size: refused, untouched.
    let mut other = new.clone();
    *other.values_mut().next().unwrap() += 1;
    let elsewhere = work.join("elsewhere.idx");
    write_index(&elsewhere, kind, &other, None);
    refused_untouched(
        &work,
        &elsewhere,
        &bundle,
        kind,
        "a bundle for another index",
    );
}

#[test]
fn a_bundle_of_validators_alone_is_applied_once() {
    let kind = Kind::Sha1;
    let dir = TempDir::new("pwned-bundle-validators");
    let (old, _, old_v, _) = old_and_new(kind);
    let mut new_v = old_v.clone();
    let first = *new_v.keys().next().unwrap();
    new_v.insert(first, b"\"revalidated\"".to_vec());
    let (old_path, new_path) = write_old_and_new(&dir, kind, (&old, &old_v), (&old, &new_v));
    let bundle = dir.join("validators.bundle");
    let made = write_bundle(
        &bundle,
        Some(&Index::open(&old_path).unwrap()),
        &Index::open(&new_path).unwrap(),
    )
    .unwrap();
    assert_eq!((made.changed, made.validators), (0, 1));
    let index = dir.join("copy.idx");
    std::fs::copy(&old_path, &index).unwrap();
    // The same identity before and after: the validators tell.
    assert_eq!(
        apply(&index, &bundle, kind).unwrap().path,
        UpdatePath::BundleFile
    );
    let source = Index::open(&index).unwrap().source().unwrap().unwrap();
    assert_eq!(source.validator(first), Some(&b"\"revalidated\""[..]));
    assert_eq!(
        apply(&index, &bundle, kind).unwrap().path,
        UpdatePath::AlreadyApplied
    );
}

#[test]
fn a_subset_is_told_why_a_bundle_does_not_fit() {
    let kind = Kind::Sha1;
    let dir = TempDir::new("pwned-bundle-subset");
    let (old, new, old_v, new_v) = old_and_new(kind);
    let (old_path, new_path) = write_old_and_new(&dir, kind, (&old, &old_v), (&new, &new_v));
    let bundle = dir.join("changes.bundle");
    write_bundle(
        &bundle,
        Some(&Index::open(&old_path).unwrap()),
        &Index::open(&new_path).unwrap(),
    )
    .unwrap();
    // OLD kept at a minimum of 5000: the bundle of the whole corpora.
    let mut writer = SortedWriter::new(Cursor::new(Vec::new()), kind, None)
        .unwrap()
        .with_min_count(5000);
    for (&key, &count) in &old {
        writer.push(key, count).unwrap();
    }
    let path = dir.join("top.idx");
    std::fs::write(&path, writer.finish(None).unwrap().0.into_inner()).unwrap();
    refused(
        apply(&path, &bundle, kind),
        "keeps only the hashes seen at least 5000 times",
    );
}

/// A writer whose device fails with `errno` after `room` bytes.
struct Failing {
    written: Vec<u8>,
    room: usize,
    errno: i32,
}

impl Write for Failing {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.written.len() + buf.len() > self.room {
            return Err(std::io::Error::from_raw_os_error(self.errno));
        }
        self.written.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl std::io::Seek for Failing {
    fn seek(&mut self, pos: std::io::SeekFrom) -> std::io::Result<u64> {
        match pos {
            std::io::SeekFrom::Start(0) => Ok(0),
            std::io::SeekFrom::Current(0) | std::io::SeekFrom::End(0) => {
                Ok(self.written.len() as u64)
            }
            _ => Err(std::io::Error::from_raw_os_error(self.errno)),
        }
    }
}

#[test]
fn a_failing_device_is_an_error_never_a_panic() {
    // EIO (5), ENOSPC (28), EDQUOT (122) at every tenth of what is written.
    let kind = Kind::Sha1;
    let dir = TempDir::new("pwned-bundle-faults");
    let (old, new, old_v, new_v) = old_and_new(kind);
    let (old_path, new_path) = write_old_and_new(&dir, kind, (&old, &old_v), (&new, &new_v));
    let (old_index, new_index) = (
        Index::open(&old_path).unwrap(),
        Index::open(&new_path).unwrap(),
    );
    let mut whole = Vec::new();
    diff(Some(&old_index), &new_index, &mut whole).unwrap();
    // What the writer below writes in all: no source section.
    let index_bytes = {
        let mut writer = SortedWriter::new(Cursor::new(Vec::new()), kind, None).unwrap();
        for (&key, &count) in &new {
            writer.push(key, count).unwrap();
        }
        writer.finish(None).unwrap().0.into_inner().len()
    };
    for errno in [5, 28, 122] {
        for tenth in 0..10 {
            let mut out = Failing {
                written: Vec::new(),
                room: whole.len() * tenth / 10,
                errno,
            };
            let e = diff(Some(&old_index), &new_index, &mut out).unwrap_err();
            assert!(
                matches!(e.kind(), ErrorKind::Io { source, .. } if source.raw_os_error() == Some(errno)),
                "{e}"
            );
            // The index writer: every page, the directory, the trailer.
            let failing = Failing {
                written: Vec::new(),
                room: index_bytes * tenth / 10,
                errno,
            };
            let finished =
                SortedWriter::new(failing, kind, Some(new.len() as u64)).and_then(|mut writer| {
                    new.iter()
                        .try_for_each(|(&key, &count)| writer.push(key, count))?;
                    writer.finish(None).map(|_| ())
                });
            let e = finished.expect_err("the device filled up");
            assert!(
                matches!(e.kind(), ErrorKind::Io { source, .. } if source.raw_os_error() == Some(errno)),
                "{e}"
            );
        }
    }
}

/// An index in memory of `corpus`, keeping the hashes seen at least
/// `min_count` times.
fn subset(kind: Kind, corpus: &Corpus, min_count: u64) -> Index {
    let writer = SortedWriter::new(Cursor::new(Vec::new()), kind, None).unwrap();
    let mut writer = writer.with_min_count(min_count);
    for (&key, &count) in corpus {
        writer.push(key, count).unwrap();
    }
    Index::from_bytes(writer.finish(None).unwrap().0.into_inner()).unwrap()
}

#[test]
fn a_bundle_joins_only_indexes_of_the_same_minimum_count() {
    let kind = Kind::Sha1;
    let old = corpus(kind, 3_000, 7);
    let mut new = old.clone();
    for count in new.values_mut().step_by(5) {
        *count += 3000;
    }
    let (whole, top) = (subset(kind, &new, 1), subset(kind, &new, 5000));
    let old_top = subset(kind, &old, 5000);
    // The same minimum: a bundle, whose identities are the subsets'.
    let mut bytes = Vec::new();
    diff(Some(&old_top), &top, &mut bytes).unwrap();
    let header = BundleReader::new(Cursor::new(bytes))
        .unwrap()
        .header()
        .clone();
    assert_eq!(header.new_identity, identity(&top).unwrap());
    assert_ne!(header.new_identity, identity(&whole).unwrap());
    // Another minimum, or none against a subset: refused, nothing written.
    for (old, new) in [(Some(&whole), &top), (Some(&top), &whole), (None, &top)] {
        let mut bytes = Vec::new();
        let e = diff(old, new, &mut bytes).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::BadBundle { .. }), "{e}");
        assert!(e.to_string().contains("same minimum count"), "{e}");
        assert!(bytes.is_empty());
    }
}
