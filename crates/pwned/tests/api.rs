//! The range API as a library: mounted under a sub-path of an application's
//! router, it answers every range with the bytes the index holds, with
//! validators, revalidation, padding, compression and hot swaps.

use std::io::Read as _;

use axum::Router;
use axum::http::{StatusCode, header};
use seekless_pwned::{
    BuildOptions, Index, Input, Key, Kind, PAD_MIN, RangeApi, Served, build_to_vec, parse_range,
    range_etag,
};
use seekless_testkit::Rng;

mod common;
use common::{corpus, expected, get, index};

fn app(api: &RangeApi) -> Router {
    Router::new()
        .route("/", axum::routing::get(|| async { "the application" }))
        .nest("/pwned", api.router())
}

#[tokio::test]
async fn mounted_under_a_path_it_answers_every_range_to_the_byte() {
    let sha1 = index(Kind::Sha1, &corpus(Kind::Sha1, 60, 3000, 1));
    let ntlm = index(Kind::Ntlm, &corpus(Kind::Ntlm, 30, 800, 2));
    let (want_sha1, want_ntlm) = (expected(&sha1), expected(&ntlm));
    let api = RangeApi::new();
    let mut app = app(&api);

    // Nothing served yet: 404, and the application's own route still works.
    let none = get(&mut app, "/pwned/range/5BAA6", &[]).await;
    assert_eq!(none.status, StatusCode::NOT_FOUND);
    assert_eq!(get(&mut app, "/", &[]).await.body, b"the application");

    api.put(Served::new(sha1, "sha1").unwrap());
    api.put(Served::new(ntlm, "ntlm").unwrap());
    for (want, query) in [(&want_sha1, ""), (&want_ntlm, "?mode=ntlm")] {
        for (prefix, body) in want {
            let reply = get(&mut app, &format!("/pwned/range/{prefix}{query}"), &[]).await;
            assert_eq!(reply.status, StatusCode::OK, "{prefix}");
            assert_eq!(&reply.body, body, "{prefix}{query}");
            assert_eq!(reply.headers[header::ACCESS_CONTROL_ALLOW_ORIGIN], "*");
            assert!(reply.headers.contains_key(header::ETAG));
            // Either case of the prefix names the same range.
            let lower = format!("/pwned/range/{}{query}", prefix.to_lowercase());
            assert_eq!(&get(&mut app, &lower, &[]).await.body, body);
        }
    }
    // Empty ranges answer an empty body.
    let mut rng = Rng::splitmix64(3);
    for _ in 0..50 {
        let prefix = format!("{:05X}", rng.below(1 << 20));
        if !want_sha1.contains_key(&prefix) {
            let reply = get(&mut app, &format!("/pwned/range/{prefix}"), &[]).await;
            assert_eq!((reply.status, reply.body.len()), (StatusCode::OK, 0));
        }
    }
    // The API lives under its mount point only; bad prefixes are 400s.
    let (first, _) = want_sha1.iter().next().unwrap();
    let unmounted = get(&mut app, &format!("/range/{first}"), &[]).await;
    assert_eq!(unmounted.status, StatusCode::NOT_FOUND);
    for bad in ["5BAA", "5BAA61", "5BAG6"] {
        let reply = get(&mut app, &format!("/pwned/range/{bad}"), &[]).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{bad}");
    }
    let md5 = get(&mut app, &format!("/pwned/range/{first}?mode=md5"), &[]).await;
    assert_eq!(md5.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn validators_come_from_the_range_alone_and_revalidate() {
    let lines = corpus(Kind::Sha1, 40, 2000, 4);
    let whole = index(Kind::Sha1, &lines);
    let want = expected(&whole);
    // Another index holding the same ranges but one, and more besides.
    let (changed, _) = want.iter().nth(3).unwrap();
    let mut other_lines: Vec<(String, u64)> = lines
        .iter()
        .map(|(h, c)| {
            (
                h.clone(),
                if h.starts_with(changed.as_str()) {
                    c + 1
                } else {
                    *c
                },
            )
        })
        .collect();
    other_lines.extend(corpus(Kind::Sha1, 10, 300, 5));
    let other = index(Kind::Sha1, &other_lines);
    let (api, api2) = (RangeApi::new(), RangeApi::new());
    api.put(Served::new(whole, "a").unwrap());
    api2.put(Served::new(other, "b").unwrap());
    let (mut app, mut app2) = (app(&api), app(&api2));
    for prefix in want.keys() {
        let path = format!("/pwned/range/{prefix}");
        let reply = get(&mut app, &path, &[]).await;
        let etag = reply.headers[header::ETAG].to_str().unwrap().to_string();
        assert!(etag.starts_with('"') && etag.len() == 34, "strong: {etag}");
        // The same range in another index (another API): the same tag,
        // unless the range differs.
        let etag2 = get(&mut app2, &path, &[]).await.headers[header::ETAG].clone();
        assert_eq!(etag2 == etag.as_str(), prefix != changed, "{prefix}");
        // The tag is range_etag over the range's pairs.
        let mut pairs: Vec<(Key, u64)> = Vec::new();
        parse_range(
            Kind::Sha1,
            u32::from_str_radix(prefix, 16).unwrap(),
            &reply.body,
            &mut pairs,
        )
        .unwrap();
        assert_eq!(range_etag(Kind::Sha1, &pairs), etag);
        // Revalidation: 304 with no body for a match (in a list too, weak
        // or strong), 200 otherwise.
        for matching in [etag.clone(), format!("\"x\", W/{etag}"), "*".into()] {
            let again = get(&mut app, &path, &[("if-none-match", &matching)]).await;
            assert_eq!(again.status, StatusCode::NOT_MODIFIED, "{matching}");
            assert!(again.body.is_empty());
            assert_eq!(again.headers[header::ETAG], etag.as_str());
        }
        let stale = get(&mut app, &path, &[("if-none-match", "\"0000\"")]).await;
        assert_eq!((stale.status, &stale.body), (StatusCode::OK, &want[prefix]));
    }
}

#[tokio::test]
async fn padding_compression_health_and_swaps() {
    let first = index(Kind::Sha1, &corpus(Kind::Sha1, 20, 500, 6));
    let want = expected(&first);
    let (prefix, body) = want.iter().next().unwrap();
    let path = format!("/pwned/range/{prefix}");
    let api = RangeApi::with_cache(1 << 20);
    let served = Served::new(first, "first").unwrap();
    let mut app = app(&api);

    // Health: 503 until verified.
    api.put(served);
    let health = get(&mut app, "/pwned/health", &[]).await;
    assert_eq!(health.status, StatusCode::SERVICE_UNAVAILABLE);
    api.get(Kind::Sha1).unwrap().verify().unwrap();
    let health = get(&mut app, "/pwned/health", &[]).await;
    assert_eq!(health.status, StatusCode::OK);
    assert!(String::from_utf8(health.body).unwrap().contains("first"));

    // Padding: at least PAD_MIN lines, the real pairs among them, no ETag.
    let padded = get(&mut app, &path, &[("add-padding", "true")]).await;
    assert!(padded.body.split(|&b| b == b'\n').count() >= PAD_MIN);
    assert!(!padded.headers.contains_key(header::ETAG));
    let prefix_value = u32::from_str_radix(prefix, 16).unwrap();
    let (mut real, mut back) = (Vec::new(), Vec::new());
    parse_range(Kind::Sha1, prefix_value, body, &mut real).unwrap();
    parse_range(Kind::Sha1, prefix_value, &padded.body, &mut back).unwrap();
    assert_eq!(real, back);

    // gzip and brotli decode to the plain body, cached or not.
    for _ in 0..2 {
        let gz = get(&mut app, &path, &[("accept-encoding", "gzip")]).await;
        assert_eq!(gz.headers[header::CONTENT_ENCODING], "gzip");
        let mut plain = Vec::new();
        flate2::read::GzDecoder::new(&gz.body[..])
            .read_to_end(&mut plain)
            .unwrap();
        assert_eq!(&plain, body);
        let br = get(&mut app, &path, &[("accept-encoding", "br, gzip")]).await;
        assert_eq!(br.headers[header::CONTENT_ENCODING], "br");
        let mut plain = Vec::new();
        brotli_decompressor::Decompressor::new(&br.body[..], 4096)
            .read_to_end(&mut plain)
            .unwrap();
        assert_eq!(&plain, body);
    }

    // A swap: answers come from the new index at once (the cache is not
    // carried over); the old one is handed back.
    let second = index(Kind::Sha1, &corpus(Kind::Sha1, 20, 500, 7));
    let want2 = expected(&second);
    let old = api.put(Served::new(second, "second").unwrap()).unwrap();
    assert_eq!(old.name(), "first");
    let now = get(&mut app, &path, &[]).await;
    assert_eq!(now.body, want2.get(prefix).cloned().unwrap_or_default());

    // A compact index cannot list ranges: refused.
    let text = corpus(Kind::Sha1, 5, 50, 8)
        .iter()
        .map(|(h, c)| format!("{h}:{c}\n"))
        .collect::<String>();
    let options = BuildOptions {
        key_bits: Some(48),
        threads: 1,
        ..BuildOptions::default()
    };
    let input = Input::Bytes {
        name: "compact".into(),
        data: text.into_bytes(),
    };
    let compact = Index::from_bytes(build_to_vec(vec![input], &options).unwrap().0).unwrap();
    assert!(Served::new(compact, "compact").is_err());
}
