//! `seekless exhash …`: argument parsing and printing around the
//! `seekless-exhash` engine.

use std::fs::File;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use seekless_exhash::bench::{self, Pattern};
use seekless_exhash::{Error, ErrorKind, ExHash, FileStore, OpenOptions};
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

/// The table file every subcommand but `bench` opens, and how long to wait
/// for another process that has it open.
#[derive(Debug, clap::Args)]
pub struct Open {
    /// The table file.
    db: PathBuf,
    /// Wait while another process has DB open, until it lets go
    /// (`--wait`) or for up to SECONDS (`--wait=SECONDS`), instead of
    /// stopping at once.
    #[arg(long, value_name = "SECONDS", num_args = 0..=1, require_equals = true)]
    wait: Option<Option<u64>>,
}

impl Open {
    /// How to open the table: created when `create`, waiting as asked.
    fn options(&self, create: bool) -> OpenOptions {
        let mut options = OpenOptions::new();
        options.create(create);
        match self.wait {
            None => {}
            Some(None) => {
                options.wait(true);
            }
            Some(Some(seconds)) => {
                options.wait_at_most(Duration::from_secs(seconds));
            }
        }
        options
    }

    /// Why the table did not open, in the one line `fail` prints after
    /// `exhash COMMAND: `.
    fn explain(&self, e: &Error) -> String {
        if matches!(e.kind(), ErrorKind::Locked { .. }) {
            let hint = if self.wait.is_some() {
                ""
            } else {
                "; --wait waits for it"
            };
            format!("{e}{hint}")
        } else {
            format!("{}: {e}", self.db.display())
        }
    }

