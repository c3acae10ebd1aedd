//! okon-cli compatibility: `okon-cli --path INDEX --hash HEX` answers with
//! its exit code, as KeePassXC's `keepassxc-cli analyze --okon` expects.
//!
//! Reached three ways: the binary invoked as `okon-cli` (a symlink or a
//! copy), `seekless --path … --hash …` at the top level (so `--okon` can name
//! the seekless binary itself), and `seekless pwned okon --path … --hash …`.
//!
//! Contract (okon's CLI): prints `1` and exits 1 when the hash is in the
//! index, prints `0` and exits 0 when it is not, and exits 2 with a message
//! on stderr when the index cannot be opened or the hash is malformed.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use seekless_pwned::{ErrorKind, Index};

/// Exit status for "present" (okon's CLI convention).
const PRESENT: u8 = 1;
/// Exit status for errors: bad arguments, unreadable index, malformed hash.
const FAILURE: u8 = 2;

/// Is a hash in the index? Answers like okon's CLI: prints `1` and exits 1
/// when present, prints `0` and exits 0 when absent, exits 2 on error.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// The index (any file name; KeePassXC wants it to end in `.okon`).
    #[arg(long, value_name = "INDEX")]
    pub path: PathBuf,
    /// The hash in hex, either case: 40 digits of SHA-1 (32 of NTLM for an
    /// NTLM index).
    #[arg(long, value_name = "HEX")]
    pub hash: String,
}

/// The command line of `okon-cli` (and of `seekless --path … --hash …`).
#[derive(Debug, Parser)]
#[command(
    name = "okon-cli",
    version,
    about = "Checks a SHA-1 hash against a seekless pwned index, like okon's CLI: prints 1 and exits 1 when present, prints 0 and exits 0 when absent, exits 2 on error."
)]
struct OkonCli {
    #[command(flatten)]
    args: Args,
}

/// If the process was started as `okon-cli`, or with `--path`/`--hash` as
/// its first argument, answers as okon's CLI and returns the exit code;
/// otherwise returns `None` and the normal `seekless` command line applies.
pub fn intercept() -> Option<ExitCode> {
    let argv: Vec<OsString> = std::env::args_os().collect();
    if !is_okon_invocation(&argv) {
        return None;
    }
    // clap exits with status 2 on a usage error (and 0 for --help/--version).
    let cli = OkonCli::parse_from(argv);
    Some(run(&cli.args))
}

/// Whether these arguments call for okon's CLI rather than `seekless`.
fn is_okon_invocation(argv: &[OsString]) -> bool {
    let invoked_as_okon = argv
        .first()
        .and_then(|arg0| Path::new(arg0).file_stem())
        .is_some_and(|stem| stem == "okon-cli");
    let okon_flags = argv.get(1).and_then(|a| a.to_str()).is_some_and(|a| {
        ["--path", "--hash"]
            .iter()
            .any(|flag| a == *flag || a.strip_prefix(flag).is_some_and(|r| r.starts_with('=')))
    });
    invoked_as_okon || okon_flags
}

/// Answers one query; see the module documentation for the contract.
pub fn run(args: &Args) -> ExitCode {
    match lookup(&args.path, &args.hash) {
        Ok(true) => {
            println!("1");
            ExitCode::from(PRESENT)
        }
        Ok(false) => {
            println!("0");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("okon-cli: {message}");
            ExitCode::from(FAILURE)
        }
    }
}

/// One lookup per process, as okon's CLI does: `Index::count_once` reads
/// the header, one directory block and the hash's page, not the whole
/// directory that `Index::open` reads for many lookups.
fn lookup(path: &Path, hash: &str) -> Result<bool, String> {
    match Index::count_once_hex(path, hash.trim()) {
        Ok(count) => Ok(count > 0),
        Err(e) => match e.kind() {
            ErrorKind::BadHash { what, .. } => Err(format!("malformed hash {hash:?}: {what}")),
            _ => Err(format!("cannot open index: {e}")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::is_okon_invocation;
    use std::ffi::OsString;

    fn argv(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn detects_okon_invocations() {
        assert!(is_okon_invocation(&argv(&[
            "/usr/bin/okon-cli",
            "--path",
            "x"
        ])));
        assert!(is_okon_invocation(&argv(&["okon-cli.exe"])));
        assert!(is_okon_invocation(&argv(&[
            "seekless", "--path", "x", "--hash", "y"
        ])));
        assert!(is_okon_invocation(&argv(&[
            "seekless", "--hash=y", "--path=x"
        ])));
        assert!(!is_okon_invocation(&argv(&["seekless", "pwned", "check"])));
        assert!(!is_okon_invocation(&argv(&["seekless", "--pathological"])));
        assert!(!is_okon_invocation(&argv(&["seekless"])));
        assert!(!is_okon_invocation(&argv(&[])));
    }
}
