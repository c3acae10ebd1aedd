//! `update`: the corpus straight from the HIBP range API into an index, and
//! refreshes that ask only for what changed.
//!
//! Every one of the 1,048,576 ranges is requested (`GET {base}/range/PREFIX`)
//! by a bounded window of concurrent requests whose answers are taken in
//! prefix order, checked line by line, and streamed into a [`SortedWriter`]:
//! no text file, no sort, no spill. When the index already exists, each
//! range is asked for with its stored validator (`If-None-Match`); a `304`
//! range is copied from the old index. The new index is written beside the
//! old one (`.NAME.update-partial`), checked, and only then renamed over it,
//! so an error, a Ctrl-C or a `kill -9` leaves the old index as it was. A
//! journal beside it (`.NAME.update-journal`, see the `journal` module)
//! records a checkpoint every 16,384 ranges: a rerun after an interruption
//! or an error goes on from the last checkpoint instead of fetching every
//! range again. Both are gone once the new index is in place. The partial
//! index is locked while an update runs, so a second update of the same
//! index is refused.

pub(crate) mod bundle;
pub(crate) mod client;
pub(crate) mod journal;

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::StreamExt;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT_ENCODING, CONTENT_ENCODING, ETAG, IF_NONE_MATCH, RETRY_AFTER};

use crate::build::writer::SortedWriter;
use crate::error::{Error, ErrorKind, Result};
use crate::format::hash::{Key, Kind};
use crate::format::layout::PAGE;
use crate::format::source::{RANGES, Source};
use crate::range::gzip::gunzip_whole;
use crate::range::parse::{MAX_RANGE_BODY, parse_range};
use crate::range::prefix_hex;
use crate::range::validator::range_digest;
use crate::read::index::Index;
use crate::update::bundle::{BundleEntry, BundleHeader, BundleReader, Digests, hex_identity};
use crate::update::client::{Proxies, describe, refused_certificate};
use crate::update::journal::{Journal, Record, Terms, UpdateSummary};

/// The codings asked for: gzip preferred. Range bodies are random hex, which
/// brotli packs only ~3% smaller than gzip, and brotli-decompressor inflates
/// them 4-5 times slower than libdeflate (measured: ~1 ms against ~0.2 ms a
/// real-size range).
const ACCEPTED: &str = "gzip, br;q=0.5";

/// Requests in flight at once, by default. Chosen by measurement: on
/// loopback 256 in flight took 77.7 s for a full update against 86.9 s for
/// 64 and 85.5 s for 16, for 12 MiB more memory (BENCHMARKS.md); and to
/// keep a 1 Gbit/s link busy (~7,500 ranges a second) across the ~30 ms a
/// range answer takes over the internet, about 225 must be in flight.
pub const DEFAULT_CONCURRENCY: u16 = 256;

/// Where the corpus is published.
pub const DEFAULT_BASE_URL: &str = "https://api.pwnedpasswords.com";

/// How [`update`] fetches.
#[derive(Debug, Clone)]
pub struct UpdateOptions {
    /// The API's base URL; ranges are `{base_url}/range/{PREFIX}`.
    pub base_url: String,
    /// SHA-1 or NTLM (`?mode=ntlm`).
    pub kind: Kind,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// Ignore stored validators: fetch every range whole.
    pub full: bool,
    /// Longest wait for one answer, from sending to its last byte.
    pub timeout: Duration,
    /// Tries per range before the update stops with an error naming it.
    pub tries: u32,
    /// First wait before a retry; each further retry waits twice as long
    /// (up to 30 s), with jitter, unless the server says `Retry-After`.
    pub backoff: Duration,
    /// Worker threads for requests and checking answers (default: all cores).
    pub threads: usize,
    /// The HTTP proxies requests go through (default: the environment's,
    /// read as curl reads it; see [`Proxies::from_env`]).
    pub proxies: Proxies,
    /// PEM files of CA certificates trusted for TLS beside the system's
    /// store (default: none). Each file may hold several; one that cannot
    /// be read or holds none stops the update before any request.
    pub ca_certs: Vec<PathBuf>,
    /// Apply this delta bundle (docs/format-bundle.md) instead of asking
    /// the network: the index must be the one the bundle was made for.
    pub from_bundle: Option<PathBuf>,
    /// Also write the bundle of what this update changed here (written
    /// under a temporary name, renamed when complete).
    pub bundle_out: Option<PathBuf>,
    /// Keep only the hashes seen at least this many times (a subset).
    /// `None` keeps the existing index's minimum (every hash for a new
    /// one). A higher minimum than the index's filters the ranges copied
    /// from it too; a lower one needs [`full`](UpdateOptions::full), since
    /// the index lacks the hashes it left out.
    pub min_count: Option<u64>,
}

