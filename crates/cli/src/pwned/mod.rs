//! `seekless pwned …`: Have I Been Pwned passwords, offline. The
//! subcommands and their dispatch are here; each group of them has a module:
//!
//! - `prepare.rs`: `prepare`, building an index from text files;
//! - `check.rs`: `check`, answering passwords or hashes;
//! - `inspect.rs`: `stats` and `verify`, what an index holds and whether it
//!   is sound;
//! - `export.rs`: `export`, the sorted text back, in one file or per range;
//! - `gzip_ranges.rs`: `gzip-ranges`, every range's gzip answer kept beside
//!   the index (and kept current by `prepare` and `update`);
//! - `update.rs`: `update` and `diff`, keeping an index current;
//! - `serve/`: `serve`, the range API over HTTP and HTTPS;
//! - `okon.rs`: `okon`, and the okon-cli drop-in;
//! - `probe.rs`: `probe`, a health check where there is no curl (with
//!   `serve`, whose HTTP stack it uses).
//!
//! What they share: `index_file.rs` (an index named on the command line),
//! `span.rs` (spans of time in flags), `stdout_file.rs` and `terminal.rs`.

mod check;
mod export;
#[cfg(any(feature = "serve", feature = "update"))]
mod gzip_ranges;
mod index_file;
mod inspect;
pub mod okon;
mod prepare;
#[cfg(feature = "serve")]
mod probe;
#[cfg(feature = "serve")]
mod serve;
#[cfg(any(feature = "update", feature = "serve"))]
mod span;
mod stdout_file;
mod terminal;
#[cfg(feature = "update")]
mod update;

use std::path::PathBuf;
use std::process::ExitCode;

use seekless_pwned::{BuildOptions, ErrorKind};

use check::check;
use export::{export_file, export_ranges, export_stdout};
use inspect::{stats, verify};
use prepare::prepare;
#[cfg(feature = "update")]
use update::{diff, update, update_check, update_every};

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
        /// Also write INDEX.gz-ranges (see `gzip-ranges`); an existing one
        /// is rewritten for the new index without being asked.
        #[cfg(any(feature = "serve", feature = "update"))]
        #[arg(long)]
        gzip_ranges: bool,
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
        /// copies of the old index where there is no network. A directory
        /// (as `serve --bundles DIR` serves; a path ending in `/` is one,
        /// made when missing) gets it under a name from the two indexes'
        /// identities, and none when nothing changed.
        #[arg(long, value_name = "CHANGES")]
        bundle_out: Option<PathBuf>,
        /// Write nothing: say whether the upstream holds newer data (exit
        /// 0 when the index is current, 1 when there is newer data, 3 when
        /// some ranges' answers are suspect or failed every try, 2 on
        /// error). A seekless mirror is asked once (its identity); any
        /// other server every range, with the stored validators.
        #[arg(long, conflicts_with_all = ["from_bundle", "bundle_out"])]
        check: bool,
        /// Keep running: update now, then again INTERVAL after each run
        /// ends (10m, 6h, 1d, or seconds), as a sidecar or a service does;
        /// a failed run is reported and tried again at the next. Stop it
        /// at any moment: an update killed is resumed by the next run.
        #[arg(long, value_name = "INTERVAL", value_parser = span::parse,
              conflicts_with_all = ["from_bundle", "check"])]
        every: Option<std::time::Duration>,
        /// A subset: keep only the hashes seen at least N times (default:
        /// the index's own minimum, every hash for a new index). Raising
        /// an index's minimum filters it; lowering it needs --full, as the
        /// index lacks the hashes it left out.
        #[arg(long, value_name = "N", conflicts_with = "from_bundle",
              value_parser = clap::value_parser!(u64).range(1..))]
        min_count: Option<u64>,
        /// Also write INDEX.gz-ranges (see `gzip-ranges`); an existing one
        /// is brought up to date after every update without being asked.
        #[arg(long, conflicts_with = "check")]
        gzip_ranges: bool,
        /// Take range answers that remove hashes or lower counts as they
        /// come. By default such an answer (which HIBP never sends) is
        /// asked again past caches and, if still so, the range keeps what
        /// the index had and the update exits 3 naming it.
        #[arg(long, conflicts_with = "from_bundle")]
        accept_removals: bool,
    },
    /// Compress every range's answer once into INDEX.gz-ranges (gzip
    /// level 6, ~21 bytes a hash), from which `serve` sends gzip answers
    /// without compressing them, as nginx's `gzip_static` sends `.gz`
    /// files. Does nothing when the file there was made from this index;
    /// `prepare` and `update` keep an existing one current.
    #[cfg(any(feature = "serve", feature = "update"))]
    GzipRanges {
        /// The index.
        index: PathBuf,
        /// Compressing threads (default: all cores).
        #[arg(long)]
        threads: Option<usize>,
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
    /// Check every checksum and the order of every hash, and INDEX.gz-ranges
    /// when there is one (exit 1 if damaged).
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
    Okon(okon::Args),
    /// Serve the HIBP range API (GET /range/{5 hex}) from indexes, so that
    /// existing Pwned Passwords clients work unchanged.
    #[cfg(feature = "serve")]
    Serve(serve::Args),
    /// GET a URL over HTTP and print the body: a health check where there
    /// is no curl (default: a local `serve`'s /health).
    ///
    /// Exit status 0 on a 2xx answer, 1 on any other status, 2 when there is
    /// no answer (bad URL, no connection, timeout, not HTTP).
    #[cfg(feature = "serve")]
    Probe(probe::Args),
}

