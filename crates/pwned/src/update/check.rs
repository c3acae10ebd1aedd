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
    let (changed, received) = compare_ranges(&index, client, base, options, progress)?;
    summary.requests += u64::from(RANGES);
    summary.received = received;
    summary.changed = Some(changed);
    summary.current = changed == 0;
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// Every range asked for with the index's validator; of those sent whole,
/// how many differ from the index's, and the bytes received.
fn compare_ranges(
    index: &Index,
    client: reqwest::Client,
    base: String,
    options: &UpdateOptions,
    progress: &dyn UpdateProgress,
) -> Result<(u32, u64)> {
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
    let (mut changed, mut received) = (0u32, 0u64);
    let mut held = Vec::new();
    let result = (0..RANGES).try_for_each(|prefix| {
        let answer = answers.next(prefix)?;
        let (bytes, hashes) = match answer.body {
            Body::NotModified { .. } => (0, 0),
            Body::Range {
                mut entries,
                received: bytes,
                ..
            } => {
                entries.retain(|&(_, count)| count >= min_count);
                held.clear();
                index.range_into(u64::from(prefix), 20, &mut held)?;
                changed += u32::from(entries != held);
                (bytes, entries.len() as u64)
            }
        };
        received += bytes;
        progress.range(bytes, hashes);
        Ok(())
    });
    answers.finish();
    result.map(|()| (changed, received))
}