impl Default for UpdateOptions {
    fn default() -> Self {
        UpdateOptions {
            base_url: DEFAULT_BASE_URL.to_string(),
            kind: Kind::Sha1,
            concurrency: usize::from(DEFAULT_CONCURRENCY),
            full: false,
            timeout: Duration::from_secs(30),
            tries: 8,
            backoff: Duration::from_millis(250),
            threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
            proxies: Proxies::from_env(),
            ca_certs: Vec::new(),
            from_bundle: None,
            bundle_out: None,
            min_count: None,
        }
    }
}

/// Told about an update as it goes; every method has an empty default.
pub trait UpdateProgress: Sync {
    /// An interrupted update goes on: ranges before `from` are done.
    fn resumed(&self, _from: u32) {}
    /// A range is done (in prefix order): bytes received for it (0 when not
    /// modified) and hashes it holds.
    fn range(&self, _received: u64, _hashes: u64) {}
}

/// An [`UpdateProgress`] that ignores everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoUpdateProgress;

impl UpdateProgress for NoUpdateProgress {}

/// Builds `path` from the range API, or refreshes it when it exists (see the
/// module documentation); or, with [`UpdateOptions::from_bundle`], applies
/// a delta bundle with no network.
pub fn update(
    path: &Path,
    options: &UpdateOptions,
    progress: &dyn UpdateProgress,
) -> Result<UpdateSummary> {
    let started = Instant::now();
    let io_err = |e| Error::io(path.to_path_buf(), e);
    // A bundle is checked whole (every size, every range's lines, the
    // checksum) before any file is touched; proxies and CA certificates
    // likewise before an online update.
    let (bundle, client) = match &options.from_bundle {
        Some(bundle) => (Some(check_bundle(bundle, options.kind)?), None),
        None => (None, Some(client::build(options)?)),
    };
    let old = match Index::open(path) {
        Ok(index) => Some(index),
        Err(e) if matches!(e.kind(), ErrorKind::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound) => {
            None
        }
        Err(e) => return Err(e),
    };
    if let Some(old) = &old
        && old.kind() != options.kind
    {
        return Err(ErrorKind::WrongKind {
            found: old.kind(),
            wanted: options.kind,
        }
        .into());
    }
    if let Some(old) = &old
        && old.stats().is_compact()
    {
        return Err(ErrorKind::Compact {
            key_bits: old.stats().key_bits,
        }
        .into());
    }
    if let (Some((bundle_path, header)), old) = (&bundle, &old) {
        let hashes = old.as_ref().map_or(0, Index::len);
        if hashes != header.old_hashes {
            return Err(ErrorKind::BadBundle {
                what: format!(
                    "{} applies to an index of {} hashes; {} holds {hashes} (a bundle for another index)",
                    bundle_path.display(),
                    header.old_hashes,
                    path.display()
                ),
            }
            .into());
        }
    }
    let held = old.as_ref().map_or(1, |old| old.stats().min_count);
    let min_count = min_count(held, options)?;
    let validators = match &old {
        Some(old) if !options.full || bundle.is_some() => old.source()?,
        _ => None,
    };
    let base = options.base_url.trim_end_matches('/').to_string();
    let terms = Terms {
        kind: options.kind,
        full: options.full,
        url: match &bundle {
            Some((_, header)) => format!("bundle:{}", hex_identity(&header.new_identity)),
            None => base.clone(),
        },
        old: match &old {
            Some(_) => identity(path).map_err(io_err)?,
            None => (0, 0),
        },
        min_count,
    };
    let (partial_path, journal_path) = beside(path)?;
    let mut source = Source::new(base.clone(), 0);
    let mut summary = UpdateSummary::default();
    // Since the last checkpoint: validators, and ranges seen.
    let mut fresh_validators: Vec<Option<Vec<u8>>> = Vec::new();
    // The partial index, locked for as long as this update runs: a second
    // update of the same index stops here instead of writing over it.
    let partial = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&partial_path)
        .map_err(|e| Error::io(partial_path.clone(), e))?;
    match partial.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            return Err(Error::io(
                path.to_path_buf(),
                std::io::Error::new(
                    std::io::ErrorKind::WouldBlock,
                    "another update of this index is running",
                ),
            ));
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(Error::io(partial_path.clone(), e)),
    }
    let partial_err = |e| Error::io(partial_path.clone(), e);
    let resumed = match Journal::open(&journal_path, &terms)
        .map_err(|e| Error::io(journal_path.clone(), e))?
    {
        Some((journal, records)) if !records.is_empty() => Some((journal, records)),
        _ => None,
    };
    let (partial, mut journal, mut writer, start) = match resumed {
        Some((journal, records)) => {
            let last = records.last().expect("not empty").clone();
            let pages_end = PAGE as u64 * (1 + last.checkpoint.pages);
            let len = partial.metadata().map_err(partial_err)?.len();
            if len < pages_end {
                return Err(Error::corrupt(format!(
                    "{} is shorter than its journal says; remove it and {} to start over",
                    partial_path.display(),
                    journal_path.display()
                )));
            }
            partial.set_len(pages_end).map_err(partial_err)?;
            let mut dir = Vec::new();
            for record in &records {
                dir.extend_from_slice(&record.checkpoint.dir);
                for v in &record.validators {
                    source.push_validator(v.as_deref());
                }
            }
            summary = last.summary.clone();
            summary.checked = last.next_prefix;
            summary.resumed_from = last.next_prefix;
            progress.resumed(last.next_prefix);
            let mut out = BufWriter::with_capacity(1 << 20, clone(&partial, &partial_path)?);
            out.seek(SeekFrom::End(0)).map_err(partial_err)?;
            let writer = SortedWriter::resume(out, options.kind, &last.checkpoint, &dir)?
                .with_min_count(min_count);
            (partial, journal, writer, last.next_prefix)
        }
        None => {
            partial.set_len(0).map_err(partial_err)?;
            let journal = Journal::create(&journal_path, &terms)
                .map_err(|e| Error::io(journal_path.clone(), e))?;
            let out = BufWriter::with_capacity(1 << 20, clone(&partial, &partial_path)?);
            // The old index's size, unless another minimum makes it another.
            let expected = old.as_ref().filter(|_| min_count == held).map(Index::len);
            let writer = SortedWriter::new(out, options.kind, expected)?.with_min_count(min_count);
            (partial, journal, writer, 0)
        }
    };
    summary.created = old.is_none();

    let mut answers = match (&bundle, client) {
        (Some((bundle_path, header)), _) => {
            Answers::bundle(bundle_path, header, old.as_ref(), validators, start)?
        }
        (None, Some(client)) => Answers::network(
            Fetcher {
                client,
                base,
                kind: options.kind,
                tries: options.tries.max(1),
                backoff: options.backoff,
                validators,
            },
            options,
            start,
        )?,
        (None, None) => unreachable!("an online update has a client"),
    };

    let mut old_range = Vec::new();
    let result = (|| -> Result<()> {
        for prefix in start..RANGES {
            let answer = answers.next(prefix)?;
            summary.checked += 1;
            summary.retries += u64::from(answer.retries);
            old_range.clear();
            if let Some(old) = &old {
                old_range = old.range(u64::from(prefix), 20)?;
            }
            let (received, hashes) = match answer.body {
                Body::NotModified { validator } => {
                    summary.not_modified += 1;
                    answers.digested(&old_range, None);
                    // A minimum raised above the old index's leaves some out.
                    let before = old_range.len();
                    old_range.retain(|&(_, count)| count >= min_count);
                    if old_range.len() < before {
                        summary.changed += 1;
                        summary.removed += (before - old_range.len()) as u64;
                    }
                    for &(key, count) in &old_range {
                        writer.push(key, count)?;
                    }
                    fresh_validators.push(validator);
                    (0, old_range.len())
                }
                Body::Range {
                    validator,
                    mut entries,
                    received,
                } => {
                    entries.retain(|&(_, count)| count >= min_count);
                    summary.received += received;
                    let diff = Diff::of(&old_range, &entries);
                    if diff != Diff::default() || old.is_none() {
                        summary.changed += 1;
                    }
                    summary.added += diff.added;
                    summary.removed += diff.removed;
                    summary.counts_changed += diff.counts_changed;
                    answers.digested(&old_range, Some(&entries));
                    for &(key, count) in &entries {
                        writer.push(key, count)?;
                    }
                    fresh_validators.push(validator);
                    (received, entries.len())
                }
            };
            progress.range(received, hashes as u64);
            let next_prefix = prefix + 1;
            if next_prefix % CHECKPOINT_RANGES == 0
                && next_prefix < RANGES
                && writer.last().is_some()
            {
                // Pages first, durable; then the record that points at them.
                let checkpoint = writer.checkpoint()?;
                partial.sync_data().map_err(partial_err)?;
                for v in &fresh_validators {
                    source.push_validator(v.as_deref());
                }
                let record = Record {
                    next_prefix,
                    checkpoint,
                    summary: summary.clone(),
                    validators: std::mem::take(&mut fresh_validators),
                };
                journal
                    .append(&record)
                    .map_err(|e| Error::io(journal_path.clone(), e))?;
            }
        }
        Ok(())
    })();
    let bundled = answers.finish();
    // On an error the partial index and its journal stay: a rerun goes on
    // from the last checkpoint. What failed to be written is the partial
    // index (the journal's errors name it).
    result.map_err(|e| e.with_path(&partial_path))?;

    for v in &fresh_validators {
        source.push_validator(v.as_deref());
    }
    source.updated = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    if let Some((_, header)) = &bundle {
        // The index the bundle makes says where its hashes came from.
        source.url = header.url.clone();
        source.updated = header.updated;
    }
    let (buffered, written) = writer
        .finish(Some(&source))
        .map_err(|e| e.with_path(&partial_path))?;
    buffered
        .into_inner()
        .map_err(|e| partial_err(e.into_error()))?;
    partial.sync_all().map_err(partial_err)?;
    // Checked before it takes the old one's place: header, size, directory
    // and source checksums, and the totals written.
    let check = Index::from_file(clone(&partial, &partial_path)?)
        .map_err(|e| e.with_path(&partial_path))?;
    if check.len() != written.hashes || check.source()?.as_ref() != Some(&source) {
        return Err(Error::corrupt(
            "the new index does not read back as written",
        ));
    }
    if let (Some((bundle_path, header)), Some(digests)) = (&bundle, bundled) {
        // The base's identity and the result's: a bundle made for another
        // index, or one that does not make what it says, is refused and
        // the index left as it was.
        let refused = |what: String| -> Error {
            let _ = std::fs::remove_file(&partial_path);
            let _ = std::fs::remove_file(&journal_path);
            ErrorKind::BadBundle { what }.into()
        };
        let (old_identity, new_identity) = digests;
        if old_identity != header.old_identity {
            return Err(refused(format!(
                "{} was made for the index of identity {}; {} has identity {} (a bundle for another index)",
                bundle_path.display(),
                hex_identity(&header.old_identity),
                path.display(),
                hex_identity(&old_identity)
            )));
        }
        if new_identity != header.new_identity
            || written.hashes != header.new_hashes
            || check.stats().total_count != header.new_total
        {
            return Err(refused(format!(
                "applied, {} does not make the index it names (identity {}, {} hashes; made {}, {} hashes)",
                bundle_path.display(),
                hex_identity(&header.new_identity),
                header.new_hashes,
                hex_identity(&new_identity),
                written.hashes
            )));
        }
    }
    if let Some(out) = &options.bundle_out {
        crate::update::bundle::write_bundle(out, old.as_ref(), &check)?;
    }
    drop(check);
    drop(old);
    std::fs::rename(&partial_path, path).map_err(io_err)?;
    drop(journal);
    std::fs::remove_file(&journal_path).map_err(|e| Error::io(journal_path.clone(), e))?;
    sync_parent(path);
    summary.hashes = written.hashes;
    summary.min_count = min_count;
    summary.bytes = written.bytes;
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// The minimum count of the new index, from the one asked for and the
/// old index's (`held`, 1 for none): refused where it cannot be had.
fn min_count(held: u64, options: &UpdateOptions) -> Result<u64> {
    let asked = options.min_count.map_or(held, |m| m.max(1));
    let refused = |what| -> Result<u64> {
        Err(ErrorKind::MinCount {
            index: held,
            asked,
            what,
        }
        .into())
    };
    if asked != held && options.from_bundle.is_some() {
        return refused(
            "a delta bundle makes an index of the same minimum as the one it applies to",
        );
    }
    if asked != held && options.bundle_out.is_some() {
        return refused(
            "a delta bundle joins only indexes of the same minimum (a new index counts as holding every hash); copy the new index whole instead",
        );
    }
    if asked < held && !options.full {
        return refused(
            "the ranges the server reports unchanged are copied from the index, which lacks the hashes it left out; add --full to download every range again",
        );
    }
    Ok(asked)
}

