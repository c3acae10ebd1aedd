//! Spans of time as flags take them.

use std::time::Duration;

/// A span of time as flags take it (`serve --max-age`, `update --every`):
/// a number and a unit (`d`, `h`, `m`, `s`; `w` for weeks), or a bare
/// number of seconds.
pub(crate) fn parse(text: &str) -> std::result::Result<Duration, String> {
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
    fn spans() {
        assert_eq!(parse("8d"), Ok(Duration::from_secs(8 * 86_400)));
        assert_eq!(parse("90m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse("42"), Ok(Duration::from_secs(42)));
        assert_eq!(parse("2w"), Ok(Duration::from_secs(14 * 86_400)));
        for bad in ["0", "0s", "8x", "d", "", "99999999999999999999d"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
