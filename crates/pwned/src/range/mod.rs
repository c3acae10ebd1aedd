//! Range answers of the HIBP range API (`GET /range/{PREFIX}`): `SUFFIX:COUNT`
//! lines. Shared by both ends: the server (`serve`) renders, pads and names
//! them; the client (`update`) parses and names them; the index renders them
//! too (`Index::write_range`), so neither end owns this module.
//!
//! - [`render`] writes pairs as lines, as a page decodes ([`render_avx512`]
//!   eight hashes at a time where the processor can)
//! - [`parse`] is the strict parser, before anything of an answer is indexed
//! - [`validator`] makes strong `ETag`s from the content alone
//! - [`pad`] answers `Add-Padding`
//! - [`gzip`] compresses and inflates whole answers (feature `gzip`)
//!
//! Invariants: an answer rendered from pairs parses back to the same pairs;
//! the validator depends on the pairs alone, never on the index or process.

#[cfg(feature = "gzip")]
pub(crate) mod gzip;
#[cfg(any(test, feature = "serve", feature = "test-util"))]
pub(crate) mod pad;
#[cfg(any(test, feature = "update", feature = "test-util"))]
pub(crate) mod parse;
pub(crate) mod render;
#[cfg(target_arch = "x86_64")]
pub(crate) mod render_avx512;
#[cfg(test)]
mod tests;
pub(crate) mod validator;

/// Hex digits of a range prefix.
pub const PREFIX_DIGITS: usize = 5;

/// The prefix `prefix` (below 2^20) as 5 uppercase hex digits.
pub fn prefix_hex(prefix: u32) -> String {
    format!("{prefix:05X}")
}
