//! Range answers fetched over HTTP: a request with the stored validator,
//! retries with backoff (or as the server says), bodies decoded (gzip,
//! brotli) within the size limit; each range's [`Answer`] as `answers`
//! hands it on, whether it came from the network or from a bundle.

use std::cell::RefCell;
use std::io::Read;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::StatusCode;
use reqwest::header::{
    ACCEPT_ENCODING, AGE, CACHE_CONTROL, CONTENT_ENCODING, ETAG, HeaderMap, IF_NONE_MATCH, PRAGMA,
    RETRY_AFTER, VIA,
};

use crate::error::{Error, ErrorKind, Result};
use crate::format::hash::{Key, Kind};
use crate::format::source::Source;
use crate::range::gzip::{Inflater, gunzip_whole};
use crate::range::parse::{MAX_RANGE_BODY, parse_range};
use crate::range::prefix_hex;
use crate::update::client::{describe, refused_certificate};

/// One range's answer, checked.
pub(super) struct Answer {
    pub(super) retries: u32,
    /// Whether the answer taken was asked for past caches
    /// ([`Fetcher::fetch_past_cache`], or a retry after a cached fault).
    pub(super) past_cache: bool,
    pub(super) body: Body,
}

pub(super) enum Body {
    /// `304`: the stored validator still holds (from a bundle: the range
    /// is the same; its validator, if any).
    NotModified { validator: Option<Vec<u8>> },
    /// `200`: the range's hashes and its new validator.
    Range {
        validator: Option<Vec<u8>>,
        entries: Vec<(Key, u64)>,
        received: u64,
    },
}

/// A range with no answer after every try.
pub(super) struct Unanswered {
    pub(super) error: Error,
    /// Whether it was a fault of the moment (a connection error, a 5xx, a
    /// body that does not decode) that other ranges need not meet; not so
    /// for one of the setup that every range would meet (a refused
    /// certificate, a 4xx), nor for anything but a request's.
    pub(super) passing: bool,
}

impl From<Error> for Unanswered {
    fn from(error: Error) -> Unanswered {
        Unanswered {
            error,
            passing: false,
        }
    }
}

/// The text of `prefix`'s range URL under `base`.
fn range_text(base: &str, kind: Kind, prefix: u32) -> String {
    let mut url = format!("{base}/range/{}", prefix_hex(prefix));
    if kind == Kind::Ntlm {
        url.push_str("?mode=ntlm");
    }
    url
}

/// Range 00000's URL under `base`, when it parses to one whose path ends
/// in the prefix and whose query is what `kind` asks (not so when the base
/// holds a query or a fragment: those go as text).
fn range_template(base: &str, kind: Kind) -> Option<reqwest::Url> {
    let url = reqwest::Url::parse(&range_text(base, kind, 0)).ok()?;
    let query = (kind == Kind::Ntlm).then_some("mode=ntlm");
    let whole = url.path().ends_with(&format!("/range/{}", prefix_hex(0)))
        && url.query() == query
        && url.fragment().is_none();
    whole.then_some(url)
}

/// `prefix`'s range URL: `template`'s with the prefix put in its path, or
/// the text when there is no template.
fn range_url(
    template: Option<&reqwest::Url>,
    base: &str,
    kind: Kind,
    prefix: u32,
) -> std::result::Result<reqwest::Url, String> {
    let Some(template) = template else {
        return Err(range_text(base, kind, prefix));
    };
    let mut url = template.clone();
    let path = template.path();
    let digits = prefix_hex(prefix);
    url.set_path(&format!("{}{digits}", &path[..path.len() - digits.len()]));
    Ok(url)
}

/// The codings asked for: gzip preferred. Range bodies are random hex, which
/// brotli packs only ~3% smaller than gzip, and brotli-decompressor inflates
/// them 4-5 times slower than libdeflate (measured: ~1 ms against ~0.2 ms a
/// real-size range).
pub(super) const ACCEPTED: &str = "gzip, br;q=0.5";

/// What a retry waits for, and why.
pub(super) enum Fault {
    /// Worth another try, after the usual backoff or the server's word;
    /// past caches when the answer showed signs of one.
    Retry {
        what: String,
        after: Option<Duration>,
        cached: bool,
    },
    /// Trying again would give the same answer.
    Final(String),
}

