//! The gzip ranges file (docs/format-pwned.md, "Gzip ranges file"): the
//! answer of every range of an index compressed once, beside the index, so
//! that `serve` sends gzip answers without compressing them. Its header
//! names the index it was made from by the index's own header (the bytes
//! that describe its hashes, not its source section), so a file left from
//! another index is told apart before it is used.

use crate::error::{Error, ErrorKind, Result};
use crate::format::source::RANGES;

/// The file's first bytes.
pub(crate) const MAGIC: &[u8; 8] = b"SEEKPWGZ";
/// The version written and the newest read.
pub(crate) const VERSION: u16 = 1;
/// Bytes of the header block.
pub(crate) const HEADER: usize = 4096;
/// Bytes of an index's header the file is bound to (see [`binding`]).
pub(crate) const BINDING: usize = 72;
/// Bytes of the header's fields, its checksum last.
const FIELDS: usize = 16 + BINDING;
/// Where the member offsets start: `RANGES + 1` of them, 8 bytes each.
pub(crate) const OFFSETS_AT: usize = HEADER;
/// Where the members' checksums start: `RANGES` of them, 4 bytes each.
pub(crate) const CRCS_AT: usize = OFFSETS_AT + 8 * (RANGES as usize + 1);
/// Where the first member starts.
pub(crate) const MEMBERS_AT: usize = CRCS_AT + 4 * RANGES as usize;

/// The header of a gzip ranges file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Header {
    /// The level the members were compressed at (1..=12, libdeflate's).
    pub level: u8,
    /// CRC-32C of the offsets and the members' checksums.
    pub tables_crc: u32,
    /// The index it was made from ([`binding`]).
    pub binding: [u8; BINDING],
}

impl Header {
    /// The header block.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut block = vec![0u8; HEADER];
        block[0..8].copy_from_slice(MAGIC);
        block[8..10].copy_from_slice(&VERSION.to_le_bytes());
        block[10] = self.level;
        block[12..16].copy_from_slice(&self.tables_crc.to_le_bytes());
        block[16..FIELDS].copy_from_slice(&self.binding);
        let crc = crc32c::crc32c(&block[..FIELDS]);
        block[FIELDS..FIELDS + 4].copy_from_slice(&crc.to_le_bytes());
        block
    }

    /// Reads the header from the start of a file.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Header> {
        if bytes.len() < HEADER || &bytes[0..8] != MAGIC {
            return Err(damaged("not a gzip ranges file (bad magic or too short)"));
        }
        let version = u16::from_le_bytes([bytes[8], bytes[9]]);
        if version > VERSION {
            return Err(damaged(format!(
                "format version {version} was made by a newer seekless; this one reads version {VERSION}"
            )));
        }
        let crc = u32::from_le_bytes(bytes[FIELDS..FIELDS + 4].try_into().expect("4 bytes"));
        if crc32c::crc32c(&bytes[..FIELDS]) != crc {
            return Err(damaged("header checksum mismatch"));
        }
        if bytes[11] != 0 || bytes[FIELDS + 4..HEADER].iter().any(|&b| b != 0) {
            return Err(damaged("header padding is not zero"));
        }
        Ok(Header {
            level: bytes[10],
            tables_crc: u32::from_le_bytes(bytes[12..16].try_into().expect("4 bytes")),
            binding: bytes[16..FIELDS].try_into().expect("72 bytes"),
        })
    }
}

/// What binds a gzip ranges file to its index: the index's header (its
/// first [`BINDING`] bytes, zero past its end) with the source section's
/// length and checksum and the header's own checksum zeroed. What is left
/// names the hashes: their kind, number and sum of counts, the pages, and
/// the checksum over the directory's checksums, which cover every page. A
/// refresh that changed only validators keeps it; one that changed any
/// hash or count does not.
pub(crate) fn binding(index_header: &[u8]) -> [u8; BINDING] {
    let mut binding = [0u8; BINDING];
    let n = index_header.len().min(BINDING);
    binding[..n].copy_from_slice(&index_header[..n]);
    binding[44..56].fill(0);
    binding[60..64].fill(0);
    binding
}

/// An error about a gzip ranges file.
pub(crate) fn damaged(what: impl Into<String>) -> Error {
    ErrorKind::GzipRanges { what: what.into() }.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_reads_back_and_any_changed_byte_is_refused() {
        let header = Header {
            level: 6,
            tables_crc: 0xDEAD_BEEF,
            binding: std::array::from_fn(|i| i as u8),
        };
        let block = header.encode();
        assert_eq!(Header::decode(&block).unwrap(), header);
        for at in (0..HEADER)
            .step_by(7)
            .chain([8, 10, 11, FIELDS, HEADER - 1])
        {
            let mut bad = block.clone();
            bad[at] ^= 0x10;
            assert!(Header::decode(&bad).is_err(), "byte {at} changed");
        }
        assert!(Header::decode(&block[..HEADER - 1]).is_err());
    }

    #[test]
    fn the_binding_leaves_out_the_source_section_and_checksum() {
        let header: Vec<u8> = (1..=72).collect();
        let mut other = header.clone();
        other[44..56].fill(9);
        other[60..64].fill(9);
        assert_eq!(binding(&header), binding(&other));
        other[16] ^= 1;
        assert_ne!(binding(&header), binding(&other));
        // A header of 64 bytes (before version 5) reads as zeros after.
        assert_eq!(&binding(&header[..64])[64..], &[0; 8]);
    }
}
