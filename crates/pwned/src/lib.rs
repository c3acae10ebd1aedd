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

mod build;
pub mod date;
mod error;
mod export;
mod format;
mod range;
mod read;
pub mod sample;
#[cfg(feature = "serve")]
mod serve;
#[cfg(test)]
mod testing;
mod tmpfile;
#[cfg(feature = "update")]
mod update;

pub use build::input::Input;
pub use build::prepare::{
    BuildOptions, NoProgress, Progress, Summary, build, build_to_vec, default_memory,
};
pub use build::writer::{Checkpoint, SortedWriter, Written};
pub use error::{Error, ErrorKind, Result};
pub use export::{
    ExportOptions, ExportProgress, ExportSummary, NoExportProgress, export_ranges, export_sorted,
    range_file_name, write_sorted,
};
pub use format::hash::{Key, Kind};
pub use format::layout::{MIN_KEY_BITS, PAGE, VERSION};
pub use format::source::{MAX_VALIDATOR, RANGES, Source};
#[cfg(feature = "gzip")]
pub use range::gzip::gzip;
pub use range::{
    MAX_RANGE_BODY, PAD_MIN, PAD_SPREAD, PREFIX_DIGITS, pad_range, parse_range, prefix_hex,
    range_body, range_etag, write_range_body,
};
pub use read::index::{Index, Iter, Stats};
#[cfg(feature = "serve")]
pub use serve::api::{RangeApi, Served};
#[cfg(feature = "serve")]
pub use serve::hash_api::{MAX_BATCH, MAX_BATCH_BYTES};
#[cfg(feature = "serve")]
pub use serve::metrics::{Connection, Reload};
#[cfg(feature = "update")]
pub use update::bundle::{
    BUNDLE_VERSION, BundleEntry, BundleHeader, BundleReader, DiffSummary, diff, identity,
    write_bundle,
};
#[cfg(feature = "update")]
pub use update::client::Proxies;
#[cfg(feature = "update")]
pub use update::journal::UpdateSummary;
#[cfg(feature = "update")]
pub use update::{
    DEFAULT_BASE_URL, DEFAULT_CONCURRENCY, NoUpdateProgress, UpdateOptions, UpdateProgress,
    decode_body, update,
};
