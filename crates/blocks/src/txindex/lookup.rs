//! Looking transactions up: the header and metadata read once at open,
//! then per txid one page of the index (its home page, rarely the next)
//! and the transaction's bytes from its block file, hashed to confirm it.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::format::{self, BLOCK_RECORD, Bad, HEADER_LEN, Header, KEY_LEN, Meta, PAGE, PAGE_SLOTS};
use crate::error::{Error, ErrorKind, Result};
use crate::hash::BlockHash;
use crate::tx::Transaction;
use crate::xor::XorKey;

/// Where the index's bytes come from.
#[derive(Debug)]
enum Source {
    File(File),
    Bytes(Vec<u8>),
}

impl Source {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        match self {
            Source::File(file) => read_exact_at(file, buf, offset),
            Source::Bytes(bytes) => {
                let part = usize::try_from(offset)
                    .ok()
                    .and_then(|start| bytes.get(start..start.checked_add(buf.len())?))
                    .ok_or(std::io::ErrorKind::UnexpectedEof)?;
                buf.copy_from_slice(part);
                Ok(())
            }
        }
    }
}

/// One positioned read (`pread`), however the platform spells it.
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
    }
    #[cfg(windows)]
    {
        let (mut done, mut buf) = (0u64, buf);
        while !buf.is_empty() {
            match std::os::windows::fs::FileExt::seek_read(file, buf, offset + done)? {
                0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                n => {
                    done += n as u64;
                    buf = &mut buf[n..];
                }
            }
        }
        Ok(())
    }
}

/// Where the index says a transaction is: one candidate for a txid
/// (its first 6 bytes matched).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxLocation {
    /// The block file's number in the index's list.
    pub file: usize,
    /// Offset of the transaction's first byte in the file.
    pub offset: u64,
    /// The transaction's length.
    pub len: u32,
    /// Its block's height.
    pub height: u32,
    /// Its position in the block (0: the coinbase).
    pub position: u32,
}

/// A transaction found: its bytes and where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundTx {
    /// The transaction's serialization, as in the block.
    pub raw: Vec<u8>,
    /// Where it is.
    pub location: TxLocation,
}

/// A best-chain block as the index's block table holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexedBlock {
    /// Its hash.
    pub hash: BlockHash,
    /// Its height.
    pub height: u32,
    /// Its time.
    pub time: u32,
}

/// One block file as the index names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexedFile {
    /// Where it is looked for.
    pub path: PathBuf,
    /// Its length when indexed.
    pub len: u64,
    /// Its XOR key.
    pub xor: XorKey,
}

/// An open transaction index (docs/format-blocks.md, "Transaction index").
#[derive(Debug)]
pub struct TxIndex {
    path: PathBuf,
    source: Source,
    header: Header,
    tip: BlockHash,
    files: Vec<IndexedFile>,
}

impl TxIndex {
    /// Opens the index at `path`: reads and checks its header and metadata.
    pub fn open(path: &Path) -> Result<TxIndex> {
        let file = File::open(path).map_err(|e| Error::io(path, "open", e))?;
        let len = file
            .metadata()
            .map_err(|e| Error::io(path, "open", e))?
            .len();
        TxIndex::from_source(path.to_path_buf(), Source::File(file), len)
    }

    /// Opens an index held in memory (`name` is what errors call it).
    pub fn from_bytes(name: &str, bytes: Vec<u8>) -> Result<TxIndex> {
        let len = bytes.len() as u64;
        TxIndex::from_source(PathBuf::from(name), Source::Bytes(bytes), len)
    }

    fn from_source(path: PathBuf, source: Source, len: u64) -> Result<TxIndex> {
        let bad = |bad: Bad| -> Error { bad_index(&path, bad) };
        if len < HEADER_LEN as u64 {
            return Err(bad(Bad::at(len, "file ends in the header")));
        }
        // One read for the header and, unless there are thousands of block
        // files, the metadata too.
        let mut lead = vec![0u8; len.min(PAGE as u64) as usize];
        source
            .read_at(&mut lead, 0)
            .map_err(|e| Error::io(&path, "read", e))?;
        let head: [u8; HEADER_LEN] = lead[..HEADER_LEN].try_into().expect("64 bytes");
        let header = Header::decode(&head).map_err(bad)?;
        if header.file_len() != len {
            return Err(bad(Bad::at(
                len.min(header.file_len()),
                "file length is not the one its header gives (truncated or extended)",
            )));
        }
        let meta_end = HEADER_LEN + header.meta_len as usize;
        let meta = match lead.get(HEADER_LEN..meta_end) {
            Some(meta) => meta.to_vec(),
            None => {
                let mut meta = vec![0u8; header.meta_len as usize];
                source
                    .read_at(&mut meta, HEADER_LEN as u64)
                    .map_err(|e| Error::io(&path, "read", e))?;
                meta
            }
        };
        if !Header::check(&head, &meta) {
            return Err(bad(Bad::at(56, "header checksum does not match")));
        }
        let meta = Meta::decode(&meta).map_err(bad)?;
        let files = meta
            .files
            .into_iter()
            .map(|f| IndexedFile {
                path: PathBuf::from(f.path),
                len: f.len,
                xor: XorKey(f.xor),
            })
            .collect();
        Ok(TxIndex {
            path,
            source,
            header,
            tip: BlockHash(meta.tip),
            files,
        })
    }

    /// Looks for the block files in `dir` (by their names) instead of
    /// where the index was built from them.
    pub fn with_blocks_dir(mut self, dir: &Path) -> TxIndex {
        for file in &mut self.files {
            if let Some(name) = file.path.file_name() {
                file.path = dir.join(name);
            }
        }
        self
    }

