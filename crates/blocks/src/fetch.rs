//! Reading one block of the chain at the position the scan found it: the
//! file opened once for a run of blocks in it, the record's bytes read, the
//! XOR undone by offset, and the header checked against the hash the scan
//! saw (a file rewritten since is named, not trusted). `linearize` and the
//! UTXO set's connect both read the best chain through it.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

use crate::chain::BlockInfo;
use crate::error::{Error, ErrorKind, Result};
use crate::files::BlockFile;
use crate::header::{HEADER_LEN, header_hash};
use crate::record::RECORD_PREFIX_LEN;

/// Reads blocks by their [`BlockInfo`] from the scanned files, keeping the
/// last file open.
pub(crate) struct BlockFetcher<'a> {
    files: &'a [BlockFile],
    open: Option<(usize, File)>,
}

impl<'a> BlockFetcher<'a> {
    pub(crate) fn new(files: &'a [BlockFile]) -> Self {
        BlockFetcher { files, open: None }
    }

    /// Reads the block `info` describes into `block` (resized to it), XOR
    /// undone; fails if its header no longer hashes to `info.hash`.
    pub(crate) fn read(&mut self, info: &BlockInfo, block: &mut Vec<u8>) -> Result<()> {
        let file = &self.files[info.file];
        if self
            .open
            .as_ref()
            .is_none_or(|(index, _)| *index != info.file)
        {
            let handle = File::open(&file.path).map_err(|e| Error::io(&file.path, "open", e))?;
            self.open = Some((info.file, handle));
        }
        let (_, handle) = self.open.as_mut().expect("opened above");
        let start = info.offset + RECORD_PREFIX_LEN as u64;
        block.resize(info.size as usize, 0);
        handle
            .seek(SeekFrom::Start(start))
            .and_then(|_| handle.read_exact(block))
            .map_err(|e| Error::io(&file.path, "read", e))?;
        file.xor.apply(block, start);
        let changed = || -> Error {
            ErrorKind::BlockChanged {
                path: file.path.clone(),
                offset: info.offset,
            }
            .into()
        };
        let header: &[u8; HEADER_LEN] = block
            .get(..HEADER_LEN)
            .and_then(|h| h.try_into().ok())
            .ok_or_else(changed)?;
        if header_hash(header) != info.hash {
            return Err(changed());
        }
        Ok(())
    }
}
