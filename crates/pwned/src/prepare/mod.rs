//! `prepare`: an index from the HIBP text corpus (files, gzip, stdin,
//! per-range directories) or from another index (a subset). Inputs are
//! read and parsed, then either streamed into pages when they come in hash
//! order ([`ordered`], through `write`'s index writer) or held by
//! partition, spilled where memory runs out, sorted and packed
//! ([`partition`], [`sort`]); [`run`] runs it all.
//!
//! Invariants: records held in memory stay within the caller's budget (the
//! rest is spilled); the index appears complete under its name or not at
//! all (it is written unnamed and named at the end); the bytes written
//! depend only on the hashes and counts read, not on how many threads or
//! partitions read them.

pub(crate) mod direct_io;
pub(crate) mod encoding;
pub(crate) mod input;
pub(crate) mod options;
pub(crate) mod ordered;
mod pack;
mod parser;
pub(crate) mod partition;
mod reader;
pub(crate) mod run;
mod shared;
pub(crate) mod sort;