    /// Transactions indexed.
    pub fn len(&self) -> u64 {
        self.header.entries
    }

    /// Whether no transaction is indexed.
    pub fn is_empty(&self) -> bool {
        self.header.entries == 0
    }

    /// The best chain's tip it covers and its height (`None`: no block).
    pub fn tip(&self) -> Option<(BlockHash, u32)> {
        self.header
            .blocks
            .checked_sub(1)
            .map(|height| (self.tip, height))
    }

    /// The block files it was built from.
    pub fn files(&self) -> &[IndexedFile] {
        &self.files
    }

    /// The index's file length.
    pub fn file_len(&self) -> u64 {
        self.header.file_len()
    }

    /// The candidates for `txid`: every entry whose key is the txid's
    /// first 6 bytes (reads its home page, and the next only when the
    /// entries run on into it). Reads no block file.
    pub fn locate(&self, txid: &[u8; 32]) -> Result<Vec<TxLocation>> {
        let key: [u8; KEY_LEN] = txid[..KEY_LEN].try_into().expect("6 bytes");
        let mut page_index = format::home_page(&key, self.header.home_pages);
        let mut page = vec![0u8; PAGE];
        let page: &mut [u8; PAGE] = page.as_mut_slice().try_into().expect("a page");
        let mut found = Vec::new();
        loop {
            let offset = self.header.pages_start() + page_index * PAGE as u64;
            self.source
                .read_at(page, offset)
                .map_err(|e| Error::io(&self.path, "read", e))?;
            let entries =
                format::decode_page(page, offset).map_err(|b| bad_index(&self.path, b))?;
            for entry in entries.iter().filter(|e| e.key == key) {
                if entry.file as usize >= self.files.len() || entry.height >= self.header.blocks {
                    return Err(bad_index(
                        &self.path,
                        Bad::at(offset, "entry names a file or height past the index's"),
                    ));
                }
                found.push(TxLocation {
                    file: entry.file as usize,
                    offset: entry.offset,
                    len: entry.len,
                    height: entry.height,
                    position: entry.position,
                });
            }
            let runs_on =
                entries.len() == PAGE_SLOTS && entries.last().is_some_and(|e| e.key <= key);
            if !runs_on || page_index + 1 >= self.header.pages {
                return Ok(found);
            }
            page_index += 1;
        }
    }

    /// The transaction `txid`, read from its block file and confirmed by
    /// its hash; `None` if the index does not hold it.
    pub fn get(&self, txid: &[u8; 32]) -> Result<Option<FoundTx>> {
        for location in self.locate(txid)? {
            let raw = self.read_tx(&location, txid)?;
            if let Some(raw) = raw {
                return Ok(Some(FoundTx { raw, location }));
            }
        }
        Ok(None)
    }

    /// Reads the transaction at `location`; `None` when it is another
    /// transaction whose txid starts as `txid` does.
    fn read_tx(&self, location: &TxLocation, txid: &[u8; 32]) -> Result<Option<Vec<u8>>> {
        let file = &self.files[location.file];
        let end = location.offset.checked_add(location.len as u64);
        if end.is_none_or(|end| end > file.len) {
            return Err(bad_index(
                &self.path,
                Bad::at(0, "entry points past the end of its block file"),
            ));
        }
        let handle = File::open(&file.path).map_err(|e| Error::io(&file.path, "open", e))?;
        let len = handle
            .metadata()
            .map_err(|e| Error::io(&file.path, "open", e))?
            .len();
        if len < file.len {
            return Err(ErrorKind::BlockFileShorter {
                path: file.path.clone(),
                len,
                expected: file.len,
            }
            .into());
        }
        let mut raw = vec![0u8; location.len as usize];
        read_exact_at(&handle, &mut raw, location.offset)
            .map_err(|e| Error::io(&file.path, "read", e))?;
        file.xor.apply(&mut raw, location.offset);
        let changed = || -> Error {
            ErrorKind::TxChanged {
                path: file.path.clone(),
                offset: location.offset,
            }
            .into()
        };
        let read = match Transaction::parse(&raw, 0) {
            Ok((tx, len)) if len == raw.len() => tx.txid(),
            _ => return Err(changed()),
        };
        if read[..KEY_LEN] != txid[..KEY_LEN] {
            return Err(changed());
        }
        Ok((read == *txid).then_some(raw))
    }

    /// The best-chain block at `height`, from the block table.
    pub fn block(&self, height: u32) -> Result<IndexedBlock> {
        if height >= self.header.blocks {
            return Err(ErrorKind::HeightPastTip {
                height,
                tip: self.header.blocks.checked_sub(1),
            }
            .into());
        }
        let offset = self.header.table_start() + height as u64 * BLOCK_RECORD as u64;
        let mut record = [0u8; BLOCK_RECORD];
        self.source
            .read_at(&mut record, offset)
            .map_err(|e| Error::io(&self.path, "read", e))?;
        let (hash, time) = format::decode_block(height, &record).ok_or_else(|| {
            bad_index(
                &self.path,
                Bad::at(offset, "block record check does not match"),
            )
        })?;
        Ok(IndexedBlock {
            hash: BlockHash(hash),
            height,
            time,
        })
    }
}

fn bad_index(path: &Path, bad: Bad) -> Error {
    match bad {
        Bad::At { offset, what } => ErrorKind::BadTxIndex {
            path: path.to_path_buf(),
            offset,
            what,
        },
        Bad::TooNew(version) => ErrorKind::TxIndexTooNew {
            path: path.to_path_buf(),
            version,
        },
    }
    .into()
}
