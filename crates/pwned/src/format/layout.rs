//! The index file's header, directory and geometry (see docs/format-pwned.md).

use crate::error::{Error, ErrorKind, Result};
use crate::format::hash::Kind;

/// File magic.
pub(crate) const MAGIC: &[u8; 8] = b"SEEKPWND";
/// The newest format version this build reads and writes. It writes the
/// oldest version that can describe an index: 3 for whole hashes, 4 for
/// hashes kept to their top bits (`--key-bits`), 5 for a subset of the
/// hashes seen at least a given number of times (`--min-count`); it reads
/// every version.
pub const VERSION: u16 = 5;
/// The version of an index of whole hashes.
pub(crate) const VERSION_WHOLE: u16 = 3;
/// The version of a compact index (hashes kept to their top bits).
pub(crate) const VERSION_COMPACT: u16 = 4;
/// The first version that records a minimum count.
pub(crate) const VERSION_SUBSET: u16 = 5;
/// Fewest hash bits an index may keep.
pub const MIN_KEY_BITS: u32 = 32;
/// Page size: one random read per lookup.
pub const PAGE: usize = 4096;
/// Bytes of a page before its bit stream: hash count, count-lengths start,
/// count-mantissas start.
pub(crate) const PAGE_HEADER: usize = 6;
/// Bits available to a page's bit stream.
pub(crate) const PAGE_BITS: usize = (PAGE - PAGE_HEADER) * 8;
/// Bytes of one directory entry.
pub(crate) const DIR_ENTRY: usize = 12;
/// Directory entries per checksummed directory block (4,092 bytes, so an
/// entry never straddles two blocks). Version 2 and later.
pub(crate) const BLOCK_ENTRIES: usize = 341;
/// Flag in a directory entry's first bucket: the bucket continues from the
/// previous page.
pub(crate) const CONTINUED: u64 = 1 << 63;
/// Largest remainder chunk, in bits.
pub(crate) const CHUNK: u32 = 56;

/// How hashes split into bucket and remainder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layout {
    pub kind: Kind,
    /// Bucket bits.
    pub h: u32,
    /// The top bits of each hash that the index keeps: `kind.bits()`, or
    /// fewer in a compact index.
    pub key_bits: u32,
}

impl Layout {
    /// The layout with the fewest bits per hash for `n` whole hashes.
    #[cfg(test)]
    pub(crate) fn for_count(kind: Kind, n: u64) -> Layout {
        Layout::compact(kind, n, kind.bits())
    }

    /// The layout with the fewest bits per hash for `n` hashes of which the
    /// top `key_bits` are kept.
    pub(crate) fn compact(kind: Kind, n: u64, key_bits: u32) -> Layout {
        let bits = key_bits;
        let h = if n <= 1 {
            0
        } else {
            let floor = 63 - n.leading_zeros();
            let cost =
                |h: u32| f64::from(bits.saturating_sub(h)) + (2f64).powi(h as i32) / n as f64;
            if cost(floor + 1) < cost(floor) {
                floor + 1
            } else {
                floor
            }
        };
        Layout {
            kind,
            h: h.min(64).min(bits),
            key_bits,
        }
    }

    /// A layout of whole hashes with `h` bucket bits.
    #[cfg(test)]
    pub(crate) fn whole(kind: Kind, h: u32) -> Layout {
        Layout {
            kind,
            h,
            key_bits: kind.bits(),
        }
    }

    /// Whether hashes are kept to fewer bits than they have.
    pub(crate) fn is_compact(&self) -> bool {
        self.key_bits < self.kind.bits()
    }

    /// Remainder bits.
    pub(crate) fn l(&self) -> u32 {
        self.key_bits - self.h
    }

    /// The bucket of a key: its top `h` bits.
    #[inline]
    pub(crate) fn bucket(&self, key: crate::Key) -> u64 {
        if self.h == 0 {
            0
        } else {
            key.hi >> (64 - self.h)
        }
    }

