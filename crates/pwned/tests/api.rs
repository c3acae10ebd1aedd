//! The range API as a library: mounted under a sub-path of an application's
//! router, it answers every range with the bytes the index holds, with
//! validators, revalidation, padding, compression and hot swaps; the HIBP
//! line format, error statuses, CORS and `?mode=ntlm` as a server offers it.

use std::io::Read as _;
use std::time::SystemTime;

use axum::Router;
use axum::http::{Method, StatusCode, header};
use seekless_pwned::test_util::{PAD_MIN, build_to_vec, parse_range, range_etag};
use seekless_pwned::{
    BuildOptions, GzipRanges, Index, Input, Key, Kind, RangeApi, Served, write_gzip_ranges,
};
use seekless_testkit::Rng;

mod common;
use common::{Reply, corpus, expected, get, index, send};

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
    let mut options = BuildOptions::default();
    options.key_bits = Some(48);
    options.threads = 1;
    let input = Input::Bytes {
        name: "compact".into(),
        data: text.into_bytes(),
    };
    let compact = Index::from_bytes(build_to_vec(vec![input], &options).unwrap().0).unwrap();
    assert!(Served::new(compact, "compact").is_err());
}

/// The router a server offers by default: the range API with the check
/// page, the whole-hash lookups and the metrics merged in, as `seekless
/// pwned serve` builds it.
fn served(api: &RangeApi) -> Router {
    api.router()
        .merge(api.page())
        .merge(api.check_api())
        .merge(api.metrics())
}

/// `kind`'s hashes in 400 ranges or so, with the edges of the space (an
/// all-zero hash, an all-F hash counted 2^32 - 1).
fn wide(kind: Kind, seed: u64) -> Vec<(String, u64)> {
    let mut lines = corpus(kind, 400, 3000, seed);
    lines.push(("0".repeat(kind.hex_len()), 7));
    lines.push(("F".repeat(kind.hex_len()), u64::from(u32::MAX)));
    lines
}

/// `lines` as an index served under `name`, with a `Last-Modified`.
fn put(api: &RangeApi, kind: Kind, lines: &[(String, u64)], name: &str) {
    let served = Served::new(index(kind, lines), name).unwrap();
    api.put(served.last_modified(SystemTime::now()));
}

/// A reply's body decoded from its `Content-Encoding`.
fn decoded(reply: &Reply) -> Vec<u8> {
    let mut plain = Vec::new();
    match reply
        .headers
        .get(header::CONTENT_ENCODING)
        .map(|v| v.as_bytes())
    {
        None => plain.clone_from(&reply.body),
        Some(b"gzip") => {
            flate2::read::GzDecoder::new(&reply.body[..])
                .read_to_end(&mut plain)
                .unwrap();
        }
        Some(b"br") => {
            brotli_decompressor::Decompressor::new(&reply.body[..], 4096)
                .read_to_end(&mut plain)
                .unwrap();
        }
        Some(other) => panic!("coding {:?}", String::from_utf8_lossy(other)),
    }
    plain
}

fn header(reply: &Reply, name: header::HeaderName) -> Option<&str> {
    reply.headers.get(name).map(|v| v.to_str().unwrap())
}

/// Whether `Vary` names `Accept-Encoding` (among the values it has).
fn varies_by_coding(reply: &Reply) -> bool {
    reply.headers.get_all(header::VARY).iter().any(|v| {
        v.to_str()
            .unwrap()
            .to_ascii_lowercase()
            .contains("accept-encoding")
    })
}

/// The HIBP line format: 35 uppercase hex digits (27 for NTLM), a colon,
/// a count; CRLF between lines and none at the end; sorted by suffix.
fn assert_api_format(kind: Kind, body: &[u8], what: &str) {
    let text = std::str::from_utf8(body).unwrap();
    assert!(!text.ends_with('\n'), "{what}");
    let lines: Vec<&str> = text.split("\r\n").collect();
    assert!(lines.windows(2).all(|w| w[0] < w[1]), "{what} unsorted");
    for line in &lines {
        let (suffix, count) = line.split_once(':').unwrap();
        assert_eq!(suffix.len(), kind.hex_len() - 5, "{what}");
        assert!(suffix.bytes().all(upper_hex), "{what}: {line}");
        assert!(count.parse::<u64>().unwrap() > 0, "{what}: {line}");
        assert!(!line.contains('\n'), "{what}");
    }
}

