//! Writing a large index file past the page cache. A build writes its
//! index once, front to back, and does not read it again; through the page
//! cache, every byte is copied into freshly allocated cache pages (a
//! quarter of a 55M-hash build's CPU time, where fresh memory is dear, as
//! in a virtual machine), and the cache fills with pages nobody asks for,
//! pushing out the spill files a large build is about to read back. So the
//! stream goes out in big, aligned blocks with direct I/O (`O_DIRECT`,
//! switched on for each block's write only), and only what does not fill
//! a block, and anything written after a seek, goes the usual way. Where
//! the file system refuses direct I/O, everything goes the usual way, as
//! it does on every system but Linux (Windows has unbuffered I/O only as a
//! flag of the whole handle, fixed when the file is opened).
//!
//! Data that is itself aligned (the pages a build packs, in
//! [`PageBuf`](crate::format::page::PageBuf)s) is not copied into the block: what
//! the block holds goes out first, then the data from where it lies.

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};

use crate::file_at::{read_full_at, write_all_at};

/// Bytes a direct write takes at once.
const BLOCK: usize = 4 << 20;
/// Bytes of aligned data from which a write sends them from where they
/// lie rather than through the block.
const IN_PLACE_FROM: usize = 64 << 10;
/// Alignment direct I/O asks of offsets, lengths and memory.
pub(crate) const ALIGN: usize = 4096;

/// Bytes at an address aligned for direct I/O, grown as asked, with an
/// eighth to spare (what they held is not kept when they grow). The spill
/// files read back into them differ in size by a little: grown to each
/// new largest exactly, they took fresh memory, faulted in anew, every
/// few partitions.
#[derive(Debug, Default)]
pub(crate) struct Aligned {
    memory: Vec<u8>,
    start: usize,
}

impl Aligned {
    /// The first `len` bytes, aligned: zeros when just grown, else what
    /// was last written there.
    pub(crate) fn first_mut(&mut self, len: usize) -> &mut [u8] {
        if self.memory.len() < len + ALIGN {
            // The old memory goes back first.
            self.memory = Vec::new();
            self.memory = vec![0u8; len + len / 8 + ALIGN];
            self.start = self.memory.as_ptr().align_offset(ALIGN);
        }
        &mut self.memory[self.start..self.start + len]
    }
}

/// A buffered writer of a file that sends whole, aligned blocks past the
/// page cache; `Seek` writes out what is buffered first.
#[derive(Debug)]
pub(crate) struct DirectWriter<'a> {
    file: &'a File,
    /// `BLOCK` bytes, aligned.
    memory: Aligned,
    /// Bytes buffered.
    len: usize,
    /// File offset of the buffer's first byte.
    pos: u64,
    /// Whether direct writes are still worth trying.
    direct: bool,
    /// Writes sent from where their data lay.
    #[cfg(test)]
    in_place: usize,
}

impl<'a> DirectWriter<'a> {
    pub(crate) fn new(file: &'a File) -> DirectWriter<'a> {
        let mut memory = Aligned::default();
        memory.first_mut(BLOCK);
        DirectWriter {
            file,
            memory,
            len: 0,
            pos: 0,
            direct: cfg!(target_os = "linux"),
            #[cfg(test)]
            in_place: 0,
        }
    }

    /// Writes the full buffer: direct when its offset allows, else (or when
    /// direct I/O is refused) through the page cache.
    fn write_block(&mut self) -> io::Result<()> {
        let block = self.memory.first_mut(BLOCK);
        if self.direct && self.pos.is_multiple_of(ALIGN as u64) {
            match write_direct(self.file, block, self.pos) {
                Ok(()) => {
                    self.pos += BLOCK as u64;
                    self.len = 0;
                    return Ok(());
                }
                // Not supported here (EINVAL): never again for this file.
                Err(e) if refused(&e) => self.direct = false,
                Err(e) => return Err(e),
            }
        }
        let block = self.memory.first_mut(BLOCK);
        write_all_at(self.file, block, self.pos)?;
        self.pos += BLOCK as u64;
        self.len = 0;
        Ok(())
    }

    /// Writes what is buffered through the page cache.
    fn write_rest(&mut self) -> io::Result<()> {
        let rest = &self.memory.first_mut(self.len)[..];
        write_all_at(self.file, rest, self.pos)?;
        self.pos += self.len as u64;
        self.len = 0;
        Ok(())
    }
}

/// Whether `e` says the file system refuses direct I/O (or this memory,
/// offset or length for it): the usual way is then taken instead.
pub(crate) fn refused(e: &io::Error) -> bool {
    #[cfg(target_os = "linux")]
    if e.raw_os_error() == Some(libc::EINVAL) {
        return true;
    }
    e.kind() == io::ErrorKind::Unsupported
}

/// Runs `io` on `file` with `O_DIRECT` set for its duration only (so that
/// reads and writes through other handles of the file stay buffered).
#[cfg(target_os = "linux")]
fn directly<T>(file: &File, io: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    let set = |flags: libc::c_int| {
        // SAFETY: fcntl with F_SETFL reads only its integer arguments.
        if unsafe { libc::fcntl(fd, libc::F_SETFL, flags) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    };
    // SAFETY: as above, for F_GETFL.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    set(flags | libc::O_DIRECT)?;
    let done = io();
    set(flags & !libc::O_DIRECT)?;
    done
}

#[cfg(not(target_os = "linux"))]
fn directly<T>(_: &File, _: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    Err(io::ErrorKind::Unsupported.into())
}

/// Writes `block` at `offset` past the page cache; all three aligned.
pub(crate) fn write_direct(file: &File, block: &[u8], offset: u64) -> io::Result<()> {
    directly(file, || write_all_at(file, block, offset))
}

/// Reads into `buf` from `offset` past the page cache, until `buf` is full
/// or the file ends; all three aligned. Returns the bytes read.
pub(crate) fn read_direct(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    directly(file, || read_full_at(file, buf, offset))
}

/// Rounds `n` up to the alignment direct I/O asks for.
pub(crate) fn align_up(n: usize) -> usize {
    n.next_multiple_of(ALIGN)
}

/// Whether `bytes` at file offset `offset` can go to or come from the disk
/// directly.
pub(crate) fn aligned(bytes: &[u8], offset: u64) -> bool {
    (bytes.as_ptr() as usize).is_multiple_of(ALIGN)
        && bytes.len().is_multiple_of(ALIGN)
        && offset.is_multiple_of(ALIGN as u64)
}

impl DirectWriter<'_> {
    /// Writes the aligned start of `data` from where it lies, after what
    /// the block holds, when all of it can go direct; the bytes of `data`
    /// written (0 when it could not be done this way).
    fn write_in_place(&mut self, data: &[u8]) -> io::Result<usize> {
        let n = data.len() / ALIGN * ALIGN;
        if !self.direct
            || n < IN_PLACE_FROM
            || !aligned(&data[..n], self.pos)
            || !self.len.is_multiple_of(ALIGN)
        {
            return Ok(0);
        }
        let held = &self.memory.first_mut(BLOCK)[..self.len];
        let sent = if held.is_empty() {
            Ok(())
        } else {
            write_direct(self.file, held, self.pos)
        };
        let sent =
            sent.and_then(|()| write_direct(self.file, &data[..n], self.pos + held.len() as u64));
        match sent {
            Ok(()) => {
                self.pos += (self.len + n) as u64;
                self.len = 0;
                #[cfg(test)]
                {
                    self.in_place += 1;
                }
                Ok(n)
            }
            // Not supported here (EINVAL): never again for this file. The
            // block's bytes are written again the usual way.
            Err(e) if refused(&e) => {
                self.direct = false;
                Ok(0)
            }
            Err(e) => Err(e),
        }
    }
}

impl Write for DirectWriter<'_> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let n = self.write_in_place(data)?;
        if n > 0 {
            return Ok(n);
        }
        let n = data.len().min(BLOCK - self.len);
        let at = self.len;
        self.memory.first_mut(BLOCK)[at..at + n].copy_from_slice(&data[..n]);
        self.len += n;
        if self.len == BLOCK {
            self.write_block()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.write_rest()
    }
}

