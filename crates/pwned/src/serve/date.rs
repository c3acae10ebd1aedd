//! RFC 3339 dates as `/health` writes them (UTC, by humantime). HTTP
//! headers' dates come from `httpdate`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `2000-02-29T00:00:00.123Z`; an update time past year 9999 (a damaged
/// source section) reads as its last millisecond instead of failing.
pub(crate) fn rfc3339(time: SystemTime) -> String {
    let last = UNIX_EPOCH + Duration::from_millis(253_402_300_799_999);
    humantime::format_rfc3339_millis(time.clamp(UNIX_EPOCH, last)).to_string()
}

#[cfg(test)]
#[test]
fn health_dates() {
    let leap = UNIX_EPOCH + Duration::from_millis(951_782_400_123);
    assert_eq!(rfc3339(leap), "2000-02-29T00:00:00.123Z");
    // The latest time every platform's clock holds (Windows' ends in 30828).
    let far = UNIX_EPOCH + Duration::from_secs(900_000_000_000);
    assert_eq!(rfc3339(far), "9999-12-31T23:59:59.999Z");
    let damaged = crate::format::source::Source::new("", u64::MAX);
    assert_eq!(rfc3339(damaged.updated_time()), "9999-12-31T23:59:59.000Z");
}