pub(super) struct Fetcher {
    pub(super) client: reqwest::Client,
    /// The range URL of prefix 00000, parsed once: each request's sets
    /// the path alone (parsing the whole URL again took 8% of the client's
    /// CPU, most of it checking the host name). `None` when the base does
    /// not parse or holds a query or fragment: each request's URL is then
    /// text, parsed (or refused) by reqwest as before.
    template: Option<reqwest::Url>,
    pub(super) base: String,
    pub(super) kind: Kind,
    pub(super) tries: u32,
    pub(super) backoff: Duration,
    pub(super) validators: Option<Source>,
}

impl Fetcher {
    pub(super) fn new(
        client: reqwest::Client,
        base: String,
        kind: Kind,
        tries: u32,
        backoff: Duration,
        validators: Option<Source>,
    ) -> Fetcher {
        Fetcher {
            client,
            template: range_template(&base, kind),
            base,
            kind,
            tries,
            backoff,
            validators,
        }
    }

    /// The URL of `prefix`'s range; as text when the base does not parse
    /// (each request then fails and says why, as any other failure).
    fn url(&self, prefix: u32) -> std::result::Result<reqwest::Url, String> {
        range_url(self.template.as_ref(), &self.base, self.kind, prefix)
    }

    /// `prefix`'s answer: tried up to [`tries`](Fetcher::tries) times;
    /// once an answer shows signs of a cache, the tries after it ask past
    /// caches (see [`PURGE`]).
    pub(super) async fn fetch(&self, prefix: u32) -> std::result::Result<Answer, Unanswered> {
        self.fetch_from(prefix, false).await
    }

    /// `prefix`'s answer asked past caches from the first try: for an
    /// answer that would lose data, asked again.
    pub(super) async fn fetch_past_cache(&self, prefix: u32) -> Result<Answer> {
        self.fetch_from(prefix, true).await.map_err(|u| u.error)
    }

    async fn fetch_from(
        &self,
        prefix: u32,
        mut past_cache: bool,
    ) -> std::result::Result<Answer, Unanswered> {
        let url = self.url(prefix);
        let validator = self.validators.as_ref().and_then(|s| s.validator(prefix));
        let mut last = String::new();
        let mut tries = 0;
        let mut passing = true;
        for attempt in 0..self.tries {
            tries += 1;
            let once = match &url {
                Ok(url) => {
                    self.try_once(url.clone(), prefix, validator, past_cache)
                        .await
                }
                Err(text) => {
                    self.try_once(text.as_str(), prefix, validator, past_cache)
                        .await
                }
            };
            match once {
                Ok(body) => {
                    return Ok(Answer {
                        retries: attempt,
                        past_cache,
                        body,
                    });
                }
                Err(Fault::Final(what)) => {
                    last = what;
                    passing = false;
                    break;
                }
                Err(Fault::Retry {
                    what,
                    after,
                    cached,
                }) => {
                    last = what;
                    past_cache |= cached;
                    if attempt + 1 < self.tries {
                        let wait = after.unwrap_or_else(|| self.backoff_for(prefix, attempt));
                        tokio::time::sleep(wait).await;
                    }
                }
            }
        }
        Err(Unanswered {
            error: ErrorKind::Fetch {
                prefix: prefix_hex(prefix),
                what: last,
                tries,
            }
            .into(),
            passing,
        })
    }

    /// Exponential backoff with jitter (0.5–1.5 times), at most 30 s.
    pub(super) fn backoff_for(&self, prefix: u32, attempt: u32) -> Duration {
        let base = self
            .backoff
            .saturating_mul(1 << attempt.min(16))
            .min(Duration::from_secs(30));
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let noise = splitmix(u64::from(prefix) << 32 | u64::from(nanos ^ attempt));
        base.mul_f64(0.5 + (noise >> 11) as f64 / (1u64 << 53) as f64)
    }

