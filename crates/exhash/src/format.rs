//! Constants of the on-disk format (`docs/format-exhash.md`).

/// Magic bytes at the start of each header copy.
pub const MAGIC: [u8; 8] = *b"SLEXHASH";
/// Format version this code writes and the newest it reads.
pub const VERSION: u32 = 4;
// Version 3 had no journal (its header's bytes 44..60 are zero); its
// files are read as they are and get one at their next commit.
// Versions 1 and 2 stored pages as pieces of delta-encoded entries
// (`piece.rs`, `legacy.rs`); their files are read and laid out in the
// current format on open, and written in it at the next commit.
/// The first version whose pages are groups of tags and slots (`group.rs`).
pub const GROUP_PAGES: u32 = 3;
/// Size of one header copy; the two copies fill slot 0.
pub const HEADER_SIZE: usize = 4096;
/// Bytes of a header copy covered by its checksum (the rest is zero).
pub const HEADER_USED: usize = 64;
/// Size of a slot: the unit in which the file is allocated.
pub const SLOT_SIZE: u64 = crate::page::PAGE_SIZE as u64;
