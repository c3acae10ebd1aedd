//! Checking downloaded data against a torrent's hashes, reading every byte
//! once: v1 SHA-1 pieces across file boundaries, v2 per-file SHA-256 merkle
//! trees over 16 KiB blocks and the piece layers.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use sha1::{Digest, Sha1};

use super::Error;
use super::merkle::{self, BLOCK_SIZE, Hash32};
use super::{FileEntry, Torrent, Version};

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

impl FileReport {
    /// The report for `entry` before any of its pieces is counted.
    fn unchecked(entry: &FileEntry) -> FileReport {
        FileReport {
            path: entry.display_path(),
            length: entry.length,
            good: 0,
            bad: 0,
            missing: 0,
        }
    }
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
///
/// Pieces are read in batches of up to 64 MiB and each batch is hashed on
/// every core.
pub fn verify(
    torrent: &Torrent,
    data_dir: &Path,
    progress: &mut dyn FnMut(u64),
) -> Result<VerifyReport, Error> {
    verify_batched(torrent, data_dir, BATCH_BYTES, progress)
}

fn verify_batched(
    torrent: &Torrent,
    data_dir: &Path,
    batch_bytes: usize,
    progress: &mut dyn FnMut(u64),
) -> Result<VerifyReport, Error> {
    if torrent.version.has_v2() {
        verify_v2(torrent, data_dir, batch_bytes, progress)
    } else {
        verify_v1(torrent, data_dir, batch_bytes, progress)
    }
}

fn open(path: &Path) -> Result<Option<File>, Error> {
    match File::open(path) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Bytes of pieces read before they are hashed together, on every core.
const BATCH_BYTES: usize = 64 << 20;

fn hash_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(16)
}

/// `f(0..count)` on up to `threads` threads, results in order.
fn parallel_map<T: Send>(count: usize, threads: usize, f: &(dyn Fn(usize) -> T + Sync)) -> Vec<T> {
    if threads <= 1 || count <= 1 {
        return (0..count).map(f).collect();
    }
    let chunk = count.div_ceil(threads);
    let mut out: Vec<Option<T>> = (0..count).map(|_| None).collect();
    std::thread::scope(|scope| {
        for (c, slots) in out.chunks_mut(chunk).enumerate() {
            scope.spawn(move || {
                for (j, slot) in slots.iter_mut().enumerate() {
                    *slot = Some(f(c * chunk + j));
                }
            });
        }
    });
    out.into_iter()
        .map(|v| v.expect("every slot filled"))
        .collect()
}

/// Reads the v1 piece stream across file boundaries, one piece at a time.
struct PieceStream<'t> {
    files: &'t [FileEntry],
    dir: &'t Path,
    fi: usize,
    fpos: u64,
    handle: Option<File>,
    handle_for: usize,
    /// The current file ended early or is absent.
    short: bool,
}

impl PieceStream<'_> {
    /// Fills `buf` with the next piece; lists the (non-pad) files it touches
    /// in `touched`; returns whether any of its data is missing.
    fn read(
        &mut self,
        buf: &mut [u8],
        touched: &mut Vec<usize>,
        progress: &mut dyn FnMut(u64),
    ) -> Result<bool, Error> {
        let size = buf.len();
        let mut fill = 0usize;
        let mut missing = false;
        touched.clear();
        while fill < size {
            while self.fpos == self.files[self.fi].length {
                self.fi += 1;
                self.fpos = 0;
            }
            let fi = self.fi;
            let entry = &self.files[fi];
            let take = ((entry.length - self.fpos) as usize).min(size - fill);
            if entry.pad {
                buf[fill..fill + take].fill(0);
            } else {
                if touched.last() != Some(&fi) {
                    touched.push(fi);
                }
                if self.handle_for != fi {
                    let path = file_path(self.dir, entry);
                    self.handle = open(&path)?;
                    self.handle_for = fi;
                    self.short = self.handle.is_none();
                }
                if !self.short {
                    let path = file_path(self.dir, entry);
                    let f = self.handle.as_mut().expect("open file");
                    let n = read_full(f, &mut buf[fill..fill + take], &path)?;
                    if n < take {
                        self.short = true;
                    }
                }
                if self.short {
                    missing = true;
                }
            }
            fill += take;
            self.fpos += take as u64;
            progress(take as u64);
        }
        Ok(missing)
    }
}

fn count(report: &mut FileReport, state: PieceState) {
    match state {
        PieceState::Good => report.good += 1,
        PieceState::Bad => report.bad += 1,
        PieceState::Missing => report.missing += 1,
    }
}

