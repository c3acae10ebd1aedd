//! `update`: the corpus straight from the HIBP range API into an index, and
//! refreshes that ask only for what changed.
//!
//! Every one of the 1,048,576 ranges is requested (`GET {base}/range/PREFIX`)
//! by a bounded window of concurrent requests whose answers are taken in
//! prefix order, checked line by line, and streamed into a [`SortedWriter`](crate::write::sorted::SortedWriter):
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
//!
//! Against a seekless mirror, the update first asks its identity and takes
//! its delta bundles ([`mirror`]): one request when nothing changed, one
//! download of what did.
//!
//! `update --check` ([`check`]) asks the same questions and writes nothing.
//!
//! The parts: [`update()`] here chooses the way (a bundle file, a mirror's
//! bundles, or range by range); [`run`] (one update from start to end),
//! [`files`] (the partial index and the journal beside the index),
//! [`applied`] (a bundle applied already), [`mirror`] (a seekless mirror's
//! identity and bundles, each applied by a run), [`answers`] (ranges from
//! the network or a bundle, in order), [`fetch`] (one range requested:
//! validators, retries, decoding, asking past caches), [`suspect`]
//! (answers that would lose data, ranges that failed), [`journal`] (checkpoints to resume
//! from), [`bundle`] (delta bundles), [`client`] (the HTTP client and its
//! certificates), [`proxies`] (which proxies, as curl reads them),
//! [`trust`] (which server certificates are trusted, refusals in plain
//! words), [`options`].

mod answers;
mod applied;
pub(crate) mod bundle;
mod check;
pub(crate) mod client;
mod fetch;
mod files;
pub(crate) mod journal;
mod mirror;
pub(crate) mod options;
pub(crate) mod proxies;
mod run;
mod suspect;
#[cfg(test)]
mod tests;
mod trust;

pub use check::{CheckSummary, check_upstream};
#[cfg(feature = "test-util")]
pub use fetch::{decode_body, read_answer};
pub use options::{
    DEFAULT_BASE_URL, DEFAULT_CONCURRENCY, NoUpdateProgress, UpdateOptions, UpdateProgress,
};
#[cfg(feature = "test-util")]
pub use suspect::loses_data;

use std::path::Path;

use crate::error::Result;
use crate::update::journal::{UpdatePath, UpdateSummary};
use crate::update::mirror::Refreshed;

/// Builds `path` from the range API, or refreshes it when it exists (see the
/// module documentation); or, with [`UpdateOptions::from_bundle`], applies
/// a delta bundle with no network.
pub fn update(
    path: &Path,
    options: &UpdateOptions,
    progress: &dyn UpdateProgress,
) -> Result<UpdateSummary> {
    let mut route = UpdatePath::Ranges;
    if options.from_bundle.is_some() {
        route = UpdatePath::BundleFile;
    } else if mirror::applies(options) {
        match mirror::refresh(path, options, progress)? {
            Refreshed::Done(summary) => return Ok(summary),
            Refreshed::Ranges(why) => route = why.map_or(route, UpdatePath::RangesInstead),
        }
    }
    run::run(path, options, progress, route)
}
