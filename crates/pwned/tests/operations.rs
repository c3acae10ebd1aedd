//! What a deployed mirror offers beside the range API, as a library:
//! whole-hash lookups (`/check`), `/health` with the indexes' ages, and
//! `/metrics` read back by a Prometheus text-format parser.

use std::io::Cursor;
use std::time::{Duration, SystemTime};

use axum::Router;
use axum::http::{Method, StatusCode, header};
use seekless_pwned::server::{self, Reload};
use seekless_pwned::test_util::{MAX_BATCH, SortedWriter};
use seekless_pwned::{Index, Key, Kind, RangeApi, Served, Source};

mod common;
use common::{Reply, corpus, get, index, send};

fn app(api: &RangeApi) -> Router {
    api.router().merge(api.check_api()).merge(api.metrics())
}

/// A JSON answer's value, checked to be JSON.
fn json(reply: &Reply) -> serde_json::Value {
    assert_eq!(
        reply.headers[header::CONTENT_TYPE],
        "application/json",
        "{}",
        reply.text()
    );
    serde_json::from_slice(&reply.body).unwrap_or_else(|e| panic!("{e}: {}", reply.text()))
}

/// A 400 whose JSON error says `what`.
fn refused(reply: &Reply, what: &str) {
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.text());
    let error = json(reply)["error"].as_str().unwrap().to_string();
    assert!(error.contains(what), "{error:?} should say {what:?}");
}

async fn post(app: &mut Router, body: impl Into<Vec<u8>>) -> Reply {
    let headers = [("content-type", "application/json")];
    send(app, Method::POST, "/check", &headers, body.into()).await
}

#[tokio::test]
async fn whole_hashes_are_counted_one_at_a_time_and_in_batches() {
    let sha1_lines = corpus(Kind::Sha1, 40, 2000, 11);
    let ntlm_lines = corpus(Kind::Ntlm, 40, 1000, 12);
    let api = RangeApi::new();
    api.put(Served::new(index(Kind::Sha1, &sha1_lines), "sha1").unwrap());
    api.put(Served::new(index(Kind::Ntlm, &ntlm_lines), "ntlm").unwrap());
    let mut app = app(&api);
    // Counts summed where the corpus repeats a hash.
    let count = |lines: &[(String, u64)], hex: &str| -> u64 {
        lines
            .iter()
            .filter(|(h, _)| h.eq_ignore_ascii_case(hex))
            .map(|(_, c)| c)
            .sum()
    };

    for (kind, lines, name) in [
        (Kind::Sha1, &sha1_lines, "sha1"),
        (Kind::Ntlm, &ntlm_lines, "ntlm"),
    ] {
        for (i, (hex, _)) in lines.iter().enumerate().step_by(37) {
            // Either case asked, uppercase given back.
            let asked = if i % 2 == 0 {
                hex.to_lowercase()
            } else {
                hex.clone()
            };
            let reply = get(&mut app, &format!("/check/{name}/{asked}"), &[]).await;
            assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
            let value = json(&reply);
            assert_eq!(value["hash"], hex.to_uppercase());
            assert_eq!(value["count"], count(lines, hex));
            let key = Key::from_hex(kind, hex.as_bytes()).unwrap();
            assert_eq!(api.count_hash(kind, key).unwrap(), count(lines, hex));
        }
        // Not listed: count 0.
        let absent = "7".repeat(kind.hex_len());
        let reply = get(&mut app, &format!("/check/{name}/{absent}"), &[]).await;
        assert_eq!(json(&reply)["count"], 0);
    }

    // A batch of both kinds, in order, with absent ones.
    let mut hashes = Vec::new();
    let mut want = Vec::new();
    for i in 0..3000 {
        let (hex, expect) = match i % 3 {
            0 => {
                let hex = sha1_lines[i % sha1_lines.len()].0.clone();
                let n = count(&sha1_lines, &hex);
                (hex, n)
            }
            1 => {
                let hex = ntlm_lines[i % ntlm_lines.len()].0.to_lowercase();
                let n = count(&ntlm_lines, &hex);
                (hex, n)
            }
            _ => (format!("{i:040X}"), 0),
        };
        hashes.push(hex);
        want.push(expect);
    }
    // Pretty-printed, as a script might send it.
    let body = serde_json::to_string_pretty(&hashes).unwrap();
    let reply = post(&mut app, body).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let counts: Vec<u64> = serde_json::from_value(json(&reply)["counts"].clone()).unwrap();
    assert_eq!(counts, want);
    assert_eq!(api.count_hashes(&hashes).unwrap(), want);
    // Empty and full batches.
    assert_eq!(
        json(&post(&mut app, "[]").await)["counts"],
        serde_json::json!([])
    );
    let full = vec![sha1_lines[0].0.clone(); MAX_BATCH];
    let reply = post(&mut app, serde_json::to_vec(&full).unwrap()).await;
    assert_eq!(json(&reply)["counts"].as_array().unwrap().len(), MAX_BATCH);
}

