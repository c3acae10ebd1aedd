//! Writing the best chain in height order as fresh, plain `blkNNNNN.dat`
//! files (what Core's `contrib/linearize/linearize-data.py` does): one block
//! in memory at a time, each file written under a temporary name and renamed
//! when complete.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::chain::Chain;
use crate::error::{Error, ErrorKind, Result};
use crate::files::BlockFile;
use crate::header::{HEADER_LEN, header_hash};
use crate::record::RECORD_PREFIX_LEN;

/// Core's largest block file, the default output file size.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 128 << 20;

/// What [`linearize`] wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinearizeReport {
    /// The files written, in order.
    pub files: Vec<PathBuf>,
    /// Blocks written.
    pub blocks: u64,
    /// Bytes written.
    pub bytes: u64,
}

struct Output {
    dir: PathBuf,
    index: u32,
    temp: PathBuf,
    writer: BufWriter<File>,
    len: u64,
}

impl Output {
    fn create(dir: &Path, index: u32) -> Result<Output> {
        let temp = dir.join(format!("blk{index:05}.dat.tmp"));
        let file = File::create(&temp).map_err(|e| Error::io(&temp, "create", e))?;
        Ok(Output {
            dir: dir.to_path_buf(),
            index,
            temp,
            writer: BufWriter::with_capacity(1 << 20, file),
            len: 0,
        })
    }

    fn finish(self) -> Result<PathBuf> {
        let file = self
            .writer
            .into_inner()
            .map_err(|e| Error::io(&self.temp, "write", e.into_error()))?;
        file.sync_all()
            .map_err(|e| Error::io(&self.temp, "sync", e))?;
        let path = self.dir.join(format!("blk{:05}.dat", self.index));
        std::fs::rename(&self.temp, &path).map_err(|e| Error::io(&path, "rename", e))?;
        Ok(path)
    }
}

/// Copies the best chain of `chain` (scanned from `files`) into `out_dir` in
/// height order, starting a new file before one would exceed
/// `max_file_size` (a block larger than that gets a file of its own).
/// `progress` is called with each block's size.
pub fn linearize(
    chain: &Chain,
    files: &[BlockFile],
    out_dir: &Path,
    max_file_size: u64,
    progress: &mut dyn FnMut(u64),
) -> Result<LinearizeReport> {
    std::fs::create_dir_all(out_dir).map_err(|e| Error::io(out_dir, "create", e))?;
    let magic = chain.network().magic();
    let mut report = LinearizeReport::default();
    let mut source: Option<(usize, File)> = None;
    let mut block = Vec::new();
    let mut out: Option<Output> = None;
    for info in chain.best_chain() {
        let file = &files[info.file];
        if source.as_ref().is_none_or(|(index, _)| *index != info.file) {
            let handle = File::open(&file.path).map_err(|e| Error::io(&file.path, "open", e))?;
            source = Some((info.file, handle));
        }
        let (_, handle) = source.as_mut().expect("opened above");
        let start = info.offset + RECORD_PREFIX_LEN as u64;
        block.resize(info.size as usize, 0);
        handle
            .seek(SeekFrom::Start(start))
            .and_then(|_| handle.read_exact(&mut block))
            .map_err(|e| Error::io(&file.path, "read", e))?;
        file.xor.apply(&mut block, start);
        let header: &[u8; HEADER_LEN] = block[..HEADER_LEN]
            .try_into()
            .expect("blocks are at least 80 bytes");
        if header_hash(header) != info.hash {
            return Err(ErrorKind::BlockChanged {
                path: file.path.clone(),
                offset: info.offset,
            }
            .into());
        }
        let record_len = RECORD_PREFIX_LEN as u64 + block.len() as u64;
        let next = match out.take() {
            None => Output::create(out_dir, 0)?,
            Some(full) if full.len > 0 && full.len + record_len > max_file_size => {
                let index = full.index + 1;
                report.files.push(full.finish()?);
                Output::create(out_dir, index)?
            }
            Some(current) => current,
        };
        let out = out.insert(next);
        let temp = out.temp.clone();
        let write = |w: &mut BufWriter<File>| -> std::io::Result<()> {
            w.write_all(&magic)?;
            w.write_all(&(block.len() as u32).to_le_bytes())?;
            w.write_all(&block)
        };
        write(&mut out.writer).map_err(|e| Error::io(&temp, "write", e))?;
        out.len += record_len;
        report.blocks += 1;
        report.bytes += record_len;
        progress(block.len() as u64);
    }
    if let Some(out) = out {
        report.files.push(out.finish()?);
    }
    Ok(report)
}
