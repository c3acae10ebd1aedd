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
    let damaged = UNIX_EPOCH + Duration::from_secs(u64::MAX / 2);
    assert_eq!(rfc3339(damaged), "9999-12-31T23:59:59.999Z");
}
