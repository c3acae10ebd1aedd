//! An update run from start to end: the old index checked, the partial
//! index locked and started or resumed from its journal, every range taken
//! in order with checkpoints, then the new index read back, checked and
//! renamed over the old one.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::bundle::{BundleHeader, BundleReader};
use crate::error::{Error, ErrorKind, Result};
use crate::format::hash::{Key, Kind};
use crate::format::layout::PAGE;
use crate::format::source::{RANGES, Source};
use crate::range::parse::parse_range;
use crate::range::prefix_hex;
use crate::read::identity::Digests;
use crate::read::identity::identity_hex;
use crate::read::index::Index;
use crate::update::answers::Answers;
use crate::update::applied;
use crate::update::bundle::{bundle_name, is_bundle_dir, write_bundle};
use crate::update::client;
use crate::update::fetch::Fetcher;
use crate::update::files::{Files, beside, lock_partial, sync_parent};
use crate::update::journal::{Journal, Record, Terms, UpdatePath, UpdateSummary};
use crate::update::options::{UpdateOptions, UpdateProgress};
use crate::update::suspect::{Diff, Failures, Rule, Settled, Taken, settle};
use crate::write::sorted::SortedWriter;
use crate::write::sorted::Written;

/// Updates `path` by the way `route` names, chosen by [`update`](super::update()):
/// from the bundle of [`UpdateOptions::from_bundle`] with no network, or
/// range by range from the range API (building it when it does not exist).
pub(super) fn run(
    path: &Path,
    options: &UpdateOptions,
    progress: &dyn UpdateProgress,
    route: UpdatePath,
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
    let old = open_old(path, options)?;
    if let Some(bundle) = &bundle {
        // Applied already (the same command again, after a kill once the
        // new index was in place): nothing to do.
        if let Some(index) = &old
            && applied::already(index, bundle)?
        {
            return applied::nothing_to_do(path, index, started);
        }
        fits(path, old.as_ref(), bundle)?;
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
            Some((_, header)) => format!("bundle:{}", identity_hex(&header.new_identity)),
            None => base.clone(),
        },
        old: match &old {
            Some(_) => identity(path).map_err(io_err)?,
            None => (0, 0),
        },
        min_count,
    };
    let (partial_path, journal_path) = beside(path)?;
    let partial = lock_partial(path, &partial_path)?;
    // The old index's size, unless another minimum makes it another.
    let expected = old.as_ref().filter(|_| min_count == held).map(Index::len);
    let mut filling = Filling::start(
        Files {
            partial: &partial,
            partial_path: &partial_path,
            journal_path: &journal_path,
        },
        &terms,
        Source::new(base.clone(), 0),
        expected,
        progress,
    )?;
    filling.summary.created = old.is_none();
    let start = filling.start;

    let mut answers = match (&bundle, client) {
        (Some((bundle_path, header)), _) => {
            Answers::bundle(bundle_path, header, old.as_ref(), validators, start)?
        }
        (None, Some(client)) => Answers::network(
            Fetcher::new(
                client,
                base,
                options.kind,
                options.tries.max(1),
                options.backoff,
                validators,
            ),
            options,
            start,
        )?,
        (None, None) => unreachable!("an online update has a client"),
    };
    let rule = Rule::of(options, &answers);
    let result = filling.take_ranges(&mut answers, old.as_ref(), min_count, rule, progress);
    let identities = answers.finish();
    // On an error the partial index and its journal stay: a rerun goes on
    // from the last checkpoint. What failed to be written is the partial
    // index (the journal's errors name it).
    result.map_err(|e| e.with_path(&partial_path))?;

    let (check, written, journal, mut summary) =
        filling.finish(bundle.as_ref().map(|(_, header)| header), identities.new)?;
    if let (Some((bundle_path, header)), Some(old), Some(new)) =
        (&bundle, identities.old, identities.new)
    {
        let digests = (old, new);
        let files = Files {
            partial: &partial,
            partial_path: &partial_path,
            journal_path: &journal_path,
        };
        check_bundled(path, bundle_path, header, digests, &written, &check, &files)?;
    }
    if let Some(out) = &options.bundle_out {
        summary.bundle = bundle_out(out, old.as_ref(), &check, identities.new)?;
    }
    drop(check);
    drop(old);
    crate::tmpfile::replace(&partial_path, path).map_err(io_err)?;
    drop(journal);
    std::fs::remove_file(&journal_path).map_err(|e| Error::io(journal_path.clone(), e))?;
    sync_parent(path);
    summary.hashes = written.hashes;
    summary.min_count = min_count;
    summary.bytes = written.bytes;
    summary.seconds = started.elapsed().as_secs_f64();
    summary.path = route;
    Ok(summary)
}

