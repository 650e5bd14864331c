//! The bucket pattern's runtime; its documentation is on [`crate::bucket`].

mod append;
mod cap;
mod error;
mod period;
mod read;
mod spec;

pub use crate::core::append::Appended;
pub use append::{append, append_many, bucket_id, resume};
pub use cap::{cap_collection_name, cap_collection_spec, cap_validator};
pub use error::{BucketError, Incomplete};
pub use period::{Per, PeriodField, PeriodKind, TimeField};
pub use read::{buckets_in, range_filter, read_range};
pub use spec::{
    Aggregate, AggregateField, AggregateOp, AggregateType, Bucket, BucketSpec, IdForm, SumField, VersionStamp,
};
