//! Writing the best chain in height order as fresh, plain `blkNNNNN.dat`
//! files (what Core's `contrib/linearize/linearize-data.py` does): one block
//! in memory at a time, into a staging directory beside the output that
//! takes the output's name only when every file is complete, so new files
//! never mix with old ones and an interrupted run changes nothing.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::chain::Chain;
use crate::error::{Error, ErrorKind, Result};
use crate::fetch::BlockFetcher;
use crate::files::BlockFile;
use crate::record::RECORD_PREFIX_LEN;

/// Core's largest block file, the default output file size.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 128 << 20;

/// The file in a linearized directory that lists the block files
/// [`linearize`] wrote there, one name a line: what `force` may replace.
pub const MANIFEST: &str = ".seekless-linearize";

/// How [`linearize`] writes.
#[derive(Clone, Debug)]
pub struct LinearizeOptions {
    /// Start a new file before one would exceed this many bytes (a block
    /// larger than that gets a file of its own).
    pub max_file_size: u64,
    /// Write into a non-empty output directory, replacing the block files an
    /// earlier `linearize` wrote there (those its manifest lists). Other
    /// files are left alone; a block file it did not write is refused.
    pub force: bool,
}

impl Default for LinearizeOptions {
    fn default() -> Self {
        LinearizeOptions {
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            force: false,
        }
    }
}

/// What [`linearize`] wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinearizeReport {
    /// The files written, in order, by their final names.
    pub files: Vec<PathBuf>,
    /// Blocks written.
    pub blocks: u64,
    /// Bytes written.
    pub bytes: u64,
}

/// Copies the best chain of `chain` (scanned from `files`) into `out_dir` in
/// height order, starting a new file before one would exceed
/// `options.max_file_size`. `progress` is called with each block's size.
///
/// `out_dir` must not exist, be empty, or (with `options.force`) hold only
/// what an earlier `linearize` wrote besides files that are not block files;
/// it must not hold any of `files`. Nothing in it changes until every new
/// file is complete.
pub fn linearize(
    chain: &Chain,
    files: &[BlockFile],
    out_dir: &Path,
    options: &LinearizeOptions,
    progress: &mut dyn FnMut(u64),
) -> Result<LinearizeReport> {
    let target = Target::inspect(out_dir, files, options.force)?;
    let staging = Staging::create(&target.dir)?;
    let magic = chain.network().magic();
    let mut names = Vec::new();
    let mut report = LinearizeReport::default();
    let mut fetcher = BlockFetcher::new(files);
    let mut block = Vec::new();
    let mut out: Option<Output> = None;
    for info in chain.best_chain() {
        fetcher.read(&info, &mut block)?;
        let record_len = RECORD_PREFIX_LEN as u64 + block.len() as u64;
        let next = match out.take() {
            None => Output::create(&staging.dir, 0)?,
            Some(full) if full.len > 0 && full.len + record_len > options.max_file_size => {
                let index = full.index + 1;
                names.push(full.finish()?);
                Output::create(&staging.dir, index)?
            }
            Some(current) => current,
        };
        let out = out.insert(next);
        let write = |w: &mut BufWriter<File>| -> std::io::Result<()> {
            w.write_all(&magic)?;
            w.write_all(&(block.len() as u32).to_le_bytes())?;
            w.write_all(&block)
        };
        write(&mut out.writer).map_err(|e| Error::io(&out.path, "write", e))?;
        out.len += record_len;
        report.blocks += 1;
        report.bytes += record_len;
        progress(block.len() as u64);
    }
    if let Some(out) = out {
        names.push(out.finish()?);
    }
    write_manifest(&staging.dir.join(MANIFEST), names.iter())?;
    staging.commit(&target, &names)?;
    report.files = names.iter().map(|name| out_dir.join(name)).collect();
    Ok(report)
}

/// Checks, before any work, that [`linearize`] with `options` may write into
/// `out_dir` (it checks again when it starts). Creates `out_dir`'s parent
/// when absent.
pub fn check_linearize_output(
    out_dir: &Path,
    files: &[BlockFile],
    options: &LinearizeOptions,
) -> Result<()> {
    Target::inspect(out_dir, files, options.force).map(drop)
}

/// One output file being written in the staging directory.
struct Output {
    path: PathBuf,
    index: u32,
    writer: BufWriter<File>,
    len: u64,
}

impl Output {
    fn create(dir: &Path, index: u32) -> Result<Output> {
        let path = dir.join(block_file_name(index));
        let file = File::create(&path).map_err(|e| Error::io(&path, "create", e))?;
        Ok(Output {
            path,
            index,
            writer: BufWriter::with_capacity(1 << 20, file),
            len: 0,
        })
    }

    /// Flushes and syncs the file; returns its name.
    fn finish(self) -> Result<String> {
        let file = self
            .writer
            .into_inner()
            .map_err(|e| Error::io(&self.path, "write", e.into_error()))?;
        file.sync_all()
            .map_err(|e| Error::io(&self.path, "sync", e))?;
        Ok(block_file_name(self.index))
    }
}

fn block_file_name(index: u32) -> String {
    format!("blk{index:05}.dat")
}

/// Whether `name` is what Core or `linearize` would call a block file.
fn is_block_file_name(name: &str) -> bool {
    name.starts_with("blk") && name.contains(".dat")
}

/// The output directory as found before writing.
struct Target {
    /// Its real path (its parent resolved), where the staging directory goes beside.
    dir: PathBuf,
    /// What an earlier `linearize` wrote there (its manifest), when the
    /// directory is not empty; `None` when it is absent or empty.
    earlier: Option<BTreeSet<String>>,
}

