//! Time-series collections: `#[model(timeseries(time = t, meta = m, granularity =
//! "minutes", expire_after = "30d"))]` declares a collection the server buckets itself
//! (MongoDB 5.0 and newer). [`sync`](fn@crate::sync) creates it with these options,
//! never drops the server's own meta/time index, and refuses a plain collection of the
//! same name ([`Error::NotTimeSeries`](crate::Error::NotTimeSeries)): the options
//! cannot be added to an existing collection. [`insert_many`] writes readings in
//! batches, one command per batch the driver splits.
//!
//! The model's rows read as any model's do: the derive adds the meta/time index (the
//! one mongod 6.3 and newer builds with the collection), so a row with the meta field
//! in its filter and a range on the time is served. It refuses at compile time what the
//! server refuses or makes slow on such a collection: unique and TTL indexes, rows by
//! `_id` (mongod keeps no `_id` index there), updates that match or write outside the
//! meta field, upserts, versioning, a `meta` that changes with every reading, and a
//! shard key outside the meta and time fields.
//!
//! mongod accepts no schema validation on a time-series collection, so `sync` installs
//! no validator on one; the Rust type is what keeps the readings' shape, and
//! [`insert_many`] writes only values of it.
//!
//! Bucket or time-series? See the guide's "Buckets or a time-series collection":
//! a `#[bucket]` when the application reads one period's readings as one array, keeps
//! aggregates beside them, caps a period, or runs on a server before 5.0; a
//! time-series collection for server-side compression, expiry per reading and ad-hoc
//! aggregation over time ranges.

use bson::Document;
use mongodb::Database;
use serde::Serialize;

use crate::core::bson_compat;
use crate::core::model::Model;
pub use crate::core::spec::{Granularity, TimeSeries};
use crate::core::trace;

/// A type a time-series collection's `time` field can have: the server requires a BSON
/// date in every reading.
#[diagnostic::on_unimplemented(
    message = "a time-series collection's `time` field must be a `bson::DateTime`, not `{Self}`",
    label = "the server places each reading in a bucket by this field",
    note = "every reading needs a time, so it is not an `Option` either"
)]
pub trait SeriesTime {}

impl SeriesTime for bson::DateTime {}

/// What [`insert_many`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Inserted {
    /// How many readings the server stored.
    pub count: usize,
}

/// Why [`insert_many`] failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum TimeSeriesError {
    /// The model declares no `timeseries(...)`.
    NotTimeSeries {
        /// The model's collection.
        collection: &'static str,
    },
    /// A reading could not be serialized as a document.
    Serialize {
        /// The model's collection.
        collection: &'static str,
        /// serde's error.
        source: bson_compat::SerError,
    },
    /// The server refused some readings (the others were stored: the insert is not
    /// ordered, so one refused reading does not stop the rest).
    Refused {
        /// The model's collection.
        collection: &'static str,
        /// How many readings the server stored.
        inserted: usize,
        /// Each refused reading: its index in the slice, the server's code and message.
        refused: Vec<(usize, i32, String)>,
    },
    /// The command failed as a whole.
    Mongo {
        /// The model's collection.
        collection: &'static str,
        /// The driver's error.
        source: Box<mongodb::error::Error>,
    },
}

impl std::fmt::Display for TimeSeriesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotTimeSeries { collection } => write!(
                f,
                "`{collection}` is not declared a time-series collection: add `#[model(timeseries(time = ..., meta = ...))]`"
            ),
            Self::Serialize { collection, .. } => write!(f, "a reading for `{collection}` could not be serialized"),
            Self::Refused { collection, inserted, refused } => {
                write!(f, "`{collection}`: the server stored {inserted} reading(s) and refused {}", refused.len())?;
                if let Some((i, code, message)) = refused.first() {
                    write!(f, "; reading #{i} (code {code}): {message}")?;
                }
                Ok(())
            }
            Self::Mongo { collection, .. } => write!(f, "inserting readings into `{collection}` failed"),
        }
    }
}

impl std::error::Error for TimeSeriesError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Serialize { source, .. } => Some(source),
            Self::Mongo { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }
}

/// Inserts `readings` into `T`'s time-series collection, unordered (a refused reading
/// does not stop the others; the driver splits the slice into as few commands as the
/// server's batch limits allow), and says how many were stored.
///
/// ```no_run
/// # use docshape::{Model, bson::DateTime};
/// # use serde::{Deserialize, Serialize};
/// #[derive(Serialize, Deserialize, Model)]
/// #[model(collection = "readings", timeseries(time = t, meta = sensor, granularity = "minutes"))]
/// struct Reading { sensor: String, t: DateTime, celsius: f64 }
///
/// # async fn run(db: docshape::mongodb::Database) -> Result<(), docshape::timeseries::TimeSeriesError> {
/// let readings = vec![Reading { sensor: "sensor_9".into(), t: DateTime::now(), celsius: 21.5 }];
/// let inserted = docshape::timeseries::insert_many(&db, &readings).await?;
/// assert_eq!(inserted.count, 1);
/// # Ok(()) }
/// ```
pub async fn insert_many<T>(db: &Database, readings: &[T]) -> Result<Inserted, TimeSeriesError>
where
    T: Model + Serialize,
{
    let collection = T::COLLECTION;
    if T::TIMESERIES.is_none() {
        return Err(TimeSeriesError::NotTimeSeries { collection });
    }
    if readings.is_empty() {
        return Ok(Inserted { count: 0 });
    }
    // Step 2 of the write pipeline (an insert has no other): a reading model's
    // `#[created_at]` and `#[revision]`, as every insert sets them.
    let effects = crate::core::write::Effects::of::<T>();
    let docs = readings
        .iter()
        .map(|r| {
            bson_compat::to_document(r).map(|mut d| {
                effects.on_insert(&mut d);
                d
            })
        })
        .collect::<Result<Vec<Document>, _>>()
        .map_err(|source| TimeSeriesError::Serialize { collection, source })?;
    let total = docs.len();
    let span = trace::span!("timeseries.insert_many", collection, readings = total);
    let result = trace::in_span(span, async {
        db.collection::<Document>(collection).insert_many(docs).ordered(false).await
    })
    .await;
    match result {
        Ok(r) => Ok(Inserted { count: r.inserted_ids.len() }),
        Err(e) => match e.kind.as_ref() {
            mongodb::error::ErrorKind::InsertMany(failure) => {
                let refused: Vec<(usize, i32, String)> = failure
                    .write_errors
                    .iter()
                    .flatten()
                    .map(|w| (w.index, w.code, w.message.clone()))
                    .collect();
                if refused.is_empty() {
                    return Err(TimeSeriesError::Mongo { collection, source: Box::new(e) });
                }
                // Unordered: every reading not refused was stored.
                let inserted = total - refused.len();
                Err(TimeSeriesError::Refused { collection, inserted, refused })
            }
            _ => Err(TimeSeriesError::Mongo { collection, source: Box::new(e) }),
        },
    }
}
