//! `pwned gzip-ranges INDEX`: every range's answer compressed once into
//! `INDEX.gz-ranges`, from which `serve` sends gzip answers as they are.
//! `prepare --gzip-ranges` and `update --gzip-ranges` write it too, and
//! both keep an existing one current; `verify` checks it.

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use seekless_pwned::{ErrorKind, GzipRanges, Index, write_gzip_ranges};

use crate::report::Result;

/// `pwned gzip-ranges INDEX`: writes the file unless the one there was
/// made from this index already (so running it again is cheap and safe).
pub(super) fn gzip_ranges(index: &Path, threads: Option<usize>) -> Result<ExitCode> {
    let opened = crate::pwned::index_file::open(index)?;
    write(index, &opened, threads, true)?;
    Ok(ExitCode::SUCCESS)
}

/// After `prepare` or `update` wrote `index`: writes its gzip ranges file
/// when `asked`, or when one is there (made from the index before, now
/// out of date); nothing otherwise.
pub(super) fn keep_current(index: &Path, asked: bool) -> Result<()> {
    if !asked && !GzipRanges::path_for(index).exists() {
        return Ok(());
    }
    let opened = crate::pwned::index_file::open(index)?;
    write(index, &opened, None, false)
}

/// Writes `INDEX.gz-ranges` for `opened` (the index at `path`) unless an
/// up-to-date one is there; says which, with the file's size.
fn write(path: &Path, opened: &Index, threads: Option<usize>, say_kept: bool) -> Result<()> {
    if opened.stats().is_compact() {
        return Err(format!(
            "{}: a compact index (prepare --key-bits) has no range answers to compress",
            path.display()
        )
        .into());
    }
    let output = GzipRanges::path_for(path);
    if let Ok(existing) = GzipRanges::open(&output, opened) {
        if say_kept {
            println!(
                "{}: up to date ({} bytes)",
                output.display(),
                existing.len()
            );
        }
        return Ok(());
    }
    let threads = threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let bar = crate::progress::counted(u64::from(seekless_pwned::RANGES), "ranges");
    bar.set_message("gzip");
    let started = Instant::now();
    let bytes = write_gzip_ranges(opened, &output, threads, &|done| {
        bar.set_position(u64::from(done));
    })?;
    bar.finish_and_clear();
    let hashes = opened.len().max(1);
    println!(
        "wrote {}: {bytes} bytes, {:.2} bytes per hash, gzip level {} in {:.1} s",
        output.display(),
        bytes as f64 / hashes as f64,
        seekless_pwned::GZIP_RANGES_LEVEL,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// `verify`'s check of the index's gzip ranges file, when there is one:
/// every member against its checksum and against the range it compresses.
/// `Ok(true)` when it is good or absent; `Ok(false)` after saying what is
/// wrong with it.
pub(super) fn verify(path: &Path, index: &Index) -> Result<bool> {
    let file = GzipRanges::path_for(path);
    if !file.exists() {
        return Ok(true);
    }
    match GzipRanges::open(&file, index).and_then(|r| r.verify(index).map(|()| r.len())) {
        Ok(bytes) => {
            println!("{}: ok ({bytes} bytes)", file.display());
            Ok(true)
        }
        Err(e) if matches!(e.kind(), ErrorKind::Io { .. }) => Err(e.into()),
        Err(e) => {
            println!("{e}");
            Ok(false)
        }
    }
}
