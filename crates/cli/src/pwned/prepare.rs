//! `pwned prepare`: an index built from Pwned Passwords text files, with a
//! progress bar on a terminal and a summary of what was read and kept.

use std::path::Path;
use std::process::ExitCode;

use indicatif::ProgressBar;
use seekless_pwned::{BuildOptions, Input, Progress, build};

use crate::progress;
use crate::report::Result;

/// Progress of a build, drawn only on a terminal.
struct BuildProgress {
    bar: ProgressBar,
}

impl Progress for BuildProgress {
    fn input(&self, bytes: u64) {
        self.bar.set_length(bytes);
    }
    fn read(&self, bytes: u64) {
        self.bar.inc(bytes);
    }
    fn writing(&self, partitions: u64) {
        self.bar.finish_and_clear();
        if !self.bar.is_hidden() {
            self.bar.reset();
            self.bar.set_length(partitions);
            self.bar.set_message("sorting");
            self.bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{msg:>10} [{bar:40}] {pos}/{len} partitions",
                )
                .expect("valid template")
                .progress_chars("=> "),
            );
        }
    }
    fn written(&self) {
        self.bar.inc(1);
    }
}

/// `pwned prepare INPUTS -o INDEX`.
pub(super) fn prepare(
    inputs: Vec<String>,
    output: &Path,
    options: BuildOptions,
) -> Result<ExitCode> {
    let paths: Vec<&Path> = inputs.iter().map(Path::new).collect();
    crate::guard::output_apart(output, &paths)?;
    let inputs: Vec<Input> = if inputs.is_empty() {
        vec![Input::Stdin]
    } else {
        inputs.iter().map(|a| Input::from_arg(a)).collect()
    };
    let progress = BuildProgress {
        bar: progress::bytes(0, "reading"),
    };
    let summary = build(inputs, output, &options, &progress)?;
    progress.bar.finish_and_clear();
    let kind = summary.kind.map_or("SHA-1".to_string(), |k| k.to_string());
    // Every line read, the skipped ones said apart.
    let skipped = summary.invalid + summary.zero_counts;
    let lines = crate::words::count(summary.lines + skipped, "line", "lines");
    let skipped = if skipped > 0 {
        format!(" ({skipped} skipped)")
    } else {
        String::new()
    };
    println!(
        "wrote {}: {} from {lines}{skipped} in {:.2} s",
        output.display(),
        crate::words::count(
            summary.hashes,
            &format!("{kind} hash"),
            &format!("{kind} hashes")
        ),
        summary.seconds
    );
    let count = crate::words::count;
    println!(
        "  {} bytes, {:.2} bytes per hash; {} merged, {} skipped, {} skipped, {} at 4294967295",
        summary.bytes,
        summary.bytes_per_hash(),
        count(summary.duplicates, "duplicate", "duplicates"),
        count(summary.invalid, "invalid line", "invalid lines"),
        count(summary.zero_counts, "zero count", "zero counts"),
        count(summary.capped, "count capped", "counts capped"),
    );
    if let Some(first) = &summary.first_invalid {
        println!("  first invalid line: {first}");
    }
    if summary.spilled > 0 {
        println!("  spilled {} bytes to temporary files", summary.spilled);
    }
    if summary.streamed {
        println!("  input in hash order: written as it was read (no sort, no spill)");
    }
    if summary.min_count > 1 {
        println!(
            "  only the hashes seen at least {} times kept: {} left out",
            summary.min_count,
            count(summary.left_out, "hash", "hashes")
        );
    }
    if let Some(bits) = summary.key_bits {
        println!(
            "  top {bits} bits of each hash kept: a hash not in the corpus is found by chance with probability {:.2e}",
            summary.false_positive_rate()
        );
    }
    Ok(ExitCode::SUCCESS)
}
