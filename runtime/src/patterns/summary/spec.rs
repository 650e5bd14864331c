//! What `#[derive(Model)]` registers for a `#[summary(...)]` model, and the traits its
//! compile-time checks name.

use std::time::Duration;

use bson::DateTime;

use crate::core::descriptor::{Relation, RelationKind, Variant};

/// One summary, as declared on its model: registered at link time, so that the
/// source's writers find every summary kept from it. (Built by the derive, as a
/// constant: its fields are all public, like [`crate::denormalized::CopySpec`]'s.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SummarySpec {
    /// The summary's collection (`"seller_sales"`).
    pub collection: &'static str,
    /// The source model's collection (`"orders"`).
    pub source: &'static str,
    /// The parts of the group key, in order; empty: one document for the whole source.
    pub group: &'static [GroupPart],
    /// The maintained fields.
    pub fields: &'static [SummaryField],
    /// When a source write reaches the summary.
    pub refresh: SummaryRefresh,
    /// The source's `#[model(soft_delete = ...)]` date (its stored name): a document
    /// with the date set counts as deleted.
    pub soft_delete: Option<&'static str>,
    /// The source's variant the summary is kept over (`variant = Click` on a
    /// polymorphic source): only documents whose tag holds its value contribute.
    pub variant: Option<Variant>,
}

/// One part of a summary's group key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum GroupPart {
    /// A stored path of the source (`"seller_id"`); a path whose first segment is an
    /// array (`"items.seller_id"`) groups by the array's elements.
    Field(&'static str),
    /// A date of the source truncated to a period (`period(created_at, "day")`).
    Period(&'static str, SummaryPeriod),
}

impl GroupPart {
    /// The stored path the part reads.
    pub fn path(&self) -> &'static str {
        match self {
            GroupPart::Field(p) | GroupPart::Period(p, _) => p,
        }
    }

    /// The part's name in a composite key (`{seller_id: .., created_at: ..}`): the
    /// path's last segment.
    pub fn name(&self) -> &'static str {
        let p = self.path();
        p.rsplit('.').next().unwrap_or(p)
    }
}

/// The periods a summary's group can truncate a date to: the bucket pattern's
/// vocabulary (`"minute"`, `"hour"`, `"day"`, `"week"` starting on Monday, `"month"`,
/// `"year"`), in UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SummaryPeriod {
    /// `"minute"`.
    Minute,
    /// `"hour"`.
    Hour,
    /// `"day"`.
    Day,
    /// `"week"`, from Monday 00:00 UTC.
    Week,
    /// `"month"`.
    Month,
    /// `"year"`.
    Year,
}

impl SummaryPeriod {
    /// The start of the period holding `t` (UTC).
    pub fn start(self, t: DateTime) -> DateTime {
        const MINUTE: i64 = 60_000;
        const DAY: i64 = 86_400_000;
        let ms = t.timestamp_millis();
        let floor = |unit: i64| ms.div_euclid(unit) * unit;
        let day = ms.div_euclid(DAY);
        let out = match self {
            SummaryPeriod::Minute => floor(MINUTE),
            SummaryPeriod::Hour => floor(60 * MINUTE),
            SummaryPeriod::Day => floor(DAY),
            // 1970-01-01 was a Thursday: day 0 is 3 days after a Monday.
            SummaryPeriod::Week => (day - (day + 3).rem_euclid(7)) * DAY,
            SummaryPeriod::Month | SummaryPeriod::Year => {
                let (y, m, _) = civil(day);
                let m = if self == SummaryPeriod::Year { 1 } else { m };
                days_from_civil(y, m, 1) * DAY
            }
        };
        DateTime::from_millis(out)
    }
}

/// Days since 1970-01-01 to (year, month, day) (the proleptic Gregorian calendar).
fn civil(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// One maintained field of a summary (built by the derive, as a constant).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SummaryField {
    /// The field's stored name in the summary.
    pub name: &'static str,
    /// What it keeps.
    pub op: SummaryOp,
    /// The source path it reads (empty for a count).
    pub path: &'static str,
}

/// What a summary field keeps over its group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SummaryOp {
    /// The number of source documents in the group.
    Count,
    /// The sum of a numeric path (over the group's array elements, when the group is
    /// by an array's elements and the path is under that array).
    Sum,
    /// The smallest value of a path.
    Min,
    /// The largest value of a path.
    Max,
}

/// When a source write reaches its summaries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SummaryRefresh {
    /// In the writing call, right after the write (after the commit in a transaction).
    Sync,
    /// Through the refresh queue the async copies use, drained by
    /// [`crate::denormalized::Worker`] within `max_stale`.
    Async {
        /// How stale the summary may be.
        max_stale: Duration,
    },
}

/// A type a summed path (and a sum field) may have: a number.
#[diagnostic::on_unimplemented(
    message = "a summary sums numbers, and `{Self}` is not one",
    label = "not a number",
    note = "`sum` reads an integer or float field of the source (`i32`, `i64`, `f64`, or an `Option` of one) into a number field of the summary"
)]
pub trait Summable {
    /// The value as a float, for averages.
    fn as_f64(&self) -> Option<f64>;
}

macro_rules! summable {
    ($($t:ty),*) => {$(
        impl Summable for $t {
            fn as_f64(&self) -> Option<f64> {
                Some(*self as f64)
            }
        }
    )*};
}
summable!(i32, i64, u32, f32, f64);

impl<T: Summable> Summable for Option<T> {
    fn as_f64(&self) -> Option<f64> {
        self.as_ref().and_then(Summable::as_f64)
    }
}

