//! Serving indexes over HTTP (feature `serve`): the HIBP range API
//! ([`state`]: `RangeApi`, the indexes it serves and their hot swaps;
//! [`routes`]: its routers; [`range_answer`]: one `GET /range` answer,
//! [`cache`]d, compressed, revalidated), whole-hash lookups ([`hash_api`]),
//! the check page ([`page`]), `/health`, `/identity` ([`identity`]), delta
//! bundles from a directory (`bundles`, with the `update` feature that
//! reads them), `/metrics`, what the routes share ([`http`]), and the
//! Huffman-only compression of fresh answers ([`huffman_only`]). Imports
//! go one way: `routes` imports the handlers, they import `state`.
//!
//! Invariants: an answer is byte for byte what the HIBP range API would send
//! for the same corpus (padding and compression aside); indexes are swapped
//! whole, never edited under a request.

#[cfg(feature = "update")]
mod bundles;
mod cache;
pub(crate) mod hash_api;
pub(crate) mod health;
pub(crate) mod http;
pub(crate) mod huffman_only;
pub(crate) mod identity;
pub(crate) mod metrics;
mod page;
mod range_answer;
mod routes;
pub mod server;
pub(crate) mod state;
#[cfg(test)]
mod tests;
