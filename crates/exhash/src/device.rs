//! The byte device under a file store: a real file, or anything else that
//! can read, write and make writes durable (tests use one that simulates
//! crashes).

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
