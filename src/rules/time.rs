//! Calendar arithmetic on unix milliseconds, UTC, without a clock of its own.

pub const DAY_MS: i64 = 86_400_000;

/// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day number.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Midnight UTC of a `YYYY-MM-DD` date, or `None` when it is not one.
pub fn parse_day(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (y, m, d): (i64, i64, i64) = (s[0..4].parse().ok()?, s[5..7].parse().ok()?, s[8..10].parse().ok()?);
    if !(1..=12).contains(&m) || d < 1 {
        return None;
    }
    let days = days_from_civil(y, m, d);
    // Reject the 31st of a 30-day month and the like: the date must round-trip.
    (civil_from_days(days) == (y, m, d)).then_some(days * DAY_MS)
}

/// The `YYYY-MM-DD` of a moment, UTC.
pub fn format_day(ms: i64) -> String {
    let (y, m, d) = civil_from_days(ms.div_euclid(DAY_MS));
    format!("{y:04}-{m:02}-{d:02}")
}

/// A moment as `YYYY-MM-DDTHH:MM:SSZ`, UTC.
pub fn iso(ms: i64) -> String {
    let s = ms.div_euclid(1000).rem_euclid(86_400);
    format!("{}T{:02}:{:02}:{:02}Z", format_day(ms), s / 3600, s / 60 % 60, s % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_round_trip_and_impossible_dates_are_refused() {
        assert_eq!(parse_day("1970-01-01"), Some(0));
        assert_eq!(parse_day("2026-11-29").map(format_day).as_deref(), Some("2026-11-29"));
        assert_eq!(parse_day("2024-02-29").map(format_day).as_deref(), Some("2024-02-29"));
        for bad in ["2023-02-29", "2026-04-31", "2026-13-01", "26-1-1", "2026-00-10", "yesterday"] {
            assert_eq!(parse_day(bad), None, "{bad}");
        }
        assert_eq!(format_day(1_780_000_000_000), "2026-05-28");
    }
}
