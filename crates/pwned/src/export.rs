//! The corpus back as text, for tools that read the downloader's files: one
//! file of `HASH:COUNT` lines sorted by hash, or a directory of per-range
//! files `00000.txt` … `FFFFF.txt` as Troy Hunt's `haveibeenpwned-downloader`
//! writes them with `-s false`.
//!
//! Each per-range file holds exactly the body of the range API's answer
//! (`GET /range/{PREFIX}`), which the downloader copies to disk untouched:
//! uppercase suffixes (35 hex digits for SHA-1, 27 for NTLM), `:`, the
//! decimal count, CRLF between lines and none after the last; an empty
//! range is an empty file. The directory is written under a temporary name
//! beside its own and renamed when complete and on disk, so no reader ever
//! sees a half-written one under the final name.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Instant;

use crate::error::{Error, ErrorKind, Result};
use crate::format::hash::Key;
use crate::format::source::RANGES;
use crate::range::render::write_range_body;
use crate::read::index::Index;
use crate::tmpfile::Nameless;

/// What an export writes.
///
/// Start from `default()` and set the fields that differ: new fields may
/// come, so it is not built field by field outside this crate.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ExportOptions {
    /// Only hashes seen at least this many times are written (1: all).
    pub min_count: u64,
    /// The sorted file's lines end with CRLF instead of LF. (Per-range
    /// files always have CRLF between lines, as the range API answers.)
    pub crlf: bool,
    /// Threads writing per-range files.
    pub threads: usize,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            min_count: 1,
            crlf: false,
            threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
        }
    }
}

/// What an export wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[non_exhaustive]
pub struct ExportSummary {
    /// Hashes written.
    pub hashes: u64,
    /// Bytes of text written.
    pub bytes: u64,
    /// Files written (1 for the sorted file, 1,048,576 for ranges; 0 to a
    /// stream).
    pub files: u64,
    /// Seconds it took, the final sync included.
    pub seconds: f64,
}

impl ExportSummary {
    /// Bytes of text written a second.
    pub fn bytes_per_second(&self) -> f64 {
        if self.seconds > 0.0 {
            self.bytes as f64 / self.seconds
        } else {
            0.0
        }
    }
}

/// Progress of a per-range export, reported from the writing threads.
pub trait ExportProgress: Sync {
    /// `ranges` more range files have been written.
    fn ranges(&self, _ranges: u32) {}
}

/// An export that reports nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoExportProgress;

impl ExportProgress for NoExportProgress {}

/// A compact index keeps only the top bits of each hash: it cannot be
/// written out as whole hashes.
fn whole_hashes(index: &Index) -> Result<()> {
    let stats = index.stats();
    if stats.is_compact() {
        return Err(ErrorKind::Compact {
            key_bits: stats.key_bits,
        }
        .into());
    }
    Ok(())
}

/// Writes the corpus to `out` as `HASH:COUNT` lines, uppercase, sorted by
/// hash, each ended by LF (CRLF with `crlf`): the format of the published
/// "ordered by hash" files and of the downloader's single file. A failed
/// write is an [`ErrorKind::Io`] without a path (the caller knows what
/// `out` is).
pub fn write_sorted(
    index: &Index,
    out: impl Write,
    options: &ExportOptions,
) -> Result<ExportSummary> {
    let started = Instant::now();
    whole_hashes(index)?;
    let kind = index.kind();
    let end: &[u8] = if options.crlf { b"\r\n" } else { b"\n" };
    let mut out = BufWriter::with_capacity(1 << 20, out);
    let mut line = Vec::with_capacity(64);
    let mut summary = ExportSummary::default();
    let mut digits = [0u8; 20];
    for item in index.iter() {
        let (key, count) = item?;
        if count < options.min_count {
            continue;
        }
        line.clear();
        key.write_hex(kind, &mut line);
        line.push(b':');
        line.extend_from_slice(decimal(count, &mut digits));
        line.extend_from_slice(end);
        out.write_all(&line).map_err(|e| Error::io(None, e))?;
        summary.hashes += 1;
        summary.bytes += line.len() as u64;
    }
    out.flush().map_err(|e| Error::io(None, e))?;
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// The decimal digits of `n`, written at the end of `buf`.
fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[at..];
        }
    }
}

