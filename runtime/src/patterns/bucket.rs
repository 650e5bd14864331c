//! The bucket pattern: bounded documents holding many items of one series for one
//! period, appended to in one round trip (`#[bucket(...)]`).
//!
//! patterns-en: "one bucket per sensor per day", `_id: "sensor_9:2026-08-05"`;
//! patrones-es: one per device per hour, `_id: {dispositivoId, hora}`. Both forms are
//! generated: a model whose `_id` field is a `String` gets string ids, any other `_id`
//! type gets compound ids.
//!
//! ## Ids and overflow
//!
//! A period's first bucket has the seed's id exactly. When it is full, the next bucket
//! of the same period has a sequence number: `"sensor_9:2026-08-05#1"`, or
//! `{dispositivoId, hora, seq: 1}`. Periods are labelled in UTC with a fixed width per
//! unit (`2026-08-05T10:07`, `2026-08-05T10`, `2026-08-05`, `2026-W32`, `2026-08`), so
//! no two (series, period, sequence) triples share an id, whatever the series holds.
//!
//! ## One round trip
//!
//! An append of `k` items to a bucket is one `update` command:
//!
//! ```text
//! update { _id: <id>, count: { $lte: max - k } }
//!        { $push: { items: { $each: [...] } }, $inc: { count: k, <sums> },
//!          $min: {...}, $max: {...}, $setOnInsert: { <series>: s, <period>: p } }
//!        upsert: true
//! ```
//!
//! The filter matches only a bucket with room, so no bucket ever holds more than
//! `max`, whatever the number of concurrent writers: the server applies each update
//! to one document atomically. When the bucket is full the upsert tries to insert a
//! new document with the same `_id` and fails with a duplicate-key error (11000):
//! that is the signal to read the bucket's `count` (one `find`) and either retry with
//! what still fits, or move to the next sequence number. A process-wide hint
//! remembers the open sequence number per bucket and a lower bound of its count
//! (counts only grow), so an append that fills a bucket sends the next one straight to
//! the next bucket: a single writer sends exactly one `update` per append, and with
//! concurrent writers the extra `find` happens only when another writer filled the
//! bucket first.

use std::fmt;

use bson::{doc, Bson, DateTime, Document};
use futures_util::TryStreamExt;
use mongodb::Database;
use serde::de::DeserializeOwned;
use serde::Serialize;

pub use crate::core::append::Appended;
use crate::core::append::{AppendContention, GuardedAppend};
use crate::core::model::Model;

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

const MS_MINUTE: i64 = 60_000;
const MS_HOUR: i64 = 60 * MS_MINUTE;
const MS_DAY: i64 = 24 * MS_HOUR;
/// 0001-01-01T00:00:00Z and the first instant of year 10000: the dates servers store
/// (the local server refuses others) and labels can spell with four digits.
const MIN_MS: i64 = -62_135_596_800_000;
const MAX_MS: i64 = 253_402_300_800_000;

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day number (inverse of [`days_from_civil`]).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
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

/// How a bucket's `_id` is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdForm {
    /// `"<series>:<period label>"`, then `"#<seq>"` for overflow buckets.
    String,
    /// `{<series field>: s, <period field>: p}`, plus `seq: n` for overflow buckets.
    Compound,
}

/// What an aggregate field keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggregateOp {
    /// The sum of the items' values (`$inc`).
    Sum,
    /// The smallest value (`$min`).
    Min,
    /// The largest value (`$max`).
    Max,
}

/// The BSON type an aggregate field stores, so the update writes exactly the type
/// the validator expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggregateType {
    /// int32.
    Int32,
    /// int64.
    Int64,
    /// double.
    Double,
    /// date.
    Date,
}

/// A type an aggregate field (`#[bucket(min = "...")]`, `max`) can have.
#[diagnostic::on_unimplemented(
    message = "a bucket's `min`/`max` aggregate compares numbers or dates (`i32`, `i64`, `f64`, `bson::DateTime`), not `{Self}`",
    label = "aggregated value of this type"
)]
pub trait AggregateField {
    /// The BSON type stored.
    const TYPE: AggregateType;
}

