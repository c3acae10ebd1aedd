//! Have I Been Pwned passwords, offline: build a compact index of the
//! Pwned Passwords corpus once, then look up hashes with one 4 KiB read each.
//!
//! ```no_run
//! use seekless_pwned::{BuildOptions, Index, Input, NoProgress, build};
//!
//! let summary = build(
//!     vec![Input::from_arg("pwnedpasswords.txt")],
//!     "pwned.idx".as_ref(),
//!     &BuildOptions::default(),
//!     &NoProgress,
//! )?;
//! println!("{} hashes, {:.2} bytes each", summary.hashes, summary.bytes_per_hash());
//!
//! let index = Index::open("pwned.idx")?;
//! let count = index.count_password("password")?;
//! # Ok::<(), seekless_pwned::Error>(())
//! ```
//!
//! The file format is documented in `docs/format-pwned.md`.
#![deny(missing_docs)]

#[cfg(feature = "serve")]
mod api;
mod bits;
#[cfg(feature = "update")]
mod bundle;
#[cfg(feature = "update")]
mod client;
pub mod date;
mod direct;
mod encoding;
mod error;
mod export;
mod format;
#[cfg(feature = "gzip")]
mod gzip;
mod hash;
#[cfg(feature = "serve")]
mod hash_api;
#[cfg(feature = "serve")]
mod health;
mod index;
mod input;
#[cfg(feature = "update")]
mod journal;
#[cfg(feature = "serve")]
mod literals;
#[cfg(feature = "serve")]
mod metrics;
mod nameless;
mod once;
mod ordered;
mod page;
mod partition;
mod prepare;
mod range;
pub mod sample;
mod sort;
mod source;
#[cfg(test)]
mod testing;
#[cfg(feature = "update")]
mod update;
#[cfg(target_arch = "x86_64")]
mod wide;
mod writer;

#[cfg(feature = "serve")]
pub use api::{RangeApi, Served};
#[cfg(feature = "update")]
pub use bundle::{
    BUNDLE_VERSION, BundleEntry, BundleHeader, BundleReader, DiffSummary, diff, identity,
    write_bundle,
};
#[cfg(feature = "update")]
pub use client::Proxies;
pub use error::{Error, ErrorKind, Result};
pub use export::{
    ExportOptions, ExportProgress, ExportSummary, NoExportProgress, export_ranges, export_sorted,
    range_file_name, write_sorted,
};
pub use format::{MIN_KEY_BITS, PAGE, VERSION};
#[cfg(feature = "gzip")]
pub use gzip::gzip;
pub use hash::{Key, Kind};
#[cfg(feature = "serve")]
pub use hash_api::{MAX_BATCH, MAX_BATCH_BYTES};
pub use index::{Index, Iter, Stats};
pub use input::Input;
#[cfg(feature = "update")]
pub use journal::UpdateSummary;
#[cfg(feature = "serve")]
pub use metrics::{Connection, Reload};
pub use prepare::{
    BuildOptions, NoProgress, Progress, Summary, build, build_to_vec, default_memory,
};
pub use range::{
    MAX_RANGE_BODY, PAD_MIN, PAD_SPREAD, PREFIX_DIGITS, pad_range, parse_range, prefix_hex,
    range_body, range_etag, write_range_body,
};
pub use source::{MAX_VALIDATOR, RANGES, Source};
#[cfg(feature = "update")]
pub use update::{
    DEFAULT_BASE_URL, DEFAULT_CONCURRENCY, NoUpdateProgress, UpdateOptions, UpdateProgress,
    decode_body, update,
};
pub use writer::{Checkpoint, SortedWriter, Written};
