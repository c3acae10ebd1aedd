//! The writer's lock: one process at a time opens a table file for
//! writing. The lock is on a file beside the table, `NAME.lock`, not on
//! the table itself: a new table is renamed into place once complete, and
//! a lock on a file that a rename replaces would guard nothing. The lock
//! file is made once and never removed (removing it would let a second
//! writer lock a new file while the first still holds the old one); the
//! lock is the system's (`flock` on Unix, `LockFileEx` on Windows), so it
//! goes with the process however it ends. The holder writes its process id
//! into the file, a hint for the message a second writer gets
//! (`docs/format-exhash.md`, "Lock").

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::{Error, ErrorKind};

/// The first bytes of a lock file.
const MAGIC: [u8; 8] = *b"SLEXLOCK";
/// The lock file's layout version.
const VERSION: u32 = 1;

/// How long opening a table waits for another writer to let go.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Not at all: a table in use is refused at once.
    #[default]
    No,
    /// Until it is free.
    Forever,
    /// Up to this long.
    AtMost(Duration),
}

/// The lock of a table open for writing, held until dropped.
#[derive(Debug)]
pub(crate) struct WriterLock {
    file: File,
}

/// `table`'s lock file: `NAME.lock` beside it.
pub(crate) fn lock_path(table: &Path) -> PathBuf {
    let mut name = table.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    table.with_file_name(name)
}

impl WriterLock {
    /// Lock `table` for writing (making its lock file if there is none),
    /// waiting as `wait` says; a table another writer holds is
    /// [`ErrorKind::Locked`].
    pub(crate) fn take(table: &Path, wait: Wait) -> Result<WriterLock, Error> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(lock_path(table))
            .map_err(|e| Error::io("opening the table's lock file", e))?;
        let locked = match wait {
            Wait::No => try_lock(&file),
            Wait::Forever => file.lock().map(|()| true),
            Wait::AtMost(limit) => poll(&file, limit),
        }
        .map_err(|e| Error::io("locking the table's lock file", e))?;
        if !locked {
            return Err(ErrorKind::Locked {
                path: table.to_path_buf(),
                pid: holder(&file),
            }
            .into());
        }
        let lock = WriterLock { file };
        // A hint for the message others get: failing to leave it is no
        // reason to refuse the table.
        let _ = lock.record(std::process::id());
        Ok(lock)
    }

    /// Write the lock file's bytes, naming process `pid` (0: none).
    fn record(&self, pid: u32) -> std::io::Result<()> {
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&MAGIC);
        bytes[8..12].copy_from_slice(&VERSION.to_le_bytes());
        bytes[12..].copy_from_slice(&pid.to_le_bytes());
        write_at(&self.file, &bytes)
    }
}

impl Drop for WriterLock {
    /// Say that no one holds it, then let go (closing the file unlocks it).
    fn drop(&mut self) {
        let _ = self.record(0);
    }
}

fn try_lock(file: &File) -> std::io::Result<bool> {
    match file.try_lock() {
        Ok(()) => Ok(true),
        Err(TryLockError::WouldBlock) => Ok(false),
        Err(TryLockError::Error(e)) => Err(e),
    }
}

