//! What a server of the range API has done, for `GET /metrics` in the
//! Prometheus text format: requests by route and status, how long answers
//! took to make, bytes of bodies sent, connections open, reloads, and the
//! hashes and age of each index served.
//!
//! Recording is a few relaxed atomic additions a request into fixed
//! tables (no lock, no map, no allocation); the text is made only when
//! `/metrics` is asked for, by the Prometheus project's own encoder
//! (`prometheus-client`).

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Instant, SystemTime};

use axum::http::StatusCode;
use axum::response::Response;
use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

use crate::format::hash::Kind;

/// The routes requests are counted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// `GET /range/{prefix}`.
    Range,
    /// `GET /check/{kind}/{hash}`.
    Check,
    /// `POST /check`.
    CheckBatch,
    /// `GET /health`.
    Health,
    /// `GET /metrics`.
    Metrics,
    /// `GET /identity`.
    Identity,
    /// `GET /bundles/{identity}`.
    Bundle,
    /// `GET /`, the check page.
    Page,
    /// Anything else (answered 404, 405 or 400).
    Other,
}

impl Route {
    const ALL: [Route; 9] = [
        Route::Range,
        Route::Check,
        Route::CheckBatch,
        Route::Health,
        Route::Metrics,
        Route::Identity,
        Route::Bundle,
        Route::Page,
        Route::Other,
    ];

    fn label(self) -> &'static str {
        match self {
            Route::Range => "range",
            Route::Check => "check",
            Route::CheckBatch => "check_batch",
            Route::Health => "health",
            Route::Metrics => "metrics",
            Route::Identity => "identity",
            Route::Bundle => "bundle",
            Route::Page => "page",
            Route::Other => "other",
        }
    }
}

/// The statuses counted each on their own; any other counts as its class
/// (`2xx` … `5xx`).
const STATUSES: [u16; 11] = [200, 204, 304, 400, 404, 405, 413, 500, 503, 0, 0];
const CLASSES: [&str; 5] = ["1xx", "2xx", "3xx", "4xx", "5xx"];
/// Slots a route has: the statuses above, then the five classes.
const SLOTS: usize = STATUSES.len() + CLASSES.len();

fn slot(status: StatusCode) -> usize {
    let code = status.as_u16();
    STATUSES
        .iter()
        .position(|&s| s == code)
        .unwrap_or_else(|| STATUSES.len() + usize::from(code / 100).clamp(1, 5) - 1)
}

fn slot_label(slot: usize) -> String {
    match STATUSES.get(slot) {
        Some(&code) => code.to_string(),
        None => CLASSES[slot - STATUSES.len()].to_string(),
    }
}

/// Upper bounds of the latency histogram's buckets, in microseconds: a
/// range answer takes tens of microseconds warm, a cold one a disk read.
const BOUNDS_MICROS: [u64; 14] = [
    25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 1_000_000,
];

/// One route's latency histogram: a count a bucket (the last one past
/// every bound), and the sum.
#[derive(Debug, Default)]
struct Latency {
    buckets: [AtomicU64; BOUNDS_MICROS.len() + 1],
    sum_nanos: AtomicU64,
}

/// A server's counters.
#[derive(Debug, Default)]
pub(crate) struct Metrics {
    requests: [[AtomicU64; SLOTS]; Route::ALL.len()],
    latency: [Latency; Route::ALL.len()],
    body_bytes: AtomicU64,
    connections_open: AtomicI64,
    connections: AtomicU64,
    tls_failures: AtomicU64,
    reloads: [AtomicU64; 2],
    reload_failures: [AtomicU64; 2],
}

/// What a server reloads without a restart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reload {
    /// An index file replaced under its name.
    Index,
    /// The TLS certificate and key.
    Certificate,
}

impl Reload {
    fn label(self) -> &'static str {
        match self {
            Reload::Index => "index",
            Reload::Certificate => "certificate",
        }
    }
}