impl Seek for DirectWriter<'_> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        self.write_rest()?;
        self.pos = match to {
            SeekFrom::Start(at) => Some(at),
            SeekFrom::Current(by) => self.pos.checked_add_signed(by),
            SeekFrom::End(by) => self.file.metadata()?.len().checked_add_signed(by),
        }
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek out of range"))?;
        Ok(self.pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Cursor, Read};

    /// Writes of many sizes past two blocks, seeks back and forth and a
    /// header rewritten at the start, as a build makes them.
    fn script(out: &mut (impl Write + Seek)) {
        let mut state = 7u64;
        let mut total = 0usize;
        out.write_all(&[0xEE; 96]).unwrap();
        // Aligned data after a whole number of blocks buffered: sent from
        // where it lies, all of it, then all but an unaligned tail.
        out.write_all(&[0xDD; ALIGN - 96]).unwrap();
        let mut aligned = Aligned::default();
        for (i, len) in [IN_PLACE_FROM, 5 * IN_PLACE_FROM + 100]
            .into_iter()
            .enumerate()
        {
            let data = aligned.first_mut(len);
            data.iter_mut()
                .enumerate()
                .for_each(|(j, b)| *b = (j / 7 + i) as u8);
            out.write_all(data).unwrap();
            total += len;
        }
        while total < 2 * BLOCK + 12_345 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let len = (state >> 40) as usize % 70_000;
            let byte = (state >> 32) as u8;
            out.write_all(&vec![byte; len]).unwrap();
            total += len;
        }
        out.seek(SeekFrom::Start(0)).unwrap();
        out.write_all(&[0x11; 96]).unwrap();
        out.seek(SeekFrom::End(-5)).unwrap();
        out.write_all(b"tail!").unwrap();
        out.seek(SeekFrom::Current(-10)).unwrap();
        out.write_all(b"x").unwrap();
        out.flush().unwrap();
    }

    fn written_by(direct: bool) -> Vec<u8> {
        let path =
            std::env::temp_dir().join(format!("seekless-direct-{}-{direct}", std::process::id()));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        let mut writer = DirectWriter::new(&file);
        writer.direct &= direct;
        script(&mut writer);
        // Unless the file system refuses direct I/O (tmpfs), the aligned
        // data went out from where it lay.
        if writer.direct {
            assert!(writer.in_place >= 2, "{} writes in place", writer.in_place);
        }
        // A clone of the handle reads normally: direct I/O is off again.
        let mut bytes = Vec::new();
        let mut clone = file.try_clone().unwrap();
        clone.seek(SeekFrom::Start(0)).unwrap();
        clone.read_to_end(&mut bytes).unwrap();
        std::fs::remove_file(&path).unwrap();
        bytes
    }

    #[test]
    fn the_file_holds_what_a_buffer_would_direct_or_not() {
        let mut expected = Cursor::new(Vec::new());
        script(&mut expected);
        let expected = expected.into_inner();
        assert!(expected.len() > 2 * BLOCK);
        for direct in [true, false] {
            let got = written_by(direct);
            assert_eq!(got.len(), expected.len(), "direct {direct}");
            assert!(got == expected, "direct {direct}: contents differ");
        }
    }
}
