//! `GET /health`: a line per served index, tab-separated: its kind, name,
//! hashes, state, when its hashes were last brought up to date, its age
//! and its identity (`identity unknown` until computed):
//!
//! ```text
//! sha1→/data/pwned.idx→847223402 hashes→ok→updated 2026-11-20T04:10:00Z→age 612000 s→identity 3f6c…
//! ```
//!
//! (→ a tab.)
//!
//! The state is `ok`, `verifying` (after the start; a replaced file is
//! verified before it is served), `damaged: …`, or `stale: …` when the
//! index is older than [`RangeApi::set_max_age`] allows. The answer is 200
//! when every index is `ok`, else 503, for load balancers' and containers'
//! probes.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

use axum::extract::State;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::format::source::rfc3339;
use crate::read::identity::identity_hex;
use crate::serve::metrics::Route;
use crate::serve::state::{DAMAGED, RangeApi, Served, VERIFIED};

pub(crate) async fn health(State(api): State<RangeApi>, method: Method) -> Response {
    let start = Instant::now();
    let response = match method {
        Method::GET | Method::HEAD => {
            let (ok, report) = report(&api, SystemTime::now());
            let status = if ok {
                StatusCode::OK
            } else {
                StatusCode::SERVICE_UNAVAILABLE
            };
            let mut response = (status, report).into_response();
            response
                .headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            response
        }
        Method::OPTIONS => crate::serve::http::preflight(),
        _ => crate::serve::http::method_not_allowed(),
    };
    api.measured(Route::Health, start, response)
}

/// Whether every index is fit to serve, and the lines that say so.
fn report(api: &RangeApi, now: SystemTime) -> (bool, String) {
    let current = api.load();
    let max_age = api.max_age();
    let mut report = String::new();
    let mut ok = true;
    for (name, served) in [("sha1", &current.sha1), ("ntlm", &current.ntlm)] {
        let Some(served) = served else { continue };
        let age = served
            .updated()
            .map(|t| now.duration_since(t).unwrap_or_default());
        let state = state(served, age, max_age);
        ok &= state == "ok";
        let _ = write!(
            report,
            "{name}\t{}\t{} hashes\t{state}",
            served.name(),
            served.index().len()
        );
        match (served.updated(), age) {
            (Some(updated), Some(age)) => {
                let _ = write!(
                    report,
                    "\tupdated {}\tage {} s",
                    rfc3339(updated),
                    age.as_secs()
                );
            }
            _ => report.push_str("\tupdated unknown\tage unknown"),
        }
        match served.identity() {
            Some(identity) => {
                let _ = writeln!(report, "\tidentity {}", identity_hex(&identity));
            }
            None => report.push_str("\tidentity unknown\n"),
        }
    }
    (ok, report)
}

/// `ok`, or why an index should not be served.
fn state(served: &Served, age: Option<Duration>, max_age: Option<Duration>) -> String {
    match served.status.load(Ordering::Acquire) {
        VERIFIED => {}
        DAMAGED => return format!("damaged: {}", served.damage.get().map_or("", |s| s)),
        _ => return "verifying".to_string(),
    }
    match (age, max_age) {
        (Some(age), Some(max)) if age > max => format!(
            "stale: {} old, more than the {} allowed",
            span(age),
            span(max)
        ),
        // An age that cannot be told cannot be vouched for.
        (None, Some(_)) => "stale: when it was last updated is not known".to_string(),
        _ => "ok".to_string(),
    }
}

/// A span of time in its two largest units: `9d 2h`, `3h 5m`, `42s`.
pub(crate) fn span(d: Duration) -> String {
    let s = d.as_secs();
    let (days, hours, minutes) = (s / 86_400, s / 3600 % 24, s / 60 % 60);
    match (days, hours, minutes) {
        (0, 0, 0) => format!("{s}s"),
        (0, 0, m) => format!("{m}m {}s", s % 60),
        (0, h, m) => format!("{h}h {m}m"),
        (d, h, _) => format!("{d}d {h}h"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_are_read_at_a_glance() {
        assert_eq!(span(Duration::from_secs(42)), "42s");
        assert_eq!(span(Duration::from_secs(185)), "3m 5s");
        assert_eq!(span(Duration::from_secs(3 * 3600 + 300)), "3h 5m");
        assert_eq!(span(Duration::from_secs(9 * 86_400 + 7200)), "9d 2h");
    }
}
