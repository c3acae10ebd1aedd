//! A chainstate kept between runs in a directory (`blocks utxo --state`):
//! [`ChainState`] opens it (one run at a time: a lock on `DIR/lock`),
//! brings it to the best chain of a scan (the blocks that left the best
//! chain disconnected newest first with their undo data, `undo.rs`; the
//! new blocks connected), and commits whole blocks only, through the set's
//! redo journal (`disk/kept.rs`), so that a run killed at any moment leaves
//! the state at its last commit and the same command again ends where an
//! unkilled run ends.

mod undo;

use std::collections::VecDeque;
use std::fs::{self, File, TryLockError};
use std::path::{Path, PathBuf};

use crate::chain::Chain;
use crate::error::{Error, ErrorKind, Result};
use crate::fetch::BlockFetcher;
use crate::files::BlockFile;
use crate::hash::BlockHash;
use crate::network::Network;
use crate::utxo::ConnectReport;
use crate::utxo::connect::{self, Change};
use crate::utxo::disk::{DiskCoins, KEPT_FILES, TipId, sync_dir};
use crate::utxo::store::CoinStore;
use undo::{UNDO_HEADER, UndoHeader, undo_path};

/// Blocks whose undo data a state keeps by default: 288, what Core keeps
/// at least when pruning (`MIN_BLOCKS_TO_KEEP`), two days of blocks.
pub const DEFAULT_UNDO_BLOCKS: u32 = 288;

/// How a [`ChainState`] runs.
#[derive(Clone, Copy, Debug)]
pub struct StateOptions {
    /// Bytes of memory for the coins' cache (a commit when passed).
    pub memory: u64,
    /// Blocks below the tip whose undo data is kept: the deepest reorg,
    /// or the lowest `--height` below the tip, the state can go back.
    pub undo_blocks: u32,
}

/// What [`ChainState::update`] did.
#[derive(Debug)]
pub struct UpdateReport {
    /// The state's height when opened.
    pub from: u32,
    /// Blocks disconnected (left the best chain, or above the height asked).
    pub disconnected: u32,
    /// The blocks connected, and where the state is now. Its
    /// `transactions` and `bytes` count this run's blocks.
    pub connect: ConnectReport,
}

/// A chainstate directory, open and locked.
#[derive(Debug)]
pub struct ChainState {
    dir: PathBuf,
    undo_dir: PathBuf,
    network: Network,
    coins: DiskCoins,
    tip: TipId,
    undo_blocks: u32,
    /// Undo files written since the last commit (synced by it).
    unsynced: Vec<PathBuf>,
    /// Undo files this run wrote, oldest first, until they fall below the
    /// last `undo_blocks` of a commit (then removed).
    written: VecDeque<(u32, PathBuf)>,
    _lock: File,
}

