//! `seekless bencode …` and `seekless torrent …`: argument parsing and
//! printing around the `seekless-bencode` engine.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use seekless_bencode::{Parser, to_json};

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
    /// Print a bencoded file as JSON (byte strings as UTF-8 when valid,
    /// otherwise `{"hex": …}`; non-UTF-8 keys as `"hex:…"`).
    Dump {
        /// The file (`-` reads standard input).
        file: PathBuf,
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

fn fail(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("seekless: {message}");
    ExitCode::from(2)
}

/// Run a `seekless bencode` subcommand.
pub fn run(command: Command) -> ExitCode {
    match command {
        Command::Check { strict, files } => check(strict, &files),
        Command::Dump { file } => dump(&file),
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
            Ok(_) => format!("{}\tok", path.display()),
            Err(e) => {
                any_bad = true;
                format!(
                    "{}\terror\t{}\t{}",
                    path.display(),
                    e.code(),
                    e.offset().unwrap_or(0)
                )
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
        Err(e) => {
            eprintln!("seekless: {}: {e}", path.display());
            return ExitCode::from(1);
        }
    };
    let mut json = String::with_capacity(data.len() * 2);
    to_json(doc.root(), &mut json);
    json.push('\n');
    if std::io::stdout().lock().write_all(json.as_bytes()).is_err() {
        return ExitCode::from(2);
    }
    ExitCode::SUCCESS
}
