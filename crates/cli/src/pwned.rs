//! `seekless pwned …`: Have I Been Pwned passwords, offline.

use std::io::{self, BufRead, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use indicatif::ProgressBar;
use seekless_pwned::{BuildOptions, ErrorKind, Index, Input, Kind, Progress, build, sample};

use crate::progress;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Build an index from Pwned Passwords text files (HASH:COUNT lines, or a
    /// directory of per-range files 00000.txt … FFFFF.txt).
    Prepare {
        /// Input files or directories; `-` or none reads standard input.
        inputs: Vec<String>,
        /// The index file to write.
        #[arg(short, long)]
        output: PathBuf,
        /// Parser and sorter threads (default: all cores).
        #[arg(long)]
        threads: Option<usize>,
        /// Memory budget for buffered hashes, in bytes (suffixes K, M, G,
        /// T; default: half the machine's memory, at most 4G). Beyond it,
        /// input spills to temporary files.
        #[arg(long, value_parser = crate::size::parse)]
        memory: Option<u64>,
        /// Directory for spill files (default: the output's directory).
        #[arg(long)]
        tmp_dir: Option<PathBuf>,
        /// Skip malformed lines (and count them) instead of stopping.
        #[arg(long)]
        skip_invalid: bool,
        /// A compact index: keep only the top N bits of each hash (32 to
        /// 159 for SHA-1, to 127 for NTLM), summing the counts of hashes
        /// that share them. A lookup of a hash not in the corpus then finds
        /// one by chance with probability hashes / 2^N (`stats` prints it);
        /// `serve` and `export`, which need whole hashes, refuse the index.
        #[arg(long, value_name = "N")]
        key_bits: Option<u32>,
        /// A subset: keep only the hashes seen at least N times (counts
        /// summed over the whole input). The whole index is built first, in
        /// a temporary file beside the spill files (--tmp-dir).
        #[arg(long, value_name = "N", default_value_t = 1,
              value_parser = clap::value_parser!(u64).range(1..))]
        min_count: u64,
    },
    /// Check passwords (or hashes) against an index: one line per input,
    /// its count first (0 = not found).
    Check {
        /// The index (default: the built-in sample of common passwords).
        #[arg(short, long)]
        index: Option<PathBuf>,
        /// Inputs are hex hashes of the index's kind, not passwords.
        #[arg(long)]
        hashes: bool,
        /// Report malformed inputs (`-:LINE: what is wrong` on standard
        /// error) and go on, instead of stopping at the first.
        #[arg(long)]
        skip_invalid: bool,
        /// One JSON object per input (`{"count":N,"hash":"…"}`), one per
        /// line.
        #[arg(long)]
        json: bool,
        /// Passwords (or hashes); none reads standard input, one per line.
        inputs: Vec<String>,
    },
    /// Build an index from the HIBP range API (all 1,048,576 ranges), or
    /// refresh one: ranges the server says are unchanged are copied from it.
    ///
    /// Proxies are read from the environment as curl reads it: http_proxy
    /// (lower case only), https_proxy or HTTPS_PROXY, all_proxy or
    /// ALL_PROXY, and no_proxy or NO_PROXY for the hosts reached directly.
    /// TLS certificates are checked against the system's CA store (on
    /// Linux, SSL_CERT_FILE and SSL_CERT_DIR where set) and those of
    /// --ca-cert.
    #[cfg(feature = "update")]
    Update {
        /// The index to build or refresh (replaced only when complete).
        index: PathBuf,
        /// NTLM hashes (`?mode=ntlm`) instead of SHA-1.
        #[arg(long)]
        ntlm: bool,
        /// The API's base URL.
        #[arg(long, value_name = "URL", default_value = seekless_pwned::DEFAULT_BASE_URL)]
        base_url: String,
        /// Requests in flight at once.
        #[arg(long, value_name = "N", default_value_t = seekless_pwned::DEFAULT_CONCURRENCY,
              value_parser = clap::value_parser!(u16).range(1..=1024))]
        concurrency: u16,
        /// Ignore stored validators: fetch every range whole.
        #[arg(long)]
        full: bool,
        /// Seconds to wait for one answer before trying again.
        #[arg(long, value_name = "SECONDS", default_value_t = 30,
              value_parser = clap::value_parser!(u64).range(1..))]
        timeout: u64,
        /// Tries per range before giving up.
        #[arg(long, value_name = "N", default_value_t = 8,
              value_parser = clap::value_parser!(u32).range(1..))]
        tries: u32,
        /// Also trust the CA certificates of this PEM file (it may hold
        /// several; repeatable), beside the system's store.
        #[arg(long = "ca-cert", value_name = "FILE")]
        ca_certs: Vec<PathBuf>,
        /// Apply a delta bundle (from `pwned diff` or `update --bundle-out`)
        /// instead of asking the network: the index must be the one the
        /// bundle was made for, and becomes the one it was made of.
        #[arg(long, value_name = "CHANGES", conflicts_with_all = ["base_url", "full"])]
        from_bundle: Option<PathBuf>,
        /// Also write the delta bundle of what this update changed, for
        /// copies of the old index where there is no network.
        #[arg(long, value_name = "CHANGES")]
        bundle_out: Option<PathBuf>,
        /// A subset: keep only the hashes seen at least N times (default:
        /// the index's own minimum, every hash for a new index). Raising
        /// an index's minimum filters it; lowering it needs --full, as the
        /// index lacks the hashes it left out.
        #[arg(long, value_name = "N", conflicts_with = "from_bundle",
              value_parser = clap::value_parser!(u64).range(1..))]
        min_count: Option<u64>,
    },
    /// Write the delta bundle that makes NEW of OLD: the ranges whose hashes,
    /// counts or validator differ, gzip-compressed (docs/format-bundle.md),
    /// for `update OLD --from-bundle CHANGES` where there is no network.
    #[cfg(feature = "update")]
    Diff {
        /// The index the bundle applies to.
        old: PathBuf,
        /// The index it makes.
        new: PathBuf,
        /// The bundle to write (replaced only when complete).
        #[arg(short, long, value_name = "CHANGES")]
        output: PathBuf,
    },
    /// Print the index's kind, size and format version.
    Stats {
        /// The index.
        index: PathBuf,
        /// One JSON object with the same fields (numbers unrounded).
        #[arg(long)]
        json: bool,
    },
    /// Check every checksum and the order of every hash (exit 1 if damaged).
    Verify {
        /// The index.
        index: PathBuf,
    },
    /// Write the corpus back as text: HASH:COUNT lines, uppercase, sorted
    /// by hash (the downloader's single file), or with --ranges one file
    /// per range as the downloader writes them with `-s false`.
    Export {
        /// The index.
        index: PathBuf,
        /// Output file (default: standard output); replaced only when
        /// complete.
        #[arg(short, long, conflicts_with = "ranges")]
        output: Option<PathBuf>,
        /// Write 00000.txt … FFFFF.txt into DIR (a new or empty directory):
        /// each file the range API's answer (SUFFIX:COUNT, CRLF between
        /// lines, none after the last; an empty range an empty file). DIR
        /// appears only when complete.
        #[arg(long, value_name = "DIR")]
        ranges: Option<PathBuf>,
        /// End the sorted file's lines with CRLF, as the published files do.
        #[arg(long, conflicts_with = "ranges")]
        crlf: bool,
        /// Only hashes seen at least N times.
        #[arg(long, value_name = "N", default_value_t = 1,
              value_parser = clap::value_parser!(u64).range(1..))]
        min_count: u64,
        /// Threads writing per-range files (default: all cores).
        #[arg(long, value_name = "N", requires = "ranges")]
        threads: Option<usize>,
    },
    /// Answer like okon's CLI (for KeePassXC): print 1 and exit 1 when the
    /// hash is present, print 0 and exit 0 when absent, exit 2 on error.
    Okon(crate::okon::Args),
    /// Serve the HIBP range API (GET /range/{5 hex}) from indexes, so that
    /// existing Pwned Passwords clients work unchanged.
    #[cfg(feature = "serve")]
    Serve(crate::serve::Args),
    /// GET a URL over HTTP and print the body: a health check where there
    /// is no curl (default: a local `serve`'s /health).
    ///
    /// Exit status 0 on a 2xx answer, 1 on any other status, 2 when there is
    /// no answer (bad URL, no connection, timeout, not HTTP).
    Probe(crate::probe::Args),
}