/// Checks the whole bundle at `path` (every size, the order of its
/// entries, every range's lines, the checksum) and that it is of `kind`;
/// its header.
fn check_bundle(path: &Path, kind: Kind) -> Result<(PathBuf, BundleHeader)> {
    let named = |e: Error| match e.into_kind() {
        ErrorKind::BadBundle { what } => ErrorKind::BadBundle {
            what: format!("{}: {what}", path.display()),
        }
        .into(),
        other => Error::from(other).with_path(path),
    };
    let file = File::open(path).map_err(|e| Error::io(path.to_path_buf(), e))?;
    let mut reader = BundleReader::new(file).map_err(named)?;
    let header = reader.header().clone();
    if header.kind != kind {
        return Err(named(
            ErrorKind::BadBundle {
                what: format!(
                    "a bundle of {} indexes, not {kind} (add or drop --ntlm)",
                    header.kind
                ),
            }
            .into(),
        ));
    }
    let mut entries = Vec::new();
    while let Some(entry) = reader.next_entry().map_err(named)? {
        if let Some(lines) = &entry.lines {
            entries.clear();
            parse_range(kind, entry.prefix, lines, &mut entries).map_err(|e| {
                named(
                    ErrorKind::BadBundle {
                        what: format!("range {}: {e}", prefix_hex(entry.prefix)),
                    }
                    .into(),
                )
            })?;
        }
    }
    reader.finish().map_err(named)?;
    Ok((path.to_path_buf(), header))
}

