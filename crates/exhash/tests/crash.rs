//! Crash consistency of the file backend: a simulated device keeps a
//! durable image (what survived the last sync) and, after every single
//! write of a commit, checks what a crash at that moment would reopen to.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io;
use std::rc::Rc;

use seekless_exhash::{Device, ErrorKind, ExHash, FileStore};
use seekless_testkit::Rng;

mod common;
use common::scratch;

type State = Vec<(u64, u64)>;

#[derive(Debug, Default)]
struct Sim {
    durable: Vec<u8>,
    current: Vec<u8>,
    pending: Vec<(u64, Vec<u8>)>,
    /// When set, every write is followed by crash checks against these states.
    acceptable: Option<[State; 2]>,
    checked: usize,
    failures: Vec<String>,
}

/// Write `data` into an image (a `Vec<u8>` is itself a device).
fn apply(image: &mut Vec<u8>, offset: u64, data: &[u8]) {
    image.write_at(offset, data).expect("in-memory write");
}

fn contents<D: Device>(table: &ExHash<FileStore<D>>) -> State {
    let mut all: State = table.iter().collect();
    all.sort_unstable();
    all
}

/// Reopen `image` and check it holds one of the acceptable states.
fn check_image(image: Vec<u8>, acceptable: &[State; 2], what: &str) -> Result<(), String> {
    let table = ExHash::open_on(image).map_err(|e| format!("{what}: reopen failed: {e}"))?;
    let got = contents(&table);
    if got != acceptable[0] && got != acceptable[1] {
        return Err(format!(
            "{what}: reopened to a state with {} entries, neither the old nor the new commit",
            got.len()
        ));
    }
    table.check_invariants().map_err(|e| format!("{what}: {e}"))
}

#[derive(Debug)]
struct SimDevice(Rc<RefCell<Sim>>);

impl Device for SimDevice {
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.0.borrow_mut().current.read_at(offset, buf)
    }

    fn write_at(&mut self, offset: u64, buf: &[u8]) -> io::Result<()> {
        let acceptable = {
            let mut sim = self.0.borrow_mut();
            apply(&mut sim.current, offset, buf);
            sim.pending.push((offset, buf.to_vec()));
            sim.acceptable.clone()
        };
        let Some(acceptable) = acceptable else {
            return Ok(());
        };
        let (durable, pending) = {
            let sim = self.0.borrow();
            (sim.durable.clone(), sim.pending.clone())
        };
        // Crash images: nothing since the last sync reached the disk; all of
        // it did; all but the last write, which is torn halfway; every other
        // write (the disk reordered them).
        let mut images = vec![("nothing unsynced".to_string(), durable.clone())];
        let mut all = durable.clone();
        for (off, data) in &pending {
            apply(&mut all, *off, data);
        }
        images.push(("everything written".into(), all));
        let mut torn = durable.clone();
        for (i, (off, data)) in pending.iter().enumerate() {
            let data = if i + 1 == pending.len() {
                &data[..data.len() / 2]
            } else {
                &data[..]
            };
            apply(&mut torn, *off, data);
        }
        images.push(("last write torn".into(), torn));
        let mut skip = durable;
        for (off, data) in pending.iter().step_by(2) {
            apply(&mut skip, *off, data);
        }
        images.push(("every other write".into(), skip));
        let n = pending.len();
        let mut errors = Vec::new();
        for (what, image) in images {
            if let Err(e) = check_image(image, &acceptable, &format!("after write {n}, {what}")) {
                errors.push(e);
            }
        }
        let mut sim = self.0.borrow_mut();
        sim.checked += 1;
        sim.failures.extend(errors);
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        let mut sim = self.0.borrow_mut();
        sim.durable = sim.current.clone();
        sim.pending.clear();
        Ok(())
    }

    fn size(&mut self) -> io::Result<u64> {
        Ok(self.0.borrow().current.len() as u64)
    }
}

