//! The stand-in's files: written whole under a temporary name and renamed
//! into place, keys readable by their owner only (mode 0600 from the
//! moment they exist; on Windows the directory's permissions decide).

use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Whether `path` exists; an error (a directory that cannot be searched)
/// names it.
pub fn exists(path: &Path) -> Result<bool, String> {
    path.try_exists()
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// The temporary name `path` is written under first: hidden, beside it,
/// this process's own.
fn partial(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.{}.partial", std::process::id()))
}

/// Writes `bytes` to `path` under a temporary name, synced, then renamed
/// over `path`: readers see the old file or the new one, never part of
/// one. `private`: readable and writable by the owner only.
pub fn write(path: &Path, bytes: &[u8], private: bool) -> Result<(), String> {
    let temporary = partial(path);
    let written = (|| {
        let _ = std::fs::remove_file(&temporary);
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        if private {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        #[cfg(not(unix))]
        let _ = private;
        let mut file = options.open(&temporary)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&temporary, path)
    })();
    written.map_err(|e| {
        let _ = std::fs::remove_file(&temporary);
        format!("{}: cannot write it: {e}", path.display())
    })
}

/// Fails, naming `dir`, unless a file can be made and removed in it.
pub fn check_writable(dir: &Path) -> Result<(), String> {
    let probe = partial(&dir.join("write-check"));
    let _ = std::fs::remove_file(&probe);
    let made = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe);
    match made {
        Ok(file) => {
            drop(file);
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(format!(
            "{}: cannot write in it: {e}; the CA directory must be writable by this \
             user (the server's certificate is renewed in it)",
            dir.display()
        )),
    }
}

/// Says so on standard error when a key file can be read by others than
/// its owner (Unix permissions).
pub fn warn_if_readable_by_others(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(meta) = std::fs::metadata(path) {
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                eprintln!(
                    "seekless: warning: {} can be read by others than its owner (mode \
                     {mode:03o}): `chmod 600` it; whoever holds it can make certificates \
                     the clients trust",
                    path.display()
                );
            }
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}