fn upper_hex(b: u8) -> bool {
    b.is_ascii_digit() || (b'A'..=b'F').contains(&b)
}

#[tokio::test]
async fn every_range_in_the_api_format_cached_or_not() {
    let lines = wide(Kind::Sha1, 1);
    let want = expected(&index(Kind::Sha1, &lines));
    let api = RangeApi::new();
    put(&api, Kind::Sha1, &lines, "sha1");
    assert!(want.len() > 300, "{} ranges", want.len());
    let mut app = served(&api);
    for (prefix, body) in &want {
        // Either case of the prefix answers the same.
        let path = if prefix.len() % 2 == 0 {
            format!("/range/{prefix}")
        } else {
            format!("/range/{}", prefix.to_lowercase())
        };
        let r = get(&mut app, &path, &[]).await;
        assert_eq!(r.status, StatusCode::OK, "{path}");
        assert_eq!(r.body, *body, "{path}");
        assert_eq!(header(&r, header::CONTENT_TYPE), Some("text/plain"));
        assert_eq!(header(&r, header::ACCESS_CONTROL_ALLOW_ORIGIN), Some("*"));
        assert_api_format(Kind::Sha1, &r.body, &path);
    }
    // With a small body cache (evicting as it goes): the same bytes, twice.
    let cached = RangeApi::with_cache(1 << 20);
    put(&cached, Kind::Sha1, &lines, "cached");
    let mut cached = served(&cached);
    for _ in 0..2 {
        for (prefix, body) in &want {
            let path = format!("/range/{prefix}");
            assert_eq!(get(&mut cached, &path, &[]).await.body, *body);
            // Compressed once into the cache, served from it after.
            for (accept, coding) in [
                ("gzip", Some("gzip")),
                ("gzip, deflate, br", Some("br")),
                ("br;q=0, gzip", Some("gzip")),
                ("identity", None),
            ] {
                let r = get(&mut cached, &path, &[("accept-encoding", accept)]).await;
                assert_eq!(header(&r, header::CONTENT_ENCODING), coding, "{accept}");
                assert!(varies_by_coding(&r), "{accept}");
                assert_eq!(decoded(&r), *body, "{path} {accept}");
            }
        }
    }
    // Empty ranges: an empty 200 body.
    let mut rng = Rng::splitmix64(99);
    let mut empty = 0;
    while empty < 100 {
        let prefix = format!("{:05X}", rng.below(1 << 20));
        if want.contains_key(&prefix) {
            continue;
        }
        let r = get(&mut app, &format!("/range/{prefix}"), &[]).await;
        assert_eq!((r.status, r.body.len()), (StatusCode::OK, 0), "{prefix}");
        empty += 1;
    }
}

#[tokio::test]
async fn padding_only_when_asked_and_never_shadowing() {
    let lines = wide(Kind::Sha1, 2);
    let want = expected(&index(Kind::Sha1, &lines));
    let api = RangeApi::new();
    put(&api, Kind::Sha1, &lines, "sha1");
    let mut app = served(&api);
    let (prefix, real) = want.iter().max_by_key(|(_, b)| b.len()).unwrap();
    let real_lines: Vec<&str> = std::str::from_utf8(real).unwrap().split("\r\n").collect();
    let empty_prefix = (0..1u32 << 20)
        .map(|p| format!("{p:05X}"))
        .find(|p| !want.contains_key(p))
        .unwrap();
    let mut sizes = std::collections::BTreeSet::new();
    for (name, value) in [
        ("Add-Padding", "true"),
        ("add-padding", "TRUE"),
        ("ADD-PADDING", "True"),
    ] {
        for p in [prefix.as_str(), empty_prefix.as_str()] {
            let r = get(&mut app, &format!("/range/{p}"), &[(name, value)]).await;
            assert_eq!(r.status, StatusCode::OK);
            let text = r.text();
            assert!(!text.ends_with('\n'));
            let lines: Vec<&str> = text.split("\r\n").collect();
            sizes.insert(lines.len());
            assert!((800..=1000).contains(&lines.len()), "{} lines", lines.len());
            assert!(
                lines.windows(2).all(|w| w[0] < w[1]),
                "padded range unsorted"
            );
            let reals: Vec<&str> = lines
                .iter()
                .copied()
                .filter(|l| !l.ends_with(":0"))
                .collect();
            let pads: Vec<&str> = lines.iter().filter_map(|l| l.strip_suffix(":0")).collect();
            if p == prefix {
                assert_eq!(reals, real_lines);
            } else {
                assert!(reals.is_empty());
            }
            for pad in &pads {
                assert_eq!(pad.len(), 35);
                assert!(pad.bytes().all(upper_hex));
                assert!(
                    !real_lines.iter().any(|l| l.starts_with(pad)),
                    "padding {pad} shadows a real suffix"
                );
            }
        }
    }
    assert!(sizes.len() > 1, "padding sizes do not vary: {sizes:?}");
    // Not asked (or asked with another value): no `:0` lines.
    for headers in [
        &[][..],
        &[("Add-Padding", "false")][..],
        &[("Add-Padding", "1")][..],
    ] {
        let r = get(&mut app, &format!("/range/{prefix}"), headers).await;
        assert_eq!(r.body, *real, "{headers:?}");
    }
}

