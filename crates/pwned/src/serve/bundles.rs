//! `GET /bundles/{identity}`: the delta bundles in a directory
//! (docs/format-bundle.md), each found by the identity of the index it
//! applies to, so that a replica at that identity takes the next step
//! towards what the mirror serves (docs/pwned-serve.md, "Bundles").
//!
//! The directory is read again on each request (a listing, and the header
//! of a file not seen before or changed since), so bundles written into it
//! later are served without a restart; names beginning with `.` (files
//! being written) are passed over. Of several bundles from one identity,
//! the one that makes the index served now is answered, else the newest.
//! A bundle is immutable once written: answers carry
//! `Cache-Control: public, max-age=31536000, immutable` and a strong
//! `ETag` (from a SHA-256 of the file's bytes), so any HTTP cache between
//! the mirror and its replicas can keep them. The file is mapped and sent
//! without a copy.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Instant, SystemTime};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use sha2::{Digest, Sha256};

use crate::bundle::BundleReader;
use crate::format::hash::Kind;
use crate::read::identity::{identity_hex, parse_identity_hex};
use crate::serve::http::{method_not_allowed, set_headers, text};
use crate::serve::metrics::Route;
use crate::serve::state::RangeApi;

/// `Cache-Control` of a bundle: the bytes under a name never change.
const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// A directory of bundles and what is known of its files.
#[derive(Debug)]
pub(crate) struct BundleDir {
    dir: PathBuf,
    seen: Mutex<Seen>,
}

/// Each file seen, with the size and time it was read at and its bundle
/// (`None`: not a bundle, not read again until it changes).
type Seen = HashMap<PathBuf, (Stamp, Option<Arc<Bundle>>)>;

/// What tells a changed file: its size and modification time.
type Stamp = (u64, Option<SystemTime>);

/// A bundle file, as its header describes it.
#[derive(Debug)]
struct Bundle {
    path: PathBuf,
    stamp: Stamp,
    kind: Kind,
    old: [u8; 32],
    new: [u8; 32],
    /// The strong validator, computed when first sent.
    etag: OnceLock<HeaderValue>,
}

impl BundleDir {
    pub(crate) fn new(dir: PathBuf) -> BundleDir {
        BundleDir {
            dir,
            seen: Mutex::new(HashMap::new()),
        }
    }

    /// The bundle to send a replica at `from`: of those that apply to it,
    /// the one that makes `served` (the index of its kind served now), else
    /// the newest.
    fn find(
        &self,
        from: &[u8; 32],
        served: impl Fn(Kind) -> Option<[u8; 32]>,
    ) -> std::io::Result<Option<Arc<Bundle>>> {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let mut present = Vec::new();
        for entry in std::fs::read_dir(&self.dir)? {
            let entry = entry?;
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let Ok(meta) = entry.metadata() else { continue };
            if !meta.is_file() {
                continue;
            }
            let path = entry.path();
            let stamp = (meta.len(), meta.modified().ok());
            if seen.get(&path).is_none_or(|(known, _)| *known != stamp) {
                let bundle = read_header(&path, stamp).map(Arc::new);
                seen.insert(path.clone(), (stamp, bundle));
            }
            present.push(path);
        }
        seen.retain(|path, _| present.contains(path));
        let mut best: Option<&Arc<Bundle>> = None;
        for bundle in seen.values().filter_map(|(_, b)| b.as_ref()) {
            if bundle.old != *from {
                continue;
            }
            let current = |b: &Bundle| served(b.kind) == Some(b.new);
            best = match best {
                Some(other)
                    if (current(other), other.stamp.1) >= (current(bundle), bundle.stamp.1) =>
                {
                    Some(other)
                }
                _ => Some(bundle),
            };
        }
        Ok(best.cloned())
    }
}

/// The header of the bundle at `path`; `None` when it is not one.
fn read_header(path: &Path, stamp: Stamp) -> Option<Bundle> {
    let reader = BundleReader::new(File::open(path).ok()?).ok()?;
    let header = reader.header();
    Some(Bundle {
        path: path.to_path_buf(),
        stamp,
        kind: header.kind,
        old: header.old_identity,
        new: header.new_identity,
        etag: OnceLock::new(),
    })
}

