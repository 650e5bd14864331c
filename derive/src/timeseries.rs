//! `#[model(timeseries(time = t, meta = m, granularity = "...", expire_after = "..."))]`:
//! a collection the server buckets itself (MongoDB 5.0 and newer). Parse the options,
//! check what the server refuses or makes slow on such a collection (each with its
//! fix), and expand into `Model::TIMESERIES`, the meta/time index the rows are served
//! by, and the design-decision row that says why not a `#[bucket]`.

use darling::error::Accumulator;
use darling::Error;
use proc_macro2::{Span, TokenStream};
use quote::quote;

use crate::ast::Field;
use crate::common::duration::parse_duration;
use crate::common::expansion::Expansion;
use crate::common::fields::field;
use crate::common::message::{did_you_mean, rule};
use crate::common::respan::respan;
use crate::common::types::{classify, Kind};
use crate::facts::Facts;
use crate::index::{IndexDef, Key, KeyKind};

/// The granularities the server takes, coarsest last.
const GRANULARITIES: &[&str] = &["seconds", "minutes", "hours"];

/// The longest bucket span the server takes (`bucketMaxSpanSeconds`): one year.
const MAX_SPAN: u64 = 31_536_000;

/// A checked `timeseries(...)`; `None` when the model declares none (or it is
/// malformed, with its errors pushed).
pub(crate) struct Parsed<'a>(Option<Def<'a>>);

struct Def<'a> {
    time: &'a Field,
    meta: Option<&'a Field>,
    granularity: Option<String>,
    bucket_span: Option<u64>,
    expire_after: Option<u64>,
    span: Span,
}

impl Def<'_> {
    fn time_name(&self) -> &str {
        self.time.name.as_deref().unwrap_or_default()
    }

    fn meta_name(&self) -> Option<&str> {
        self.meta.and_then(|m| m.name.as_deref())
    }

    /// Whether `path` is the meta field or a path inside it: the only field an update
    /// may filter on or write.
    fn in_meta(&self, path: &str) -> bool {
        self.meta_name()
            .is_some_and(|m| path == m || path.strip_prefix(m).is_some_and(|r| r.starts_with('.')))
    }
}

/// Reads the options and the fields they name.
pub(crate) fn parse<'a>(cx: &'a Facts, errors: &mut Accumulator) -> Parsed<'a> {
    let Some(opts) = cx.model.as_ref().and_then(|m| m.timeseries.as_ref()) else { return Parsed(None) };
    let span = opts.span();
    if cx.polymorphic.is_some() {
        errors.push(
            Error::custom("a time-series collection is declared on a struct: the server reads every reading's `time` and `meta` by one name; store the variants as a field of one struct, or use a plain collection")
                .with_span(&span),
        );
        return Parsed(None);
    }
    let c = &cx.container;
    let time = errors.handle(field(c, &opts.time, "time-series `time`"));
    if let Some(t) = time {
        if t.name.as_deref() == Some("_id") {
            errors.push(
                Error::custom("the `time` of a reading is a `DateTime` field of its own, not `_id`")
                    .with_span(&opts.time.span),
            );
        }
    }
    let meta = opts.meta.as_ref().and_then(|m| errors.handle(field(c, m, "time-series `meta`")));
    if let (Some(m), Some(name)) = (meta, &opts.meta) {
        if m.name.as_deref() == Some("_id") || time.is_some_and(|t| std::ptr::eq(t, m)) {
            errors.push(
                Error::custom("`meta` names the series (a sensor, a device): a field of its own, neither `_id` nor the `time` field")
                    .with_span(&name.span),
            );
        } else if classify(&m.recv.ty) == Kind::Float || spelled_date(&m.recv.ty) {
            errors.push(Error::custom(rule("timeseries_meta", format!(
                "`{}` changes with every reading, so as `meta` the server would open a bucket per reading; `meta` is what stays the same across a series (a sensor id, a device and its site): keep this value among the measurements and name the series field as `meta`",
                name.value
            ))).with_span(&name.span));
        }
    }
    let granularity = opts.granularity.as_ref().and_then(|g| {
        let value = g.value();
        if GRANULARITIES.contains(&value.as_str()) {
            return Some(value);
        }
        let hint = did_you_mean(&value, GRANULARITIES)
            .map(|s| format!("did you mean `{s}`?"))
            .unwrap_or_else(|| {
                "the server takes `seconds`, `minutes` or `hours`, the interval between a series' readings"
                    .to_owned()
            });
        errors
            .push(Error::custom(format!("`{value}` is not a time-series granularity; {hint}")).with_span(g));
        None
    });
    let bucket_span = opts.bucket_span.as_ref().and_then(|s| {
        let secs = errors.handle(parse_duration(s))?;
        if secs == 0 || secs > MAX_SPAN {
            errors.push(
                Error::custom("`bucket_span` is between 1 second and 365 days (the server's `bucketMaxSpanSeconds`)")
                    .with_span(s),
            );
            return None;
        }
        if let Some(g) = &opts.granularity {
            errors.push(
                Error::custom("`granularity` and `bucket_span` both set the span of the server's buckets: keep one (`granularity` for `seconds`/`minutes`/`hours`, `bucket_span` for an exact span)")
                    .with_span(g),
            );
        }
        Some(secs)
    });
    let expire_after = opts.expire_after.as_ref().and_then(|e| match errors.handle(parse_duration(e)) {
        Some(0) => {
            errors.push(Error::custom("`expire_after = \"0\"` would delete every reading as it is written: say how long a reading is kept, like \"30d\", or leave `expire_after` out to keep them").with_span(e));
            None
        }
        other => other,
    });
    let Some(time) = time else { return Parsed(None) };
    Parsed(Some(Def { time, meta, granularity, bucket_span, expire_after, span }))
}