/// Try to lock `file` until `limit` has passed, sleeping a little longer
/// each time (the system offers no blocking lock with a time limit).
fn poll(file: &File, limit: Duration) -> std::io::Result<bool> {
    let Some(deadline) = Instant::now().checked_add(limit) else {
        // Longer than this clock can count: for as long as it takes.
        return file.lock().map(|()| true);
    };
    let mut pause = Duration::from_millis(1);
    loop {
        if try_lock(file)? {
            return Ok(true);
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(false);
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

#[cfg(unix)]
fn write_at(file: &File, bytes: &[u8]) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, bytes, 0)
}

#[cfg(windows)]
fn write_at(file: &File, bytes: &[u8]) -> std::io::Result<()> {
    let mut done = 0;
    while done < bytes.len() {
        match std::os::windows::fs::FileExt::seek_write(file, &bytes[done..], done as u64)? {
            0 => return Err(std::io::ErrorKind::WriteZero.into()),
            n => done += n,
        }
    }
    Ok(())
}

/// The process holding the lock on `file`, where the system tells it.
///
/// On Linux, `/proc/locks` lists the holder of each lock by the file's
/// device and inode; the id recorded in the file picks among several
/// (a descriptor shared with a child), and is the answer, if that process
/// is alive, where `/proc/locks` cannot be read or shows no lock on the
/// file. On other Unix
/// systems the recorded id is the answer if that process is alive. A
/// recorded id can be stale (a writer killed before it could clear it, or
/// a holder that has not yet written its own), hence the checks. On
/// Windows the holder's lock keeps others from reading the file at all:
/// no id.
#[cfg(unix)]
fn holder(file: &File) -> Option<u32> {
    use std::os::unix::fs::FileExt;
    let mut bytes = [0u8; 16];
    let recorded = match file.read_exact_at(&mut bytes, 0) {
        Ok(()) if bytes[..8] == MAGIC => Some(u32::from_le_bytes(
            bytes[12..].try_into().unwrap_or_default(),
        ))
        .filter(|&pid| pid != 0),
        _ => None,
    };
    #[cfg(target_os = "linux")]
    if let Some(listed) = listed_holder(file, recorded) {
        return listed;
    }
    recorded.filter(|&pid| alive(pid))
}

#[cfg(not(unix))]
fn holder(_file: &File) -> Option<u32> {
    None
}

/// Whether process `pid` exists (signal 0 checks without sending one).
#[cfg(unix)]
fn alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: kill with signal 0 only checks that `pid` exists and may be
    // signalled; it touches no memory.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// The holder of `file`'s lock by `/proc/locks`: None when it cannot be
/// read or lists no lock on the file, Some(None) when it names no single
/// holder. The file is read in one call where it fits a page: read in
/// parts, the kernel walks its list anew for each, and a lock taken or
/// let go meanwhile (by anyone on the machine) can shift a line out of
/// sight; a read that shows no lock on the file is tried again.
#[cfg(target_os = "linux")]
fn listed_holder(file: &File, recorded: Option<u32>) -> Option<Option<u32>> {
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;
    let meta = file.metadata().ok()?;
    for _ in 0..3 {
        let mut locks = Vec::with_capacity(1 << 16);
        File::open("/proc/locks")
            .and_then(|mut f| f.read_to_end(&mut locks))
            .ok()?;
        let locks = String::from_utf8_lossy(&locks);
        if let Some(found) = pick_holder(&locks, meta.dev(), meta.ino(), recorded) {
            return Some(found);
        }
    }
    None
}

/// Of the locks listed in `locks` (the text of `/proc/locks`), the
/// holder of the one on inode `ino` of device `dev`: the recorded id if it
/// is among them, else the only one (Some(None): none or several); None
/// when no lock is listed on that inode. Waiters (`->`) hold nothing. A
/// file system whose inodes' device differs from the one `stat` gives
/// (btrfs subvolumes) still matches by inode when the recorded id is there.
#[cfg(target_os = "linux")]
fn pick_holder(locks: &str, dev: u64, ino: u64, recorded: Option<u32>) -> Option<Option<u32>> {
    // glibc's major and minor of a device number.
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    let mut on_device = Vec::new();
    let mut on_inode = Vec::new();
    for line in locks.lines() {
        let mut words = line.split_ascii_whitespace().skip(1);
        let Some(kind) = words.next() else { continue };
        if kind == "->" {
            continue;
        }
        // kind, advisory or mandatory, read or write, pid, maj:min:inode.
        let mut words = words.skip(2);
        let (Some(pid), Some(place)) = (words.next(), words.next()) else {
            continue;
        };
        let Ok(pid) = pid.parse::<u32>() else {
            continue; // -1: an open file description's lock, no process
        };
        let mut parts = place.split(':');
        let (Some(maj), Some(min), Some(inode)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        if pid == 0 || inode.parse() != Ok(ino) {
            continue;
        }
        on_inode.push(pid);
        if u64::from_str_radix(maj, 16) == Ok(major) && u64::from_str_radix(min, 16) == Ok(minor) {
            on_device.push(pid);
        }
    }
    if on_inode.is_empty() {
        return None;
    }
    if let Some(pid) = recorded.filter(|pid| on_inode.contains(pid)) {
        return Some(Some(pid));
    }
    on_device.dedup();
    Some(match on_device[..] {
        [pid] => Some(pid),
        _ => None,
    })
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::pick_holder;

    /// Device 8:2 (`st_dev` 0x802), inode 1234.
    const LOCKS: &str = "\
1: FLOCK  ADVISORY  WRITE 400 08:02:1234 0 EOF
1: -> FLOCK  ADVISORY  WRITE 500 08:02:1234 0 EOF
2: POSIX  ADVISORY  WRITE 600 08:02:99 0 EOF
3: OFDLCK ADVISORY  READ  -1 08:02:1234 0 EOF
4: FLOCK  ADVISORY  WRITE 700 00:2d:1234 0 EOF
";

    #[test]
    fn the_holder_is_read_from_proc_locks() {
        // The waiter (500), another inode (600), no process (-1) and
        // another device (700) are passed over.
        assert_eq!(pick_holder(LOCKS, 0x802, 1234, None), Some(Some(400)));
        // A stale recorded id is not the holder.
        assert_eq!(pick_holder(LOCKS, 0x802, 1234, Some(42)), Some(Some(400)));
        // The recorded id is believed when the inode has it, on any device.
        assert_eq!(pick_holder(LOCKS, 0x802, 1234, Some(700)), Some(Some(700)));
        // Only on another device: not told.
        assert_eq!(pick_holder(LOCKS, 0x803, 1234, None), Some(None));
        // No lock on the inode: read again, or ask elsewhere.
        assert_eq!(pick_holder(LOCKS, 0x802, 77, None), None);
        assert_eq!(pick_holder("", 0x802, 1234, None), None);
        assert_eq!(
            pick_holder("garbage\n1:\n1: FLOCK", 0x802, 1234, None),
            None
        );
        // Device numbers past 8 bits, packed as glibc does: major 259,
        // minor 300.
        let dev = (259u64 & 0xfff) << 8 | (300u64 & 0xff) | (300u64 & !0xff) << 12;
        let locks = "1: FLOCK  ADVISORY  WRITE 9 103:12c:5 0 EOF\n";
        assert_eq!(pick_holder(locks, dev, 5, None), Some(Some(9)));
    }
}
