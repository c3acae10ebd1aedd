//! `GET /`: the check page, where a person checks a password in the
//! browser (the page hashes it and asks for its range with padding).

use std::sync::OnceLock;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderValue, Method, header};
use axum::response::Response;

use crate::format::hash::Kind;
use crate::serve::http::*;
use crate::serve::metrics::Route;
use crate::serve::state::*;

/// The check page (`check.html`) with the kind it hashes filled in.
pub(super) const PAGE: &str = include_str!("check.html");

/// The page for each kind, and its Content-Security-Policy: nothing
/// external, no inline code but the page's own script and style (by hash),
/// requests to this origin only.
pub(super) fn rendered_page(kind: Kind) -> &'static (Bytes, HeaderValue) {
    static PAGES: OnceLock<[(Bytes, HeaderValue); 2]> = OnceLock::new();
    let pages = PAGES.get_or_init(|| {
        let between = |open: &str, close: &str| {
            let start = PAGE.find(open).map_or(0, |i| i + open.len());
            let end = PAGE[start..].find(close).map_or(start, |i| start + i);
            source_hash(&PAGE[start..end])
        };
        let policy = format!(
            "default-src 'none'; script-src '{}'; style-src '{}'; connect-src 'self'; \
             img-src 'none'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'",
            between("<script>", "</script>"),
            between("<style>", "</style>")
        );
        let policy = HeaderValue::from_str(&policy).expect("a policy is a valid header value");
        [Kind::Sha1, Kind::Ntlm].map(|kind| {
            let name = match kind {
                Kind::Sha1 => "sha1",
                Kind::Ntlm => "ntlm",
            };
            (Bytes::from(PAGE.replace("{KIND}", name)), policy.clone())
        })
    });
    &pages[usize::from(kind == Kind::Ntlm)]
}

/// A CSP source for inline code: `sha256-` and the base64 of its SHA-256.
pub(super) fn source_hash(code: &str) -> String {
    use sha2::{Digest, Sha256};
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let digest = Sha256::digest(code.as_bytes());
    let mut out = String::from("sha256-");
    for group in digest.chunks(3) {
        let bytes = [
            group[0],
            *group.get(1).unwrap_or(&0),
            *group.get(2).unwrap_or(&0),
        ];
        let n = u32::from(bytes[0]) << 16 | u32::from(bytes[1]) << 8 | u32::from(bytes[2]);
        for i in 0..4 {
            if i <= group.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

pub(super) async fn page(State(api): State<RangeApi>, method: Method) -> Response {
    let start = Instant::now();
    let response = page_answer(&api, &method);
    api.measured(Route::Page, start, response)
}

pub(super) fn page_answer(api: &RangeApi, method: &Method) -> Response {
    match *method {
        Method::GET | Method::HEAD => {}
        Method::OPTIONS => return preflight(),
        _ => return method_not_allowed(),
    }
    // SHA-1 unless only an NTLM index is served.
    let current = api.load();
    let kind = if current.sha1.is_none() && current.ntlm.is_some() {
        Kind::Ntlm
    } else {
        Kind::Sha1
    };
    let (body, policy) = rendered_page(kind);
    let mut response = Response::new(Body::from(body.clone()));
    set_headers(
        &mut response,
        &[
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
    );
    response
        .headers_mut()
        .insert(header::CONTENT_SECURITY_POLICY, policy.clone());
    response
}