/// Whether the type is spelled as a date (`DateTime`, `bson::DateTime`, ...).
fn spelled_date(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "DateTime" || s.ident == "SystemTime"))
}

/// The meta/time index the rows are served by: the one mongod 6.3 and newer builds with
/// the collection (`sync` leaves it alone whatever its name, and builds it on servers
/// that do not). Without a `meta`, the time alone.
pub(crate) fn add_index(parsed: &Parsed, index: &mut crate::index::Parsed) {
    let Some(d) = &parsed.0 else { return };
    let time = d.time_name().to_owned();
    let mut keys = Vec::new();
    if let (Some(meta), Some(m)) = (d.meta_name(), d.meta) {
        keys.push(Key { path: meta.to_owned(), kind: KeyKind::Asc, span: m.span });
    }
    keys.push(Key { path: time, kind: KeyKind::Asc, span: d.time.span });
    let served = index.indexes.iter().any(|i| {
        i.keys.len() >= keys.len()
            && i.keys.iter().zip(&keys).all(|(a, b)| a.path == b.path && a.kind.is_ordered())
    });
    if served {
        return;
    }
    let name = keys.iter().map(|k| format!("{}_1", k.path)).collect::<Vec<_>>().join("_");
    index.indexes.push(IndexDef::added(keys, name, d.span));
}

