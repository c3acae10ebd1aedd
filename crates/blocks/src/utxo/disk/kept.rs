//! A [`DiskCoins`] kept between runs in a chainstate directory: created
//! with a tip record at genesis, opened from its tip record (a committed
//! journal replayed first, a torn one removed, what an uncommitted run
//! appended cut off), and committed: the cache's pages into the journal,
//! the journal synced, replayed in place, the tip record renamed in.

use std::fs::{self, File};
use std::path::Path;

use super::file_at::open_existing;
use super::journal::{self, Journal, JournalWriter};
use super::pages::Pages;
use super::tip::{TIP_LEN, Tip};
use super::{DiskCoins, PARTITIONS, random_keys};
use crate::error::{Error, ErrorKind, Result};

/// The files of the set in a chainstate directory, besides `part-XX`.
pub(crate) const KEPT_FILES: [&str; 5] = ["tip", "tip.tmp", "journal", "overflow", "lock"];

/// The block a kept set is at: network magic, height, hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TipId {
    pub(crate) network: [u8; 4],
    pub(crate) height: u32,
    pub(crate) hash: [u8; 32],
}

impl DiskCoins {
    /// Writes the tip record of an empty set at `tip` into `dir` (which
    /// holds no set).
    pub(crate) fn create_kept(dir: &Path, tip: TipId) -> Result<()> {
        let record = Tip {
            network: tip.network,
            height: tip.height,
            hash: tip.hash,
            keys: random_keys(),
            coins: 0,
            overflow: 0,
            parts: vec![(0, 0); PARTITIONS],
        };
        write_tip(dir, &record.encode())
    }

    /// Opens the set kept in `dir` with `budget` bytes of cache: replays a
    /// committed journal, removes a torn one, reads the tip record, cuts
    /// the overflow file back to it and removes partitions half grown.
    pub(crate) fn open_kept(dir: &Path, budget: u64) -> Result<(DiskCoins, TipId)> {
        let journal_path = dir.join("journal");
        if journal_path.exists() {
            if let Journal::Committed(tip) = journal::replay(dir, &journal_path)? {
                write_tip(dir, &tip)?;
            }
            fs::remove_file(&journal_path).map_err(|e| Error::io(&journal_path, "remove", e))?;
        }
        let path = dir.join("tip");
        let bytes = fs::read(&path).map_err(|e| Error::io(&path, "read", e))?;
        let tip = Tip::decode(&bytes, &path)?;
        let mut coins = DiskCoins::empty(dir, budget, tip.keys, true);
        coins.len = tip.coins;
        for (p, &(used, count)) in tip.parts.iter().enumerate() {
            let path = dir.join(format!("part-{p:02x}"));
            let grow = path.with_extension("grow");
            if grow.exists() {
                fs::remove_file(&grow).map_err(|e| Error::io(&grow, "remove", e))?;
            }
            if count == 0 && used == 0 {
                // No record committed: whatever the file holds (a run may
                // have died creating it, before its first page) goes.
                if path.exists() {
                    fs::remove_file(&path).map_err(|e| Error::io(&path, "remove", e))?;
                }
            } else if path.exists() {
                coins.parts[p] = Some(Pages::open(path, p as u8, used, count)?);
            } else {
                let reason = format!("holds {count} coins and is missing");
                return Err(ErrorKind::BadState { path, reason }.into());
            }
        }
        let path = dir.join("overflow");
        if path.exists() {
            let (file, len) = open_existing(&path)?;
            if len < tip.overflow {
                let reason = format!("{len} bytes, the tip record counts {}", tip.overflow);
                return Err(ErrorKind::BadState { path, reason }.into());
            }
            file.set_len(tip.overflow)
                .map_err(|e| Error::io(&path, "truncate", e))?;
            coins.overflow = Some((file, tip.overflow));
        } else if tip.overflow > 0 {
            let reason = "is missing".to_string();
            return Err(ErrorKind::BadState { path, reason }.into());
        }
        let id = TipId {
            network: tip.network,
            height: tip.height,
            hash: tip.hash,
        };
        Ok((coins, id))
    }

    /// Whether a kept set's cache passed its budget: the caller commits at
    /// the next block boundary.
    pub(crate) fn wants_commit(&self) -> bool {
        self.full
    }

    /// Commits a kept set at `tip`: after this returns, a run killed at any
    /// moment reopens the set as it is now.
    pub(crate) fn commit(&mut self, tip: TipId) -> Result<()> {
        debug_assert!(self.kept);
        if let Some(error) = self.error.take() {
            return Err(error);
        }
        if self.failed {
            let reason = "an earlier error left the set in memory incomplete: not committed";
            return Err(ErrorKind::BadState {
                path: self.dir.clone(),
                reason: reason.to_string(),
            }
            .into());
        }
        let result = self.try_commit(tip);
        // A commit that failed half-way left the cache half written: the
        // set on disk is the last commit's, and this one stops.
        self.failed |= result.is_err();
        result
    }

    fn try_commit(&mut self, tip: TipId) -> Result<()> {
        let path = self.dir.join("journal");
        let mut journal = JournalWriter::create(path.clone())?;
        self.flush(Some(&mut journal))?;
        if let Some((file, _)) = &self.overflow {
            let overflow = self.dir.join("overflow");
            file.sync_data()
                .map_err(|e| Error::io(&overflow, "sync", e))?;
        }
        let record = Tip {
            network: tip.network,
            height: tip.height,
            hash: tip.hash,
            keys: self.keys,
            coins: self.len,
            overflow: self.overflow.as_ref().map_or(0, |o| o.1),
            parts: self
                .parts
                .iter()
                .map(|p| p.as_ref().map_or((0, 0), |p| (p.used(), p.count())))
                .collect(),
        }
        .encode();
        journal.commit(&record)?;
        sync_dir(&self.dir)?;
        journal::replay(&self.dir, &path)?;
        write_tip(&self.dir, &record)?;
        fs::remove_file(&path).map_err(|e| Error::io(&path, "remove", e))?;
        self.full = false;
        Ok(())
    }
}

/// Writes the tip record as `tip.tmp`, syncs it, renames it `tip`.
fn write_tip(dir: &Path, record: &[u8; TIP_LEN]) -> Result<()> {
    let temp = dir.join("tip.tmp");
    let file = File::create(&temp).map_err(|e| Error::io(&temp, "create", e))?;
    super::write_all_at(&file, record, 0).map_err(|e| Error::io(&temp, "write", e))?;
    file.sync_data().map_err(|e| Error::io(&temp, "sync", e))?;
    drop(file);
    fs::rename(&temp, dir.join("tip")).map_err(|e| Error::io(&temp, "rename", e))?;
    sync_dir(dir)
}

/// Makes the directory's names durable (renames, new files) where the
/// platform can.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(dir, "sync", e))?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}
