//! An extendible hash table from u64 keys to u64 values, stored in 8 KiB
//! pages of compactly encoded entries, in memory or in a crash-safe file.
//!
//! - `mix.rs`: keys are mixed by an invertible 64-bit hash; positions are
//!   skewed so pages split evenly over time instead of in waves.
//! - `piece/`: a page is 64 pieces of 128 bytes; an entry lives in its home
//!   piece or one of the next [`CHAIN`]` - 1`, delta-encoded.
//! - [`ExHash`] (`table.rs`): get, insert, remove, placing entries in
//!   their chain; `directory.rs`: splits, merges, directory doubling and
//!   halving; `layout.rs`: the geometry and laying out a page.
//! - [`PageStore`] (`store.rs`): the storage trait, with [`MemoryStore`];
//!   [`FileStore`] (`file.rs`) adds atomic, crash-safe commits by shadow
//!   paging (format in `docs/format-exhash.md`).
//!
//! ```
//! use seekless_exhash::ExHash;
//!
//! let mut table = ExHash::new();
//! assert_eq!(table.insert(42, 7), None);
//! assert_eq!(table.insert(42, 8), Some(7));
//! assert_eq!(table.get(42), Some(8));
//! assert_eq!(table.remove(42), Some(8));
//! assert!(table.is_empty());
//! ```
//!
//! A file-backed table commits atomically:
//!
//! ```no_run
//! # fn main() -> Result<(), seekless_exhash::Error> {
//! let mut table = seekless_exhash::ExHash::open_or_create("t.exh".as_ref())?;
//! table.insert(1, 2);
//! table.commit()?; // durable from here on, whatever happens next
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]

/// The side-by-side measurement behind `seekless exhash bench` and the
/// benchmarks (feature `bench`).
#[cfg(feature = "bench")]
pub mod bench;
mod device;
mod directory;
mod error;
mod file;
pub(crate) mod format;
mod iter;
mod layout;
/// The key mixer (invertible), public with `test-util` so tests can build
/// keys that land where they want.
#[cfg(feature = "test-util")]
pub mod mix;
#[cfg(not(feature = "test-util"))]
mod mix;
mod piece;
mod prefetch;
mod stats;
mod store;
mod table;

pub use device::Device;
pub use error::{Error, ErrorKind, Result};
pub use file::FileStore;
pub use iter::Iter;
pub use layout::{CHAIN, MAX_DEPTH};
pub use stats::Stats;
pub use store::{MemoryStore, PAGE_SIZE, PIECES, Page, PageId, PageStore};
pub use table::ExHash;