/// A type a sum aggregate field (`#[bucket(sum = "...")]`) can have.
#[diagnostic::on_unimplemented(
    message = "a bucket's `sum` aggregate adds numbers (`i32`, `i64`, `f64`), not `{Self}`",
    label = "summed value of this type"
)]
pub trait SumField: AggregateField {}

impl AggregateField for i32 {
    const TYPE: AggregateType = AggregateType::Int32;
}
impl AggregateField for i64 {
    const TYPE: AggregateType = AggregateType::Int64;
}
impl AggregateField for f64 {
    const TYPE: AggregateType = AggregateType::Double;
}
impl AggregateField for DateTime {
    const TYPE: AggregateType = AggregateType::Date;
}
impl<T: AggregateField> AggregateField for Option<T> {
    const TYPE: AggregateType = T::TYPE;
}
impl SumField for i32 {}
impl SumField for i64 {}
impl SumField for f64 {}
impl<T: SumField> SumField for Option<T> {}

/// One per-bucket aggregate, maintained by the same update as the append.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Aggregate {
    /// The bucket field that holds it.
    pub field: &'static str,
    /// What it keeps.
    pub op: AggregateOp,
    /// The item field it is computed from.
    pub of: &'static str,
    /// The stored type.
    pub ty: AggregateType,
}

/// A bucket model's shape, generated by `#[bucket(...)]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BucketSpec {
    /// The stored name of the series field (`sensor_id`, `dispositivoId`).
    pub series: &'static str,
    /// The stored name of the period field (`day`, `hora`).
    pub period: &'static str,
    /// How the period field stores the period.
    pub period_kind: PeriodKind,
    /// The period's length.
    pub per: Per,
    /// The most items one bucket holds.
    pub max: u32,
    /// The stored name of the items array (`readings`, `lecturas`).
    pub items: &'static str,
    /// The path of each item's time, inside the item (`t`, `ts`).
    pub time: &'static str,
    /// The stored name of the maintained count (`count`, `conteo`).
    pub count: &'static str,
    /// How ids are made.
    pub id: IdForm,
    /// The aggregates.
    pub aggregates: &'static [Aggregate],
}

/// A bucket model: implemented by `#[derive(Model)]` with `#[bucket(...)]`.
///
/// Use the generated methods (`append`, `append_many`, `read_range`, `buckets_in`), or
/// the functions of this module with the type as parameter.
pub trait Bucket: Model + DeserializeOwned + Send + Sync + Unpin {
    /// The series field's type.
    type Series: Serialize + Send + Sync;
    /// One item of the items array.
    type Item: Serialize + DeserializeOwned + Send + Sync;
    /// The bucket's shape.
    const BUCKET: BucketSpec;
    /// The largest BSON size a full bucket can have, field names included, computed
    /// at compile time (checked against the 16 MB limit or `max_bytes`).
    const MAX_BUCKET_BYTES: usize;
}

/// Why a bucket operation failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum BucketError {
    /// The driver or the server refused an operation.
    Mongo(mongodb::error::Error),
    /// An item or the series did not serialize to BSON.
    Serialize(bson::ser::Error),
    /// A stored bucket or item did not deserialize into the model.
    Decode(bson::de::Error),
    /// An item has no date at the bucket's `time` path.
    ItemTime {
        /// The item's position in the call.
        index: usize,
        /// The time path.
        path: &'static str,
    },
    /// A date outside the years 1 to 9999, which periods cannot label.
    DateOutOfRange(DateTime),
    /// The series value cannot be written into a string id (only strings, integers
    /// and ObjectIds can).
    SeriesKey(String),
    /// An aggregate's source value is missing, not a number, or overflows its type.
    Aggregate {
        /// The aggregate field.
        field: &'static str,
        /// What was wrong.
        detail: String,
    },
    /// The range's end is before its start.
    EmptyRange,
    /// Buckets kept filling up under other writers for longer than any real
    /// contention explains (a bucket that never has room: an external writer broke
    /// the `count` invariant).
    Contention {
        /// The last bucket id tried.
        id: Bson,
    },
}

