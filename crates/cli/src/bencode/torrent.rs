//! `seekless torrent …`: argument parsing and printing around the
//! `seekless-bencode` engine's torrents (metainfo v1, v2 and hybrid).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use seekless_bencode::torrent::{self, CreateOptions, Torrent, Version, magnet_link, summary_json};

use super::{read_input, write_output};
use crate::report::fail;

/// `seekless torrent` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Show a torrent's metadata: name, version, info-hashes, files, trackers,
    /// magnet link.
    Info {
        /// The .torrent file.
        file: PathBuf,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Check downloaded data against the torrent's hashes; exit 1 if any
    /// piece is bad or missing.
    Verify {
        /// The .torrent file.
        file: PathBuf,
        /// The directory the torrent was downloaded into.
        data_dir: PathBuf,
    },
    /// Create a torrent from a file or directory (hybrid v1+v2 by default)
    /// and say what was made: name, size, pieces, info-hashes, magnet link.
    Create {
        /// The file or directory to share.
        path: PathBuf,
        /// Where to write the .torrent file (`-`: standard output, and the
        /// summary goes to standard error).
        #[arg(short, long)]
        output: PathBuf,
        /// BEP 3 only (SHA-1 pieces).
        #[arg(long, conflicts_with_all = ["v2", "hybrid"])]
        v1: bool,
        /// BEP 52 only (SHA-256 merkle trees).
        #[arg(long, conflicts_with_all = ["v1", "hybrid"])]
        v2: bool,
        /// Both (the default).
        #[arg(long, conflicts_with_all = ["v1", "v2"])]
        hybrid: bool,
        /// Bytes per piece: a power of two, at least 16 KiB, in bytes or with
        /// a K/M/G suffix (`262144`, `256K`, `4M`); default: chosen from the
        /// total size.
        #[arg(long, value_parser = crate::size::parse)]
        piece_length: Option<u64>,
        /// Tracker URL (repeatable; each becomes its own tier).
        #[arg(long = "tracker")]
        trackers: Vec<String>,
        /// Web seed URL (repeatable).
        #[arg(long = "web-seed")]
        web_seeds: Vec<String>,
        /// Set the private flag.
        #[arg(short, long)]
        private: bool,
        /// Comment.
        #[arg(long)]
        comment: Option<String>,
        /// The torrent's name (default: the file or directory's name).
        #[arg(short, long)]
        name: Option<String>,
        /// `info.source` tag (private trackers tell their torrents apart
        /// by it; it changes the info-hashes).
        #[arg(short, long)]
        source: Option<String>,
        /// Leave out the creation date (the same input then always makes
        /// the same bytes).
        #[arg(short = 'd', long)]
        no_date: bool,
    },
}

/// Run a `seekless torrent` subcommand.
pub fn run(command: Command) -> ExitCode {
    match command {
        Command::Info { file, json } => info(&file, json),
        Command::Verify { file, data_dir } => verify(&file, &data_dir),
        Command::Create {
            path,
            output,
            v1,
            v2,
            hybrid: _,
            piece_length,
            trackers,
            web_seeds,
            private,
            comment,
            name,
            source,
            no_date,
        } => {
            let version = if v1 {
                Version::V1
            } else if v2 {
                Version::V2
            } else {
                Version::Hybrid
            };
            let options = CreateOptions {
                version,
                piece_length,
                trackers,
                web_seeds,
                private,
                comment,
                creation_date: std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .ok()
                    .and_then(|d| i64::try_from(d.as_secs()).ok())
                    .filter(|_| !no_date),
                name,
                source,
            };
            create(&path, &output, &options)
        }
    }
}

fn load_torrent(path: &Path) -> Result<Torrent, ExitCode> {
    let data = read_input(path).map_err(|e| fail(format_args!("{}: {e}", path.display())))?;
    Torrent::from_bytes(&data).map_err(|e| fail(format_args!("{}: {e}", path.display())))
}

fn info(path: &Path, json: bool) -> ExitCode {
    let t = match load_torrent(path) {
        Ok(t) => t,
        Err(code) => return code,
    };
    let mut o = String::new();
    if json {
        o.push_str(&summary_json(&t));
        o.push('\n');
    } else {
        o.push_str(&format!("name:          {}\n", t.name));
        o.push_str(&format!("version:       {}\n", t.version.name()));
        if let Some(h) = t.info_hash_v1 {
            o.push_str(&format!("info hash v1:  {}\n", torrent::hex(&h)));
        }
        if let Some(h) = t.info_hash_v2 {
            o.push_str(&format!("info hash v2:  {}\n", torrent::hex(&h)));
        }
        o.push_str(&format!("piece length:  {}\n", t.piece_length));
        o.push_str(&format!("pieces:        {}\n", t.piece_count()));
        o.push_str(&format!("total size:    {}\n", t.total_size));
        o.push_str(&format!(
            "private:       {}\n",
            if t.private { "yes" } else { "no" }
        ));
        if let Some(d) = t.creation_date {
            o.push_str(&format!("creation date: {d}\n"));
        }
        if let Some(c) = &t.created_by {
            o.push_str(&format!("created by:    {c}\n"));
        }
        if let Some(c) = &t.comment {
            o.push_str(&format!("comment:       {c}\n"));
        }
        for (i, tier) in t.trackers.iter().enumerate() {
            for url in tier {
                o.push_str(&format!("tracker:       [{i}] {url}\n"));
            }
        }
        for url in &t.web_seeds {
            o.push_str(&format!("web seed:      {url}\n"));
        }
        o.push_str(&format!("magnet:        {}\n", magnet_link(&t)));
        o.push_str(&format!(
            "files:         {}\n",
            t.files.iter().filter(|f| !f.pad).count()
        ));
        for f in &t.files {
            let pad = if f.pad { "  (pad)" } else { "" };
            o.push_str(&format!("{:>16}  {}{pad}\n", f.length, f.display_path()));
        }
    }
    if std::io::stdout().lock().write_all(o.as_bytes()).is_err() {
        return ExitCode::from(2);
    }
    ExitCode::SUCCESS
}

