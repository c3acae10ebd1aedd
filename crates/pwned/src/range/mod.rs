//! Range answers of the HIBP range API (`GET /range/{PREFIX}`): `SUFFIX:COUNT`
//! lines. Shared by both ends: the server (`serve`) renders, pads and names
//! them; the client (`update`) parses and names them; the index renders them
//! too (`Index::write_range`), so neither end owns this module.
//!
//! - [`render`] writes pairs as lines, as a page decodes; [`renderer`]
//!   picks how: [`render_avx512`] eight hashes at a time where the
//!   processor can, else `render_avx2` (x86-64-v3: four at a time, or a
//!   line at a time with wider digits) or `render_neon` (aarch64: a line
//!   at a time with wider digits)
//! - [`parse`] is the strict parser, before anything of an answer is indexed
//! - [`validator`] makes strong `ETag`s from the content alone
//! - [`pad`] answers `Add-Padding`
//! - [`gzip`] compresses and inflates whole answers (feature `gzip`)
//! - [`count_then_next`] reads the count that ends a line, here and in the
//!   corpus text `prepare` reads
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
pub(crate) mod render_avx2;
#[cfg(target_arch = "x86_64")]
pub(crate) mod render_avx512;
#[cfg(target_arch = "aarch64")]
pub(crate) mod render_neon;
pub(crate) mod renderer;
#[cfg(test)]
mod tests;
pub(crate) mod validator;

/// Hex digits of a range prefix.
pub const PREFIX_DIGITS: usize = 5;

/// The prefix `prefix` (below 2^20) as 5 uppercase hex digits.
pub fn prefix_hex(prefix: u32) -> String {
    format!("{prefix:05X}")
}

/// The end of a `HASH:COUNT` line, of a range answer or of the corpus text
/// (`prepare`'s input: range answers with their prefixes put back): the
/// decimal count at `at` of `data`, 1 to `max` digits (at most 19, so it
/// fits 64 bits), followed by `\n`, `\r\n` or the end of `data`; the
/// count and where the next line starts. `None` for anything else.
#[inline]
pub(crate) fn count_then_next(data: &[u8], at: usize, max: usize) -> Option<(u64, usize)> {
    debug_assert!(max <= 19);
    let digits = data.get(at..)?;
    let mut count = 0u64;
    let mut n = 0;
    while n < digits.len().min(max) && digits[n].is_ascii_digit() {
        count = count * 10 + u64::from(digits[n] - b'0');
        n += 1;
    }
    let end = at + n;
    let next = match &data[end..] {
        _ if n == 0 => return None,
        [] => end,
        [b'\n', ..] => end + 1,
        [b'\r', b'\n', ..] => end + 2,
        _ => return None,
    };
    Some((count, next))
}
