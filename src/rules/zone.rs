//! IANA time zones, as a `chrono` time zone. The Worker asks the runtime's own zone database (V8's `Intl`,
//! the ICU data every browser carries) rather than bundling one: chrono-tz's tables were 128 KB of the
//! Worker's gzipped wasm. Host builds (the tests, tools) read chrono-tz. Both answer one question only, the
//! UTC offset at an instant; turning a wall-clock time into instants (a spring-forward gap, a fall-back
//! repeat) is done here, once, for both.

use chrono::{FixedOffset, MappedLocalTime, NaiveDate, NaiveDateTime, Offset, TimeZone};
use std::fmt;
use std::sync::Arc;

/// A zone the database knows, by the name it was given (`Europe/Berlin`, `UTC`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Zone(Arc<str>);

/// A zone's offset at one instant; it remembers its zone, as `chrono` needs to rebuild one from the other.
#[derive(Clone, Debug)]
pub struct ZoneOffset {
    zone: Zone,
    fixed: FixedOffset,
}

impl Zone {
    /// The zone called `name` (letters first, then letters, digits and `/_+-`; case as the user wrote it),
    /// or `None` when the database does not know it. Offsets such as `+02:00` are not zones.
    pub fn named(name: &str) -> Option<Zone> {
        let shaped = name.len() <= 64
            && name.starts_with(|c: char| c.is_ascii_alphabetic())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || "/_+-".contains(c));
        (shaped && database::knows(name)).then(|| Zone(name.into()))
    }

    pub fn name(&self) -> &str {
        &self.0
    }

    fn offset_at(&self, utc_seconds: i64) -> ZoneOffset {
        let seconds = database::offset_seconds(&self.0, utc_seconds.saturating_mul(1000));
        let fixed = FixedOffset::east_opt(seconds).unwrap_or(FixedOffset::east_opt(0).expect("zero is an offset"));
        ZoneOffset { zone: self.clone(), fixed }
    }
}

impl Offset for ZoneOffset {
    fn fix(&self) -> FixedOffset {
        self.fixed
    }
}

impl fmt::Display for ZoneOffset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fixed.fmt(f)
    }
}

impl TimeZone for Zone {
    type Offset = ZoneOffset;

    fn from_offset(offset: &ZoneOffset) -> Zone {
        offset.zone.clone()
    }

    fn offset_from_utc_datetime(&self, utc: &NaiveDateTime) -> ZoneOffset {
        self.offset_at(utc.and_utc().timestamp())
    }

    fn offset_from_utc_date(&self, utc: &NaiveDate) -> ZoneOffset {
        self.offset_from_utc_datetime(&utc.and_time(chrono::NaiveTime::MIN))
    }

    /// A wall-clock time is each offset seen within a day of it that maps it back onto itself: none in a
    /// spring-forward gap, two in a fall-back repeat (earlier instant first, as `chrono` orders them).
    fn offset_from_local_datetime(&self, local: &NaiveDateTime) -> MappedLocalTime<ZoneOffset> {
        let wall = local.and_utc().timestamp();
        let mut fits: Vec<(i64, ZoneOffset)> = Vec::with_capacity(2);
        for probe in [wall - 86_400, wall, wall + 86_400] {
            let seconds = i64::from(self.offset_at(probe).fixed.local_minus_utc());
            let instant = wall - seconds;
            let at = self.offset_at(instant);
            if i64::from(at.fixed.local_minus_utc()) == seconds && !fits.iter().any(|(i, _)| *i == instant) {
                fits.push((instant, at));
            }
        }
        fits.sort_by_key(|(instant, _)| *instant);
        let mut fits = fits.into_iter().map(|(_, o)| o);
        match (fits.next(), fits.next()) {
            (None, _) => MappedLocalTime::None,
            (Some(one), None) => MappedLocalTime::Single(one),
            (Some(early), Some(late)) => MappedLocalTime::Ambiguous(early, late),
        }
    }

