//! Serving indexes over HTTP (feature `serve`): the HIBP range API
//! ([`api`]), whole-hash lookups ([`hash_api`]), `/health`, `/metrics`, and
//! the Huffman-only compression of fresh answers ([`huffman_only`]).
//!
//! Invariants: an answer is byte for byte what the HIBP range API would send
//! for the same corpus (padding and compression aside); indexes are swapped
//! whole, never edited under a request.

pub(crate) mod api;
pub(crate) mod date;
pub(crate) mod hash_api;
pub(crate) mod health;
pub(crate) mod huffman_only;
pub(crate) mod metrics;
