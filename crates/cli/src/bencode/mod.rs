//! `seekless bencode …`: argument parsing and printing around the
//! `seekless-bencode` engine; `seekless torrent …` in `torrent.rs`.

pub mod torrent;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

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

/// The bytes of `path`, or of standard input for `-`.
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
        seekless_bencode::torrent::write_atomically(output, bytes).map_err(|e| e.to_string())
    }
}