#[tokio::test]
async fn ntlm_mode() {
    let sha1_lines = wide(Kind::Sha1, 3);
    let ntlm_lines = wide(Kind::Ntlm, 4);
    let want = expected(&index(Kind::Ntlm, &ntlm_lines));
    let api = RangeApi::new();
    put(&api, Kind::Ntlm, &ntlm_lines, "ntlm");
    put(&api, Kind::Sha1, &sha1_lines, "sha1");
    let mut app = served(&api);
    for (prefix, body) in want.iter().take(60) {
        for query in ["mode=ntlm", "mode=NTLM", "x=1&mode=ntlm"] {
            let r = get(&mut app, &format!("/range/{prefix}?{query}"), &[]).await;
            assert_eq!(r.status, StatusCode::OK);
            assert_eq!(r.body, *body);
            assert!(r.text().split("\r\n").all(|l| l.find(':') == Some(27)));
        }
    }
    let (prefix, body) = want.iter().next().unwrap();
    let path = format!("/range/{prefix}?mode=ntlm");
    let text = get(&mut app, &path, &[("Add-Padding", "true")])
        .await
        .text();
    assert!(text.split("\r\n").all(|l| l.find(':') == Some(27)));
    assert!(text.split("\r\n").count() >= 800);
    assert!(
        String::from_utf8_lossy(body)
            .split("\r\n")
            .all(|l| text.contains(l))
    );
    // SHA-1 still answers without a mode or with mode=sha1.
    let sha1_ranges = expected(&index(Kind::Sha1, &sha1_lines));
    let (prefix, body) = sha1_ranges.iter().next().unwrap();
    let plain = get(&mut app, &format!("/range/{prefix}"), &[]).await;
    assert_eq!(plain.body, *body);
    let sha1 = get(&mut app, &format!("/range/{prefix}?mode=sha1"), &[]).await;
    assert_eq!(sha1.body, *body);
    // Only a SHA-1 index: mode=ntlm is a clear 404.
    let api = RangeApi::new();
    put(&api, Kind::Sha1, &sha1_lines, "sha1");
    let r = get(&mut served(&api), "/range/5BAA6?mode=ntlm", &[]).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert!(r.text().contains("no NTLM index"), "{}", r.text());
}

#[tokio::test]
async fn error_statuses_and_cors() {
    let api = RangeApi::new();
    put(&api, Kind::Sha1, &wide(Kind::Sha1, 5), "sha1");
    let mut app = served(&api);
    for path in [
        "/range/5BAA",
        "/range/5BAA61",
        "/range/GGGGG",
        "/range/5BAA%20",
        "/range/%FF%FE%FD%FC%FB",
        "/range/",
        "/range",
        "/range/5BAA6/extra",
        "/range/5BAA6?mode=md5",
        "/range/%2e%2e%2f",
    ] {
        let r = get(&mut app, path, &[]).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{path}");
        assert!(!r.body.is_empty() && r.body.len() < 200, "{path}");
    }
    // `/` is the check page (cli's tests/check_page.rs); other paths are
    // 404.
    assert_eq!(get(&mut app, "/", &[]).await.status, StatusCode::OK);
    for path in [
        "/index.html",
        "/ranges/5BAA6",
        "/api/v3/range/5BAA6",
        "/health/x",
    ] {
        let r = get(&mut app, path, &[]).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{path}");
    }
    for method in [Method::POST, Method::PUT, Method::DELETE, Method::PATCH] {
        let headers = [("content-length", "0")];
        let r = send(
            &mut app,
            method.clone(),
            "/range/5BAA6",
            &headers,
            Vec::new(),
        )
        .await;
        assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED, "{method}");
        assert!(header(&r, header::ALLOW).is_some_and(|a| a.contains("GET")));
    }
    let preflight = [
        ("Origin", "https://example.com"),
        ("Access-Control-Request-Method", "GET"),
        ("Access-Control-Request-Headers", "add-padding"),
    ];
    let r = send(
        &mut app,
        Method::OPTIONS,
        "/range/5BAA6",
        &preflight,
        Vec::new(),
    )
    .await;
    assert!(
        r.status == StatusCode::NO_CONTENT || r.status == StatusCode::OK,
        "{}",
        r.status
    );
    assert_eq!(header(&r, header::ACCESS_CONTROL_ALLOW_ORIGIN), Some("*"));
    assert!(header(&r, header::ACCESS_CONTROL_ALLOW_METHODS).is_some_and(|m| m.contains("GET")));
    assert!(
        header(&r, header::ACCESS_CONTROL_ALLOW_HEADERS)
            .is_some_and(|h| h.to_ascii_lowercase().contains("add-padding"))
    );
    // HEAD: the headers of a GET, no body.
    let r = send(&mut app, Method::HEAD, "/range/5BAA6", &[], Vec::new()).await;
    assert_eq!((r.status, r.body.len()), (StatusCode::OK, 0));
}

