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
    /// Make every write so far durable.
    fn sync(&mut self) -> io::Result<()>;
    /// Current length in bytes.
    fn size(&mut self) -> io::Result<u64>;
}

impl Device for std::fs::File {
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        std::os::unix::fs::FileExt::read_exact_at(self, buf, offset)
    }

    fn write_at(&mut self, offset: u64, buf: &[u8]) -> io::Result<()> {
        std::os::unix::fs::FileExt::write_all_at(self, buf, offset)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.sync_data()
    }

    fn size(&mut self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
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