/// The router of `GET /bundles/{identity}` over `dir`.
pub(crate) fn router(api: &RangeApi, dir: PathBuf) -> Router {
    Router::new()
        .route("/bundles/{identity}", axum::routing::any(bundle))
        .with_state((api.clone(), Arc::new(BundleDir::new(dir))))
}

async fn bundle(
    State((api, dir)): State<(RangeApi, Arc<BundleDir>)>,
    UrlPath(identity): UrlPath<String>,
    method: Method,
    headers: HeaderMap,
) -> Response {
    let start = Instant::now();
    let response = if method == Method::GET || method == Method::HEAD {
        let api2 = api.clone();
        tokio::task::spawn_blocking(move || answer(&api2, &dir, &identity, &method, &headers))
            .await
            .unwrap_or_else(|e| text(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()))
    } else {
        method_not_allowed()
    };
    api.measured(Route::Bundle, start, response)
}

/// The answer for a replica at the identity `hex` (blocking: reads the
/// directory, maps the file).
fn answer(
    api: &RangeApi,
    dir: &BundleDir,
    hex: &str,
    method: &Method,
    headers: &HeaderMap,
) -> Response {
    let Some(from) = parse_identity_hex(hex) else {
        return text(
            StatusCode::BAD_REQUEST,
            "the identity must be 64 hex digits: /bundles/{identity}",
        );
    };
    let served = |kind| api.get(kind).and_then(|served| served.identity());
    // A file replaced between the listing and the open is looked for again.
    for _ in 0..3 {
        let bundle = match dir.find(&from, served) {
            Ok(Some(bundle)) => bundle,
            Ok(None) => {
                return text(
                    StatusCode::NOT_FOUND,
                    &format!("no bundle from identity {}", identity_hex(&from)),
                );
            }
            Err(e) => {
                return text(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    &format!("{}: {e}", dir.dir.display()),
                );
            }
        };
        match send(&bundle, method, headers) {
            Ok(Some(response)) => return response,
            Ok(None) => continue,
            Err(e) => {
                return text(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    &format!("{}: {e}", bundle.path.display()),
                );
            }
        }
    }
    text(
        StatusCode::SERVICE_UNAVAILABLE,
        "the bundle directory is changing: try again",
    )
}

/// The bundle's answer; `None` when the file is no longer the one read.
fn send(
    bundle: &Bundle,
    method: &Method,
    headers: &HeaderMap,
) -> std::io::Result<Option<Response>> {
    let file = File::open(&bundle.path)?;
    let meta = file.metadata()?;
    if (meta.len(), meta.modified().ok()) != bundle.stamp {
        return Ok(None);
    }
    // SAFETY: bundles are written under another name and renamed into
    // place, never changed in place; a file changed anyway was caught by
    // its stamp above.
    let map = unsafe { memmap2::Mmap::map(&file)? };
    let etag = bundle.etag.get_or_init(|| {
        let digest = Sha256::digest(&map[..]);
        let hex = identity_hex(&digest.into());
        HeaderValue::from_str(&format!("\"{}\"", &hex[..32])).expect("hex is a header value")
    });
    let matches = headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        // If-None-Match compares weakly (RFC 9110, 13.1.2): a cache may
        // have kept the tag as W/"…".
        .any(|tag| tag == "*" || tag.strip_prefix("W/").unwrap_or(tag) == etag);
    let mut response = if matches {
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        r
    } else {
        let len = map.len();
        let body = if *method == Method::HEAD {
            Body::empty()
        } else {
            Body::from(Bytes::from_owner(map))
        };
        let mut r = Response::new(body);
        r.headers_mut()
            .insert(header::CONTENT_LENGTH, HeaderValue::from(len));
        r
    };
    set_headers(
        &mut response,
        &[
            (header::CONTENT_TYPE, "application/octet-stream"),
            (header::CACHE_CONTROL, IMMUTABLE),
        ],
    );
    response.headers_mut().insert(header::ETAG, etag.clone());
    Ok(Some(response))
}
