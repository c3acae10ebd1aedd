//! A bundle applied already: `update --from-bundle` run again on the
//! index it made (after a `kill -9` that landed once the new index was in
//! place, or by hand) finds the index is NEW and writes nothing, removing
//! what the killed run left beside it. Any other moment of a kill leaves
//! the old index in place, and the journal resumes (`run`).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::bundle::{BundleHeader, BundleReader};
use crate::error::{Error, Result};
use crate::read::index::Index;
use crate::update::files::{beside, lock_partial, sync_parent};
use crate::update::journal::{UpdatePath, UpdateSummary};

/// Whether `index` already is what the bundle makes: NEW's hash count and
/// identity (as an update recorded it, else computed from its pages);
/// and, when the bundle changes validators alone (OLD's identity is
/// NEW's), the bundle's validators.
pub(super) fn already(
    index: &Index,
    (bundle_path, header): &(PathBuf, BundleHeader),
) -> Result<bool> {
    if index.len() != header.new_hashes || index.identity()? != header.new_identity {
        return Ok(false);
    }
    if header.old_identity != header.new_identity {
        return Ok(true);
    }
    let source = index.source()?;
    let file = File::open(bundle_path).map_err(|e| Error::io(bundle_path.clone(), e))?;
    let mut reader = BundleReader::new(file).map_err(|e| e.with_path(bundle_path))?;
    while let Some(entry) = reader.next_entry().map_err(|e| e.with_path(bundle_path))? {
        let held = source.as_ref().and_then(|s| s.validator(entry.prefix));
        if held != entry.validator.as_deref() {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The index already is the bundle's result: nothing is written. What a
/// run killed after its rename left beside it (the journal, whose terms
/// name the index before) goes, once no other update holds the partial
/// index.
pub(super) fn nothing_to_do(path: &Path, index: &Index, started: Instant) -> Result<UpdateSummary> {
    let (partial_path, journal_path) = beside(path)?;
    if partial_path.exists() || journal_path.exists() {
        let partial = lock_partial(path, &partial_path)?;
        for leftover in [&journal_path, &partial_path] {
            match std::fs::remove_file(leftover) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(leftover.clone(), e)),
            }
        }
        drop(partial);
        sync_parent(path);
    }
    let stats = index.stats();
    Ok(UpdateSummary {
        hashes: stats.hashes,
        min_count: stats.min_count,
        bytes: stats.bytes,
        seconds: started.elapsed().as_secs_f64(),
        path: UpdatePath::AlreadyApplied,
        ..UpdateSummary::default()
    })
}
