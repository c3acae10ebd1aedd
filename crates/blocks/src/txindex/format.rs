//! The transaction index's bytes (docs/format-blocks.md, "Transaction
//! index"): header, metadata, pages of entries, the block table. Encoders
//! and decoders side by side; the decoders check what they read and never
//! allocate from a length they have not bounded.

use sha2::{Digest, Sha256};

pub(crate) const MAGIC: [u8; 8] = *b"SLTXIDX\0";
pub(crate) const VERSION: u32 = 1;
pub(crate) const HEADER_LEN: usize = 64;
pub(crate) const PAGE: usize = 4096;
pub(crate) const ENTRY_LEN: usize = 24;
pub(crate) const PAGE_SLOTS: usize = 170;
/// Entries a home page is given on average: three quarters of its slots.
pub(crate) const PER_HOME_PAGE: u64 = 128;
pub(crate) const KEY_LEN: usize = 6;
pub(crate) const BLOCK_RECORD: usize = 40;
pub(crate) const MAX_META: u32 = 16 << 20;
pub(crate) const MAX_FILES: u32 = 1 << 24;
pub(crate) const OFFSET_BITS: u32 = 40;
/// Largest transaction length and position an entry holds (3 bytes each).
pub(crate) const MAX_U24: u32 = (1 << 24) - 1;
const CHECK_AT: usize = PAGE - 4;

fn sha256(parts: &[&[u8]]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part);
    }
    hasher.finalize().into()
}

/// The fixed header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) version: u32,
    pub(crate) network: [u8; 4],
    pub(crate) entries: u64,
    pub(crate) home_pages: u64,
    pub(crate) pages: u64,
    pub(crate) blocks: u32,
    pub(crate) meta_len: u32,
}

impl Header {
    /// A header of no entries, one page and no blocks, to fill in.
    pub(crate) fn empty() -> Header {
        Header {
            version: VERSION,
            network: [0; 4],
            entries: 0,
            home_pages: 1,
            pages: 1,
            blocks: 0,
            meta_len: 0,
        }
    }

    /// The 64 header bytes, with the checksum over them and `meta`.
    pub(crate) fn encode(&self, meta: &[u8]) -> [u8; HEADER_LEN] {
        let mut out = [0u8; HEADER_LEN];
        out[0..8].copy_from_slice(&MAGIC);
        out[8..12].copy_from_slice(&self.version.to_le_bytes());
        out[12..16].copy_from_slice(&self.network);
        out[16..24].copy_from_slice(&self.entries.to_le_bytes());
        out[24..32].copy_from_slice(&self.home_pages.to_le_bytes());
        out[32..40].copy_from_slice(&self.pages.to_le_bytes());
        out[40..44].copy_from_slice(&self.blocks.to_le_bytes());
        out[44..48].copy_from_slice(&self.meta_len.to_le_bytes());
        let sum = sha256(&[&out[..56], meta]);
        out[56..64].copy_from_slice(&sum[..8]);
        out
    }

    /// Reads the fields; checks the magic, the version and the bounds that
    /// need no metadata (the checksum is checked by [`Header::check`]).
    pub(crate) fn decode(bytes: &[u8; HEADER_LEN]) -> Result<Header, Bad> {
        if bytes[0..8] != MAGIC {
            return Err(Bad::at(0, "wrong magic (not a seekless transaction index)"));
        }
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4"));
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8"));
        let header = Header {
            version: u32_at(8),
            network: bytes[12..16].try_into().expect("4 bytes"),
            entries: u64_at(16),
            home_pages: u64_at(24),
            pages: u64_at(32),
            blocks: u32_at(40),
            meta_len: u32_at(44),
        };
        if header.version > VERSION {
            return Err(Bad::TooNew(header.version));
        }
        if header.version == 0 {
            return Err(Bad::at(8, "version 0"));
        }
        if header.meta_len > MAX_META {
            return Err(Bad::at(44, "metadata length above 16 MiB"));
        }
        if header.home_pages == 0 || header.pages < header.home_pages {
            return Err(Bad::at(24, "page counts out of range"));
        }
        if header.pages > u64::MAX / PAGE as u64 / 2
            || header.entries > header.pages * PAGE_SLOTS as u64
        {
            return Err(Bad::at(16, "entry or page count out of range"));
        }
        if bytes[48..56] != [0; 8] {
            return Err(Bad::at(48, "reserved bytes not zero"));
        }
        Ok(header)
    }

    /// Whether the checksum matches the header and `meta`.
    pub(crate) fn check(bytes: &[u8; HEADER_LEN], meta: &[u8]) -> bool {
        sha256(&[&bytes[..56], meta])[..8] == bytes[56..64]
    }

    pub(crate) fn pages_start(&self) -> u64 {
        (HEADER_LEN as u64 + self.meta_len as u64).div_ceil(PAGE as u64) * PAGE as u64
    }