    /// The remainder chunks of a key: (start bit in the hash, width).
    #[inline]
    pub(crate) fn chunks(&self) -> impl Iterator<Item = (u32, u32)> + use<> {
        let bits = self.key_bits;
        let h = self.h;
        (0..self.l().div_ceil(CHUNK)).map(move |c| {
            let start = h + c * CHUNK;
            (start, (bits - start).min(CHUNK))
        })
    }
}

/// The fixed-size file header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    /// Format version (1 to 4).
    pub version: u16,
    pub layout: Layout,
    pub hashes: u64,
    pub pages: u64,
    pub total: u64,
    pub dir_crc: u32,
    /// Bytes of the source section at the end of the file (version 3; 0
    /// when absent, and in earlier versions).
    pub source_len: u64,
    /// CRC-32C of the source section.
    pub source_crc: u32,
    /// The index holds only the hashes seen at least this many times (1:
    /// every hash; more only in version 5).
    pub min_count: u64,
}

/// The longest header (version 5); earlier versions have 64 bytes, and
/// the rest of the header block is zero.
pub(crate) const HEADER_LEN: usize = 72;

/// Where the header checksum is; the bytes it covers are all the others.
const HEADER_CRC: usize = 60;

impl Header {
    /// Bytes of the header of `version`.
    pub(crate) fn len_of(version: u16) -> usize {
        if version >= VERSION_SUBSET { 72 } else { 64 }
    }

    /// The header checksum of `b` as `version` computes it: over every
    /// header byte but the checksum's own.
    fn checksum(b: &[u8], version: u16) -> u32 {
        let crc = crc32c::crc32c(&b[..HEADER_CRC]);
        crc32c::crc32c_append(crc, &b[HEADER_CRC + 4..Header::len_of(version)])
    }

    /// The oldest version that describes an index of `layout` holding the
    /// hashes seen at least `min_count` times.
    pub(crate) fn version_for(layout: Layout, min_count: u64) -> u16 {
        if min_count > 1 {
            VERSION_SUBSET
        } else if layout.is_compact() {
            VERSION_COMPACT
        } else {
            VERSION_WHOLE
        }
    }