/// Writes the bundle that makes `new` of `old` to `out`, or into the
/// directory `out` (made when missing, for a path ending in a separator)
/// under a name from both identities (none when they are the same:
/// nothing to carry). The path written, if any.
fn bundle_out(
    out: &Path,
    old: Option<&Index>,
    new: &Index,
    new_identity: Option<[u8; 32]>,
) -> Result<Option<PathBuf>> {
    let out = if is_bundle_dir(out) {
        std::fs::create_dir_all(out).map_err(|e| Error::io(out.to_path_buf(), e))?;
        let from = match old {
            Some(old) => old.identity()?,
            None => Digests::empty(new.kind()).identity(new.kind()),
        };
        let to = match new_identity {
            Some(to) => to,
            None => new.identity()?,
        };
        if from == to {
            return Ok(None);
        }
        out.join(bundle_name(&from, &to))
    } else {
        out.to_path_buf()
    };
    write_bundle(&out, old, new)?;
    Ok(Some(out))
}

/// The index at `path` when there is one, checked against what the update
/// asks: of its kind, not compact.
pub(super) fn open_old(path: &Path, options: &UpdateOptions) -> Result<Option<Index>> {
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
    Ok(old)
}

/// Refuses a bundle made for an index of another size than `old` (no
/// index: 0 hashes) before anything is written; one for another index of
/// the same size is found while applying ([`check_bundled`]).
fn fits(
    path: &Path,
    old: Option<&Index>,
    (bundle_path, header): &(PathBuf, BundleHeader),
) -> Result<()> {
    let hashes = old.map_or(0, Index::len);
    if hashes == header.old_hashes {
        return Ok(());
    }
    // A subset's bundle is made between subsets of its minimum.
    let subset = match old.map_or(1, |old| old.stats().min_count) {
        1 => String::new(),
        m => format!(
            "; it keeps only the hashes seen at least {m} times, and a bundle applies only to an index of the minimum it was made between"
        ),
    };
    Err(ErrorKind::BadBundle {
        what: format!(
            "{} applies to an index of {} hashes; {} holds {hashes} (a bundle for another index){subset}",
            bundle_path.display(),
            header.old_hashes,
            path.display()
        ),
    }
    .into())
}

/// The partial index being filled range by range, and what goes with it.
pub(super) struct Filling<'f> {
    pub(super) files: Files<'f>,
    pub(super) journal: Journal,
    pub(super) writer: SortedWriter<BufWriter<File>>,
    pub(super) source: Source,
    pub(super) summary: UpdateSummary,
    /// Since the last checkpoint: validators of the ranges seen.
    pub(super) fresh_validators: Vec<Option<Vec<u8>>>,
    /// The first range still to take.
    pub(super) start: u32,
}

