//! `pwned export`: an index's hashes and counts back as sorted text, into
//! one file, standard output, or one file per range.

use std::io;
use std::path::Path;
use std::process::ExitCode;

use indicatif::ProgressBar;
use seekless_pwned::ErrorKind;

use crate::progress;
use crate::report::Result;

/// `pwned export INDEX -o FILE`.
pub(super) fn export_file(
    path: &Path,
    output: &Path,
    options: &seekless_pwned::ExportOptions,
) -> Result<ExitCode> {
    crate::guard::output_apart(output, &[path])?;
    let index = crate::pwned::index_file::open(path)?;
    let s = seekless_pwned::export_sorted(&index, output, options)?;
    println!(
        "wrote {}: {} hashes, {} bytes in {:.1} s",
        output.display(),
        s.hashes,
        s.bytes,
        s.seconds
    );
    Ok(ExitCode::SUCCESS)
}

/// `pwned export INDEX`: the sorted lines on standard output. When that is
/// a file and a write fails (a full disk), the file is cut back to where
/// it was, so no partial corpus is left in it.
pub(super) fn export_stdout(
    path: &Path,
    options: &seekless_pwned::ExportOptions,
) -> Result<ExitCode> {
    let index = crate::pwned::index_file::open(path)?;
    let start = crate::pwned::stdout_file::Start::now();
    let written = match start.file() {
        Some(file) => seekless_pwned::write_sorted(&index, file, options),
        None => seekless_pwned::write_sorted(&index, io::stdout().lock(), options),
    };
    match written {
        Ok(_) => Ok(ExitCode::SUCCESS),
        Err(e) => match e.into_kind() {
            ErrorKind::Io { path: None, source } => {
                let cut = start.restore();
                Err(format!("standard output: {source}{cut}").into())
            }
            kind => Err(seekless_pwned::Error::from(kind).into()),
        },
    }
}

/// `pwned export INDEX --ranges DIR`.
pub(super) fn export_ranges(
    path: &Path,
    dir: &Path,
    options: &seekless_pwned::ExportOptions,
) -> Result<ExitCode> {
    let index = crate::pwned::index_file::open(path)?;
    let progress = RangesBar(progress::counted(
        u64::from(seekless_pwned::RANGES),
        "ranges",
    ));
    let written = seekless_pwned::export_ranges(&index, dir, options, &progress);
    progress.0.finish_and_clear();
    let s = written?;
    println!(
        "wrote {}: {} files, {} hashes, {} bytes in {:.1} s ({:.0} MB/s)",
        dir.display(),
        s.files,
        s.hashes,
        s.bytes,
        s.seconds,
        s.bytes_per_second() / 1e6
    );
    Ok(ExitCode::SUCCESS)
}

/// Progress of a per-range export, drawn only on a terminal.
struct RangesBar(ProgressBar);

impl seekless_pwned::ExportProgress for RangesBar {
    fn ranges(&self, ranges: u32) {
        self.0.inc(u64::from(ranges));
    }
}