    pub(crate) fn table_start(&self) -> u64 {
        self.pages_start() + self.pages * PAGE as u64
    }

    /// The length the file must have.
    pub(crate) fn file_len(&self) -> u64 {
        self.table_start() + self.blocks as u64 * BLOCK_RECORD as u64
    }
}

/// What is wrong with index bytes: where and what, or a newer version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bad {
    At { offset: u64, what: &'static str },
    TooNew(u32),
}

impl Bad {
    pub(crate) fn at(offset: u64, what: &'static str) -> Bad {
        Bad::At { offset, what }
    }
}

/// One block file as the index names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MetaFile {
    pub(crate) path: String,
    pub(crate) len: u64,
    pub(crate) xor: [u8; 8],
}

/// The metadata: the tip and the files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Meta {
    pub(crate) tip: [u8; 32],
    pub(crate) files: Vec<MetaFile>,
}

impl Meta {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&self.tip);
        out.extend_from_slice(&(self.files.len() as u32).to_le_bytes());
        for file in &self.files {
            out.extend_from_slice(&(file.path.len() as u16).to_le_bytes());
            out.extend_from_slice(file.path.as_bytes());
            out.extend_from_slice(&file.len.to_le_bytes());
            out.extend_from_slice(&file.xor);
        }
        out
    }

    /// Decodes `bytes`, which start at file offset [`HEADER_LEN`].
    pub(crate) fn decode(bytes: &[u8]) -> Result<Meta, Bad> {
        let mut r = MetaReader { bytes, at: 0 };
        let tip: [u8; 32] = r
            .take(32, "metadata ends in the tip hash")?
            .try_into()
            .expect("32");
        let count = u32::from_le_bytes(r.array("metadata ends in the file count")?);
        if count > MAX_FILES {
            return Err(Bad::at(HEADER_LEN as u64 + 32, "file count above 2^24"));
        }
        // Each file takes at least 18 bytes: the count is bounded by them.
        let mut files = Vec::with_capacity((count as usize).min(bytes.len() / 18));
        for _ in 0..count {
            let len = u16::from_le_bytes(r.array("metadata ends in a path length")?);
            let path_at = r.offset();
            let path = std::str::from_utf8(r.take(len as usize, "metadata ends in a path")?)
                .map_err(|_| Bad::at(path_at, "path not UTF-8"))?
                .to_string();
            let len = u64::from_le_bytes(r.array("metadata ends in a file length")?);
            let xor = r.array("metadata ends in a XOR key")?;
            files.push(MetaFile { path, len, xor });
        }
        if r.at != bytes.len() {
            return Err(Bad::at(r.offset(), "bytes after the metadata"));
        }
        Ok(Meta { tip, files })
    }
}

struct MetaReader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> MetaReader<'a> {
    fn offset(&self) -> u64 {
        (HEADER_LEN + self.at) as u64
    }

    fn take(&mut self, len: usize, what: &'static str) -> Result<&'a [u8], Bad> {
        let part = self
            .bytes
            .get(self.at..self.at.saturating_add(len))
            .ok_or(Bad::at(self.offset(), what))?;
        self.at += len;
        Ok(part)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], Bad> {
        Ok(self.take(N, what)?.try_into().expect("N bytes"))
    }
}

/// Where one transaction is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) key: [u8; KEY_LEN],
    pub(crate) len: u32,
    pub(crate) position: u32,
    pub(crate) height: u32,
    pub(crate) file: u32,
    pub(crate) offset: u64,
}

impl Entry {
    pub(crate) fn encode(&self, out: &mut [u8]) {
        out[0..6].copy_from_slice(&self.key);
        out[6..9].copy_from_slice(&self.len.to_le_bytes()[..3]);
        out[9..12].copy_from_slice(&self.position.to_le_bytes()[..3]);
        out[12..16].copy_from_slice(&self.height.to_le_bytes());
        let location = (self.file as u64) << OFFSET_BITS | self.offset;
        out[16..24].copy_from_slice(&location.to_le_bytes());
    }

    pub(crate) fn decode(bytes: &[u8]) -> Entry {
        let u24 = |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], 0]);
        let location = u64::from_le_bytes(bytes[16..24].try_into().expect("8 bytes"));
        Entry {
            key: bytes[0..6].try_into().expect("6 bytes"),
            len: u24(6),
            position: u24(9),
            height: u32::from_le_bytes(bytes[12..16].try_into().expect("4 bytes")),
            file: (location >> OFFSET_BITS) as u32,
            offset: location & ((1 << OFFSET_BITS) - 1),
        }
    }
}

/// A txid's key as a number (big-endian), for the home page.
pub(crate) fn key_value(key: &[u8; KEY_LEN]) -> u64 {
    key.iter().fold(0, |acc, &b| acc << 8 | b as u64)
}

