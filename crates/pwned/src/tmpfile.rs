//! Files without a name while they are being written, so that a build
//! killed at any moment (Ctrl-C, `kill -9`, a crash) leaves nothing behind:
//! its spill files and the half-written index vanish with the process. On
//! Linux they are `O_TMPFILE` files. Without it, scratch files are unlinked
//! as soon as they are created (Unix keeps them alive through the open
//! handle) or, on Windows, opened to be deleted when closed, and the index
//! has a temporary name until it is complete.
//!
//! A complete file takes its name with [`replace`], which on Windows also
//! replaces a file another process has open or mapped (a running `serve`).

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

/// A file with no name (or, where that cannot be had, one removed when
/// dropped).
#[derive(Debug)]
pub(crate) struct Nameless {
    pub file: File,
    /// Set when the file still has a name that must be removed on drop.
    named: Option<PathBuf>,
}

impl Nameless {
    /// A new, empty file in `dir`, readable and writable, to be given a
    /// name by [`Nameless::persist`] when complete. Without `O_TMPFILE` it
    /// has a temporary name (`hint` in it), removed if it is dropped.
    pub(crate) fn create(dir: &Path, hint: &str) -> io::Result<Nameless> {
        #[cfg(target_os = "linux")]
        if let Some(file) = tmpfile(dir)? {
            return Ok(Nameless { file, named: None });
        }
        let (file, path) = named(dir, hint, &OpenOptions::new())?;
        Ok(Nameless {
            file,
            named: Some(path),
        })
    }

    /// A new, empty scratch file in `dir` that is never persisted: without
    /// `O_TMPFILE`, Unix systems lose its name at once (the open handle
    /// keeps it alive), and Windows deletes it when its handle closes.
    pub(crate) fn scratch(dir: &Path, hint: &str) -> io::Result<Nameless> {
        #[cfg(target_os = "linux")]
        if let Some(file) = tmpfile(dir)? {
            return Ok(Nameless { file, named: None });
        }
        #[cfg(windows)]
        {
            use std::os::windows::fs::OpenOptionsExt;
            // FILE_FLAG_DELETE_ON_CLOSE: the system deletes the file when
            // its last handle closes, however the process ends.
            const DELETE_ON_CLOSE: u32 = 0x0400_0000;
            let mut options = OpenOptions::new();
            options.custom_flags(DELETE_ON_CLOSE);
            let (file, _) = named(dir, hint, &options)?;
            Ok(Nameless { file, named: None })
        }
        #[cfg(not(windows))]
        {
            let (file, path) = named(dir, hint, &OpenOptions::new())?;
            fs::remove_file(path)?;
            Ok(Nameless { file, named: None })
        }
    }

    /// Gives the (complete, synced) file the name `path`, replacing what is
    /// there.
    pub(crate) fn persist(mut self, path: &Path) -> io::Result<()> {
        if let Some(named) = self.named.take() {
            return replace(&named, path).inspect_err(|_| {
                let _ = fs::remove_file(&named);
            });
        }
        // A nameless file can only be linked to a new name: link it under a
        // temporary one next to `path`, then rename that over `path`.
        let dir = parent_dir(path);
        let name = path
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a file name"))?;
        let tmp = dir.join(format!(
            ".{}.seekless-tmp-{}",
            name.to_string_lossy(),
            std::process::id()
        ));
        link(&self.file, &tmp)?;
        fs::rename(&tmp, path).inspect_err(|_| {
            let _ = fs::remove_file(&tmp);
        })
    }
}

/// An `O_TMPFILE` file in `dir`, or `None` if its filesystem has none.
#[cfg(target_os = "linux")]
fn tmpfile(dir: &Path) -> io::Result<Option<File>> {
    use std::os::unix::fs::OpenOptionsExt;
    let opened = OpenOptions::new()
        .read(true)
        .write(true)
        .mode(0o644)
        .custom_flags(libc::O_TMPFILE)
        .open(dir);
    match opened {
        Ok(file) => Ok(Some(file)),
        // Filesystems without O_TMPFILE say so in one of these ways.
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL | libc::ENOENT)
            ) && dir.is_dir() =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// A new file with a temporary name in `dir`, opened with `options`
/// (readable and writable).
fn named(dir: &Path, hint: &str, options: &OpenOptions) -> io::Result<(File, PathBuf)> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let path = dir.join(format!(".seekless-{hint}-{}-{nanos}", std::process::id()));
    let file = options
        .clone()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)?;
    Ok((file, path))
}

impl Drop for Nameless {
    fn drop(&mut self) {
        if let Some(path) = self.named.take() {
            let _ = fs::remove_file(path);
        }
    }
}

/// Links an open `O_TMPFILE` file to `path`.
#[cfg(target_os = "linux")]
fn link(file: &File, path: &Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::io::AsRawFd;
    let to = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path holds a NUL byte"))?;
    let from = std::ffi::CString::new(format!("/proc/self/fd/{}", file.as_raw_fd()))
        .expect("no NUL in a number");
    // SAFETY: both are valid NUL-terminated strings that outlive the call.
    let done = unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    };
    if done == 0 {
        return Ok(());
    }
    let via_proc = io::Error::last_os_error();
    // Without /proc, AT_EMPTY_PATH links the descriptor itself (it needs
    // CAP_DAC_READ_SEARCH).
    let empty = c"";
    // SAFETY: as above; the descriptor is open for the call.
    let done = unsafe {
        libc::linkat(
            file.as_raw_fd(),
            empty.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::AT_EMPTY_PATH,
        )
    };
    if done == 0 { Ok(()) } else { Err(via_proc) }
}

