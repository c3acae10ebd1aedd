//! Building an index from the HIBP text corpus: inputs are read and parsed,
//! then either streamed into pages when they come in hash order
//! ([`ordered`], [`writer`]) or held by partition, spilled where memory runs
//! out, sorted and packed ([`partition`], [`sort`]); [`prepare`] runs it all.
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
pub(crate) mod prepare;
mod reader;
mod shared;
pub(crate) mod sort;
pub(crate) mod writer;
