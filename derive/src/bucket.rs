//! `#[bucket(...)]`: the bucket pattern. Parse the attribute, check the design (the
//! fields it names exist and have the right shapes, every other field survives an
//! upsert, a full bucket fits in its size budget), and expand into `impl Bucket`, the
//! typed `append`/`append_many`/`read_range`/`buckets_in` methods and the compile-time
//! size assertion (`runtime/src/patterns/bucket.rs` executes them).

use darling::error::Accumulator;
use darling::util::SpannedValue;
use darling::{Error, FromMeta};
use proc_macro2::{Span, TokenStream};
use quote::{quote, ToTokens};
use syn::spanned::Spanned;
use syn::{LitStr, Type};

use crate::ast::{Container, Field};
use crate::common::bounds::Bound;
use crate::common::expansion::Expansion;
use crate::common::fields::{field, Kept, Name};
use crate::common::message::{did_you_mean, rule};
use crate::common::paths;
use crate::common::respan::respan;
use crate::common::size::LIMIT;
use crate::common::types::{classify, is_option, Kind};
use crate::facts::Facts;
use crate::index::{IndexDef, Key, KeyKind};

/// A checked `#[bucket]`; `None` when the struct is no bucket (or the attribute is
/// malformed, with its errors pushed).
pub(crate) struct Parsed<'a>(Option<BucketDef<'a>>);

/// Reads `#[bucket(...)]` on the struct and its fields, and checks the fields it names.
pub(crate) fn parse<'a>(cx: &'a Facts, errors: &mut Accumulator) -> Parsed<'a> {
    Parsed(if cx.is_model() { read(&cx.container, errors) } else { None })
}

/// Checks that the named fields are distinct and that every other field survives an
/// upsert. `version_field` is a versioned model's version field, which appends write.
pub(crate) fn check(parsed: &mut Parsed, cx: &Facts, version_field: Option<&str>, errors: &mut Accumulator) {
    if let Some(b) = &parsed.0 {
        fields_rule(&cx.container, b, version_field, errors);
    }
}

/// Whether the model declares a bucket.
pub(crate) fn declared(parsed: &Parsed) -> bool {
    parsed.0.is_some()
}

/// The fields appends maintain: versioning keeps them as stored across an upgrade.
pub(crate) fn kept<'a>(parsed: &Parsed<'a>) -> Vec<Kept<'a>> {
    let Some(b) = &parsed.0 else { return Vec::new() };
    let mut out = vec![
        Kept { field: b.series, what: "the bucket's series" },
        Kept { field: b.period, what: "the bucket's period" },
        Kept { field: b.items, what: "the bucket's items" },
        Kept { field: b.count, what: "the bucket's count" },
    ];
    out.extend(b.aggregates.iter().map(|a| Kept { field: a.field, what: "a bucket aggregate" }));
    out
}

/// `impl Bucket`, its methods and the compile-time size assertion, and the bucket's
/// row of `Model::RELATIONS`. A bucket is sized from its fields as written: `cx` is
/// the context the bucket was parsed from. `stamp` is a versioned model's version
/// field, current version and whether it is a BSON long: a new bucket is created with it.
pub(crate) fn expand(parsed: &Parsed, cx: &Facts, stamp: Option<(&str, i64, bool)>) -> Expansion {
    let Some(b) = &parsed.0 else { return Expansion::default() };
    Expansion { relations: vec![row(b)], ..Expansion::items(bucket(&cx.container, b, stamp)) }
}

