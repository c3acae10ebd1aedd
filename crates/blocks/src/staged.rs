//! A file written under a temporary name beside its place and renamed into
//! it only when complete: a reader never sees half of it, a failed write
//! leaves what was there, and the temporary file is removed on drop.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The temporary file for `out`, until [`Staged::commit`] renames it.
pub(crate) struct Staged {
    temp: PathBuf,
    done: bool,
}

impl Staged {
    /// `.NAME.seekless-TAG-PID` beside `out` (hidden, and this process's).
    pub(crate) fn beside(out: &Path, tag: &str) -> Staged {
        let name = out.file_name().unwrap_or_default().to_string_lossy();
        let pid = std::process::id();
        Staged {
            temp: out.with_file_name(format!(".{name}.seekless-{tag}-{pid}")),
            done: false,
        }
    }

    /// Where the file is written meanwhile.
    pub(crate) fn path(&self) -> &Path {
        &self.temp
    }

    /// Renames the file (written and synced) to `out`, then syncs the
    /// directory on Unix so that the rename survives a power cut.
    pub(crate) fn commit(mut self, out: &Path) -> Result<()> {
        std::fs::rename(&self.temp, out).map_err(|e| Error::io(out, "rename into place", e))?;
        self.done = true;
        #[cfg(unix)]
        {
            let dir = match out.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            if let Ok(dir) = std::fs::File::open(dir) {
                let _ = dir.sync_all();
            }
        }
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}