impl Command {
    /// Whether the command talks over sockets.
    pub fn uses_sockets(&self) -> bool {
        match self {
            #[cfg(feature = "serve")]
            Command::Serve(_) => true,
            #[cfg(feature = "update")]
            Command::Update { .. } => true,
            Command::Probe(_) => true,
            _ => false,
        }
    }
}

pub fn run(command: Command) -> ExitCode {
    let result = match command {
        Command::Prepare {
            inputs,
            output,
            threads,
            memory,
            tmp_dir,
            skip_invalid,
            key_bits,
            min_count,
        } => prepare(
            inputs,
            &output,
            BuildOptions {
                tmp_dir,
                skip_invalid,
                key_bits,
                min_count,
                threads: threads.map_or(BuildOptions::default().threads, |t| t.max(1)),
                memory: memory.unwrap_or_else(seekless_pwned::default_memory),
            },
        ),
        Command::Check {
            index,
            hashes,
            skip_invalid,
            json,
            inputs,
        } => check(index.as_deref(), hashes, skip_invalid, json, inputs),
        #[cfg(feature = "update")]
        Command::Update {
            index,
            ntlm,
            base_url,
            concurrency,
            full,
            timeout,
            tries,
            ca_certs,
            from_bundle,
            bundle_out,
            min_count,
        } => update(
            &index,
            &seekless_pwned::UpdateOptions {
                base_url,
                kind: if ntlm { Kind::Ntlm } else { Kind::Sha1 },
                concurrency: usize::from(concurrency),
                full,
                timeout: std::time::Duration::from_secs(timeout),
                tries,
                proxies: seekless_pwned::Proxies::from_env(),
                ca_certs,
                from_bundle,
                bundle_out,
                min_count,
                ..seekless_pwned::UpdateOptions::default()
            },
        ),
        #[cfg(feature = "update")]
        Command::Diff { old, new, output } => diff(&old, &new, &output),
        Command::Stats { index, json } => stats(&index, json),
        Command::Verify { index } => verify(&index),
        Command::Export {
            index,
            output,
            ranges,
            crlf,
            min_count,
            threads,
        } => {
            let defaults = seekless_pwned::ExportOptions::default();
            let options = seekless_pwned::ExportOptions {
                min_count,
                crlf,
                threads: threads.map_or(defaults.threads, |t| t.max(1)),
            };
            match (output, ranges) {
                (_, Some(dir)) => export_ranges(&index, &dir, &options),
                (Some(file), None) => export_file(&index, &file, &options),
                (None, None) => export_stdout(&index, &options),
            }
        }
        Command::Okon(args) => return crate::okon::run(&args),
        #[cfg(feature = "serve")]
        Command::Serve(args) => return crate::serve::run(args),
        Command::Probe(args) => return crate::probe::run(&args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            // A bad input line is reported as `FILE:LINE: what is wrong`.
            let located = e.downcast_ref::<seekless_pwned::Error>().is_some_and(|e| {
                matches!(
                    e.kind(),
                    ErrorKind::BadLine { .. } | ErrorKind::MixedKinds { .. }
                )
            });
            if located {
                // `FILE:LINE: …`, as compilers print it.
                eprintln!("{e}");
                ExitCode::from(2)
            } else {
                crate::fail(e)
            }
        }
    }
}

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// Progress of a build, drawn only on a terminal.
struct BuildProgress {
    bar: ProgressBar,
}

