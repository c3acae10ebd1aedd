//! Dates as the CLI prints them (UTC, RFC 3339, by humantime), and spans
//! of time as its flags take them.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The last instant RFC 3339's four-digit years reach: 9999-12-31T23:59:59.999Z.
const LAST: Duration = Duration::from_millis(253_402_300_799_999);

/// An RFC 3339 timestamp in UTC with milliseconds: `2000-02-29T00:00:00.123Z`.
/// Times outside 1970-9999 (a damaged index's update time) are clamped.
pub(crate) fn rfc3339(time: SystemTime) -> String {
    humantime::format_rfc3339_millis(time.clamp(UNIX_EPOCH, UNIX_EPOCH + LAST)).to_string()
}

/// A span of time as flags take it (`serve --max-age`, `update --every`):
/// a number and a unit (`d`, `h`, `m`, `s`; `w` for weeks), or a bare
/// number of seconds.
#[cfg(any(feature = "update", feature = "serve"))]
pub(crate) fn parse_span(text: &str) -> std::result::Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let unit_secs = match unit.trim() {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        other => {
            return Err(format!(
                "unknown unit {other:?}: give a number and d, h, m or s (8d, 36h)"
            ));
        }
    };
    let number: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not an age: give a number and d, h, m or s (8d)"))?;
    number
        .checked_mul(unit_secs)
        .filter(|&secs| secs > 0)
        .map(Duration::from_secs)
        .ok_or_else(|| format!("{text:?}: an age from 1 second to centuries"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        let t = UNIX_EPOCH + Duration::from_millis(951_782_400_123);
        assert_eq!(rfc3339(t), "2000-02-29T00:00:00.123Z");
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_secs(784_111_777);
        assert_eq!(rfc3339(t), "1994-11-06T08:49:37.000Z");
        // The latest time every platform's clock holds (Windows' ends in 30828).
        let far = UNIX_EPOCH + Duration::from_secs(900_000_000_000);
        assert_eq!(rfc3339(far), "9999-12-31T23:59:59.999Z");
    }

    #[test]
    fn spans() {
        assert_eq!(parse_span("8d"), Ok(Duration::from_secs(8 * 86_400)));
        assert_eq!(parse_span("90m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_span("42"), Ok(Duration::from_secs(42)));
        assert_eq!(parse_span("2w"), Ok(Duration::from_secs(14 * 86_400)));
        for bad in ["0", "0s", "8x", "d", "", "99999999999999999999d"] {
            assert!(parse_span(bad).is_err(), "{bad}");
        }
    }
}