/// The directory a torrent was saved into: `data_dir` itself, or its parent
/// when `data_dir` is the torrent's own directory (or file).
fn save_dir(t: &Torrent, data_dir: &Path) -> PathBuf {
    let own = !data_dir.join(&t.name).exists()
        && data_dir.file_name().is_some_and(|n| n == t.name.as_str());
    match data_dir.parent() {
        Some(parent) if own && parent.as_os_str().is_empty() => PathBuf::from("."),
        Some(parent) if own => parent.to_path_buf(),
        _ => data_dir.to_path_buf(),
    }
}

fn verify(path: &Path, data_dir: &Path) -> ExitCode {
    let t = match load_torrent(path) {
        Ok(t) => t,
        Err(code) => return code,
    };
    let data_dir = &save_dir(&t, data_dir);
    let total: u64 = t.files.iter().filter(|f| !f.pad).map(|f| f.length).sum();
    let bar = crate::progress::bytes(total, "verify");
    let result = torrent::verify(&t, data_dir, &mut |n| bar.inc(n));
    bar.finish_and_clear();
    let report = match result {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    let mut o = String::new();
    let (mut good, mut bad, mut missing) = (0, 0, 0);
    for f in &report.files {
        let verdict = if f.bad > 0 {
            "bad"
        } else if f.missing > 0 {
            "missing"
        } else {
            "ok"
        };
        o.push_str(&format!(
            "{}\t{verdict}\tgood {}\tbad {}\tmissing {}\n",
            f.path, f.good, f.bad, f.missing
        ));
        good += f.good;
        bad += f.bad;
        missing += f.missing;
    }
    o.push_str(&format!(
        "checked {} hashes: {good} good, {bad} bad, {missing} missing (per file)\n",
        report.checked.name()
    ));
    if std::io::stdout().lock().write_all(o.as_bytes()).is_err() {
        return ExitCode::from(2);
    }
    if report.all_good() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// Bytes of the regular files at or under `path` (for the progress bar).
fn tree_size(path: &Path) -> u64 {
    let mut total = 0;
    let mut pending = vec![path.to_path_buf()];
    while let Some(path) = pending.pop() {
        match std::fs::metadata(&path) {
            Ok(meta) if meta.is_dir() => {
                if let Ok(entries) = std::fs::read_dir(&path) {
                    pending.extend(entries.flatten().map(|e| e.path()));
                }
            }
            Ok(meta) => total += meta.len(),
            Err(_) => {}
        }
    }
    total
}

fn create(path: &Path, output: &Path, options: &CreateOptions) -> ExitCode {
    let to_stdout = output == Path::new("-");
    if !to_stdout && let Err(e) = crate::guard::output_apart(output, &[path]) {
        return fail(e);
    }
    let bar = crate::progress::bytes(tree_size(path), "hashing");
    let result = torrent::create(path, options, &mut |n| bar.inc(n));
    bar.finish_and_clear();
    let bytes = match result {
        Ok(b) => b,
        Err(e) => return fail(e),
    };
    let written = write_output(output, &bytes);
    if let Err(e) = written {
        return fail(e);
    }
    // What was made, read back from the bytes written.
    let t = match Torrent::from_bytes(&bytes) {
        Ok(t) => t,
        Err(e) => return fail(format_args!("the torrent made does not read back: {e}")),
    };
    let files = t.files.iter().filter(|f| !f.pad).count() as u64;
    let mut o = format!(
        "{}: {} ({}), {} bytes in {}, {} of {} bytes\n",
        if to_stdout {
            "-".to_string()
        } else {
            output.display().to_string()
        },
        t.name,
        t.version.name(),
        t.total_size,
        crate::words::count(files, "file", "files"),
        crate::words::count(t.piece_count(), "piece", "pieces"),
        t.piece_length,
    );
    if let Some(hash) = t.info_hash_v1 {
        o.push_str(&format!("info hash v1: {}\n", torrent::hex(&hash)));
    }
    if let Some(hash) = t.info_hash_v2 {
        o.push_str(&format!("info hash v2: {}\n", torrent::hex(&hash)));
    }
    o.push_str(&format!("magnet: {}\n", magnet_link(&t)));
    let shown = if to_stdout {
        std::io::stderr().lock().write_all(o.as_bytes())
    } else {
        std::io::stdout().lock().write_all(o.as_bytes())
    };
    if shown.is_err() {
        return ExitCode::from(2);
    }
    ExitCode::SUCCESS
}
