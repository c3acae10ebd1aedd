//! Where the ranges' answers come from: a bounded window of concurrent
//! requests taken in prefix order, or a delta bundle; and the ranges'
//! content digests, for the identity the new index records and, from a
//! bundle, to check it made what it says.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use futures_util::StreamExt;

use crate::bundle::{BundleEntry, BundleHeader, BundleReader};
use crate::error::{Error, Result};
use crate::format::hash::{Key, Kind};
use crate::format::source::{RANGES, Source};
use crate::range::parse::parse_range;
use crate::range::validator::range_digest;
use crate::read::identity::Digests;
use crate::read::index::Index;
use crate::update::fetch::{Answer, Body, Fetcher, Unanswered};
use crate::update::options::UpdateOptions;

/// Where the ranges' answers come from: the network, or a bundle.
pub(super) enum Answers {
    Network {
        answers: tokio::sync::mpsc::Receiver<std::result::Result<Answer, Unanswered>>,
        runtime: tokio::runtime::Runtime,
        /// What asks again, past caches, for an answer that would lose
        /// data ([`Answers::again`]).
        fetcher: Arc<Fetcher>,
        kind: Kind,
        /// The digests of the ranges written; `None` when the run goes on
        /// from a checkpoint (those before it are not known).
        new: Option<Digests>,
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
    pub(super) fn network(
        fetcher: Fetcher,
        options: &UpdateOptions,
        start: u32,
    ) -> Result<Answers> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(options.threads.max(1))
            .enable_all()
            .build()
            .map_err(|e| Error::io(None, e))?;
        let (tx, answers) = tokio::sync::mpsc::channel(options.concurrency.max(1));
        let concurrency = options.concurrency.max(1);
        let fetcher = Arc::new(fetcher);
        let again = Arc::clone(&fetcher);
        runtime.spawn(async move {
            let mut answers = futures_util::stream::iter(start..RANGES)
                .map(|prefix| {
                    let fetcher = Arc::clone(&fetcher);
                    tokio::spawn(async move { fetcher.fetch(prefix).await })
                })
                .buffered(concurrency);
            while let Some(joined) = answers.next().await {
                let answer = joined.unwrap_or_else(|e| {
                    Err(Error::io(None, std::io::Error::other(e.to_string())).into())
                });
                // A range that failed goes on too: the run decides
                // whether to finish without it (and drops the receiver
                // when it stops).
                if tx.send(answer).await.is_err() {
                    break;
                }
            }
        });
        Ok(Answers::Network {
            answers,
            runtime,
            fetcher: again,
            kind: options.kind,
            new: (start == 0).then(Digests::with_capacity),
        })
    }

    /// Ranges from `start` on from the bundle at `path` (checked whole
    /// before), applied to `old`. The digests of the ranges before `start`
    /// (done by an earlier run) are taken from `old` and the bundle.
    pub(super) fn bundle(
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
    pub(super) fn next(&mut self, prefix: u32) -> std::result::Result<Answer, Unanswered> {
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
                Ok(Answer {
                    retries: 0,
                    past_cache: false,
                    body,
                })
            }
        }
    }

    /// Asks for `prefix` again, past caches (an answer that would lose
    /// data): `None` where the answers are not asked for (a bundle's are
    /// what a mirror's chain carries, removals included).
    pub(super) fn again(&mut self, prefix: u32) -> Option<Result<Answer>> {
        match self {
            Answers::Network {
                runtime, fetcher, ..
            } => Some(runtime.block_on(fetcher.fetch_past_cache(prefix))),
            Answers::Bundle { .. } => None,
        }
    }

    /// Whether an answer that removes hashes or lowers counts is suspect:
    /// from the network, yes; from a bundle (a seekless mirror's chain,
    /// whose removals are real), no.
    pub(super) fn suspicious(&self) -> bool {
        matches!(self, Answers::Network { .. })
    }

    /// The validator `prefix` was asked with (the old index's), kept for a
    /// range whose answer was not taken, so that the next run asks again.
    pub(super) fn old_validator(&self, prefix: u32) -> Option<Vec<u8>> {
        let validators = match self {
            Answers::Network { fetcher, .. } => fetcher.validators.as_ref(),
            Answers::Bundle { validators, .. } => validators.as_ref(),
        };
        validators
            .and_then(|s| s.validator(prefix))
            .map(<[u8]>::to_vec)
    }

    /// Notes a range's content before (`old`) and as written (`new`;
    /// `None`: the same).
    pub(super) fn digested(&mut self, old: &[(Key, u64)], new: Option<&[(Key, u64)]>) {
        match self {
            Answers::Network {
                kind,
                new: Some(digests),
                ..
            } => digests.push(range_digest(*kind, new.unwrap_or(old))),
            Answers::Network { new: None, .. } => {}
            Answers::Bundle {
                kind,
                old: old_digests,
                new: new_digests,
                ..
            } => {
                let before = range_digest(*kind, old);
                old_digests.push(before);
                new_digests.push(new.map_or(before, |new| range_digest(*kind, new)));
            }
        }
    }

    /// Stops fetching; once every range was answered, the identities of
    /// the index the answers were applied to (from a bundle only) and of
    /// the one written (unless the run went on from a checkpoint).
    pub(super) fn finish(self) -> Identities {
        match self {
            Answers::Network {
                answers,
                runtime,
                kind,
                new,
                ..
            } => {
                drop(answers);
                runtime.shutdown_background();
                Identities {
                    old: None,
                    new: new
                        .filter(|new| new.len() == RANGES as usize)
                        .map(|new| new.identity(kind)),
                }
            }
            Answers::Bundle { kind, old, new, .. } => {
                let whole = old.len() == RANGES as usize;
                Identities {
                    old: whole.then(|| old.identity(kind)),
                    new: whole.then(|| new.identity(kind)),
                }
            }
        }
    }
}

/// What [`Answers::finish`] knows of the indexes' identities.
pub(super) struct Identities {
    pub(super) old: Option<[u8; 32]>,
    pub(super) new: Option<[u8; 32]>,
}
