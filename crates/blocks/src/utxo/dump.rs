//! The set written out as Core's `dumptxoutset` writes it: the coins in
//! Core's order through [`SnapshotWriter`], under a temporary name beside
//! the output renamed into place when complete, with the totals
//! `gettxoutsetinfo` prints ([`UtxoStats`], MuHash included) gathered on
//! the way.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind, Result};
use crate::hash::BlockHash;
use crate::network::Network;
use crate::snapshot::SnapshotWriter;
use crate::stats::UtxoStats;
use crate::utxo::store::CoinStore;

/// Writes `coins`, the UTXO set of `network` after block `base`, as a
/// snapshot at `path`; returns its totals. `progress` is called with each
/// coin written. Nothing is at `path` until the file is complete and
/// synced; a failed write leaves what was there.
pub fn write_snapshot(
    coins: &(impl CoinStore + ?Sized),
    network: Network,
    base: BlockHash,
    path: &Path,
    progress: &mut dyn FnMut(u64),
) -> Result<UtxoStats> {
    let temp = Temp::beside(path);
    let file = File::create(&temp.0).map_err(|e| Error::io(&temp.0, "create", e))?;
    let out = BufWriter::with_capacity(1 << 20, file);
    let mut writer = SnapshotWriter::new(out, network, base, coins.len())?;
    let mut stats = UtxoStats::new();
    coins.visit_in_core_order(&mut |outpoint, coin| {
        stats.add(outpoint, coin);
        progress(1);
        writer.push(outpoint, coin).map_err(|e| in_file(e, path))
    })?;
    let file = writer
        .finish()
        .map_err(|e| in_file(e, path))?
        .into_inner()
        .map_err(|e| Error::io(path, "write", e.into_error()))?;
    file.sync_all().map_err(|e| Error::io(path, "sync", e))?;
    drop(file);
    std::fs::rename(&temp.0, path).map_err(|e| Error::io(path, "rename into place", e))?;
    temp.keep();
    #[cfg(unix)]
    if let Some(dir) = path.parent().and_then(|p| {
        let p = if p.as_os_str().is_empty() {
            Path::new(".")
        } else {
            p
        };
        File::open(p).ok()
    }) {
        let _ = dir.sync_all();
    }
    Ok(stats)
}

/// The snapshot writer names its stream, not the file: an I/O error gets
/// the file's path.
fn in_file(error: Error, path: &Path) -> Error {
    match error.kind() {
        ErrorKind::Io { action, source, .. } => Error::io(
            path,
            action,
            std::io::Error::new(source.kind(), source.to_string()),
        ),
        _ => error,
    }
}

/// The file being written, removed unless kept.
struct Temp(PathBuf, bool);

impl Temp {
    fn beside(path: &Path) -> Temp {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let temp = path.with_file_name(format!(".{name}.seekless-utxo-{}", std::process::id()));
        Temp(temp, false)
    }

    fn keep(mut self) {
        self.1 = true;
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        if !self.1 {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}