/// [`write_sorted`] into the file `path`, written without a name (or under
/// a temporary one) beside it, synced, and given its name only when
/// complete: an error leaves nothing, and what was at `path` stays.
/// Errors name `path`.
pub fn export_sorted(index: &Index, path: &Path, options: &ExportOptions) -> Result<ExportSummary> {
    whole_hashes(index)?;
    let started = Instant::now();
    let io_err = |e| Error::io(path.to_path_buf(), e);
    let file = Nameless::create(&crate::tmpfile::parent_dir(path), "export").map_err(io_err)?;
    let mut summary = write_sorted(index, &file.file, options).map_err(|e| e.with_path(path))?;
    file.file.sync_all().map_err(io_err)?;
    file.persist(path).map_err(io_err)?;
    summary.files = 1;
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// The per-range file name of `prefix`: `5BAA6.txt`.
pub fn range_file_name(prefix: u32) -> String {
    format!("{prefix:05X}.txt")
}

/// Ranges a writing thread takes at a time: consecutive ranges read
/// consecutive pages.
const CHUNK: u32 = 1024;

/// Writes every range of the index into the directory `dir`, one file per
/// range (`00000.txt` … `FFFFF.txt`, all 1,048,576 of them, an empty range
/// an empty file), each holding what the range API answers for it (see
/// the module's documentation), on `options.threads` threads.
///
/// `dir` must not exist, or be an empty directory: anything else is
/// refused before anything is written, and nothing of the user's is ever
/// removed. The files are written into a new directory beside `dir`
/// (`.NAME.seekless-partial-PID`), synced to disk, and that directory is
/// then renamed to `dir` (replacing it when it is empty). On an error the
/// partial directory is removed; errors name the file under `dir` that
/// could not be written.
pub fn export_ranges(
    index: &Index,
    dir: &Path,
    options: &ExportOptions,
    progress: &dyn ExportProgress,
) -> Result<ExportSummary> {
    let started = Instant::now();
    whole_hashes(index)?;
    new_or_empty(dir)?;
    let name = dir.file_name().ok_or_else(|| {
        Error::io(
            dir.to_path_buf(),
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a directory name (give one, e.g. ranges/)",
            ),
        )
    })?;
    let partial = crate::tmpfile::parent_dir(dir).join(format!(
        ".{}.seekless-partial-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    fs::create_dir(&partial).map_err(|e| Error::io(dir.to_path_buf(), e))?;
    let written = write_ranges(index, &partial, dir, options, progress)
        .and_then(|summary| finish(&partial, dir).map(|()| summary));
    match written {
        Ok(mut summary) => {
            summary.seconds = started.elapsed().as_secs_f64();
            Ok(summary)
        }
        Err(e) => {
            // Only what this export made: the directory it created.
            let _ = fs::remove_dir_all(&partial);
            Err(e)
        }
    }
}

/// Refuses `dir` unless it does not exist or is an empty directory (a
/// symbolic link is refused too: the rename would replace the link).
fn new_or_empty(dir: &Path) -> Result<()> {
    let refuse = |what: &str| {
        Err(Error::io(
            dir.to_path_buf(),
            io::Error::new(io::ErrorKind::AlreadyExists, what.to_string()),
        ))
    };
    match fs::symlink_metadata(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(dir.to_path_buf(), e)),
        Ok(meta) if meta.is_dir() => {
            let mut entries = fs::read_dir(dir).map_err(|e| Error::io(dir.to_path_buf(), e))?;
            if entries.next().is_some() {
                refuse(
                    "exists and is not empty; per-range files go into a new or empty \
                     directory (nothing was changed)",
                )
            } else {
                Ok(())
            }
        }
        Ok(_) => refuse(
            "exists and is not a directory; per-range files go into a new or empty \
             directory (nothing was changed)",
        ),
    }
}

/// Writes all ranges into `partial` on the option's threads; errors name
/// the file under `dir`.
fn write_ranges(
    index: &Index,
    partial: &Path,
    dir: &Path,
    options: &ExportOptions,
    progress: &dyn ExportProgress,
) -> Result<ExportSummary> {
    let next = AtomicU32::new(0);
    let stop = AtomicBool::new(false);
    let hashes = AtomicU64::new(0);
    let bytes = AtomicU64::new(0);
    let failure: Mutex<Option<(u32, Error)>> = Mutex::new(None);
    let worker = || {
        let mut body = Vec::new();
        let mut pairs: Vec<(Key, u64)> = Vec::new();
        let (mut my_hashes, mut my_bytes) = (0u64, 0u64);
        'chunks: while !stop.load(Ordering::Relaxed) {
            let first = next.fetch_add(CHUNK, Ordering::Relaxed);
            if first >= RANGES {
                break;
            }
            for prefix in first..(first + CHUNK).min(RANGES) {
                let written = range_text(index, prefix, options.min_count, &mut body, &mut pairs)
                    .and_then(|lines| {
                        let name = range_file_name(prefix);
                        write_file(&partial.join(&name), &body)
                            .map_err(|e| Error::io(dir.join(&name), e))?;
                        Ok(lines)
                    });
                match written {
                    Ok(lines) => {
                        my_hashes += lines;
                        my_bytes += body.len() as u64;
                    }
                    Err(e) => {
                        stop.store(true, Ordering::Relaxed);
                        let mut failure = failure.lock().unwrap_or_else(|e| e.into_inner());
                        // The lowest range's error, whichever thread met it.
                        if failure.as_ref().is_none_or(|(at, _)| prefix < *at) {
                            *failure = Some((prefix, e));
                        }
                        break 'chunks;
                    }
                }
                if stop.load(Ordering::Relaxed) {
                    break 'chunks;
                }
            }
            progress.ranges((first + CHUNK).min(RANGES) - first);
        }
        hashes.fetch_add(my_hashes, Ordering::Relaxed);
        bytes.fetch_add(my_bytes, Ordering::Relaxed);
    };
    let threads = options.threads.clamp(1, 256);
    std::thread::scope(|scope| {
        for _ in 1..threads {
            scope.spawn(worker);
        }
        worker();
    });
    if let Some((_, e)) = failure.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(e);
    }
    Ok(ExportSummary {
        hashes: hashes.into_inner(),
        bytes: bytes.into_inner(),
        files: u64::from(RANGES),
        seconds: 0.0,
    })
}