impl ChainState {
    /// Opens the state in `dir` for `network`, or makes one at genesis
    /// where `dir` is missing or empty. Refuses a directory another run
    /// holds, one that is not a state, a state of another network and a
    /// damaged state file.
    pub fn open(dir: &Path, network: Network, options: &StateOptions) -> Result<ChainState> {
        fs::create_dir_all(dir).map_err(|e| Error::io(dir, "create", e))?;
        let lock_path = dir.join("lock");
        let lock = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock_path)
            .map_err(|e| Error::io(&lock_path, "open", e))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(ErrorKind::StateInUse { path: lock_path }.into());
            }
            Err(TryLockError::Error(e)) => return Err(Error::io(&lock_path, "lock", e)),
        }
        let undo_dir = dir.join("undo");
        if !dir.join("tip").exists() {
            let entries = fs::read_dir(dir).map_err(|e| Error::io(dir, "read", e))?;
            for entry in entries {
                let entry = entry.map_err(|e| Error::io(dir, "read", e))?;
                let name = entry.file_name();
                let ours = name == "undo" || KEPT_FILES.iter().any(|k| name == *k);
                if !ours {
                    let reason = "holds other files and no tip record: not a state \
                                  directory"
                        .to_string();
                    return Err(ErrorKind::BadState {
                        path: dir.to_path_buf(),
                        reason,
                    }
                    .into());
                }
            }
            fs::create_dir_all(&undo_dir).map_err(|e| Error::io(&undo_dir, "create", e))?;
            let genesis = TipId {
                network: network.magic(),
                height: 0,
                hash: network.genesis().0,
            };
            DiskCoins::create_kept(dir, genesis)?;
        }
        let (coins, tip) = DiskCoins::open_kept(dir, options.memory)?;
        if tip.network != network.magic() {
            let found = [
                Network::Main,
                Network::Testnet3,
                Network::Testnet4,
                Network::Signet,
                Network::Regtest,
            ]
            .into_iter()
            .find(|n| n.magic() == tip.network)
            .map_or("an unknown network", |n| n.name());
            return Err(ErrorKind::BadState {
                path: dir.join("tip"),
                reason: format!("a state of {found}, not of {}", network.name()),
            }
            .into());
        }
        fs::create_dir_all(&undo_dir).map_err(|e| Error::io(&undo_dir, "create", e))?;
        Ok(ChainState {
            dir: dir.to_path_buf(),
            undo_dir,
            network,
            coins,
            tip,
            undo_blocks: options.undo_blocks,
            unsynced: Vec::new(),
            written: VecDeque::new(),
            _lock: lock,
        })
    }

    /// The height of the last block connected.
    pub fn height(&self) -> u32 {
        self.tip.height
    }

    /// Its hash.
    pub fn hash(&self) -> BlockHash {
        BlockHash(self.tip.hash)
    }

    /// The set at the tip.
    pub fn coins(&self) -> &DiskCoins {
        &self.coins
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Brings the state to the best chain of `chain` (scanned from
    /// `files`) at its tip or at `height`: disconnects the blocks of the
    /// state that are not on it (or above `height`), newest first, then
    /// connects the best chain's blocks above, committing whole blocks as
    /// the memory budget fills and at the end. A block that breaks a rule
    /// is not an error: the report names it and the state stays at its
    /// parent. Fails (the state at its last commit) on an I/O error, a
    /// `height` past the tip, a state whose tip is not among the blocks
    /// scanned (unless `height` is given), and a state that must go back
    /// further than its undo data reaches.
    pub fn update(
        &mut self,
        chain: &Chain,
        files: &[BlockFile],
        height: Option<u32>,
        progress: &mut dyn FnMut(u64),
    ) -> Result<UpdateReport> {
        let stop = crate::utxo::stop_height(chain, height)?;
        let best: Vec<[u8; 32]> = chain
            .best_chain()
            .take(stop as usize + 1)
            .map(|b| b.hash.0)
            .collect();
        let from = self.tip.height;
        if height.is_none() && chain.get(&BlockHash(self.tip.hash)).is_none() {
            // A reorg leaves the old branch in the files (Core keeps stale
            // blocks): a tip not there means files left out, and going
            // back to what they hold would undo the state's work.
            let (height, hash) = (self.tip.height, self.tip.hash);
            return Err(ErrorKind::StateTipUnknown { height, hash }.into());
        }
        let back = self.path_back(&best)?;
        for &(height, hash) in &back {
            self.disconnect(height, hash)?;
        }
        let mut report = ConnectReport {
            height: self.tip.height,
            hash: BlockHash(self.tip.hash),
            transactions: 0,
            bytes: 0,
            failure: None,
        };
        self.connect_up(chain, files, stop, &mut report, progress)?;
        self.commit()?;
        self.prune()?;
        Ok(UpdateReport {
            from,
            disconnected: back.len() as u32,
            connect: report,
        })
    }

    /// The blocks to disconnect, newest first, for the tip to be on
    /// `best` (hashes by height): each one's undo file must be there.
    fn path_back(&self, best: &[[u8; 32]]) -> Result<Vec<(u32, [u8; 32])>> {
        let (mut height, mut hash) = (self.tip.height, self.tip.hash);
        let mut back = Vec::new();
        while best.get(height as usize) != Some(&hash) {
            let kept = back.len() < self.undo_blocks as usize;
            let header = match self.read_header(height, &hash)? {
                Some(header) if height > 0 && kept => header,
                _ => {
                    let (height, reach) = (self.tip.height, height);
                    return Err(ErrorKind::UndoTooShort { height, reach }.into());
                }
            };
            back.push((height, hash));
            (height, hash) = (height - 1, header.prev);
        }
        Ok(back)
    }

    /// The header of block `hash`'s undo file, if it is there.
    fn read_header(&self, height: u32, hash: &[u8; 32]) -> Result<Option<UndoHeader>> {
        let path = undo_path(&self.undo_dir, height, hash);
        let mut bytes = [0u8; UNDO_HEADER];
        match File::open(&path) {
            Ok(mut file) => std::io::Read::read_exact(&mut file, &mut bytes)
                .map_err(|e| Error::io(&path, "read", e))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(&path, "open", e)),
        }
        let header = undo::decode_header(&bytes, &path)?;
        let expected = (self.network.magic(), height, *hash);
        if (header.network, header.height, header.hash) != expected {
            let reason = "undo data of another block".to_string();
            return Err(ErrorKind::BadState { path, reason }.into());
        }
        Ok(Some(header))
    }

    /// Disconnects the tip, block `hash` at `height`, with its undo data.
    fn disconnect(&mut self, height: u32, hash: [u8; 32]) -> Result<()> {
        let path = undo_path(&self.undo_dir, height, &hash);
        let bytes = fs::read(&path).map_err(|e| Error::io(&path, "read", e))?;
        let (header, changes) = undo::decode(&bytes, &path)?;
        let matched = connect::undo(changes.into_iter(), &mut self.coins);
        if let Some(error) = self.coins.take_error() {
            return Err(error);
        }
        if !matched {
            let reason = "undo data that does not match the set".to_string();
            return Err(ErrorKind::BadState { path, reason }.into());
        }
        self.tip.height = height - 1;
        self.tip.hash = header.prev;
        if self.coins.wants_commit() {
            self.commit()?;
        }
        Ok(())
    }

    /// Connects the best chain's blocks above the tip up to `stop`.
    fn connect_up(
        &mut self,
        chain: &Chain,
        files: &[BlockFile],
        stop: u32,
        report: &mut ConnectReport,
        progress: &mut dyn FnMut(u64),
    ) -> Result<()> {
        let mut fetcher = BlockFetcher::new(files);
        let (mut block, mut changes) = (Vec::new(), Vec::<Change>::new());
        let first = self.tip.height as usize + 1;
        let count = (stop as usize + 1).saturating_sub(first);
        for info in chain.best_chain().skip(first).take(count) {
            let at = info.height.expect("best chain blocks have heights");
            fetcher.read(&info, &mut block)?;
            let connected = connect::connect_block(&block, at, &mut self.coins, &mut changes);
            if let Some(error) = self.coins.take_error() {
                return Err(error);
            }
            let counts = match connected {
                Ok(counts) => counts,
                Err((txid, reject)) => {
                    let (hash, height) = (info.hash.0, at);
                    let kind = ErrorKind::NotConnected {
                        hash,
                        height,
                        txid,
                        reject,
                    };
                    report.failure = Some(kind.into());
                    return Ok(());
                }
            };
            if self.undo_blocks > 0 {
                let header = UndoHeader {
                    network: self.network.magic(),
                    height: at,
                    hash: info.hash.0,
                    prev: block[4..36].try_into().expect("a header's parent"),
                };
                let path = undo::write(&self.undo_dir, &header, &changes)?;
                self.unsynced.push(path.clone());
                self.written.push_back((at, path));
            }
            self.tip.height = at;
            self.tip.hash = info.hash.0;
            report.height = at;
            report.hash = info.hash;
            report.transactions += counts.transactions;
            report.bytes += block.len() as u64;
            progress(info.size as u64);
            if self.coins.wants_commit() {
                self.commit()?;
            }
        }
        Ok(())
    }

    /// Commits the set at the tip, the undo files written since the last
    /// commit synced first.
    fn commit(&mut self) -> Result<()> {
        for path in self.unsynced.drain(..) {
            File::open(&path)
                .and_then(|f| f.sync_data())
                .map_err(|e| Error::io(&path, "sync", e))?;
        }
        sync_dir(&self.undo_dir)?;
        self.coins.commit(self.tip)?;
        // Undo data below the last `undo_blocks` of what is now committed
        // is of no use: removed as the run goes (a long first run would
        // otherwise keep every block's).
        while let Some((height, path)) = self.written.front() {
            if height.saturating_add(self.undo_blocks) > self.tip.height {
                break;
            }
            fs::remove_file(path).map_err(|e| Error::io(path, "remove", e))?;
            self.written.pop_front();
        }
        Ok(())
    }

    /// Removes the undo files that are not the last `undo_blocks` blocks'
    /// of the state's chain: older ones, those of blocks disconnected or
    /// never committed, and temporary files.
    fn prune(&self) -> Result<()> {
        let mut keep = Vec::new();
        let (mut height, mut hash) = (self.tip.height, self.tip.hash);
        while keep.len() < self.undo_blocks as usize {
            let Some(header) = self.read_header(height, &hash)? else {
                break;
            };
            keep.push(undo_path(&self.undo_dir, height, &hash));
            if height == 0 {
                break;
            }
            (height, hash) = (height - 1, header.prev);
        }
        let entries =
            fs::read_dir(&self.undo_dir).map_err(|e| Error::io(&self.undo_dir, "read", e))?;
        for entry in entries {
            let path = entry
                .map_err(|e| Error::io(&self.undo_dir, "read", e))?
                .path();
            if !keep.contains(&path) {
                fs::remove_file(&path).map_err(|e| Error::io(&path, "remove", e))?;
            }
        }
        Ok(())
    }
}

/// The chainstate directory's readers over bytes, for fuzz targets and
/// tests (`test-util`).
#[cfg(feature = "test-util")]
pub mod state_files {
    use std::path::Path;

    use crate::utxo::disk::{Journal, Tip, read_journal};

    /// A tip record read and written again, when it reads.
    pub fn tip_round_trip(bytes: &[u8]) -> Option<Vec<u8>> {
        let tip = Tip::decode(bytes, Path::new("tip")).ok()?;
        Some(tip.encode().to_vec())
    }

    /// An undo file read and written again, when it reads.
    pub fn undo_round_trip(bytes: &[u8]) -> Option<Vec<u8>> {
        let (header, changes) = super::undo::decode(bytes, Path::new("undo")).ok()?;
        Some(super::undo::encode(&header, &changes))
    }

    /// A journal read: its pages, and whether it commits; `None` when
    /// refused.
    pub fn journal_pages(bytes: &[u8]) -> Option<(u64, bool)> {
        let mut pages = 0;
        let journal = read_journal(bytes, Path::new("journal"), &mut |_, _, _| {
            pages += 1;
            Ok(())
        })
        .ok()?;
        Some((pages, matches!(journal, Journal::Committed(_))))
    }
}
