//! exhash's crash-safe file backend (`ExHash<FileStore>`) against the
//! persistent u64 -> u64 stores a user would pick instead: LMDB through
//! `heed`, `redb`, and the LSM tree `fjall`. Each store lives in its own
//! folder of one directory, gets the same keys (random, from the testkit
//! `Rng`) in the same run, and the stores take turns within each run.
//!
//! Workloads, each store from empty in every run:
//! 1. bulk load of 10M pairs and one commit, in random order and (on
//!    fresh stores) sorted by key: LMDB with `APPEND`, fjall by ingestion;
//!    the bytes on disk after it;
//! 2. 1M gets of loaded keys, warm (the files read right before), and cold:
//!    the store closed, its files dropped from the page cache
//!    (`posix_fadvise(DONTNEED)`) and reopened before each batch of 10k
//!    gets (gets timed apart from the open; 10 batches by default).
//!    exhash reads its whole file when it opens, so its cold gets are
//!    memory lookups: the open's time is printed beside them;
//! 3. 1M puts of new keys, a durable commit every 1,000;
//! 4. 1M deletes of loaded keys, a commit every 1,000, and the size after;
//! 5. kill -9 of a child process in the middle of commits of 1,000 puts,
//!    then a reopen: it must hold exactly the last commit that returned or
//!    the one in flight. A failure fails the run (exit status 1).
//!
//! A commit is each store's own durable one: exhash `commit`, an LMDB or
//! redb write transaction committed with their default flags and
//! durability (fsync on commit), for fjall a write batch committed to its
//! journal and `Database::persist(SyncAll)`. fjall gets a 1 GiB block
//! cache, redb's default (its own is 32 MiB).
//!
//! Run: `cargo bench -p seekless-exhash --bench stores` (add `-- --quick`
//! for one run instead of three, `-- --commits-only` for workload 3 alone,
//! below). `SEEKLESS_BENCH_PAIRS` sets the bulk load's
//! pairs (the other workloads take a tenth of it, at most 1M),
//! `SEEKLESS_BENCH_RUNS` the runs, `SEEKLESS_BENCH_COLD_BATCHES` the cold
//! batches. The stores go under `$TMPDIR` (default `/tmp`): its file system
//! is printed, as it must be a disk's, not tmpfs. The default run took 23
//! minutes on a 2-vCPU VM with a virtio disk
//! (`benchmarks/log/2026-11-28-exhash-stores.md`).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use heed::byteorder::BigEndian;
use heed::types::U64;
use redb::ReadableDatabase;
use seekless_exhash::{ExHash, FileStore};
use seekless_testkit::measure::{drop_cache, median};
use seekless_testkit::{Rng, TempDir};

/// Pairs a commit writes in the commit workloads and the crash check.
const PER_COMMIT: usize = 1000;
/// Gets between two drops of the cache in the cold workload.
const COLD_BATCH: usize = 10_000;
/// Set in the crash check's child: `STORE:DIR`.
const CHILD_VAR: &str = "SEEKLESS_STORES_CHILD";
/// Kills of a child per store in the crash check.
const KILLS: usize = 3;

/// One persistent u64 -> u64 map, as the workloads drive it.
trait Store {
    /// Load `pairs` and commit once; `sorted`: they come in key order and
    /// the store may use what it has for that.
    fn bulk_load(&mut self, pairs: &[(u64, u64)], sorted: bool);
    /// Put `pairs` and commit.
    fn put_commit(&mut self, pairs: &[(u64, u64)]);
    /// Delete `keys` and commit.
    fn delete_commit(&mut self, keys: &[u64]);
    /// Look `keys` up, one at a time: how many were found, and the
    /// wrapping sum of their values.
    fn get_sum(&self, keys: &[u64]) -> (usize, u64);
    /// Wait for work the store goes on with in the background after a
    /// commit (fjall's flushes and compactions), so that it does not take
    /// the CPU from the next measurement.
    fn settle(&self) {}
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Exhash,
    Lmdb,
    Redb,
    Fjall,
}

const KINDS: [Kind; 4] = [Kind::Exhash, Kind::Lmdb, Kind::Redb, Kind::Fjall];

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Exhash => "exhash",
            Kind::Lmdb => "lmdb",
            Kind::Redb => "redb",
            Kind::Fjall => "fjall",
        }
    }

    fn from_name(name: &str) -> Kind {
        *KINDS
            .iter()
            .find(|k| k.name() == name)
            .expect("a store name")
    }

    /// Open the store in `dir`, created empty if it is not there.
    fn open(self, dir: &Path) -> Box<dyn Store> {
        std::fs::create_dir_all(dir).unwrap();
        match self {
            Kind::Exhash => Box::new(ExHash::open_or_create(&dir.join("t.exh")).unwrap()),
            Kind::Lmdb => Box::new(Lmdb::open(dir)),
            Kind::Redb => Box::new(redb::Database::create(dir.join("t.redb")).unwrap()),
            Kind::Fjall => Box::new(Fjall::open(dir)),
        }
    }
}