impl Progress for BuildProgress {
    fn input(&self, bytes: u64) {
        self.bar.set_length(bytes);
    }
    fn read(&self, bytes: u64) {
        self.bar.inc(bytes);
    }
    fn writing(&self, partitions: u64) {
        self.bar.finish_and_clear();
        if !self.bar.is_hidden() {
            self.bar.reset();
            self.bar.set_length(partitions);
            self.bar.set_message("sorting");
            self.bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{msg:>10} [{bar:40}] {pos}/{len} partitions",
                )
                .expect("valid template")
                .progress_chars("=> "),
            );
        }
    }
    fn written(&self) {
        self.bar.inc(1);
    }
}

fn prepare(inputs: Vec<String>, output: &Path, options: BuildOptions) -> Result<ExitCode> {
    let paths: Vec<&Path> = inputs.iter().map(Path::new).collect();
    crate::guard::output_apart(output, &paths)?;
    let inputs: Vec<Input> = if inputs.is_empty() {
        vec![Input::Stdin]
    } else {
        inputs.iter().map(|a| Input::from_arg(a)).collect()
    };
    let progress = BuildProgress {
        bar: progress::bytes(0, "reading"),
    };
    let summary = build(inputs, output, &options, &progress)?;
    progress.bar.finish_and_clear();
    let kind = summary.kind.map_or("SHA-1".to_string(), |k| k.to_string());
    // Every line read, the skipped ones said apart.
    let skipped = summary.invalid + summary.zero_counts;
    let lines = crate::words::count(summary.lines + skipped, "line", "lines");
    let skipped = if skipped > 0 {
        format!(" ({skipped} skipped)")
    } else {
        String::new()
    };
    println!(
        "wrote {}: {} from {lines}{skipped} in {:.2} s",
        output.display(),
        crate::words::count(
            summary.hashes,
            &format!("{kind} hash"),
            &format!("{kind} hashes")
        ),
        summary.seconds
    );
    let count = crate::words::count;
    println!(
        "  {} bytes, {:.2} bytes per hash; {} merged, {} skipped, {} skipped, {} at 4294967295",
        summary.bytes,
        summary.bytes_per_hash(),
        count(summary.duplicates, "duplicate", "duplicates"),
        count(summary.invalid, "invalid line", "invalid lines"),
        count(summary.zero_counts, "zero count", "zero counts"),
        count(summary.capped, "count capped", "counts capped"),
    );
    if let Some(first) = &summary.first_invalid {
        println!("  first invalid line: {first}");
    }
    if summary.spilled > 0 {
        println!("  spilled {} bytes to temporary files", summary.spilled);
    }
    if summary.streamed {
        println!("  input in hash order: written as it was read (no sort, no spill)");
    }
    if summary.min_count > 1 {
        println!(
            "  only the hashes seen at least {} times kept: {} left out",
            summary.min_count,
            count(summary.left_out, "hash", "hashes")
        );
    }
    if let Some(bits) = summary.key_bits {
        println!(
            "  top {bits} bits of each hash kept: a hash not in the corpus is found by chance with probability {:.2e}",
            summary.false_positive_rate()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Progress of an update, drawn only on a terminal.
#[cfg(feature = "update")]
struct UpdateBar {
    bar: ProgressBar,
    received: std::sync::atomic::AtomicU64,
    hashes: std::sync::atomic::AtomicU64,
}

#[cfg(feature = "update")]
impl seekless_pwned::UpdateProgress for UpdateBar {
    fn resumed(&self, from: u32) {
        self.bar.set_position(u64::from(from));
        self.bar.reset_eta();
    }
    fn range(&self, received: u64, hashes: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        let received = self.received.fetch_add(received, Relaxed) + received;
        let hashes = self.hashes.fetch_add(hashes, Relaxed) + hashes;
        self.bar.inc(1);
        if self.bar.position().is_multiple_of(512) {
            self.bar
                .set_message(format!("{:.1} MB, {hashes} hashes", received as f64 / 1e6));
        }
    }
}

#[cfg(feature = "update")]
/// `pwned diff OLD NEW -o CHANGES`.
#[cfg(feature = "update")]
fn diff(old: &Path, new: &Path, output: &Path) -> Result<ExitCode> {
    crate::guard::output_apart(output, &[old, new])?;
    let started = std::time::Instant::now();
    let old_index = crate::index_file::open(old)?;
    let new_index = crate::index_file::open(new)?;
    let s = seekless_pwned::write_bundle(output, Some(&old_index), &new_index)?;
    println!(
        "wrote {}: {} ranges changed, {} validators alone, {} bytes of lines in {} bytes, {:.1} s",
        output.display(),
        s.changed,
        s.validators,
        s.lines_bytes,
        s.bytes,
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(feature = "update")]
fn update(index: &Path, options: &seekless_pwned::UpdateOptions) -> Result<ExitCode> {
    let progress = UpdateBar {
        bar: progress::counted(u64::from(seekless_pwned::RANGES), "ranges"),
        received: Default::default(),
        hashes: Default::default(),
    };
    let s = seekless_pwned::update(index, options, &progress).map_err(
        |e| -> Box<dyn std::error::Error> {
            match e.kind() {
                // A full disk, a failing one: the partial index and its journal
                // stay, and the same command goes on from the last checkpoint.
                ErrorKind::Io { .. } => {
                    format!("{e}; run the same command again to go on from the last checkpoint")
                        .into()
                }
                _ => e.into(),
            }
        },
    )?;
    progress.bar.finish_and_clear();
    println!(
        "{} {}: {} ranges checked, {} changed, {} not modified",
        if s.created { "wrote" } else { "updated" },
        index.display(),
        s.checked,
        s.changed,
        s.not_modified
    );
    if s.resumed_from > 0 {
        println!(
            "  resumed an interrupted update at range {}",
            seekless_pwned::prefix_hex(s.resumed_from)
        );
    }
    let only = match s.min_count {
        1 => String::new(),
        m => format!(" (only those seen at least {m} times)"),
    };
    println!(
        "  {} hashes{only}: {} added, {} removed, {} counts changed",
        s.hashes, s.added, s.removed, s.counts_changed
    );
    if options.from_bundle.is_some() {
        println!(
            "  {} bytes of lines applied, {} bytes written, {:.1} s",
            s.received, s.bytes, s.seconds
        );
    } else {
        println!(
            "  {} bytes received, {} retries, {} bytes written, {:.1} s",
            s.received, s.retries, s.bytes, s.seconds
        );
    }
    if let Some(out) = &options.bundle_out {
        println!("  wrote the delta bundle {}", out.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// `pwned check`. A malformed input (a line of standard input, or an
/// argument) is reported as `-:LINE: what is wrong` (`arg:N:` for the N-th
/// argument) on standard error; the check stops there with status 2, or
/// with `--skip-invalid` goes on without it (status 0).
fn check(
    index: Option<&Path>,
    hashes: bool,
    skip_invalid: bool,
    json: bool,
    inputs: Vec<String>,
) -> Result<ExitCode> {
    let from_sample = index.is_none();
    let index = match index {
        Some(path) => crate::index_file::open(path)?,
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
    let _hidden = stdin.is_terminal().then(crate::terminal::NoEcho::new);
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

/// `pwned stats`: `field\tvalue` lines, or one JSON object with the same
/// fields.
fn stats(path: &Path, as_json: bool) -> Result<ExitCode> {
    use serde_json::{Value, json};
    let index = crate::index_file::open(path)?;
    let s = index.stats();
    let kind = match s.kind {
        Kind::Sha1 => "sha1",
        Kind::Ntlm => "ntlm",
    };
    let per_hash = if s.hashes == 0 {
        0.0
    } else {
        s.bytes as f64 / s.hashes as f64
    };
    // Each field as text (rounded where a person reads it) and as JSON.
    let mut fields: Vec<(&str, String, Value)> = vec![
        (
            "file",
            path.display().to_string(),
            json!(path.display().to_string()),
        ),
        ("format_version", s.version.to_string(), json!(s.version)),
        ("kind", kind.to_string(), json!(kind)),
        ("hashes", s.hashes.to_string(), json!(s.hashes)),
        (
            "total_count",
            s.total_count.to_string(),
            json!(s.total_count),
        ),
        ("pages", s.pages.to_string(), json!(s.pages)),
        (
            "bucket_bits",
            s.bucket_bits.to_string(),
            json!(s.bucket_bits),
        ),
        ("key_bits", s.key_bits.to_string(), json!(s.key_bits)),
        ("min_count", s.min_count.to_string(), json!(s.min_count)),
    ];
    if s.is_compact() {
        let rate = s.false_positive_rate();
        fields.push(("false_positive_rate", format!("{rate:.3e}"), json!(rate)));
    }
    fields.push(("bytes", s.bytes.to_string(), json!(s.bytes)));
    fields.push(("bytes_per_hash", format!("{per_hash:.3}"), json!(per_hash)));
    if let Some(source) = index.source()? {
        let updated = std::time::UNIX_EPOCH + std::time::Duration::from_secs(source.updated);
        let updated = crate::date::rfc3339(updated);
        fields.push(("source", source.url.clone(), json!(source.url)));
        fields.push(("updated", updated.clone(), json!(updated)));
        let validators = source.validators();
        fields.push(("validators", validators.to_string(), json!(validators)));
    }
    let mut out = io::stdout().lock();
    if as_json {
        let object: serde_json::Map<String, Value> = fields
            .into_iter()
            .map(|(name, _, value)| (name.to_string(), value))
            .collect();
        writeln!(out, "{}", Value::Object(object))?;
    } else {
        for (name, text, _) in fields {
            writeln!(out, "{name}\t{text}")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn verify(path: &Path) -> Result<ExitCode> {
    if path.is_dir() {
        return Err(format!("{}: is a directory, not an index", path.display()).into());
    }
    let result = Index::open(path).and_then(|index| index.verify().map(|()| index.stats()));
    match result {
        Ok(s) => {
            println!(
                "{}: ok ({} hashes, {} pages, format version {})",
                path.display(),
                s.hashes,
                s.pages,
                s.version
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(e) if matches!(e.kind(), ErrorKind::Io { .. }) => Err(e.into()),
        Err(e) => {
            println!("{}: {e}", path.display());
            Ok(ExitCode::from(1))
        }
    }
}

/// `pwned export INDEX -o FILE`.
fn export_file(
    path: &Path,
    output: &Path,
    options: &seekless_pwned::ExportOptions,
) -> Result<ExitCode> {
    crate::guard::output_apart(output, &[path])?;
    let index = crate::index_file::open(path)?;
    let s = seekless_pwned::export_sorted(&index, output, options)?;
    println!(
        "wrote {}: {} hashes, {} bytes in {:.1} s",
        output.display(),
        s.hashes,
        s.bytes,
        s.seconds
    );
    Ok(ExitCode::SUCCESS)
}

/// `pwned export INDEX`: the sorted lines on standard output. When that is
/// a file and a write fails (a full disk), the file is cut back to where
/// it was, so no partial corpus is left in it.
fn export_stdout(path: &Path, options: &seekless_pwned::ExportOptions) -> Result<ExitCode> {
    let index = crate::index_file::open(path)?;
    let start = crate::stdout_file::Start::now();
    let written = match start.file() {
        Some(file) => seekless_pwned::write_sorted(&index, file, options),
        None => seekless_pwned::write_sorted(&index, io::stdout().lock(), options),
    };
    match written {
        Ok(_) => Ok(ExitCode::SUCCESS),
        Err(e) => match e.into_kind() {
            ErrorKind::Io { path: None, source } => {
                let cut = start.restore();
                Err(format!("standard output: {source}{cut}").into())
            }
            kind => Err(seekless_pwned::Error::from(kind).into()),
        },
    }
}

/// `pwned export INDEX --ranges DIR`.
fn export_ranges(
    path: &Path,
    dir: &Path,
    options: &seekless_pwned::ExportOptions,
) -> Result<ExitCode> {
    let index = crate::index_file::open(path)?;
    let progress = RangesBar(progress::counted(
        u64::from(seekless_pwned::RANGES),
        "ranges",
    ));
    let written = seekless_pwned::export_ranges(&index, dir, options, &progress);
    progress.0.finish_and_clear();
    let s = written?;
    println!(
        "wrote {}: {} files, {} hashes, {} bytes in {:.1} s ({:.0} MB/s)",
        dir.display(),
        s.files,
        s.hashes,
        s.bytes,
        s.seconds,
        s.bytes_per_second() / 1e6
    );
    Ok(ExitCode::SUCCESS)
}

/// Progress of a per-range export, drawn only on a terminal.
struct RangesBar(ProgressBar);

impl seekless_pwned::ExportProgress for RangesBar {
    fn ranges(&self, ranges: u32) {
        self.0.inc(u64::from(ranges));
    }
}