/// The design-decision row, on the items field: the item type, the series and period
/// that name a bucket, and how many items one holds. The attribute takes no reason.
fn row(b: &BucketDef) -> TokenStream {
    let field = b.items.name.as_deref().unwrap_or_default();
    let item_ty = &b.item_ty;
    let target = quote!(#item_ty).to_string().replace(' ', "");
    let (series, per, max) = (b.series.name.as_deref().unwrap_or_default(), &b.per, b.max);
    let cap = match b.cap {
        Some(cap) => quote!(::core::option::Option::Some(#cap)),
        None => quote!(::core::option::Option::None),
    };
    let reason = bucket_or_timeseries(b);
    quote! {
        __ds::Relation {
            field: #field, kind: __ds::RelationKind::Bucket, target: #target, many: true,
            bound: ::core::option::Option::Some(#max), refresh: ::core::option::Option::None,
            via: ::core::option::Option::None, reason: ::core::option::Option::Some(#reason),
            split: ::core::option::Option::Some(__ds::Split::Bucket { series: #series, per: #per, cap: #cap }),
        }
    }
}

/// The design-decision table's note on this bucket: what it keeps that a time-series
/// collection would not (aggregates beside the items, a cap per period), or, when it
/// keeps neither, that `timeseries(...)` would be simpler.
fn bucket_or_timeseries(b: &BucketDef) -> String {
    let mut kept = Vec::new();
    if !b.aggregates.is_empty() {
        let names: Vec<String> = b
            .aggregates
            .iter()
            .map(|a| format!("`{}`", a.field.name.as_deref().unwrap_or_default()))
            .collect();
        kept.push(format!("keeps aggregates beside the items ({})", names.join(", ")));
    }
    if let Some(cap) = b.cap {
        kept.push(format!("caps a period at {cap} items"));
    }
    if kept.is_empty() {
        "bucket: no aggregate and no cap here, so unless the application reads a period's items as one array or the server is older than 5.0, a time-series collection (`#[model(timeseries(...))]`) would be simpler: the server buckets, compresses and expires readings itself".to_owned()
    } else {
        format!(
            "bucket, not a time-series collection: it {}, which only a bucket document does",
            kept.join(" and ")
        )
    }
}

/// The periods `per` accepts.
const PERIODS: &[&str] = &["minute", "hour", "day", "week", "month"];

#[derive(FromMeta)]
struct BucketOpts {
    series: Name,
    // Optional here so that a `cap` without a period is reported as such.
    period: Option<Name>,
    per: LitStr,
    max: SpannedValue<u64>,
    items: Name,
    time: Name,
    count: Option<Name>,
    max_bytes: Option<SpannedValue<u64>>,
    cap: Option<SpannedValue<u64>>,
}

/// `#[bucket(sum = "v")]`, `min`, `max` on an aggregate field.
#[derive(FromMeta)]
struct AggregateOpts {
    sum: Option<Name>,
    min: Option<Name>,
    max: Option<Name>,
}

struct Aggregate<'a> {
    field: &'a Field,
    op: &'static str,
    of: Name,
}

/// A checked `#[bucket]`.
struct BucketDef<'a> {
    series: &'a Field,
    period: &'a Field,
    per: String,
    max: u64,
    max_span: Span,
    cap: Option<u64>,
    items: &'a Field,
    item_ty: Type,
    time: Name,
    count: &'a Field,
    id: Option<&'a Field>,
    limit: u64,
    aggregates: Vec<Aggregate<'a>>,
}

fn bucket_attrs(c: &Container) -> Vec<&syn::Attribute> {
    c.attrs.iter().filter(|a| a.path().is_ident("bucket")).collect()
}

fn read<'a>(c: &'a Container, errors: &mut Accumulator) -> Option<BucketDef<'a>> {
    let attrs = bucket_attrs(c);
    let field_attrs: Vec<(&Field, &syn::Attribute)> = paths::stored_fields(c)
        .into_iter()
        .flat_map(|f| f.recv.attrs.iter().filter(|a| a.path().is_ident("bucket")).map(move |a| (f, a)))
        .collect();
    if attrs.is_empty() {
        for (_, a) in field_attrs {
            errors.push(
                Error::custom("`#[bucket(sum | min | max = ...)]` on a field declares an aggregate of a bucket; put `#[bucket(series = ..., ...)]` on the struct first")
                    .with_span(&a.path().span()),
            );
        }
        return None;
    }
    for extra in attrs.iter().skip(1) {
        errors.push(
            Error::custom("a struct is one bucket: keep one `#[bucket(...)]`")
                .with_span(&extra.path().span()),
        );
    }
    let opts = errors.handle(BucketOpts::from_meta(&attrs[0].meta))?;
    if !c.generics.params.is_empty() {
        errors.push(
            Error::custom(
                "a bucket cannot be generic: its size and its item type must be known where it is declared",
            )
            .with_span(&c.generics.span()),
        );
        return None;
    }
    let per = opts.per.value();
    if !PERIODS.contains(&per.as_str()) {
        let hint = did_you_mean(&per, PERIODS)
            .map(|p| format!("did you mean `{p}`?"))
            .unwrap_or_else(|| "a bucket covers a `minute`, `hour`, `day`, `week` or `month`, in UTC".into());
        errors.push(Error::custom(format!("`{per}` is not a bucket period; {hint}")).with_span(&opts.per));
    }
    let max = *opts.max;
    if max == 0 {
        errors.push(
            Error::custom("`max = 0`: a bucket holds at least one item; say how many one bucket holds, like `max = 1440` for a reading a minute in a day bucket")
                .with_span(&opts.max.span()),
        );
    } else if max > i32::MAX as u64 {
        errors.push(
            Error::custom("`max` is stored as the `count` bound, an int32: at most 2147483647")
                .with_span(&opts.max.span()),
        );
    }
    let limit = match &opts.max_bytes {
        Some(b) if **b == 0 || **b > LIMIT => {
            errors.push(
                Error::custom(format!(
                    "`max_bytes` is a budget below MongoDB's 16 MB document limit: between 1 and {LIMIT}"
                ))
                .with_span(&b.span()),
            );
            LIMIT
        }
        Some(b) => **b,
        None => LIMIT,
    };

    let cap = match &opts.cap {
        Some(n) if **n == 0 => {
            errors.push(
                Error::custom("`cap = 0` would refuse every append: a cap is the most items one series keeps per period, like `cap = 500` for at most 500 a day; remove `cap` for no limit")
                    .with_span(&n.span()),
            );
            None
        }
        Some(n) if **n > u64::from(u32::MAX) => {
            errors.push(
                Error::custom(format!("`cap` is at most {} items per period", u32::MAX)).with_span(&n.span()),
            );
            None
        }
        Some(n) => Some(**n),
        None => None,
    };
    let series = errors.handle(field(c, &opts.series, "series"));
    let period = match &opts.period {
        Some(p) => errors.handle(field(c, p, "period")),
        None => {
            // A cap counts the items of one period: without a period it has nothing to
            // count, so the error names the cap rather than a missing key alone.
            let error = match &opts.cap {
                Some(n) => Error::custom(format!(
                    "`cap = {}` bounds the items of one series in one period: name the bucket's period field with `period = ...` (and its length with `per`)",
                    **n
                ))
                .with_span(&n.span()),
                None => Error::missing_field("period").with_span(&attrs[0].path().span()),
            };
            errors.push(error);
            None
        }
    };
    let items = errors.handle(field(c, &opts.items, "items"));
    let count_name =
        opts.count.clone().unwrap_or_else(|| Name { value: "count".into(), span: attrs[0].path().span() });
    let count = match field(c, &count_name, "count") {
        Ok(f) => Some(f),
        Err(e) if opts.count.is_none() => {
            errors.push(
                Error::custom(format!("a bucket keeps its item count in a field; `{}` has no `count` field: add one (`count: i32`) or name yours with `count = ...`", c.ident))
                    .with_span(&attrs[0].path().span()),
            );
            drop(e);
            None
        }
        Err(e) => {
            errors.push(e);
            None
        }
    };

    let mut item_ty = None;
    if let Some(items) = items {
        let fixed = matches!(&items.recv.ty, Type::Array(_));
        let (elem, _) = crate::common::types::element(&items.recv.ty);
        if classify(&items.recv.ty) != Kind::Array || fixed || items.serde.with.is_some() {
            let ty = &items.recv.ty;
            errors.push(
                Error::custom(format!(
                    "the bucket's items must be a growable array, like `Vec<Reading>`; `{}` is `{}`",
                    opts.items.value,
                    quote!(#ty).to_string().replace(' ', "")
                ))
                .with_span(&opts.items.span),
            );
        } else if let Some(elem) = elem {
            item_ty = Some(elem);
        } else {
            errors.push(
                Error::custom("the bucket's items must be typed (`Vec<Reading>`), so their size and time can be checked")
                    .with_span(&opts.items.span),
            );
        }
        if let Some(m) = &items.recv.max_items {
            if **m != max {
                errors.push(
                    Error::custom(format!(
                        "the items array is bounded by the bucket's `max = {max}`; remove this `max_items`"
                    ))
                    .with_span(&m.span()),
                );
            }
        }
    }
    if let Some(count) = count {
        if !matches!(classify(&count.recv.ty), Kind::Int { .. }) || is_option(&count.recv.ty) {
            errors.push(
                Error::custom(format!(
                    "the bucket's count `{}` must be an integer field, like `count: i32`",
                    count_name.value
                ))
                .with_span(&count_name.span),
            );
        }
    }
    if let (Some(period), Some(named)) = (period, &opts.period) {
        if is_option(&period.recv.ty) {
            errors.push(
                Error::custom("the period field is set when a bucket is created: it cannot be an `Option`")
                    .with_span(&named.span),
            );
        }
    }
    let id = paths::stored_fields(c).into_iter().find(|f| f.name.as_deref() == Some("_id"));

    // Aggregates.
    let mut aggregates = Vec::new();
    for (f, attr) in field_attrs {
        let Some(a) = errors.handle(AggregateOpts::from_meta(&attr.meta)) else { continue };
        let ops: Vec<(&'static str, Name)> = [("sum", a.sum), ("min", a.min), ("max", a.max)]
            .into_iter()
            .filter_map(|(op, n)| n.map(|n| (op, n)))
            .collect();
        match ops.as_slice() {
            [(op, of)] => aggregates.push(Aggregate { field: f, op, of: of.clone() }),
            _ => errors.push(
                Error::custom("an aggregate field keeps one of `sum = \"v\"`, `min = \"v\"` or `max = \"v\"` (the item field it is computed from)")
                    .with_span(&attr.path().span()),
            ),
        }
    }

    let (Some(series), Some(period), Some(items), Some(count), Some(item_ty)) =
        (series, period, items, count, item_ty)
    else {
        return None;
    };
    Some(BucketDef {
        series,
        period,
        per,
        max,
        max_span: opts.max.span(),
        cap,
        items,
        item_ty,
        time: opts.time,
        count,
        id,
        limit,
        aggregates,
    })
}

/// The named fields are different fields, and every other field can be absent from a
/// new bucket (the `bucket_fields` rule).
fn fields_rule(c: &Container, def: &BucketDef, version_field: Option<&str>, errors: &mut Accumulator) {
    let named = [(def.series, "series"), (def.period, "period"), (def.items, "items"), (def.count, "count")];
    for (i, (a, what)) in named.iter().enumerate() {
        for (b, other) in &named[i + 1..] {
            if std::ptr::eq(*a, *b) {
                errors.push(
                    Error::custom(format!(
                        "the {what} and the {other} are both `{}`: they are different fields",
                        a.name.as_deref().unwrap_or_default()
                    ))
                    .with_span(&a.span),
                );
            }
        }
    }
    // Every other field must be absent from a new bucket without breaking it: the
    // upsert creates buckets with only the fields it sets.
    for f in paths::stored_fields(c) {
        let maintained = named.iter().any(|(m, _)| std::ptr::eq(*m, f))
            || def.id.is_some_and(|i| std::ptr::eq(i, f))
            || def.aggregates.iter().any(|a| std::ptr::eq(a.field, f))
            || (version_field.is_some() && f.name.as_deref() == version_field)
            // The stamps: every append sets them (the runtime's write pipeline).
            || crate::common::fields::stamp_of(f).is_some();
        if maintained || f.serde.skip_serializing_if.is_some() {
            continue;
        }
        let name = f.name.as_deref().unwrap_or_default();
        let message = if f.serde.flatten.is_some() {
            "a bucket cannot flatten a type into itself: appends create buckets with only the fields they maintain".to_owned()
        } else {
            format!("bucket field `{name}` is not written by appends, so a new bucket would lack it and fail its validator; remove it, make it an aggregate (`#[bucket(sum = \"...\")]`), or make it `Option<...>` with `#[serde(skip_serializing_if = \"Option::is_none\")]`")
        };
        errors.push(Error::custom(rule("bucket_fields", message)).with_span(&f.span));
    }
}

/// The `{series: 1, period: 1}` index range reads use, unless an index already starts
/// with those keys.
pub(crate) fn add_index(parsed: &Parsed, index: &mut crate::index::Parsed) {
    let Some(b) = &parsed.0 else { return };
    let indexes = &mut index.indexes;
    let (series, period) =
        (b.series.name.clone().unwrap_or_default(), b.period.name.clone().unwrap_or_default());
    let served = indexes.iter().any(|i| {
        i.partial.is_none()
            && i.keys.len() >= 2
            && i.keys[0].path == series
            && i.keys[1].path == period
            && i.keys[..2].iter().all(|k| k.kind.is_ordered())
    });
    if served {
        return;
    }
    let keys = vec![
        Key { path: series.clone(), kind: KeyKind::Asc, span: b.series.span },
        Key { path: period.clone(), kind: KeyKind::Asc, span: b.period.span },
    ];
    indexes.push(IndexDef::added(keys, format!("{series}_1_{period}_1"), b.series.span));
}

/// The validator learns the bucket's bounds: `maxItems` on the items, `count` between
/// 0 and `max`.
pub(crate) fn bounds(parsed: &Parsed) -> Vec<Bound> {
    let Some(b) = &parsed.0 else { return Vec::new() };
    vec![
        Bound {
            field: b.items.name.clone(),
            span: b.max_span,
            max_items: Some(b.max),
            minimum: None,
            maximum: None,
        },
        Bound {
            field: b.count.name.clone(),
            span: b.max_span,
            max_items: None,
            minimum: Some(0),
            maximum: Some(b.max as i64),
        },
    ]
}

/// A type's name tokens, spanned so errors about it land on `span`.
fn at(ty: &Type, span: Span) -> TokenStream {
    respan(ty.to_token_stream(), span)
}

/// `const _` checks that `path` names a field of `item` of a type with `bound`.
fn item_path_check(item: &Type, path: &Name, bound: TokenStream, nullable_message: &str) -> TokenStream {
    let segments: Vec<&str> = path.value.split('.').collect();
    let paths::Walk { items, steps, value: ty } = paths::walk(at(item, path.span), &segments, 1, path.span);
    let nullable = steps.iter().map(|s| quote!(#s::NULLABLE));
    respan(
        quote! {
            const _: () = {
                #items
                fn __check<__T: ?Sized + #bound>() {}
                #[allow(dead_code)]
                fn __use() { __check::<#ty>(); }
                ::core::assert!(!(false #(|| #nullable)*), #nullable_message);
            };
        },
        path.span,
    )
}

fn bucket(c: &Container, b: &BucketDef, stamp: Option<(&str, i64, bool)>) -> TokenStream {
    let ident = &c.ident;
    let owner = ident.to_string();
    let vis = &c.vis;
    let series_ty = &b.series.recv.ty;
    let item_ty = &b.item_ty;
    let (series, period, items, count) = (
        b.series.name.as_deref().unwrap_or_default(),
        b.period.name.as_deref().unwrap_or_default(),
        b.items.name.as_deref().unwrap_or_default(),
        b.count.name.as_deref().unwrap_or_default(),
    );
    let time = &b.time.value;
    let max = b.max as u32;
    let cap = match b.cap {
        Some(n) => {
            let n = n as u32;
            quote!(::core::option::Option::Some(#n))
        }
        None => quote!(::core::option::Option::None),
    };
    let version = match stamp {
        Some((field, current, int64)) => quote!(::core::option::Option::Some(
            __ds::VersionStamp { field: #field, version: #current, int64: #int64 }
        )),
        None => quote!(::core::option::Option::None),
    };
    // The counter collection joins the registry, so `sync_all`, `check` and the
    // artifacts cover it with the bucket that owns it.
    let cap_registration = b.cap.map(|_| {
        quote! {
            __ds::inventory::submit! {
                __ds::RegisteredCollection {
                    owner: ::core::any::type_name::<#ident>,
                    spec: __ds::bk::cap_collection_spec::<#ident>,
                    nested: &[],
                }
            }
        }
    });
    let per = match b.per.as_str() {
        "minute" => quote!(__ds::Per::Minute),
        "hour" => quote!(__ds::Per::Hour),
        "week" => quote!(__ds::Per::Week),
        "month" => quote!(__ds::Per::Month),
        _ => quote!(__ds::Per::Day),
    };
    let string_id = b.id.is_none_or(|f| classify(&f.recv.ty) == Kind::String);
    let id_form = if string_id { quote!(__ds::IdForm::String) } else { quote!(__ds::IdForm::Compound) };
    // Overflow ids go through the id type itself, so `seq` is written as declared.
    let id_ty = match b.id {
        Some(f) => {
            let ty = &f.recv.ty;
            quote!(#ty)
        }
        None => quote!(::std::string::String),
    };
    let period_kind = {
        let ty = at(&b.period.recv.ty, b.period.span);
        let tr = respan(quote!(__ds::PeriodField), b.period.span);
        quote!(<#ty as #tr>::KIND)
    };
    let aggregates = b.aggregates.iter().map(|a| {
        let field = a.field.name.as_deref().unwrap_or_default();
        let of = &a.of.value;
        let op = match a.op {
            "sum" => quote!(__ds::AggregateOp::Sum),
            "min" => quote!(__ds::AggregateOp::Min),
            _ => quote!(__ds::AggregateOp::Max),
        };
        let ty = at(&a.field.recv.ty, a.field.span);
        let tr = if a.op == "sum" { quote!(__ds::SumField) } else { quote!(__ds::AggregateField) };
        let tr = respan(tr, a.field.span);
        // Through a bounded function, so a `sum` field must also be `SumField`.
        let ty_of = quote!({
            const fn __ty<__T: ?Sized + #tr>() -> __ds::AggregateType {
                <__T as __ds::AggregateField>::TYPE
            }
            __ty::<#ty>()
        });
        quote!(__ds::Aggregate { field: #field, op: #op, of: #of, ty: #ty_of })
    });
    let aggregate_checks = b.aggregates.iter().map(|a| {
        let bound = if a.op == "sum" { quote!(__ds::SumField) } else { quote!(__ds::AggregateField) };
        let message = format!(
            "the aggregate's source `{}` can be null or missing in an item; aggregate a field every item has",
            a.of.value
        );
        item_path_check(item_ty, &a.of, bound, &message)
    });
    let time_check = item_path_check(
        item_ty,
        &b.time,
        quote!(__ds::TimeField),
        "the bucket's `time` field can be null or missing in an item; every item needs a time to find its bucket",
    );

    // The size of a full bucket: one element per stored field.
    let mut elements = Vec::new();
    // Each element whose size has no bound is reported under the field that holds it,
    // with the element that names it (the series, for an `_id` made from it).
    let mut unbounded_at = Vec::new();
    for f in paths::stored_fields(c) {
        let key = f.name.as_deref().unwrap_or_default();
        let (element, named, at) = if std::ptr::eq(f, b.items) {
            let item = crate::common::size::probe_part(item_ty);
            let n = b.max as usize;
            let e = quote!(__ds::sz::element_of(#key, true, __ds::sz::array_of(#n, #item)));
            // The item type's own tokens: the field lacking a bound is one of its fields.
            (e.clone(), e, item_ty.span())
        } else if b.id.is_some_and(|i| std::ptr::eq(i, f)) && string_id && f.recv.max_length.is_none() {
            // "<series>:<period label>#<seq>": the series as text (at most its string
            // size, or 24 hex digits, or 20 decimal digits), ':', a label, '#', a u32.
            let series = crate::common::size::value_part(b.series);
            let series_key = b.series.name.as_deref().unwrap_or_default();
            let extra: usize = 24 + 1 + 16 + 1 + 10;
            (
                quote!(__ds::sz::element_of(#key, false, (__ds::sz::add((#series).0, ::core::option::Option::Some(#extra)), (#series).1))),
                quote!(__ds::sz::element_of(#series_key, false, #series)),
                b.series.span,
            )
        } else if std::ptr::eq(f, b.period)
            && classify(&f.recv.ty) == Kind::String
            && f.recv.max_length.is_none()
        {
            // A label the runtime writes: ASCII, at most `Per::MAX_LABEL_LEN` bytes.
            let e = quote!(__ds::sz::element_of(#key, false, (::core::option::Option::Some(5usize + __ds::Per::MAX_LABEL_LEN), __ds::sz::Unsized::Known)));
            (e.clone(), e, f.span)
        } else {
            let e = crate::common::size::element_part(f);
            (e.clone(), e, f.span)
        };
        unbounded_at.push((element.clone(), named, at));
        elements.push(element);
    }
    let estimate = quote!(__ds::sz::document_of(&[#(#elements),*]));
    let all_sized = quote!(__ds::sz::all_sized(&[#(#elements),*]));
    let limit = b.limit as usize;
    let what = format!("`{owner}` bucket (max = {} items)", b.max);
    let fix = "lower `max`, use a shorter period, or shorten the items' field names and bound their strings";
    let unbounded_parts = unbounded_at.into_iter().map(|(element, named, span)| {
        respan(
            quote! {
                const _: () = {
                    const __NAMED: &[__ds::sz::Element] = &[#named];
                    const __VERDICT: __ds::sz::ConstMessage = if (#element).size.is_none() && !__NAMED[0].why.is_known() {
                        __ds::sz::verdict("bucket_size", #what, ::core::option::Option::None, #limit,
                            __ds::sz::Unsized::Fields { owner: #owner, elements: __NAMED }, #fix)
                    } else {
                        __ds::sz::ConstMessage::new()
                    };
                    if !__VERDICT.is_empty() {
                        ::core::panic!("{}", __VERDICT.as_str())
                    }
                };
            },
            span,
        )
    });
    // Too big for the limit: `max` is what to change. A part with no bound was
    // reported under its own field above.
    let assertion = respan(
        quote! {
            const _: () = {
                const __VERDICT: __ds::sz::ConstMessage = if #all_sized {
                    __ds::sz::verdict("bucket_size", #what, #estimate, #limit, __ds::sz::Unsized::Known, #fix)
                } else {
                    __ds::sz::ConstMessage::new()
                };
                if !__VERDICT.is_empty() {
                    ::core::panic!("{}", __VERDICT.as_str())
                }
            };
        },
        b.max_span,
    );
    let assertion = quote!(#assertion #(#unbounded_parts)*);
    let cap_doc = match b.cap {
        Some(n) => format!(" At most {n} items per series per {} (`cap`): one more `update` reserves the item's place first, and an item beyond the cap is refused with `BucketError::Capped`.", b.per),
        None => String::new(),
    };
    let doc_append = format!("Appends one item to its `{owner}` bucket (series `{series}`, one bucket per {} holding at most {max}): one `update` in the common case.{cap_doc}", b.per);
    let cap_many = match b.cap {
        Some(n) => format!(" At most {n} items per series per {} (`cap`): a period's items fill it in order, and the call stops at the first refused one with `BucketError::Incomplete` (its cause `Capped`).", b.per),
        None => String::new(),
    };
    let doc_many = format!("Appends items to their `{owner}` buckets, grouped by {}: one `update` per bucket in the common case.{cap_many}", b.per);
    let doc_range = format!("The items of a series with `from <= {time} < to`, in time order, read from the `{owner}` buckets overlapping the window.");
    let doc_buckets =
        format!("The `{owner}` buckets of a series whose {} overlaps `[from, to)`, in period order.", b.per);
    quote! {
        #cap_registration
        #[automatically_derived]
        impl __ds::Bucket for #ident {
            type Series = #series_ty;
            type BucketId = #id_ty;
            type Item = #item_ty;
            const BUCKET: __ds::BucketSpec = __ds::BucketSpec {
                series: #series,
                period: #period,
                period_kind: #period_kind,
                per: #per,
                max: #max,
                items: #items,
                time: #time,
                count: #count,
                cap: #cap,
                id: #id_form,
                aggregates: &[#(#aggregates),*],
                version: #version,
            };
            const MAX_BUCKET_BYTES: usize = match #estimate {
                ::core::option::Option::Some(n) => n,
                ::core::option::Option::None => usize::MAX,
            };
        }
        #assertion
        #time_check
        #(#aggregate_checks)*
        #[automatically_derived]
        impl #ident {
            #[doc = #doc_append]
            #vis async fn append(
                db: &__ds::Database,
                series: impl ::core::convert::Into<#series_ty>,
                item: &#item_ty,
            ) -> ::core::result::Result<__ds::bk::Appended, __ds::BucketError> {
                let series: #series_ty = series.into();
                __ds::bk::append::<Self>(db, &series, item).await
            }

            #[doc = #doc_many]
            #vis async fn append_many(
                db: &__ds::Database,
                series: impl ::core::convert::Into<#series_ty>,
                items: &[#item_ty],
            ) -> ::core::result::Result<__ds::bk::Appended, __ds::BucketError> {
                let series: #series_ty = series.into();
                __ds::bk::append_many::<Self>(db, &series, items).await
            }

            #[doc = #doc_range]
            #vis async fn read_range(
                db: &__ds::Database,
                series: impl ::core::convert::Into<#series_ty>,
                from: __ds::DateTime,
                to: __ds::DateTime,
            ) -> ::core::result::Result<__ds::Vec<#item_ty>, __ds::BucketError> {
                let series: #series_ty = series.into();
                __ds::bk::read_range::<Self>(db, &series, from, to).await
            }

            #[doc = #doc_buckets]
            #vis async fn buckets_in(
                db: &__ds::Database,
                series: impl ::core::convert::Into<#series_ty>,
                from: __ds::DateTime,
                to: __ds::DateTime,
            ) -> ::core::result::Result<__ds::Vec<Self>, __ds::BucketError> {
                let series: #series_ty = series.into();
                __ds::bk::buckets_in::<Self>(db, &series, from, to).await
            }
        }
    }
}
