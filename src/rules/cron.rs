//! Routine schedules: a 5-field cron expression evaluated in an IANA time zone. Daylight-saving changes
//! follow croner's rules: a time skipped by a spring-forward runs once at the first real instant after
//! the gap, and a time repeated by a fall-back runs once.

use crate::error::ApiError;
use crate::rules::params::quoted;
use crate::rules::zone::Zone;
use chrono::{DateTime, TimeZone, Utc};
use croner::parser::{CronParser, Seconds};
use croner::Cron;

/// A parsed schedule.
#[derive(Debug, Clone)]
pub struct Schedule {
    cron: Cron,
    tz: Zone,
}

/// Parses `cron` (5 fields: minute hour day-of-month month day-of-week) in `timezone`. Errors name the
/// field at fault.
pub fn parse(cron: &str, timezone: &str) -> Result<Schedule, ApiError> {
    let tz = Zone::named(timezone).ok_or_else(|| {
        ApiError::invalid(format!(
            "`timezone` must be an IANA time zone such as `Europe/Berlin` or `UTC` (got {})",
            quoted(timezone)
        ))
    })?;
    if cron.split_whitespace().count() != 5 {
        return Err(ApiError::invalid(format!(
            "`cron` must have 5 fields: minute hour day-of-month month day-of-week, e.g. `0 9 * * 1-5` (got {})",
            quoted(cron)
        )));
    }
    let cron = CronParser::builder()
        .seconds(Seconds::Disallowed)
        .build()
        .parse(cron)
        .map_err(|e| ApiError::invalid(format!("`cron` is not a valid cron expression ({e}): {}", quoted(cron))))?;
    Ok(Schedule { cron, tz })
}

fn at(tz: &Zone, ms: i64) -> Option<DateTime<Zone>> {
    Utc.timestamp_millis_opt(ms).single().map(|t| t.with_timezone(tz))
}

impl Schedule {
    /// The first occurrence strictly after `after_ms`, unix ms.
    pub fn next_after(&self, after_ms: i64) -> Option<i64> {
        let start = at(&self.tz, after_ms)?;
        self.cron.find_next_occurrence(&start, false).ok().map(|t| t.timestamp_millis())
    }

    /// The latest occurrence at or before `now_ms`: what a fire that is due now stands for. After
    /// downtime this is one fire for everything missed, not one per missed minute.
    pub fn latest_due(&self, now_ms: i64) -> Option<i64> {
        let now = at(&self.tz, now_ms)?;
        self.cron.find_previous_occurrence(&now, true).ok().map(|t| t.timestamp_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(s: &str) -> i64 {
        DateTime::parse_from_rfc3339(s).unwrap().timestamp_millis()
    }

    fn iso(ms: i64, tz: &str) -> String {
        at(&Zone::named(tz).unwrap(), ms).unwrap().to_rfc3339()
    }

    #[test]
    fn weekday_mornings_in_a_zone() {
        let s = parse("0 9 * * 1-5", "Europe/Berlin").unwrap();
        // Friday 2026-11-27 10:00 Berlin → next is Monday 09:00 Berlin (08:00 UTC).
        let next = s.next_after(ms("2026-11-27T09:00:00Z")).unwrap();
        assert_eq!(iso(next, "Europe/Berlin"), "2026-11-30T09:00:00+01:00");
    }

    #[test]
    fn a_time_skipped_by_spring_forward_fires_once_after_the_gap() {
        // New York skips 02:00–03:00 on 2026-03-08.
        let s = parse("30 2 * * *", "America/New_York").unwrap();
        let first = s.next_after(ms("2026-03-07T00:00:00Z")).unwrap();
        assert_eq!(iso(first, "America/New_York"), "2026-03-07T02:30:00-05:00");
        let gap_day = s.next_after(first).unwrap();
        assert_eq!(iso(gap_day, "America/New_York"), "2026-03-08T03:00:00-04:00", "once, at the first real instant");
        let after = s.next_after(gap_day).unwrap();
        assert_eq!(iso(after, "America/New_York"), "2026-03-09T02:30:00-04:00");
    }

    #[test]
    fn a_time_repeated_by_fall_back_fires_once() {
        // New York repeats 01:00–02:00 on 2026-11-01.
        let s = parse("30 1 * * *", "America/New_York").unwrap();
        let first = s.next_after(ms("2026-11-01T00:00:00Z")).unwrap();
        assert_eq!(iso(first, "America/New_York"), "2026-11-01T01:30:00-04:00");
        let next = s.next_after(first).unwrap();
        assert_eq!(iso(next, "America/New_York"), "2026-11-02T01:30:00-05:00", "not again at 01:30 EST");
    }

    #[test]
    fn after_downtime_the_latest_missed_time_stands_for_all_of_them() {
        let s = parse("*/5 * * * *", "UTC").unwrap();
        let due = s.latest_due(ms("2026-11-29T10:17:30Z")).unwrap();
        assert_eq!(due, ms("2026-11-29T10:15:00Z"));
        assert_eq!(s.latest_due(ms("2026-11-29T10:15:00Z")).unwrap(), ms("2026-11-29T10:15:00Z"), "inclusive");
    }

    #[test]
    fn bad_expressions_and_zones_name_their_field() {
        assert!(parse("0 9 * *", "UTC").unwrap_err().message.contains("`cron`"));
        assert!(parse("0 0 9 * * *", "UTC").unwrap_err().message.contains("`cron`"));
        assert!(parse("61 9 * * *", "UTC").unwrap_err().message.contains("`cron`"));
        assert!(parse("0 9 * * *", "Mars/Olympus").unwrap_err().message.contains("`timezone`"));
    }
}