#[tokio::test]
async fn compression_and_revalidation() {
    let lines = wide(Kind::Sha1, 6);
    let want = expected(&index(Kind::Sha1, &lines));
    let api = RangeApi::new();
    put(&api, Kind::Sha1, &lines, "sha1");
    let mut app = served(&api);
    let (prefix, body) = want.iter().max_by_key(|(_, b)| b.len()).unwrap();
    let path = format!("/range/{prefix}");

    let gz = get(&mut app, &path, &[("Accept-Encoding", "gzip")]).await;
    assert_eq!(header(&gz, header::CONTENT_ENCODING), Some("gzip"));
    assert_eq!(decoded(&gz), *body);
    let r = get(&mut app, &path, &[("Accept-Encoding", "br")]).await;
    assert_eq!(header(&r, header::CONTENT_ENCODING), Some("br"));
    assert_eq!(decoded(&r), *body);
    let r = get(&mut app, &path, &[("Accept-Encoding", "identity")]).await;
    assert_eq!(header(&r, header::CONTENT_ENCODING), None);
    assert_eq!(r.body, *body);
    let choices = [
        ("gzip, br", Some("br")),
        ("gzip, br;q=0.5", Some("gzip")),
        ("br;q=0.2, gzip;q=0.9", Some("gzip")),
        ("gzip;q=0, br;q=0", None),
    ];
    let mut last = None;
    for (accept, coding) in choices {
        let r = get(&mut app, &path, &[("Accept-Encoding", accept)]).await;
        assert_eq!(header(&r, header::CONTENT_ENCODING), coding, "{accept}");
        last = Some(r);
    }
    let r = last.unwrap();

    // A strong validator per range, from the range's content.
    let etag = header(&r, header::ETAG).unwrap().to_string();
    assert!(
        etag.starts_with('"') && etag.ends_with('"') && etag.len() == 34,
        "{etag}"
    );
    let modified = header(&r, header::LAST_MODIFIED).unwrap().to_string();
    assert!(
        header(&r, header::CACHE_CONTROL)
            .unwrap()
            .starts_with("public")
    );
    assert!(modified.ends_with(" GMT"), "{modified}");
    let again = get(&mut app, &path, &[]).await;
    assert_eq!(header(&again, header::ETAG), Some(etag.as_str()));
    let other = get(&mut app, "/range/00000", &[]).await;
    assert_ne!(
        header(&other, header::ETAG),
        Some(etag.as_str()),
        "another range"
    );
    let r = get(&mut app, &path, &[("If-None-Match", &etag)]).await;
    assert_eq!((r.status, r.body.len()), (StatusCode::NOT_MODIFIED, 0));
    assert_eq!(header(&r, header::ETAG), Some(etag.as_str()));
    let list = format!("\"0000\", W/{etag}");
    let r = get(&mut app, &path, &[("If-None-Match", &list)]).await;
    assert_eq!(
        r.status,
        StatusCode::NOT_MODIFIED,
        "weak comparison, one of a list"
    );
    let r = get(&mut app, &path, &[("If-None-Match", "W/\"0000\", ")]).await;
    assert_eq!(r.status, StatusCode::OK);
    let r = get(&mut app, &path, &[("If-Modified-Since", &modified)]).await;
    assert_eq!(r.status, StatusCode::NOT_MODIFIED);
    // A padded answer is never a cache hit and carries no validator.
    let headers = [("If-None-Match", etag.as_str()), ("Add-Padding", "true")];
    let r = get(&mut app, &path, &headers).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(header(&r, header::ETAG), None);

    // The same ranges built again into another index, served by another
    // API (with a cache, which keeps validators): the same validators.
    let cached = RangeApi::with_cache(1 << 20);
    put(&cached, Kind::Sha1, &lines, "again");
    let mut cached = served(&cached);
    for _ in 0..2 {
        let r = get(&mut cached, &path, &[("If-None-Match", &etag)]).await;
        let tag = header(&r, header::ETAG);
        assert_eq!(
            (r.status, tag),
            (StatusCode::NOT_MODIFIED, Some(etag.as_str()))
        );
    }
    // The cache answers in the coding the compression layer would choose.
    for _ in 0..2 {
        for (accept, coding) in choices {
            let r = get(&mut cached, &path, &[("Accept-Encoding", accept)]).await;
            assert_eq!(
                header(&r, header::CONTENT_ENCODING),
                coding,
                "cached: {accept}"
            );
            assert_eq!(decoded(&r), *body, "cached: {accept}");
        }
    }
    // gzip kept in the cache is compressed harder (once a range): other
    // bytes than an answer made fresh, the same text. The command line's
    // tests tell `--cache-mib` reaching the cache by this.
    let kept = get(&mut cached, &path, &[("Accept-Encoding", "gzip")]).await;
    assert_ne!(kept.body, gz.body);
    assert_eq!(decoded(&kept), *body);

    // A rebuilt index with other content changes the validator.
    let rebuilt = RangeApi::new();
    put(&rebuilt, Kind::Sha1, &wide(Kind::Sha1, 7), "rebuilt");
    let r = get(&mut served(&rebuilt), &path, &[]).await;
    assert_ne!(header(&r, header::ETAG), Some(etag.as_str()));
}

