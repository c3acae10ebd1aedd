//! What every index ends with, however its pages were written: the
//! directory, its block checksums, the source section, and then the header
//! at the start of the file.

use std::io::{Seek, SeekFrom, Write};

use crate::error::{Error, Result};
use crate::format::layout::{BLOCK_ENTRIES, DIR_ENTRY, Header, Layout};
use crate::format::page::{DirEntry, DirEntryBytes};
use crate::format::source::Source;

/// Writes what follows the pages (the directory, its block checksums, the
/// source section) and then the header at the start of `out`, for an index
/// of `totals` (distinct hashes, sum of counts), each seen at least
/// `min_count` times.
pub(crate) fn write_trailer<W: Write + Seek>(
    out: &mut W,
    layout: Layout,
    dir: &[DirEntry],
    totals: (u64, u64),
    min_count: u64,
    source: Option<&Source>,
) -> Result<Header> {
    let (hashes, total) = totals;
    let io_err = |e| Error::io(None, e);
    let dir_bytes: Vec<u8> = dir.iter().flat_map(|&e| DirEntryBytes::from(e).0).collect();
    // One checksum per block of directory entries, so that a single lookup
    // can check just the block it reads; the header checksums the table.
    let table: Vec<u8> = dir_bytes
        .chunks(BLOCK_ENTRIES * DIR_ENTRY)
        .flat_map(|block| crc32c::crc32c(block).to_le_bytes())
        .collect();
    let section = source.map(Source::encode).unwrap_or_default();
    let header = Header {
        version: Header::version_for(layout, min_count),
        layout,
        hashes,
        pages: dir.len() as u64,
        total,
        dir_crc: crc32c::crc32c(&table),
        source_len: section.len() as u64,
        source_crc: if section.is_empty() {
            0
        } else {
            crc32c::crc32c(&section)
        },
        min_count,
    };
    out.write_all(&dir_bytes).map_err(io_err)?;
    out.write_all(&table).map_err(io_err)?;
    out.write_all(&section).map_err(io_err)?;
    out.seek(SeekFrom::Start(0)).map_err(io_err)?;
    out.write_all(&header.encode()).map_err(io_err)?;
    out.flush().map_err(io_err)?;
    Ok(header)
}
