//! Where an index's hashes came from, kept in the index so that a refresh
//! can ask only for what changed (docs/format-pwned.md, "Source section");
//! its update time as people read it ([`rfc3339`]).

use crate::error::{Error, Result};

/// Ranges of the HIBP range API: one per 5-hex-digit prefix.
pub const RANGES: u32 = 1 << 20;

/// The longest validator kept; a longer one is dropped (its range is
/// fetched whole on the next refresh).
pub const MAX_VALIDATOR: usize = 255;

/// The source of an index built from the range API: the base URL, the time
/// of the last fetch, each range's validator (its `ETag`) and the index's
/// identity.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Source {
    /// The base URL the ranges came from (`https://api.pwnedpasswords.com`).
    pub url: String,
    /// When the last update finished, in seconds since the Unix epoch.
    pub updated: u64,
    /// The index's identity (docs/format-bundle.md), as the update that
    /// wrote it computed it; `None` when it was not recorded.
    pub identity: Option<[u8; 32]>,
    /// `ends[p]`: the end of range `p`'s validator in `bytes`; empty when no
    /// range has one.
    ends: Vec<u32>,
    bytes: Vec<u8>,
}

impl Source {
    /// A source without validators yet.
    pub fn new(url: impl Into<String>, updated: u64) -> Source {
        Source {
            url: url.into(),
            updated,
            identity: None,
            ends: Vec::new(),
            bytes: Vec::new(),
        }
    }

    /// Appends the validator of the next range (ranges in prefix order from
    /// `00000`); `None`, an empty one or one longer than [`MAX_VALIDATOR`]
    /// records that the range has none.
    pub fn push_validator(&mut self, validator: Option<&[u8]>) {
        if let Some(v) = validator.filter(|v| v.len() <= MAX_VALIDATOR) {
            self.bytes.extend_from_slice(v);
        }
        self.ends.push(self.bytes.len() as u32);
    }

    /// The validator stored for range `prefix`, if any.
    pub fn validator(&self, prefix: u32) -> Option<&[u8]> {
        let p = prefix as usize;
        let end = *self.ends.get(p)? as usize;
        let start = if p == 0 { 0 } else { self.ends[p - 1] as usize };
        (end > start).then(|| &self.bytes[start..end])
    }

    /// [`updated`](Self::updated) as a time: from a damaged section, a
    /// count of seconds no platform's clock reaches reads as the last
    /// second of year 9999 (where RFC 3339's dates end) instead of
    /// overflowing (Windows' clock ends in year 30828).
    pub fn updated_time(&self) -> std::time::SystemTime {
        const LAST: u64 = 253_402_300_799;
        std::time::UNIX_EPOCH + std::time::Duration::from_secs(self.updated.min(LAST))
    }

    /// How many ranges carry a validator.
    pub fn validators(&self) -> u32 {
        let mut start = 0;
        let mut n = 0;
        for &end in &self.ends {
            n += u32::from(end > start);
            start = end;
        }
        n
    }

    /// The section's bytes: URL length (u16) and URL, update time (u64),
    /// number of ranges with a slot (u32, 0 or 2^20), one length byte per
    /// range, the validators back to back, then the identity (32 bytes)
    /// when recorded.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let url = &self.url.as_bytes()[..self.url.len().min(u16::MAX as usize)];
        let slots = if self.ends.len() == RANGES as usize {
            RANGES
        } else {
            0
        };
        let mut out = Vec::with_capacity(14 + url.len() + slots as usize + self.bytes.len());
        out.extend_from_slice(&(url.len() as u16).to_le_bytes());
        out.extend_from_slice(url);
        out.extend_from_slice(&self.updated.to_le_bytes());
        out.extend_from_slice(&slots.to_le_bytes());
        if slots > 0 {
            let mut start = 0;
            for &end in &self.ends {
                out.push((end - start) as u8);
                start = end;
            }
            out.extend_from_slice(&self.bytes);
        }
        if let Some(identity) = &self.identity {
            out.extend_from_slice(identity);
        }
        out
    }

    /// Reads a section written by [`Source::encode`]; every length is
    /// checked against the bytes there are.
    pub(crate) fn decode(b: &[u8]) -> Result<Source> {
        let bad = |what: &str| Error::corrupt(format!("source section: {what}"));
        let take = |pos: &mut usize, n: usize| -> Result<&[u8]> {
            let end = pos
                .checked_add(n)
                .filter(|&end| end <= b.len())
                .ok_or_else(|| bad("truncated"))?;
            let slice = &b[*pos..end];
            *pos = end;
            Ok(slice)
        };
        let mut pos = 0;
        let url_len = u16::from_le_bytes(take(&mut pos, 2)?.try_into().expect("2 bytes"));
        let url = std::str::from_utf8(take(&mut pos, usize::from(url_len))?)
            .map_err(|_| bad("URL is not UTF-8"))?
            .to_string();
        let updated = u64::from_le_bytes(take(&mut pos, 8)?.try_into().expect("8 bytes"));
        let slots = u32::from_le_bytes(take(&mut pos, 4)?.try_into().expect("4 bytes"));
        let mut source = Source::new(url, updated);
        match slots {
            0 => {}
            RANGES => {
                let lens = take(&mut pos, RANGES as usize)?;
                let mut end = 0u32;
                source.ends.reserve(RANGES as usize);
                for &len in lens {
                    end += u32::from(len);
                    source.ends.push(end);
                }
                source.bytes = take(&mut pos, end as usize)?.to_vec();
            }
            _ => return Err(bad("range count is neither 0 nor 2^20")),
        }
        match b.len() - pos {
            0 => {}
            32 => source.identity = Some(b[pos..].try_into().expect("32 bytes")),
            _ => return Err(bad("trailing bytes")),
        }
        Ok(source)
    }
}

