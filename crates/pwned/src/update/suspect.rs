//! Answers that would lose data. HIBP never removes a hash from a range
//! and never lowers a count, and every one of its ranges holds hundreds of
//! hashes; a CDN in front of it has served empty `200`s and stored `502`s
//! for days. So a range answer that removes hashes or lowers a count
//! relative to the index (an empty one for a range that held hashes among
//! them), or from HIBP an empty one, is *suspect*: asked again past caches
//! ([`Fetcher::fetch_past_cache`](crate::update::fetch::Fetcher::fetch_past_cache));
//! still suspect, the range keeps what the index had and its old
//! validator, so the next run asks again. What a seekless mirror's bundle
//! chain carries is not suspect (a primary rebuilt with `--min-count`
//! removes hashes for real), nor anything with
//! [`accept_removals`](crate::update::UpdateOptions::accept_removals).
//!
//! A range that fails every try in a refresh keeps what the index had
//! the same way ([`Failures`]); building a new index, or once too many
//! have failed, the run stops instead.
//!
//! The comparison is one merge-walk of the answer with the old range the
//! update has decoded anyway (to count what changed): nothing more is read.

use crate::error::{ErrorKind, Result};
use crate::format::hash::Key;
use crate::update::answers::Answers;
use crate::update::fetch::{Answer, Body, Unanswered};
use crate::update::options::{DEFAULT_BASE_URL, UpdateOptions};

/// Times a suspect answer is asked for again, past caches, before the
/// range keeps what the index had.
pub(super) const SUSPECT_TRIES: u32 = 2;

/// Which answers are suspect.
#[derive(Debug, Clone, Copy)]
pub(super) struct Rule {
    /// Removals and lowered counts are taken as they come.
    pub(super) removals: bool,
    /// An empty range is suspect even where the index held none (HIBP's
    /// ranges are never empty).
    pub(super) empty: bool,
}

impl Rule {
    /// The rule for answers from `answers` under `options`.
    pub(super) fn of(options: &UpdateOptions, answers: &Answers) -> Rule {
        Rule::for_answers(options, answers.suspicious())
    }

    /// The rule under `options` for answers that may (`suspicious`) or
    /// may not be suspect (a mirror's bundle chain).
    fn for_answers(options: &UpdateOptions, suspicious: bool) -> Rule {
        Rule {
            removals: options.accept_removals || !suspicious,
            empty: !options.accept_removals
                && options.base_url.trim_end_matches('/') == DEFAULT_BASE_URL,
        }
    }
}

/// How a new range differs from the old one.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Diff {
    /// Hashes new to the range (seen at least the minimum count).
    pub(super) added: u64,
    /// Hashes of the old range not in the new one (left out by the
    /// minimum count, or gone from the answer).
    pub(super) removed: u64,
    /// Hashes whose count changed.
    pub(super) counts_changed: u64,
    /// Hashes of the old range the answer does not hold at all.
    pub(super) vanished: u64,
    /// Hashes whose count the answer lowers.
    pub(super) lowered: u64,
}

impl Diff {
    /// `new` (an answer, before the minimum count filters it) against
    /// `old` (the index's range), for an index keeping hashes seen at
    /// least `min_count` times: one merge-walk.
    pub(super) fn of(old: &[(Key, u64)], new: &[(Key, u64)], min_count: u64) -> Diff {
        let mut diff = Diff::default();
        let (mut i, mut j) = (0, 0);
        while i < old.len() && j < new.len() {
            match old[i].0.cmp(&new[j].0) {
                std::cmp::Ordering::Less => {
                    diff.removed += 1;
                    diff.vanished += 1;
                    i += 1;
                }
                std::cmp::Ordering::Greater => {
                    diff.added += u64::from(new[j].1 >= min_count);
                    j += 1;
                }
                std::cmp::Ordering::Equal => {
                    let (was, is) = (old[i].1, new[j].1);
                    diff.lowered += u64::from(is < was);
                    if is < min_count {
                        diff.removed += 1;
                    } else {
                        diff.counts_changed += u64::from(is != was);
                    }
                    i += 1;
                    j += 1;
                }
            }
        }
        let gone = (old.len() - i) as u64;
        diff.removed += gone;
        diff.vanished += gone;
        diff.added += new[j..].iter().filter(|e| e.1 >= min_count).count() as u64;
        diff
    }

    /// Whether the answer would lose data.
    fn loses(&self) -> bool {
        self.vanished > 0 || self.lowered > 0
    }
}

/// Whether `new` (a range's answer) would lose data against `old` (the
/// index's range) for an index keeping hashes seen at least `min_count`
/// times: the check [`update`](crate::update::update()) makes of every
/// answer sent whole, for benchmarks.
#[cfg(feature = "test-util")]
pub fn loses_data(old: &[(Key, u64)], new: &[(Key, u64)], min_count: u64) -> bool {
    Diff::of(old, new, min_count).loses()
}

/// What became of one range's answer.
pub(super) enum Settled {
    /// `304`: the old range holds, with this validator.
    NotModified { validator: Option<Vec<u8>> },
    /// Taken: its hashes (those of the minimum count) and validator.
    Range {
        validator: Option<Vec<u8>>,
        entries: Vec<(Key, u64)>,
        diff: Diff,
    },
    /// Suspect after every try: the range keeps what the index had.
    Suspect,
    /// No answer after every try (a fault each time): the range keeps
    /// what the index had.
    Failed,
}