/// Random rounds of puts (values of every width), overwrites and deletes,
/// each ending in a commit whose every write is crash-checked: to the
/// journal, by a checkpoint when it is full, and by one asked for every
/// fourth round.
#[test]
fn crash_after_every_write_reopens_a_commit() {
    let sim = Rc::new(RefCell::new(Sim::default()));
    let mut table = ExHash::create_on(SimDevice(sim.clone())).unwrap();
    let mut model: HashMap<u64, u64> = HashMap::new();
    let mut committed: State = Vec::new();
    let mut history = vec![committed.clone()];
    let mut x = Rng::lcg(7);
    let rounds = if cfg!(debug_assertions) { 8 } else { 30 };
    for round in 0..rounds {
        let ops = if round % 3 == 2 { 1500 } else { 400 };
        for _ in 0..ops {
            let k = (x.next_u64() >> 11) % 4000;
            match (x.next_u64() >> 11) % 10 {
                0..=5 => {
                    let v = (x.next_u64() >> 11) >> ((x.next_u64() >> 11) % 64);
                    assert_eq!(table.insert(k, v), model.insert(k, v));
                }
                _ => assert_eq!(table.remove(k), model.remove(&k)),
            }
        }
        let mut next: State = model.iter().map(|(&k, &v)| (k, v)).collect();
        next.sort_unstable();
        sim.borrow_mut().acceptable = Some([committed.clone(), next.clone()]);
        if round % 4 == 3 {
            table.checkpoint().unwrap();
        } else {
            table.commit().unwrap();
        }
        sim.borrow_mut().acceptable = None;
        committed = next;
        history.push(committed.clone());
        // What is durable now is exactly the new commit.
        let durable = sim.borrow().durable.clone();
        let reopened = ExHash::open_on(durable).unwrap();
        assert_eq!(contents(&reopened), committed);
    }
    let sim_ref = sim.borrow();
    assert!(
        sim_ref.checked > rounds + 2 * (rounds / 4),
        "only {} writes checked",
        sim_ref.checked
    );
    assert!(
        sim_ref.failures.is_empty(),
        "{:#?}",
        &sim_ref.failures[..sim_ref.failures.len().min(10)]
    );
    drop(sim_ref);

    // Hostile files: flipped bytes and truncations never panic, and what
    // opens is some committed state.
    let image = sim.borrow().durable.clone();
    let mut y = Rng::lcg(99);
    for i in 0..400 {
        let mut bad = image.clone();
        let at = if i < 100 {
            ((y.next_u64() >> 11) % 8192) as usize
        } else {
            ((y.next_u64() >> 11) as usize) % bad.len()
        };
        bad[at] ^= 1 << ((y.next_u64() >> 11) % 8);
        if let Ok(t) = ExHash::open_on(bad) {
            assert!(
                history.contains(&contents(&t)),
                "byte {at} flipped opened to an unknown state"
            );
        }
    }
    for cut in (0..image.len())
        .step_by(997)
        .chain([0, 1, 8, 4095, 4096, 8191, image.len() - 1])
    {
        if let Ok(t) = ExHash::open_on(image[..cut].to_vec()) {
            assert!(
                history.contains(&contents(&t)),
                "truncation at {cut} opened to an unknown state"
            );
        }
    }
}

#[test]
fn clear_errors_for_foreign_and_future_files() {
    let err = ExHash::open_on(b"hello world, not a table".to_vec()).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::NotExhash), "{err}");
    let err = ExHash::open_on(vec![0; 20000]).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::NotExhash), "{err}");
    let err = ExHash::open_on(Vec::new()).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Truncated { offset: 0, .. }),
        "{err}"
    );

    let mut table = ExHash::create_on(Vec::new()).unwrap();
    table.commit().unwrap();
    let mut image = table.store().device().clone();
    let err = ExHash::open_on(image[..100].to_vec()).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Truncated { offset: 100, .. }),
        "{err}"
    );
    // A valid file whose header copies claim version 5.
    for copy in [0usize, 4096] {
        image[copy + 8] = 5;
        let crc = crc32c(&image[copy..copy + 60]);
        image[copy + 60..copy + 64].copy_from_slice(&crc.to_le_bytes());
    }
    let err = ExHash::open_on(image.clone()).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::NewerVersion { found: 5 }),
        "{err}"
    );
    assert!(err.to_string().contains("newer seekless"), "{err}");
    // Both copies torn: no valid header.
    image[60] ^= 1;
    image[4096 + 60] ^= 1;
    let err = ExHash::open_on(image).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::NoValidHeader), "{err}");
}

/// CRC-32C (Castagnoli), bitwise: the tests' own check of the header format.
fn crc32c(data: &[u8]) -> u32 {
    crc32c_from(0, data)
}

