//! `pwned check`: passwords or hashes answered from an index (or the
//! built-in sample), from arguments, standard input in batches, or a
//! terminal line by line.

use std::io::{self, BufRead, BufWriter, IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use seekless_pwned::{Index, sample};

use crate::report::Result;

/// `pwned check`. A malformed input (a line of standard input, or an
/// argument) is reported as `-:LINE: what is wrong` (`arg:N:` for the N-th
/// argument) on standard error; the check stops there with status 2, or
/// with `--skip-invalid` goes on without it (status 0).
pub(super) fn check(
    index: Option<&Path>,
    hashes: bool,
    skip_invalid: bool,
    json: bool,
    inputs: Vec<String>,
) -> Result<ExitCode> {
    let from_sample = index.is_none();
    let index = match index {
        Some(path) => crate::pwned::index_file::open(path)?,
        None => {
            eprintln!(
                "seekless: no index given (-i INDEX): answering from {}",
                sample::DESCRIPTION
            );
            sample::index()?
        }
    };
    let mut checker = Checker {
        index: &index,
        hashes,
        from_sample,
        skip_invalid,
        json,
        keys: Vec::new(),
        counts: Vec::new(),
        line: Vec::with_capacity(128),
    };
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    if !inputs.is_empty() {
        let inputs: Vec<&[u8]> = inputs.iter().map(|s| s.as_bytes()).collect();
        let go_on = checker.answer(&inputs, "arg", 1, &mut out)?;
        out.flush()?;
        return Ok(if go_on {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(2)
        });
    }
    let stdin = io::stdin();
    // On a terminal, answer each line as it is typed; otherwise answer in
    // batches, which overlaps the lookups' memory and disk reads.
    // Typed passwords are not shown (as a password prompt does not).
    let _hidden = stdin
        .is_terminal()
        .then(crate::pwned::terminal::NoEcho::new);
    let batch = if stdin.is_terminal() {
        let what = if hashes { "hashes" } else { "passwords" };
        eprintln!("seekless: type {what}, one per line (not shown); end with Ctrl-D");
        1
    } else {
        4096
    };
    let mut reader = stdin.lock();
    let mut text = Vec::with_capacity(batch * 48);
    let mut ends = Vec::with_capacity(batch);
    let mut first = 1;
    loop {
        text.clear();
        ends.clear();
        while ends.len() < batch && reader.read_until(b'\n', &mut text)? > 0 {
            ends.push(text.len());
        }
        if ends.is_empty() {
            break;
        }
        let mut start = 0;
        let lines: Vec<&[u8]> = ends
            .iter()
            .map(|&end| {
                let line = &text[start..end];
                start = end;
                let line = line.strip_suffix(b"\n").unwrap_or(line);
                line.strip_suffix(b"\r").unwrap_or(line)
            })
            .collect();
        let go_on = checker.answer(&lines, "-", first, &mut out)?;
        if batch == 1 || !go_on {
            out.flush()?;
        }
        if !go_on {
            return Ok(ExitCode::from(2));
        }
        first += lines.len() as u64;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Answers batches of inputs: one output line each, its count first.
struct Checker<'a> {
    index: &'a Index,
    hashes: bool,
    from_sample: bool,
    skip_invalid: bool,
    json: bool,
    keys: Vec<seekless_pwned::Key>,
    counts: Vec<u64>,
    line: Vec<u8>,
}

impl Checker<'_> {
    /// Answers `inputs` (numbered from `first` in `source`); false when a
    /// malformed one stopped the check (reported, after the answers to
    /// those before it).
    fn answer(
        &mut self,
        inputs: &[&[u8]],
        source: &str,
        first: u64,
        out: &mut dyn Write,
    ) -> Result<bool> {
        let kind = self.index.kind();
        self.keys.clear();
        let mut failure = None;
        for (number, &input) in (first..).zip(inputs) {
            let key = match std::str::from_utf8(input) {
                Err(_) => Err("not UTF-8".to_string()),
                Ok("") if self.hashes => Err("blank line: expected a hash".to_string()),
                Ok(text) if self.hashes => {
                    seekless_pwned::Key::from_hex(kind, input).ok_or_else(|| {
                        let shown: String = text.chars().take(64).collect();
                        format!(
                            "bad hash {shown:?}: expected {} hex digits of {kind}",
                            kind.hex_len()
                        )
                    })
                }
                Ok(text) => Ok(kind.hash_password(text)),
            };
            match key {
                Ok(key) => self.keys.push(key),
                Err(what) if self.skip_invalid => eprintln!("{source}:{number}: {what} (skipped)"),
                Err(what) => {
                    // Answer what came before, then stop.
                    failure = Some(format!("{source}:{number}: {what}"));
                    break;
                }
            }
        }
        self.counts.clear();
        self.index.count_many(&self.keys, &mut self.counts)?;
        for (key, &count) in self.keys.iter().zip(&self.counts) {
            let line = &mut self.line;
            line.clear();
            if self.json {
                line.extend_from_slice(format!("{{\"count\":{count},\"hash\":\"").as_bytes());
                key.write_hex(kind, line);
                line.push(b'"');
                if self.from_sample {
                    line.extend_from_slice(b",\"sample\":true");
                }
                line.extend_from_slice(b"}\n");
                out.write_all(line)?;
                continue;
            }
            line.extend_from_slice(count.to_string().as_bytes());
            line.push(b'\t');
            key.write_hex(kind, line);
            if self.from_sample {
                line.extend_from_slice(if count > 0 {
                    b"\tlisted in the sample"
                } else {
                    b"\tnot in the sample"
                });
            }
            line.push(b'\n');
            out.write_all(line)?;
        }
        match failure {
            Some(report) => {
                out.flush()?;
                eprintln!("{report}");
                Ok(false)
            }
            None => Ok(true),
        }
    }
}
