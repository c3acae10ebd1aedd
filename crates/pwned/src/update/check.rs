//! `update --check`: whether the upstream holds other data than the index,
//! writing nothing. A seekless mirror says it in one request (its
//! identity); any other server (HIBP) is asked every range with the stored
//! validator, and the ranges it sends whole are compared with the index's.

use std::path::Path;
use std::time::Instant;

use crate::error::Result;
use crate::format::source::RANGES;
use crate::read::index::Index;
use crate::update::answers::Answers;
use crate::update::fetch::{Body, Fetcher};
use crate::update::mirror;
use crate::update::options::{UpdateOptions, UpdateProgress};
use crate::update::suspect::{Diff, Failures, Rule, Settled, settle};

/// What [`check_upstream`] found.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct CheckSummary {
    /// Whether the upstream holds what the index holds (false when there
    /// is no index).
    pub current: bool,
    /// Ranges whose hashes or counts differ, where known (asked range by
    /// range; not from a mirror's identity).
    pub changed: Option<u32>,
    /// Asked range by range: ranges the server said were not modified.
    pub not_modified: u32,
    /// Asked range by range: ranges sent whole, the same as the index's.
    /// With [`changed`](Self::changed), [`not_modified`](Self::not_modified)
    /// [`suspect`](Self::suspect) and [`failed`](Self::failed): every
    /// range.
    pub unchanged: u32,
    /// Ranges whose answer would remove hashes or lower counts (or from
    /// HIBP, was empty), asked again past caches and still so: the
    /// upstream's data is not known for them (see
    /// [`UpdateSummary::suspect`](crate::UpdateSummary::suspect)).
    pub suspect: Vec<u32>,
    /// Ranges that failed every try: the upstream's data is not known for
    /// them. (64 in a row, or 1,024 in all, stop the check with an error
    /// naming the last.)
    pub failed: Vec<u32>,
    /// Requests made.
    pub requests: u64,
    /// Bytes of answer bodies received.
    pub received: u64,
    /// The identity of the index checked (`None`: there is none).
    pub identity: Option<[u8; 32]>,
    /// The mirror's identity and hashes, when the upstream is a seekless
    /// mirror.
    pub upstream: Option<([u8; 32], u64)>,
    /// Why a mirror was asked range by range (its identity could not be
    /// had).
    pub ranges_because: Option<String>,
    /// Wall time, in seconds.
    pub seconds: f64,
}

/// Says whether `options.base_url` holds other data than the index at
/// `path`, writing nothing (see the module documentation). `progress`
/// hears of each range when they are asked one by one.
pub fn check_upstream(
    path: &Path,
    options: &UpdateOptions,
    progress: &dyn UpdateProgress,
) -> Result<CheckSummary> {
    let started = Instant::now();
    let (index, identity) = mirror::own(path, options.kind)?;
    let mut summary = CheckSummary {
        identity: index.as_ref().map(|_| identity),
        ..CheckSummary::default()
    };
    let client = crate::update::client::build(options)?;
    let base = options.base_url.trim_end_matches('/').to_string();
    if mirror::applies(options) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| crate::error::Error::io(None, e))?;
        summary.requests += 1;
        match runtime.block_on(mirror::ask_identity(&client, &base, options.kind)) {
            Ok(upstream) => {
                summary.current = index.is_some() && upstream.identity == identity;
                summary.upstream = Some((upstream.identity, upstream.hashes));
                summary.seconds = started.elapsed().as_secs_f64();
                return Ok(summary);
            }
            Err(why) => summary.ranges_because = Some(why),
        }
    }
    let Some(index) = index else {
        // Everything upstream is new to a missing index: no need to ask.
        summary.seconds = started.elapsed().as_secs_f64();
        return Ok(summary);
    };
    compare_ranges(&index, client, base, options, progress, &mut summary)?;
    summary.requests += u64::from(RANGES);
    summary.current =
        summary.changed == Some(0) && summary.suspect.is_empty() && summary.failed.is_empty();
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// Every range asked for with the index's validator; those sent whole
/// compared with the index's (a suspect one asked again past caches),
/// counted into `summary`.
fn compare_ranges(
    index: &Index,
    client: reqwest::Client,
    base: String,
    options: &UpdateOptions,
    progress: &dyn UpdateProgress,
    summary: &mut CheckSummary,
) -> Result<()> {
    let min_count = index.stats().min_count;
    let fetcher = Fetcher::new(
        client,
        base,
        options.kind,
        options.tries.max(1),
        options.backoff,
        index.source()?,
    );
    let mut answers = Answers::network(fetcher, options, 0)?;
    let rule = Rule::of(options, &answers);
    let mut changed = 0u32;
    let mut held = Vec::new();
    let mut failures = Failures::default();
    let result = (0..RANGES).try_for_each(|prefix| {
        let taken = match failures.asked(answers.next(prefix), true)? {
            Ok(answer) => {
                held.clear();
                if matches!(answer.body, Body::Range { .. }) {
                    index.range_into(u64::from(prefix), 20, &mut held)?;
                }
                settle(&mut answers, prefix, answer, &held, min_count, rule)?
            }
            Err(failed) => failed,
        };
        summary.requests += u64::from(taken.retries);
        let hashes = match taken.settled {
            Settled::NotModified { .. } => {
                summary.not_modified += 1;
                0
            }
            Settled::Range { entries, diff, .. } => {
                if diff == Diff::default() {
                    summary.unchanged += 1;
                } else {
                    changed += 1;
                }
                entries.len() as u64
            }
            Settled::Suspect => {
                summary.suspect.push(prefix);
                0
            }
            Settled::Failed => {
                summary.failed.push(prefix);
                0
            }
        };
        summary.received += taken.received;
        progress.range(taken.received, hashes);
        Ok(())
    });
    answers.finish();
    summary.changed = Some(changed);
    result
}