impl Store for ExHash<FileStore> {
    fn bulk_load(&mut self, pairs: &[(u64, u64)], _sorted: bool) {
        self.load(pairs);
        self.commit().unwrap();
    }

    fn put_commit(&mut self, pairs: &[(u64, u64)]) {
        self.insert_many(pairs);
        self.commit().unwrap();
    }

    fn delete_commit(&mut self, keys: &[u64]) {
        for &k in keys {
            self.remove(k);
        }
        self.commit().unwrap();
    }

    fn get_sum(&self, keys: &[u64]) -> (usize, u64) {
        sum(keys.iter().map(|&k| self.get(k)))
    }
}

/// Found count and wrapping sum of lookups' answers.
fn sum(found: impl Iterator<Item = Option<u64>>) -> (usize, u64) {
    found
        .flatten()
        .fold((0, 0), |(n, s), v| (n + 1, s.wrapping_add(v)))
}

type LmdbTable = heed::Database<U64<BigEndian>, U64<BigEndian>>;

/// An LMDB environment (default flags: synced on commit) and its unnamed
/// database, keys and values big-endian.
struct Lmdb {
    env: Option<heed::Env>,
    db: LmdbTable,
}

impl Lmdb {
    fn open(dir: &Path) -> Lmdb {
        // SAFETY: the bench opens each environment once at a time, and
        // nothing else touches its files meanwhile.
        let env = unsafe { heed::EnvOpenOptions::new().map_size(1 << 36).open(dir) }.unwrap();
        let mut txn = env.write_txn().unwrap();
        let db = env.create_database(&mut txn, None).unwrap();
        txn.commit().unwrap();
        Lmdb { env: Some(env), db }
    }

    fn env(&self) -> &heed::Env {
        self.env.as_ref().expect("open until dropped")
    }
}

impl Drop for Lmdb {
    /// Closed for good before the next open of the same folder.
    fn drop(&mut self) {
        if let Some(env) = self.env.take() {
            env.prepare_for_closing().wait();
        }
    }
}

impl Store for Lmdb {
    fn bulk_load(&mut self, pairs: &[(u64, u64)], sorted: bool) {
        let mut txn = self.env().write_txn().unwrap();
        let flags = if sorted {
            heed::PutFlags::APPEND
        } else {
            heed::PutFlags::empty()
        };
        for (k, v) in pairs {
            self.db.put_with_flags(&mut txn, flags, k, v).unwrap();
        }
        txn.commit().unwrap();
    }

    fn put_commit(&mut self, pairs: &[(u64, u64)]) {
        let mut txn = self.env().write_txn().unwrap();
        for (k, v) in pairs {
            self.db.put(&mut txn, k, v).unwrap();
        }
        txn.commit().unwrap();
    }

    fn delete_commit(&mut self, keys: &[u64]) {
        let mut txn = self.env().write_txn().unwrap();
        for k in keys {
            self.db.delete(&mut txn, k).unwrap();
        }
        txn.commit().unwrap();
    }

    fn get_sum(&self, keys: &[u64]) -> (usize, u64) {
        let txn = self.env().read_txn().unwrap();
        sum(keys.iter().map(|k| self.db.get(&txn, k).unwrap()))
    }
}

const REDB_TABLE: redb::TableDefinition<u64, u64> = redb::TableDefinition::new("pairs");

/// redb with its default durability (`Immediate`: synced on commit).
impl Store for redb::Database {
    fn bulk_load(&mut self, pairs: &[(u64, u64)], _sorted: bool) {
        self.put_commit(pairs);
    }

    fn put_commit(&mut self, pairs: &[(u64, u64)]) {
        let txn = self.begin_write().unwrap();
        {
            let mut table = txn.open_table(REDB_TABLE).unwrap();
            for &(k, v) in pairs {
                table.insert(k, v).unwrap();
            }
        }
        txn.commit().unwrap();
    }

    fn delete_commit(&mut self, keys: &[u64]) {
        let txn = self.begin_write().unwrap();
        {
            let mut table = txn.open_table(REDB_TABLE).unwrap();
            for &k in keys {
                table.remove(k).unwrap();
            }
        }
        txn.commit().unwrap();
    }