impl Target {
    fn inspect(out_dir: &Path, files: &[BlockFile], force: bool) -> Result<Target> {
        let name = out_dir
            .file_name()
            .filter(|_| !out_dir.ends_with(".."))
            .map(|n| n.to_owned());
        let dir = match std::fs::canonicalize(out_dir) {
            Ok(real) => real,
            Err(_) => {
                let name = name.ok_or_else(|| not_a_directory(out_dir))?;
                let parent = match out_dir.parent() {
                    Some(p) if !p.as_os_str().is_empty() => p,
                    _ => Path::new("."),
                };
                std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, "create", e))?;
                let parent =
                    std::fs::canonicalize(parent).map_err(|e| Error::io(parent, "open", e))?;
                return Ok(Target {
                    dir: parent.join(name),
                    earlier: None,
                });
            }
        };
        if !dir.is_dir() {
            return Err(not_a_directory(out_dir));
        }
        for file in files {
            let input = std::fs::canonicalize(&file.path).unwrap_or_else(|_| file.path.clone());
            if input.starts_with(&dir) {
                return Err(ErrorKind::OutputHoldsInput {
                    dir: out_dir.to_path_buf(),
                    input: file.path.clone(),
                }
                .into());
            }
        }
        let mut entries = Vec::new();
        for entry in std::fs::read_dir(&dir).map_err(|e| Error::io(out_dir, "list", e))? {
            let entry = entry.map_err(|e| Error::io(out_dir, "list", e))?;
            entries.push(entry.file_name().to_string_lossy().into_owned());
        }
        if entries.is_empty() {
            return Ok(Target { dir, earlier: None });
        }
        if !force {
            return Err(ErrorKind::OutputNotEmpty {
                dir: out_dir.to_path_buf(),
            }
            .into());
        }
        let earlier = read_manifest(&dir.join(MANIFEST))?;
        if let Some(foreign) = entries
            .iter()
            .find(|name| is_block_file_name(name) && !earlier.contains(*name))
        {
            return Err(ErrorKind::OutputForeign {
                dir: out_dir.to_path_buf(),
                file: foreign.clone(),
            }
            .into());
        }
        Ok(Target {
            dir,
            earlier: Some(earlier),
        })
    }
}

fn not_a_directory(path: &Path) -> Error {
    Error::io(
        path,
        "write into",
        std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
    )
}

/// The names a manifest lists; none when there is no manifest.
fn read_manifest(path: &Path) -> Result<BTreeSet<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text
            .lines()
            .filter(|name| is_block_file_name(name) && !name.contains(['/', '\\']))
            .map(str::to_owned)
            .collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeSet::new()),
        Err(e) => Err(Error::io(path, "read", e)),
    }
}

/// Writes a manifest under a temporary name, then renames it to `path`.
fn write_manifest<'a>(path: &Path, names: impl Iterator<Item = &'a String>) -> Result<()> {
    let mut text = String::new();
    for name in names {
        text.push_str(name);
        text.push('\n');
    }
    let temp = path.with_extension("tmp");
    let result = File::create(&temp)
        .and_then(|mut f| f.write_all(text.as_bytes()).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&temp, path));
    result.map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        Error::io(path, "write", e)
    })
}

/// A hidden directory beside the output where the new files are written;
/// removed with whatever it holds unless committed.
struct Staging {
    dir: PathBuf,
    committed: bool,
}

impl Staging {
    fn create(target: &Path) -> Result<Staging> {
        let name = target.file_name().unwrap_or_default().to_string_lossy();
        let dir =
            target.with_file_name(format!(".{name}.seekless-linearize-{}", std::process::id()));
        // A directory of that name is left over from a killed run of a
        // process with the same id: nothing in it is anyone else's.
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).map_err(|e| Error::io(&dir, "create", e))?;
        Ok(Staging {
            dir,
            committed: false,
        })
    }

    /// Gives the staged files their place: the whole directory takes the
    /// output's name when the output is absent or empty; otherwise the
    /// earlier files are replaced one by one, the manifest first listing
    /// both, so a run interrupted half-way can still be forced over.
    fn commit(mut self, target: &Target, names: &[String]) -> Result<()> {
        let dir = &target.dir;
        match &target.earlier {
            None => {
                if let Err(e) = std::fs::rename(&self.dir, dir) {
                    // Where renaming over an empty directory is not allowed.
                    std::fs::remove_dir(dir)
                        .and_then(|()| std::fs::rename(&self.dir, dir))
                        .map_err(|_| Error::io(dir, "rename into place", e))?;
                }
            }
            Some(earlier) => {
                let manifest = dir.join(MANIFEST);
                write_manifest(&manifest, earlier.iter().chain(names))?;
                for old in earlier.iter().filter(|old| !names.contains(old)) {
                    match std::fs::remove_file(dir.join(old)) {
                        Ok(()) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(e) => return Err(Error::io(dir.join(old), "remove", e)),
                    }
                }
                for name in names.iter().map(String::as_str).chain([MANIFEST]) {
                    let to = dir.join(name);
                    std::fs::rename(self.dir.join(name), &to)
                        .map_err(|e| Error::io(&to, "rename into place", e))?;
                }
                let _ = std::fs::remove_dir(&self.dir);
            }
        }
        sync_dir(dir);
        self.committed = true;
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Makes the renames durable where directories can be synced.
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    #[cfg(unix)]
    if let Some(parent) = dir.parent().and_then(|p| File::open(p).ok()) {
        let _ = parent.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}