impl<'f> Filling<'f> {
    /// Goes on from the journal's last checkpoint when it has one, or
    /// starts afresh.
    pub(super) fn start(
        files: Files<'f>,
        terms: &Terms,
        mut source: Source,
        expected: Option<u64>,
        progress: &dyn UpdateProgress,
    ) -> Result<Filling<'f>> {
        let (partial, partial_path, journal_path) =
            (files.partial, files.partial_path, files.journal_path);
        let partial_err = |e| Error::io(partial_path.to_path_buf(), e);
        let resumed = match Journal::open(journal_path, terms)
            .map_err(|e| Error::io(journal_path.to_path_buf(), e))?
        {
            Some((journal, records)) if !records.is_empty() => Some((journal, records)),
            _ => None,
        };
        let mut summary = UpdateSummary::default();
        let (journal, writer, start) = match resumed {
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
                let mut out = BufWriter::with_capacity(1 << 20, clone(partial, partial_path)?);
                out.seek(SeekFrom::End(0)).map_err(partial_err)?;
                let writer = SortedWriter::resume(out, terms.kind, &last.checkpoint, &dir)?
                    .with_min_count(terms.min_count);
                (journal, writer, last.next_prefix)
            }
            None => {
                partial.set_len(0).map_err(partial_err)?;
                let journal = Journal::create(journal_path, terms)
                    .map_err(|e| Error::io(journal_path.to_path_buf(), e))?;
                let out = BufWriter::with_capacity(1 << 20, clone(partial, partial_path)?);
                let writer =
                    SortedWriter::new(out, terms.kind, expected)?.with_min_count(terms.min_count);
                (journal, writer, 0)
            }
        };
        Ok(Filling {
            files,
            journal,
            writer,
            source,
            summary,
            fresh_validators: Vec::new(),
            start,
        })
    }

    /// Every range from the start on, from `answers` (or the old index where
    /// unchanged, or where the answer was suspect or failed), into the partial
    /// index, with a checkpoint in the journal every [`CHECKPOINT_RANGES`].
    pub(super) fn take_ranges(
        &mut self,
        answers: &mut Answers,
        old: Option<&Index>,
        min_count: u64,
        rule: Rule,
        progress: &dyn UpdateProgress,
    ) -> Result<()> {
        let mut old_range = Vec::new();
        let mut failures = Failures::default();
        for prefix in self.start..RANGES {
            // A range that fails every try keeps what the old index had;
            // with none, there is nothing to keep and the run stops.
            let asked = failures.asked(answers.next(prefix), old.is_some())?;
            old_range.clear();
            if let Some(old) = old {
                old.range_into(u64::from(prefix), 20, &mut old_range)?;
            }
            let taken = match asked {
                Ok(answer) => settle(answers, prefix, answer, &old_range, min_count, rule)?,
                Err(failed) => failed,
            };
            let (received, hashes) =
                self.take(answers, prefix, taken, &mut old_range, old, min_count)?;
            progress.range(received, hashes as u64);
            let next_prefix = prefix + 1;
            if next_prefix % CHECKPOINT_RANGES == 0
                && next_prefix < RANGES
                && self.writer.last().is_some()
            {
                checkpoint(
                    &self.files,
                    &mut self.writer,
                    &mut self.journal,
                    &mut self.source,
                    &self.summary,
                    &mut self.fresh_validators,
                    next_prefix,
                )?;
            }
        }
        Ok(())
    }

    /// One range settled into the partial index: its answer's hashes, or
    /// the old range's (`old_range`, filtered here by the minimum count)
    /// where not modified, suspect or failed. The bytes received and the hashes
    /// written.
    fn take(
        &mut self,
        answers: &mut Answers,
        prefix: u32,
        taken: Taken,
        old_range: &mut Vec<(Key, u64)>,
        old: Option<&Index>,
        min_count: u64,
    ) -> Result<(u64, usize)> {
        let summary = &mut self.summary;
        summary.checked += 1;
        summary.retries += u64::from(taken.retries);
        summary.received += taken.received;
        summary.past_cache += u32::from(taken.past_cache);
        let (validator, kept) = match taken.settled {
            Settled::Range {
                validator,
                entries,
                diff,
            } => {
                summary.fetched += 1;
                summary.empty += u32::from(taken.empty);
                if diff != Diff::default() || old.is_none() {
                    summary.changed += 1;
                }
                summary.added += diff.added;
                summary.removed += diff.removed;
                summary.counts_changed += diff.counts_changed;
                answers.digested(old_range, Some(&entries));
                *old_range = entries;
                (validator, old_range)
            }
            settled => {
                let validator = match settled {
                    Settled::NotModified { validator } => {
                        summary.not_modified += 1;
                        validator
                    }
                    Settled::Failed => {
                        summary.failed.push(prefix);
                        answers.old_validator(prefix)
                    }
                    _ => {
                        summary.suspect.push(prefix);
                        answers.old_validator(prefix)
                    }
                };
                // A minimum raised above the old index's leaves some
                // out (never from a bundle: it keeps the minimum, so
                // its digests of the old range see the whole range).
                let before = old_range.len();
                old_range.retain(|&(_, count)| count >= min_count);
                if old_range.len() < before {
                    summary.changed += 1;
                    summary.removed += (before - old_range.len()) as u64;
                }
                answers.digested(old_range, None);
                (validator, old_range)
            }
        };
        for &(key, count) in kept.iter() {
            self.writer.push(key, count)?;
        }
        self.fresh_validators.push(validator);
        Ok((taken.received, kept.len()))
    }

    /// The partial index completed (the source section last), synced, and
    /// read back: its header, size, directory and source checksums, and
    /// the totals written. Returns it as read back, what was written, the
    /// journal (removed once the index is in place) and the summary.
    pub(super) fn finish(
        mut self,
        bundle: Option<&BundleHeader>,
        identity: Option<[u8; 32]>,
    ) -> Result<(Index, Written, Journal, UpdateSummary)> {
        let (partial, partial_path) = (self.files.partial, self.files.partial_path);
        for v in &self.fresh_validators {
            self.source.push_validator(v.as_deref());
        }
        self.source.updated = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.source.identity = identity;
        if let Some(header) = bundle {
            // The index the bundle makes says where its hashes came from.
            self.source.url = header.url.clone();
            self.source.updated = header.updated;
        }
        let (buffered, written) = self
            .writer
            .finish(Some(&self.source))
            .map_err(|e| e.with_path(partial_path))?;
        buffered
            .into_inner()
            .map_err(|e| self.files.partial_err(e.into_error()))?;
        partial.sync_all().map_err(|e| self.files.partial_err(e))?;
        // Checked before it takes the old one's place.
        let check = Index::from_file(clone(partial, partial_path)?)
            .map_err(|e| e.with_path(partial_path))?;
        if check.len() != written.hashes || check.source()?.as_ref() != Some(&self.source) {
            return Err(Error::corrupt(
                "the new index does not read back as written",
            ));
        }
        Ok((check, written, self.journal, self.summary))
    }
}

