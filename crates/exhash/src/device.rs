//! The byte device under a file store: a real file, a file image held in
//! memory (`Vec<u8>`: tests, fuzzing, or a table to be written elsewhere),
//! or anything else that can read, write and make writes durable (tests use
//! one that simulates crashes).

use std::io;

/// Positioned reads and writes with an explicit durability barrier.
pub trait Device {
    /// Fill `buf` from byte `offset`; reading past the end is an error.
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()>;
    /// Write `buf` at byte `offset`, growing the device as needed.
    fn write_at(&mut self, offset: u64, buf: &[u8]) -> io::Result<()>;
    /// Write `bufs` one after another from byte `offset` (a commit's pages
    /// that lie side by side in the file); by default one `write_at` each.
    fn write_vectored_at(&mut self, offset: u64, bufs: &[&[u8]]) -> io::Result<()> {
        let mut at = offset;
        for buf in bufs {
            self.write_at(at, buf)?;
            at += buf.len() as u64;
        }
        Ok(())
    }
    /// A hint that `len` bytes from `offset`, just written, will be synced
    /// soon: a file starts writing them to storage now, so that the sync
    /// waits for less. Durability still comes from `sync` alone.
    fn start_writeback(&mut self, offset: u64, len: u64) {
        let _ = (offset, len);
    }
    /// Make every write so far durable.
    fn sync(&mut self) -> io::Result<()>;
    /// Current length in bytes.
    fn size(&mut self) -> io::Result<u64>;
    /// A second handle on the same device for another thread, if it has
    /// one (a file: a duplicate of its descriptor). A store writes and
    /// syncs pages on it ahead of a commit, while it goes on with the
    /// table, so that the commit has less left to do. An error it reports
    /// there must be acted on there: it may not be reported again to this
    /// handle. None by default.
    fn behind(&self) -> Option<Box<dyn Device + Send>> {
        None
    }
}

impl Device for std::fs::File {
    #[cfg(unix)]
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        std::os::unix::fs::FileExt::read_exact_at(self, buf, offset)
    }

    #[cfg(unix)]
    fn write_at(&mut self, offset: u64, buf: &[u8]) -> io::Result<()> {
        std::os::unix::fs::FileExt::write_all_at(self, buf, offset)
    }

    /// `ReadFile` at an offset (which moves the cursor, unused here).
    #[cfg(windows)]
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let mut done = 0;
        while done < buf.len() {
            match std::os::windows::fs::FileExt::seek_read(
                self,
                &mut buf[done..],
                offset + done as u64,
            ) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// `WriteFile` at an offset.
    #[cfg(windows)]
    fn write_at(&mut self, offset: u64, buf: &[u8]) -> io::Result<()> {
        let mut done = 0;
        while done < buf.len() {
            match std::os::windows::fs::FileExt::seek_write(
                self,
                &buf[done..],
                offset + done as u64,
            ) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// One `pwritev` for up to `IOV_MAX` buffers at a time instead of a
    /// `pwrite` each.
    #[cfg(target_os = "linux")]
    fn write_vectored_at(&mut self, offset: u64, bufs: &[&[u8]]) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        const MAX_BUFFERS: usize = 1024; // IOV_MAX on Linux
        let mut slices: Vec<io::IoSlice<'_>> = bufs.iter().map(|b| io::IoSlice::new(b)).collect();
        let mut rest = &mut slices[..];
        let mut at = offset;
        while !rest.is_empty() {
            let count = rest.len().min(MAX_BUFFERS);
            let offset = libc::off_t::try_from(at)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "offset out of range"))?;
            // SAFETY: IoSlice is ABI-compatible with iovec on Unix, and the
            // `count` slices it points to stay borrowed for the call.
            let n = unsafe {
                libc::pwritev(
                    self.as_raw_fd(),
                    rest.as_ptr().cast::<libc::iovec>(),
                    count as libc::c_int,
                    offset,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if n == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            at += n as u64;
            io::IoSlice::advance_slices(&mut rest, n as usize);
        }
        Ok(())
    }

    fn start_writeback(&mut self, offset: u64, len: u64) {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
                return;
            };
            // SAFETY: sync_file_range reads only its integer arguments; a
            // failure only leaves the work to `sync`.
            unsafe {
                libc::sync_file_range(self.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE);
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (offset, len);
    }

    fn sync(&mut self) -> io::Result<()> {
        self.sync_data()
    }

    fn size(&mut self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }

    /// A duplicate descriptor. It shares the open file description, so a
    /// write-back error it reports is not reported again to this one.
    fn behind(&self) -> Option<Box<dyn Device + Send>> {
        Some(Box::new(self.try_clone().ok()?))
    }
}

/// A file image in memory; `sync` has nothing to do.
impl Device for Vec<u8> {
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let src = usize::try_from(offset)
            .ok()
            .and_then(|start| self.get(start..start.checked_add(buf.len())?))
            .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "read past the end"))?;
        buf.copy_from_slice(src);
        Ok(())
    }

    fn write_at(&mut self, offset: u64, buf: &[u8]) -> io::Result<()> {
        let too_far = || io::Error::new(io::ErrorKind::InvalidInput, "offset out of range");
        let start = usize::try_from(offset).map_err(|_| too_far())?;
        let end = start.checked_add(buf.len()).ok_or_else(too_far)?;
        if self.len() < end {
            self.resize(end, 0);
        }
        self[start..end].copy_from_slice(buf);
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn size(&mut self) -> io::Result<u64> {
        Ok(self.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// More buffers than one `pwritev` takes, of uneven sizes, at an
    /// offset past the end: the file holds what the in-memory image does.
    #[test]
    fn vectored_writes_to_a_file_match_the_default() {
        let bufs: Vec<Vec<u8>> = (0..2500u32)
            .map(|i| vec![i as u8; 1 + (i as usize * 7919) % 9000])
            .collect();
        let slices: Vec<&[u8]> = bufs.iter().map(|b| &b[..]).collect();
        let mut image = Vec::new();
        image.write_vectored_at(12_345, &slices).unwrap();

        let path = std::env::temp_dir().join(format!("exhash-vectored-{}", std::process::id()));
        let mut file = std::fs::File::create(&path).unwrap();
        file.write_vectored_at(12_345, &slices).unwrap();
        file.start_writeback(0, image.len() as u64);
        file.sync().unwrap();
        let written = std::fs::read(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(written.len(), image.len());
        assert!(written == image, "the file differs from the image");
    }
}