/// Range `prefix`'s gzip member in the gzip ranges file `bytes`, read by
/// the format (docs/format-pwned.md), not by the library.
fn member_in_file(bytes: &[u8], prefix: u32) -> (usize, Vec<u8>) {
    let offset = |i: u32| {
        let at = 4096 + 8 * i as usize;
        u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize
    };
    let (start, end) = (offset(prefix), offset(prefix + 1));
    (start, bytes[start..end].to_vec())
}

#[tokio::test]
async fn gzip_answers_come_from_the_gzip_ranges_file_as_written() {
    let dir = seekless_testkit::TempDir::new("pwned-api-gzip-ranges");
    let lines = wide(Kind::Ntlm, 5);
    let path = dir.path().join("ntlm.idx");
    std::fs::write(&path, common::index_bytes(&lines, 1)).unwrap();
    let index = Index::open(&path).unwrap();
    let want = expected(&index);
    let file = GzipRanges::path_for(&path);
    assert!(file.ends_with("ntlm.idx.gz-ranges"));
    let bytes = write_gzip_ranges(&index, &file, 2, &|_| {}).unwrap();
    assert_eq!(bytes, std::fs::metadata(&file).unwrap().len());
    // Every range, its member the one the file holds; nothing else left
    // in the directory.
    let ranges = GzipRanges::open(&file, &index).unwrap();
    assert_eq!(
        seekless_testkit::file_names(dir.path()),
        ["ntlm.idx", "ntlm.idx.gz-ranges"]
    );
    let api = RangeApi::new();
    let ntlm = Served::new(index, "ntlm").unwrap();
    assert!(ntlm.attach_gzip_ranges(ranges));
    api.put(ntlm);
    let mut app = served(&api);
    let written = std::fs::read(&file).unwrap();
    let empty = ["00001".to_string(), "FFFFE".to_string()];
    for prefix in want.keys().chain(&empty) {
        let path_q = format!("/range/{prefix}?mode=ntlm");
        let r = get(&mut app, &path_q, &[("accept-encoding", "gzip")]).await;
        assert_eq!(
            header(&r, header::CONTENT_ENCODING),
            Some("gzip"),
            "{prefix}"
        );
        assert!(varies_by_coding(&r));
        let (_, member) = member_in_file(&written, u32::from_str_radix(prefix, 16).unwrap());
        assert_eq!(r.body, member, "{prefix}: not the file's member");
        let plain = want.get(prefix).cloned().unwrap_or_default();
        assert_eq!(decoded(&r), plain, "{prefix}");
        // Identity is rendered as before; padding is made fresh.
        let r = get(&mut app, &path_q, &[]).await;
        assert_eq!(r.body, plain, "{prefix}");
        let r = get(
            &mut app,
            &path_q,
            &[("accept-encoding", "gzip"), ("add-padding", "true")],
        )
        .await;
        assert_ne!(r.body, member, "{prefix}: padded from the file");
        let padded = String::from_utf8(decoded(&r)).unwrap();
        let real = String::from_utf8(plain).unwrap();
        assert!(
            real.split("\r\n")
                .all(|l| l.is_empty() || padded.contains(l))
        );
    }
    assert!(api.get(Kind::Ntlm).unwrap().gzip_ranges_damage().is_none());

    // A damaged member: that answer (and every later one) compressed from
    // the index, the right bytes still; the damage recorded, naming the
    // file and the range.
    let (prefix, plain) = want.iter().nth(7).unwrap();
    let (start, _) = member_in_file(&written, u32::from_str_radix(prefix, 16).unwrap());
    let mut damaged = written.clone();
    damaged[start + 12] ^= 0x40;
    let damaged_file = dir.path().join("damaged.gz-ranges");
    std::fs::write(&damaged_file, &damaged).unwrap();
    let index = Index::open(&path).unwrap();
    let ranges = GzipRanges::open(&damaged_file, &index).unwrap();
    let e = ranges.verify(&index).unwrap_err();
    assert!(e.to_string().contains(&format!("range {prefix}")), "{e}");
    let ntlm = Served::new(index, "ntlm").unwrap();
    assert!(ntlm.attach_gzip_ranges(ranges));
    api.put(ntlm);
    let r = get(
        &mut app,
        &format!("/range/{prefix}?mode=ntlm"),
        &[("accept-encoding", "gzip")],
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(decoded(&r), *plain);
    let ntlm = api.get(Kind::Ntlm).unwrap();
    let damage = ntlm.gzip_ranges_damage().unwrap();
    assert!(
        damage.contains("damaged.gz-ranges") && damage.contains(prefix.as_str()),
        "{damage}"
    );
    assert!(ntlm.gzip_ranges().is_none());
}

#[test]
fn a_gzip_ranges_file_of_another_index_cut_short_or_damaged_is_refused() {
    let dir = seekless_testkit::TempDir::new("pwned-gzip-ranges-refused");
    let lines = wide(Kind::Sha1, 6);
    let path = dir.path().join("a.idx");
    std::fs::write(&path, common::index_bytes(&lines, 1)).unwrap();
    let index = Index::open(&path).unwrap();
    let file = GzipRanges::path_for(&path);
    write_gzip_ranges(&index, &file, 1, &|_| {}).unwrap();
    let good = std::fs::read(&file).unwrap();
    let refused = |bytes: &[u8], index: &Index, why: &str| {
        let bad = dir.path().join("bad.gz-ranges");
        std::fs::write(&bad, bytes).unwrap();
        let e = GzipRanges::open(&bad, index).unwrap_err();
        assert!(
            matches!(e.kind(), seekless_pwned::ErrorKind::GzipRanges { .. }),
            "{why}: {e}"
        );
        assert!(e.to_string().contains("bad.gz-ranges"), "{why}: {e}");
        e.to_string()
    };
    // Another index: one hash more.
    let mut more = lines.clone();
    more.push(("1".repeat(40), 3));
    let other = Index::from_bytes(common::index_bytes(&more, 1)).unwrap();
    assert!(refused(&good, &other, "other index").contains("another index"));
    // Cut short anywhere, or a byte changed in the header or the tables.
    for cut in [0, 100, 4096, 4096 + 8 * (1 << 20), good.len() - 1] {
        refused(&good[..cut], &index, &format!("cut at {cut}"));
    }
    for at in [0, 9, 20, 4096 + 8 * 77, 4096 + 8 * (1 << 20) + 4 * 5] {
        let mut bad = good.clone();
        bad[at] ^= 1;
        refused(&bad, &index, &format!("byte {at}"));
    }
    // Longer than its tables say.
    let mut long = good.clone();
    long.push(0);
    assert!(refused(&long, &index, "long").contains("tables say"));
    // The same index's hashes with other validators keep it: bound to the
    // hashes, not to the source section.
    GzipRanges::open(&file, &index).unwrap();
}
