//! The files an update keeps beside the index: the partial index (made,
//! then locked while the update runs) and the journal, named after it;
//! and the rename over the index made durable.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The partial index and the journal of an update of `path`, beside it.
pub(super) fn beside(path: &Path) -> Result<(PathBuf, PathBuf)> {
    let name = path.file_name().ok_or_else(|| {
        Error::io(
            path.to_path_buf(),
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file name"),
        )
    })?;
    let name = name.to_string_lossy();
    Ok((
        path.with_file_name(format!(".{name}.update-partial")),
        path.with_file_name(format!(".{name}.update-journal")),
    ))
}

/// The partial index, locked for as long as this update runs: a second
/// update of the same index stops here instead of writing over it.
pub(super) fn lock_partial(path: &Path, partial_path: &Path) -> Result<File> {
    let partial = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(partial_path)
        .map_err(|e| Error::io(partial_path.to_path_buf(), e))?;
    match partial.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            return Err(Error::io(
                path.to_path_buf(),
                std::io::Error::new(
                    std::io::ErrorKind::WouldBlock,
                    "another update of this index is running",
                ),
            ));
        }
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(Error::io(partial_path.to_path_buf(), e));
        }
    }
    Ok(partial)
}

/// The files of an update beside the index: the partial index (open and
/// locked) and the journal.
pub(super) struct Files<'f> {
    pub(super) partial: &'f File,
    pub(super) partial_path: &'f Path,
    pub(super) journal_path: &'f Path,
}

impl Files<'_> {
    pub(super) fn partial_err(&self, e: std::io::Error) -> Error {
        Error::io(self.partial_path.to_path_buf(), e)
    }
}

/// Makes a rename in `path`'s directory durable, where directories can be
/// synced (on Windows a rename is durable when it returns).
pub(super) fn sync_parent(path: &Path) {
    #[cfg(unix)]
    if let Ok(d) = File::open(crate::tmpfile::parent_dir(path)) {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = path;
}