/// CRC-32C going on from `crc`, the checksum of the bytes before `data`.
fn crc32c_from(crc: u32, data: &[u8]) -> u32 {
    let mut crc = !crc;
    for &b in data {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0x82F6_3B78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
fn file_roundtrip_on_disk() {
    let (_dir, path) = scratch("roundtrip");
    let mut table = ExHash::open_or_create(&path).unwrap();
    for i in 0..20_000u64 {
        table.insert(i * 4096, i);
    }
    table.commit().unwrap();
    for i in 0..10_000u64 {
        table.remove(i * 4096);
    }
    table.insert(1, 2);
    // Not committed: what is on disk is still the first commit.
    let image = std::fs::read(&path).unwrap();
    let on_disk = ExHash::open_on(image).unwrap();
    assert_eq!(on_disk.len(), 20_000);
    assert_eq!(on_disk.get(4096 * 5), Some(5));
    table.commit().unwrap();
    drop(table);
    let reopened = ExHash::open(&path).unwrap();
    assert_eq!(reopened.len(), 10_001);
    assert_eq!(reopened.get(4096 * 5), None);
    assert_eq!(reopened.get(4096 * 15_000), Some(15_000));
    assert_eq!(reopened.get(1), Some(2));
    reopened.check_invariants().unwrap();
}

/// A commit of more pages than one write takes, then one that reuses
/// freed slots here and there: both reopen to what was committed.
#[test]
fn large_commits_on_disk_reopen() {
    let (_dir, path) = scratch("large");
    let key = |i: u64| i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut table = ExHash::open_or_create(&path).unwrap();
    let n = 300_000u64;
    for i in 0..n {
        table.insert(key(i), i);
    }
    table.commit().unwrap();
    assert!(table.stats().pages > 512, "{} pages", table.stats().pages);
    for i in (0..n).step_by(3) {
        table.insert(key(i), i + 1);
    }
    for i in n..n + 20_000 {
        table.insert(key(i), i);
    }
    table.commit().unwrap();
    drop(table);
    let reopened = ExHash::open(&path).unwrap();
    assert_eq!(reopened.len(), n + 20_000);
    for i in 0..n + 20_000 {
        let want = if i < n && i % 3 == 0 { i + 1 } else { i };
        assert_eq!(reopened.get(key(i)), Some(want), "key {i}");
    }
    reopened.check_invariants().unwrap();
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

/// Rewrite a committed image as format version 1 wrote it: every tagged
/// piece with each tag right before its entry's data (version 2 keeps the
/// tags at the piece's end), page and metadata checksums and the header
/// fixed up to match. Returns how many tagged pieces were rewritten.
fn downgrade_to_v1(image: &mut [u8]) -> usize {
    let committed = Committed::of(image);
    let mut tagged = 0;
    for &(_, slot) in &committed.pages {
        for p in 0..64 {
            let piece = &mut image[slot * 8192 + p * 128..][..128];
            let used = (piece[0] & 0x7F) as usize;
            if piece[1] != 0xFF || used == 0 {
                continue;
            }
            let mut inline = Vec::new();
            let (mut data, mut i) = (2, 0);
            while data - 2 + i < used {
                let tag = piece[127 - i];
                let len = (tag as usize % 81 / 9) + (tag as usize % 9);
                inline.push(tag);
                inline.extend_from_slice(&piece[data..data + len]);
                data += len;
                i += 1;
            }
            assert_eq!(inline.len(), used);
            piece[2..].fill(0);
            piece[2..2 + used].copy_from_slice(&inline);
            tagged += 1;
        }
    }
    committed.seal(image, Some(1));
    tagged
}

/// Where the newest header copy of a committed image points: its offset,
/// the metadata's offset and length, and each live page as (the offset of
/// its page-table record, its slot).
struct Committed {
    newest: usize,
    meta_at: usize,
    meta_len: usize,
    pages: Vec<(usize, usize)>,
}

impl Committed {
    fn of(image: &[u8]) -> Committed {
        let newest = if u64_at(image, 16) >= u64_at(image, 4096 + 16) {
            0
        } else {
            4096
        };
        let meta_at = u64_at(image, newest + 24) as usize * 8192;
        let meta_len = u64_at(image, newest + 32) as usize;
        let pages = (0..u32_at(image, meta_at + 16) as usize)
            .map(|id| meta_at + 24 + 16 * id)
            .map(|record| (record, u64_at(image, record) as usize))
            .filter(|&(_, slot)| slot != 0)
            .collect();
        Committed {
            newest,
            meta_at,
            meta_len,
            pages,
        }
    }

    /// Fixes up the checksums of every live page, the metadata and the
    /// newest header (with `version` written into it when given), so that
    /// what was changed is judged, not the checksums.
    fn seal(&self, image: &mut [u8], version: Option<u32>) {
        for &(record, slot) in &self.pages {
            let crc = crc32c(&image[slot * 8192..][..8192]);
            image[record + 12..record + 16].copy_from_slice(&crc.to_le_bytes());
        }
        let meta_crc = crc32c(&image[self.meta_at..self.meta_at + self.meta_len]);
        let header = &mut image[self.newest..self.newest + 64];
        if let Some(version) = version {
            header[8..12].copy_from_slice(&version.to_le_bytes());
        }
        header[40..44].copy_from_slice(&meta_crc.to_le_bytes());
        let crc = crc32c(&header[..60]);
        header[60..64].copy_from_slice(&crc.to_le_bytes());
    }
}

/// A version 2 file written by seekless before format 3: 3,000 keys
/// `0..3000` with values `1_000_000 + 3k` (stored in tagged pieces), then
/// 256 keys `i << 28` with values `key ^ 0x5555` (fixed-width pieces).
/// 72 KiB, 4 pages.
const V2_FILE: &[u8] = include_bytes!("data/v2.exh");

fn v2_contents() -> State {
    // Key 0 is in both runs: the second value won.
    let mut want: std::collections::BTreeMap<u64, u64> =
        (0..3000u64).map(|k| (k, 1_000_000 + k * 3)).collect();
    want.extend((0..1u64 << 36).step_by(1 << 28).map(|k| (k, k ^ 0x5555)));
    want.into_iter().collect()
}

fn header_version(image: &[u8]) -> u32 {
    let newest = if u64_at(image, 16) >= u64_at(image, 4096 + 16) {
        0
    } else {
        4096
    };
    u32_at(image, newest + 8)
}

/// Open an image of an earlier version: its pairs read back; the first
/// commit writes format 4; until then the old file is untouched.
fn upgrade_and_check(image: Vec<u8>, version: u32) {
    assert_eq!(header_version(&image), version);
    let want = v2_contents();
    let mut old = ExHash::open_on(image.clone()).unwrap();
    assert_eq!(contents(&old), want);
    old.check_invariants().unwrap();
    for &(k, v) in want.iter().step_by(97) {
        assert_eq!(old.get(k), Some(v));
    }
    old.insert(u64::MAX, 7);
    // Not committed: the file is untouched.
    assert_eq!(old.store().device(), &image);
    old.commit().unwrap();
    let image = old.store().device().clone();
    assert_eq!(header_version(&image), 4);
    let mut reopened = ExHash::open_on(image).unwrap();
    let mut want = want;
    want.push((u64::MAX, 7));
    want.sort_unstable();
    assert_eq!(contents(&reopened), want);
    // Later commits go on from the upgraded state.
    for k in 0..2000u64 {
        reopened.insert(k << 40, k);
        if k % 500 == 0 {
            reopened.commit().unwrap();
        }
    }
    reopened.commit().unwrap();
    reopened.check_invariants().unwrap();
    let again = ExHash::open_on(reopened.store().device().clone()).unwrap();
    assert_eq!(contents(&again), contents(&reopened));
}

#[test]
fn version_2_files_open_and_upgrade_at_the_next_commit() {
    upgrade_and_check(V2_FILE.to_vec(), 2);
}

#[test]
fn version_1_files_open_and_upgrade_at_the_next_commit() {
    let mut image = V2_FILE.to_vec();
    let rewritten = downgrade_to_v1(&mut image);
    assert!(rewritten > 10, "only {rewritten} tagged pieces");
    upgrade_and_check(image, 1);
}

/// Flip bytes of every page of `image` in turn, fixing up the checksums so
/// that the page itself is judged: each result either still reads as some
/// table or is refused as corrupt, never a panic. Returns how many were
/// refused.
fn corrupt_each_page(image: &[u8]) -> usize {
    let committed = Committed::of(image);
    let mut refused = 0;
    for &(_, slot) in &committed.pages {
        for at in (0..8192).step_by(13) {
            let mut bad = image.to_vec();
            bad[slot * 8192 + at] ^= 0x5a;
            committed.seal(&mut bad, None);
            if let Err(e) = ExHash::open_on(bad) {
                assert!(matches!(e.kind(), ErrorKind::Corrupt { .. }), "{e}");
                refused += 1;
            }
        }
    }
    refused
}

#[test]
fn corrupt_pages_are_refused_never_a_panic() {
    let refused = corrupt_each_page(V2_FILE);
    assert!(
        refused > 100,
        "version 2: only {refused} corruptions refused"
    );
    let mut table = ExHash::create_on(Vec::new()).unwrap();
    for (k, v) in v2_contents() {
        table.insert(k, v);
    }
    table.checkpoint().unwrap();
    let refused = corrupt_each_page(table.store().device());
    assert!(
        refused > 100,
        "version 3: only {refused} corruptions refused"
    );
}

/// A committed table that grew to 20,000 pairs and shrank to 2,000 before
/// its first commit: merges leave most of its page ids unused, so its page
/// table names more ids than its file has slots.
fn shrunk_image() -> Vec<u8> {
    let mut table = ExHash::create_on(Vec::new()).unwrap();
    for k in 0..20_000u64 {
        table.insert(k, k ^ 0x5555);
    }
    for k in 2_000..20_000u64 {
        table.remove(k);
    }
    table.checkpoint().unwrap();
    table.store().device().clone()
}

#[test]
fn a_table_with_more_page_ids_than_file_slots_reopens() {
    // Refused as corrupt ("metadata length does not match its counts")
    // until the reader stopped bounding page ids by the file's slots.
    let image = shrunk_image();
    let committed = Committed::of(&image);
    let ids = u32_at(&image, committed.meta_at + 16) as usize;
    assert!(
        ids > image.len() / 8192,
        "{ids} page ids, {} slots",
        image.len() / 8192
    );
    let table = ExHash::open_on(image).unwrap();
    table.check_invariants().unwrap();
    assert_eq!(table.len(), 2_000);
    for k in 0..2_000u64 {
        assert_eq!(table.get(k), Some(k ^ 0x5555));
    }
}

/// Flip each byte of a committed file's metadata (directory, page table,
/// counts, spill) in turn, three ways, with the checksums fixed up: each
/// result either opens as a table whose invariants hold and whose every
/// entry reads back, or is refused as corrupt; never a panic. The lookup
/// directory of page addresses is built from the directory at open, so
/// a directory naming a page that is not there must be refused first.
#[test]
fn corrupt_metadata_is_refused_or_read_never_a_panic() {
    let image = shrunk_image();
    let committed = Committed::of(&image);
    assert!(committed.pages.len() >= 4, "several pages to name");
    let (mut refused, mut read) = (0, 0);
    for at in committed.meta_at..committed.meta_at + committed.meta_len {
        for flip in [0x01, 0x80, 0xff] {
            let mut bad = image.clone();
            bad[at] ^= flip;
            committed.seal(&mut bad, None);
            match ExHash::open_on(bad) {
                Ok(t) => {
                    t.check_invariants()
                        .unwrap_or_else(|e| panic!("byte {at} ^ {flip:#x}: {e}"));
                    for (k, v) in t.iter() {
                        assert_eq!(t.get(k), Some(v), "byte {at} ^ {flip:#x}");
                    }
                    read += 1;
                }
                Err(e) => {
                    assert!(matches!(e.kind(), ErrorKind::Corrupt { .. }), "{e}");
                    refused += 1;
                }
            }
        }
    }
    assert!(
        read > 0 && refused > committed.meta_len,
        "{refused} refused, {read} read"
    );
}

#[test]
fn a_spill_key_also_stored_in_a_page_is_refused() {
    let mut table = ExHash::create_on(Vec::new()).unwrap();
    table.insert(1, 2);
    table.insert(3, 4);
    table.checkpoint().unwrap();
    let mut image = table.store().device().clone();
    let newest = if u64_at(&image, 16) >= u64_at(&image, 4096 + 16) {
        0
    } else {
        4096
    };
    let (meta_slot, meta_len) = (u64_at(&image, newest + 24), u64_at(&image, newest + 32));
    let meta_at = meta_slot as usize * 8192;
    let end = meta_at + meta_len as usize;
    // One spill entry (key 1, value 9) appended to the metadata.
    let mut meta = image[meta_at..end].to_vec();
    assert_eq!(u32_at(&meta, 20), 0);
    meta[20..24].copy_from_slice(&1u32.to_le_bytes());
    meta.extend_from_slice(&1u64.to_le_bytes());
    meta.extend_from_slice(&9u64.to_le_bytes());
    if image.len() < meta_at + meta.len() {
        image.resize(meta_at + meta.len(), 0);
    }
    image[meta_at..meta_at + meta.len()].copy_from_slice(&meta);
    let header = &mut image[newest..newest + 64];
    header[32..40].copy_from_slice(&(meta.len() as u64).to_le_bytes());
    header[40..44].copy_from_slice(&crc32c(&meta).to_le_bytes());
    let crc = crc32c(&header[..60]);
    header[60..64].copy_from_slice(&crc.to_le_bytes());
    // The entry count must include it for the file to get that far.
    let len = u64_at(&image, meta_at + 8) + 1;
    image[meta_at + 8..meta_at + 16].copy_from_slice(&len.to_le_bytes());
    let meta = image[meta_at..meta_at + meta_len as usize + 16].to_vec();
    let header = &mut image[newest..newest + 64];
    header[40..44].copy_from_slice(&crc32c(&meta).to_le_bytes());
    let crc = crc32c(&header[..60]);
    header[60..64].copy_from_slice(&crc.to_le_bytes());
    let err = ExHash::open_on(image).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Corrupt { .. }), "{err}");
    assert!(
        err.to_string().contains("spill key also stored in a page"),
        "{err}"
    );
}

/// A bulk load writes the pages it has finished before the commit: a
/// crash after any of those writes reopens to the last commit, and after
/// any write of the commit, to the last commit or the new one.
#[test]
fn a_crash_during_a_load_reopens_the_last_commit() {
    let sim = Rc::new(RefCell::new(Sim::default()));
    let mut table = ExHash::create_on(SimDevice(sim.clone())).unwrap();
    let key = |i: u64| i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    for i in 0..1000 {
        table.insert(key(i), i);
    }
    table.commit().unwrap();
    let committed = contents(&table);
    // Enough pairs for the load to hand the store finished pages (128 at
    // a time).
    let pairs: Vec<(u64, u64)> = (500..60_000).map(|i| (key(i), i + 1)).collect();
    sim.borrow_mut().acceptable = Some([committed.clone(), committed.clone()]);
    table.load(&pairs);
    let during_load = sim.borrow().checked;
    assert!(during_load >= 128, "{during_load} writes during the load");
    let next = contents(&table);
    sim.borrow_mut().acceptable = Some([committed, next.clone()]);
    table.commit().unwrap();
    sim.borrow_mut().acceptable = None;
    let sim_ref = sim.borrow();
    assert!(
        sim_ref.failures.is_empty(),
        "{:#?}",
        &sim_ref.failures[..sim_ref.failures.len().min(10)]
    );
    let reopened = ExHash::open_on(sim_ref.durable.clone()).unwrap();
    assert_eq!(contents(&reopened), next);
    assert_eq!(next.len(), 60_000);
}

/// The newest header copy's offset in `image`.
fn newest_header(image: &[u8]) -> usize {
    if u64_at(image, 16) >= u64_at(image, 4096 + 16) {
        0
    } else {
        4096
    }
}

/// The journal extent the newest header names: byte offset and length.
fn journal_of(image: &[u8]) -> (usize, usize) {
    let h = newest_header(image);
    let slots = u32_at(image, h + 52) as usize;
    (u64_at(image, h + 44) as usize * 8192, slots * 8192)
}

/// Puts and removals of keys below 5,000 into `table` and `model`.
fn churn(table: &mut ExHash<FileStore<Vec<u8>>>, model: &mut HashMap<u64, u64>, x: &mut Rng) {
    for _ in 0..300 {
        let k = (x.next_u64() >> 11) % 5000;
        if (x.next_u64() >> 11).is_multiple_of(4) {
            assert_eq!(table.remove(k), model.remove(&k));
        } else {
            let v = x.next_u64() >> ((x.next_u64() >> 11) % 64);
            assert_eq!(table.insert(k, v), model.insert(k, v));
        }
    }
}

/// A new table after one round of `churn` from `seed`, committed, with its
/// model and the generator to go on with.
fn churned(seed: u64) -> (ExHash<FileStore<Vec<u8>>>, HashMap<u64, u64>, Rng) {
    let mut table = ExHash::create_on(Vec::new()).unwrap();
    let mut model = HashMap::new();
    let mut x = Rng::lcg(seed);
    churn(&mut table, &mut model, &mut x);
    table.commit().unwrap();
    (table, model, x)
}

fn sorted(model: &HashMap<u64, u64>) -> State {
    let mut all: State = model.iter().map(|(&k, &v)| (k, v)).collect();
    all.sort_unstable();
    all
}

/// Small commits after the first go to the journal: the file keeps its
/// length and changes only in the block appended (4 KiB for 300 changes);
/// the journal fills and a checkpoint starts it again; every commit
/// reopens to what was committed.
#[test]
fn small_commits_append_to_the_journal_and_reopen() {
    let (mut table, mut model, mut x) = churned(11);
    let (at, len) = journal_of(table.store().device());
    assert!(at > 0 && len >= 16 * 8192, "journal at {at}, {len} bytes");
    let (mut journaled, mut checkpoints) = (0, 0);
    for _ in 0..60 {
        let before = table.store().device().clone();
        churn(&mut table, &mut model, &mut x);
        table.commit().unwrap();
        let after = table.store().device();
        let changed: Vec<usize> = (0..after.len())
            .filter(|&i| before.get(i) != after.get(i))
            .collect();
        if changed.iter().all(|&i| i >= 8192) {
            // One block: 40 bytes of head and 9 or 17 bytes a change.
            journaled += 1;
            assert_eq!(after.len(), before.len());
            let (first, last) = (changed[0], changed[changed.len() - 1]);
            assert!(
                first >= at && last < at + len,
                "{first}..{last} outside the journal"
            );
            assert!(last - first < 8192, "{} bytes for one commit", last - first);
        } else {
            checkpoints += 1;
        }
        let reopened = ExHash::open_on(after.clone()).unwrap();
        assert_eq!(contents(&reopened), sorted(&model));
        reopened.check_invariants().unwrap();
    }
    assert!(
        journaled >= 40 && checkpoints >= 1,
        "{journaled} journaled, {checkpoints} checkpoints"
    );
    // A reopened table goes on appending after the blocks it replayed.
    let mut reopened = ExHash::open_on(table.store().device().clone()).unwrap();
    churn(&mut reopened, &mut model, &mut x);
    reopened.commit().unwrap();
    let again = ExHash::open_on(reopened.store().device().clone()).unwrap();
    assert_eq!(contents(&again), sorted(&model));
}

/// A journal block whose checksum fails ends the journal (a torn write):
/// the file opens at the commit before it. One whose checksum holds but
/// whose content does not is refused as corrupt.
#[test]
fn damaged_journal_blocks_end_the_journal_or_are_refused() {
    let (mut table, mut model, mut x) = churned(5);
    churn(&mut table, &mut model, &mut x);
    table.commit().unwrap();
    let before_last = sorted(&model);
    // The last commit: one put of a new key, one removal of a present one.
    // A present key whose lowest byte flipped by 0x20 (the last case
    // below) names no key: any key from the map's random order could have
    // a neighbour there.
    let mut keys: Vec<u64> = model.keys().copied().collect();
    keys.sort_unstable();
    let gone = keys
        .into_iter()
        .find(|k| !model.contains_key(&(k ^ 0x20)) && k ^ 0x20 != 1 << 40)
        .unwrap();
    table.insert(1 << 40, 3);
    table.remove(gone);
    model.insert(1 << 40, 3);
    model.remove(&gone);
    table.commit().unwrap();
    let image = table.store().device().clone();
    assert_eq!(
        contents(&ExHash::open_on(image.clone()).unwrap()),
        sorted(&model)
    );
    let (at, _) = journal_of(&image);
    let last = at + 4096; // the second block; the first took 4 KiB
    assert_eq!(&image[last..last + 8], b"SLEXJRNL");
    assert_eq!(u32_at(&image, last + 32), 17 + 9);

    // Torn: any byte of the block's head or records flipped.
    for i in 0..40 + 26 {
        let mut bad = image.clone();
        bad[last + i] ^= 0x10;
        let t = ExHash::open_on(bad).unwrap_or_else(|e| panic!("byte {i}: {e}"));
        assert_eq!(contents(&t), before_last, "byte {i}");
    }
    // Checksum fixed up: a wrong entry count, a record of no kind, a
    // removal of a key that is not there.
    // A block's checksum goes on from the one before it.
    let first_crc = u32_at(&image, at + 36);
    let reseal = |bad: &mut Vec<u8>| {
        let mut head = bad[last..last + 36].to_vec();
        head.extend_from_slice(&bad[last + 40..last + 40 + 26]);
        let crc = crc32c_from(first_crc, &head);
        bad[last + 36..last + 40].copy_from_slice(&crc.to_le_bytes());
    };
    let mut unchanged = image.clone();
    reseal(&mut unchanged);
    assert_eq!(unchanged, image, "the test's checksum is the file's");
    let cases: [(usize, u8, &str); 3] = [
        (24, 0x01, "entry count after a journal block"),
        (40, 0x07, "bad journal record"),
        (40 + 17 + 1, 0x20, "journal removes a missing key"),
    ];
    for (i, flip, what) in cases {
        let mut bad = image.clone();
        bad[last + i] ^= flip;
        reseal(&mut bad);
        let err = ExHash::open_on(bad).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Corrupt { .. }), "{err}");
        assert!(err.to_string().contains(what), "{err}");
    }
}