/// The text of the range `prefix` into `body` (cleared first): the range
/// API's answer, with only the hashes seen `min_count` times or more.
/// Returns how many lines it holds.
fn range_text(
    index: &Index,
    prefix: u32,
    min_count: u64,
    body: &mut Vec<u8>,
    pairs: &mut Vec<(Key, u64)>,
) -> Result<u64> {
    body.clear();
    if min_count <= 1 {
        index.write_range(prefix, body)?;
        // Lines are joined by CRLF, none after the last.
        let breaks = body.iter().filter(|&&b| b == b'\n').count() as u64;
        return Ok(if body.is_empty() { 0 } else { breaks + 1 });
    }
    pairs.clear();
    index.range_into(u64::from(prefix), 20, pairs)?;
    pairs.retain(|&(_, count)| count >= min_count);
    write_range_body(index.kind(), pairs, body);
    Ok(pairs.len() as u64)
}

/// Creates `path` (it must not exist) holding `bytes`. Elsewhere than on
/// Linux, where one `syncfs` at the end writes every file out, each file
/// is synced as it is written.
fn write_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = File::options().write(true).create_new(true).open(path)?;
    file.write_all(bytes)?;
    #[cfg(not(target_os = "linux"))]
    file.sync_all()?;
    Ok(())
}

/// Puts the complete directory `partial` on disk and renames it to `dir`.
fn finish(partial: &Path, dir: &Path) -> Result<()> {
    let io_err = |e| Error::io(dir.to_path_buf(), e);
    // Directories are opened and synced on Unix only (Windows opens none
    // without backup semantics, and its files were flushed one by one).
    #[cfg(unix)]
    {
        let handle = File::open(partial).map_err(io_err)?;
        #[cfg(target_os = "linux")]
        sync_file_system(&handle).map_err(io_err)?;
        handle.sync_all().map_err(io_err)?;
    }
    // Windows renames a directory only to a name that is free: the empty
    // directory `new_or_empty` allowed goes first (removing it fails if
    // anything was put into it since).
    #[cfg(windows)]
    if dir.is_dir() {
        fs::remove_dir(dir).map_err(io_err)?;
    }
    fs::rename(partial, dir).map_err(io_err)?;
    // The new name on disk too.
    #[cfg(unix)]
    File::open(crate::tmpfile::parent_dir(dir))
        .and_then(|d| d.sync_all())
        .map_err(io_err)?;
    Ok(())
}

