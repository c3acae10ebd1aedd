use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, header};

use super::cache::Cache;
use super::page::*;
use super::range_answer::*;
use crate::format::hash::Kind;

#[test]
fn prefixes_and_modes() {
    assert_eq!(parse_prefix("5BAA6"), Some(0x5BAA6));
    assert_eq!(parse_prefix("5baa6"), Some(0x5BAA6));
    assert_eq!(parse_prefix("00000"), Some(0));
    for bad in ["", "5BAA", "5BAA61", "5BAG6", "+BAA6", "5BA A", "５BAA6"] {
        assert_eq!(parse_prefix(bad), None, "{bad:?}");
    }
    assert_eq!(parse_mode(None), Ok(Kind::Sha1));
    assert_eq!(parse_mode(Some("mode=ntlm")), Ok(Kind::Ntlm));
    assert_eq!(parse_mode(Some("x=1&mode=NTLM")), Ok(Kind::Ntlm));
    assert_eq!(parse_mode(Some("mode=sha1")), Ok(Kind::Sha1));
    assert!(parse_mode(Some("mode=md5")).is_err());
}

#[test]
fn cache_keeps_to_its_budget() {
    let cache = Cache::new(Cache::SHARDS * 100);
    for key in 0..1000u32 {
        cache.insert(key, Bytes::from(vec![b'x'; 30]));
        assert_eq!(cache.get(key).map(|b| b.len()), Some(30));
    }
    for shard in &cache.shards {
        let shard = shard.lock().unwrap();
        assert!(shard.bytes <= 100);
        assert_eq!(shard.bytes, shard.bodies.len() * 30);
        assert_eq!(shard.order.len(), shard.bodies.len());
    }
    // The oldest went first; the newest stayed.
    assert!(cache.get(0).is_none());
    assert!(cache.get(999).is_some());
    // Prefixes 256 apart (common low bits) still use every shard.
    let cache = Cache::new(Cache::SHARDS * 1000);
    for key in 0..64u32 {
        cache.insert(key << 8, Bytes::from_static(b"body"));
    }
    assert!(
        cache
            .shards
            .iter()
            .all(|s| !s.lock().unwrap().bodies.is_empty())
    );
    // A body larger than a shard's budget is not kept.
    cache.insert(5000, Bytes::from(vec![b'x'; 1001]));
    assert!(cache.get(5000).is_none());
}

#[test]
fn the_page_allows_exactly_its_own_script_and_style() {
    // Known answers: RFC 4648 base64 of SHA-256.
    assert_eq!(
        source_hash(""),
        "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
    );
    assert_eq!(
        source_hash("abc"),
        "sha256-ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0="
    );
    for kind in [Kind::Sha1, Kind::Ntlm] {
        let (body, policy) = rendered_page(kind);
        let page = std::str::from_utf8(body).unwrap();
        let policy = policy.to_str().unwrap();
        assert!(!page.contains("{KIND}"));
        assert!(page.contains(&format!(
            "data-kind=\"{}\"",
            ["sha1", "ntlm"][usize::from(kind == Kind::Ntlm)]
        )));
        // One script, one style, both allowed by hash; nothing external.
        assert_eq!(page.matches("<script").count(), 1);
        assert_eq!(page.matches("<style").count(), 1);
        assert!(!page.contains("src=") && !page.contains("://"));
        let script = &page[page.find("<script>").unwrap() + 8..page.find("</script>").unwrap()];
        assert!(policy.contains(&format!("script-src '{}'", source_hash(script))));
        assert!(policy.starts_with("default-src 'none';"));
        assert!(policy.contains("connect-src 'self'"));
    }
}

#[test]
fn negotiation_follows_q_values() {
    let with = |value: &str| {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_str(value).unwrap(),
        );
        negotiate(&headers)
    };
    assert_eq!(negotiate(&HeaderMap::new()), Encoding::Identity);
    assert_eq!(with("gzip, br"), Encoding::Br);
    assert_eq!(with("gzip;q=1, br;q=0.5"), Encoding::Gzip);
    assert_eq!(with("br;q=0, gzip;q=0"), Encoding::Identity);
    assert_eq!(with("x-gzip"), Encoding::Gzip);
    assert_eq!(with("deflate"), Encoding::Identity);
}
