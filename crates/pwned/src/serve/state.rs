//! What the range API serves and how: [`RangeApi`], shared by every clone
//! and every request, holds the indexes ([`Served`]: one of each kind,
//! with its name, times, verification and identity), the cache of recent
//! bodies, the metrics and the settings; [`RangeApi::put`] swaps an index
//! for a new one of its kind while requests go on (a request holds the
//! indexes it started with to its end). The routes that answer from it
//! are `routes`'.

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::{Duration, Instant, SystemTime};

use axum::http::HeaderValue;
use axum::response::Response;

use crate::error::{ErrorKind, Result};
use crate::format::hash::Kind;
use crate::format::source::RANGES;
use crate::read::gzip_ranges::GzipRanges;
use crate::read::index::Index;
use crate::serve::cache::Cache;
use crate::serve::metrics::{Connection, IndexGauges, Metrics, Reload, Route};

/// Verification state of a served index.
pub(crate) const VERIFYING: u8 = 0;
pub(crate) const VERIFIED: u8 = 1;
pub(crate) const DAMAGED: u8 = 2;

/// An index as the range API serves it: with the name `/health` reports,
/// the time answers give as `Last-Modified`, and whether it was verified.
#[derive(Debug)]
pub struct Served {
    pub(super) index: Index,
    pub(super) name: String,
    pub(super) last_modified: Option<HeaderValue>,
    /// When the hashes were last brought up to date: the last `update`
    /// (from the source section), else the file's time.
    pub(super) updated: Option<SystemTime>,
    pub(crate) status: AtomicU8,
    pub(crate) damage: OnceLock<String>,
    /// Each range's validator, computed on first use.
    pub(super) validators: OnceLock<Validators>,
    /// The index's identity: recorded in it, or computed by
    /// [`Served::verify`].
    pub(super) identity: OnceLock<[u8; 32]>,
    /// The gzip answers kept beside the index, once attached.
    pub(super) gzip_ranges: OnceLock<Arc<GzipRanges>>,
    /// Why the gzip ranges file stopped being used (a damaged member).
    pub(super) gzip_damage: OnceLock<String>,
}

/// The validators of an index's ranges, kept once computed: 16 bytes a
/// range (16 MiB for the 2^20 ranges), so a range's pairs are hashed once
/// in the index's life, not once a request.
#[derive(Debug)]
pub(super) struct Validators(Box<[AtomicU64]>);

impl Validators {
    pub(super) fn new() -> Validators {
        Validators((0..2 * RANGES).map(|_| AtomicU64::new(0)).collect())
    }

    pub(super) fn get(&self, prefix: u32) -> Option<[u8; 16]> {
        let i = 2 * prefix as usize;
        // The low word is stored last: once it is seen, the high one is.
        let low = self.0[i + 1].load(Ordering::Acquire);
        let high = self.0[i].load(Ordering::Relaxed);
        (low != 0).then(|| {
            let mut tag = [0u8; 16];
            tag[..8].copy_from_slice(&high.to_be_bytes());
            tag[8..].copy_from_slice(&low.to_be_bytes());
            tag
        })
    }

    /// Keeps `tag` (one whose low half is zero is not kept: zero means
    /// not computed). Threads that race store the same value.
    pub(super) fn set(&self, prefix: u32, tag: [u8; 16]) {
        let i = 2 * prefix as usize;
        let high = u64::from_be_bytes(tag[..8].try_into().expect("8 bytes"));
        let low = u64::from_be_bytes(tag[8..].try_into().expect("8 bytes"));
        self.0[i].store(high, Ordering::Relaxed);
        self.0[i + 1].store(low, Ordering::Release);
    }
}

impl Served {
    /// `index`, named `name` (its path, say) in `/health`. A compact index
    /// (`prepare --key-bits`) is refused: it cannot list a range.
    pub fn new(index: Index, name: impl Into<String>) -> Result<Served> {
        let stats = index.stats();
        if stats.is_compact() {
            return Err(ErrorKind::Compact {
                key_bits: stats.key_bits,
            }
            .into());
        }
        // An index `update` made says when it last did; its section is
        // checked in full by `verify`.
        let updated = index
            .source()
            .ok()
            .flatten()
            .filter(|source| source.updated > 0)
            .map(|source| source.updated_time());
        let identity = OnceLock::new();
        if let Some(recorded) = index.recorded_identity() {
            let _ = identity.set(recorded);
        }
        Ok(Served {
            index,
            name: name.into(),
            last_modified: None,
            updated,
            status: AtomicU8::new(VERIFYING),
            damage: OnceLock::new(),
            validators: OnceLock::new(),
            identity,
            gzip_ranges: OnceLock::new(),
            gzip_damage: OnceLock::new(),
        })
    }

