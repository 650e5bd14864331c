//! [`CollectionSpec`]: one collection as the code declares it, the unit that the
//! registry lists, `sync` applies, `check` compares and the artifacts write out.

use bson::{doc, Document};

pub use crate::core::descriptor::{CollectionSpec, Granularity, TimeSeries};
use crate::core::descriptor::{Index, IndexKey};
use crate::core::descriptor::{ValidationAction, ValidationLevel};
use crate::core::model::Model;

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
