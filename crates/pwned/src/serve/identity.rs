//! `GET /identity`: which corpus each served index is, as JSON, so that a
//! replica learns in one request whether it holds the same
//! (docs/pwned-serve.md):
//!
//! ```json
//! {"sha1":{"identity":"3f6c…(64 hex digits)","hashes":847223402,"min_count":1,"updated":"2026-11-20T04:10:00.000Z"}}
//! ```
//!
//! One member per kind served (`sha1`, `ntlm`). `identity` is `null` until
//! it is known (an index that does not record it has it computed after
//! it is verified); `updated` is `null` when not known.

use std::fmt::Write as _;
use std::time::Instant;

use axum::extract::State;
use axum::http::{Method, StatusCode};
use axum::response::Response;

use crate::format::source::rfc3339;
use crate::read::identity::identity_hex;
use crate::serve::hash_api::{json, push_json_string};
use crate::serve::metrics::Route;
use crate::serve::state::RangeApi;

pub(crate) async fn identity(State(api): State<RangeApi>, method: Method) -> Response {
    let start = Instant::now();
    let response = match method {
        Method::GET | Method::HEAD => json(StatusCode::OK, document(&api)),
        Method::OPTIONS => crate::serve::http::preflight(),
        _ => crate::serve::http::method_not_allowed(),
    };
    api.measured(Route::Identity, start, response)
}

/// The JSON text of `/identity`.
pub(crate) fn document(api: &RangeApi) -> String {
    let current = api.load();
    let mut out = String::from("{");
    for (name, served) in [("sha1", &current.sha1), ("ntlm", &current.ntlm)] {
        let Some(served) = served else { continue };
        if out.len() > 1 {
            out.push(',');
        }
        let _ = write!(out, "\"{name}\":{{\"identity\":");
        match served.identity() {
            Some(identity) => push_json_string(&mut out, &identity_hex(&identity)),
            None => out.push_str("null"),
        }
        let stats = served.index().stats();
        let _ = write!(
            out,
            ",\"hashes\":{},\"min_count\":{},\"updated\":",
            stats.hashes, stats.min_count
        );
        match served.updated() {
            Some(time) => push_json_string(&mut out, &rfc3339(time)),
            None => out.push_str("null"),
        }
        out.push('}');
    }
    out.push_str("}\n");
    out
}