    /// Answers carry `time` as their `Last-Modified` (the index file's
    /// modification time, say), and `If-Modified-Since` repeating it is
    /// answered `304`. For an index not made by `update` (one `prepare`
    /// built), it is also when the hashes were brought up to date, which
    /// `/health` and `/metrics` count its age from.
    #[must_use]
    pub fn last_modified(mut self, time: SystemTime) -> Served {
        self.last_modified = HeaderValue::from_str(&httpdate::fmt_http_date(time)).ok();
        self.updated = self.updated.or(Some(time));
        self
    }

    /// When the hashes were last brought up to date: the time of the last
    /// `update` recorded in the index, else the time given to
    /// [`Served::last_modified`]; `None` when neither is known.
    pub fn updated(&self) -> Option<SystemTime> {
        self.updated
    }

    /// Checks every page of the index ([`Index::verify`]) and records the
    /// outcome for `/health`; then, when the index does not record its
    /// identity (one `prepare` built), computes it for `/identity`.
    pub fn verify(&self) -> Result<()> {
        let result = self.index.verify().and_then(|()| {
            if self.identity.get().is_none() {
                let _ = self.identity.set(self.index.identity()?);
            }
            Ok(())
        });
        match &result {
            Ok(()) => self.status.store(VERIFIED, Ordering::Release),
            Err(e) => {
                let _ = self.damage.set(format!("{}: {e}", self.name));
                self.status.store(DAMAGED, Ordering::Release);
            }
        }
        result
    }

    /// The index.
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// The index's identity (docs/format-bundle.md): the one it records,
    /// else the one [`Served::verify`] computed; `None` until then.
    pub fn identity(&self) -> Option<[u8; 32]> {
        self.identity.get().copied()
    }

    /// Answers gzip requests from `ranges` (opened with this index:
    /// [`GzipRanges::open`] checked it was made from it) instead of
    /// compressing each answer. Without padding only: padded answers are
    /// made fresh. Once attached it stays for the index's life; `false`
    /// when one was attached already.
    pub fn attach_gzip_ranges(&self, ranges: GzipRanges) -> bool {
        self.gzip_ranges.set(Arc::new(ranges)).is_ok()
    }

    /// The gzip ranges file answers come from, unless a damaged member
    /// stopped its use.
    pub fn gzip_ranges(&self) -> Option<&GzipRanges> {
        self.gzip_ranges
            .get()
            .filter(|_| self.gzip_damage.get().is_none())
            .map(|r| &**r)
    }

    /// Why the attached gzip ranges file is no longer used: the first
    /// damaged member found (gzip answers are then compressed as they
    /// go, from the index).
    pub fn gzip_ranges_damage(&self) -> Option<&str> {
        self.gzip_damage.get().map(String::as_str)
    }

    /// The name given to [`Served::new`].
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// The range API: the indexes it answers from (one of each kind) and how.
/// Cloning is cheap and every clone serves the same indexes.
#[derive(Debug, Clone)]
pub struct RangeApi {
    pub(super) shared: Arc<Shared>,
}

#[derive(Debug)]
pub(super) struct Shared {
    pub(super) current: RwLock<Arc<Generation>>,
    pub(super) cache_bytes: usize,
    pub(super) seed: AtomicU64,
    /// The age past which `/health` calls an index stale, in seconds (0:
    /// none).
    pub(super) max_age: AtomicU64,
    pub(super) metrics: Arc<Metrics>,
}

/// The indexes answering requests now, with what is cached of them.
#[derive(Debug)]
pub(crate) struct Generation {
    pub(crate) sha1: Option<Arc<Served>>,
    pub(crate) ntlm: Option<Arc<Served>>,
    pub(super) cache: Option<Cache>,
}

impl Default for RangeApi {
    fn default() -> Self {
        RangeApi::new()
    }
}

impl RangeApi {
    /// An API serving no index yet (every range answers 404 until
    /// [`RangeApi::put`]), with no response cache.
    pub fn new() -> RangeApi {
        RangeApi::with_cache(0)
    }

