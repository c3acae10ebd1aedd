//! The Have I Been Pwned range API over HTTP (`GET /range/{5 hex}`), as an
//! [axum] [`Router`] an application mounts under any path, answering from
//! indexes shared by every request.
//!
//! ```no_run
//! use seekless_pwned::{Index, RangeApi, Served};
//!
//! let api = RangeApi::new();
//! api.put(Served::new(Index::open("pwned.idx")?, "pwned.idx")?);
//! // Mounted under /pwned: GET /pwned/range/5BAA6 answers.
//! let app: axum::Router = axum::Router::new().nest("/pwned", api.router());
//! # Ok::<(), seekless_pwned::Error>(())
//! ```
//!
//! Behaviour, as api.pwnedpasswords.com:
//! - `GET /range/5BAA6` (either case): `200 text/plain`, one `SUFFIX:COUNT`
//!   line per hash whose hex starts with the prefix (35 hex digits of SHA-1,
//!   27 of NTLM, uppercase), sorted, CRLF-separated, no trailing newline; an
//!   empty range is an empty body. `?mode=ntlm` answers from the NTLM index.
//! - `Add-Padding: true`: random `SUFFIX:0` lines are mixed in
//!   ([`pad_range`](crate::range::pad::pad_range)), fresh for every answer.
//! - 400 for a malformed prefix or mode, 404 for other paths, 405 for other
//!   methods; `OPTIONS` answers CORS preflight; every answer carries
//!   `Access-Control-Allow-Origin: *`.
//! - gzip or brotli when `Accept-Encoding` asks; a strong `ETag` per range
//!   computed from the range's content alone ([`range_etag`](crate::range::validator::range_etag): the same across
//!   restarts and across indexes holding the same range, so `update`
//!   refreshes incrementally from a mirror and mirrors chain) and a
//!   `Last-Modified` from [`Served::last_modified`](crate::Served::last_modified), with `304 Not Modified`
//!   on revalidation; `Cache-Control: public`.
//! - `GET /health`: each index's kind, hashes, state and when it was last
//!   brought up to date, its age and identity; 200 once every served index
//!   has been verified ([`Served::verify`](crate::Served::verify)), 503 while one is not yet, is
//!   damaged, or is older than [`RangeApi::set_max_age`] allows.
//! - `GET /identity`: which corpus each index is, as JSON (its identity,
//!   kind, hashes, minimum count and update time), so that a replica
//!   learns in one request whether it holds the same.
//! - [`RangeApi::check_api`]: whole-hash lookups for trusted callers
//!   (`GET /check/sha1/{40 hex}`, `POST /check`; see `hash_api`).
//! - [`RangeApi::metrics`]: `GET /metrics` in the Prometheus text format.
//! - [`RangeApi::page`]: `GET /` is a page where a person checks a password:
//!   the browser hashes it (SHA-1 by WebCrypto, or by the page's own script
//!   where WebCrypto is not offered, as over plain HTTP by a name other than
//!   localhost; MD4 for NTLM when only an NTLM index is served), asks for
//!   its range with padding and looks for the rest of the hash itself; the password and its hash never leave the
//!   browser. One self-contained file under a strict Content-Security-Policy
//!   (its script and style allowed by their hashes, nothing external).
//!
//! [`RangeApi::put`] swaps an index for a new one of its kind while
//! requests go on: a request holds the indexes it started with to its end
//! (see `state`, which holds them).

use std::time::Instant;

use axum::Router;
use axum::http::{HeaderValue, Method, header};
use axum::response::Response;

use crate::serve::http::{check_batch, check_one, cors, fallback, metrics};
use crate::serve::metrics::Route;
use crate::serve::page::page;
use crate::serve::range_answer::{range, range_answer};
use crate::serve::state::RangeApi;

/// RangeApi's routers, to serve or to merge into an application's.
impl RangeApi {
    /// The check page at `/`, for the indexes served at the time of each
    /// request; merge it into [`RangeApi::router`]'s router
    /// (`api.router().merge(api.page())`) to offer it beside the API.
    pub fn page(&self) -> Router {
        Router::new()
            .route("/", axum::routing::any(page))
            .with_state(self.clone())
    }