/// A summary's `_id` type that holds a group key of type `Key`.
#[diagnostic::on_unimplemented(
    message = "the summary's `_id` is `{Self}`, but its group key is `{Key}`",
    label = "the group key's type",
    note = "a summary's document is found by its group key: declare `_id` with the grouped field's type (a `DateTime` for a period, a `String` for `group()`)"
)]
pub trait GroupKey<Key: ?Sized> {}
impl<T: ?Sized> GroupKey<T> for T {}
#[diagnostic::do_not_recommend]
impl<T> GroupKey<Option<T>> for T {}

/// A type a period group's date may have.
#[diagnostic::on_unimplemented(
    message = "a summary's period groups by a `bson::DateTime`, not `{Self}`",
    label = "not a date"
)]
pub trait SummaryTime {}
impl SummaryTime for DateTime {}
impl SummaryTime for Option<DateTime> {}

/// Whether a summary of a source whose tenant field is `tenant` groups by it first
/// (`first`, the stored path of its first group part): a summary of a tenant model
/// keeps one document per tenant and group, never one that mixes tenants. Evaluated
/// at compile time by the summary derive, against the source's `Model::TENANT`.
pub const fn summary_groups_by_tenant(tenant: Option<&str>, first: Option<&str>) -> bool {
    let (Some(tenant), Some(first)) = (tenant, first) else { return tenant.is_none() };
    let (a, b) = (tenant.as_bytes(), first.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Whether the stored `path` reads through an `#[outlier]` array of the source
/// (`relations`: its `Model::RELATIONS`): such an array keeps only its first items in
/// the document and the rest in overflow documents, which a summary (computed from the
/// source document, and recounted from the source collection) never reads. Evaluated
/// at compile time by the summary derive.
pub const fn summary_reads_outlier(relations: &[Relation], path: &str) -> bool {
    let path = path.as_bytes();
    let mut i = 0;
    while i < relations.len() {
        let r = &relations[i];
        let field = r.field.as_bytes();
        if matches!(r.kind, RelationKind::Outlier) && path.len() >= field.len() {
            let mut j = 0;
            while j < field.len() && path[j] == field[j] {
                j += 1;
            }
            if j == field.len() && (path.len() == field.len() || path[j] == b'.') {
                return true;
            }
        }
        i += 1;
    }
    false
}

/// `sum / count`, or `None` for an empty group: the generated `avg_*` accessors.
pub fn summary_avg<S: Summable, C: Summable>(sum: &S, count: &C) -> Option<f64> {
    let n = count.as_f64()?;
    (n > 0.0).then(|| sum.as_f64().map(|s| s / n)).flatten()
}

inventory::collect!(SummarySpec);

/// Every summary linked into the program, by collection.
pub fn summaries() -> Vec<&'static SummarySpec> {
    let mut all: Vec<_> = inventory::iter::<SummarySpec>.into_iter().collect();
    all.sort_by_key(|s| s.collection);
    all
}

/// The summaries kept from `source`.
pub fn summaries_of(source: &str) -> Vec<&'static SummarySpec> {
    inventory::iter::<SummarySpec>.into_iter().filter(|s| s.source == source).collect()
}

/// The summary stored in `collection`.
pub fn summary(collection: &str) -> Option<&'static SummarySpec> {
    inventory::iter::<SummarySpec>.into_iter().find(|s| s.collection == collection)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_truncate_in_utc() {
        let t = DateTime::parse_rfc3339_str("2026-08-05T10:07:31.250Z").unwrap();
        let at = |p: SummaryPeriod| p.start(t).try_to_rfc3339_string().unwrap();
        assert_eq!(at(SummaryPeriod::Minute), "2026-08-05T10:07:00Z");
        assert_eq!(at(SummaryPeriod::Hour), "2026-08-05T10:00:00Z");
        assert_eq!(at(SummaryPeriod::Day), "2026-08-05T00:00:00Z");
        assert_eq!(at(SummaryPeriod::Week), "2026-08-03T00:00:00Z");
        assert_eq!(at(SummaryPeriod::Month), "2026-08-01T00:00:00Z");
        assert_eq!(at(SummaryPeriod::Year), "2026-01-01T00:00:00Z");
        let old = DateTime::parse_rfc3339_str("1969-12-31T23:59:59Z").unwrap();
        assert_eq!(SummaryPeriod::Day.start(old).try_to_rfc3339_string().unwrap(), "1969-12-31T00:00:00Z");
    }

    #[test]
    fn a_path_reads_an_outlier_at_or_under_its_field_only() {
        let outlier = Relation {
            field: "members",
            kind: RelationKind::Outlier,
            target: "members_extra",
            many: true,
            bound: None,
            refresh: None,
            via: None,
            reason: None,
            split: None,
        };
        let embedded = Relation { field: "items", kind: RelationKind::Embed, ..outlier };
        let relations = [outlier, embedded];
        assert!(summary_reads_outlier(&relations, "members"));
        assert!(summary_reads_outlier(&relations, "members.likes"));
        // A sibling that shares the prefix, a shorter path, an embedded array: not it.
        assert!(!summary_reads_outlier(&relations, "members_count"));
        assert!(!summary_reads_outlier(&relations, "member"));
        assert!(!summary_reads_outlier(&relations, "items.qty"));
        assert!(!summary_reads_outlier(&[], "members"));
    }

    #[test]
    fn averages_divide_by_the_count() {
        assert_eq!(summary_avg(&10_i64, &4_i64), Some(2.5));
        assert_eq!(summary_avg(&10_i64, &0_i64), None);
    }
}