/// Where the ranges' answers come from: the network, or a bundle.
enum Answers {
    Network {
        answers: tokio::sync::mpsc::Receiver<Result<Answer>>,
        runtime: tokio::runtime::Runtime,
    },
    Bundle {
        reader: Box<BundleReader<File>>,
        next: Option<BundleEntry>,
        kind: Kind,
        /// The validators of the index the bundle applies to.
        validators: Option<Source>,
        /// The digests of the ranges of the index it applies to, and of
        /// the one it makes.
        old: Digests,
        new: Digests,
    },
}

impl Answers {
    /// Ranges from `start` on fetched by a window of concurrent requests,
    /// taken in prefix order.
    fn network(fetcher: Fetcher, options: &UpdateOptions, start: u32) -> Result<Answers> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(options.threads.max(1))
            .enable_all()
            .build()
            .map_err(|e| Error::io(None, e))?;
        let (tx, answers) = tokio::sync::mpsc::channel(options.concurrency.max(1));
        let concurrency = options.concurrency.max(1);
        runtime.spawn(async move {
            let fetcher = Arc::new(fetcher);
            let mut answers = futures_util::stream::iter(start..RANGES)
                .map(|prefix| {
                    let fetcher = Arc::clone(&fetcher);
                    tokio::spawn(async move { fetcher.fetch(prefix).await })
                })
                .buffered(concurrency);
            while let Some(joined) = answers.next().await {
                let answer = joined
                    .unwrap_or_else(|e| Err(Error::io(None, std::io::Error::other(e.to_string()))));
                let failed = answer.is_err();
                if tx.send(answer).await.is_err() || failed {
                    break;
                }
            }
        });
        Ok(Answers::Network { answers, runtime })
    }

    /// Ranges from `start` on from the bundle at `path` (checked whole
    /// before), applied to `old`. The digests of the ranges before `start`
    /// (done by an earlier run) are taken from `old` and the bundle.
    fn bundle(
        path: &Path,
        header: &BundleHeader,
        old: Option<&Index>,
        validators: Option<Source>,
        start: u32,
    ) -> Result<Answers> {
        let file = File::open(path).map_err(|e| Error::io(path.to_path_buf(), e))?;
        let mut reader = BundleReader::new(file).map_err(|e| e.with_path(path))?;
        let kind = header.kind;
        let (mut old_digests, mut new_digests) =
            (Digests::with_capacity(), Digests::with_capacity());
        let mut next = reader.next_entry()?;
        let mut range = Vec::new();
        for prefix in 0..start {
            range.clear();
            if let Some(old) = old {
                old.range_into(u64::from(prefix), 20, &mut range)?;
            }
            let digest = range_digest(kind, &range);
            old_digests.push(digest);
            match next.take() {
                Some(entry) if entry.prefix == prefix => {
                    let digest = match &entry.lines {
                        Some(lines) => {
                            range.clear();
                            parse_range(kind, prefix, lines, &mut range)?;
                            range_digest(kind, &range)
                        }
                        None => digest,
                    };
                    new_digests.push(digest);
                    next = reader.next_entry()?;
                }
                other => {
                    new_digests.push(digest);
                    next = other;
                }
            }
        }
        Ok(Answers::Bundle {
            reader: Box::new(reader),
            next,
            kind,
            validators,
            old: old_digests,
            new: new_digests,
        })
    }

    /// The answer for `prefix` (asked in order).
    fn next(&mut self, prefix: u32) -> Result<Answer> {
        match self {
            Answers::Network { answers, .. } => answers.blocking_recv().ok_or_else(|| {
                Error::io(None, std::io::Error::other("the fetching tasks stopped"))
            })?,
            Answers::Bundle {
                reader,
                next,
                kind,
                validators,
                ..
            } => {
                let body = match next.take() {
                    Some(entry) if entry.prefix == prefix => {
                        *next = reader.next_entry()?;
                        match entry.lines {
                            Some(lines) => {
                                let mut entries = Vec::with_capacity(lines.len() / 40 + 1);
                                parse_range(*kind, prefix, &lines, &mut entries)?;
                                Body::Range {
                                    validator: entry.validator,
                                    entries,
                                    received: lines.len() as u64,
                                }
                            }
                            None => Body::NotModified {
                                validator: entry.validator,
                            },
                        }
                    }
                    other => {
                        *next = other;
                        Body::NotModified {
                            validator: validators
                                .as_ref()
                                .and_then(|s| s.validator(prefix))
                                .map(<[u8]>::to_vec),
                        }
                    }
                };
                Ok(Answer { retries: 0, body })
            }
        }
    }

    /// Notes a range's content before (`old`) and after (`new`; `None`:
    /// the same), for the identities a bundle names.
    fn digested(&mut self, old: &[(Key, u64)], new: Option<&[(Key, u64)]>) {
        if let Answers::Bundle {
            kind,
            old: old_digests,
            new: new_digests,
            ..
        } = self
        {
            let before = range_digest(*kind, old);
            old_digests.push(before);
            new_digests.push(new.map_or(before, |new| range_digest(*kind, new)));
        }
    }

    /// Stops fetching; for a bundle, the identities of the index it was
    /// applied to and of the one it made, once every range was answered.
    fn finish(self) -> Option<([u8; 32], [u8; 32])> {
        match self {
            Answers::Network { answers, runtime } => {
                drop(answers);
                runtime.shutdown_background();
                None
            }
            Answers::Bundle { kind, old, new, .. } => {
                (old.len() == RANGES as usize).then(|| (old.identity(kind), new.identity(kind)))
            }
        }
    }
}

