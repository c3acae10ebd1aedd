//! The header: two copies in slot 0, the newer valid one naming the last
//! commit's metadata (`docs/format-exhash.md`).

use crate::error::{Error, ErrorKind};
use crate::format::{HEADER_SIZE, HEADER_USED, MAGIC, VERSION};
use crate::page::PAGE_SIZE;

pub(super) fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

pub(super) fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// A decoded header copy.
#[derive(Clone, Copy, Debug)]
pub(super) struct Header {
    pub(super) version: u32,
    pub(super) seq: u64,
    pub(super) meta_slot: u64,
    pub(super) meta_len: u64,
    pub(super) meta_crc: u32,
    /// The journal's extent: first slot and slots (version 4 on; 0 slots:
    /// none).
    pub(super) journal: (u64, u64),
}

impl Header {
    pub(super) fn encode(&self) -> [u8; HEADER_SIZE] {
        let mut b = [0u8; HEADER_SIZE];
        b[0..8].copy_from_slice(&MAGIC);
        b[8..12].copy_from_slice(&self.version.to_le_bytes());
        b[12..16].copy_from_slice(&(PAGE_SIZE as u32).to_le_bytes());
        b[16..24].copy_from_slice(&self.seq.to_le_bytes());
        b[24..32].copy_from_slice(&self.meta_slot.to_le_bytes());
        b[32..40].copy_from_slice(&self.meta_len.to_le_bytes());
        b[40..44].copy_from_slice(&self.meta_crc.to_le_bytes());
        b[44..52].copy_from_slice(&self.journal.0.to_le_bytes());
        b[52..56].copy_from_slice(&(self.journal.1 as u32).to_le_bytes());
        let crc = crc32c::crc32c(&b[..HEADER_USED - 4]);
        b[HEADER_USED - 4..HEADER_USED].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Ok(None) for a copy that is torn or blank.
    pub(super) fn decode(b: &[u8], offset: u64) -> Result<Option<Header>, Error> {
        if b[0..8] != MAGIC {
            return Ok(None);
        }
        let crc = u32_at(b, HEADER_USED - 4);
        if crc32c::crc32c(&b[..HEADER_USED - 4]) != crc {
            return Ok(None);
        }
        let version = u32_at(b, 8);
        if version > VERSION {
            return Err(ErrorKind::NewerVersion { found: version }.into());
        }
        if version == 0 || u32_at(b, 12) != PAGE_SIZE as u32 {
            return Err(Error::corrupt(
                offset + 8,
                "unsupported version or page size",
            ));
        }
        Ok(Some(Header {
            version,
            seq: u64_at(b, 16),
            meta_slot: u64_at(b, 24),
            meta_len: u64_at(b, 32),
            meta_crc: u32_at(b, 40),
            // Reserved and zero before version 4; no extent when it has no
            // slots, wherever it starts.
            journal: match (version >= 4, u32_at(b, 52)) {
                (true, slots @ 1..) => (u64_at(b, 44), slots as u64),
                _ => (0, 0),
            },
        }))
    }
}
