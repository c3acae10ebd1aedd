//! Errors as every command reports them: one line on standard error,
//! `seekless: …`, and exit status 2.

use std::process::ExitCode;

/// What a command returns whose errors are of many kinds (pwned's): any
/// error, reported by [`fail`].
#[cfg(feature = "pwned")]
pub(crate) type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// Report an error the one way every command does (`seekless: …` on
/// standard error) and give its exit status, 2.
pub(crate) fn fail(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("seekless: {message}");
    ExitCode::from(2)
}
