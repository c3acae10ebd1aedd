//! `seekless`: one command-line tool for every engine. The engines live in
//! their own crates; this one parses arguments, guards outputs, reports
//! errors one way, prints results, and is the shell (socket, signals, logs)
//! around the range API of `pwned serve`.

#[cfg(feature = "bencode")]
mod bencode;
#[cfg(feature = "blocks")]
mod blocks;
#[cfg(feature = "exhash")]
mod exhash;
#[cfg(any(feature = "pwned", feature = "bencode", feature = "blocks"))]
mod guard;
mod progress;
#[cfg(feature = "pwned")]
mod pwned;
mod report;
#[cfg(any(
    feature = "pwned",
    feature = "bencode",
    feature = "blocks",
    feature = "exhash"
))]
mod size;
#[cfg(any(feature = "pwned", feature = "bencode", feature = "blocks"))]
mod words;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Compact indexes over big raw data files, answered with as few reads as possible.
#[derive(Debug, Parser)]
#[command(name = "seekless", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Have I Been Pwned passwords: build an index, check passwords offline.
    #[cfg(feature = "pwned")]
    #[command(subcommand)]
    Pwned(pwned::Command),
    /// Bencode files: check them (libtorrent-compatible or strict), dump as JSON.
    #[cfg(feature = "bencode")]
    #[command(subcommand)]
    Bencode(bencode::Command),
    /// Torrents (v1, v2, hybrid): show metadata, verify data, create.
    #[cfg(feature = "bencode")]
    #[command(subcommand)]
    Torrent(bencode::torrent::Command),
    /// Bitcoin Core block files: scan, list the best chain, linearize.
    #[cfg(feature = "blocks")]
    #[command(subcommand)]
    Blocks(blocks::Command),
    /// Extendible hash table u64 -> u64 in compact pages: apply operations, benchmark.
    #[cfg(feature = "exhash")]
    #[command(subcommand)]
    Exhash(exhash::Command),
}

#[cfg(any(
    feature = "pwned",
    feature = "bencode",
    feature = "blocks",
    feature = "exhash"
))]
impl Command {
    /// Whether the command talks over sockets (`pwned serve`, `pwned
    /// update`, `pwned probe`), where a peer that goes away must be an
    /// error to handle, not a signal that ends the process.
    fn uses_sockets(&self) -> bool {
        #[cfg(feature = "pwned")]
        #[allow(irrefutable_let_patterns)] // when pwned is the only engine built
        if let Command::Pwned(command) = self {
            return command.uses_sockets();
        }
        false
    }
}

/// A closed standard output (`seekless … | head`) ends the process quietly,
/// as it ends `cat` or `grep`: SIGPIPE gets its default action back (Rust
/// ignores it, which turns every later write into an error to report).
fn quiet_closed_pipes() {
    #[cfg(unix)]
    // SAFETY: setting a signal's disposition to its default, before any
    // thread is started; no handler runs.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    // Invoked as `okon-cli`, or as `seekless --path … --hash …`: answer as
    // okon's CLI does (for KeePassXC's `--okon`).
    #[cfg(feature = "pwned")]
    if let Some(code) = pwned::okon::intercept() {
        return code;
    }
    run()
}

/// The command the arguments name, run.
#[cfg(any(
    feature = "pwned",
    feature = "bencode",
    feature = "blocks",
    feature = "exhash"
))]
fn run() -> ExitCode {
    let cli = Cli::parse();
    if !cli.command.uses_sockets() {
        quiet_closed_pipes();
    }
    match cli.command {
        #[cfg(feature = "pwned")]
        Command::Pwned(command) => pwned::run(command),
        #[cfg(feature = "bencode")]
        Command::Bencode(command) => bencode::run(command),
        #[cfg(feature = "bencode")]
        Command::Torrent(command) => bencode::torrent::run(command),
        #[cfg(feature = "blocks")]
        Command::Blocks(command) => blocks::run(command),
        #[cfg(feature = "exhash")]
        Command::Exhash(command) => exhash::run(command),
    }
}

/// A binary built without engines: clap answers `--help` and `--version`
/// and refuses anything else (status 2).
#[cfg(not(any(
    feature = "pwned",
    feature = "bencode",
    feature = "blocks",
    feature = "exhash"
)))]
fn run() -> ExitCode {
    quiet_closed_pipes();
    let error = <Cli as clap::CommandFactory>::command()
        .subcommand_required(false)
        .try_get_matches()
        .err();
    match error {
        Some(error) => error.exit(),
        None => report::fail(
            "built without engines: rebuild with at least one of the features pwned, bencode, blocks, exhash",
        ),
    }
}
