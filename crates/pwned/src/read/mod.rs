//! Reading an index: open it once and answer lookups, iterate or verify it
//! ([`index`]), write its ranges as answers ([`ranges`]), or answer one
//! lookup without opening it ([`cold_lookup`]); what identifies its content
//! ([`identity`]); the gzip answers kept beside it ([`gzip_ranges`]).
//!
//! Invariants: reading never writes; a lookup reads one page; every page is
//! checked against its checksum before its hashes are believed.

pub(crate) mod cold_lookup;
#[cfg(feature = "gzip")]
pub(crate) mod gzip_ranges;
pub(crate) mod identity;
pub(crate) mod index;
pub(crate) mod ranges;
