//! Writing a gzip ranges file ([`crate::format::gzip_ranges`]): every
//! range's answer rendered from the index and compressed once, on every
//! core, into a file with no name that takes its name when complete.

use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::Path;

use crate::error::{Error, Result};
use crate::file_at::write_all_at;
use crate::format::gzip_ranges::{CRCS_AT, Header, MEMBERS_AT, OFFSETS_AT, binding};
use crate::format::source::RANGES;
use crate::read::index::Index;
use crate::tmpfile::{Nameless, parent_dir};

/// The compression level of the members: zlib's default, as `gzip -6`
/// pre-compresses the per-range files of a static mirror.
pub const GZIP_RANGES_LEVEL: u8 = 6;

/// Ranges a thread renders and compresses at a time.
const BATCH: u32 = 1024;

/// Writes the gzip ranges file of `index` at `output` (see
/// [`crate::GzipRanges`]): each range's answer as `serve` renders it
/// without padding, compressed at [`GZIP_RANGES_LEVEL`], on `threads`
/// threads. `progress` is told the ranges done so far, now and then.
/// Returns the file's size. The file is complete or absent: it is written
/// without a name and renamed over `output` at the end.
pub fn write_gzip_ranges(
    index: &Index,
    output: &Path,
    threads: usize,
    progress: &(dyn Fn(u32) + Sync),
) -> Result<u64> {
    let io_err = |e| Error::io(output.to_path_buf(), e);
    let out = Nameless::create(&parent_dir(output), "gz-ranges").map_err(io_err)?;
    let mut offsets = Vec::with_capacity(RANGES as usize + 1);
    let mut crcs = Vec::with_capacity(RANGES as usize);
    let mut at = MEMBERS_AT as u64;
    let mut file = BufWriter::with_capacity(1 << 20, &out.file);
    file.seek(SeekFrom::Start(at)).map_err(io_err)?;
    let threads = threads.clamp(1, 64) as u32;
    let mut first = 0;
    while first < RANGES {
        // One batch a thread, written in order once all are done.
        let last = (first + threads * BATCH).min(RANGES);
        let batches: Vec<Result<Vec<Vec<u8>>>> = std::thread::scope(|scope| {
            let workers: Vec<_> = (first..last)
                .step_by(BATCH as usize)
                .map(|start| {
                    scope.spawn(move || compress_ranges(index, start..(start + BATCH).min(last)))
                })
                .collect();
            workers
                .into_iter()
                .map(|w| w.join().expect("a compressing thread panicked"))
                .collect()
        });
        for batch in batches {
            for member in batch? {
                offsets.push(at);
                crcs.push(crc32c::crc32c(&member));
                file.write_all(&member).map_err(io_err)?;
                at += member.len() as u64;
            }
        }
        first = last;
        progress(first);
    }
    offsets.push(at);
    file.flush().map_err(io_err)?;
    drop(file);
    let mut tables = Vec::with_capacity(MEMBERS_AT - OFFSETS_AT);
    tables.extend(offsets.iter().flat_map(|o| o.to_le_bytes()));
    tables.extend(crcs.iter().flat_map(|c| c.to_le_bytes()));
    debug_assert_eq!(OFFSETS_AT + tables.len(), MEMBERS_AT);
    debug_assert_eq!(OFFSETS_AT + 8 * offsets.len(), CRCS_AT);
    let header = Header {
        level: GZIP_RANGES_LEVEL,
        tables_crc: crc32c::crc32c(&tables),
        binding: binding(index.header_bytes()),
    };
    write_all_at(&out.file, &tables, OFFSETS_AT as u64).map_err(io_err)?;
    write_all_at(&out.file, &header.encode(), 0).map_err(io_err)?;
    out.file.sync_all().map_err(io_err)?;
    out.persist(output).map_err(io_err)?;
    Ok(at)
}

/// The gzip members of the ranges `prefixes`, in order.
fn compress_ranges(index: &Index, prefixes: std::ops::Range<u32>) -> Result<Vec<Vec<u8>>> {
    let mut plain = Vec::new();
    prefixes
        .map(|prefix| {
            plain.clear();
            index.write_range(prefix, &mut plain)?;
            Ok(crate::range::gzip::gzip(
                &plain,
                u32::from(GZIP_RANGES_LEVEL),
            ))
        })
        .collect()
}