    /// An API that keeps up to `bytes` of recently served range bodies in
    /// memory (0: none). It helps when traffic favours some ranges, as real
    /// traffic does; padded answers are never kept.
    pub fn with_cache(bytes: usize) -> RangeApi {
        let seed = std::collections::hash_map::RandomState::new();
        let seed = std::hash::BuildHasher::hash_one(&seed, SystemTime::now());
        RangeApi {
            shared: Arc::new(Shared {
                current: RwLock::new(Arc::new(Generation {
                    sha1: None,
                    ntlm: None,
                    cache: None,
                })),
                cache_bytes: bytes,
                seed: AtomicU64::new(seed),
                max_age: AtomicU64::new(0),
                metrics: Arc::default(),
            }),
        }
    }

    pub(crate) fn load(&self) -> Arc<Generation> {
        Arc::clone(
            &self
                .shared
                .current
                .read()
                .unwrap_or_else(|e| e.into_inner()),
        )
    }

    /// Serves `served` for its kind from now on, in place of the index of
    /// that kind served before (returned); requests already started finish
    /// on the one they began with.
    pub fn put(&self, served: Served) -> Option<Arc<Served>> {
        let mut current = self
            .shared
            .current
            .write()
            .unwrap_or_else(|e| e.into_inner());
        let (mut sha1, mut ntlm) = (current.sha1.clone(), current.ntlm.clone());
        let slot = match served.index.kind() {
            Kind::Sha1 => &mut sha1,
            Kind::Ntlm => &mut ntlm,
        };
        let old = slot.replace(Arc::new(served));
        let cache_bytes = self.shared.cache_bytes;
        *current = Arc::new(Generation {
            sha1,
            ntlm,
            cache: (cache_bytes > 0).then(|| Cache::new(cache_bytes)),
        });
        old
    }

    /// The index of `kind` served now.
    pub fn get(&self, kind: Kind) -> Option<Arc<Served>> {
        let current = self.load();
        match kind {
            Kind::Sha1 => current.sha1.clone(),
            Kind::Ntlm => current.ntlm.clone(),
        }
    }

    /// The metrics as `GET /metrics` answers them.
    pub fn render_metrics(&self) -> String {
        let current = self.load();
        let indexes: Vec<IndexGauges> = [&current.sha1, &current.ntlm]
            .into_iter()
            .flatten()
            .map(|served| IndexGauges {
                kind: served.index.kind(),
                name: served.name.clone(),
                hashes: served.index.len(),
                updated: served.updated,
            })
            .collect();
        crate::serve::metrics::render(&self.shared.metrics, &indexes, SystemTime::now())
    }

    /// Counts a connection as open in `/metrics` until the guard is
    /// dropped.
    pub(crate) fn connection(&self) -> Connection {
        Connection::open(&self.shared.metrics)
    }

    /// Counts a TLS handshake that failed, in `/metrics`.
    pub(crate) fn tls_handshake_failed(&self) {
        self.shared.metrics.tls_failed();
    }

    /// Counts a reload of `what` in `/metrics`: done (`ok`), or refused
    /// with the old one kept.
    pub(crate) fn reloaded(&self, what: Reload, ok: bool) {
        self.shared.metrics.reloaded(what, ok);
    }

    /// `/health` answers 503 while an index is older than `age` (counted
    /// from [`Served::updated`]); `None`: however old.
    pub fn set_max_age(&self, age: Option<Duration>) {
        let secs = age.map_or(0, |a| a.as_secs().max(1));
        self.shared.max_age.store(secs, Ordering::Relaxed);
    }

    /// The age set by [`RangeApi::set_max_age`].
    pub fn max_age(&self) -> Option<Duration> {
        let secs = self.shared.max_age.load(Ordering::Relaxed);
        (secs > 0).then(|| Duration::from_secs(secs))
    }

    /// Counts an answer of `route` begun at `start`.
    pub(crate) fn measured(&self, route: Route, start: Instant, response: Response) -> Response {
        self.shared.metrics.record(route, start, &response);
        response
    }
}
