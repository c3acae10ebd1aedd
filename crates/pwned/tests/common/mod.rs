//! What the tests of the range API share: generated corpora, indexes
//! built in memory, and requests sent to a router in process.
#![allow(dead_code)]

use std::collections::BTreeMap;

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use seekless_pwned::test_util::build_to_vec;
use seekless_pwned::{BuildOptions, Index, Input, Kind};
use seekless_testkit::Rng;
use tower::Service as _;

/// `n` random hashes of `kind` in `ranges` ranges (several hashes a range,
/// some sharing more than the prefix), with counts.
pub fn corpus(kind: Kind, ranges: u64, n: usize, seed: u64) -> Vec<(String, u64)> {
    let mut rng = Rng::splitmix64(seed);
    let prefixes: Vec<u64> = (0..ranges).map(|_| rng.below(1 << 20)).collect();
    (0..n)
        .map(|i| {
            let mut hex = format!("{:05X}", prefixes[i % prefixes.len()]);
            if i % 7 == 0 {
                hex.push_str("ABCD");
            }
            hex.push_str(&seekless_testkit::hex(&mut rng, kind.hex_len() - hex.len()));
            (hex, 1 + rng.below(1_000_000))
        })
        .collect()
}

pub fn index(kind: Kind, lines: &[(String, u64)]) -> Index {
    // The kind is read off the hashes' length.
    let index = Index::from_bytes(index_bytes(lines, 1)).unwrap();
    assert_eq!(index.kind(), kind);
    index
}

/// The bytes of the index `prepare` builds of `lines`, keeping the hashes
/// seen at least `min_count` times (1: all).
pub fn index_bytes(lines: &[(String, u64)], min_count: u64) -> Vec<u8> {
    let text: String = lines.iter().map(|(h, c)| format!("{h}:{c}\n")).collect();
    let input = Input::Bytes {
        name: "corpus".into(),
        data: text.into_bytes(),
    };
    let mut options = BuildOptions::default();
    options.threads = 1;
    options.min_count = min_count;
    build_to_vec(vec![input], &options).unwrap().0
}

/// Every non-empty range of `index` as the API must answer it, written out
/// here independently of the library's renderer.
pub fn expected(index: &Index) -> BTreeMap<String, Vec<u8>> {
    let kind = index.kind();
    let mut ranges: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for pair in index.iter() {
        let (key, count) = pair.unwrap();
        let hex: String = key.to_bytes()[..kind.hex_len() / 2]
            .iter()
            .map(|b| format!("{b:02X}"))
            .collect();
        let body = ranges.entry(hex[..5].to_string()).or_default();
        if !body.is_empty() {
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(format!("{}:{count}", &hex[5..]).as_bytes());
    }
    ranges
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: axum::http::HeaderMap,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// `GET path` with `headers`.
pub async fn get(app: &mut Router, path: &str, headers: &[(&str, &str)]) -> Reply {
    send(app, Method::GET, path, headers, Vec::new()).await
}

/// `method path` with `headers` and `body`.
pub async fn send(
    app: &mut Router,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> Reply {
    let mut request = Request::builder().method(method).uri(path);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = app
        .call(request.body(Body::from(body)).unwrap())
        .await
        .unwrap();
    let (parts, body) = response.into_parts();
    let body = axum::body::to_bytes(body, 1 << 24).await.unwrap().to_vec();
    Reply {
        status: parts.status,
        headers: parts.headers,
        body,
    }
}
