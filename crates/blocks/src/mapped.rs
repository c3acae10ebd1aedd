//! Memory-mapped block files for header-only scans of plain (un-obfuscated)
//! files: the scanner then touches only the pages holding record headers
//! and never copies a block body. The macro benchmark measures the gain.

use std::fs::File;
use std::ops::Deref;
use std::path::Path;

use memmap2::Mmap;
#[cfg(unix)]
use memmap2::{Advice, UncheckedAdvice};

use crate::error::{Error, Result};

/// A read-only mapping of a whole file (nothing mapped for an empty file).
#[derive(Debug)]
pub(crate) struct MappedFile {
    map: Option<Mmap>,
}

impl MappedFile {
    pub(crate) fn open(path: &Path) -> Result<MappedFile> {
        let file = File::open(path).map_err(|e| Error::io(path, "open", e))?;
        let len = file
            .metadata()
            .map_err(|e| Error::io(path, "open", e))?
            .len();
        if len == 0 {
            return Ok(MappedFile { map: None });
        }
        // SAFETY: the mapping is read-only and private to this scan. Another
        // process may still change the file while it is mapped: bytes
        // appended later are simply not seen, changed bytes are read as
        // whatever they are (the scanner validates everything it reads), and
        // only a truncation below the mapped length could fault, which Core
        // never does to a block file it has written.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io(path, "map", e))?;
        // Headers are read in file order: let the kernel read ahead.
        #[cfg(unix)]
        let _ = map.advise(Advice::Sequential);
        Ok(MappedFile { map: Some(map) })
    }
}

impl MappedFile {
    /// Asks the kernel to start reading the whole file in the background
    /// (the next file, while this one is scanned).
    pub(crate) fn prefetch(&self) {
        #[cfg(unix)]
        if let Some(map) = &self.map {
            let _ = map.advise(Advice::WillNeed);
        }
    }

    /// Elsewhere than Unix, the system decides alone which pages to drop.
    #[cfg(not(unix))]
    pub(crate) fn release(&self, _upto: usize) {}

    /// Lets the kernel drop this mapping's pages before `upto` (rounded down
    /// to a page), so a long scan does not keep a whole file resident.
    #[cfg(unix)]
    pub(crate) fn release(&self, upto: usize) {
        const PAGE: usize = 4096;
        let len = upto / PAGE * PAGE;
        if let Some(map) = &self.map
            && len > 0
        {
            // SAFETY: a read-only file mapping: MADV_DONTNEED only drops page
            // table entries, and any later access reads the file again. No
            // slice into the released range is alive: the scanner returned
            // and keeps only offsets at or after `upto`.
            let _ = unsafe { map.unchecked_advise_range(UncheckedAdvice::DontNeed, 0, len) };
        }
    }
}

impl Deref for MappedFile {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }
}