/// A version 3 file (no journal: its header's bytes 44..60 zero) opens as
/// it is; its next commit is a checkpoint that writes version 4 and names
/// a journal, which later commits use.
#[test]
fn version_3_files_open_and_take_a_journal_at_the_next_commit() {
    let mut table = ExHash::create_on(Vec::new()).unwrap();
    let mut model = HashMap::new();
    let mut x = Rng::lcg(3);
    churn(&mut table, &mut model, &mut x);
    table.checkpoint().unwrap();
    let mut image = table.store().device().clone();
    let h = newest_header(&image);
    image[h + 8..h + 12].copy_from_slice(&3u32.to_le_bytes());
    image[h + 44..h + 60].fill(0);
    let crc = crc32c(&image[h..h + 60]);
    image[h + 60..h + 64].copy_from_slice(&crc.to_le_bytes());
    assert_eq!(header_version(&image), 3);
    let mut v3 = ExHash::open_on(image.clone()).unwrap();
    assert_eq!(contents(&v3), sorted(&model));
    churn(&mut v3, &mut model, &mut x);
    assert_eq!(v3.store().device(), &image, "untouched until a commit");
    v3.commit().unwrap();
    let upgraded = v3.store().device().clone();
    assert_eq!(header_version(&upgraded), 4);
    assert!(journal_of(&upgraded).1 > 0);
    churn(&mut v3, &mut model, &mut x);
    v3.commit().unwrap();
    let journaled = v3.store().device().clone();
    assert_eq!(&journaled[..8192], &upgraded[..8192], "a journal commit");
    assert_eq!(
        contents(&ExHash::open_on(journaled).unwrap()),
        sorted(&model)
    );
}