    fn get_sum(&self, keys: &[u64]) -> (usize, u64) {
        let txn = self.begin_read().unwrap();
        let table = match txn.open_table(REDB_TABLE) {
            Ok(table) => table,
            Err(redb::TableError::TableDoesNotExist(_)) => return (0, 0),
            Err(e) => panic!("redb: {e}"),
        };
        sum(keys
            .iter()
            .map(|&k| table.get(k).unwrap().map(|v| v.value())))
    }
}

/// fjall with its defaults but for a block cache of 1 GiB, redb's
/// default, instead of 32 MiB: its README asks for a cache the data set
/// fits in when it can (at 32 MiB, a warm get at 10M pairs read and
/// checksummed a whole block from the page cache). Keys and values
/// big-endian.
struct Fjall {
    db: fjall::Database,
    pairs: fjall::Keyspace,
}

impl Fjall {
    fn open(dir: &Path) -> Fjall {
        let db = fjall::Database::builder(dir)
            .cache_size(1 << 30)
            .open()
            .unwrap();
        let pairs = db
            .keyspace("pairs", fjall::KeyspaceCreateOptions::default)
            .unwrap();
        Fjall { db, pairs }
    }

    /// A commit: the batch into the journal, then the journal synced.
    fn commit(&self, batch: fjall::OwnedWriteBatch) {
        batch.commit().unwrap();
        self.db.persist(fjall::PersistMode::SyncAll).unwrap();
    }
}

impl Store for Fjall {
    /// Sorted pairs by ingestion (tables written directly); others in
    /// write batches of 100k to the journal, synced once at the end: one
    /// 10M batch would hold every pair twice in memory.
    fn bulk_load(&mut self, pairs: &[(u64, u64)], sorted: bool) {
        if sorted {
            let mut ingestion = self.pairs.start_ingestion().unwrap();
            for (k, v) in pairs {
                ingestion
                    .write(&k.to_be_bytes()[..], &v.to_be_bytes()[..])
                    .unwrap();
            }
            ingestion.finish().unwrap();
        } else {
            for chunk in pairs.chunks(100_000) {
                let mut batch = self.db.batch();
                for (k, v) in chunk {
                    batch.insert(&self.pairs, &k.to_be_bytes()[..], &v.to_be_bytes()[..]);
                }
                batch.commit().unwrap();
            }
        }
        self.db.persist(fjall::PersistMode::SyncAll).unwrap();
    }

    fn put_commit(&mut self, pairs: &[(u64, u64)]) {
        let mut batch = self.db.batch();
        for (k, v) in pairs {
            batch.insert(&self.pairs, &k.to_be_bytes()[..], &v.to_be_bytes()[..]);
        }
        self.commit(batch);
    }

    fn delete_commit(&mut self, keys: &[u64]) {
        let mut batch = self.db.batch();
        for k in keys {
            batch.remove(&self.pairs, &k.to_be_bytes()[..]);
        }
        self.commit(batch);
    }

    fn get_sum(&self, keys: &[u64]) -> (usize, u64) {
        sum(keys.iter().map(|k| {
            let v = self.pairs.get(k.to_be_bytes()).unwrap()?;
            Some(u64::from_be_bytes(v[..8].try_into().unwrap()))
        }))
    }

