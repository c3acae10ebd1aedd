//! Bulk loads (`ExHash::load`): the same table as inserting one pair at a
//! time, and on a file, pages written ahead of the commit that are named
//! by it once, never counted on when their writes or syncs failed, and
//! never part of what a crash reopens to before the commit.

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex};

use seekless_exhash::bench::{Pattern, pairs};
use seekless_exhash::{Device, ExHash, PAGE_SIZE, PageStore};

mod common;
use common::scratch;

fn key(i: u64) -> u64 {
    i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (i >> 7)
}

/// Enough pairs for the load to hand finished pages to the store many
/// times (it does so 128 pages at a time).
fn big() -> u64 {
    if cfg!(debug_assertions) {
        120_000
    } else {
        400_000
    }
}

fn contents<S: PageStore>(table: &ExHash<S>) -> Vec<(u64, u64)> {
    let mut all: Vec<(u64, u64)> = table.iter().collect();
    all.sort_unstable();
    all
}

fn model_of(pairs: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let map: HashMap<u64, u64> = pairs.iter().copied().collect();
    let mut all: Vec<(u64, u64)> = map.into_iter().collect();
    all.sort_unstable();
    all
}

#[test]
fn a_load_holds_what_inserts_would() {
    let n = big();
    for pattern in [Pattern::Random, Pattern::Sequential, Pattern::Strided] {
        for len in [0, 1, 4095, 4096, 4097, 50_000, n as usize] {
            let mut pairs = pairs(len, pattern);
            // Repeated keys: the later pair wins.
            let again: Vec<(u64, u64)> = pairs.iter().step_by(5).map(|&(k, v)| (k, !v)).collect();
            pairs.extend(again);
            let mut table = ExHash::new();
            table.load(&pairs);
            assert_eq!(contents(&table), model_of(&pairs), "{pattern:?}, {len}");
            table.check_invariants().unwrap();
        }
    }
    // Into a table that already holds pairs, some of them overwritten.
    let first: Vec<(u64, u64)> = (0..n / 2).map(|i| (key(i), i)).collect();
    let second: Vec<(u64, u64)> = (n / 4..n).map(|i| (key(i), i + 1)).collect();
    let mut table = ExHash::new();
    table.load(&first);
    table.load(&second);
    let mut all = first.clone();
    all.extend(&second);
    assert_eq!(contents(&table), model_of(&all));
    table.check_invariants().unwrap();
}

#[test]
fn a_load_on_disk_writes_its_pages_once_and_commits_them() {
    let (_dir, path) = scratch("disk");
    let n = big();
    let first: Vec<(u64, u64)> = (0..n).map(|i| (key(i), i)).collect();
    let mut table = ExHash::open_or_create(&path).unwrap();
    table.load(&first);
    // Pages are in the file already, but the last commit is still the
    // empty table.
    let on_disk = ExHash::open_on(std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(on_disk.len(), 0);
    table.commit().unwrap();
    // Each page written once: the file holds the pages, the metadata and
    // the header slot, and little else.
    let pages = table.stats().pages as u64;
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(
        size <= (pages + 40) * PAGE_SIZE as u64,
        "{size} bytes for {pages} pages"
    );
    drop(table);
    let mut table = ExHash::open(&path).unwrap();
    assert_eq!(contents(&table), model_of(&first));

    // A second load over the first (every page changes again), then
    // removals: what reopens is what was committed.
    let second: Vec<(u64, u64)> = (n / 2..n + n / 2).map(|i| (key(i), i + 1)).collect();
    table.load(&second);
    let mut all = first.clone();
    all.extend(&second);
    let mut model: HashMap<u64, u64> = all.iter().copied().collect();
    for i in (0..n).step_by(7) {
        assert_eq!(table.remove(key(i)), model.remove(&key(i)));
    }
    table.commit().unwrap();
    drop(table);
    let reopened = ExHash::open(&path).unwrap();
    let mut want: Vec<(u64, u64)> = model.into_iter().collect();
    want.sort_unstable();
    assert_eq!(contents(&reopened), want);
    reopened.check_invariants().unwrap();
}

/// How the second handle of [`Shared`] fails.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Fault {
    None,
    Writes,
    Syncs,
}

/// A file image, and what second handles wrote to it since one of them
/// last synced.
#[derive(Debug, Default)]
struct Image {
    bytes: Vec<u8>,
    unsynced: Vec<(u64, usize)>,
}

/// A device over an image shared with the second handles it gives out
/// (and those they give out), which fail as told.
#[derive(Debug)]
struct Shared {
    image: Arc<Mutex<Image>>,
    fault: Fault,
    second: bool,
}

impl Device for Shared {
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.image.lock().unwrap().bytes.read_at(offset, buf)
    }

    fn write_at(&mut self, offset: u64, buf: &[u8]) -> io::Result<()> {
        if self.second && self.fault == Fault::Writes {
            return Err(io::Error::other("injected write failure"));
        }
        let mut image = self.image.lock().unwrap();
        if self.second {
            image.unsynced.push((offset, buf.len()));
        }
        image.bytes.write_at(offset, buf)
    }

    fn sync(&mut self) -> io::Result<()> {
        let mut image = self.image.lock().unwrap();
        let unsynced = std::mem::take(&mut image.unsynced);
        if self.second && self.fault == Fault::Syncs {
            // As if write-back failed: what was written since is lost.
            for (offset, len) in unsynced {
                image.bytes[offset as usize..offset as usize + len].fill(0);
            }
            return Err(io::Error::other("injected sync failure"));
        }
        Ok(())
    }

    fn size(&mut self) -> io::Result<u64> {
        Ok(self.image.lock().unwrap().bytes.len() as u64)
    }

    fn behind(&self) -> Option<Box<dyn Device + Send>> {
        Some(Box::new(Shared {
            image: self.image.clone(),
            fault: self.fault,
            second: true,
        }))
    }
}

#[test]
fn pages_whose_early_write_or_sync_failed_are_written_by_the_commit() {
    let n = big();
    let pairs: Vec<(u64, u64)> = (0..n).map(|i| (key(i), i)).collect();
    for fault in [Fault::None, Fault::Writes, Fault::Syncs] {
        let image = Arc::new(Mutex::new(Image::default()));
        let dev = Shared {
            image: image.clone(),
            fault,
            second: false,
        };
        let mut table = ExHash::create_on(dev).unwrap();
        table.load(&pairs);
        table.commit().unwrap();
        let pages = table.stats().pages as u64;
        let bytes = image.lock().unwrap().bytes.clone();
        let size = bytes.len() as u64;
        let reopened = ExHash::open_on(bytes).unwrap();
        assert_eq!(contents(&reopened), model_of(&pairs), "{fault:?}");
        reopened.check_invariants().unwrap();
        // Written once (else again, by the commit, into the slots let go).
        assert!(size <= (pages + 40) * PAGE_SIZE as u64, "{fault:?}: {size}");
    }
}