impl fmt::Display for BucketError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Mongo(e) => write!(f, "MongoDB: {e}"),
            Self::Serialize(e) => write!(f, "item does not serialize to BSON: {e}"),
            Self::Decode(e) => write!(f, "stored bucket does not match the model: {e}"),
            Self::ItemTime { index, path } => write!(f, "item {index} has no date at `{path}`"),
            Self::DateOutOfRange(t) => {
                write!(f, "{} is outside the years 1 to 9999 that bucket periods cover", t.timestamp_millis())
            }
            Self::SeriesKey(kind) => write!(
                f,
                "a series value of BSON type {kind} cannot be part of a string bucket id; use a string, an integer or an ObjectId"
            ),
            Self::Aggregate { field, detail } => write!(f, "aggregate `{field}`: {detail}"),
            Self::EmptyRange => f.write_str("the range ends before it starts"),
            Self::Contention { id } => write!(f, "gave up appending: bucket {id} and its successors stayed full"),
        }
    }
}

impl std::error::Error for BucketError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Mongo(e) => Some(e),
            Self::Serialize(e) => Some(e),
            Self::Decode(e) => Some(e),
            _ => None,
        }
    }
}

impl From<mongodb::error::Error> for BucketError {
    fn from(e: mongodb::error::Error) -> Self {
        Self::Mongo(e)
    }
}

impl From<bson::ser::Error> for BucketError {
    fn from(e: bson::ser::Error) -> Self {
        Self::Serialize(e)
    }
}

impl From<AppendContention> for BucketError {
    fn from(e: AppendContention) -> Self {
        Self::Contention { id: e.id }
    }
}

impl From<bson::de::Error> for BucketError {
    fn from(e: bson::de::Error) -> Self {
        Self::Decode(e)
    }
}

/// The string form of a series value, for string ids.
fn series_text(series: &Bson) -> Result<String, BucketError> {
    match series {
        Bson::String(s) => Ok(s.clone()),
        Bson::Int32(i) => Ok(i.to_string()),
        Bson::Int64(i) => Ok(i.to_string()),
        Bson::ObjectId(o) => Ok(o.to_hex()),
        other => Err(BucketError::SeriesKey(format!("{:?}", other.element_type()))),
    }
}

/// The id of a bucket.
///
/// ```
/// use docshape::bucket::{bucket_id, IdForm, Per};
/// use docshape::bson::{Bson, DateTime, doc};
///
/// let t = DateTime::parse_rfc3339_str("2026-08-05T10:07:00Z").unwrap();
/// let start = Per::Day.start(t).unwrap();
/// let s = Bson::from("sensor_9");
/// assert_eq!(bucket_id(IdForm::String, Per::Day, "sensor_id", "day", &s, start, 0).unwrap(), Bson::from("sensor_9:2026-08-05"));
/// assert_eq!(bucket_id(IdForm::String, Per::Day, "sensor_id", "day", &s, start, 2).unwrap(), Bson::from("sensor_9:2026-08-05#2"));
/// let hour = Per::Hour.start(t).unwrap();
/// assert_eq!(
///     bucket_id(IdForm::Compound, Per::Hour, "dispositivoId", "hora", &Bson::from("sensor-1"), hour, 0).unwrap(),
///     Bson::Document(doc! { "dispositivoId": "sensor-1", "hora": hour }),
/// );
/// ```
pub fn bucket_id(
    form: IdForm,
    per: Per,
    series_field: &str,
    period_field: &str,
    series: &Bson,
    start: DateTime,
    seq: u32,
) -> Result<Bson, BucketError> {
    Ok(match form {
        IdForm::String => {
            let mut id = format!("{}:{}", series_text(series)?, per.label(start)?);
            if seq > 0 {
                id.push_str(&format!("#{seq}"));
            }
            Bson::String(id)
        }
        IdForm::Compound => {
            let mut id = doc! { series_field: series.clone(), period_field: start };
            if seq > 0 {
                id.insert("seq", i64::from(seq));
            }
            Bson::Document(id)
        }
    })
}