    fn settle(&self) {
        while self.db.outstanding_flushes() > 0 || self.db.active_compactions() > 0 {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

// Files ----------------------------------------------------------------------

/// Every file under `dir` (none of a folder removed meanwhile).
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// Bytes on disk under `dir`: the files' lengths, and the blocks allocated.
/// A file a store's background work removed meanwhile counts as none.
fn disk_bytes(dir: &Path) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let sizes = files(dir)
        .into_iter()
        .filter_map(|f| std::fs::metadata(f).ok());
    sizes.fold((0, 0), |(len, alloc), m| {
        (len + m.len(), alloc + m.blocks() * 512)
    })
}

/// Every file under `dir` out of the page cache (one removed meanwhile
/// needs nothing).
fn drop_dir_cache(dir: &Path) {
    for f in files(dir) {
        if f.exists() {
            drop_cache(&f);
        }
    }
}

/// Every file under `dir` read once, into the page cache.
fn read_dir_files(dir: &Path) {
    for f in files(dir) {
        std::hint::black_box(std::fs::read(f).ok());
    }
}

/// Bytes this process has handed to write calls so far (`wchar` of
/// `/proc/self/io`; its `write_bytes` counts a whole large folio of the
/// page cache for each one a write dirties, far more than is written).
fn written() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
    io.lines()
        .find_map(|l| l.strip_prefix("wchar: "))
        .map_or(0, |n| n.parse().unwrap())
}

/// The name of the file system `dir` is on.
fn file_system(dir: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path and a zeroed struct statfs fills.
    let (rc, fs) = unsafe {
        let mut fs: libc::statfs = std::mem::zeroed();
        (libc::statfs(path.as_ptr(), &mut fs), fs)
    };
    assert_eq!(rc, 0, "statfs {}", dir.display());
    match fs.f_type {
        0xEF53 => "ext4".into(),
        0x0102_1994 => "tmpfs (memory: not a disk's figures)".into(),
        0x5846_5342 => "xfs".into(),
        0x9123_683E => "btrfs".into(),
        0x2FC1_2FC1 => "zfs".into(),
        other => format!("type {other:#x}"),
    }
}

// The run ------------------------------------------------------------------

/// The workloads' inputs.
struct Input {
    /// Bulk-loaded pairs, in random order.
    load: Vec<(u64, u64)>,
    /// The same sorted by key.
    sorted: Vec<(u64, u64)>,
    /// Loaded keys to get, in random order.
    gets: Vec<u64>,
    /// New pairs to put.
    puts: Vec<(u64, u64)>,
    /// Loaded keys to delete (none of `gets`' first cold batches).
    deletes: Vec<u64>,
    cold_batches: usize,
}

impl Input {
    fn new(n: usize, cold_batches: usize) -> Input {
        let ops = (n / 10).clamp(1, 1_000_000);
        // splitmix64 maps its counter one to one: the keys are distinct.
        let (mut keys, mut values) = (Rng::new(0x5EED), Rng::new(0xF00D));
        let all: Vec<(u64, u64)> = (0..n + ops)
            .map(|_| (keys.next_u64(), values.next_u64()))
            .collect();
        let (load, puts) = (all[..n].to_vec(), all[n..].to_vec());
        let mut sorted = load.clone();
        sorted.sort_unstable();
        let mut rng = Rng::new(7);
        let gets = (0..ops).map(|_| load[rng.index(n)].0).collect();
        let deletes = load[..ops].iter().map(|p| p.0).collect();
        Input {
            load,
            sorted,
            gets,
            puts,
            deletes,
            cold_batches,
        }
    }

