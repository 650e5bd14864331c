//! Reading a range of periods back.

use std::ops::Bound;

use crate::core::access::literal::Literal;
use crate::core::bson_compat;
use bson::{doc, Bson, DateTime, Document};
use futures_util::TryStreamExt;
use mongodb::Database;

use super::append::{item_time, period_value};
use super::error::BucketError;
use super::spec::{Bucket, BucketSpec};

/// A stored bucket's items: an array of documents, or a [`BucketError::CorruptBucket`]
/// (missing, another type, or holding something that is not a document). Never an
/// empty answer for a bucket that has items, never a skipped element.
pub(super) fn bucket_items<'d>(
    bucket: &'d Document,
    spec: &BucketSpec,
) -> Result<Vec<&'d Document>, BucketError> {
    let corrupt = |detail: String| BucketError::CorruptBucket {
        id: Box::new(bucket.get("_id").cloned().unwrap_or(Bson::Null)),
        detail,
    };
    let items = match bucket.get(spec.items) {
        Some(Bson::Array(a)) => a,
        Some(other) => {
            return Err(corrupt(format!("`{}` is {:?}, not an array", spec.items, other.element_type())))
        }
        None => return Err(corrupt(format!("no `{}` array", spec.items))),
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            Bson::Document(d) => Ok(d),
            other => Err(corrupt(format!("`{}.{i}` is {:?}, not an item", spec.items, other.element_type()))),
        })
        .collect()
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
    // Under `$eq`: a series that writes as a document or a regex is compared, never
    // read as operators or a pattern.
    let series = Literal::of(series)?.eq();
    let (first, last) = (period_value(spec, first)?, period_value(spec, last)?);
    let period = crate::core::access::find::range_condition(Bound::Included(&first), Bound::Included(&last));
    Ok(doc! { spec.series: series, spec.period: period.unwrap_or_default() })
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
    docs.into_iter()
        .map(|d| {
            bucket_items(&d, spec)?;
            // A versioned model's older buckets are upgraded as any read of it would.
            match B::DECODE_STORED {
                Some(decode) => decode(d).map_err(|e| BucketError::Version(Box::new(e))),
                None => bson_compat::from_document(d).map_err(BucketError::from),
            }
        })
        .collect()
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
        for (index, item) in bucket_items(&bucket, spec)?.into_iter().enumerate() {
            let t = item_time(item, spec, index)?;
            if from <= t && t < to {
                hits.push((t, item.clone()));
            }
        }
    }
    // Stable: equal times keep bucket and array order, which is append order.
    hits.sort_by_key(|(t, _)| *t);
    hits.into_iter().map(|(_, d)| bson_compat::from_document(d).map_err(BucketError::from)).collect()
}
