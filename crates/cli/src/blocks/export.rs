//! `seekless blocks export` and `seekless blocks balances`: a UTXO
//! snapshot's coins as a table, and its balances per script.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use seekless_blocks::{
    BalanceOptions, BalancesTo, ErrorKind, ExportFormat, SnapshotMetadata, SnapshotReader,
    balances, export_utxos,
};

/// `--format`: the table's file format.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Format {
    /// A header row, then a line a row.
    Csv,
    /// An SQLite database of one table (utxo_to_sqlite.py's schema).
    Sqlite,
    /// Apache Parquet (Snappy).
    Parquet,
}

impl From<Format> for ExportFormat {
    fn from(format: Format) -> Self {
        match format {
            Format::Csv => ExportFormat::Csv,
            Format::Sqlite => ExportFormat::Sqlite,
            Format::Parquet => ExportFormat::Parquet,
        }
    }
}

/// The format given, or the one `output`'s extension names.
fn format_of(output: &Path, format: Option<Format>) -> Result<ExportFormat, String> {
    match format {
        Some(format) => Ok(format.into()),
        None => ExportFormat::from_extension(output).ok_or_else(|| {
            format!(
                "cannot tell the format of {} from its extension; name it .csv, .sqlite \
                 (.sqlite3, .db) or .parquet, or give --format csv, sqlite or parquet",
                output.display()
            )
        }),
    }
}

/// The snapshot's header, read before anything is written (a file that is
/// not a snapshot is refused at once).
fn header(snapshot: &Path) -> Result<SnapshotMetadata, String> {
    let file = std::fs::File::open(snapshot)
        .map_err(|e| format!("cannot open {}: {e}", snapshot.display()))?;
    let reader = SnapshotReader::new(file).map_err(|e| in_snapshot(snapshot, &e))?;
    Ok(*reader.metadata())
}

/// An error reading the snapshot names it; an I/O error names its own file.
fn in_snapshot(snapshot: &Path, error: &seekless_blocks::Error) -> String {
    match error.kind() {
        ErrorKind::Io { .. } => error.to_string(),
        _ => format!("{}: {error}", snapshot.display()),
    }
}

fn amount(sats: u64) -> String {
    format!("{}.{:08}", sats / 100_000_000, sats % 100_000_000)
}

pub(super) fn run_export(
    snapshot: &Path,
    output: &Path,
    format: Option<Format>,
) -> Result<ExitCode, String> {
    let format = format_of(output, format)?;
    crate::guard::output_apart(output, &[snapshot])?;
    let metadata = header(snapshot)?;
    let bar = crate::progress::counted(metadata.coins, "coins");
    export_utxos(snapshot, output, format, &mut |n| bar.inc(n))
        .map_err(|e| in_snapshot(snapshot, &e))?;
    bar.finish_and_clear();
    println!(
        "wrote {} ({} UTXO set after block {}) to {} as {}",
        crate::words::count(metadata.coins, "coin", "coins"),
        metadata.network,
        metadata.base,
        output.display(),
        format.name()
    );
    Ok(ExitCode::SUCCESS)
}

pub(super) fn run_balances(
    snapshot: &Path,
    output: Option<&Path>,
    format: Option<Format>,
    options: &BalanceOptions,
) -> Result<ExitCode, String> {
    let format = match output {
        Some(output) => Some(format_of(output, format)?),
        None => match format {
            None | Some(Format::Csv) => None,
            Some(other) => {
                return Err(format!(
                    "{} is written to a file only; give -o FILE",
                    ExportFormat::from(other).name()
                ));
            }
        },
    };
    if let Some(output) = output {
        crate::guard::output_apart(output, &[snapshot])?;
    }
    let metadata = header(snapshot)?;
    let bar = crate::progress::counted(metadata.coins, "coins");
    let mut progress = |n| bar.inc(n);
    let (Some(path), Some(format)) = (output, format) else {
        let stdout = std::io::stdout();
        let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
        let done = balances(snapshot, BalancesTo::Csv(&mut out), options, &mut progress);
        bar.finish_and_clear();
        return match done {
            Ok(_) => Ok(ExitCode::SUCCESS),
            // A closed pipe (`| head`) is not an error worth reporting.
            Err(e) if closed_pipe(&e) => Ok(ExitCode::SUCCESS),
            Err(e) => Err(in_snapshot(snapshot, &e)),
        };
    };
    let to = BalancesTo::File { path, format };
    let report =
        balances(snapshot, to, options, &mut progress).map_err(|e| in_snapshot(snapshot, &e))?;
    bar.finish_and_clear();
    println!(
        "wrote {} ({}, {} BTC) to {} as {}",
        crate::words::count(report.scripts, "script", "scripts"),
        crate::words::count(report.coins, "coin", "coins"),
        amount(report.amount),
        path.display(),
        format.name()
    );
    Ok(ExitCode::SUCCESS)
}

fn closed_pipe(error: &seekless_blocks::Error) -> bool {
    matches!(error.kind(), ErrorKind::Io { source, .. }
        if source.kind() == std::io::ErrorKind::BrokenPipe)
}

/// Where `blocks balances` spills: `--tmp-dir`, else beside the output
/// (the system's temporary directory when writing to standard output).
pub(super) fn balance_options(memory: Option<u64>, tmp_dir: Option<PathBuf>) -> BalanceOptions {
    BalanceOptions {
        memory: memory.unwrap_or(BalanceOptions::default().memory),
        tmp_dir,
    }
}