    /// The expected (count, sum) of each batch of gets from the loaded
    /// store.
    fn expect(&self) -> Vec<(usize, u64)> {
        let map: std::collections::HashMap<u64, u64> = self.load.iter().copied().collect();
        let batches = self.gets.chunks(COLD_BATCH);
        batches
            .map(|b| sum(b.iter().map(|k| map.get(k).copied())))
            .collect()
    }
}

/// One store's figures from one run, in seconds and bytes.
#[derive(Clone, Debug, Default)]
struct Figures {
    load: f64,
    /// Waiting for the background work after the bulk load.
    load_settle: f64,
    load_bytes: (u64, u64),
    sorted_load: f64,
    sorted_bytes: (u64, u64),
    warm_get: f64,
    cold_get: f64,
    cold_open: f64,
    puts: f64,
    deletes: f64,
    /// Bytes the puts and the deletes handed to write calls.
    put_written: u64,
    delete_written: u64,
    delete_bytes: (u64, u64),
}

/// Every workload on a fresh store of `kind` in `dir`.
fn run_store(kind: Kind, dir: &Path, input: &Input, expect: &[(usize, u64)]) -> Figures {
    let mut f = Figures::default();
    let timed = |work: &mut dyn FnMut()| {
        let start = Instant::now();
        work();
        start.elapsed().as_secs_f64()
    };

    // 1, sorted, first: its store is dropped after the load.
    let sorted_dir = dir.join(format!("{}-sorted", kind.name()));
    let mut store = kind.open(&sorted_dir);
    f.sorted_load = timed(&mut || store.bulk_load(&input.sorted, true));
    store.settle();
    drop(store);
    f.sorted_bytes = disk_bytes(&sorted_dir);
    std::fs::remove_dir_all(&sorted_dir).unwrap();

    // 1: the bulk load.
    let dir = dir.join(kind.name());
    let mut store = kind.open(&dir);
    f.load = timed(&mut || store.bulk_load(&input.load, false));
    f.load_settle = timed(&mut || store.settle());
    f.load_bytes = disk_bytes(&dir);

    // 2: warm gets, one read transaction a batch.
    read_dir_files(&dir);
    let batches: Vec<&[u64]> = input.gets.chunks(COLD_BATCH).collect();
    let mut got = Vec::new();
    f.warm_get = timed(&mut || got = batches.iter().map(|b| store.get_sum(b)).collect());
    assert_eq!(got[..], expect[..], "{}: warm gets", kind.name());

    // 2: cold gets, the store reopened on files out of the page cache.
    drop(store);
    let (mut opens, mut gets) = (0.0, 0.0);
    for (batch, expect) in batches.iter().zip(expect).take(input.cold_batches) {
        drop_dir_cache(&dir);
        let start = Instant::now();
        let store = kind.open(&dir);
        opens += start.elapsed().as_secs_f64();
        let mut got = (0, 0);
        gets += timed(&mut || got = store.get_sum(batch));
        assert_eq!(got, *expect, "{}: cold gets", kind.name());
    }
    let cold = input.cold_batches.min(batches.len()).max(1);
    f.cold_open = opens / cold as f64;
    f.cold_get = gets / cold as f64;

    // 3, 4: puts and deletes with a commit every 1,000, on warm files as
    // exhash's are in its memory.
    read_dir_files(&dir);
    let mut store = kind.open(&dir);
    let before = written();
    f.puts = timed(&mut || {
        for chunk in input.puts.chunks(PER_COMMIT) {
            store.put_commit(chunk);
        }
    });
    let between = written();
    f.deletes = timed(&mut || {
        for chunk in input.deletes.chunks(PER_COMMIT) {
            store.delete_commit(chunk);
        }
    });
    f.put_written = between - before;
    f.delete_written = written() - between;
    store.settle();
    let (found, _) = store.get_sum(&input.deletes);
    assert_eq!(found, 0, "{}: deleted keys found", kind.name());
    let (found, _) = store.get_sum(&input.puts.iter().map(|p| p.0).collect::<Vec<_>>());
    assert_eq!(found, input.puts.len(), "{}: put keys missing", kind.name());
    drop(store);
    f.delete_bytes = disk_bytes(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    f
}

// The crash check --------------------------------------------------------------

/// The keys of commit `i` (from 1) of the crash check, its values `i`.
fn crash_batch(i: u64) -> Vec<(u64, u64)> {
    let mut rng = Rng::new(i.wrapping_mul(0x9E37_79B9));
    (0..PER_COMMIT)
        .map(|_| (rng.next_u64() | 1, i)) // odd: never the marker
        .collect()
}

/// Holds the number of the last commit.
const MARKER: u64 = 0;

/// The child: commits of `crash_batch(1)`, `crash_batch(2)`, … on a fresh
/// store, each with the marker, a line printed after each returns, until
/// killed (or `limit` commits, for counting syncs under `strace`).
fn crash_child(spec: &str) {
    let (name, dir) = spec.split_once(':').expect("STORE:DIR");
    let limit: u64 = std::env::var("SEEKLESS_STORES_COMMITS")
        .ok()
        .map_or(u64::MAX, |s| s.parse().unwrap());
    let mut store = Kind::from_name(name).open(Path::new(dir));
    for i in 1..=limit {
        let mut batch = crash_batch(i);
        batch.push((MARKER, i));
        store.put_commit(&batch);
        println!("{i}");
    }
}

/// Kill a child at a random moment of its commits, then check what the
/// store holds: Ok(last commit returned, found) or Err(what is wrong).
fn crash_once(kind: Kind, dir: &Path, rng: &mut Rng) -> Result<(u64, u64), String> {
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .env(CHILD_VAR, format!("{}:{}", kind.name(), dir.display()))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let wait_for = 5 + rng.below(40);
    let mut returned = 0;
    while returned < wait_for {
        returned = lines
            .next()
            .expect("the child died")
            .unwrap()
            .parse()
            .unwrap();
    }
    std::thread::sleep(Duration::from_micros(rng.below(20_000)));
    child.kill().unwrap();
    child.wait().unwrap();
    // Lines printed before the kill: commits that returned.
    for line in lines {
        returned = line.unwrap().parse().unwrap();
    }
    let store = kind.open(dir);
    let get = |k: u64| {
        let (n, v) = store.get_sum(&[k]);
        (n == 1).then_some(v)
    };
    let marker = get(MARKER).unwrap_or(0);
    if marker != returned && marker != returned + 1 {
        return Err(format!("marker {marker}, last commit returned {returned}"));
    }
    for i in 1..=marker + 1 {
        let batch = crash_batch(i);
        let keys: Vec<u64> = batch.iter().map(|p| p.0).collect();
        let (found, total) = store.get_sum(&keys);
        let want = if i <= marker {
            (PER_COMMIT, i.wrapping_mul(PER_COMMIT as u64))
        } else {
            (0, 0)
        };
        if (found, total) != want {
            return Err(format!(
                "marker {marker}: commit {i} has {found} of its {PER_COMMIT} keys"
            ));
        }
    }
    Ok((returned, marker))
}

/// Several kills per store; whether every store passed.
fn crash_check(root: &Path) -> bool {
    println!("\nkill -9 during commits of {PER_COMMIT} puts, then reopen ({KILLS} kills a store)");
    println!("| store | last commit returned / found after reopen | result |");
    println!("|---|---|---|");
    let mut rng = Rng::new(0xC0FFEE);
    let mut all = true;
    for kind in KINDS {
        let mut seen = Vec::new();
        let mut failure = None;
        for n in 0..KILLS {
            let dir = root.join(format!("crash-{}-{n}", kind.name()));
            match crash_once(kind, &dir, &mut rng) {
                Ok((returned, found)) => seen.push(format!("{returned}/{found}")),
                Err(e) => failure = Some(e),
            }
            std::fs::remove_dir_all(&dir).unwrap();
        }
        all &= failure.is_none();
        let result = failure.map_or("pass".to_string(), |e| format!("**FAIL**: {e}"));
        println!("| {} | {} | {result} |", kind.name(), seen.join(", "));
    }
    all
}

// Puts with commits alone ---------------------------------------------------------

/// Puts a round of `--commits-only` makes, in commits of [`PER_COMMIT`].
const COMMITS_ONLY_PUTS: usize = 300_000;
/// The stores `--commits-only` compares.
const COMMITS_ONLY: [Kind; 3] = [Kind::Exhash, Kind::Lmdb, Kind::Redb];

/// `--commits-only`: workload 3 alone, against LMDB and redb, in under
/// three minutes. Each store is bulk-loaded once with the `n` pairs of the
/// full run (untimed), then gets `runs` rounds of 300,000 new puts, a
/// commit every 1,000, the stores taking turns within each round. A round
/// of exhash's spans 300 of its commits, so the rounds together include
/// checkpoints (`docs/format-exhash.md`) in the proportion 1M puts do; the
/// whole span is printed beside the median round. Every put is read back
/// at the end.
fn commits_only(root: &Path, input: &Input, runs: usize) {
    let mut stores: Vec<Box<dyn Store>> = COMMITS_ONLY
        .iter()
        .map(|&kind| {
            let start = Instant::now();
            let mut store = kind.open(&root.join(kind.name()));
            store.bulk_load(&input.load, false);
            store.settle();
            eprintln!(
                "{}: loaded in {:.1} s",
                kind.name(),
                start.elapsed().as_secs_f64()
            );
            store
        })
        .collect();
    let (mut keys, mut values) = (Rng::new(0xC0_33175), Rng::new(0xBEEF));
    let rounds: Vec<Vec<(u64, u64)>> = (0..runs)
        .map(|_| {
            (0..COMMITS_ONLY_PUTS)
                .map(|_| (keys.next_u64(), values.next_u64()))
                .collect()
        })
        .collect();
    let mut secs = vec![Vec::new(); stores.len()];
    for (round, puts) in rounds.iter().enumerate() {
        for i in 0..stores.len() {
            let k = (i + round) % stores.len();
            let start = Instant::now();
            for chunk in puts.chunks(PER_COMMIT) {
                stores[k].put_commit(chunk);
            }
            secs[k].push(start.elapsed().as_secs_f64());
        }
        eprintln!(
            "round {round}: {:?}",
            secs.iter().map(|s| s[round]).collect::<Vec<_>>()
        );
    }
    for (kind, store) in COMMITS_ONLY.iter().zip(&stores) {
        for puts in &rounds {
            let keys: Vec<u64> = puts.iter().map(|p| p.0).collect();
            let (found, _) = store.get_sum(&keys);
            assert_eq!(found, keys.len(), "{}: put keys missing", kind.name());
        }
    }
    println!(
        "\n3. puts of new keys into {} pairs, a commit every {PER_COMMIT}: \
         {runs} rounds of {COMMITS_ONLY_PUTS} (stores in turn)",
        input.load.len()
    );
    println!(
        "| store | µs a put, median round | rounds, s | exhash ÷ store, median | exhash ÷ store, all rounds |"
    );
    println!("|---|---:|---|---:|---:|");
    let ours = (median(secs[0].clone()), secs[0].iter().sum::<f64>());
    for (kind, s) in COMMITS_ONLY.iter().zip(&secs) {
        let (m, total) = (median(s.clone()), s.iter().sum::<f64>());
        let each: Vec<String> = s.iter().map(|x| format!("{x:.2}")).collect();
        println!(
            "| {} | {:.1} | {} | {:.2} | {:.2} |",
            kind.name(),
            m * 1e6 / COMMITS_ONLY_PUTS as f64,
            each.join(", "),
            m / ours.0,
            total / ours.1
        );
    }
    let pairs: Vec<String> = (0..runs)
        .map(|r| format!("{:.2}", secs[1][r] / secs[0][r]))
        .collect();
    println!(
        "
exhash ÷ LMDB, round by round: {}",
        pairs.join(", ")
    );
}

// Printing -------------------------------------------------------------------

fn mb(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / 1e6)
}

/// A table of per-operation times: `secs(f)` seconds for `ops` operations.
fn print_rates(
    title: &str,
    ops: usize,
    medians: &[(Kind, Figures)],
    secs: impl Fn(&Figures) -> f64,
) -> Vec<f64> {
    println!("\n{title}");
    println!("| store | ns/op | ops/s | exhash ÷ store, ops/s |");
    println!("|---|---:|---:|---:|");
    let ours = secs(&medians[0].1);
    medians
        .iter()
        .map(|(kind, f)| {
            let s = secs(f);
            println!(
                "| {} | {:.0} | {:.0} | {:.2} |",
                kind.name(),
                s * 1e9 / ops as f64,
                ops as f64 / s,
                s / ours
            );
            s / ours
        })
        .collect()
}

fn print_sizes(
    title: &str,
    n: usize,
    medians: &[(Kind, Figures)],
    bytes: fn(&Figures) -> (u64, u64),
) {
    println!("\n{title}");
    println!("| store | file bytes MB | allocated MB | B/pair | exhash ÷ store, bytes |");
    println!("|---|---:|---:|---:|---:|");
    let ours = bytes(&medians[0].1).0 as f64;
    for (kind, f) in medians {
        let (len, alloc) = bytes(f);
        println!(
            "| {} | {} | {} | {:.1} | {:.2} |",
            kind.name(),
            mb(len),
            mb(alloc),
            len as f64 / n as f64,
            ours / len as f64
        );
    }
}

/// The median of each figure over the runs, per store.
fn medians(runs: &[Vec<Figures>]) -> Vec<(Kind, Figures)> {
    let of = |k: usize, f: fn(&Figures) -> f64| median(runs.iter().map(|r| f(&r[k])).collect());
    let of_bytes = |k: usize, f: fn(&Figures) -> (u64, u64)| {
        median(runs.iter().map(|r| f(&r[k])).collect::<Vec<_>>())
    };
    KINDS
        .iter()
        .enumerate()
        .map(|(k, &kind)| {
            let f = Figures {
                load: of(k, |f| f.load),
                load_settle: of(k, |f| f.load_settle),
                load_bytes: of_bytes(k, |f| f.load_bytes),
                sorted_load: of(k, |f| f.sorted_load),
                sorted_bytes: of_bytes(k, |f| f.sorted_bytes),
                warm_get: of(k, |f| f.warm_get),
                cold_get: of(k, |f| f.cold_get),
                cold_open: of(k, |f| f.cold_open),
                puts: of(k, |f| f.puts),
                deletes: of(k, |f| f.deletes),
                put_written: median(runs.iter().map(|r| r[k].put_written).collect()),
                delete_written: median(runs.iter().map(|r| r[k].delete_written).collect()),
                delete_bytes: of_bytes(k, |f| f.delete_bytes),
            };
            (kind, f)
        })
        .collect()
}

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name).map_or(default, |s| s.parse().expect(name))
}

