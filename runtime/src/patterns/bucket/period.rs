//! Periods: the calendar arithmetic that gives a bucket its start, its end and its label,
//! in UTC over the years 1 to 9999.

use std::fmt;

use bson::DateTime;

use super::error::BucketError;

/// The length of one bucket's period.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Per {
    /// A UTC minute.
    Minute,
    /// A UTC hour.
    Hour,
    /// A UTC day.
    Day,
    /// An ISO week (Monday to Sunday, UTC).
    Week,
    /// A UTC calendar month.
    Month,
}

pub(super) const MS_MINUTE: i64 = 60_000;
pub(super) const MS_HOUR: i64 = 60 * MS_MINUTE;
pub(super) const MS_DAY: i64 = 24 * MS_HOUR;
/// 0001-01-01T00:00:00Z and the first instant of year 10000: the dates servers store
/// (the local server refuses others) and labels can spell with four digits.
pub(super) const MIN_MS: i64 = -62_135_596_800_000;
pub(super) const MAX_MS: i64 = 253_402_300_800_000;

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
pub(super) fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day number (inverse of [`days_from_civil`]).
pub(super) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { yoe + era * 400 + 1 } else { yoe + era * 400 }, m, d)
}

impl Per {
    /// The unit's name as `#[bucket(per = "...")]` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Minute => "minute",
            Self::Hour => "hour",
            Self::Day => "day",
            Self::Week => "week",
            Self::Month => "month",
        }
    }

    /// The start of the period holding `t`, in UTC.
    ///
    /// ```
    /// use docshape::bucket::Per;
    /// use docshape::bson::DateTime;
    ///
    /// let t = DateTime::parse_rfc3339_str("2026-08-05T10:07:31.5Z").unwrap();
    /// assert_eq!(Per::Hour.start(t).unwrap().try_to_rfc3339_string().unwrap(), "2026-08-05T10:00:00Z");
    /// assert_eq!(Per::Week.label(t).unwrap(), "2026-W32");
    /// ```
    pub fn start(self, t: DateTime) -> Result<DateTime, BucketError> {
        let ms = t.timestamp_millis();
        if !(MIN_MS..MAX_MS).contains(&ms) {
            return Err(BucketError::DateOutOfRange(t));
        }
        let day = ms.div_euclid(MS_DAY);
        let start = match self {
            Self::Minute => ms - ms.rem_euclid(MS_MINUTE),
            Self::Hour => ms - ms.rem_euclid(MS_HOUR),
            Self::Day => day * MS_DAY,
            // 1970-01-01 was a Thursday: Monday-based weeks start 3 days earlier.
            Self::Week => (day - (day + 3).rem_euclid(7)) * MS_DAY,
            Self::Month => {
                let (y, m, _) = civil_from_days(day);
                days_from_civil(y, m, 1) * MS_DAY
            }
        };
        // A week of early January 0001 starts in year 0, which no server stores.
        if start < MIN_MS {
            return Err(BucketError::DateOutOfRange(t));
        }
        Ok(DateTime::from_millis(start))
    }

    /// The start of the period after the one starting at `start`.
    pub fn next(self, start: DateTime) -> DateTime {
        let ms = start.timestamp_millis();
        DateTime::from_millis(match self {
            Self::Minute => ms + MS_MINUTE,
            Self::Hour => ms + MS_HOUR,
            Self::Day => ms + MS_DAY,
            Self::Week => ms + 7 * MS_DAY,
            Self::Month => {
                let (y, m, _) = civil_from_days(ms.div_euclid(MS_DAY));
                let (y, m) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
                days_from_civil(y, m, 1) * MS_DAY
            }
        })
    }

    /// The period's label, fixed-width for the unit so labels sort as time does:
    /// `2026-08-05T10:07`, `2026-08-05T10`, `2026-08-05`, `2026-W32` (ISO week), `2026-08`.
    pub fn label(self, t: DateTime) -> Result<String, BucketError> {
        let start = self.start(t)?.timestamp_millis();
        let day = start.div_euclid(MS_DAY);
        let (y, m, d) = civil_from_days(day);
        let minutes = start.rem_euclid(MS_DAY) / MS_MINUTE;
        Ok(match self {
            Self::Minute => format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}", minutes / 60, minutes % 60),
            Self::Hour => format!("{y:04}-{m:02}-{d:02}T{:02}", minutes / 60),
            Self::Day => format!("{y:04}-{m:02}-{d:02}"),
            Self::Week => {
                // The ISO week-year is the year of the week's Thursday.
                let thursday = day + 3;
                let (iso_year, _, _) = civil_from_days(thursday);
                let week = (thursday - days_from_civil(iso_year, 1, 1)) / 7 + 1;
                format!("{iso_year:04}-W{week:02}")
            }
            Self::Month => format!("{y:04}-{m:02}"),
        })
    }

    /// The widest label of any unit, for size estimates.
    pub const MAX_LABEL_LEN: usize = 16;
}