/// Ranges between checkpoints of the journal (64 in a full update).
const CHECKPOINT_RANGES: u32 = 1 << 14;

/// The partial index and the journal of an update of `path`, beside it.
fn beside(path: &Path) -> Result<(PathBuf, PathBuf)> {
    let name = path.file_name().ok_or_else(|| {
        Error::io(
            path.to_path_buf(),
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file name"),
        )
    })?;
    let name = name.to_string_lossy();
    Ok((
        path.with_file_name(format!(".{name}.update-partial")),
        path.with_file_name(format!(".{name}.update-journal")),
    ))
}

/// The length and header checksum of the index at `path`: what a journal
/// records of the index it refreshes.
fn identity(path: &Path) -> std::io::Result<(u64, u32)> {
    let mut file = File::open(path)?;
    let mut header = [0u8; 64];
    file.read_exact(&mut header)?;
    Ok((file.metadata()?.len(), crc32c::crc32c(&header)))
}

fn clone(file: &File, path: &Path) -> Result<File> {
    file.try_clone()
        .map_err(|e| Error::io(path.to_path_buf(), e))
}

/// Makes a rename in `path`'s directory durable, where directories can be
/// synced.
fn sync_parent(path: &Path) {
    #[cfg(unix)]
    if let Some(dir) = path.parent() {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
}

/// How a new range differs from the old one.
#[derive(Debug, Default, PartialEq, Eq)]
struct Diff {
    added: u64,
    removed: u64,
    counts_changed: u64,
}

impl Diff {
    fn of(old: &[(Key, u64)], new: &[(Key, u64)]) -> Diff {
        let mut diff = Diff::default();
        let (mut i, mut j) = (0, 0);
        while i < old.len() && j < new.len() {
            match old[i].0.cmp(&new[j].0) {
                std::cmp::Ordering::Less => {
                    diff.removed += 1;
                    i += 1;
                }
                std::cmp::Ordering::Greater => {
                    diff.added += 1;
                    j += 1;
                }
                std::cmp::Ordering::Equal => {
                    diff.counts_changed += u64::from(old[i].1 != new[j].1);
                    i += 1;
                    j += 1;
                }
            }
        }
        diff.removed += (old.len() - i) as u64;
        diff.added += (new.len() - j) as u64;
        diff
    }
}

/// One range's answer, checked.
struct Answer {
    retries: u32,
    body: Body,
}

enum Body {
    /// `304`: the stored validator still holds (from a bundle: the range
    /// is the same; its validator, if any).
    NotModified { validator: Option<Vec<u8>> },
    /// `200`: the range's hashes and its new validator.
    Range {
        validator: Option<Vec<u8>>,
        entries: Vec<(Key, u64)>,
        received: u64,
    },
}

/// What a retry waits for, and why.
enum Fault {
    /// Worth another try, after the usual backoff or the server's word.
    Retry {
        what: String,
        after: Option<Duration>,
    },
    /// Trying again would give the same answer.
    Final(String),
}

struct Fetcher {
    client: reqwest::Client,
    base: String,
    kind: Kind,
    tries: u32,
    backoff: Duration,
    validators: Option<Source>,
}

impl Fetcher {
    async fn fetch(&self, prefix: u32) -> Result<Answer> {
        let mut url = format!("{}/range/{}", self.base, prefix_hex(prefix));
        if self.kind == Kind::Ntlm {
            url.push_str("?mode=ntlm");
        }
        let validator = self.validators.as_ref().and_then(|s| s.validator(prefix));
        let mut last = String::new();
        let mut tries = 0;
        for attempt in 0..self.tries {
            tries += 1;
            match self.try_once(&url, prefix, validator).await {
                Ok(body) => {
                    return Ok(Answer {
                        retries: attempt,
                        body,
                    });
                }
                Err(Fault::Final(what)) => {
                    last = what;
                    break;
                }
                Err(Fault::Retry { what, after }) => {
                    last = what;
                    if attempt + 1 < self.tries {
                        let wait = after.unwrap_or_else(|| self.backoff_for(prefix, attempt));
                        tokio::time::sleep(wait).await;
                    }
                }
            }
        }
        Err(ErrorKind::Fetch {
            prefix: prefix_hex(prefix),
            what: last,
            tries,
        }
        .into())
    }

    /// Exponential backoff with jitter (0.5–1.5 times), at most 30 s.
    fn backoff_for(&self, prefix: u32, attempt: u32) -> Duration {
        let base = self
            .backoff
            .saturating_mul(1 << attempt.min(16))
            .min(Duration::from_secs(30));
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let noise = splitmix(u64::from(prefix) << 32 | u64::from(nanos ^ attempt));
        base.mul_f64(0.5 + (noise >> 11) as f64 / (1u64 << 53) as f64)
    }

    async fn try_once(
        &self,
        url: &str,
        prefix: u32,
        validator: Option<&[u8]>,
    ) -> std::result::Result<Body, Fault> {
        let retry = |what: String| Fault::Retry { what, after: None };
        let mut request = self.client.get(url).header(ACCEPT_ENCODING, ACCEPTED);
        if let Some(v) = validator {
            request = request.header(IF_NONE_MATCH, v);
        }
        let mut response = request
            .send()
            .await
            .map_err(|e| match refused_certificate(&e) {
                Some(what) => Fault::Final(what),
                None => retry(describe(&e)),
            })?;
        let status = response.status();
        if status == StatusCode::NOT_MODIFIED {
            return match validator {
                Some(v) => Ok(Body::NotModified {
                    validator: Some(v.to_vec()),
                }),
                None => Err(retry(
                    "304 Not Modified to a request without a validator".into(),
                )),
            };
        }
        if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
            return Err(Fault::Retry {
                what: format!("HTTP {status}"),
                after: retry_after(response.headers()),
            });
        }
        if status != StatusCode::OK {
            return Err(Fault::Final(format!("HTTP {status}")));
        }
        let new_validator = response.headers().get(ETAG).map(|v| v.as_bytes().to_vec());
        let encoding = response
            .headers()
            .get(CONTENT_ENCODING)
            .map(|v| v.as_bytes().to_ascii_lowercase());
        let mut wire = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| retry(format!("body: {}", describe(&e))))?
        {
            if wire.len() + chunk.len() > MAX_RANGE_BODY {
                return Err(retry(format!("body over {MAX_RANGE_BODY} bytes")));
            }
            wire.extend_from_slice(&chunk);
        }
        let text = decode_body(encoding.as_deref(), &wire).map_err(retry)?;
        let mut entries = Vec::with_capacity(text.len() / 40 + 1);
        parse_range(self.kind, prefix, &text, &mut entries).map_err(|e| retry(e.to_string()))?;
        Ok(Body::Range {
            validator: new_validator,
            entries,
            received: wire.len() as u64,
        })
    }
}