    pub(super) async fn try_once(
        &self,
        url: impl reqwest::IntoUrl,
        prefix: u32,
        validator: Option<&[u8]>,
        past_cache: bool,
    ) -> std::result::Result<Body, Fault> {
        let retry = |what: String| Fault::Retry {
            what,
            after: None,
            cached: false,
        };
        let mut request = self.client.get(url).header(ACCEPT_ENCODING, ACCEPTED);
        if let Some(v) = validator {
            request = request.header(IF_NONE_MATCH, v);
        }
        if past_cache {
            request = request
                .header(CACHE_CONTROL, "no-cache")
                .header(PRAGMA, "no-cache")
                .header(PURGE, purge_token(prefix));
        }
        let mut response = request
            .send()
            .await
            .map_err(|e| match refused_certificate(&e) {
                Some(what) => Fault::Final(what),
                None => retry(describe(&e)),
            })?;
        let status = response.status();
        let cached = cached(response.headers());
        let retry = |what: String| Fault::Retry {
            what,
            after: None,
            cached,
        };
        if status == StatusCode::NOT_MODIFIED {
            return match validator {
                Some(v) => Ok(Body::NotModified {
                    validator: Some(v.to_vec()),
                }),
                None => Err(retry(
                    "304 Not Modified to a request without a validator".into(),
                )),
            };
        }
        if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
            return Err(Fault::Retry {
                what: format!(
                    "HTTP {status}{}",
                    if cached { " (from a cache)" } else { "" }
                ),
                after: retry_after(response.headers()),
                cached,
            });
        }
        if status != StatusCode::OK {
            return Err(Fault::Final(format!("HTTP {status}")));
        }
        let new_validator = response.headers().get(ETAG).map(|v| v.as_bytes().to_vec());
        let encoding = response
            .headers()
            .get(CONTENT_ENCODING)
            .map(|v| v.as_bytes().to_ascii_lowercase());
        let mut wire = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| retry(format!("body: {}", describe(&e))))?
        {
            if wire.len() + chunk.len() > MAX_RANGE_BODY {
                return Err(retry(format!("body over {MAX_RANGE_BODY} bytes")));
            }
            wire.extend_from_slice(&chunk);
        }
        let entries = read_answer(self.kind, prefix, encoding.as_deref(), &wire).map_err(retry)?;
        Ok(Body::Range {
            validator: new_validator,
            entries,
            received: wire.len() as u64,
        })
    }
}

/// The request header a retry past caches sets to a value no cache holds
/// an answer for. HIBP's answers say `Vary: add-padding, hibp-purge-cache`,
/// so its CDN keys stored answers on this header (the stored 502s of
/// PwnedPasswordsDownloader #98 and #100 said so too); any cache that
/// honours `Vary` (nginx does) misses and asks the origin, and an origin
/// that does not know the header ignores it.
pub(super) const PURGE: &str = "hibp-purge-cache";

/// The value of [`PURGE`] for one retry of `prefix`: 16 hex digits that
/// differ from one retry to the next.
fn purge_token(prefix: u32) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    format!("{:016x}", splitmix(nanos ^ u64::from(prefix) << 40))
}

/// Whether an answer shows signs of coming from (or through) a cache:
/// `Age`, `CF-Cache-Status`, `X-Cache` or `Via`.
pub(super) fn cached(headers: &HeaderMap) -> bool {
    headers.contains_key(AGE)
        || headers.contains_key("cf-cache-status")
        || headers.contains_key("x-cache")
        || headers.contains_key(VIA)
}