#[cfg(not(target_os = "linux"))]
fn link(_file: &File, _path: &Path) -> io::Result<()> {
    // Only Linux makes files without a name; `create` names them elsewhere,
    // so `persist` renames instead of linking.
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "nameless files exist only on Linux",
    ))
}

/// Renames the complete file `from` to `to`, replacing what is there.
///
/// On Windows a rename over a file that another process has open or
/// mapped (a running `serve`, which maps its index) can be refused. The
/// file in the way is then renamed aside first (renaming an open or
/// mapped file is allowed, as every handle here shares deletion), `from`
/// takes the name, and the old file is deleted, or, while it is still
/// mapped, left under its aside name (`.NAME.seekless-old-…`) for a later
/// replace of the same name to delete. Readers keep the old file until
/// they reopen the name; `serve` does within a second.
pub(crate) fn replace(from: &Path, to: &Path) -> io::Result<()> {
    #[cfg(windows)]
    remove_old_asides(to);
    match fs::rename(from, to) {
        Ok(()) => Ok(()),
        #[cfg(windows)]
        Err(e) if in_use(&e) && to.is_file() => {
            let aside = aside_name(to);
            fs::rename(to, &aside).map_err(|_| e)?;
            if let Err(e) = fs::rename(from, to) {
                // Put the old file back: the name is not left empty.
                let _ = fs::rename(&aside, to);
                return Err(e);
            }
            let _ = fs::remove_file(&aside);
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// Whether a rename failed because the file in the way is in use:
/// ERROR_ACCESS_DENIED, ERROR_SHARING_VIOLATION, ERROR_LOCK_VIOLATION or
/// ERROR_USER_MAPPED_FILE.
#[cfg(windows)]
fn in_use(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(5 | 32 | 33 | 1224))
}

/// The prefix of the names files in the way of `to` are renamed aside to.
#[cfg(windows)]
fn aside_prefix(to: &Path) -> String {
    let name = to.file_name().unwrap_or_default().to_string_lossy();
    format!(".{name}.seekless-old-")
}

/// A new aside name for the file at `to`, in its directory.
#[cfg(windows)]
fn aside_name(to: &Path) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    parent_dir(to).join(format!(
        "{}{}-{nanos}",
        aside_prefix(to),
        std::process::id()
    ))
}

/// Deletes the files earlier replaces of `to` left aside, where nothing
/// maps them any more (the others stay for the next time).
#[cfg(windows)]
fn remove_old_asides(to: &Path) {
    let prefix = aside_prefix(to);
    let Ok(entries) = fs::read_dir(parent_dir(to)) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// The directory `path` is in: where its temporary file goes and what is
/// synced after a rename (`.` for a bare name).
pub(crate) fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, SeekFrom, Write};

    #[test]
    fn leaves_nothing_until_persisted() {
        let dir = std::env::temp_dir().join(format!("seekless-nameless-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let mut spill = Nameless::scratch(&dir, "spill").unwrap();
        spill.file.write_all(b"records").unwrap();
        spill.file.seek(SeekFrom::Start(0)).unwrap();
        let mut back = String::new();
        spill.file.read_to_string(&mut back).unwrap();
        assert_eq!(back, "records");
        // Windows keeps a delete-on-close file's name until it closes.
        assert_eq!(
            fs::read_dir(&dir).unwrap().count(),
            usize::from(cfg!(windows))
        );
        drop(spill);
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 0);

        let mut out = Nameless::create(&dir, "index").unwrap();
        out.file.write_all(b"index bytes").unwrap();
        // Without O_TMPFILE the index being written has a temporary name.
        let named = usize::from(!cfg!(target_os = "linux"));
        assert_eq!(fs::read_dir(&dir).unwrap().count(), named);
        let target = dir.join("pwned.idx");
        fs::write(&target, b"old").unwrap();
        out.persist(&target).unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"index bytes");
        let names: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["pwned.idx"]);
        fs::remove_dir_all(&dir).unwrap();
    }

    /// A file another handle has open and mapped (a running `serve`) is
    /// replaced, and keeps its old bytes for that handle; on Windows the
    /// file left aside goes at the next replace of the name.
    #[test]
    fn replaces_a_file_that_is_open_and_mapped() {
        let dir = std::env::temp_dir().join(format!("seekless-replace-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let target = dir.join("pwned.idx");
        fs::write(&target, b"old index").unwrap();
        let served = File::open(&target).unwrap();
        // SAFETY: the file is not changed in place while mapped.
        let map = unsafe { memmap2::Mmap::map(&served) }.unwrap();
        let new = dir.join("new");
        fs::write(&new, b"new index").unwrap();
        replace(&new, &target).unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"new index");
        assert_eq!(&map[..], b"old index");
        drop((map, served));
        fs::write(&new, b"newer index").unwrap();
        replace(&new, &target).unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"newer index");
        let names: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["pwned.idx"]);
        fs::remove_dir_all(&dir).unwrap();
    }
}
