//! Writing a large file that will be synced when complete: the kernel is
//! asked to start writing each finished stretch to storage while the rest
//! is still being built, so the final sync has little left to wait for
//! (about 0.1 s saved on a 180 MB index), and dirty pages never pile up.

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};

/// Bytes written between two requests to start writeback.
const STEP: u64 = 16 << 20;

/// A file being written front to back (a seek back, as to write a header
/// at the end, is allowed and simply not written back early).
#[derive(Debug)]
pub(crate) struct Writeback<'a> {
    file: &'a File,
    pos: u64,
    /// Everything before this has been handed to writeback.
    started: u64,
}

impl<'a> Writeback<'a> {
    pub(crate) fn new(file: &'a File) -> Writeback<'a> {
        Writeback {
            file,
            pos: 0,
            started: 0,
        }
    }

    fn start_writeback(&mut self) {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            // SAFETY: sync_file_range only reads its integer arguments; a
            // failure only means the final sync does all the work.
            unsafe {
                libc::sync_file_range(
                    self.file.as_raw_fd(),
                    self.started as i64,
                    (self.pos - self.started) as i64,
                    libc::SYNC_FILE_RANGE_WRITE,
                );
            }
        }
        self.started = self.pos;
    }
}

impl Write for Writeback<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = (&*self.file).write(buf)?;
        self.pos += n as u64;
        if self.pos >= self.started + STEP {
            self.start_writeback();
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        (&*self.file).flush()
    }
}

impl Seek for Writeback<'_> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        self.pos = (&*self.file).seek(to)?;
        self.started = self.started.min(self.pos);
        Ok(self.pos)
    }
}
