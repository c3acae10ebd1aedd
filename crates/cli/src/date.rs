//! Dates as the CLI prints them (UTC, RFC 3339, by humantime).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The last instant RFC 3339's four-digit years reach: 9999-12-31T23:59:59.999Z.
const LAST: Duration = Duration::from_millis(253_402_300_799_999);

/// An RFC 3339 timestamp in UTC with milliseconds: `2000-02-29T00:00:00.123Z`.
/// Times outside 1970-9999 (a damaged index's update time) are clamped.
pub(crate) fn rfc3339(time: SystemTime) -> String {
    humantime::format_rfc3339_millis(time.clamp(UNIX_EPOCH, UNIX_EPOCH + LAST)).to_string()
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
}