impl fmt::Display for Per {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a bucket stores its period: a date (the period's start) or a label string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeriodKind {
    /// `bson::DateTime`: the period's first instant (patrones-es: `hora: ISODate(...)`).
    Date,
    /// `String`: the period's label (patterns-en: `day: "2026-08-05"`).
    Label,
}

/// A type a bucket's period field can have.
#[diagnostic::on_unimplemented(
    message = "a bucket's period field stores the period's start as a `bson::DateTime` or its label as a `String`, not `{Self}`",
    label = "period field of this type"
)]
pub trait PeriodField {
    /// How the period is stored.
    const KIND: PeriodKind;
}

impl PeriodField for DateTime {
    const KIND: PeriodKind = PeriodKind::Date;
}

impl PeriodField for String {
    const KIND: PeriodKind = PeriodKind::Label;
}

/// A type an item's time field can have.
#[diagnostic::on_unimplemented(
    message = "a bucket's `time` field must be a `bson::DateTime`, not `{Self}`",
    label = "items are placed in periods by this field"
)]
pub trait TimeField {}

impl TimeField for DateTime {}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime {
        DateTime::parse_rfc3339_str(s).unwrap()
    }

    #[test]
    fn periods_truncate_in_utc() {
        let t = at("2026-08-05T10:07:31.250Z");
        let cases = [
            (Per::Minute, "2026-08-05T10:07:00Z", "2026-08-05T10:07", "2026-08-05T10:08:00Z"),
            (Per::Hour, "2026-08-05T10:00:00Z", "2026-08-05T10", "2026-08-05T11:00:00Z"),
            (Per::Day, "2026-08-05T00:00:00Z", "2026-08-05", "2026-08-06T00:00:00Z"),
            (Per::Week, "2026-08-03T00:00:00Z", "2026-W32", "2026-08-10T00:00:00Z"),
            (Per::Month, "2026-08-01T00:00:00Z", "2026-08", "2026-09-01T00:00:00Z"),
        ];
        for (per, start, label, next) in cases {
            let s = per.start(t).unwrap();
            assert_eq!(s, at(start), "{per}");
            assert_eq!(per.label(t).unwrap(), label);
            assert_eq!(per.next(s), at(next), "{per}");
            assert_eq!(per.start(per.next(s)).unwrap(), per.next(s));
        }
    }

    #[test]
    fn iso_weeks_cross_years() {
        // 2027-01-01 is a Friday: ISO week 53 of 2026.
        assert_eq!(Per::Week.label(at("2027-01-01T00:00:00Z")).unwrap(), "2026-W53");
        // 2025-12-29 is a Monday: ISO week 1 of 2026.
        assert_eq!(Per::Week.label(at("2025-12-31T23:59:59Z")).unwrap(), "2026-W01");
        assert_eq!(Per::Month.next(at("2026-12-01T00:00:00Z")), at("2027-01-01T00:00:00Z"));
        assert_eq!(Per::Day.label(at("1969-12-31T23:59:59.999Z")).unwrap(), "1969-12-31");
    }

    #[test]
    fn calendar_round_trips_over_the_whole_range() {
        let mut day = days_from_civil(1, 1, 1);
        let end = days_from_civil(9999, 12, 31);
        while day <= end {
            let (y, m, d) = civil_from_days(day);
            assert_eq!(days_from_civil(y, m, d), day);
            day += 97;
        }
    }

    #[test]
    fn dates_outside_the_labelled_years_are_errors() {
        assert!(matches!(Per::Day.start(DateTime::MAX), Err(BucketError::DateOutOfRange(_))));
        assert!(matches!(Per::Day.start(DateTime::MIN), Err(BucketError::DateOutOfRange(_))));
        assert!(Per::Week.start(at("0001-01-01T00:00:00Z")).is_ok());
        assert!(Per::Day.start(at("9999-12-31T23:59:59.999Z")).is_ok());
    }

    #[test]
    fn labels_sort_as_time_does() {
        for per in [Per::Minute, Per::Hour, Per::Day, Per::Week, Per::Month] {
            let mut t = per.start(at("2019-12-20T00:00:00Z")).unwrap();
            let mut previous = per.label(t).unwrap();
            for _ in 0..500 {
                t = per.next(t);
                let label = per.label(t).unwrap();
                assert!(label > previous, "{per}: {label} after {previous}");
                assert_eq!(label.len(), previous.len());
                assert!(label.len() <= Per::MAX_LABEL_LEN);
                previous = label;
            }
        }
    }
}