/// A damaged block in the middle of the journal ends it there; the next
/// commit is written in its place, and the block after it, left from
/// before with the right numbers, is not taken for the one after that:
/// its checksum went on from the damaged block's.
#[test]
fn a_stale_block_after_the_end_is_not_replayed() {
    let (mut table, mut model, _) = churned(21);
    // Three commits of 100 puts: a block of 4 KiB each, as the one that
    // replaces the second will be.
    let mut states = Vec::new();
    for round in 0..3u64 {
        for k in 0..100 {
            table.insert(round << 56 | k, k);
            model.insert(round << 56 | k, k);
        }
        table.commit().unwrap();
        states.push(sorted(&model));
    }
    let mut image = table.store().device().clone();
    let (at, _) = journal_of(&image);
    let second = at + 4096;
    assert_eq!(&image[second..second + 8], b"SLEXJRNL");
    assert_eq!(&image[second + 4096..second + 4096 + 8], b"SLEXJRNL");
    image[second + 100] ^= 1;
    let mut reopened = ExHash::open_on(image).unwrap();
    assert_eq!(
        contents(&reopened),
        states[0],
        "the journal ends at the damage"
    );
    reopened.insert(7 << 50, 7);
    reopened.commit().unwrap();
    let mut want = states[0].clone();
    want.push((7 << 50, 7));
    want.sort_unstable();
    let again = ExHash::open_on(reopened.store().device().clone()).unwrap();
    assert_eq!(contents(&again), want);
}