    /// The HTTP service: `/range/{prefix}` and `/health`, every other path
    /// 404, CORS on every answer. Mount it under any path
    /// (`Router::nest`) or serve it as it is.
    pub fn router(&self) -> Router {
        Router::new()
            .route("/range/{prefix}", axum::routing::any(range))
            .route("/health", axum::routing::any(crate::serve::health::health))
            .route(
                "/identity",
                axum::routing::any(crate::serve::identity::identity),
            )
            .fallback(fallback)
            .with_state(self.clone())
            .layer(axum::middleware::map_response(cors))
    }

    /// Whole-hash lookups for trusted callers, to merge into
    /// [`RangeApi::router`]'s router (`api.router().merge(api.check_api())`):
    /// `GET /check/sha1/{40 hex}`, `GET /check/ntlm/{32 hex}` and
    /// `POST /check` (a JSON array of hex hashes). These receive whole
    /// hashes (no k-anonymity, no CORS): offer them only to callers
    /// trusted with the passwords' hashes.
    pub fn check_api(&self) -> Router {
        Router::new()
            .route("/check/{kind}/{hash}", axum::routing::any(check_one))
            .route("/check", axum::routing::any(check_batch))
            .with_state(self.clone())
    }

    /// `GET /bundles/{identity}`: the delta bundles in `dir`, each found
    /// by the identity of the index it applies to, to merge into
    /// [`RangeApi::router`]'s router. `dir` is read again on each request,
    /// so bundles written into it later are served at once; answers are
    /// immutable and cacheable (`Cache-Control: public, max-age=31536000,
    /// immutable`, a strong `ETag`). 404 when none applies.
    #[cfg(feature = "update")]
    pub fn bundles(&self, dir: impl Into<std::path::PathBuf>) -> Router {
        crate::serve::bundles::router(self, dir.into())
    }

    /// `GET /metrics` in the Prometheus text format, to merge into
    /// [`RangeApi::router`]'s router: requests by route and status, a
    /// latency histogram, bytes sent, connections (as counted by
    /// [`server::connection`](crate::server::connection)), reloads
    /// ([`server::reloaded`](crate::server::reloaded)), and
    /// each index's hashes and age.
    pub fn metrics(&self) -> Router {
        Router::new()
            .route("/metrics", axum::routing::any(metrics))
            .with_state(self.clone())
    }

    /// The answer to a `GET` or `HEAD` of `/range/{prefix}` or, with
    /// `check_api`, of `/check/{kind}/{hash}`, made without the Router's
    /// dispatch (no route matching, no boxed services): the same answer
    /// [`RangeApi::router`] (merged with [`RangeApi::check_api`]) gives,
    /// counted the same in the metrics. For a server that serves the API
    /// at its root and wants the cheapest path for the requests that make
    /// nearly all of its traffic; `None` for any other request, which the
    /// Router answers.
    pub(crate) fn answer_directly<B>(
        &self,
        request: &axum::http::Request<B>,
        check_api: bool,
    ) -> Option<Response> {
        let method = request.method();
        if *method != Method::GET && *method != Method::HEAD {
            return None;
        }
        let start = Instant::now();
        let path = request.uri().path();
        if let Some(prefix) = path.strip_prefix("/range/").filter(|p| !p.contains('/')) {
            let mut response = range_answer(self, prefix, method, request.uri(), request.headers());
            response.headers_mut().insert(
                header::ACCESS_CONTROL_ALLOW_ORIGIN,
                HeaderValue::from_static("*"),
            );
            return Some(self.measured(Route::Range, start, response));
        }
        let (kind, hash) = path
            .strip_prefix("/check/")
            .filter(|_| check_api)?
            .split_once('/')
            .filter(|(_, hash)| !hash.contains('/'))?;
        let response = crate::serve::hash_api::check_one(self, kind, hash, method);
        Some(self.measured(Route::Check, start, response))
    }
}