/// A range answer's body as sent, decoded by its `Content-Encoding`
/// (`gzip`, `br` or none) to at most [`MAX_RANGE_BODY`] bytes; the error
/// says what is wrong with it. What [`update`] does with every answer before
/// [`parse_range`] checks it.
pub fn decode_body(encoding: Option<&[u8]>, wire: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let limit = MAX_RANGE_BODY as u64 + 1;
    let mut out = Vec::new();
    let read = match encoding {
        None | Some(b"identity") => return Ok(wire.to_vec()),
        Some(b"gzip" | b"x-gzip") => {
            if let Some(text) = gunzip_whole(wire, MAX_RANGE_BODY) {
                return Ok(text);
            }
            // Whatever libdeflate refuses (several members, a lying size)
            // goes through the streaming decoder, which says what is wrong.
            flate2::read::MultiGzDecoder::new(wire)
                .take(limit)
                .read_to_end(&mut out)
        }
        Some(b"br") => brotli_decompressor::Decompressor::new(wire, 4096)
            .take(limit)
            .read_to_end(&mut out),
        Some(other) => {
            return Err(format!(
                "unknown Content-Encoding {:?}",
                String::from_utf8_lossy(other)
            ));
        }
    };
    read.map_err(|e| format!("compressed body: {e}"))?;
    if out.len() > MAX_RANGE_BODY {
        return Err(format!("body decodes to over {MAX_RANGE_BODY} bytes"));
    }
    Ok(out)
}

