//! The index writer both builders use: `prepare` (text in hash order, and
//! the pages it packed itself) and `update` (the range API's answers, in
//! prefix order). [`sorted`] streams hashes that come in order into pages;
//! [`trailer`] ends every index. [`gzip_ranges`] writes the gzip answers
//! kept beside an index (feature `gzip`).
//!
//! Invariants: an index is written front to back, its header last (at the
//! start of the file), so a file cut short has no valid header; the bytes
//! written depend only on the hashes and counts given.

#[cfg(feature = "gzip")]
pub(crate) mod gzip_ranges;
pub(crate) mod sorted;
pub(crate) mod trailer;