    fn offset_from_local_date(&self, local: &NaiveDate) -> MappedLocalTime<ZoneOffset> {
        self.offset_from_local_datetime(&local.and_time(chrono::NaiveTime::MIN))
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod database {
    use chrono::{Offset, TimeZone, Utc};
    use chrono_tz::Tz;

    fn zone(name: &str) -> Option<Tz> {
        name.parse().ok().or_else(|| chrono_tz::TZ_VARIANTS.into_iter().find(|tz| tz.name().eq_ignore_ascii_case(name)))
    }

    pub fn knows(name: &str) -> bool {
        zone(name).is_some()
    }

    pub fn offset_seconds(name: &str, utc_ms: i64) -> i32 {
        let (Some(tz), Some(at)) = (zone(name), Utc.timestamp_millis_opt(utc_ms).single()) else { return 0 };
        tz.offset_from_utc_datetime(&at.naive_utc()).fix().local_minus_utc()
    }
}

/// `Intl.DateTimeFormat` in the zone, read back as a wall clock: the offset is that wall clock less the
/// instant. One formatter per zone is kept for the isolate's life (building one costs more than using it).
#[cfg(target_arch = "wasm32")]
mod database {
    use chrono::NaiveDate;
    use js_sys::{Array, Date, Function, Intl::DateTimeFormat, Object, Reflect};
    use std::cell::RefCell;
    use std::collections::HashMap;
    use wasm_bindgen::{JsCast, JsValue};

    thread_local! {
        static FORMATTERS: RefCell<HashMap<String, Option<DateTimeFormat>>> = RefCell::new(HashMap::new());
    }

    /// `new Intl.DateTimeFormat("en-US", {timeZone, hourCycle: "h23", year…second: "numeric"})`, or `None`
    /// when the runtime throws (an unknown zone is a `RangeError`).
    fn build(name: &str) -> Option<DateTimeFormat> {
        let options = Object::new();
        let set = |k: &str, v: &str| Reflect::set(&options, &k.into(), &v.into()).ok();
        set("timeZone", name)?;
        set("hourCycle", "h23")?;
        for field in ["year", "month", "day", "hour", "minute", "second"] {
            set(field, "numeric")?;
        }
        let intl = Reflect::get(&js_sys::global(), &"Intl".into()).ok()?;
        let class: Function = Reflect::get(&intl, &"DateTimeFormat".into()).ok()?.dyn_into().ok()?;
        let args = Array::of2(&"en-US".into(), &options);
        Reflect::construct(&class, &args).ok().map(JsCast::unchecked_into)
    }

    fn with_formatter<T>(name: &str, f: impl FnOnce(Option<&DateTimeFormat>) -> T) -> T {
        FORMATTERS.with(|all| {
            let mut all = all.borrow_mut();
            let formatter = all.entry(name.to_owned()).or_insert_with(|| build(name));
            f(formatter.as_ref())
        })
    }

    pub fn knows(name: &str) -> bool {
        with_formatter(name, |f| f.is_some())
    }

    pub fn offset_seconds(name: &str, utc_ms: i64) -> i32 {
        let utc_ms = utc_ms - utc_ms.rem_euclid(1000);
        with_formatter(name, |formatter| {
            let Some(formatter) = formatter else { return 0 };
            let mut wall = [0u32; 6];
            for part in formatter.format_to_parts(&Date::new(&JsValue::from_f64(utc_ms as f64))).iter() {
                let kind = Reflect::get(&part, &"type".into()).ok().and_then(|v| v.as_string());
                let value = Reflect::get(&part, &"value".into()).ok().and_then(|v| v.as_string());
                let slot = match kind.as_deref() {
                    Some("year") => 0,
                    Some("month") => 1,
                    Some("day") => 2,
                    Some("hour") => 3,
                    Some("minute") => 4,
                    Some("second") => 5,
                    _ => continue,
                };
                wall[slot] = value.and_then(|v| v.parse().ok()).unwrap_or(0);
            }
            let [y, mo, d, h, mi, s] = wall;
            let wall = NaiveDate::from_ymd_opt(y as i32, mo, d).and_then(|day| day.and_hms_opt(h, mi, s));
            wall.map_or(0, |w| (w.and_utc().timestamp() - utc_ms.div_euclid(1000)) as i32)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Utc};

    fn instant(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn wall(zone: &Zone, s: &str) -> MappedLocalTime<String> {
        let local = NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M").unwrap();
        zone.from_local_datetime(&local).map(|t| t.to_rfc3339())
    }

    #[test]
    fn names_the_database_knows_in_any_case_and_nothing_else() {
        assert_eq!(Zone::named("Europe/Berlin").unwrap().name(), "Europe/Berlin");
        assert!(Zone::named("europe/berlin").is_some(), "case as the user wrote it");
        assert!(Zone::named("UTC").is_some());
        for bad in ["Mars/Olympus", "+02:00", "", "Europe/Berlin\n", "../../etc", &"A".repeat(65)] {
            assert!(Zone::named(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn instants_read_in_the_zone() {
        let ny = Zone::named("America/New_York").unwrap();
        assert_eq!(instant("2026-07-01T12:00:00Z").with_timezone(&ny).to_rfc3339(), "2026-07-01T08:00:00-04:00");
        assert_eq!(instant("2026-12-01T12:00:00Z").with_timezone(&ny).to_rfc3339(), "2026-12-01T07:00:00-05:00");
        let kolkata = Zone::named("Asia/Kolkata").unwrap();
        assert_eq!(instant("2026-12-01T12:00:00Z").with_timezone(&kolkata).to_rfc3339(), "2026-12-01T17:30:00+05:30");
    }

    #[test]
    fn wall_clocks_in_a_gap_are_none_and_in_a_repeat_are_both_earlier_first() {
        let ny = Zone::named("America/New_York").unwrap();
        assert_eq!(wall(&ny, "2026-03-08 02:30"), MappedLocalTime::None, "spring forward skips 02:00–03:00");
        assert_eq!(
            wall(&ny, "2026-11-01 01:30"),
            MappedLocalTime::Ambiguous("2026-11-01T01:30:00-04:00".into(), "2026-11-01T01:30:00-05:00".into())
        );
        assert_eq!(wall(&ny, "2026-11-01 03:00"), MappedLocalTime::Single("2026-11-01T03:00:00-05:00".into()));
        // Samoa skipped 30 December 2011 whole, moving across the date line (a 24-hour jump).
        let apia = Zone::named("Pacific/Apia").unwrap();
        assert_eq!(wall(&apia, "2011-12-30 12:00"), MappedLocalTime::None);
        assert_eq!(wall(&apia, "2011-12-31 12:00"), MappedLocalTime::Single("2011-12-31T12:00:00+14:00".into()));
    }
}