#[tokio::test]
async fn every_malformed_lookup_is_a_400_that_says_what_is_wrong() {
    let sha1_lines = corpus(Kind::Sha1, 5, 100, 13);
    let api = RangeApi::new();
    api.put(Served::new(index(Kind::Sha1, &sha1_lines), "sha1").unwrap());
    let mut app = app(&api);
    let hash = sha1_lines[0].0.clone();

    for (path, what) in [
        (format!("/check/sha1/{}", &hash[..39]), "39 characters"),
        (format!("/check/sha1/{hash}0"), "41 characters"),
        (
            format!("/check/sha1/{}", &hash[..32]),
            "a SHA-1 hash is 40 hex digits",
        ),
        (
            format!("/check/sha1/{}G{}", &hash[..4], &hash[5..]),
            "'G' at character 5 is not a hex digit",
        ),
        (format!("/check/md5/{hash}"), "unknown hash kind \"md5\""),
        // The wrong kind for what is served.
        (
            format!("/check/ntlm/{}", &hash[..32]),
            "no NTLM index is served",
        ),
    ] {
        refused(&get(&mut app, &path, &[]).await, what);
    }

    let too_many = serde_json::to_vec(&vec![hash.clone(); MAX_BATCH + 1]).unwrap();
    for (body, what) in [
        (too_many, "more than 10000 hashes"),
        (b"{\"hashes\":[]}".to_vec(), "expected '[' at byte 0"),
        (b"[".to_vec(), "found the end of the body"),
        (
            format!("[\"{hash}\",]").into_bytes(),
            "expected a string at byte 44",
        ),
        (
            format!("[\"{hash}\"] x").into_bytes(),
            "expected the end of the body",
        ),
        (b"[42]".to_vec(), "expected a string at byte 1, found '4'"),
        (
            format!("[\"{hash}\", \"{}\"]", &hash[..39]).into_bytes(),
            "hash 2 of the array: 39 characters",
        ),
        (
            format!("[\"{}\"]", &hash[..32]).into_bytes(),
            "hash 1 of the array: no NTLM index is served",
        ),
        (b"[\"\\u0041\"]".to_vec(), "no escapes"),
        (vec![0xff, b'['], "expected '[' at byte 0, found byte 0xff"),
    ] {
        refused(&post(&mut app, body).await, what);
    }
    let huge = vec![b' '; seekless_pwned::test_util::MAX_BATCH_BYTES + 1];
    let reply = post(&mut app, huge).await;
    assert_eq!(reply.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert!(json(&reply)["error"].as_str().unwrap().contains("10000"));
    // Other methods.
    let reply = get(&mut app, "/check", &[]).await;
    assert_eq!(reply.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(reply.headers[header::ALLOW], "POST");
    let path = format!("/check/sha1/{hash}");
    let reply = send(&mut app, Method::DELETE, &path, &[], Vec::new()).await;
    assert_eq!(reply.status, StatusCode::METHOD_NOT_ALLOWED);
    // The library's batch call refuses the same way.
    assert!(api.count_hashes(&["xyz"]).is_err());

    // Not merged in: the whole-hash lookups are not there.
    let mut ranges_only = api.router();
    let reply = get(&mut ranges_only, &path, &[]).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
}

/// A SHA-1 index with a source section saying it was updated at `updated`.
fn updated_index(updated: SystemTime) -> Index {
    let secs = updated
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let mut writer = SortedWriter::new(Cursor::new(Vec::new()), Kind::Sha1, None).unwrap();
    let mut keys: Vec<Key> = corpus(Kind::Sha1, 3, 30, 14)
        .iter()
        .map(|(h, _)| Key::from_hex(Kind::Sha1, h.as_bytes()).unwrap())
        .collect();
    keys.sort();
    keys.dedup();
    for key in keys {
        writer.push(key, 2).unwrap();
    }
    let mut source = Source::new("http://127.0.0.1:1", secs);
    source.identity = Some([0x5e; 32]);
    let bytes = writer.finish(Some(&source)).unwrap().0.into_inner();
    Index::from_bytes(bytes).unwrap()
}

#[tokio::test]
async fn health_reports_ages_and_fails_past_the_max_age() {
    let day = Duration::from_secs(86_400);
    let now = SystemTime::now();
    let api = RangeApi::new();
    let mut app = app(&api);

    // Built by prepare ten days ago (the file's time); verified.
    let old = Served::new(index(Kind::Sha1, &corpus(Kind::Sha1, 3, 30, 15)), "old.idx")
        .unwrap()
        .last_modified(now - 10 * day);
    old.verify().unwrap();
    api.put(old);
    let health = get(&mut app, "/health", &[]).await;
    assert_eq!(health.status, StatusCode::OK, "{}", health.text());
    let line = health.text();
    let fields: Vec<&str> = line.trim_end().split('\t').collect();
    assert_eq!(
        &fields[..4],
        ["sha1", "old.idx", "30 hashes", "ok"],
        "{line}"
    );
    assert!(fields[4].starts_with("updated 20"), "{line}");
    let age: u64 = fields[5]
        .strip_prefix("age ")
        .and_then(|a| a.strip_suffix(" s"))
        .unwrap()
        .parse()
        .unwrap();
    assert!((10 * 86_400..10 * 86_400 + 60).contains(&age), "{age}");

    // Older than allowed: 503, and the line says why.
    api.set_max_age(Some(8 * day));
    let health = get(&mut app, "/health", &[]).await;
    assert_eq!(health.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        health
            .text()
            .contains("stale: 10d 0h old, more than the 8d 0h allowed"),
        "{}",
        health.text()
    );

    // An index updated an hour ago counts from its update, not its file.
    let fresh = Served::new(updated_index(now - Duration::from_secs(3600)), "fresh.idx")
        .unwrap()
        .last_modified(now - 30 * day);
    assert!(fresh.updated().unwrap() > now - day);
    fresh.verify().unwrap();
    api.put(fresh);
    let health = get(&mut app, "/health", &[]).await;
    assert_eq!(health.status, StatusCode::OK, "{}", health.text());
    assert!(health.text().contains("\tage 3600 s") || health.text().contains("\tage 3601 s"));
    api.set_max_age(None);
    assert_eq!(api.max_age(), None);
}

#[tokio::test]
async fn identity_names_each_corpus_in_one_request() {
    let api = RangeApi::new();
    let mut app = app(&api);
    // Built by prepare: no identity recorded, so it is computed once the
    // index is verified.
    let built = index(Kind::Sha1, &corpus(Kind::Sha1, 3, 30, 15));
    let computed =
        seekless_pwned::identity_hex(&seekless_pwned::test_util::identity(&built).unwrap());
    api.put(Served::new(built, "sha1.idx").unwrap());
    let reply = get(&mut app, "/identity", &[]).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.headers[header::CACHE_CONTROL], "no-store");
    let doc = json(&reply);
    assert_eq!(doc["sha1"]["identity"], serde_json::Value::Null, "{doc}");
    assert_eq!(doc["sha1"]["hashes"], 30);
    assert_eq!(doc["sha1"]["min_count"], 1);
    assert_eq!(doc["sha1"]["updated"], serde_json::Value::Null);
    assert!(doc.get("ntlm").is_none(), "{doc}");
    let health = get(&mut app, "/health", &[]).await;
    assert!(
        health.text().ends_with("\tidentity unknown\n"),
        "{}",
        health.text()
    );

    api.get(Kind::Sha1).unwrap().verify().unwrap();
    let doc = json(&get(&mut app, "/identity", &[]).await);
    assert_eq!(doc["sha1"]["identity"], computed.as_str());
    let health = get(&mut app, "/health", &[]).await;
    assert!(
        health.text().ends_with(&format!("\tidentity {computed}\n")),
        "{}",
        health.text()
    );

    // Made by an update: the identity it records is served at once, with
    // its update time; both kinds side by side.
    let now = SystemTime::now();
    let updated = updated_index(now);
    let recorded = updated.recorded_identity().unwrap();
    api.put(Served::new(updated, "updated.idx").unwrap());
    let ntlm = index(Kind::Ntlm, &corpus(Kind::Ntlm, 3, 20, 16));
    api.put(Served::new(ntlm, "ntlm.idx").unwrap());
    let doc = json(&get(&mut app, "/identity", &[]).await);
    assert_eq!(
        doc["sha1"]["identity"],
        seekless_pwned::identity_hex(&recorded).as_str()
    );
    assert!(doc["sha1"]["updated"].as_str().unwrap().starts_with("20"));
    assert_eq!(doc["ntlm"]["hashes"], 20, "{doc}");
    let reply = send(&mut app, Method::POST, "/identity", &[], Vec::new()).await;
    assert_eq!(reply.status, StatusCode::METHOD_NOT_ALLOWED);
}

/// The samples of a scrape: (name, labels, value).
fn scrape(text: &str) -> Vec<(String, std::collections::BTreeMap<String, String>, f64)> {
    let lines = text.lines().map(|l| Ok(l.to_string()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("the Prometheus text format");
    scrape
        .samples
        .into_iter()
        .map(|s| {
            let value = match s.value {
                prometheus_parse::Value::Counter(x)
                | prometheus_parse::Value::Gauge(x)
                | prometheus_parse::Value::Untyped(x) => x,
                prometheus_parse::Value::Histogram(buckets) => {
                    buckets.iter().map(|b| b.count).fold(0.0, f64::max)
                }
                other => panic!("unexpected {other:?}"),
            };
            let labels = s
                .labels
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            (s.metric, labels, value)
        })
        .collect()
}

fn sample(
    samples: &[(String, std::collections::BTreeMap<String, String>, f64)],
    name: &str,
    labels: &[(&str, &str)],
) -> f64 {
    samples
        .iter()
        .filter(|(n, l, _)| {
            n == name
                && labels
                    .iter()
                    .all(|(k, v)| l.get(*k).map(String::as_str) == Some(v))
        })
        .map(|(_, _, v)| *v)
        .sum()
}

#[tokio::test]
async fn metrics_count_requests_bytes_connections_reloads_and_indexes() {
    let lines = corpus(Kind::Sha1, 10, 300, 16);
    let api = RangeApi::new();
    api.put(
        Served::new(index(Kind::Sha1, &lines), "pwned.idx")
            .unwrap()
            .last_modified(SystemTime::now() - Duration::from_secs(7200)),
    );
    let mut app = app(&api);
    let prefix = &lines[0].0[..5];
    let mut body_bytes = 0;
    for _ in 0..5 {
        let reply = get(&mut app, &format!("/range/{prefix}"), &[]).await;
        body_bytes += reply.body.len();
    }
    for _ in 0..3 {
        get(&mut app, "/range/XYZ", &[]).await;
    }
    get(&mut app, &format!("/check/sha1/{}", lines[1].0), &[]).await;
    get(&mut app, "/nowhere", &[]).await;
    let open = [server::connection(&api), server::connection(&api)];
    drop(server::connection(&api));
    server::reloaded(&api, Reload::Index, true);
    server::reloaded(&api, Reload::Certificate, false);
    server::tls_handshake_failed(&api);

    let reply = get(&mut app, "/metrics", &[]).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert!(
        reply.headers[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4")
    );
    let samples = scrape(&reply.text());
    let requests = "seekless_http_requests_total";
    assert_eq!(
        sample(&samples, requests, &[("route", "range"), ("code", "200")]),
        5.0
    );
    assert_eq!(
        sample(&samples, requests, &[("route", "range"), ("code", "400")]),
        3.0
    );
    assert_eq!(
        sample(&samples, requests, &[("route", "check"), ("code", "200")]),
        1.0
    );
    assert_eq!(
        sample(&samples, requests, &[("route", "other"), ("code", "404")]),
        1.0
    );
    // The histogram counts every range answer made, refused ones too.
    let latency = "seekless_http_request_duration_seconds";
    assert_eq!(
        sample(&samples, &format!("{latency}_count"), &[("route", "range")]),
        8.0
    );
    assert!(sample(&samples, &format!("{latency}_sum"), &[("route", "range")]) > 0.0);
    let sent = sample(&samples, "seekless_http_response_body_bytes_total", &[]);
    assert!(sent >= body_bytes as f64, "{sent} < {body_bytes}");
    assert_eq!(sample(&samples, "seekless_connections_open", &[]), 2.0);
    assert_eq!(sample(&samples, "seekless_connections_total", &[]), 3.0);
    assert_eq!(
        sample(&samples, "seekless_reloads_total", &[("what", "index")]),
        1.0
    );
    assert_eq!(
        sample(
            &samples,
            "seekless_reload_failures_total",
            &[("what", "certificate")]
        ),
        1.0
    );
    assert_eq!(
        sample(&samples, "seekless_tls_handshake_failures_total", &[]),
        1.0
    );
    let index = [("kind", "sha1"), ("index", "pwned.idx")];
    assert_eq!(sample(&samples, "seekless_index_hashes", &index), 300.0);
    let age = sample(&samples, "seekless_index_age_seconds", &index);
    assert!((7200.0..7300.0).contains(&age), "{age}");
    drop(open);
    let samples = scrape(&get(&mut app, "/metrics", &[]).await.text());
    assert_eq!(sample(&samples, "seekless_connections_open", &[]), 0.0);
    assert_eq!(
        sample(&samples, requests, &[("route", "metrics"), ("code", "200")]),
        1.0
    );
}

#[tokio::test]
async fn direct_answers_are_the_routers() {
    let sha1_lines = corpus(Kind::Sha1, 20, 600, 17);
    let ntlm_lines = corpus(Kind::Ntlm, 20, 300, 18);
    let api = RangeApi::new();
    api.put(Served::new(index(Kind::Sha1, &sha1_lines), "sha1").unwrap());
    api.put(Served::new(index(Kind::Ntlm, &ntlm_lines), "ntlm").unwrap());
    let mut app = app(&api);
    let sha1 = &sha1_lines[3].0;
    let ntlm = &ntlm_lines[4].0;
    let paths = [
        format!("/range/{}", &sha1[..5]),
        format!("/range/{}", sha1[..5].to_lowercase()),
        format!("/range/{}?mode=ntlm", &ntlm[..5]),
        "/range/FFFFF".to_string(),
        "/range/XYZ".to_string(),
        "/range/5BAA6?mode=md5".to_string(),
        format!("/check/sha1/{sha1}"),
        format!("/check/ntlm/{}", ntlm.to_lowercase()),
        format!("/check/sha1/{}", &sha1[..30]),
        "/check/md5/00".to_string(),
    ];
    let with = [("if-none-match", "\"x\""), ("accept-encoding", "identity")];
    for path in &paths {
        for method in [Method::GET, Method::HEAD] {
            let request = axum::http::Request::builder()
                .method(method.clone())
                .uri(path)
                .header(with[0].0, with[0].1)
                .body(())
                .unwrap();
            let direct = server::answer_directly(&api, &request, true).expect("answered");
            let (parts, body) = direct.into_parts();
            // The length is the body's exact size, which the HTTP layer
            // sends as Content-Length (the Router's axum writes it too).
            let size = axum::body::HttpBody::size_hint(&body).exact();
            let body = axum::body::to_bytes(body, 1 << 24).await.unwrap();
            assert_eq!(size, Some(body.len() as u64), "{method} {path}");
            let mut routed = send(&mut app, method.clone(), path, &with[..1], Vec::new()).await;
            routed.headers.remove(header::CONTENT_LENGTH);
            assert_eq!(parts.status, routed.status, "{method} {path}");
            assert_eq!(parts.headers, routed.headers, "{method} {path}");
            // A HEAD answer's body is left for the HTTP layer to drop (the
            // Router drops it itself).
            if method == Method::GET {
                assert_eq!(body, routed.body, "{method} {path}");
            }
        }
    }
    // Not answered directly: other methods and paths, and the whole-hash
    // lookups when they are off.
    for (method, path, check_api) in [
        (Method::POST, format!("/check/sha1/{sha1}"), true),
        (Method::OPTIONS, "/range/00000".to_string(), true),
        (Method::GET, "/health".to_string(), true),
        (Method::GET, "/range/00000/x".to_string(), true),
        (Method::GET, format!("/check/sha1/{sha1}/x"), true),
        (Method::GET, format!("/check/sha1/{sha1}"), false),
    ] {
        let request = axum::http::Request::builder()
            .method(method.clone())
            .uri(&path)
            .body(())
            .unwrap();
        assert!(
            server::answer_directly(&api, &request, check_api).is_none(),
            "{method} {path}"
        );
    }
}