fn period_value(spec: &BucketSpec, start: DateTime) -> Result<Bson, BucketError> {
    Ok(match spec.period_kind {
        PeriodKind::Date => Bson::DateTime(start),
        PeriodKind::Label => Bson::String(spec.per.label(start)?),
    })
}

/// The value at a dotted path of a document.
fn at_path<'d>(doc: &'d Document, path: &str) -> Option<&'d Bson> {
    let mut parts = path.split('.');
    let mut value = doc.get(parts.next()?)?;
    for part in parts {
        value = value.as_document()?.get(part)?;
    }
    Some(value)
}

fn item_time(doc: &Document, spec: &BucketSpec, index: usize) -> Result<DateTime, BucketError> {
    match at_path(doc, spec.time) {
        Some(Bson::DateTime(t)) => Ok(*t),
        _ => Err(BucketError::ItemTime { index, path: spec.time }),
    }
}

/// A number as f64, or a date as its milliseconds, for comparisons.
fn ordinal(value: &Bson) -> Option<f64> {
    match value {
        Bson::Int32(i) => Some(f64::from(*i)),
        Bson::Int64(i) => Some(*i as f64),
        Bson::Double(d) if !d.is_nan() => Some(*d),
        Bson::DateTime(t) => Some(t.timestamp_millis() as f64),
        _ => None,
    }
}

fn convert(value: &Bson, ty: AggregateType, field: &'static str) -> Result<Bson, BucketError> {
    let bad = |detail: String| BucketError::Aggregate { field, detail };
    match (ty, value) {
        (AggregateType::Date, Bson::DateTime(_)) => Ok(value.clone()),
        (AggregateType::Date, other) => Err(bad(format!("expected a date, found {other}"))),
        (AggregateType::Double, v) => match v {
            Bson::Int32(i) => Ok(Bson::Double(f64::from(*i))),
            Bson::Int64(i) => Ok(Bson::Double(*i as f64)),
            Bson::Double(d) => Ok(Bson::Double(*d)),
            other => Err(bad(format!("expected a number, found {other}"))),
        },
        (AggregateType::Int32 | AggregateType::Int64, v) => {
            let i: i64 = match v {
                Bson::Int32(i) => i64::from(*i),
                Bson::Int64(i) => *i,
                other => return Err(bad(format!("expected an integer, found {other}"))),
            };
            if ty == AggregateType::Int64 {
                Ok(Bson::Int64(i))
            } else {
                i32::try_from(i).map(Bson::Int32).map_err(|_| bad(format!("{i} does not fit in an int32")))
            }
        }
    }
}