fn main() {
    if let Ok(spec) = std::env::var(CHILD_VAR) {
        return crash_child(&spec);
    }
    let started = Instant::now();
    let quick = std::env::args().any(|a| a == "--quick");
    let n = env_or("SEEKLESS_BENCH_PAIRS", 10_000_000);
    let runs = env_or("SEEKLESS_BENCH_RUNS", if quick { 1 } else { 3 });
    let input = Input::new(n, env_or("SEEKLESS_BENCH_COLD_BATCHES", 10));
    let ops = input.gets.len();
    let root = TempDir::new("exhash-stores");
    if std::env::args().any(|a| a == "--commits-only") {
        println!(
            "exhash against LMDB and redb, puts with commits only: {n} pairs loaded, \
             {runs} rounds, in {} ({})",
            root.display(),
            file_system(&root)
        );
        commits_only(&root, &input, runs);
        println!("\nwhole run: {:.0} s", started.elapsed().as_secs_f64());
        return;
    }
    println!(
        "exhash against persistent stores: {n} pairs loaded, {ops} gets, puts and deletes, \
         median of {runs} run(s), in {} ({})",
        root.display(),
        file_system(&root)
    );
    let expect = input.expect();

    // Each run gives every store its turn, starting one further each time.
    let mut runs_figures = Vec::new();
    for run in 0..runs {
        let mut figures = vec![Figures::default(); KINDS.len()];
        for i in 0..KINDS.len() {
            let k = (i + run) % KINDS.len();
            let start = Instant::now();
            figures[k] = run_store(KINDS[k], &root, &input, &expect);
            eprintln!(
                "run {run}: {} in {:.0} s: {:?}",
                KINDS[k].name(),
                start.elapsed().as_secs_f64(),
                figures[k]
            );
        }
        runs_figures.push(figures);
    }
    let m = medians(&runs_figures);

    let load = print_rates(
        &format!("1. bulk load of {n} random pairs in random order, one commit"),
        n,
        &m,
        |f| f.load,
    );
    println!(
        "| store | background work after the commit, s (not in the load's time) |\n|---|---:|"
    );
    for (kind, f) in &m {
        println!("| {} | {:.1} |", kind.name(), f.load_settle);
    }
    print_sizes("file after it and its background work", n, &m, |f| {
        f.load_bytes
    });
    print_rates(
        "1b. the same pairs sorted by key (LMDB `APPEND`, fjall ingestion)",
        n,
        &m,
        |f| f.sorted_load,
    );
    print_sizes("file after it", n, &m, |f| f.sorted_bytes);
    let warm = print_rates(
        &format!(
            "2. {ops} gets of loaded keys, warm (batches of {COLD_BATCH}, one read transaction each)"
        ),
        ops,
        &m,
        |f| f.warm_get,
    );
    let cold_ops = COLD_BATCH.min(ops);
    print_rates(
        &format!(
            "2b. cold gets: each batch of {cold_ops} after a reopen on files dropped from the page cache \
             ({} batches; gets only)",
            input.cold_batches
        ),
        cold_ops,
        &m,
        |f| f.cold_get,
    );
    println!("| store | cold open ms (exhash reads its whole file) |\n|---|---:|");
    for (kind, f) in &m {
        println!("| {} | {:.1} |", kind.name(), f.cold_open * 1e3);
    }
    let puts = print_rates(
        &format!("3. {ops} puts of new keys, a commit every {PER_COMMIT}"),
        ops,
        &m,
        |f| f.puts,
    );
    print_rates(
        &format!("4. {ops} deletes of loaded keys, a commit every {PER_COMMIT}"),
        ops,
        &m,
        |f| f.deletes,
    );
    let commits = ops.div_ceil(PER_COMMIT) as u64;
    println!("| store | MB handed to write calls a commit, puts / deletes |\n|---|---:|");
    for (kind, f) in &m {
        println!(
            "| {} | {:.3} / {:.3} |",
            kind.name(),
            (f.put_written / commits) as f64 / 1e6,
            (f.delete_written / commits) as f64 / 1e6
        );
    }
    print_sizes("file after it", n, &m, |f| f.delete_bytes);

    let crash_ok = crash_check(&root);

    // Columns of `KINDS`: exhash, lmdb, redb, fjall.
    let size = m[0].1.load_bytes.0 as f64 / m[1].1.load_bytes.0 as f64;
    let puts_runs: Vec<f64> = runs_figures.iter().map(|r| r[1].puts / r[0].puts).collect();
    let puts_each: Vec<String> = puts_runs.iter().map(|x| format!("{x:.2}")).collect();
    println!("\ntargets (issues 52 and 60)");
    let targets = [
        (
            "bulk load ≥ 2x LMDB's speed",
            load[1] >= 2.0,
            format!("{:.2}x", load[1]),
        ),
        (
            "puts with commits ≥ redb's and LMDB's, LMDB's in every run",
            puts[2] >= 1.0 && puts_runs.iter().all(|&x| x >= 1.0),
            format!(
                "{:.2}x redb, {:.2}x LMDB (runs: {})",
                puts[2],
                puts[1],
                puts_each.join(", ")
            ),
        ),
        (
            "warm gets no slower than LMDB's",
            warm[1] >= 1.0,
            format!("{:.2}x", warm[1]),
        ),
        (
            "file ≤ 0.6x LMDB's after the bulk load",
            size <= 0.6,
            format!("{size:.2}x"),
        ),
        (
            "kill -9: last commit or the one in flight, every store",
            crash_ok,
            String::new(),
        ),
    ];
    for (target, met, figure) in targets {
        println!(
            "- {target}: {figure} {}",
            if met { "met" } else { "**missed**" }
        );
    }
    println!("\nwhole run: {:.0} s", started.elapsed().as_secs_f64());
    if !crash_ok {
        std::process::exit(1);
    }
}