    /// Open the table (creating it when `create`), or say why not.
    fn table(&self, create: bool) -> Result<ExHash<FileStore<File>>, String> {
        self.options(create)
            .open(&self.db)
            .map_err(|e| self.explain(&e))
    }
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
        #[command(flatten)]
        open: Open,
    },
    /// Print the value of each KEY in DB, one a line (`-` for a key that
    /// is not there).
    Get {
        #[command(flatten)]
        open: Open,
        /// Keys, decimal u64.
        #[arg(required = true, value_name = "KEY")]
        keys: Vec<u64>,
        /// Print one JSON object: `{"pairs": [{"key": K, "value": V or null}, …]}`.
        #[arg(long)]
        json: bool,
    },
    /// Print what DB holds: pairs, pages, directory depth, file bytes a
    /// pair, the journal's use, readers.
    Stats {
        #[command(flatten)]
        open: Open,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Print every pair of DB as a `put KEY VALUE` line (what `apply` reads
    /// back), in no particular order.
    Dump {
        #[command(flatten)]
        open: Open,
        /// In ascending key order (holds every pair in memory, 16 bytes
        /// each).
        #[arg(long)]
        sorted: bool,
        /// Print one JSON object a line, `{"key": K, "value": V}`.
        #[arg(long)]
        json: bool,
    },
    /// Check DB: both headers, the metadata, every page against its
    /// checksum and the page layout, the journal. Exit status 1 when it is
    /// damaged.
    Check {
        #[command(flatten)]
        open: Open,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
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
        Command::Apply { open } => apply(&open),
        Command::Get { open, keys, json } => get(&open, &keys, json),
        Command::Stats { open, json } => stats(&open, json),
        Command::Dump { open, sorted, json } => dump(&open, sorted, json),
        Command::Check { open, json } => check(&open, json),
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

fn apply(open: &Open) -> ExitCode {
    let mut table = match open.table(true) {
        Ok(t) => t,
        Err(e) => return fail(format_args!("exhash apply: {e}")),
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

fn get(open: &Open, keys: &[u64], as_json: bool) -> ExitCode {
    let table = match open.table(false) {
        Ok(t) => t,
        Err(e) => return fail(format_args!("exhash get: {e}")),
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let written = if as_json {
        let pairs: Vec<_> = keys
            .iter()
            .map(|&k| json!({"key": k, "value": table.get(k)}))
            .collect();
        writeln!(out, "{}", json!({ "pairs": pairs }))
    } else {
        keys.iter().try_for_each(|&k| match table.get(k) {
            Some(v) => writeln!(out, "{v}"),
            None => writeln!(out, "-"),
        })
    };
    finish_output("get", written.and_then(|()| out.flush()))
}

fn stats(open: &Open, as_json: bool) -> ExitCode {
    let table = match open.table(false) {
        Ok(t) => t,
        Err(e) => return fail(format_args!("exhash stats: {e}")),
    };
    let shape = table.stats();
    let file = table.store().file_stats();
    let per_pair = file.file_bytes as f64 / shape.len.max(1) as f64;
    // Opening takes the writer's lock: no other process has the table
    // open while this one reads it.
    let readers = 0;
    let text = if as_json {
        json!({
            "pairs": shape.len,
            "pages": shape.pages,
            "global_depth": shape.global_depth,
            "max_local_depth": shape.max_local_depth,
            "fill": shape.fill,
            "spilled": shape.spilled,
            "file_bytes": file.file_bytes,
            "bytes_per_pair": per_pair,
            "free_slots": file.free_slots,
            "sequence": file.sequence,
            "journal_bytes": file.journal_bytes,
            "journal_used": file.journal_used,
            "readers": readers,
        })
        .to_string()
    } else {
        let journal = if file.journal_bytes == 0 {
            "none yet".to_string()
        } else {
            format!(
                "{} of {} bytes used since the last checkpoint",
                file.journal_used, file.journal_bytes
            )
        };
        format!(
            "pairs            {}\n\
             pages            {} (8 KiB, {:.1}% of their slots in use)\n\
             depth            {} (directory), {} (deepest page)\n\
             spilled pairs    {}\n\
             file             {} bytes, {:.2} a pair, {} free slots\n\
             last commit      {}\n\
             journal          {journal}\n\
             readers          {readers}",
            shape.len,
            shape.pages,
            shape.fill * 100.0,
            shape.global_depth,
            shape.max_local_depth,
            shape.spilled,
            file.file_bytes,
            per_pair,
            file.free_slots,
            file.sequence,
        )
    };
    let mut out = std::io::stdout().lock();
    finish_output("stats", writeln!(out, "{text}"))
}

fn dump(open: &Open, sorted: bool, as_json: bool) -> ExitCode {
    let table = match open.table(false) {
        Ok(t) => t,
        Err(e) => return fail(format_args!("exhash dump: {e}")),
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut line = |(k, v): (u64, u64)| {
        if as_json {
            writeln!(out, "{{\"key\":{k},\"value\":{v}}}")
        } else {
            writeln!(out, "put {k} {v}")
        }
    };
    let written = if sorted {
        let mut pairs: Vec<(u64, u64)> = table.iter().collect();
        pairs.sort_unstable();
        pairs.into_iter().try_for_each(&mut line)
    } else {
        table.iter().try_for_each(&mut line)
    };
    finish_output("dump", written.and_then(|()| out.flush()))
}

fn check(open: &Open, as_json: bool) -> ExitCode {
    let db = open.db.display();
    // Opening reads and checks every part of the file.
    let table = match open.options(false).open(&open.db) {
        Ok(t) => t,
        Err(e) if damaged(&e) => {
            let e = format!("{db}: {e}");
            if as_json {
                println!("{}", json!({"ok": false, "error": e}));
            } else {
                println!("{e}");
            }
            return ExitCode::from(1);
        }
        Err(e) => return fail(format_args!("exhash check: {}", open.explain(&e))),
    };
    let shape = table.stats();
    let file = table.store().file_stats();
    if as_json {
        let value = json!({
            "ok": true,
            "pairs": shape.len,
            "pages": shape.pages,
            "sequence": file.sequence,
            "journal_used": file.journal_used,
        });
        println!("{value}");
    } else {
        println!(
            "{db}: ok ({} pairs in {} pages, commit {}, {} journal bytes since the last checkpoint)",
            shape.len, shape.pages, file.sequence, file.journal_used
        );
    }
    ExitCode::SUCCESS
}

/// Whether `e` is damage found in a table file (rather than a file that
/// could not be read, or is not a table).
fn damaged(e: &Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::Truncated { .. }
            | ErrorKind::NoValidHeader
            | ErrorKind::BadChecksum { .. }
            | ErrorKind::Corrupt { .. }
    )
}

/// A printed result's last word: a failed write is an error.
fn finish_output(command: &str, written: std::io::Result<()>) -> ExitCode {
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(format_args!("exhash {command}: cannot write output: {e}")),
    }
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
