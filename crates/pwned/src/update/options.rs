//! What an update is asked to do ([`UpdateOptions`]) and what it reports
//! while it runs ([`UpdateProgress`]).

use std::path::PathBuf;
use std::time::Duration;

use crate::format::hash::Kind;
use crate::update::proxies::Proxies;

/// Requests in flight at once, by default. Chosen by measurement: on
/// loopback 256 in flight took 77.7 s for a full update against 86.9 s for
/// 64 and 85.5 s for 16, for 12 MiB more memory (benchmarks/log/2026-11-24-update-against-curl.md); and to
/// keep a 1 Gbit/s link busy (~7,500 ranges a second) across the ~30 ms a
/// range answer takes over the internet, about 225 must be in flight.
pub const DEFAULT_CONCURRENCY: u16 = 256;

/// Where the corpus is published.
pub const DEFAULT_BASE_URL: &str = "https://api.pwnedpasswords.com";

/// How [`update`](crate::update::update()) fetches.
///
/// Start from `default()` and set the fields that differ: new fields may
/// come, so it is not built field by field outside this crate.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct UpdateOptions {
    /// The API's base URL; ranges are `{base_url}/range/{PREFIX}`.
    pub base_url: String,
    /// SHA-1 or NTLM (`?mode=ntlm`).
    pub kind: Kind,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// Ignore stored validators: fetch every range whole.
    pub full: bool,
    /// Longest wait for one answer, from sending to its last byte.
    pub timeout: Duration,
    /// Tries per range before the update stops with an error naming it.
    pub tries: u32,
    /// First wait before a retry; each further retry waits twice as long
    /// (up to 30 s), with jitter, unless the server says `Retry-After`.
    pub backoff: Duration,
    /// Worker threads for requests and checking answers (default: all cores).
    pub threads: usize,
    /// The HTTP proxies requests go through (default: the environment's,
    /// read as curl reads it; see [`Proxies::from_env`]).
    pub proxies: Proxies,
    /// PEM files of CA certificates trusted for TLS beside the system's
    /// store (default: none). Each file may hold several; one that cannot
    /// be read or holds none stops the update before any request.
    pub ca_certs: Vec<PathBuf>,
    /// Apply this delta bundle (docs/format-bundle.md) instead of asking
    /// the network: the index must be the one the bundle was made for.
    pub from_bundle: Option<PathBuf>,
    /// Also write the bundle of what this update changed here (written
    /// under a temporary name, renamed when complete).
    pub bundle_out: Option<PathBuf>,
    /// Keep only the hashes seen at least this many times (a subset).
    /// `None` keeps the existing index's minimum (every hash for a new
    /// one). A higher minimum than the index's filters the ranges copied
    /// from it too; a lower one needs [`full`](UpdateOptions::full), since
    /// the index lacks the hashes it left out.
    pub min_count: Option<u64>,
    /// Take range answers that remove hashes or lower counts as they come
    /// (default: such an answer is suspect, asked again past caches, and
    /// if still so, the range keeps what the index had; see
    /// [`UpdateSummary::suspect`](crate::UpdateSummary::suspect)). For an
    /// operator who knows the upstream removed them.
    pub accept_removals: bool,
}

impl Default for UpdateOptions {
    fn default() -> Self {
        UpdateOptions {
            base_url: DEFAULT_BASE_URL.to_string(),
            kind: Kind::Sha1,
            concurrency: usize::from(DEFAULT_CONCURRENCY),
            full: false,
            timeout: Duration::from_secs(30),
            tries: 8,
            backoff: Duration::from_millis(250),
            threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
            proxies: Proxies::from_env(),
            ca_certs: Vec::new(),
            from_bundle: None,
            bundle_out: None,
            min_count: None,
            accept_removals: false,
        }
    }
}

/// Told about an update as it goes; every method has an empty default.
pub trait UpdateProgress: Sync {
    /// An interrupted update goes on: ranges before `from` are done.
    fn resumed(&self, _from: u32) {}
    /// A range is done (in prefix order): bytes received for it (0 when not
    /// modified) and hashes it holds.
    fn range(&self, _received: u64, _hashes: u64) {}
}

/// An [`UpdateProgress`] that ignores everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoUpdateProgress;

impl UpdateProgress for NoUpdateProgress {}
