//! What the routes share: the handlers that measure `/metrics` and
//! `/check`, plain-text answers, CORS, `405`, `404`.

use std::time::Instant;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::serve::metrics::Route;
use crate::serve::state::*;

pub(super) async fn metrics(State(api): State<RangeApi>, method: Method) -> Response {
    let start = Instant::now();
    let response = match method {
        Method::GET | Method::HEAD => {
            let mut response = Response::new(Body::from(api.render_metrics()));
            set_headers(
                &mut response,
                &[
                    (header::CONTENT_TYPE, crate::serve::metrics::CONTENT_TYPE),
                    (header::CACHE_CONTROL, "no-store"),
                ],
            );
            response
        }
        _ => method_not_allowed(),
    };
    api.measured(Route::Metrics, start, response)
}

pub(super) async fn check_one(
    State(api): State<RangeApi>,
    params: axum::extract::RawPathParams,
    method: Method,
) -> Response {
    let start = Instant::now();
    let mut params = params.iter().map(|(_, value)| value);
    let (kind, hash) = (params.next().unwrap_or(""), params.next().unwrap_or(""));
    let response = crate::serve::hash_api::check_one(&api, kind, hash, &method);
    api.measured(Route::Check, start, response)
}

pub(super) async fn check_batch(State(api): State<RangeApi>, request: Request) -> Response {
    let start = Instant::now();
    let response = crate::serve::hash_api::check_batch(&api, request).await;
    api.measured(Route::CheckBatch, start, response)
}

pub(crate) fn text(status: StatusCode, message: &str) -> Response {
    let mut response = (status, format!("{message}\n")).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

pub(crate) fn method_not_allowed() -> Response {
    let mut response = text(
        StatusCode::METHOD_NOT_ALLOWED,
        "method not allowed: use GET",
    );
    response.headers_mut().insert(
        header::ALLOW,
        HeaderValue::from_static("GET, HEAD, OPTIONS"),
    );
    response
}

/// Sets fixed headers on a response.
pub(crate) fn set_headers(response: &mut Response, fixed: &[(header::HeaderName, &'static str)]) {
    let headers = response.headers_mut();
    for (name, value) in fixed {
        headers.insert(name.clone(), HeaderValue::from_static(value));
    }
}

pub(crate) fn preflight() -> Response {
    let mut response = StatusCode::NO_CONTENT.into_response();
    set_headers(
        &mut response,
        &[
            (header::ACCESS_CONTROL_ALLOW_METHODS, "GET, HEAD, OPTIONS"),
            (header::ACCESS_CONTROL_ALLOW_HEADERS, "Add-Padding"),
            (header::ACCESS_CONTROL_MAX_AGE, "86400"),
        ],
    );
    response
}

/// Every answer may be read by any origin, as HIBP's.
pub(super) async fn cors(mut response: Response) -> Response {
    response.headers_mut().insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    response
}

pub(super) async fn fallback(
    State(api): State<RangeApi>,
    method: Method,
    uri: axum::http::Uri,
) -> Response {
    let start = Instant::now();
    let response = not_found(&method, &uri);
    api.measured(Route::Other, start, response)
}

pub(super) fn not_found(method: &Method, uri: &axum::http::Uri) -> Response {
    if method == Method::OPTIONS {
        return preflight();
    }
    // The path after the mount point, when nested.
    let path = uri.path();
    if path == "/range" || path.starts_with("/range/") {
        return text(
            StatusCode::BAD_REQUEST,
            "the range prefix must be 5 hex digits: /range/5BAA6",
        );
    }
    text(
        StatusCode::NOT_FOUND,
        "not found: the API is GET /range/{5 hex digits}",
    )
}