impl Metrics {
    /// Counts an answer of `route` made since `start`.
    pub(crate) fn record(&self, route: Route, start: Instant, response: &Response) {
        let r = route as usize;
        self.requests[r][slot(response.status())].fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let micros = nanos / 1000;
        let bucket = BOUNDS_MICROS.partition_point(|&b| b < micros);
        let latency = &self.latency[r];
        latency.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        latency.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
        let bytes = axum::body::HttpBody::size_hint(response.body()).lower();
        self.body_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    pub(crate) fn tls_failed(&self) {
        self.tls_failures.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn reloaded(&self, what: Reload, ok: bool) {
        let counter = if ok {
            &self.reloads
        } else {
            &self.reload_failures
        };
        counter[what as usize].fetch_add(1, Ordering::Relaxed);
    }
}

/// An open connection, counted in `/metrics` until dropped.
#[derive(Debug)]
pub struct Connection(Arc<Metrics>);

impl Connection {
    pub(crate) fn open(metrics: &Arc<Metrics>) -> Connection {
        metrics.connections_open.fetch_add(1, Ordering::Relaxed);
        metrics.connections.fetch_add(1, Ordering::Relaxed);
        Connection(Arc::clone(metrics))
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.0.connections_open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A served index as `/metrics` reports it.
pub(crate) struct IndexGauges {
    pub kind: Kind,
    pub name: String,
    pub hashes: u64,
    /// When its hashes were last brought up to date, if known.
    pub updated: Option<SystemTime>,
}

/// Labels of a series: name and value pairs.
type Labels = Vec<(&'static str, String)>;

/// A metric read at the time it is encoded: its series, each a label set
/// and a value.
#[derive(Debug)]
struct Snapshot {
    kind: MetricType,
    series: Vec<(Labels, Value)>,
}

#[derive(Debug)]
enum Value {
    Counter(u64),
    Gauge(f64),
    Histogram {
        sum: f64,
        count: u64,
        buckets: Vec<(f64, u64)>,
    },
}

impl EncodeMetric for Snapshot {
    fn encode(&self, mut encoder: MetricEncoder) -> std::fmt::Result {
        for (labels, value) in &self.series {
            let mut family = encoder.encode_family(labels)?;
            match value {
                Value::Counter(n) => family.encode_counter::<NoLabelSet, _, u64>(n, None)?,
                Value::Gauge(x) => family.encode_gauge(x)?,
                Value::Histogram {
                    sum,
                    count,
                    buckets,
                } => family.encode_histogram::<NoLabelSet>(*sum, *count, buckets, None)?,
            }
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        self.kind
    }
}

impl Snapshot {
    fn counters(series: Vec<(Labels, u64)>) -> Snapshot {
        Snapshot {
            kind: MetricType::Counter,
            series: series
                .into_iter()
                .map(|(l, n)| (l, Value::Counter(n)))
                .collect(),
        }
    }

    fn gauges(series: Vec<(Labels, f64)>) -> Snapshot {
        Snapshot {
            kind: MetricType::Gauge,
            series: series
                .into_iter()
                .map(|(l, x)| (l, Value::Gauge(x)))
                .collect(),
        }
    }
}

fn labels<const N: usize>(pairs: [(&'static str, String); N]) -> Labels {
    pairs.into()
}

fn kind_label(kind: Kind) -> &'static str {
    match kind {
        Kind::Sha1 => "sha1",
        Kind::Ntlm => "ntlm",
    }
}

/// The metrics in the Prometheus text format (version 0.0.4).
pub(crate) fn render(metrics: &Metrics, indexes: &[IndexGauges], now: SystemTime) -> String {
    let mut registry = Registry::with_prefix("seekless");
    register_requests(&mut registry, metrics);
    register_server(&mut registry, metrics);
    register_indexes(&mut registry, indexes, now);
    let mut text = String::new();
    prometheus_client::encoding::prometheus_text::encode(&mut text, &registry)
        .expect("writing to a String cannot fail");
    text
}

/// Requests by route and status, and how long their answers took.
fn register_requests(registry: &mut Registry, metrics: &Metrics) {
    let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let mut requests = Vec::new();
    let mut latency = Vec::new();
    for route in Route::ALL {
        let r = route as usize;
        for (slot, n) in metrics.requests[r].iter().enumerate() {
            // Slots never used stay out; the unused ones of STATUSES too.
            if STATUSES.get(slot) == Some(&0) {
                continue;
            }
            let n = load(n);
            if n > 0 || (slot == 0 && route == Route::Range) {
                requests.push((
                    labels([("route", route.label().into()), ("code", slot_label(slot))]),
                    n,
                ));
            }
        }
        let histogram = &metrics.latency[r];
        let mut count = 0;
        let mut buckets = Vec::with_capacity(BOUNDS_MICROS.len() + 1);
        for (i, bucket) in histogram.buckets.iter().enumerate() {
            count += load(bucket);
            let bound = BOUNDS_MICROS
                .get(i)
                .map_or(f64::INFINITY, |&b| b as f64 / 1e6);
            buckets.push((bound, load(bucket)));
        }
        if count > 0 || route == Route::Range {
            latency.push((
                labels([("route", route.label().into())]),
                Value::Histogram {
                    sum: load(&histogram.sum_nanos) as f64 / 1e9,
                    count,
                    buckets,
                },
            ));
        }
    }
    registry.register(
        "http_requests",
        "Requests answered, by route and status",
        Snapshot::counters(requests),
    );
    registry.register_with_unit(
        "http_request_duration",
        "Time from a request's arrival at its route to its answer being made",
        Unit::Seconds,
        Snapshot {
            kind: MetricType::Histogram,
            series: latency,
        },
    );
}

/// Body bytes, connections, TLS failures and reloads.
fn register_server(registry: &mut Registry, metrics: &Metrics) {
    let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
    registry.register_with_unit(
        "http_response_body",
        "Bytes of answer bodies sent",
        Unit::Bytes,
        Snapshot::counters(vec![(Labels::new(), load(&metrics.body_bytes))]),
    );
    registry.register(
        "connections_open",
        "Connections open now",
        Snapshot::gauges(vec![(
            Labels::new(),
            metrics.connections_open.load(Ordering::Relaxed) as f64,
        )]),
    );
    registry.register(
        "connections",
        "Connections accepted",
        Snapshot::counters(vec![(Labels::new(), load(&metrics.connections))]),
    );
    registry.register(
        "tls_handshake_failures",
        "TLS handshakes that failed (plain HTTP to the TLS port, a client refusing the certificate, …)",
        Snapshot::counters(vec![(Labels::new(), load(&metrics.tls_failures))]),
    );
    let by_what = |counters: &[AtomicU64; 2]| {
        [Reload::Index, Reload::Certificate]
            .into_iter()
            .map(|what| {
                (
                    labels([("what", what.label().into())]),
                    load(&counters[what as usize]),
                )
            })
            .collect()
    };
    registry.register(
        "reloads",
        "Indexes and certificates reloaded without a restart",
        Snapshot::counters(by_what(&metrics.reloads)),
    );
    registry.register(
        "reload_failures",
        "Replaced indexes or certificates refused (the old one kept)",
        Snapshot::counters(by_what(&metrics.reload_failures)),
    );
}

/// The hashes and age of each index served.
fn register_indexes(registry: &mut Registry, indexes: &[IndexGauges], now: SystemTime) {
    let index_labels = |i: &IndexGauges| {
        labels([
            ("kind", kind_label(i.kind).into()),
            ("index", i.name.clone()),
        ])
    };
    registry.register(
        "index_hashes",
        "Hashes in each index served",
        Snapshot::gauges(
            indexes
                .iter()
                .map(|i| (index_labels(i), i.hashes as f64))
                .collect(),
        ),
    );
    registry.register_with_unit(
        "index_age",
        "Time since each index served was last brought up to date (its last update, or its build)",
        Unit::Seconds,
        Snapshot::gauges(
            indexes
                .iter()
                .filter_map(|i| {
                    let age = now.duration_since(i.updated?).unwrap_or_default();
                    Some((index_labels(i), age.as_secs_f64().round()))
                })
                .collect(),
        ),
    );
}

/// The `Content-Type` of the text [`render`] makes.
pub(crate) const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;
