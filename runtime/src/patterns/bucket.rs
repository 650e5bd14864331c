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

mod append;
mod error;
mod period;
mod read;
mod spec;

pub use crate::core::append::Appended;
pub use append::{append, append_many, bucket_id, resume};
pub use error::{BucketError, Incomplete};
pub use period::{Per, PeriodField, PeriodKind, TimeField};
pub use read::{buckets_in, range_filter, read_range};
pub use spec::{Aggregate, AggregateField, AggregateOp, AggregateType, Bucket, BucketSpec, IdForm, SumField};
