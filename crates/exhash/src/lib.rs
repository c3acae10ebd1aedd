//! An extendible hash table from u64 keys to u64 values, stored in 8 KiB
//! pages of compact entries, in memory or in a crash-safe file.
//!
//! - `mix.rs`: keys are mixed by an invertible 64-bit hash; positions are
//!   skewed so pages split evenly over time instead of in waves.
//! - `group.rs`: a page is one small open-addressing table: groups of 16
//!   tag bytes compared at once, slots of a short key field and a value; an
//!   entry lives in its home group or one of the next [`REACH`]` - 1`.
//! - [`ExHash`] (`table.rs`): get, insert, remove; `directory.rs`: splits,
//!   merges, directory doubling and halving, with a second directory of
//!   page addresses that takes lookups straight to a page's bytes;
//!   `load.rs`: bulk loads in page order, whose finished pages a file
//!   store writes early;
//!   `layout.rs`: depths, page metadata, directory slots; `directory_room.rs`:
//!   room for the directory's and the page table's next growth, faulted in
//!   ahead.
//! - `piece.rs`, `legacy.rs`: reading the pages of format versions 1 and 2,
//!   whose files are laid out afresh when opened.
//! - [`Page`] (`page.rs`): the 8 KiB unit every store holds.
//! - [`PageStore`] (`store.rs`): the storage trait, with [`MemoryStore`],
//!   whose 2 MiB chunks (`chunk.rs`) are made and faulted in ahead of need;
//!   [`FileStore`] (`file/`) adds atomic, crash-safe commits: a few
//!   changes appended to a journal, the pages written by shadow paging at
//!   checkpoints (format in `docs/format-exhash.md`). One process at a
//!   time opens a table file for writing: [`OpenOptions`] (`file/lock.rs`)
//!   locks a file beside it, and refuses or waits for a second writer.
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
//! // Many pairs at once: page by page, finished pages written meanwhile.
//! let pairs: Vec<(u64, u64)> = (0..1_000_000).map(|k| (k * 7919, k)).collect();
//! table.load(&pairs);
//! table.commit()?; // durable from here on, whatever happens next
//! table.insert(3, 4);
//! table.commit()?; // one journal block and one sync
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]

/// The side-by-side measurement behind `seekless exhash bench` and the
/// benchmarks (feature `bench`).
#[cfg(feature = "bench")]
pub mod bench;
mod chunk;
mod device;
mod directory;
mod directory_room;
mod error;
mod file;
pub(crate) mod format;
mod group;
mod iter;
mod layout;
mod legacy;
mod load;
/// The key mixer (invertible), public with `test-util` so tests can build
/// keys that land where they want.
#[cfg(feature = "test-util")]
pub mod mix;
#[cfg(not(feature = "test-util"))]
mod mix;
mod page;
mod page_table;
mod piece;
mod prefetch;
mod stats;
mod store;
mod table;

pub use device::Device;
pub use error::{Error, ErrorKind, Result};
pub use file::{FileStats, FileStore, OpenOptions};
pub use group::REACH;
pub use iter::Iter;
pub use layout::MAX_DEPTH;
pub use page::{PAGE_SIZE, Page, PageId};
pub use stats::Stats;
pub use store::{MemoryStore, PageStore};
pub use table::ExHash;
