//! Range answers fetched over HTTP: a request with the stored validator,
//! retries with backoff (or as the server says), bodies decoded (gzip,
//! brotli) within the size limit; each range's [`Answer`] as `answers`
//! hands it on, whether it came from the network or from a bundle.

use std::io::Read;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::StatusCode;
use reqwest::header::{ACCEPT_ENCODING, CONTENT_ENCODING, ETAG, IF_NONE_MATCH, RETRY_AFTER};

use crate::error::{ErrorKind, Result};
use crate::format::hash::{Key, Kind};
use crate::format::source::Source;
use crate::range::gzip::gunzip_whole;
use crate::range::parse::{MAX_RANGE_BODY, parse_range};
use crate::range::prefix_hex;
use crate::update::client::{describe, refused_certificate};

/// One range's answer, checked.
pub(super) struct Answer {
    pub(super) retries: u32,
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

/// The codings asked for: gzip preferred. Range bodies are random hex, which
/// brotli packs only ~3% smaller than gzip, and brotli-decompressor inflates
/// them 4-5 times slower than libdeflate (measured: ~1 ms against ~0.2 ms a
/// real-size range).
pub(super) const ACCEPTED: &str = "gzip, br;q=0.5";

/// What a retry waits for, and why.
pub(super) enum Fault {
    /// Worth another try, after the usual backoff or the server's word.
    Retry {
        what: String,
        after: Option<Duration>,
    },
    /// Trying again would give the same answer.
    Final(String),
}

pub(super) struct Fetcher {
    pub(super) client: reqwest::Client,
    pub(super) base: String,
    pub(super) kind: Kind,
    pub(super) tries: u32,
    pub(super) backoff: Duration,
    pub(super) validators: Option<Source>,
}

impl Fetcher {
    pub(super) async fn fetch(&self, prefix: u32) -> Result<Answer> {
        let mut url = format!("{}/range/{}", self.base, prefix_hex(prefix));
        if self.kind == Kind::Ntlm {
            url.push_str("?mode=ntlm");
        }
        let validator = self.validators.as_ref().and_then(|s| s.validator(prefix));
        let mut last = String::new();
        let mut tries = 0;
        for attempt in 0..self.tries {
            tries += 1;
            match self.try_once(&url, prefix, validator).await {
                Ok(body) => {
                    return Ok(Answer {
                        retries: attempt,
                        body,
                    });
                }
                Err(Fault::Final(what)) => {
                    last = what;
                    break;
                }
                Err(Fault::Retry { what, after }) => {
                    last = what;
                    if attempt + 1 < self.tries {
                        let wait = after.unwrap_or_else(|| self.backoff_for(prefix, attempt));
                        tokio::time::sleep(wait).await;
                    }
                }
            }
        }
        Err(ErrorKind::Fetch {
            prefix: prefix_hex(prefix),
            what: last,
            tries,
        }
        .into())
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
        url: &str,
        prefix: u32,
        validator: Option<&[u8]>,
    ) -> std::result::Result<Body, Fault> {
        let retry = |what: String| Fault::Retry { what, after: None };
        let mut request = self.client.get(url).header(ACCEPT_ENCODING, ACCEPTED);
        if let Some(v) = validator {
            request = request.header(IF_NONE_MATCH, v);
        }
        let mut response = request
            .send()
            .await
            .map_err(|e| match refused_certificate(&e) {
                Some(what) => Fault::Final(what),
                None => retry(describe(&e)),
            })?;
        let status = response.status();
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
                what: format!("HTTP {status}"),
                after: retry_after(response.headers()),
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
        let text = decode_body(encoding.as_deref(), &wire).map_err(retry)?;
        let mut entries = Vec::with_capacity(text.len() / 40 + 1);
        parse_range(self.kind, prefix, &text, &mut entries).map_err(|e| retry(e.to_string()))?;
        Ok(Body::Range {
            validator: new_validator,
            entries,
            received: wire.len() as u64,
        })
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
