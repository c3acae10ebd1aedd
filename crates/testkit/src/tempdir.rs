//! Temporary directories that remove themselves.

use std::ffi::OsStr;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Set (to anything) to keep every [`TempDir`] for a look afterwards; each
/// kept directory's path is printed to standard error.
pub const KEEP_VAR: &str = "SEEKLESS_KEEP_TEMP";

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A fresh, empty directory under [`std::env::temp_dir`], named
/// `seekless-LABEL-PID-N` (the process id keeps test binaries apart, the
/// counter keeps the tests of one binary apart), removed with everything in
/// it when dropped, unless [`TempDir::keep`] was called or [`KEEP_VAR`] is
/// set. It dereferences to its [`Path`].
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
    keep: bool,
}

impl TempDir {
    /// Creates the directory; `label` says whose it is in its name.
    pub fn new(label: &str) -> TempDir {
        TempDir::under(&std::env::temp_dir(), label)
    }

    /// Creates the directory in memory where the system has a tmpfs for it
    /// (`/dev/shm`), else as [`TempDir::new`] does: for tests that make
    /// a million files, which a disk's file system creates (and removes)
    /// many times more slowly.
    pub fn in_memory(label: &str) -> TempDir {
        let shm = Path::new("/dev/shm");
        if shm.is_dir() {
            TempDir::under(shm, label)
        } else {
            TempDir::new(label)
        }
    }

    fn under(base: &Path, label: &str) -> TempDir {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = base.join(format!("seekless-{label}-{}-{n}", std::process::id()));
        // Left over by an earlier process that had the same id.
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap_or_else(|e| panic!("create {}: {e}", path.display()));
        TempDir {
            path,
            keep: std::env::var_os(KEEP_VAR).is_some(),
        }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Keeps the directory when dropped (for debugging a test), and returns
    /// its path.
    pub fn keep(&mut self) -> &Path {
        self.keep = true;
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if self.keep {
            eprintln!("kept {}", self.path.display());
        } else {
            // A test may have removed it already.
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

impl Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<OsStr> for TempDir {
    fn as_ref(&self) -> &OsStr {
        self.path.as_os_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removed_on_drop_with_its_contents() {
        let dir = TempDir::new("testkit-drop");
        let path = dir.path().to_path_buf();
        assert!(path.is_dir());
        assert!(std::fs::read_dir(&path).unwrap().next().is_none());
        std::fs::create_dir(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/f"), b"x").unwrap();
        drop(dir);
        assert!(!path.exists());
    }

    #[test]
    fn each_one_is_distinct() {
        let (a, b) = (TempDir::new("testkit-same"), TempDir::new("testkit-same"));
        assert_ne!(a.path(), b.path());
        let name = a.file_name().unwrap().to_str().unwrap();
        assert!(name.starts_with(&format!("seekless-testkit-same-{}-", std::process::id())));
    }

    #[test]
    fn kept_when_asked() {
        let mut dir = TempDir::new("testkit-keep");
        let path = dir.keep().to_path_buf();
        drop(dir);
        assert!(path.is_dir());
        std::fs::remove_dir_all(path).unwrap();
    }

    #[test]
    fn removed_already_is_fine() {
        let dir = TempDir::new("testkit-gone");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