/// `$inc`/`$min`/`$max` for the aggregates over `items`.
fn aggregate_update(spec: &BucketSpec, items: &[Bson]) -> Result<Document, BucketError> {
    let (mut inc, mut min, mut max) = (Document::new(), Document::new(), Document::new());
    for a in spec.aggregates {
        let values: Vec<&Bson> = items
            .iter()
            .map(|d| {
                d.as_document().and_then(|d| at_path(d, a.of)).ok_or_else(|| BucketError::Aggregate {
                    field: a.field,
                    detail: format!("an item has no `{}`", a.of),
                })
            })
            .collect::<Result<_, _>>()?;
        match a.op {
            AggregateOp::Sum => {
                let sum = match a.ty {
                    AggregateType::Double => {
                        let mut s = 0.0;
                        for v in &values {
                            s += convert(v, AggregateType::Double, a.field)?.as_f64().unwrap_or(0.0);
                        }
                        Bson::Double(s)
                    }
                    ty => {
                        let mut s: i64 = 0;
                        for v in &values {
                            let i = match convert(v, AggregateType::Int64, a.field)? {
                                Bson::Int64(i) => i,
                                _ => 0,
                            };
                            s = s.checked_add(i).ok_or_else(|| BucketError::Aggregate {
                                field: a.field,
                                detail: "the sum overflows".into(),
                            })?;
                        }
                        convert(&Bson::Int64(s), ty, a.field)?
                    }
                };
                inc.insert(a.field, sum);
            }
            AggregateOp::Min | AggregateOp::Max => {
                let mut best: Option<(&Bson, f64)> = None;
                for v in &values {
                    let o = ordinal(v).ok_or_else(|| BucketError::Aggregate {
                        field: a.field,
                        detail: format!("`{v}` is not a number or a date"),
                    })?;
                    let better = match best {
                        None => true,
                        Some((_, b)) => {
                            (a.op == AggregateOp::Min && o < b) || (a.op == AggregateOp::Max && o > b)
                        }
                    };
                    if better {
                        best = Some((v, o));
                    }
                }
                if let Some((v, _)) = best {
                    let target = if a.op == AggregateOp::Min { &mut min } else { &mut max };
                    target.insert(a.field, convert(v, a.ty, a.field)?);
                }
            }
        }
    }
    let mut out = Document::new();
    for (op, d) in [("$inc", inc), ("$min", min), ("$max", max)] {
        if !d.is_empty() {
            out.insert(op, d);
        }
    }
    Ok(out)
}

/// Appends one item to its bucket: one `update` command in the common case.
pub async fn append<B: Bucket>(
    db: &Database,
    series: &B::Series,
    item: &B::Item,
) -> Result<Appended, BucketError> {
    append_many::<B>(db, series, std::slice::from_ref(item)).await
}

/// Appends items, grouped by period: one `update` per bucket they fill in the common
/// case, whatever their number. Items keep their order within a period.
pub async fn append_many<B: Bucket>(
    db: &Database,
    series: &B::Series,
    items: &[B::Item],
) -> Result<Appended, BucketError> {
    let spec = &B::BUCKET;
    let series_bson = bson::to_bson(series)?;
    if spec.id == IdForm::String {
        series_text(&series_bson)?;
    }
    // Group by period, in the order periods first appear.
    let mut groups: Vec<(DateTime, Vec<Bson>)> = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let doc = bson::to_document(item)?;
        let start = spec.per.start(item_time(&doc, spec, index)?)?;
        match groups.iter_mut().find(|(s, _)| *s == start) {
            Some((_, g)) => g.push(Bson::Document(doc)),
            None => groups.push((start, vec![Bson::Document(doc)])),
        }
    }
    let collection = db.collection::<Document>(B::COLLECTION);
    let mut report = Appended::default();
    for (start, docs) in groups {
        let base = bucket_id(spec.id, spec.per, spec.series, spec.period, &series_bson, start, 0)?;
        let id_of = |seq: u32| {
            bucket_id(spec.id, spec.per, spec.series, spec.period, &series_bson, start, seq)
                .unwrap_or_else(|_| base.clone())
        };
        let extra = |chunk: &[Bson]| aggregate_update(spec, chunk);
        let run = GuardedAppend {
            collection: collection.clone(),
            hint_key: format!("{}\u{0}{}\u{0}{base}", db.name(), B::COLLECTION),
            id_of: &id_of,
            on_insert: doc! { spec.series: series_bson.clone(), spec.period: period_value(spec, start)? },
            items_field: spec.items,
            count_field: spec.count,
            max: spec.max,
            extra: &extra,
        };
        run.run(docs, &mut report).await?;
    }
    Ok(report)
}

/// The filter on the buckets of `series` whose period overlaps `[from, to)`.
pub fn range_filter<B: Bucket>(
    series: &B::Series,
    from: DateTime,
    to: DateTime,
) -> Result<Document, BucketError> {
    let spec = &B::BUCKET;
    if to < from {
        return Err(BucketError::EmptyRange);
    }
    let first = spec.per.start(from)?;
    let last = spec
        .per
        .start(DateTime::from_millis(to.timestamp_millis().saturating_sub(1).max(from.timestamp_millis())))?;
    let series = bson::to_bson(series)?;
    Ok(doc! {
        spec.series: series,
        spec.period: { "$gte": period_value(spec, first)?, "$lte": period_value(spec, last)? },
    })
}