    /// The header as written: [`HEADER_LEN`] bytes (those past the
    /// version's header are zero).
    pub(crate) fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..8].copy_from_slice(MAGIC);
        b[8..10].copy_from_slice(&self.version.to_le_bytes());
        b[10] = self.layout.kind.code();
        b[11] = self.layout.h as u8;
        b[12..16].copy_from_slice(&(PAGE as u32).to_le_bytes());
        b[16..24].copy_from_slice(&self.hashes.to_le_bytes());
        b[24..32].copy_from_slice(&self.pages.to_le_bytes());
        b[32..40].copy_from_slice(&self.total.to_le_bytes());
        b[40..44].copy_from_slice(&self.dir_crc.to_le_bytes());
        b[44..52].copy_from_slice(&self.source_len.to_le_bytes());
        b[52..56].copy_from_slice(&self.source_crc.to_le_bytes());
        if self.version >= VERSION_COMPACT {
            b[56..58].copy_from_slice(&(self.layout.key_bits as u16).to_le_bytes());
        }
        if self.version >= VERSION_SUBSET {
            b[64..72].copy_from_slice(&self.min_count.to_le_bytes());
        }
        let crc = Header::checksum(&b, self.version);
        b[60..64].copy_from_slice(&crc.to_le_bytes());
        b
    }

    pub(crate) fn decode(b: &[u8]) -> Result<Header> {
        if b.len() < Header::len_of(0) || &b[0..8] != MAGIC {
            return Err(ErrorKind::NotAnIndex.into());
        }
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        let version = u16_at(8);
        if version > VERSION {
            return Err(ErrorKind::NewerVersion {
                version,
                newest: VERSION,
            }
            .into());
        }
        if version == 0 {
            return Err(Error::corrupt("format version 0"));
        }
        if b.len() < Header::len_of(version) {
            return Err(Error::corrupt("header cut short"));
        }
        if Header::checksum(b, version) != u32_at(HEADER_CRC) {
            return Err(Error::corrupt("header checksum mismatch"));
        }
        let kind = Kind::from_code(b[10])
            .ok_or_else(|| Error::corrupt(format!("unknown hash kind {}", b[10])))?;
        let h = u32::from(b[11]);
        if h > 64 {
            return Err(Error::corrupt(format!("bucket bits {h} out of range")));
        }
        if u32_at(12) as usize != PAGE {
            return Err(Error::corrupt(format!(
                "page size {} is not {PAGE}",
                u32_at(12)
            )));
        }
        if version < 3 && b[44..60].iter().any(|&x| x != 0) {
            return Err(Error::corrupt("reserved header bytes are not zero"));
        }
        let key_bits = if version < VERSION_COMPACT {
            kind.bits()
        } else {
            u32::from(u16_at(56))
        };
        if !(MIN_KEY_BITS..=kind.bits()).contains(&key_bits) || h > key_bits {
            return Err(Error::corrupt(format!(
                "{key_bits} key bits for {kind} hashes with {h} bucket bits"
            )));
        }
        if b[58..60] != [0, 0] {
            return Err(Error::corrupt("reserved header bytes are not zero"));
        }
        let min_count = if version < VERSION_SUBSET {
            1
        } else {
            u64_at(64)
        };
        if version >= VERSION_SUBSET && min_count < 2 {
            return Err(Error::corrupt(format!(
                "minimum count {min_count} in a version {version} index"
            )));
        }
        Ok(Header {
            version,
            layout: Layout { kind, h, key_bits },
            hashes: u64_at(16),
            pages: u64_at(24),
            total: u64_at(32),
            dir_crc: u32_at(40),
            // Reserved and zero before version 3.
            source_len: u64_at(44),
            source_crc: u32_at(52),
            min_count,
        })
    }

    /// Bytes of this header.
    pub(crate) fn len(&self) -> usize {
        Header::len_of(self.version)
    }

    /// Checksummed blocks of the directory (0 for version 1, which has one
    /// checksum over the whole directory).
    pub(crate) fn dir_blocks(&self) -> u64 {
        if self.version < 2 {
            0
        } else {
            self.pages.div_ceil(BLOCK_ENTRIES as u64)
        }
    }

    /// Where the source section starts: right after the directory block
    /// checksums.
    pub(crate) fn source_offset(&self) -> Option<u64> {
        self.pages
            .checked_mul((PAGE + DIR_ENTRY) as u64)?
            .checked_add(PAGE as u64)?
            .checked_add(4 * self.dir_blocks())
    }

    /// The exact file size an index with this header has.
    pub(crate) fn file_len(&self) -> Option<u64> {
        self.source_offset()?.checked_add(self.source_len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_bits_near_log2() {
        assert_eq!(Layout::for_count(Kind::Sha1, 0).h, 0);
        assert_eq!(Layout::for_count(Kind::Sha1, 1).h, 0);
        assert_eq!(Layout::for_count(Kind::Sha1, 55_000_000).h, 26);
        assert_eq!(Layout::for_count(Kind::Sha1, 1 << 20).h, 20);
        let l = Layout::for_count(Kind::Sha1, 1_000_000_000);
        assert!(l.h == 29 || l.h == 30);
        let widths: Vec<_> = Layout::whole(Kind::Sha1, 26).chunks().collect();
        assert_eq!(widths, [(26, 56), (82, 56), (138, 22)]);
        let compact = Layout::compact(Kind::Sha1, 55_000_000, 64);
        assert_eq!((compact.h, compact.l()), (26, 38));
        assert_eq!(compact.chunks().collect::<Vec<_>>(), [(26, 38)]);
        // Never more bucket bits than kept bits.
        assert_eq!(Layout::compact(Kind::Ntlm, u64::MAX, 32).h, 32);
    }

    #[test]
    fn header_round_trip_and_damage() {
        let h = Header {
            version: VERSION_WHOLE,
            layout: Layout::whole(Kind::Ntlm, 17),
            hashes: 123_456,
            pages: 789,
            total: u64::MAX,
            dir_crc: 0xdead_beef,
            source_len: 1234,
            source_crc: 0x0123_4567,
            min_count: 1,
        };
        let bytes = h.encode();
        assert_eq!(Header::decode(&bytes).unwrap(), h);
        let mut bad = bytes;
        bad[20] ^= 1;
        assert!(matches!(
            Header::decode(&bad).unwrap_err().kind(),
            ErrorKind::Corrupt { .. }
        ));
        let mut newer = bytes;
        newer[8] = 6;
        assert!(matches!(
            Header::decode(&newer).unwrap_err().kind(),
            ErrorKind::NewerVersion { version: 6, .. }
        ));
        // Version 4 records the key bits; they must make sense.
        let compact = Header {
            version: VERSION_COMPACT,
            layout: Layout::compact(Kind::Sha1, 1 << 20, 64),
            ..h
        };
        assert_eq!(Header::decode(&compact.encode()).unwrap(), compact);
        for key_bits in [0, 31, 161, 20] {
            let bad = Header {
                layout: Layout {
                    key_bits,
                    ..compact.layout
                },
                ..compact
            };
            assert!(
                matches!(
                    Header::decode(&bad.encode()).unwrap_err().kind(),
                    ErrorKind::Corrupt { .. }
                ),
                "{key_bits} key bits"
            );
        }
        assert!(matches!(
            Header::decode(b"hello").unwrap_err().kind(),
            ErrorKind::NotAnIndex
        ));
    }

    #[test]
    fn a_minimum_count_makes_version_5_and_nothing_else_changes() {
        let whole = Layout::whole(Kind::Sha1, 20);
        let compact = Layout::compact(Kind::Sha1, 1 << 20, 64);
        assert_eq!(Header::version_for(whole, 1), VERSION_WHOLE);
        assert_eq!(Header::version_for(compact, 1), VERSION_COMPACT);
        assert_eq!(Header::version_for(whole, 2), VERSION_SUBSET);
        assert_eq!(Header::version_for(compact, 10), VERSION_SUBSET);
        let plain = Header {
            version: VERSION_WHOLE,
            layout: whole,
            hashes: 1000,
            pages: 7,
            total: 5000,
            dir_crc: 1,
            source_len: 0,
            source_crc: 0,
            min_count: 1,
        };
        // Without a minimum count: 64 bytes, the checksum over 0..60 as
        // version 3 always had it.
        let bytes = plain.encode();
        assert_eq!(plain.len(), 64);
        assert_eq!(bytes[64..], [0; 8]);
        assert_eq!(
            bytes[60..64],
            crc32c::crc32c(&bytes[..60]).to_le_bytes(),
            "version 3 as before"
        );
        for (layout, min_count) in [(whole, 2), (compact, 1 << 40)] {
            let subset = Header {
                version: Header::version_for(layout, min_count),
                layout,
                min_count,
                ..plain
            };
            let bytes = subset.encode();
            assert_eq!(subset.len(), 72);
            assert_eq!(Header::decode(&bytes).unwrap(), subset);
            assert_eq!(bytes[64..72], min_count.to_le_bytes());
            // The checksum covers the minimum count.
            let mut flipped = bytes;
            flipped[64] ^= 4;
            assert!(matches!(
                Header::decode(&flipped).unwrap_err().kind(),
                ErrorKind::Corrupt { .. }
            ));
            // Cut before it ends.
            assert!(Header::decode(&bytes[..64]).is_err());
        }
        // A version 5 header must name a minimum count of 2 or more.
        for min_count in [0, 1] {
            let bad = Header {
                version: VERSION_SUBSET,
                min_count,
                ..plain
            };
            let e = Header::decode(&bad.encode()).unwrap_err();
            assert!(e.to_string().contains("minimum count"), "{e}");
        }
    }
}
