//! [`CollectionSpec`]: one collection as the code declares it, the unit that the
//! registry lists, `sync` applies, `check` compares and the artifacts write out.

use bson::{doc, Document};

use crate::core::index::{Index, IndexKey};
use crate::core::model::{Model, ValidationAction, ValidationLevel};

/// Everything [`sync`](fn@crate::sync) makes true of one collection.
#[derive(Debug, Clone, PartialEq)]
pub struct CollectionSpec {
    /// The collection's name.
    pub name: String,
    /// The `validator` option.
    pub validator: Document,
    /// The `validationLevel` option.
    pub validation_level: ValidationLevel,
    /// The `validationAction` option.
    pub validation_action: ValidationAction,
    /// The indexes, as `createIndexes` receives them (`{key, name, ...options}`).
    pub indexes: Vec<Document>,
    /// The shard key, when one is declared.
    pub shard_key: Option<Document>,
    /// For a time-series collection (`#[model(timeseries(...))]`), the `timeseries`
    /// and `expireAfterSeconds` options `create` receives ([`TimeSeries::create_options`]);
    /// `None` for a plain collection.
    pub timeseries: Option<Document>,
}

impl CollectionSpec {
    /// The spec a model declares.
    pub fn of<T: Model>() -> Self {
        // Every registered model instantiates this function in the crate that defines
        // it, so it only gathers the model's constants; the work is done once, below.
        Self::from_parts(
            T::COLLECTION,
            T::validator(),
            (T::VALIDATION_LEVEL, T::VALIDATION_ACTION),
            T::INDEXES,
            T::SHARD_KEY,
            T::TIMESERIES,
        )
    }

    fn from_parts(
        name: &str,
        validator: Document,
        (validation_level, validation_action): (ValidationLevel, ValidationAction),
        indexes: &[Index],
        shard_key: &[(&str, IndexKey)],
        timeseries: Option<TimeSeries>,
    ) -> Self {
        let shard_key = crate::core::index::keys_document(shard_key);
        Self {
            timeseries: timeseries.map(|t| t.create_options()),
            name: name.to_owned(),
            validator,
            validation_level,
            validation_action,
            indexes: indexes.iter().map(|i| i.to_document()).collect(),
            shard_key: (!shard_key.is_empty()).then_some(shard_key),
        }
    }
}

/// The `$jsonSchema.description` of a versioned model's validator: the schema version
/// the code that installed it writes.
pub fn schema_version_text(version: i64) -> String {
    format!("docshape schema version {version}")
}

/// The schema version a validator says it was installed for (see
/// [`schema_version_text`]); `None` for a validator without one (an unversioned model,
/// or one docshape did not write).
pub fn schema_version_of(validator: &Document) -> Option<i64> {
    let text = validator.get_document("$jsonSchema").ok()?.get_str("description").ok()?;
    text.strip_prefix("docshape schema version ")?.parse().ok()
}

/// How a time-series collection's server buckets span time: the interval between one
/// series' readings, which the server turns into a bucket span (an hour, a day, 30
/// days). It can be made coarser on an existing collection, never finer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Granularity {
    /// Readings seconds apart (buckets of an hour).
    Seconds,
    /// Readings minutes apart (buckets of a day).
    Minutes,
    /// Readings hours apart (buckets of 30 days).
    Hours,
}

impl Granularity {
    /// `"seconds"`, `"minutes"` or `"hours"`, as the server stores it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Seconds => "seconds",
            Self::Minutes => "minutes",
            Self::Hours => "hours",
        }
    }

    /// The granularity a server stored, `None` for a word docshape does not know.
    pub fn parse(text: &str) -> Option<Self> {
        [Self::Seconds, Self::Minutes, Self::Hours].into_iter().find(|g| g.as_str() == text)
    }
}

/// A time-series collection as `#[model(timeseries(time = t, meta = m, ...))]` declares
/// it: the server buckets its documents (readings) by `meta` and `time` itself
/// (MongoDB 5.0 and newer). Generated as `Model::TIMESERIES`.
///
/// ```
/// use docshape::timeseries::{Granularity, TimeSeries};
///
/// let t = TimeSeries {
///     time: "t", meta: Some("sensor"), granularity: Some(Granularity::Minutes),
///     bucket_span: None, expire_after: Some(30 * 86_400),
/// };
/// let options = t.create_options();
/// assert_eq!(options.get_document("timeseries").unwrap().get_str("metaField").unwrap(), "sensor");
/// assert_eq!(options.get_i64("expireAfterSeconds").unwrap(), 2_592_000);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimeSeries {
    /// The stored name of the reading's time (`timeField`), a `DateTime`.
    pub time: &'static str,
    /// The stored name of the series' key (`metaField`), what stays the same across
    /// one series' readings.
    pub meta: Option<&'static str>,
    /// `granularity`; `None` leaves the server's default (`seconds`) unless
    /// `bucket_span` is set.
    pub granularity: Option<Granularity>,
    /// An exact bucket span in seconds (`bucketMaxSpanSeconds` and
    /// `bucketRoundingSeconds`, MongoDB 6.3 and newer), instead of a granularity.
    pub bucket_span: Option<u64>,
    /// `expireAfterSeconds`: the server deletes a reading this long after its time.
    pub expire_after: Option<u64>,
}

impl TimeSeries {
    /// The options `create` receives: `{timeseries: {timeField, metaField,
    /// granularity | bucketMaxSpanSeconds + bucketRoundingSeconds}, expireAfterSeconds}`.
    pub fn create_options(&self) -> Document {
        let mut ts = doc! { "timeField": self.time };
        if let Some(meta) = self.meta {
            ts.insert("metaField", meta);
        }
        if let Some(g) = self.granularity {
            ts.insert("granularity", g.as_str());
        }
        if let Some(span) = self.bucket_span {
            let span = i64::try_from(span).unwrap_or(i64::MAX);
            ts.insert("bucketMaxSpanSeconds", span);
            ts.insert("bucketRoundingSeconds", span);
        }
        let mut options = doc! { "timeseries": ts };
        if let Some(secs) = self.expire_after {
            options.insert("expireAfterSeconds", i64::try_from(secs).unwrap_or(i64::MAX));
        }
        options
    }
}
