//! `seekless exhash …`: argument parsing and printing around the
//! `seekless-exhash` engine.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use seekless_exhash::bench::{self, Pattern};
use seekless_exhash::{ErrorKind, OpenOptions};
use serde_json::json;

use crate::report::fail;

/// Key patterns for `bench`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum PatternArg {
    /// Uniformly random 64-bit keys and values.
    Random,
    /// Keys 0, 1, 2, ... with the value equal to the key.
    Sequential,
}

/// `seekless exhash` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Apply operations read from stdin to the table file DB (created if
    /// missing): `put KEY VALUE`, `del KEY`, `get KEY` (prints the value or
    /// `-`), `commit`, one per line, decimal u64. Ends with a commit; on a
    /// malformed line nothing after the last commit is applied.
    ///
    /// One process writes a table at a time: while another has DB open,
    /// apply stops at once with exit status 2, or waits with `--wait`.
    Apply {
        /// The table file.
        db: PathBuf,
        /// Wait while another process has DB open, until it lets go
        /// (`--wait`) or for up to SECONDS (`--wait=SECONDS`), instead of
        /// stopping at once.
        #[arg(long, value_name = "SECONDS", num_args = 0..=1, require_equals = true)]
        wait: Option<Option<u64>>,
    },
    /// Insert N pairs, then look them all up, in the memory backend and in
    /// std's HashMap in the same run; print ns per op and bytes per entry.
    Bench {
        /// Number of pairs (suffixes K, M, G are binary: 1M is 1,048,576).
        #[arg(long, default_value_t = 1_000_000, value_parser = crate::size::parse)]
        keys: u64,
        /// Key pattern.
        #[arg(long, value_enum, default_value_t = PatternArg::Random)]
        pattern: PatternArg,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
}

/// Run a subcommand.
pub fn run(command: Command) -> ExitCode {
    match command {
        Command::Apply { db, wait } => apply(&db, wait),
        Command::Bench {
            keys,
            pattern,
            json,
        } => match usize::try_from(keys) {
            Ok(keys) => bench(keys, pattern, json),
            Err(_) => fail(format_args!(
                "exhash bench: --keys {keys} is too large for this machine"
            )),
        },
    }
}

/// One parsed input line.
enum Op {
    Put(u64, u64),
    Del(u64),
    Get(u64),
    Commit,
}

fn parse_u64(word: Option<&str>, what: &str) -> Result<u64, String> {
    let word = word.ok_or_else(|| format!("missing {what}"))?;
    if word.starts_with('+') {
        return Err(format!("{what} `{word}` is not a decimal u64"));
    }
    word.parse()
        .map_err(|_| format!("{what} `{word}` is not a decimal u64"))
}

/// Parse one line; Ok(None) for a blank line.
fn parse(line: &str) -> Result<Option<Op>, String> {
    let mut words = line.split_ascii_whitespace();
    let Some(verb) = words.next() else {
        return Ok(None);
    };
    let op = match verb {
        "put" => Op::Put(
            parse_u64(words.next(), "KEY")?,
            parse_u64(words.next(), "VALUE")?,
        ),
        "del" => Op::Del(parse_u64(words.next(), "KEY")?),
        "get" => Op::Get(parse_u64(words.next(), "KEY")?),
        "commit" => Op::Commit,
        other => {
            return Err(format!(
                "unknown operation `{other}` (expected put, del, get or commit)"
            ));
        }
    };
    if let Some(extra) = words.next() {
        return Err(format!("unexpected `{extra}` after `{verb}`"));
    }
    Ok(Some(op))
}