/// The buckets of `series` whose period overlaps `[from, to)`, in period order (and
/// sequence order within a period).
pub async fn buckets_in<B: Bucket>(
    db: &Database,
    series: &B::Series,
    from: DateTime,
    to: DateTime,
) -> Result<Vec<B>, BucketError> {
    let spec = &B::BUCKET;
    let filter = range_filter::<B>(series, from, to)?;
    let docs: Vec<Document> = db
        .collection::<Document>(B::COLLECTION)
        .find(filter)
        .sort(doc! { spec.period: 1, "_id": 1 })
        .await?
        .try_collect()
        .await?;
    docs.into_iter().map(|d| bson::from_document(d).map_err(BucketError::from)).collect()
}

/// The items of `series` with `from <= time < to`, in time order (ties keep their
/// append order). Reads only the buckets whose period overlaps the window, through
/// the `{series, period}` index.
pub async fn read_range<B: Bucket>(
    db: &Database,
    series: &B::Series,
    from: DateTime,
    to: DateTime,
) -> Result<Vec<B::Item>, BucketError> {
    let spec = &B::BUCKET;
    let filter = range_filter::<B>(series, from, to)?;
    let mut cursor = db
        .collection::<Document>(B::COLLECTION)
        .find(filter)
        .projection(doc! { spec.items: 1, spec.period: 1 })
        .sort(doc! { spec.period: 1, "_id": 1 })
        .await?;
    let mut hits: Vec<(DateTime, Document)> = Vec::new();
    while let Some(bucket) = cursor.try_next().await? {
        for (index, item) in bucket.get_array(spec.items).into_iter().flatten().enumerate() {
            let Bson::Document(item) = item else { continue };
            let t = item_time(item, spec, index)?;
            if from <= t && t < to {
                hits.push((t, item.clone()));
            }
        }
    }
    // Stable: equal times keep bucket and array order, which is append order.
    hits.sort_by_key(|(t, _)| *t);
    hits.into_iter().map(|(_, d)| bson::from_document(d).map_err(BucketError::from)).collect()
}

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

    #[test]
    fn aggregates_write_the_declared_types() {
        const AGGS: &[Aggregate] = &[
            Aggregate { field: "sum", op: AggregateOp::Sum, of: "v", ty: AggregateType::Double },
            Aggregate { field: "n", op: AggregateOp::Sum, of: "n", ty: AggregateType::Int32 },
            Aggregate { field: "lo", op: AggregateOp::Min, of: "v", ty: AggregateType::Double },
            Aggregate { field: "last", op: AggregateOp::Max, of: "t", ty: AggregateType::Date },
        ];
        let spec = BucketSpec {
            series: "s",
            period: "p",
            period_kind: PeriodKind::Date,
            per: Per::Day,
            max: 10,
            items: "items",
            time: "t",
            count: "count",
            id: IdForm::String,
            aggregates: AGGS,
        };
        let items = vec![
            Bson::Document(doc! { "t": DateTime::from_millis(5), "v": 2_i32, "n": 1_i32 }),
            Bson::Document(doc! { "t": DateTime::from_millis(9), "v": 0.5, "n": 2_i32 }),
        ];
        let u = aggregate_update(&spec, &items).unwrap();
        assert_eq!(
            u,
            doc! {
                "$inc": { "sum": 2.5, "n": 3_i32 },
                "$min": { "lo": 0.5 },
                "$max": { "last": DateTime::from_millis(9) },
            }
        );
        let bad = vec![Bson::Document(doc! { "t": DateTime::from_millis(5), "v": "x", "n": 1_i32 })];
        assert!(matches!(aggregate_update(&spec, &bad), Err(BucketError::Aggregate { field: "sum", .. })));
    }
}
