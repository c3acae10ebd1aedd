//! Reads and writes at a byte offset of a file, on every platform: `pread`
//! and `pwrite` on Unix; on Windows `ReadFile` and `WriteFile` given the
//! offset (the store's files are never read or written through a cursor).

use std::fs::File;
use std::io;
use std::path::Path;

use crate::error::{Error, Result};

/// Opens the existing file at `path` to read and write; returns it and
/// its length. Errors name the file.
pub(super) fn open_existing(path: &Path) -> Result<(File, u64)> {
    let file = File::options()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| Error::io(path, "open", e))?;
    let len = file
        .metadata()
        .map_err(|e| Error::io(path, "read", e))?
        .len();
    Ok((file, len))
}

/// Fills `buf` from `offset`; reading past the end is an error.
pub(super) fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    #[cfg(unix)]
    return std::os::unix::fs::FileExt::read_exact_at(file, buf, offset);
    #[cfg(windows)]
    {
        let (mut buf, mut offset) = (buf, offset);
        while !buf.is_empty() {
            match std::os::windows::fs::FileExt::seek_read(file, buf, offset) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => {
                    buf = &mut buf[n..];
                    offset += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// Writes all of `buf` at `offset`, growing the file as needed.
pub(super) fn write_all_at(file: &File, buf: &[u8], offset: u64) -> io::Result<()> {
    #[cfg(unix)]
    return std::os::unix::fs::FileExt::write_all_at(file, buf, offset);
    #[cfg(windows)]
    {
        let (mut buf, mut offset) = (buf, offset);
        while !buf.is_empty() {
            match std::os::windows::fs::FileExt::seek_write(file, buf, offset) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    buf = &buf[n..];
                    offset += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}