/// An RFC 3339 timestamp in UTC with milliseconds,
/// `2000-02-29T00:00:00.123Z`, as the update time is shown (`/health`,
/// `/identity`, `pwned stats`). Times outside years 1970 to 9999 (a
/// damaged section's) are clamped to them instead of failing.
pub fn rfc3339(time: std::time::SystemTime) -> String {
    use std::time::{Duration, UNIX_EPOCH};
    let last = UNIX_EPOCH + Duration::from_millis(253_402_300_799_999);
    humantime::format_rfc3339_millis(time.clamp(UNIX_EPOCH, last)).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        use std::time::{Duration, UNIX_EPOCH};
        let leap = UNIX_EPOCH + Duration::from_millis(951_782_400_123);
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00.123Z");
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_secs(784_111_777);
        assert_eq!(rfc3339(t), "1994-11-06T08:49:37.000Z");
        // The latest time every platform's clock holds (Windows' ends in 30828).
        let far = UNIX_EPOCH + Duration::from_secs(900_000_000_000);
        assert_eq!(rfc3339(far), "9999-12-31T23:59:59.999Z");
        let damaged = Source::new("", u64::MAX);
        assert_eq!(rfc3339(damaged.updated_time()), "9999-12-31T23:59:59.000Z");
    }

    #[test]
    fn round_trip_with_and_without_validators() {
        let plain = Source::new("http://127.0.0.1:8080", 1_700_000_000);
        assert_eq!(Source::decode(&plain.encode()).unwrap(), plain);
        assert_eq!(plain.validator(0), None);

        let mut full = Source::new("https://api.pwnedpasswords.com", 42);
        for p in 0..RANGES {
            let etag = format!("W/\"0x{p:X}\"");
            full.push_validator(match p % 3 {
                0 => None,
                1 => Some(etag.as_bytes()),
                _ => Some(&[b'x'; MAX_VALIDATOR + 1][..]),
            });
        }
        let back = Source::decode(&full.encode()).unwrap();
        assert_eq!(back, full);
        full.identity = Some([7; 32]);
        assert_eq!(Source::decode(&full.encode()).unwrap(), full);
        let mut plain = plain;
        plain.identity = Some([9; 32]);
        assert_eq!(Source::decode(&plain.encode()).unwrap(), plain);
        assert_eq!(back.validator(1), Some(&b"W/\"0x1\""[..]));
        assert_eq!(back.validator(3), None);
        assert_eq!(back.validator(5), None, "too long: dropped");
        assert_eq!(back.validator(RANGES), None);
        assert_eq!(
            back.validators(),
            (0..RANGES).filter(|p| p % 3 == 1).count() as u32
        );
    }

    #[test]
    fn damaged_sections_are_errors() {
        let mut full = Source::new("u", 1);
        for _ in 0..RANGES {
            full.push_validator(Some(b"\"e\""));
        }
        let bytes = full.encode();
        for cut in [0, 1, 3, 10, 15, 1000, bytes.len() - 1] {
            assert!(Source::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        for extra in [1, 31, 33] {
            let mut longer = bytes.clone();
            longer.extend(std::iter::repeat_n(0, extra));
            assert!(Source::decode(&longer).is_err(), "{extra} bytes more");
        }
        let mut slots = Source::new("u", 1).encode();
        let n = slots.len();
        slots[n - 4..].copy_from_slice(&7u32.to_le_bytes());
        assert!(Source::decode(&slots).is_err());
        let mut url = Source::new("u", 1).encode();
        url[2] = 0xff;
        assert!(Source::decode(&url).is_err());
    }
}
