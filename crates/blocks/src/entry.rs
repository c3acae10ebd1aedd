//! One block as the scan records it and the chain links it: 88 bytes.

use crate::hash::BlockHash;
use crate::header::BlockHeader;
use crate::record::FoundBlock;
use crate::u256::U256;

pub(crate) const FLAG_INVALID: u32 = 1 << 31;
pub(crate) const FLAG_BAD_CHAIN: u32 = 1 << 30;
pub(crate) const FLAG_BEST: u32 = 1 << 29;
pub(crate) const SIZE_MASK: u32 = (1 << 29) - 1;

pub(crate) const NONE: u32 = u32::MAX;
pub(crate) const HEIGHT_UNSET: u32 = u32::MAX;
pub(crate) const HEIGHT_ORPHAN: u32 = u32::MAX - 1;
pub(crate) const HEIGHT_VISITING: u32 = u32::MAX - 2;

pub(crate) const FILE_BITS: u32 = 24;
pub(crate) const OFFSET_BITS: u32 = 40;

/// One block, 88 bytes: what the scan records and the chain is built from.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry {
    pub(crate) hash: [u8; 32],
    /// Before linking: the previous block's hash. After: parent index (4
    /// bytes), height (4), cumulative work saturated to 192 bits (24).
    pub(crate) link: [u8; 32],
    pub(crate) bits: u32,
    pub(crate) time: u32,
    pub(crate) version: i32,
    pub(crate) size_flags: u32,
    /// File index (high 24 bits) and record offset (low 40 bits): the order
    /// of first sight.
    pub(crate) pos: u64,
}

impl Entry {
    pub(crate) const MAX_FILES: u64 = 1 << FILE_BITS;
    pub(crate) const MAX_OFFSET: u64 = 1 << OFFSET_BITS;

    pub(crate) fn new(block: &FoundBlock<'_>, file: usize) -> Entry {
        Entry::from_header(&block.hash, &block.header, block.size, file, block.offset)
    }

    pub(crate) fn from_header(
        hash: &BlockHash,
        header: &BlockHeader,
        size: u32,
        file: usize,
        offset: u64,
    ) -> Entry {
        Entry {
            hash: hash.0,
            link: header.prev.0,
            bits: header.bits,
            time: header.time,
            version: header.version,
            size_flags: size,
            pos: (file as u64) << OFFSET_BITS | offset,
        }
    }

    pub(crate) fn mark_invalid(&mut self) {
        self.size_flags |= FLAG_INVALID;
    }

    pub(crate) fn parent(&self) -> u32 {
        u32::from_le_bytes(self.link[0..4].try_into().expect("4 bytes"))
    }

    pub(crate) fn set_parent(&mut self, parent: u32) {
        self.link[0..4].copy_from_slice(&parent.to_le_bytes());
    }

    pub(crate) fn height(&self) -> u32 {
        u32::from_le_bytes(self.link[4..8].try_into().expect("4 bytes"))
    }

    pub(crate) fn set_height(&mut self, height: u32) {
        self.link[4..8].copy_from_slice(&height.to_le_bytes());
    }

    pub(crate) fn work(&self) -> U256 {
        let mut bytes = [0u8; 32];
        bytes[..24].copy_from_slice(&self.link[8..32]);
        U256::from_le_bytes(&bytes)
    }

    pub(crate) fn set_work(&mut self, work: U256) {
        let saturated = if work.0[3] != 0 {
            U256([u64::MAX, u64::MAX, u64::MAX, 0])
        } else {
            work
        };
        self.link[8..32].copy_from_slice(&saturated.to_le_bytes()[..24]);
    }

    pub(crate) fn connected(&self) -> bool {
        self.height() < HEIGHT_VISITING
    }
}