fn apply(db: &std::path::Path, wait: Option<Option<u64>>) -> ExitCode {
    let mut options = OpenOptions::new();
    options.create(true);
    match wait {
        None => {}
        Some(None) => {
            options.wait(true);
        }
        Some(Some(seconds)) => {
            options.wait_at_most(Duration::from_secs(seconds));
        }
    }
    let mut table = match options.open(db) {
        Ok(t) => t,
        Err(e) if matches!(e.kind(), ErrorKind::Locked { .. }) => {
            let hint = if wait.is_some() {
                ""
            } else {
                "; --wait waits for it"
            };
            return fail(format_args!("exhash apply: {e}{hint}"));
        }
        Err(e) => {
            return fail(format_args!("exhash apply: {}: {e}", db.display()));
        }
    };
    let stdin = std::io::stdin().lock();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let bar = crate::progress::items("operations");
    // Consecutive puts, loaded together (in the order of their pages, the
    // finished ones written ahead of the commit) before any other
    // operation and at most PUTS at a time (16 MiB).
    const PUTS: usize = 1 << 20;
    let mut puts: Vec<(u64, u64)> = Vec::new();
    for (i, line) in stdin.lines().enumerate() {
        let number = i + 1;
        let line = match line {
            Ok(l) => l,
            Err(e) => {
                let _ = out.flush();
                return fail(format_args!(
                    "exhash apply: line {number}: cannot read input: {e}"
                ));
            }
        };
        let op = match parse(&line) {
            Ok(Some(op)) => op,
            Ok(None) => continue,
            Err(msg) => {
                let _ = out.flush();
                return fail(format_args!(
                    "exhash apply: line {number}: {msg}; nothing after the last commit was applied"
                ));
            }
        };
        if !matches!(op, Op::Put(..)) || puts.len() == PUTS {
            table.load(&puts);
            puts.clear();
        }
        let written = match op {
            Op::Put(k, v) => {
                puts.push((k, v));
                Ok(())
            }
            Op::Del(k) => {
                table.remove(k);
                Ok(())
            }
            Op::Get(k) => match table.get(k) {
                Some(v) => writeln!(out, "{v}"),
                None => writeln!(out, "-"),
            },
            Op::Commit => {
                if let Err(e) = table.commit() {
                    let _ = out.flush();
                    return fail(format_args!(
                        "exhash apply: line {number}: commit failed: {e}"
                    ));
                }
                Ok(())
            }
        };
        if let Err(e) = written {
            return fail(format_args!("exhash apply: cannot write output: {e}"));
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    table.load(&puts);
    if let Err(e) = out.flush() {
        return fail(format_args!("exhash apply: cannot write output: {e}"));
    }
    if let Err(e) = table.commit() {
        return fail(format_args!("exhash apply: final commit failed: {e}"));
    }
    ExitCode::SUCCESS
}

fn bench(keys: usize, pattern: PatternArg, as_json: bool) -> ExitCode {
    if keys == 0 {
        return fail(format_args!("exhash bench: --keys must be at least 1"));
    }
    let (pattern, name) = match pattern {
        PatternArg::Random => (Pattern::Random, "random"),
        PatternArg::Sequential => (Pattern::Sequential, "sequential"),
    };
    let r = bench::run(keys, pattern);
    if as_json {
        let value = json!({
            "keys": r.keys,
            "put_ns": r.put_ns,
            "get_ns": r.get_ns,
            "bytes_per_entry": r.bytes_per_entry,
            "put_many_ns": r.put_many_ns,
            "get_many_ns": r.get_many_ns,
            "std_put_ns": r.std_put_ns,
            "std_get_ns": r.std_get_ns,
            "std_bytes_per_entry": r.std_bytes_per_entry,
        });
        println!("{value}");
    } else {
        println!(
            "{} {name} pairs, memory backend vs std::collections::HashMap",
            r.keys
        );
        println!(
            "{:<12} {:>10} {:>10} {:>12}",
            "", "put ns/op", "get ns/op", "bytes/entry"
        );
        println!(
            "{:<12} {:>10.1} {:>10.1} {:>12.2}",
            "exhash", r.put_ns, r.get_ns, r.bytes_per_entry
        );
        println!(
            "{:<12} {:>10.1} {:>10.1} {:>12}",
            "exhash many", r.put_many_ns, r.get_many_ns, "(same)"
        );
        println!(
            "{:<12} {:>10.1} {:>10.1} {:>12.2}",
            "HashMap", r.std_put_ns, r.std_get_ns, r.std_bytes_per_entry
        );
        println!(
            "{:<12} {:>10.2} {:>10.2} {:>12.2}",
            "exhash/std",
            r.put_ns / r.std_put_ns,
            r.get_ns / r.std_get_ns,
            r.bytes_per_entry / r.std_bytes_per_entry
        );
    }
    ExitCode::SUCCESS
}
