//! What tells one file from another under the same name, so that serve
//! notices an index or a certificate replaced by a rename.

use std::path::Path;
use std::time::SystemTime;

/// What tells one file from another under the same name: device and inode
/// where there are such (elsewhere the creation time, which a rename
/// keeps), with size and modification time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    file: (u64, u64),
    #[cfg(not(unix))]
    created: Option<SystemTime>,
    len: u64,
    modified: Option<SystemTime>,
}

impl Identity {
    /// The identity of the file now at `path`.
    pub fn of(path: &Path) -> std::io::Result<Identity> {
        let meta = std::fs::metadata(path)?;
        #[cfg(unix)]
        let file = {
            use std::os::unix::fs::MetadataExt;
            (meta.dev(), meta.ino())
        };
        #[cfg(not(unix))]
        let file = (0, 0);
        Ok(Identity {
            file,
            #[cfg(not(unix))]
            created: meta.created().ok(),
            len: meta.len(),
            modified: meta.modified().ok(),
        })
    }

    /// When the file was last modified, where the platform says.
    pub fn modified(&self) -> Option<SystemTime> {
        self.modified
    }
}