/// `Retry-After` in seconds (an HTTP date is taken as a short wait), at
/// most two minutes.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    let seconds = value.parse::<u64>().unwrap_or(1);
    Some(Duration::from_secs(seconds.min(120)))
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u64) -> Key {
        Key {
            hi: n,
            mid: 0,
            lo: 0,
        }
    }

    #[test]
    fn diffs_count_added_removed_and_changed() {
        let old = [(key(1), 5), (key(2), 1), (key(4), 7)];
        let new = [(key(2), 1), (key(3), 1), (key(4), 8), (key(5), 2)];
        assert_eq!(
            Diff::of(&old, &new),
            Diff {
                added: 2,
                removed: 1,
                counts_changed: 1
            }
        );
        assert_eq!(Diff::of(&old, &old), Diff::default());
        assert_eq!(Diff::of(&[], &new).added, 4);
        assert_eq!(Diff::of(&old, &[]).removed, 3);
    }

    #[test]
    fn bodies_decode_within_the_limit() {
        use std::io::Write;
        let text = b"1E4C9B93F3F0682250B6CF8331B7EE68FD8:1".repeat(10);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&text).unwrap();
        let gz = gz.finish().unwrap();
        assert_eq!(decode_body(Some(b"gzip"), &gz).unwrap(), text);
        assert_eq!(decode_body(None, &text).unwrap(), text);
        assert!(
            decode_body(Some(b"gzip"), &gz[..gz.len() - 9]).is_err(),
            "truncated"
        );
        assert!(decode_body(Some(b"zstd"), &gz).is_err());
        // Two members, as concatenated files are: the streaming decoder.
        let two = [gz.clone(), gz.clone()].concat();
        assert!(gunzip_whole(&two, MAX_RANGE_BODY).is_none());
        assert_eq!(decode_body(Some(b"gzip"), &two).unwrap(), text.repeat(2));
        // A trailer that states a wrong size; garbage after the member.
        let mut lying = gz.clone();
        let n = lying.len();
        lying[n - 4] ^= 1;
        assert!(gunzip_whole(&lying, MAX_RANGE_BODY).is_none());
        assert!(decode_body(Some(b"gzip"), &lying).is_err());
        let trailing = [&gz[..], b"junk"].concat();
        assert!(decode_body(Some(b"gzip"), &trailing).is_err());
        // A small body that inflates past the limit.
        let mut bomb = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        bomb.write_all(&vec![b'0'; MAX_RANGE_BODY + 10]).unwrap();
        let bomb = bomb.finish().unwrap();
        assert!(bomb.len() < 100_000);
        assert!(decode_body(Some(b"gzip"), &bomb).is_err());
    }
}