/// A checkpoint: the pages written so far made durable, then the journal
/// record that points at them.
pub(super) fn checkpoint(
    files: &Files,
    writer: &mut SortedWriter<BufWriter<File>>,
    journal: &mut Journal,
    source: &mut Source,
    summary: &UpdateSummary,
    fresh_validators: &mut Vec<Option<Vec<u8>>>,
    next_prefix: u32,
) -> Result<()> {
    // Pages first, durable; then the record that points at them.
    let checkpoint = writer.checkpoint()?;
    files
        .partial
        .sync_data()
        .map_err(|e| files.partial_err(e))?;
    for v in fresh_validators.iter() {
        source.push_validator(v.as_deref());
    }
    let record = Record {
        next_prefix,
        checkpoint,
        summary: summary.clone(),
        validators: std::mem::take(fresh_validators),
    };
    journal
        .append(&record)
        .map_err(|e| Error::io(files.journal_path.to_path_buf(), e))
}

/// The base's identity and the result's, against the bundle's word: a
/// bundle made for another index, or one that does not make what it says,
/// is refused and the index left as it was (the partial index and the
/// journal removed).
pub(super) fn check_bundled(
    path: &Path,
    bundle_path: &Path,
    header: &BundleHeader,
    (old_identity, new_identity): ([u8; 32], [u8; 32]),
    written: &Written,
    check: &Index,
    files: &Files,
) -> Result<()> {
    let refused = |what: String| -> Error {
        let _ = std::fs::remove_file(files.partial_path);
        let _ = std::fs::remove_file(files.journal_path);
        ErrorKind::BadBundle { what }.into()
    };
    if old_identity != header.old_identity {
        return Err(refused(format!(
            "{} was made for the index of identity {}; {} has identity {} (a bundle for another index)",
            bundle_path.display(),
            identity_hex(&header.old_identity),
            path.display(),
            identity_hex(&old_identity)
        )));
    }
    if new_identity != header.new_identity
        || written.hashes != header.new_hashes
        || check.stats().total_count != header.new_total
    {
        return Err(refused(format!(
            "applied, {} does not make the index it names (identity {}, {} hashes; made {}, {} hashes)",
            bundle_path.display(),
            identity_hex(&header.new_identity),
            header.new_hashes,
            identity_hex(&new_identity),
            written.hashes
        )));
    }
    Ok(())
}

/// The minimum count of the new index, from the one asked for and the
/// old index's (`held`, 1 for none): refused where it cannot be had.
pub(super) fn min_count(held: u64, options: &UpdateOptions) -> Result<u64> {
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
pub(super) fn check_bundle(path: &Path, kind: Kind) -> Result<(PathBuf, BundleHeader)> {
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

/// Ranges between checkpoints of the journal (64 in a full update).
pub(super) const CHECKPOINT_RANGES: u32 = 1 << 14;

/// The length and header checksum of the index at `path`: what a journal
/// records of the index it refreshes.
pub(super) fn identity(path: &Path) -> std::io::Result<(u64, u32)> {
    let mut file = File::open(path)?;
    let mut header = [0u8; 64];
    file.read_exact(&mut header)?;
    Ok((file.metadata()?.len(), crc32c::crc32c(&header)))
}

pub(super) fn clone(file: &File, path: &Path) -> Result<File> {
    file.try_clone()
        .map_err(|e| Error::io(path.to_path_buf(), e))
}
