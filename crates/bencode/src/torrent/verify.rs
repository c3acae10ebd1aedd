//! Checking downloaded data against a torrent's hashes, reading every byte
//! once: v1 SHA-1 pieces across file boundaries, v2 per-file SHA-256 merkle
//! trees over 16 KiB blocks and the piece layers.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use sha1::{Digest, Sha1};

use super::merkle::{self, BLOCK_SIZE, Hash32};
use super::{FileEntry, Torrent, Version};
use crate::Error;

/// The verdict on one piece.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PieceState {
    /// The data matches its hash.
    Good,
    /// The data is there but does not match.
    Bad,
    /// (Part of) the data is absent: a missing or short file.
    Missing,
}

/// Per-file counts of the pieces touching the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileReport {
    /// Path relative to the data directory.
    pub path: String,
    /// Size in bytes.
    pub length: u64,
    /// Pieces that match.
    pub good: u64,
    /// Pieces that do not match.
    pub bad: u64,
    /// Pieces with missing data.
    pub missing: u64,
}

/// The result of [`verify`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    /// One entry per non-pad file, in torrent order.
    pub files: Vec<FileReport>,
    /// Which hashes were checked (`V1` or `V2`; hybrid torrents are checked
    /// against their v2 trees, which cover each file separately).
    pub checked: Version,
}

impl VerifyReport {
    /// True when every piece of every file is good.
    pub fn all_good(&self) -> bool {
        self.files.iter().all(|f| f.bad == 0 && f.missing == 0)
    }
}

fn file_path(dir: &Path, entry: &FileEntry) -> PathBuf {
    let mut p = dir.to_path_buf();
    for c in &entry.path {
        p.push(c);
    }
    p
}

/// Reads exactly `buf.len()` bytes unless the file ends first; returns the
/// number read.
fn read_full(file: &mut File, buf: &mut [u8], path: &Path) -> Result<usize, Error> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(path, e)),
        }
    }
    Ok(n)
}

/// Verify the data under `data_dir` (the directory a client would save the
/// torrent into). `progress` is called with the number of bytes consumed.
pub fn verify(
    torrent: &Torrent,
    data_dir: &Path,
    progress: &mut dyn FnMut(u64),
) -> Result<VerifyReport, Error> {
    if torrent.version.has_v2() {
        verify_v2(torrent, data_dir, progress)
    } else {
        verify_v1(torrent, data_dir, progress)
    }
}

fn open(path: &Path) -> Result<Option<File>, Error> {
    match File::open(path) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, e)),
    }
}

fn verify_v1(
    torrent: &Torrent,
    dir: &Path,
    progress: &mut dyn FnMut(u64),
) -> Result<VerifyReport, Error> {
    let files = torrent.v1_layout();
    let mut reports: Vec<FileReport> = files
        .iter()
        .map(|f| FileReport {
            path: f.display_path(),
            length: f.length,
            good: 0,
            bad: 0,
            missing: 0,
        })
        .collect();
    let piece_length = torrent.piece_length as usize;
    let stream: u64 = files.iter().map(|f| f.length).sum();
    let mut buf = vec![0u8; piece_length];
    let mut fi = 0usize; // current file
    let mut fpos = 0u64; // position within it
    let mut handle: Option<File> = None;
    let mut handle_for = usize::MAX;
    let mut short = false; // the current file ended early or is absent
    let mut touched: Vec<usize> = Vec::new();
    for (piece, expected) in torrent.pieces.iter().enumerate() {
        let start = piece as u64 * piece_length as u64;
        let size = (stream - start).min(piece_length as u64) as usize;
        let mut fill = 0usize;
        let mut missing = false;
        touched.clear();
        while fill < size {
            while fpos == files[fi].length {
                fi += 1;
                fpos = 0;
            }
            let entry = &files[fi];
            let take = ((entry.length - fpos) as usize).min(size - fill);
            if !entry.pad && touched.last() != Some(&fi) {
                touched.push(fi);
            }
            if entry.pad {
                buf[fill..fill + take].fill(0);
            } else {
                if handle_for != fi {
                    let path = file_path(dir, entry);
                    handle = open(&path)?;
                    handle_for = fi;
                    short = handle.is_none();
                }
                if !short {
                    let path = file_path(dir, entry);
                    let f = handle.as_mut().expect("open file");
                    let n = read_full(f, &mut buf[fill..fill + take], &path)?;
                    if n < take {
                        short = true;
                    }
                }
                if short {
                    missing = true;
                }
            }
            fill += take;
            fpos += take as u64;
            progress(take as u64);
        }
        let state = if missing {
            PieceState::Missing
        } else if Sha1::digest(&buf[..size]).as_slice() == expected {
            PieceState::Good
        } else {
            PieceState::Bad
        };
        for &f in &touched {
            let r = &mut reports[f];
            match state {
                PieceState::Good => r.good += 1,
                PieceState::Bad => r.bad += 1,
                PieceState::Missing => r.missing += 1,
            }
        }
    }
    let reports = reports
        .into_iter()
        .zip(files)
        .filter(|(_, f)| !f.pad)
        .map(|(r, _)| r)
        .collect();
    Ok(VerifyReport {
        files: reports,
        checked: Version::V1,
    })
}

fn verify_v2(
    torrent: &Torrent,
    dir: &Path,
    progress: &mut dyn FnMut(u64),
) -> Result<VerifyReport, Error> {
    let piece_length = torrent.piece_length;
    let blocks_per_piece = (piece_length / BLOCK_SIZE) as usize;
    let mut buf = vec![0u8; piece_length as usize];
    let mut reports = Vec::new();
    for entry in torrent.files.iter().filter(|f| !f.pad) {
        let mut report = FileReport {
            path: entry.display_path(),
            length: entry.length,
            good: 0,
            bad: 0,
            missing: 0,
        };
        let Some(root) = entry.pieces_root else {
            reports.push(report);
            continue;
        };
        let pieces = entry.length.div_ceil(piece_length);
        let path = file_path(dir, entry);
        let Some(mut file) = open(&path)? else {
            report.missing = pieces;
            progress(entry.length);
            reports.push(report);
            continue;
        };
        let layer = torrent.piece_layers.get(&root);
        let mut all_blocks: Vec<Hash32> = Vec::new();
        let mut short = false;
        for piece in 0..pieces {
            let size = (entry.length - piece * piece_length).min(piece_length) as usize;
            if short {
                report.missing += 1;
                progress(size as u64);
                continue;
            }
            let n = read_full(&mut file, &mut buf[..size], &path)?;
            progress(size as u64);
            if n < size {
                short = true;
                report.missing += 1;
                continue;
            }
            let blocks: Vec<Hash32> = buf[..size]
                .chunks(BLOCK_SIZE as usize)
                .map(merkle::block_hash)
                .collect();
            match layer {
                Some(layer) => {
                    if merkle::piece_hash(&blocks, blocks_per_piece) == layer[piece as usize] {
                        report.good += 1;
                    } else {
                        report.bad += 1;
                    }
                }
                // A file of at most one piece: its root is the check.
                None => all_blocks.extend_from_slice(&blocks),
            }
        }
        if layer.is_none() && !short {
            if merkle::root_from_blocks(&all_blocks) == root {
                report.good += 1;
            } else {
                report.bad += 1;
            }
        }
        reports.push(report);
    }
    Ok(VerifyReport {
        files: reports,
        checked: Version::V2,
    })
}