/// Writes out every dirty file of the file system `file` is on: one call
/// for a million files, where syncing each would wait for a million
/// journal commits.
#[cfg(target_os = "linux")]
fn sync_file_system(file: &File) -> io::Result<()> {
    use std::os::unix::io::AsRawFd;
    // SAFETY: syncfs reads only the descriptor, open for the call.
    let done = unsafe { libc::syncfs(file.as_raw_fd()) };
    if done == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::hash::Kind;
    use crate::prepare::options::BuildOptions;
    use crate::prepare::run::build_to_vec;

    fn index_of(text: &str) -> Index {
        let input = crate::Input::Bytes {
            name: "corpus".into(),
            data: text.as_bytes().to_vec(),
        };
        Index::from_bytes(
            build_to_vec(vec![input], &BuildOptions::default())
                .unwrap()
                .0,
        )
        .unwrap()
    }

    #[test]
    fn decimal_digits() {
        let mut buf = [0u8; 20];
        for n in [0, 1, 9, 10, 99, 100, 4294967295, u64::MAX] {
            assert_eq!(decimal(n, &mut buf), n.to_string().as_bytes());
        }
    }

    #[test]
    fn sorted_lines_with_a_floor_on_counts() {
        let index = index_of(
            "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:3\n\
             0000000000000000000000000000000000000001:1\n",
        );
        let mut out = Vec::new();
        let options = ExportOptions::default();
        let s = write_sorted(&index, &mut out, &options).unwrap();
        assert_eq!(
            out,
            b"0000000000000000000000000000000000000001:1\n\
              5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:3\n"
        );
        assert_eq!((s.hashes, s.bytes, s.files), (2, out.len() as u64, 0));
        out.clear();
        let options = ExportOptions {
            min_count: 2,
            crlf: true,
            ..options
        };
        write_sorted(&index, &mut out, &options).unwrap();
        assert_eq!(out, b"5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:3\r\n");
    }

    #[test]
    fn a_range_is_the_api_answer_filtered() {
        let index = index_of(
            "8846F7EAEE8FB117AD06BDD830B7586C:7\n\
             8846F000000000000000000000000000:1\n",
        );
        assert_eq!(index.kind(), Kind::Ntlm);
        let (mut body, mut pairs) = (Vec::new(), Vec::new());
        let lines = range_text(&index, 0x8846F, 1, &mut body, &mut pairs).unwrap();
        assert_eq!(lines, 2);
        assert_eq!(
            body,
            b"000000000000000000000000000:1\r\n7EAEE8FB117AD06BDD830B7586C:7"
        );
        let lines = range_text(&index, 0x8846F, 2, &mut body, &mut pairs).unwrap();
        assert_eq!(
            (lines, &body[..]),
            (1, &b"7EAEE8FB117AD06BDD830B7586C:7"[..])
        );
        let lines = range_text(&index, 0x8846F, 8, &mut body, &mut pairs).unwrap();
        assert_eq!((lines, body.len()), (0, 0));
        let lines = range_text(&index, 0, 1, &mut body, &mut pairs).unwrap();
        assert_eq!((lines, body.len()), (0, 0));
    }

    #[test]
    fn a_directory_in_the_way_is_refused_and_kept() {
        let dir = std::env::temp_dir().join(format!("seekless-export-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("full")).unwrap();
        fs::write(dir.join("full/mine.txt"), b"keep").unwrap();
        fs::write(dir.join("file"), b"keep").unwrap();
        fs::create_dir(dir.join("empty")).unwrap();
        assert!(new_or_empty(&dir.join("absent")).is_ok());
        assert!(new_or_empty(&dir.join("empty")).is_ok());
        let e = new_or_empty(&dir.join("full")).unwrap_err().to_string();
        assert!(e.contains("full: exists and is not empty"), "{e}");
        let e = new_or_empty(&dir.join("file")).unwrap_err().to_string();
        assert!(e.contains("file: exists and is not a directory"), "{e}");
        assert_eq!(fs::read(dir.join("full/mine.txt")).unwrap(), b"keep");
        fs::remove_dir_all(&dir).unwrap();
    }
}
