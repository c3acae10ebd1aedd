//! One writer at a time: a second open of a table is refused while the
//! first is open, free once it is dropped, and waited for when asked
//! (the same between processes: crates/cli/tests/exhash.rs).

mod common;

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use common::scratch;
use seekless_exhash::{ErrorKind, ExHash, FileStore, OpenOptions};

type Table = ExHash<FileStore<std::fs::File>>;

/// The pid the error names, checking that it is a lock error on `path`.
fn locked(result: Result<Table, seekless_exhash::Error>, path: &Path) -> Option<u32> {
    let err = result.expect_err("a second writer was let in");
    let message = err.to_string();
    match err.kind() {
        ErrorKind::Locked { path: p, pid } => {
            assert_eq!(p, path);
            assert!(message.contains("open for writing"), "{message}");
            *pid
        }
        other => panic!("not a lock error: {other:?}"),
    }
}

fn lock_file(path: &Path) -> Vec<u8> {
    let mut name = path.file_name().unwrap().to_os_string();
    name.push(".lock");
    std::fs::read(path.with_file_name(name)).unwrap()
}

#[test]
fn a_second_writer_is_refused_until_the_first_is_dropped() {
    let (_dir, path) = scratch("lock-second");
    let mut first = ExHash::open_or_create(&path).unwrap();
    first.insert(1, 10);
    first.commit().unwrap();
    let pid = locked(ExHash::open(&path), &path);
    locked(ExHash::open_or_create(&path), &path);
    // The holder is this process, where the system tells.
    if cfg!(unix) {
        assert_eq!(pid, Some(std::process::id()));
        let bytes = lock_file(&path);
        assert_eq!(&bytes[..12], b"SLEXLOCK\x01\0\0\0");
        assert_eq!(bytes[12..16], std::process::id().to_le_bytes());
        assert!(locked(ExHash::open(&path), &path).is_some());
    }
    // Refusing it touched nothing: the first goes on.
    first.insert(2, 20);
    first.commit().unwrap();
    drop(first);
    if cfg!(unix) {
        assert_eq!(lock_file(&path)[12..16], [0; 4]);
    }
    let second = ExHash::open(&path).unwrap();
    assert_eq!((second.get(1), second.get(2)), (Some(10), Some(20)));
}

#[test]
fn a_missing_table_gets_no_lock_file() {
    let (dir, path) = scratch("lock-missing");
    let err = ExHash::open(&path).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Io { .. }), "{err}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_waiting_writer_gets_the_table_when_the_first_lets_go() {
    let (_dir, path) = scratch("lock-wait");
    let mut first = ExHash::open_or_create(&path).unwrap();
    first.insert(1, 10);
    first.commit().unwrap();
    let (tx, rx) = mpsc::channel();
    let waiter = {
        let path = path.clone();
        std::thread::spawn(move || {
            let table = OpenOptions::new().wait(true).open(&path);
            tx.send(table.map(|t| (t.get(1), t.get(2)))).unwrap();
        })
    };
    // It cannot have got in: the first holds the table.
    assert!(rx.try_recv().is_err());
    first.insert(2, 20);
    first.commit().unwrap();
    drop(first);
    // It sees the first's last commit.
    assert_eq!(rx.recv().unwrap().unwrap(), (Some(10), Some(20)));
    waiter.join().unwrap();
}

#[test]
fn a_wait_with_a_limit_gives_up_with_the_lock_error() {
    let (_dir, path) = scratch("lock-limit");
    let first = ExHash::open_or_create(&path).unwrap();
    let refused = OpenOptions::new()
        .wait_at_most(Duration::from_millis(30))
        .open(&path);
    locked(refused, &path);
    drop(first);
    let second = OpenOptions::new()
        .wait_at_most(Duration::from_millis(30))
        .open(&path);
    assert!(second.is_ok());
    drop(second);
    // A limit past what the clock counts is no limit.
    let third = OpenOptions::new().wait_at_most(Duration::MAX).open(&path);
    assert!(third.is_ok());
}

/// Two threads creating one new table: one makes it, the other is refused
/// (or opens it after), and nothing of the first is lost.
#[test]
fn two_creators_of_a_new_table_do_not_lose_a_commit() {
    for round in 0..20u64 {
        let (_dir, path) = scratch(&format!("lock-create-{round}"));
        let barrier = std::sync::Barrier::new(2);
        let outcomes: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..2u64)
                .map(|who| {
                    let (path, barrier) = (&path, &barrier);
                    s.spawn(move || {
                        barrier.wait();
                        let mut table = ExHash::open_or_create(path)?;
                        for k in 0..1000 {
                            table.insert(who << 32 | k, k);
                        }
                        table.commit()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let table = ExHash::open(&path).unwrap();
        let mut winners = 0;
        for (who, outcome) in outcomes.into_iter().enumerate() {
            let who = who as u64;
            match outcome {
                Ok(()) => {
                    winners += 1;
                    for k in 0..1000 {
                        assert_eq!(table.get(who << 32 | k), Some(k), "round {round}");
                    }
                }
                Err(e) => assert!(
                    matches!(e.kind(), ErrorKind::Locked { .. }),
                    "round {round}: {e}"
                ),
            }
        }
        assert!(winners >= 1, "round {round}");
        assert_eq!(table.len(), 1000 * winners);
    }
}

/// A lock file left naming a process that is gone does not keep a writer
/// out, nor is that process named as the holder.
#[cfg(unix)]
#[test]
fn a_stale_pid_in_the_lock_file_is_not_the_holder() {
    let (_dir, path) = scratch("lock-stale");
    drop(ExHash::open_or_create(&path).unwrap());
    let gone = {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    };
    let mut bytes = b"SLEXLOCK\x01\0\0\0".to_vec();
    bytes.extend(gone.to_le_bytes());
    let mut name = path.file_name().unwrap().to_os_string();
    name.push(".lock");
    std::fs::write(path.with_file_name(&name), &bytes).unwrap();
    // Nobody holds it: a writer gets in.
    drop(ExHash::open(&path).unwrap());
    // Held by this process before it wrote its id: the stale one is not named.
    std::fs::write(path.with_file_name(&name), &bytes).unwrap();
    let raw = std::fs::File::open(path.with_file_name(&name)).unwrap();
    raw.lock().unwrap();
    let pid = locked(ExHash::open(&path), &path);
    assert_ne!(pid, Some(gone));
    if cfg!(target_os = "linux") {
        assert_eq!(pid, Some(std::process::id()));
    }
}