impl Command {
    /// Whether the command talks over sockets.
    pub fn uses_sockets(&self) -> bool {
        match self {
            #[cfg(feature = "serve")]
            Command::Serve(_) => true,
            #[cfg(feature = "update")]
            Command::Update { .. } => true,
            #[cfg(feature = "serve")]
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
            #[cfg(any(feature = "serve", feature = "update"))]
            gzip_ranges,
        } => {
            let mut options = BuildOptions::default();
            options.tmp_dir = tmp_dir;
            options.skip_invalid = skip_invalid;
            options.key_bits = key_bits;
            options.min_count = min_count;
            options.threads = threads.map_or(options.threads, |t| t.max(1));
            options.memory = memory.unwrap_or_else(seekless_pwned::default_memory);
            let built = prepare(inputs, &output, options);
            #[cfg(any(feature = "serve", feature = "update"))]
            let built = built.and_then(|code| {
                gzip_ranges::keep_current(&output, gzip_ranges)?;
                Ok(code)
            });
            built
        }
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
            check,
            every,
            min_count,
            gzip_ranges,
            accept_removals,
        } => {
            let run = |index: &std::path::Path, options: &seekless_pwned::UpdateOptions| match every
            {
                Some(every) => update_every(index, options, every, gzip_ranges),
                None if check => update_check(index, options),
                None => update(index, options, gzip_ranges),
            };
            let mut options = seekless_pwned::UpdateOptions::default();
            options.base_url = base_url;
            options.kind = if ntlm {
                seekless_pwned::Kind::Ntlm
            } else {
                seekless_pwned::Kind::Sha1
            };
            options.concurrency = usize::from(concurrency);
            options.full = full;
            options.timeout = std::time::Duration::from_secs(timeout);
            options.tries = tries;
            options.proxies = seekless_pwned::Proxies::from_env();
            options.ca_certs = ca_certs;
            options.from_bundle = from_bundle;
            options.bundle_out = bundle_out;
            options.min_count = min_count;
            options.accept_removals = accept_removals;
            run(&index, &options)
        }
        #[cfg(feature = "update")]
        Command::Diff { old, new, output } => diff(&old, &new, &output),
        Command::Stats { index, json } => stats(&index, json),
        Command::Verify { index } => verify(&index),
        #[cfg(any(feature = "serve", feature = "update"))]
        Command::GzipRanges { index, threads } => gzip_ranges::gzip_ranges(&index, threads),
        Command::Export {
            index,
            output,
            ranges,
            crlf,
            min_count,
            threads,
        } => {
            let mut options = seekless_pwned::ExportOptions::default();
            options.min_count = min_count;
            options.crlf = crlf;
            options.threads = threads.map_or(options.threads, |t| t.max(1));
            match (output, ranges) {
                (_, Some(dir)) => export_ranges(&index, &dir, &options),
                (Some(file), None) => export_file(&index, &file, &options),
                (None, None) => export_stdout(&index, &options),
            }
        }
        Command::Okon(args) => return okon::run(&args),
        #[cfg(feature = "serve")]
        Command::Serve(args) => return serve::run(args),
        #[cfg(feature = "serve")]
        Command::Probe(args) => return probe::run(&args),
    };
    report(result)
}

/// A command's result as its exit status, an error reported on one line.
fn report(result: crate::report::Result<ExitCode>) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(e) => {
            // A bad input line is reported as `FILE:LINE: what is wrong`,
            // as compilers print it.
            let located = e.downcast_ref::<seekless_pwned::Error>().is_some_and(|e| {
                matches!(
                    e.kind(),
                    ErrorKind::BadLine { .. } | ErrorKind::MixedKinds { .. }
                )
            });
            if located {
                eprintln!("{e}");
                ExitCode::from(2)
            } else {
                crate::report::fail(e)
            }
        }
    }
}
