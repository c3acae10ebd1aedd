//! `seekless bencode …` and `seekless torrent …`: argument parsing and
//! printing around the `seekless-bencode` engine.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use seekless_bencode::torrent::{self, CreateOptions, Torrent, Version, magnet_link, summary_json};
use seekless_bencode::{Parser, to_json};

use crate::report::fail;

/// `seekless bencode` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Check that files are valid bencode: prints `FILE<TAB>ok` or
    /// `FILE<TAB>error<TAB>KIND<TAB>OFFSET` per file; exit 1 if any is bad.
    Check {
        /// Also reject what BEP 3 forbids: unsorted or duplicate keys, leading
        /// zeros, -0, trailing bytes.
        #[arg(long)]
        strict: bool,
        /// Files to check (`-` reads standard input).
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Print a bencoded file as JSON, in a mapping `bencode encode` turns
    /// back into the exact bytes: plain JSON where that is exact, otherwise a
    /// one-member object tagged `$hex`, `$int`, `$raw`, `$dict` or
    /// `$trailing` (docs/format-bencode.md).
    Dump {
        /// The file (`-` reads standard input).
        file: PathBuf,
    },
    /// Turn JSON (as `bencode dump` prints it, or written by hand) into
    /// bencode.
    Encode {
        /// The JSON file (`-` or nothing reads standard input).
        #[arg(default_value = "-")]
        file: PathBuf,
        /// Where to write the bencode (default `-`: standard output).
        #[arg(short, long, default_value = "-")]
        output: PathBuf,
    },
}

fn read_input(path: &Path) -> std::io::Result<Vec<u8>> {
    if path == Path::new("-") {
        let mut data = Vec::new();
        std::io::stdin().lock().read_to_end(&mut data)?;
        Ok(data)
    } else {
        std::fs::read(path)
    }
}

/// Run a `seekless bencode` subcommand.
pub fn run(command: Command) -> ExitCode {
    match command {
        Command::Check { strict, files } => check(strict, &files),
        Command::Dump { file } => dump(&file),
        Command::Encode { file, output } => encode(&file, &output),
    }
}

fn check(strict: bool, files: &[PathBuf]) -> ExitCode {
    let mut parser = Parser::new().strict(strict);
    let mut any_bad = false;
    let mut any_unreadable = false;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for path in files {
        let data = match read_input(path) {
            Ok(data) => data,
            Err(e) => {
                let _ = out.flush();
                eprintln!("seekless: {}: {e}", path.display());
                any_unreadable = true;
                continue;
            }
        };
        let line = match parser.parse(&data) {
            Ok(root) => {
                // Default mode accepts what libtorrent accepts; say on stderr
                // what BEP 3 would reject (--strict turns it into an error).
                let warnings = if strict { Vec::new() } else { root.warnings() };
                if let Some(first) = warnings.first() {
                    let _ = out.flush();
                    eprintln!(
                        "seekless: {}: warning: {} BEP 3 violation{}, first: {first}",
                        path.display(),
                        warnings.len(),
                        if warnings.len() == 1 { "" } else { "s" }
                    );
                }
                format!("{}\tok", path.display())
            }
            Err(e) => {
                any_bad = true;
                format!("{}\terror\t{}\t{}", path.display(), e.code(), e.offset())
            }
        };
        if writeln!(out, "{line}").is_err() {
            return ExitCode::from(2);
        }
    }
    if any_unreadable {
        ExitCode::from(2)
    } else if any_bad {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn dump(path: &Path) -> ExitCode {
    let data = match read_input(path) {
        Ok(data) => data,
        Err(e) => return fail(format_args!("{}: {e}", path.display())),
    };
    let doc = match seekless_bencode::decode(&data) {
        Ok(doc) => doc,
        Err(e) => return fail(format_args!("{}: {e}", path.display())),
    };
    let mut json = String::with_capacity(data.len() * 2);
    to_json(doc.root(), &mut json);
    json.push('\n');
    if std::io::stdout().lock().write_all(json.as_bytes()).is_err() {
        return ExitCode::from(2);
    }
    ExitCode::SUCCESS
}

fn encode(path: &Path, output: &Path) -> ExitCode {
    let to_stdout = output == Path::new("-");
    if !to_stdout && let Err(e) = crate::guard::output_apart(output, &[path]) {
        return fail(e);
    }
    let json = match read_input(path) {
        Ok(data) => data,
        Err(e) => return fail(format_args!("{}: {e}", path.display())),
    };
    let bytes = match seekless_bencode::from_json(&json) {
        Ok(bytes) => bytes,
        Err(e) => {
            let at = e.offset().min(json.len());
            let line = 1 + json[..at].iter().filter(|&&c| c == b'\n').count();
            let column = 1 + at
                - json[..at]
                    .iter()
                    .rposition(|&c| c == b'\n')
                    .map_or(0, |p| p + 1);
            return fail(format_args!("{}:{line}:{column}: {e}", path.display()));
        }
    };
    let written = write_output(output, &bytes);
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(e),
    }
}

/// Writes `bytes` to standard output (`-`) or to `output` through a
/// temporary file renamed into place.
fn write_output(output: &Path, bytes: &[u8]) -> Result<(), String> {
    if output == Path::new("-") {
        std::io::stdout()
            .lock()
            .write_all(bytes)
            .map_err(|e| e.to_string())
    } else {
        torrent::write_atomically(output, bytes).map_err(|e| e.to_string())
    }
}

/// `seekless torrent` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum TorrentCommand {
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
pub fn run_torrent(command: TorrentCommand) -> ExitCode {
    match command {
        TorrentCommand::Info { file, json } => info(&file, json),
        TorrentCommand::Verify { file, data_dir } => verify(&file, &data_dir),
        TorrentCommand::Create {
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
