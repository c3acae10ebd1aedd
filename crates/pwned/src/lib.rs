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

#[cfg(any(feature = "update", feature = "test-util"))]
mod bundle;
mod error;
mod export;
mod file_at;
mod format;
mod prefetch;
mod prepare;
mod range;
mod read;
pub mod sample;
#[cfg(feature = "serve")]
mod serve;
mod tmpfile;
#[cfg(feature = "update")]
mod update;
mod write;

// The product: what the CLI, the Python package and applications use.
pub use error::{Error, ErrorKind, Result};
pub use export::{
    ExportOptions, ExportProgress, ExportSummary, NoExportProgress, export_ranges, export_sorted,
    write_sorted,
};
pub use format::hash::{Key, Kind};
pub use format::source::{MAX_VALIDATOR, RANGES, Source, rfc3339};
pub use prepare::input::Input;
pub use prepare::options::{BuildOptions, NoProgress, Progress, Summary, default_memory};
pub use prepare::run::build;
pub use range::prefix_hex;
#[cfg(feature = "gzip")]
pub use read::gzip_ranges::GzipRanges;
pub use read::identity::identity_hex;
pub use read::index::{Index, Iter, Stats};
#[cfg(feature = "serve")]
pub use serve::server;
#[cfg(feature = "serve")]
pub use serve::state::{RangeApi, Served};
#[cfg(feature = "update")]
pub use update::bundle::{DiffSummary, diff, write_bundle};
#[cfg(feature = "update")]
pub use update::journal::{UpdatePath, UpdateSummary};
#[cfg(feature = "update")]
pub use update::proxies::Proxies;
#[cfg(feature = "update")]
pub use update::{
    CheckSummary, DEFAULT_BASE_URL, DEFAULT_CONCURRENCY, NoUpdateProgress, UpdateOptions,
    UpdateProgress, check_upstream, update,
};
#[cfg(feature = "gzip")]
pub use write::gzip_ranges::{GZIP_RANGES_LEVEL, write_gzip_ranges};

/// Building blocks the tests, benchmarks and fuzz targets reach into
/// (feature `test-util`): not part of the product, free to change from one
/// release to the next.
#[cfg(feature = "test-util")]
pub mod test_util {
    pub use crate::bundle::{
        BUNDLE_VERSION, BundleDecoder, BundleEntry, BundleHeader, BundleItem, BundleReader,
    };
    pub use crate::export::range_file_name;
    pub use crate::format::hash::Words;
    pub use crate::format::layout::{MIN_KEY_BITS, PAGE, VERSION};
    pub use crate::prepare::run::build_to_vec;
    pub use crate::range::PREFIX_DIGITS;
    #[cfg(feature = "gzip")]
    pub use crate::range::gzip::gzip;
    pub use crate::range::pad::{PAD_MIN, PAD_SPREAD, pad_range};
    pub use crate::range::parse::{MAX_RANGE_BODY, parse_range, parse_range_scalar};
    pub use crate::range::render::{range_body, write_range_body};
    pub use crate::range::renderer::{Renderer, write_range_body_by};
    pub use crate::range::validator::range_etag;
    pub use crate::read::identity::identity;
    pub use crate::read::ranges::write_range_by;
    #[cfg(feature = "serve")]
    pub use crate::serve::hash_api::{MAX_BATCH, MAX_BATCH_BYTES};
    #[cfg(feature = "update")]
    pub use crate::update::{decode_body, loses_data, read_answer};
    pub use crate::write::sorted::{Checkpoint, SortedWriter, Written};
}