/// A range answer's body as sent (`wire`, with its `Content-Encoding`),
/// decoded and checked by [`parse_range`] for `prefix`: its pairs, or what
/// is wrong with it. What [`update`](crate::update::update()) does with
/// every answer it receives whole. A gzip body is inflated into a buffer
/// the thread keeps from one answer to the next; anything libdeflate
/// refuses in one call goes through [`decode_body`], which says what is
/// wrong.
pub fn read_answer(
    kind: Kind,
    prefix: u32,
    encoding: Option<&[u8]>,
    wire: &[u8],
) -> std::result::Result<Vec<(Key, u64)>, String> {
    thread_local! {
        static INFLATING: RefCell<(Option<Inflater>, Vec<u8>)> =
            const { RefCell::new((None, Vec::new())) };
    }
    let check = |text: &[u8]| {
        let mut entries = Vec::with_capacity(text.len() / 40 + 1);
        parse_range(kind, prefix, text, &mut entries).map_err(|e| e.to_string())?;
        Ok(entries)
    };
    match encoding {
        None | Some(b"identity") => check(wire),
        Some(b"gzip" | b"x-gzip") => {
            let checked = INFLATING.with_borrow_mut(|(inflater, text)| {
                // The size the member's trailer states, when within limits.
                let size = wire
                    .len()
                    .checked_sub(4)
                    .map(|at| u32::from_le_bytes(wire[at..].try_into().expect("4 bytes")) as usize)
                    .filter(|&size| size <= MAX_RANGE_BODY)?;
                if inflater.is_none() {
                    *inflater = Inflater::new();
                }
                let inflater = inflater.as_mut()?;
                // Grown, never cleared: libdeflate fills the first `size`
                // bytes exactly, or the answer is refused.
                if text.len() < size {
                    text.resize(size, 0);
                }
                let inflated = inflater.gzip(wire, &mut text[..size]);
                let checked = inflated.then(|| check(&text[..size]));
                // A rare large answer does not stay resident in every thread.
                if text.len() > 1 << 20 {
                    *text = Vec::new();
                }
                checked
            });
            checked.unwrap_or_else(|| check(&decode_body(encoding, wire)?))
        }
        _ => check(&decode_body(encoding, wire)?),
    }
}

/// A range answer's body as sent, decoded by its `Content-Encoding`
/// (`gzip`, `br` or none) to at most [`MAX_RANGE_BODY`] bytes; the error
/// says what is wrong with it. What [`update`](crate::update::update()) does with every answer before
/// [`parse_range`] checks it.
pub fn decode_body(encoding: Option<&[u8]>, wire: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let limit = MAX_RANGE_BODY as u64 + 1;
    let mut out = Vec::new();
    let read = match encoding {
        None | Some(b"identity") => return Ok(wire.to_vec()),
        Some(b"gzip" | b"x-gzip") => {
            if let Some(text) = gunzip_whole(wire, MAX_RANGE_BODY) {
                return Ok(text);
            }
            // Whatever libdeflate refuses (several members, a lying size)
            // goes through the streaming decoder, which says what is wrong.
            flate2::read::MultiGzDecoder::new(wire)
                .take(limit)
                .read_to_end(&mut out)
        }
        Some(b"br") => brotli_decompressor::Decompressor::new(wire, 4096)
            .take(limit)
            .read_to_end(&mut out),
        Some(other) => {
            return Err(format!(
                "unknown Content-Encoding {:?}",
                String::from_utf8_lossy(other)
            ));
        }
    };
    read.map_err(|e| format!("compressed body: {e}"))?;
    if out.len() > MAX_RANGE_BODY {
        return Err(format!("body decodes to over {MAX_RANGE_BODY} bytes"));
    }
    Ok(out)
}

/// `Retry-After` in seconds (an HTTP date is taken as a short wait), at
/// most two minutes.
pub(super) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    let seconds = value.parse::<u64>().unwrap_or(1);
    Some(Duration::from_secs(seconds.min(120)))
}

pub(super) fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_urls_are_the_text_parsed() {
        for base in [
            "http://127.0.0.1:8080",
            "https://api.pwnedpasswords.com",
            "https://mirror.example/hibp/v3",
            "http://[::1]:9/a%20b",
            "https://bücher.example",
            "http://h?x=1",
            "http://h#top",
            "not a url",
            "",
        ] {
            for kind in [Kind::Sha1, Kind::Ntlm] {
                let template = range_template(base, kind);
                for prefix in [0, 0x5BAA6, 0xFFFFF] {
                    let text = range_text(base, kind, prefix);
                    let want = match &template {
                        Some(_) => Ok(reqwest::Url::parse(&text).unwrap()),
                        None => Err(text),
                    };
                    assert_eq!(range_url(template.as_ref(), base, kind, prefix), want);
                }
            }
        }
        assert!(range_template("https://api.pwnedpasswords.com", Kind::Sha1).is_some());
        assert!(range_template("http://h?x=1", Kind::Sha1).is_none());
    }
}