/// What the server refuses or makes slow on a time-series collection, each under the
/// tokens that ask for it: unique and TTL indexes, rows by `_id`, updates outside the
/// meta field, upserts, soft deletes, and the patterns that rewrite whole documents.
pub(crate) fn check(
    parsed: &Parsed,
    cx: &Facts,
    index: &crate::index::Parsed,
    access: &crate::access::Parsed,
    has_bucket: bool,
    errors: &mut Accumulator,
) {
    let Some(d) = &parsed.0 else { return };
    let Some(m) = &cx.model else { return };
    if has_bucket {
        errors.push(Error::custom(rule("timeseries_bucket", "a model is a time-series collection or a `#[bucket]`, not both: the server already groups readings into buckets; keep `timeseries(...)` and store one reading per document, or keep `#[bucket]` and a plain collection".to_owned())).with_span(&d.span));
    }
    if let Some(v) = &m.version {
        errors.push(Error::custom(rule("timeseries_update", "a versioned model upgrades old documents by rewriting them by `_id`, which a time-series collection refuses (updates match and write the `meta` field only); migrate readings by copying them into a new collection, and leave `version` out".to_owned())).with_span(v));
    }
    if let Some(field) = &m.soft_delete {
        errors.push(Error::custom(rule("timeseries_update", format!("a soft delete sets `{field}` by an update matched on `_id`, which a time-series collection refuses (updates match and write the `meta` field only); let `expire_after` remove old readings, and leave `soft_delete` out"))).with_span(field));
    }
    for i in &index.indexes {
        if let Some(unique) = i.unique {
            errors.push(Error::custom(rule("timeseries_unique", format!(
                "index `{}` is unique, and the server refuses unique indexes on a time-series collection (it stores readings in buckets, not one document each); drop `unique`, and deduplicate readings before inserting them",
                i.name
            ))).with_span(&unique));
        }
        if i.ttl.is_some() {
            errors.push(Error::custom(rule("timeseries_ttl", format!(
                "index `{}` expires documents, which a time-series collection does by its own `expire_after`: write `timeseries(..., expire_after = \"30d\")` and drop the index's `expire_after`",
                i.name
            ))).with_span(&i.span));
        }
    }
    // Copies are refreshed and outliers pushed by updates that match on `_id` or on
    // the reference, which the server refuses outside the meta field; and readings go
    // in through `insert_many`, which fills no copy.
    for f in crate::common::paths::stored_fields(&cx.container) {
        for a in &f.recv.attrs {
            let what = if a.path().is_ident("denormalized") {
                "a denormalized copy is filled by docshape's inserts and refreshed by updates matched on its reference, but readings go in through `timeseries::insert_many`, which fills none, and the server refuses updates outside the meta field on a time-series collection; store the value itself in each reading, or keep the series' details in a model of their own, referenced from `meta`"
            } else if a.path().is_ident("outlier") {
                "an outlier array is pushed to by updates matched on `_id`, which the server refuses on a time-series collection; store one reading per document instead of an array"
            } else {
                continue;
            };
            errors.push(Error::custom(rule("timeseries_update", what.to_owned())).with_span(&a.path()));
        }
    }
    let meta_hint = match d.meta_name() {
        Some(meta) => format!("the meta field `{meta}`"),
        None => "the meta field (this model declares no `meta`)".to_owned(),
    };
    for a in &access.patterns {
        if a.index.as_deref() == Some("_id_") {
            errors.push(Error::custom(rule("timeseries_id", format!(
                "access pattern `{}` reads by `_id`, but mongod keeps no `_id` index on a time-series collection, so it would scan every bucket; read by {meta_hint} and a `range({})`",
                a.name, d.time_name()
            ))).with_span(&a.span));
        }
        if let Some(u) = &a.upsert {
            errors.push(Error::custom(rule("timeseries_update", format!(
                "access pattern `{}` is an upsert, which the server refuses on a time-series collection; insert readings with `insert_many` instead",
                a.name
            ))).with_span(&u.span));
        }
        let Some(w) = &a.update else { continue };
        for (path, span) in a.filter.iter().chain(&a.range) {
            if !d.in_meta(path) {
                errors.push(Error::custom(rule("timeseries_update", format!(
                    "write row `{}` filters on `{path}`, but an update on a time-series collection can only match on {meta_hint}; filter on it alone, or read and re-insert the readings",
                    a.name
                ))).with_span(span));
            }
        }
        for (_, path, span) in &w.ops {
            if !d.in_meta(path) {
                errors.push(Error::custom(rule("timeseries_update", format!(
                    "write row `{}` writes `{path}`, but an update on a time-series collection can only write {meta_hint}; a reading's measurements are written once, by `insert_many`",
                    a.name
                ))).with_span(span));
            }
        }
    }
    for item in m.shard_key.iter().flat_map(|l| &l.items) {
        if !(d.in_meta(&item.path) || item.path == d.time_name()) {
            errors.push(
                Error::custom(rule(
                    "timeseries_shard_key",
                    format!(
                "a time-series collection is sharded on {meta_hint} and its `time` only; `{}` is neither",
                item.path
            ),
                ))
                .with_span(&item.span),
            );
        }
    }
}

/// `Model::TIMESERIES`, the compile-time check of the time field's type, and the
/// design-decision row.
pub(crate) fn expand(parsed: &Parsed) -> Expansion {
    let Some(d) = &parsed.0 else { return Expansion::default() };
    let time = d.time_name();
    let meta = opt(d.meta_name().map(|m| quote!(#m)));
    let granularity = opt(d.granularity.as_deref().map(|g| match g {
        "seconds" => quote!(__ds::Granularity::Seconds),
        "minutes" => quote!(__ds::Granularity::Minutes),
        _ => quote!(__ds::Granularity::Hours),
    }));
    let span = opt(d.bucket_span.map(|s| quote!(#s)));
    let expire = opt(d.expire_after.map(|s| quote!(#s)));
    let model = quote! {
        const TIMESERIES: ::core::option::Option<__ds::TimeSeries> = ::core::option::Option::Some(__ds::TimeSeries {
            time: #time, meta: #meta, granularity: #granularity, bucket_span: #span, expire_after: #expire,
        });
    };
    let ty = &d.time.recv.ty;
    let bound = respan(quote!(__ds::SeriesTime), d.time.span);
    let items = quote! {
        const _: fn() = || {
            fn __time<__T: ?::core::marker::Sized + #bound>() {}
            __time::<#ty>();
        };
    };
    let meta_name = d.meta_name().unwrap_or_default();
    let row = quote! {
        __ds::Relation {
            field: #time, kind: __ds::RelationKind::TimeSeries, target: #meta_name, many: true,
            bound: ::core::option::Option::None, refresh: ::core::option::Option::None,
            via: ::core::option::Option::None, reason: ::core::option::Option::None,
            split: ::core::option::Option::None,
        }
    };
    Expansion { model, relations: vec![row], ..Expansion::items(items) }
}

fn opt(t: Option<TokenStream>) -> TokenStream {
    match t {
        Some(t) => quote!(::core::option::Option::Some(#t)),
        None => quote!(::core::option::Option::None),
    }
}
