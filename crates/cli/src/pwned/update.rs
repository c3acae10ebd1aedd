//! `pwned update` and `pwned diff`: an index kept current from the Pwned
//! Passwords range API or a delta bundle, and the bundle between two
//! indexes.

use std::path::Path;
use std::process::ExitCode;

use indicatif::ProgressBar;
use seekless_pwned::ErrorKind;

use super::Result;
use crate::progress;

/// Progress of an update, drawn only on a terminal.
struct UpdateBar {
    bar: ProgressBar,
    received: std::sync::atomic::AtomicU64,
    hashes: std::sync::atomic::AtomicU64,
}

impl seekless_pwned::UpdateProgress for UpdateBar {
    fn resumed(&self, from: u32) {
        self.bar.set_position(u64::from(from));
        self.bar.reset_eta();
    }
    fn range(&self, received: u64, hashes: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        let received = self.received.fetch_add(received, Relaxed) + received;
        let hashes = self.hashes.fetch_add(hashes, Relaxed) + hashes;
        self.bar.inc(1);
        if self.bar.position().is_multiple_of(512) {
            self.bar
                .set_message(format!("{:.1} MB, {hashes} hashes", received as f64 / 1e6));
        }
    }
}

/// `pwned diff OLD NEW -o CHANGES`.
pub(super) fn diff(old: &Path, new: &Path, output: &Path) -> Result<ExitCode> {
    crate::guard::output_apart(output, &[old, new])?;
    let started = std::time::Instant::now();
    let old_index = crate::index_file::open(old)?;
    let new_index = crate::index_file::open(new)?;
    let s = seekless_pwned::write_bundle(output, Some(&old_index), &new_index)?;
    println!(
        "wrote {}: {} ranges changed, {} validators alone, {} bytes of lines in {} bytes, {:.1} s",
        output.display(),
        s.changed,
        s.validators,
        s.lines_bytes,
        s.bytes,
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

/// `pwned update INDEX`.
pub(super) fn update(index: &Path, options: &seekless_pwned::UpdateOptions) -> Result<ExitCode> {
    let progress = UpdateBar {
        bar: progress::counted(u64::from(seekless_pwned::RANGES), "ranges"),
        received: Default::default(),
        hashes: Default::default(),
    };
    let s = seekless_pwned::update(index, options, &progress).map_err(
        |e| -> Box<dyn std::error::Error> {
            match e.kind() {
                // A full disk, a failing one: the partial index and its journal
                // stay, and the same command goes on from the last checkpoint.
                ErrorKind::Io { .. } => {
                    format!("{e}; run the same command again to go on from the last checkpoint")
                        .into()
                }
                _ => e.into(),
            }
        },
    )?;
    progress.bar.finish_and_clear();
    println!(
        "{} {}: {} ranges checked, {} changed, {} not modified",
        if s.created { "wrote" } else { "updated" },
        index.display(),
        s.checked,
        s.changed,
        s.not_modified
    );
    if s.resumed_from > 0 {
        println!(
            "  resumed an interrupted update at range {}",
            seekless_pwned::prefix_hex(s.resumed_from)
        );
    }
    let only = match s.min_count {
        1 => String::new(),
        m => format!(" (only those seen at least {m} times)"),
    };
    println!(
        "  {} hashes{only}: {} added, {} removed, {} counts changed",
        s.hashes, s.added, s.removed, s.counts_changed
    );
    if options.from_bundle.is_some() {
        println!(
            "  {} bytes of lines applied, {} bytes written, {:.1} s",
            s.received, s.bytes, s.seconds
        );
    } else {
        println!(
            "  {} bytes received, {} retries, {} bytes written, {:.1} s",
            s.received, s.retries, s.bytes, s.seconds
        );
    }
    if let Some(out) = &options.bundle_out {
        println!("  wrote the delta bundle {}", out.display());
    }
    Ok(ExitCode::SUCCESS)
}
