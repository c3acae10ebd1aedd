//! For a process that runs its own accept loop around a [`RangeApi`]
//! rather than `axum::serve(listener, api.router())`, which needs none of
//! this: the hooks such a server calls so that `/metrics` counts what only
//! it sees (connections, failed TLS handshakes, reloads), and the direct
//! path for the requests that make nearly all of the traffic. The
//! `seekless pwned serve` command uses every one of them.
//!
//! ```no_run
//! use seekless_pwned::{RangeApi, server};
//!
//! let api = RangeApi::new();
//! // A connection accepted: counted as open until the guard is dropped.
//! let open = server::connection(&api);
//! // Each of its requests: the direct path first, else the Router.
//! let request = axum::http::Request::get("/range/5BAA6").body(()).unwrap();
//! let answer = server::answer_directly(&api, &request, false);
//! drop(open);
//! # let _ = answer;
//! ```

use axum::http::Request;
use axum::response::Response;

pub use crate::serve::metrics::{Connection, Reload};
use crate::serve::state::RangeApi;

/// Counts a connection as open in `/metrics` until the returned guard is
/// dropped.
pub fn connection(api: &RangeApi) -> Connection {
    api.connection()
}

/// Counts a TLS handshake that failed, in `/metrics`.
pub fn tls_handshake_failed(api: &RangeApi) {
    api.tls_handshake_failed();
}

/// Counts a reload of `what` in `/metrics`: done (`ok`), or refused with
/// the old one kept.
pub fn reloaded(api: &RangeApi, what: Reload, ok: bool) {
    api.reloaded(what, ok);
}

/// The answer to a `GET` or `HEAD` of `/range/{prefix}` or, with
/// `check_api`, of `/check/{kind}/{hash}`, made without the Router's
/// dispatch (no route matching, no boxed services): the same answer
/// [`RangeApi::router`] (merged with [`RangeApi::check_api`]) gives,
/// counted the same in the metrics. For a server that serves the API at
/// its root; `None` for any other request, which the Router answers.
pub fn answer_directly<B>(
    api: &RangeApi,
    request: &Request<B>,
    check_api: bool,
) -> Option<Response> {
    api.answer_directly(request, check_api)
}