fn verify_v1(
    torrent: &Torrent,
    dir: &Path,
    batch_bytes: usize,
    progress: &mut dyn FnMut(u64),
) -> Result<VerifyReport, Error> {
    let files = torrent.v1_layout();
    let mut reports: Vec<FileReport> = files.iter().map(FileReport::unchecked).collect();
    let piece_length = torrent.piece_length as usize;
    let stream: u64 = files.iter().map(|f| f.length).sum();
    let threads = hash_threads();
    let batch = (batch_bytes / piece_length).max(threads).max(1);
    // Never more than the data itself: the piece length comes from the
    // torrent and may be far larger than the files.
    let buf_len = (batch.min(torrent.pieces.len()) as u64 * piece_length as u64).min(stream);
    let mut buf = vec![0u8; buf_len as usize];
    let mut reader = PieceStream {
        files,
        dir,
        fi: 0,
        fpos: 0,
        handle: None,
        handle_for: usize::MAX,
        short: false,
    };
    let mut touched: Vec<Vec<usize>> = vec![Vec::new(); batch];
    let mut missing = vec![false; batch];
    let mut sizes = vec![0usize; batch];
    let mut first = 0usize;
    while first < torrent.pieces.len() {
        let n = batch.min(torrent.pieces.len() - first);
        for k in 0..n {
            let start = (first + k) as u64 * piece_length as u64;
            sizes[k] = (stream - start).min(piece_length as u64) as usize;
            let slot = &mut buf[k * piece_length..k * piece_length + sizes[k]];
            missing[k] = reader.read(slot, &mut touched[k], progress)?;
        }
        let states = parallel_map(n, threads, &|k| {
            if missing[k] {
                PieceState::Missing
            } else if Sha1::digest(&buf[k * piece_length..k * piece_length + sizes[k]]).as_slice()
                == torrent.pieces[first + k]
            {
                PieceState::Good
            } else {
                PieceState::Bad
            }
        });
        for (k, state) in states.into_iter().enumerate() {
            for &f in &touched[k] {
                count(&mut reports[f], state);
            }
        }
        first += n;
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
    batch_bytes: usize,
    progress: &mut dyn FnMut(u64),
) -> Result<VerifyReport, Error> {
    let piece_length = torrent.piece_length as usize;
    let blocks_per_piece = piece_length / BLOCK_SIZE as usize;
    let threads = hash_threads();
    let batch = (batch_bytes / piece_length).max(threads).max(1);
    // Never more than the largest file: the piece length comes from the
    // torrent and may be far larger than the files.
    let largest = torrent.files.iter().map(|f| f.length).max().unwrap_or(0);
    let buf_len = (batch as u64 * piece_length as u64).min(largest);
    let mut buf = vec![0u8; buf_len as usize];
    let mut sizes = vec![0usize; batch];
    let mut reports = Vec::new();
    for entry in torrent.files.iter().filter(|f| !f.pad) {
        let mut report = FileReport::unchecked(entry);
        let Some(root) = entry.pieces_root else {
            reports.push(report);
            continue;
        };
        let pieces = entry.length.div_ceil(piece_length as u64) as usize;
        let path = file_path(dir, entry);
        let Some(mut file) = open(&path)? else {
            report.missing = pieces as u64;
            progress(entry.length);
            reports.push(report);
            continue;
        };
        let layer = torrent.piece_layers.get(&root);
        let mut short = false;
        let mut first = 0usize;
        while first < pieces {
            let n = batch.min(pieces - first);
            // Read the batch; pieces from a short read on are missing.
            let mut complete = 0usize;
            for (k, size) in sizes.iter_mut().enumerate().take(n) {
                let offset = (first + k) as u64 * piece_length as u64;
                *size = (entry.length - offset).min(piece_length as u64) as usize;
                progress(*size as u64);
                if short {
                    continue;
                }
                let slot = &mut buf[k * piece_length..k * piece_length + *size];
                if read_full(&mut file, slot, &path)? < *size {
                    short = true;
                } else {
                    complete += 1;
                }
            }
            report.missing += (n - complete) as u64;
            let hashed = parallel_map(complete, threads, &|k| {
                let blocks: Vec<Hash32> = buf[k * piece_length..k * piece_length + sizes[k]]
                    .chunks(BLOCK_SIZE as usize)
                    .map(merkle::block_hash)
                    .collect();
                (merkle::piece_hash(&blocks, blocks_per_piece), blocks)
            });
            for (k, (piece_hash, blocks)) in hashed.into_iter().enumerate() {
                let good = match layer {
                    Some(layer) => piece_hash == layer[first + k],
                    // A file of at most one piece: its root is the check.
                    None => merkle::root_from_blocks(&blocks) == root,
                };
                count(
                    &mut report,
                    if good {
                        PieceState::Good
                    } else {
                        PieceState::Bad
                    },
                );
            }
            first += n;
        }
        reports.push(report);
    }
    Ok(VerifyReport {
        files: reports,
        checked: Version::V2,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::torrent::{CreateOptions, create};

    #[test]
    fn parallel_map_keeps_order() {
        for threads in [1, 2, 3, 8] {
            let out = parallel_map(10, threads, &|k| k * k);
            assert_eq!(out, (0..10).map(|k| k * k).collect::<Vec<_>>());
        }
        assert!(parallel_map(0, 4, &|k| k).is_empty());
    }

    #[test]
    fn small_batches_give_the_same_report() {
        let dir =
            std::env::temp_dir().join(format!("seekless-verify-batch-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("d")).unwrap();
        let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(dir.join("d/a"), &data).unwrap();
        std::fs::write(dir.join("d/b"), &data[..40_000]).unwrap();
        for version in [Version::V1, Version::V2, Version::Hybrid] {
            let options = CreateOptions {
                version,
                piece_length: Some(16384),
                ..CreateOptions::default()
            };
            let t = Torrent::from_bytes(&create(&dir.join("d"), &options, &mut |_| {}).unwrap())
                .unwrap();
            let whole = verify_batched(&t, &dir, 1 << 30, &mut |_| {}).unwrap();
            assert!(whole.all_good(), "{version:?}");
            // Damage a byte in the third piece and cut the file short.
            let mut bad = data.clone();
            bad[40_000] ^= 1;
            bad.truncate(250_000);
            std::fs::write(dir.join("d/a"), &bad).unwrap();
            let big = verify_batched(&t, &dir, 1 << 30, &mut |_| {}).unwrap();
            let small = verify_batched(&t, &dir, 1, &mut |_| {}).unwrap();
            assert_eq!(big, small, "{version:?}");
            let a = &small.files[0];
            assert_eq!((a.bad, a.missing), (1, 4), "{version:?}: {a:?}");
            std::fs::write(dir.join("d/a"), &data).unwrap();
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