/// The home page of a key among `home_pages`.
pub(crate) fn home_page(key: &[u8; KEY_LEN], home_pages: u64) -> u64 {
    ((key_value(key) as u128 * home_pages as u128) >> (8 * KEY_LEN)) as u64
}

/// How many home pages `entries` get.
pub(crate) fn home_pages_for(entries: u64) -> u64 {
    entries.div_ceil(PER_HOME_PAGE).max(1)
}

/// Fills a page from `entries` (at most [`PAGE_SLOTS`]), check included.
pub(crate) fn encode_page(entries: &[Entry], page: &mut [u8; PAGE]) {
    page.fill(0);
    page[0..4].copy_from_slice(&(entries.len() as u32).to_le_bytes());
    for (i, entry) in entries.iter().enumerate() {
        entry.encode(&mut page[4 + i * ENTRY_LEN..4 + (i + 1) * ENTRY_LEN]);
    }
    let check = sha256(&[&page[..CHECK_AT]]);
    page[CHECK_AT..].copy_from_slice(&check[..4]);
}

/// The entries of a page, checked; `offset` is the page's in the file.
pub(crate) fn decode_page(page: &[u8; PAGE], offset: u64) -> Result<Vec<Entry>, Bad> {
    if sha256(&[&page[..CHECK_AT]])[..4] != page[CHECK_AT..] {
        return Err(Bad::at(offset, "page check does not match"));
    }
    let count = u32::from_le_bytes(page[0..4].try_into().expect("4 bytes")) as usize;
    if count > PAGE_SLOTS {
        return Err(Bad::at(offset, "page holds more entries than it has slots"));
    }
    Ok((0..count)
        .map(|i| Entry::decode(&page[4 + i * ENTRY_LEN..4 + (i + 1) * ENTRY_LEN]))
        .collect())
}

/// One block table record.
pub(crate) fn encode_block(height: u32, hash: &[u8; 32], time: u32) -> [u8; BLOCK_RECORD] {
    let mut out = [0u8; BLOCK_RECORD];
    out[..32].copy_from_slice(hash);
    out[32..36].copy_from_slice(&time.to_le_bytes());
    let check = sha256(&[&height.to_le_bytes(), &out[..36]]);
    out[36..].copy_from_slice(&check[..4]);
    out
}

/// A block table record's hash and time, checked.
pub(crate) fn decode_block(height: u32, bytes: &[u8; BLOCK_RECORD]) -> Option<([u8; 32], u32)> {
    let check = sha256(&[&height.to_le_bytes(), &bytes[..36]]);
    (check[..4] == bytes[36..]).then(|| {
        (
            bytes[..32].try_into().expect("32 bytes"),
            u32::from_le_bytes(bytes[32..36].try_into().expect("4 bytes")),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_and_pages_round_trip() {
        let entry = Entry {
            key: [1, 2, 3, 4, 5, 6],
            len: MAX_U24,
            position: 77,
            height: 900_000,
            file: (1 << 24) - 1,
            offset: (1 << 40) - 1,
        };
        let mut page = [0u8; PAGE];
        encode_page(&[entry; PAGE_SLOTS], &mut page);
        assert_eq!(decode_page(&page, 0).unwrap(), vec![entry; PAGE_SLOTS]);
        page[100] ^= 1;
        assert!(decode_page(&page, 0).is_err());
    }

    #[test]
    fn home_pages_spread_keys_in_order() {
        assert_eq!(home_page(&[0; 6], 1000), 0);
        assert_eq!(home_page(&[0xff; 6], 1000), 999);
        assert_eq!(home_page(&[0x80, 0, 0, 0, 0, 0], 1000), 500);
        assert_eq!(home_pages_for(0), 1);
        assert_eq!(home_pages_for(129), 2);
        const { assert!(4 + PAGE_SLOTS * ENTRY_LEN + 8 + 4 == PAGE) };
    }

    #[test]
    fn header_and_meta_round_trip() {
        let meta = Meta {
            tip: [7; 32],
            files: vec![MetaFile {
                path: "/x/blk00000.dat".into(),
                len: 5,
                xor: [1; 8],
            }],
        };
        let bytes = meta.encode();
        assert_eq!(Meta::decode(&bytes).unwrap(), meta);
        for cut in 0..bytes.len() {
            assert!(Meta::decode(&bytes[..cut]).is_err());
        }
        let header = Header {
            version: VERSION,
            network: [1, 2, 3, 4],
            entries: 10,
            home_pages: 1,
            pages: 1,
            blocks: 3,
            meta_len: bytes.len() as u32,
        };
        let encoded = header.encode(&bytes);
        assert_eq!(Header::decode(&encoded).unwrap(), header);
        assert!(Header::check(&encoded, &bytes));
        assert!(!Header::check(&encoded, &bytes[1..]));
        let mut newer = header;
        newer.version = 2;
        assert_eq!(Header::decode(&newer.encode(&bytes)), Err(Bad::TooNew(2)));
    }
}