/// A range's answer settled, and what it took.
pub(super) struct Taken {
    pub(super) settled: Settled,
    /// Requests repeated (faults, and suspect answers asked again).
    pub(super) retries: u32,
    /// Whether it was asked past caches.
    pub(super) past_cache: bool,
    /// Bytes of bodies received, suspect ones included.
    pub(super) received: u64,
    /// Whether the answer taken was an empty range.
    pub(super) empty: bool,
}

/// Ranges a refresh finishes without, after failing every try, before it
/// stops instead: this many in a row (an upstream that is down fails
/// every range, and asking a million times helps nobody)...
pub(super) const FAILED_IN_A_ROW: u32 = 64;

/// ... or this many in all (0.1% of the ranges: more is no passing
/// fault).
pub(super) const MAX_FAILED: u32 = 1024;

/// The ranges that failed every try so far, and when that stops a run.
#[derive(Debug, Default)]
pub(super) struct Failures {
    /// The failure that began the current run of failed ranges, and how
    /// many there are in it.
    first: Option<crate::error::Error>,
    in_a_row: u32,
    all: u32,
}

impl Failures {
    /// A range's answer as asked: `Ok(Ok(answer))` to settle;
    /// `Ok(Err(taken))` for a range that failed every try where the run
    /// goes on without it (`keeps`: the index holds the range already);
    /// the error where it cannot (no passing fault, nothing to keep, or
    /// [`FAILED_IN_A_ROW`] or [`MAX_FAILED`] reached: then the first
    /// range of the run in a row, or the last, named). The run stops
    /// resumable.
    pub(super) fn asked(
        &mut self,
        asked: std::result::Result<Answer, Unanswered>,
        keeps: bool,
    ) -> Result<std::result::Result<Answer, Taken>> {
        let e = match asked {
            Ok(answer) => {
                self.first = None;
                self.in_a_row = 0;
                return Ok(Ok(answer));
            }
            Err(Unanswered { error, passing }) if passing && keeps => error,
            Err(Unanswered { error, .. }) => return Err(error),
        };
        let &ErrorKind::Fetch { tries, .. } = e.kind() else {
            return Err(e);
        };
        self.in_a_row += 1;
        self.all += 1;
        let (named, stop) = if self.in_a_row >= FAILED_IN_A_ROW {
            let after = self.in_a_row - 1;
            (
                self.first.take().unwrap_or(e),
                format!("so did the {after} ranges after it"),
            )
        } else if self.all >= MAX_FAILED {
            (e, format!("{} ranges failed every try", self.all))
        } else {
            self.first.get_or_insert(e);
            return Ok(Err(Taken {
                settled: Settled::Failed,
                retries: tries.saturating_sub(1),
                past_cache: false,
                received: 0,
                empty: false,
            }));
        };
        match named.into_kind() {
            ErrorKind::Fetch {
                prefix,
                what,
                tries,
            } => Err(ErrorKind::Fetch {
                prefix,
                what: format!("{what}; {stop}, so the run stops"),
                tries,
            }
            .into()),
            other => Err(other.into()),
        }
    }
}

/// `answer` for `prefix` judged against `old` (the index's range) under
/// `rule`; a suspect one is asked for again past caches, up to
/// [`SUSPECT_TRIES`] times.
pub(super) fn settle(
    answers: &mut Answers,
    prefix: u32,
    mut answer: Answer,
    old: &[(Key, u64)],
    min_count: u64,
    rule: Rule,
) -> Result<Taken> {
    let mut taken = Taken {
        settled: Settled::Suspect,
        retries: answer.retries,
        past_cache: answer.past_cache,
        received: 0,
        empty: false,
    };
    let mut asked_again = 0;
    loop {
        let (validator, mut entries) = match answer.body {
            Body::NotModified { validator } => {
                taken.settled = Settled::NotModified { validator };
                return Ok(taken);
            }
            Body::Range {
                validator,
                entries,
                received,
            } => {
                taken.received += received;
                (validator, entries)
            }
        };
        let diff = Diff::of(old, &entries, min_count);
        let empty = entries.is_empty();
        if rule.removals || !(diff.loses() || rule.empty && empty) {
            entries.retain(|&(_, count)| count >= min_count);
            taken.empty = empty;
            taken.settled = Settled::Range {
                validator,
                entries,
                diff,
            };
            return Ok(taken);
        }
        if asked_again == SUSPECT_TRIES {
            return Ok(taken);
        }
        asked_again += 1;
        answer = match answers.again(prefix) {
            Some(Ok(again)) => again,
            // No other answer to be had: the range keeps what it had.
            Some(Err(_)) | None => return Ok(taken),
        };
        taken.retries += 1 + answer.retries;
        taken.past_cache = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hibp_empty_ranges_bundles_and_accepted_removals() {
        let mut options = UpdateOptions::default();
        let hibp = Rule::for_answers(&options, true);
        assert!(!hibp.removals && hibp.empty);
        options.base_url = format!("{DEFAULT_BASE_URL}/");
        assert!(Rule::for_answers(&options, true).empty);
        options.base_url = "http://127.0.0.1:8080".into();
        let other = Rule::for_answers(&options, true);
        assert!(!other.removals && !other.empty);
        // A mirror's bundle chain: its removals are real.
        assert!(Rule::for_answers(&options, false).removals);
        options.base_url = DEFAULT_BASE_URL.into();
        options.accept_removals = true;
        let accepted = Rule::for_answers(&options, true);
        assert!(accepted.removals && !accepted.empty);
    }
}
