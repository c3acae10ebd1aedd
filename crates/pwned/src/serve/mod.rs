//! Serving indexes over HTTP (feature `serve`): the HIBP range API
//! ([`api`]: `RangeApi`, its routes and hot swaps; [`range_answer`]: one
//! `GET /range` answer, cached, compressed, revalidated), whole-hash
//! lookups ([`hash_api`]), the check page ([`page`]), `/health`,
//! `/identity` ([`identity`]), delta bundles from a directory
//! (`bundles`, with the `update` feature that reads them), `/metrics`, what the routes share ([`http`]), and the Huffman-only
//! compression of fresh answers ([`huffman_only`]).
//!
//! Invariants: an answer is byte for byte what the HIBP range API would send
//! for the same corpus (padding and compression aside); indexes are swapped
//! whole, never edited under a request.

pub(crate) mod api;
#[cfg(feature = "update")]
mod bundles;
pub(crate) mod hash_api;
pub(crate) mod health;
pub(crate) mod http;
pub(crate) mod huffman_only;
pub(crate) mod identity;
pub(crate) mod metrics;
mod page;
mod range_answer;
#[cfg(test)]
mod tests;
