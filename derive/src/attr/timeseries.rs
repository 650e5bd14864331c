//! `#[model(timeseries(...))]` as written; the time-series pattern reads and checks it.

use darling::FromMeta;
use syn::LitStr;

use crate::attr::Name;

/// `timeseries(...)` as written.
#[derive(FromMeta, Clone)]
pub(crate) struct TimeSeriesOpts {
    pub time: Name,
    pub meta: Option<Name>,
    pub granularity: Option<LitStr>,
    pub bucket_span: Option<LitStr>,
    pub expire_after: Option<LitStr>,
}
