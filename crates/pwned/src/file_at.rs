//! Reads and writes at a byte offset of a file, on every platform: `pread`
//! and `pwrite` on Unix; on Windows `ReadFile` and `WriteFile` given the
//! offset, which also move the handle's cursor (no handle these are used
//! on is read or written through its cursor as well).

use std::fs::File;
use std::io;

/// Reads into `buf` from `offset`; the bytes read (0 at the end).
pub(crate) fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    #[cfg(unix)]
    return std::os::unix::fs::FileExt::read_at(file, buf, offset);
    #[cfg(windows)]
    return std::os::windows::fs::FileExt::seek_read(file, buf, offset);
}

/// Fills `buf` from `offset`; reading past the end is an error.
pub(crate) fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    if read_full_at(file, buf, offset)? < buf.len() {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(())
}

/// Reads into `buf` from `offset` until `buf` is full or the file ends.
/// Returns the bytes read.
pub(crate) fn read_full_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match read_at(file, &mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// Writes all of `buf` at `offset`, growing the file as needed.
pub(crate) fn write_all_at(file: &File, buf: &[u8], offset: u64) -> io::Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes past the end grow the file with zeros between; reads stop at
    /// the end, and an exact read past it fails.
    #[test]
    fn positioned_reads_and_writes() {
        let path = std::env::temp_dir().join(format!("seekless-file-at-{}", std::process::id()));
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        write_all_at(&file, b"tail", 10).unwrap();
        write_all_at(&file, b"head", 0).unwrap();
        let mut all = [1u8; 20];
        assert_eq!(read_full_at(&file, &mut all, 0).unwrap(), 14);
        assert_eq!(&all[..14], b"head\0\0\0\0\0\0tail");
        let mut four = [0u8; 4];
        read_exact_at(&file, &mut four, 10).unwrap();
        assert_eq!(&four, b"tail");
        let err = read_exact_at(&file, &mut four, 12).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        drop(file);
        std::fs::remove_file(&path).unwrap();
    }
}
