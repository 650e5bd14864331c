//! `#[access(...)]` rows: the access-pattern table, checked against the indexes at
//! compile time (the prefix rule: equality fields in any order, then the sort keys in
//! order with matching or fully reversed directions, then the range fields), against
//! the shard key, and expanded into `Model::ACCESS_PATTERNS`.

mod consistency;
mod expand;
mod find;
mod freq;
mod lookup;
mod matcher;
mod read;
mod shard;
mod versions;
mod write;

use std::collections::BTreeSet;

use darling::ast::NestedMeta;
use darling::error::Accumulator;
use darling::{Error, FromMeta};
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::{Attribute, LitStr};

use crate::ast::Container;
use crate::attr::index_keys::{Allow, KeyList, KeyValue};
use crate::common::expansion::Expansion;
use crate::common::fields::Lookup;
use crate::common::message::{did_you_mean, rule};
use crate::common::paths;
use crate::common::types::is_option;
use crate::facts::Facts;
use crate::index::{IndexDef, Key, KeyKind};
use expand::patterns_const;
use matcher::{describe, fit, proposal, Fit};
use read::read;
use shard::shard_key;

/// The model's access patterns and shard key, with what the checks found.
pub(crate) struct Parsed {
    /// Every `#[access]` row; [`check`] rewrites the paths a denormalized copy serves.
    pub patterns: Vec<Access>,
    /// `SHARD_KEY` and the shard key's nested path checks, set by [`check`].
    shard: TokenStream,
    /// The compile-time checks of the patterns' nested paths, set by [`check`].
    nested: TokenStream,
    /// The rule `old_version_field`'s compile-time checks, set by [`check`]: emitted
    /// even beside other errors (see [`expand`]).
    old_versions: TokenStream,
}

/// Reads every `#[access]` on the struct.
pub(crate) fn parse(cx: &Facts, errors: &mut Accumulator) -> Parsed {
    let mut patterns = if cx.is_model() { read(&cx.container.attrs, errors) } else { Vec::new() };
    for a in &mut patterns {
        a.owner = Some(cx.container.ident.clone());
    }
    Parsed {
        patterns,
        shard: TokenStream::new(),
        nested: TokenStream::new(),
        old_versions: TokenStream::new(),
    }
}

/// Reads the shard key, then serves every pattern by an index or explains why not.
pub(crate) fn check(
    parsed: &mut Parsed,
    cx: &Facts,
    index: &crate::index::Parsed,
    lookups: Option<&[Lookup]>,
    errors: &mut Accumulator,
) {
    if let Some(copies) = lookups {
        lookup::resolve(copies, &mut parsed.patterns, errors);
    }
    let Some(m) = &cx.model else { return };
    let c = &cx.container;
    let (shard_key, shard) = shard_key(cx.container_for(None), &m.shard_key, errors);
    parsed.shard = shard;
    parsed.nested = match &cx.polymorphic {
        Some(p) => polymorphic(p, &mut parsed.patterns, &index.indexes, &shard_key, errors),
        None => {
            for a in &parsed.patterns {
                if let Some(v) = &a.variant {
                    errors.push(Error::custom(format!("`variant = {v}` names a variant of a polymorphic model, and `{}` is a struct; drop it", c.ident)).with_span(v));
                }
            }
            rules(c, &mut parsed.patterns, &index.indexes, &shard_key, errors)
        }
    };
    if m.version.is_some() {
        // The version field itself differs by design (older documents may lack it).
        let version_field = paths::stored_fields(c)
            .into_iter()
            .find(|f| f.recv.attrs.iter().any(|a| a.path().is_ident("schema_version")))
            .and_then(|f| f.name.clone());
        parsed.old_versions =
            versions::checks(c, &parsed.patterns, m.migrate.as_ref(), version_field.as_deref());
    }
    for a in &mut parsed.patterns {
        a.reads = freq::docs_per_call(a, &index.indexes);
    }
}

/// `Model::ACCESS_PATTERNS` and `SHARD_KEY`, and the nested path checks.
pub(crate) fn expand(parsed: &Parsed, cx: &Facts) -> (Expansion, TokenStream) {
    let (patterns, shard) = (patterns_const(&parsed.patterns, cx), &parsed.shard);
    let c = &cx.container;
    let versioned = cx.model.as_ref().is_some_and(|m| m.version.is_some());
    let (outer, finders, writes) = match &cx.polymorphic {
        // Each row's parameters are typed by the fields of the variant it reads.
        Some(p) => {
            let (mut outer, mut finders) = (TokenStream::new(), TokenStream::new());
            let mut writes = write::registration(c, &parsed.patterns);
            for (i, a) in parsed.patterns.iter().enumerate() {
                let variant = a.discriminator.as_ref().map(|(_, v)| v.as_str());
                let container = p.container(variant);
                let (o, f) = find::expand(container, &parsed.patterns, versioned, Some(i));
                outer.extend(o);
                finders.extend(f);
                writes.extend(write::expand(container, &parsed.patterns, versioned, Some(i)));
            }
            (outer, finders, writes)
        }
        None => {
            let (outer, finders) = find::expand(c, &parsed.patterns, versioned, None);
            let mut writes = write::registration(c, &parsed.patterns);
            writes.extend(write::expand(c, &parsed.patterns, versioned, None));
            (outer, finders, writes)
        }
    };
    let nested = &parsed.nested;
    let items = quote!(#nested #finders #writes);
    let rows = parsed.patterns.iter().filter_map(|a| {
        let (tag, value) = a.discriminator.as_ref()?;
        let name = &a.name;
        Some(quote!((#name, #tag, #value)))
    });
    let polymorphic = cx.polymorphic.as_ref().map(|_| {
        quote!(const POLYMORPHIC_ROWS: &'static [(&'static str, &'static str, &'static str)] = &[#(#rows),*];)
    });
    // The rule `old_version_field` rests only on rows that parsed and on the older
    // shapes as written, never on a value another error left neutral: its checks go
    // beside the views, which are emitted whatever the errors, so that they arrive in
    // the same build as the derive's own errors (a `mutable_sort` on another row, say)
    // instead of once those are fixed.
    let mut outer = outer;
    if !parsed.old_versions.is_empty() {
        outer.extend(crate::common::dummy::dummy(parsed.old_versions.clone()));
    }
    // Soft delete: the rows that read live documents only, so that what checks a row
    // against the server (`explain`) asks what the row asks, `{deleted_at: null}` too,
    // which is what lets an index partial to live documents serve it.
    let live: Vec<_> = parsed
        .patterns
        .iter()
        .filter_map(|a| {
            let (name, field) = (&a.name, a.live.as_ref()?);
            Some(quote!((#name, #field)))
        })
        .collect();
    let live = (!live.is_empty())
        .then(|| quote!(const LIVE_ROWS: &'static [(&'static str, &'static str)] = &[#(#live),*];));
    (Expansion { model: quote!(#patterns #shard #polymorphic #live), items, ..Expansion::default() }, outer)
}

/// The access-pattern parameter type and name rules, and the type a read row returns,
/// shared with the paginator.
pub(crate) use find::{equality, param_type, result_type};

#[derive(FromMeta)]
struct AccessOpts {
    name: LitStr,
    operation: Option<LitStr>,
    filter: Option<KeyList>,
    sort: Option<KeyList>,
    range: Option<KeyList>,
    fields: Option<KeyList>,
    freq: Option<LitStr>,
    consistency: Option<LitStr>,
    /// Several `allow(...)` are one waiver, each rule with its own reason.
    #[darling(multiple)]
    allow: Vec<Allow>,
    paginate: crate::attr::Flag,
    update: Option<darling::util::SpannedValue<write::UpdateOpts>>,
    upsert: Option<darling::util::SpannedValue<write::UpsertOpts>>,
    view: Option<ViewOpts>,
    cache: Option<syn::Path>,
    variant: Option<syn::Ident>,
    // Soft delete (`crate::tenant`): the row reads deleted documents too.
    include_deleted: crate::attr::Flag,
}

/// `view(name = OrderPage, derive(Debug, Clone))`: the generated view type's name and
/// the derives it gets besides serde's.
#[derive(FromMeta, Default, Clone)]
pub(crate) struct ViewOpts {
    pub name: Option<syn::Ident>,
    #[darling(default)]
    pub derive: darling::util::PathList,
}

/// A checked access pattern.
pub(crate) struct Access {
    pub name: String,
    /// The generated method's name: `None` when `name` is no identifier or an earlier
    /// row's (both reported), so that the row expands into no method at all.
    pub method: Option<syn::Ident>,
    pub span: Span,
    pub operation: String,
    pub filter: Vec<(String, Span)>,
    pub case_insensitive: bool,
    pub sort: Vec<Key>,
    pub range: Vec<(String, Span)>,
    pub fields: Vec<(String, Span)>,
    pub freq: String,
    pub consistency: String,
    /// The consistency's words, parsed.
    guarantee: consistency::Consistency,
    /// The parsed `freq`.
    rate: Option<freq::Rate>,
    /// The most documents one call reads, set by [`check`].
    reads: freq::Reads,
    pub allow: Allow,
    /// The serving index's name, set by [`check`].
    pub index: Option<String>,
    /// `paginate`: a keyset paginator is generated; `_id` ends the sort.
    pub paginate: Option<Span>,
    /// Paths of other collections the pattern needs, waived with `allow(lookup)`.
    pub foreign: Vec<String>,
    /// `update(...)`: a write row.
    pub update: Option<write::WriteRow>,
    /// `upsert` or `upsert(...)`: the write row creates the document when none matches.
    pub upsert: Option<write::UpsertRow>,
    /// `view(...)`: the view type's name and derives.
    pub view: ViewOpts,
    /// The model the row belongs to, set by [`parse`]: its view struct is named after
    /// both (see `find::view_struct_ident`).
    pub owner: Option<syn::Ident>,
    /// `cache = Family`: the string key family the row reads through.
    pub cache: Option<syn::Path>,
    /// `variant = Click`: on a polymorphic model, the variant the row reads.
    pub variant: Option<syn::Ident>,
    /// The discriminator equality the row's commands carry (`kind`, `"click"`), set by
    /// [`check`] from `variant`.
    pub discriminator: Option<(String, String)>,
    /// On a read row on one variant without `fields(...)`: it reads the variant whole,
    /// so its view is taken from the enum's own decoding (no deserializer of its own).
    pub whole_variant: bool,
    // Soft delete (`crate::tenant`): `include_deleted`, and the field whose `null` the
    // row's commands carry, set by `tenant::check`.
    pub include_deleted: Option<Span>,
    pub live: Option<String>,
}

/// Whether a partial filter holds every live document of a soft-delete model
/// (`{"deleted_at": null}`, alone): the predicate its live rows carry.
pub(crate) fn partial_live(partial: &str, field: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(partial).ok().is_some_and(|v| {
        v.as_object().is_some_and(|o| o.len() == 1 && o.get(field).is_some_and(serde_json::Value::is_null))
    })
}

impl Access {
    /// Whether `index` holds every document the row reads: a full index, or a
    /// variant's index partial to its discriminator alone, for a row on that variant.
    /// (An index partial to anything more misses some of them: it neither bounds the
    /// row's reads nor makes its keys unique among them.)
    pub(crate) fn read_whole(&self, index: &IndexDef) -> bool {
        match (&index.partial, &self.discriminator) {
            (None, _) => true,
            (Some(partial), Some((tag, value))) => {
                index.variant.as_ref() == Some(value)
                    && crate::polymorphic::partial_filter(tag, value, None).is_ok_and(|p| p == *partial)
            }
            // Soft delete: an index partial to live documents holds every one a live row reads.
            (Some(partial), None) => self.live.as_deref().is_some_and(|field| partial_live(partial, field)),
        }
    }
}

/// A polymorphic model's rows: each names its variant (or reads what every variant
/// stores), is checked against that variant's fields, and is served only by an index
/// that holds its variant's documents; a write row writes only its variant's documents
/// (the discriminator `$eq` is in its filter) and an upsert row creates one.
fn polymorphic(
    p: &crate::polymorphic::Polymorphic,
    patterns: &mut [Access],
    indexes: &[IndexDef],
    shard_key: &[Key],
    errors: &mut Accumulator,
) -> TokenStream {
    let mut nested = TokenStream::new();
    for a in patterns.iter_mut() {
        // An upsert creates a document, which is one variant: the row names it, and
        // its filter's discriminator `$eq` is what the created document stores.
        if let (Some(u), None) = (&a.upsert, &a.variant) {
            let example = p.variants.first().map_or_else(String::new, |v| v.ident.to_string());
            errors.push(Error::custom(format!("upsert row `{}` is on the enum, but a created document is one variant: name it, like `variant = {example}`, so that the document it creates stores `{}: \"...\"` and the variant's fields", a.name, p.tag)).with_span(&u.span));
            a.method = None;
            continue;
        }
        match &a.variant {
            Some(v) => match p.variant(v) {
                Some(m) => {
                    a.discriminator = Some((p.tag.clone(), m.value.clone()));
                    // A read row returns the variant's own type: a view of every field
                    // it stores, unless `fields(...)` names fewer. (A write row returns
                    // the written document's `_id`.)
                    if let (Some(inner), Some((_, span))) = (&m.container.wraps, a.fields.first()) {
                        let inner = quote!(#inner).to_string().replace(' ', "");
                        errors.push(Error::custom(format!("row `{}` is on `{v}`, a newtype over `{inner}`: it reads the variant whole, as `{inner}`; drop `fields(...)`, or give `{v}` named fields", a.name)).with_span(span));
                        a.method = None;
                        continue;
                    }
                    if a.fields.is_empty() && a.update.is_none() {
                        // (A newtype variant's fields are its type's: none are named here.)
                        a.whole_variant = true;
                        a.fields = paths::stored_fields(&m.container)
                            .into_iter()
                            .filter_map(|f| f.name.clone())
                            .filter(|n| *n != p.tag)
                            .map(|n| (n, v.span()))
                            .collect();
                    }
                }
                None => {
                    let names: Vec<String> = p.variants.iter().map(|m| m.ident.to_string()).collect();
                    errors.push(
                        Error::custom(format!(
                            "no variant `{v}` in `{}`; the variants are {}",
                            p.common.ident,
                            names.join(", ")
                        ))
                        .with_span(v),
                    );
                    a.method = None;
                    continue;
                }
            },
            None => {
                let paths = a.filter.iter().chain(&a.range).chain(&a.fields).map(|(p, s)| (p, *s));
                let misplaced: Vec<Error> = paths
                    .chain(a.sort.iter().map(|k| (&k.path, k.span)))
                    .filter_map(|(path, span)| crate::polymorphic::variant_only(p, path, "a row", span))
                    .collect();
                if !misplaced.is_empty() {
                    errors.extend(misplaced);
                    a.method = None;
                    continue;
                }
                // The newtype variants store the row's paths too, through their types.
                let paths = a.filter.iter().chain(&a.range).chain(&a.fields).map(|(p, s)| (p, *s));
                for (path, span) in paths.chain(a.sort.iter().map(|k| (&k.path, k.span))) {
                    nested.extend(crate::polymorphic::wrapped_paths(p, path, span));
                }
            }
        }
        let variant = a.discriminator.as_ref().map(|(_, v)| v.clone());
        let c = p.container(variant.as_deref());
        nested.extend(rules(c, std::slice::from_mut(a), indexes, shard_key, errors));
    }
    nested
}

/// Serves every pattern or explains why not; checks paths and the shard key. Returns
/// the nested path checks to emit.
fn rules(
    c: &Container,
    patterns: &mut [Access],
    indexes: &[IndexDef],
    shard_key: &[Key],
    errors: &mut Accumulator,
) -> TokenStream {
    let mut nested = TokenStream::new();
    let written = written_fields(c, patterns);
    for a in patterns.iter_mut() {
        let paths = a
            .filter
            .iter()
            .chain(&a.range)
            .chain(&a.fields)
            .map(|(p, s)| (p.clone(), *s))
            .chain(a.sort.iter().map(|k| (k.path.clone(), k.span)))
            .collect::<Vec<_>>();
        let mut all_resolved = true;
        for (path, span) in paths {
            match errors.handle(paths::resolve(c, &path, span)) {
                Some(r) => nested.extend(paths::nested_checks(c, &r, span, false)),
                None => all_resolved = false,
            }
        }
        if a.paginate.is_some() && all_resolved {
            for key in a.sort.iter().filter(|k| k.path != "_id") {
                if let Ok(r) = paths::resolve(c, &key.path, key.span) {
                    nested.extend(sort_key_rules(c, a, key, &r, &written, errors));
                }
            }
        }
        nested.extend(write::check(c, a, indexes, errors));
        if !all_resolved {
            continue;
        }
        // An `_id` equality is served by the `_id_` index whatever else the row holds:
        // at most one document has that `_id`, so mongod reads one index entry and
        // checks the other equalities and ranges on that document, and a sort of one
        // document is no sort (no in-memory sort stage, no scan). A case-insensitive
        // row is the exception: `_id_` has the simple collation, which gives no bounds
        // to a query under another one.
        let id_equality = a.filter.iter().any(|(p, _)| p == "_id");
        let id_sort =
            a.filter.is_empty() && a.range.is_empty() && a.sort.len() == 1 && a.sort[0].path == "_id";
        if (id_equality || id_sort) && !a.case_insensitive {
            a.index = Some("_id_".to_owned());
        }
        let mut wrong_order = None;
        let mut collation = None;
        let mut direction = None;
        let variant = a.discriminator.as_ref().map(|(_, v)| v.as_str());
        // A variant's partial index holds none of another variant's documents.
        let elsewhere = indexes.iter().find(|i| !i.holds(variant) && matches!(fit(a, i), Fit::Serves));
        for index in indexes.iter().filter(|i| i.holds(variant)) {
            if a.index.is_some() {
                break;
            }
            match fit(a, index) {
                Fit::Serves => a.index = Some(index.name.clone()),
                Fit::WrongOrder if index.allow.waives("esr_order") => a.index = Some(index.name.clone()),
                Fit::WrongOrder => wrong_order = wrong_order.or(Some(index)),
                Fit::Collation => collation = collation.or(Some(index)),
                Fit::Direction => direction = direction.or(Some(index)),
                Fit::No => {}
            }
        }
        if a.index.is_none() {
            if let (Some(index), false) = (wrong_order, a.allow.waives("unserved")) {
                errors.push(Error::custom(rule("esr_order", format!(
                    "index `{}` holds the fields of access pattern `{}` ({}) out of equality → sort → range order, so it cannot serve it; use {} instead, or waive with `allow(esr_order, reason = \"...\")`",
                    index.name, a.name, describe(a), proposal(a)
                ))).with_span(&index.span));
            } else if let (Some(index), false) = (direction, a.allow.waives("unserved")) {
                errors.push(Error::custom(rule("unserved", format!(
                    "access pattern `{}` ({}) sorts in directions that index `{}` holds neither as declared nor fully reversed, so the server would sort in memory; use {} instead, or waive with `allow(unserved, reason = \"...\")`",
                    a.name, describe(a), index.name, proposal(a)
                ))).with_span(&a.span));
            } else if let (Some(index), false) =
                (collation, a.allow.waives("collation_mismatch") || a.allow.waives("unserved"))
            {
                let (what, fix) = if a.case_insensitive {
                    ("a case-insensitive filter", format!("add `case_insensitive` to index `{}`", index.name))
                } else {
                    (
                        "a filter with the simple collation",
                        format!("add an index without `case_insensitive`: {}", proposal(a)),
                    )
                };
                errors.push(Error::custom(rule("collation_mismatch", format!(
                    "access pattern `{}` ({}) is {what}, but index `{}` has another collation, and a query uses an index only under the same collation; {fix}, or waive with `allow(collation_mismatch, reason = \"...\")`",
                    a.name, describe(a), index.name
                ))).with_span(&a.span));
            } else if let (Some(index), false) = (elsewhere, a.allow.waives("unserved")) {
                let (tag, other) = index.partial_of();
                let reads = match &a.variant {
                    Some(v) => format!("reads variant `{v}`"),
                    None => "reads every variant".to_owned(),
                };
                errors.push(Error::custom(rule("unserved", format!(
                    "access pattern `{}` ({}) {reads}, but index `{}` is partial to another variant (`{tag}: \"{other}\"`) and holds none of its documents, so it cannot serve it; declare {} on the variant the row reads (or on the enum, for every variant), or waive with `allow(unserved, reason = \"...\")`",
                    a.name, describe(a), index.name, proposal(a)
                ))).with_span(&a.span));
            } else if !a.allow.waives("unserved") && !a.allow.waives("collation_mismatch") {
                errors.push(Error::custom(rule("unserved", format!(
                    "access pattern `{}` ({}) is served by no index, so it would scan the collection; add {} to the struct, or waive with `allow(unserved, reason = \"...\")`",
                    a.name, describe(a), proposal(a)
                ))).with_span(&a.span));
            }
        }
        if let Some(first) = shard_key.first() {
            let targeted = a.filter.iter().any(|(p, _)| *p == first.path);
            if !targeted && !a.allow.waives("scatter_gather") {
                errors.push(Error::custom(rule("scatter_gather", format!(
                    "access pattern `{}` does not filter on the shard key's first field `{}`, so on a sharded cluster it asks every shard (scatter-gather); add `{}` to its filter, or waive with `allow(scatter_gather, reason = \"...\")`",
                    a.name, first.path, first.path
                ))).with_span(&a.span));
            }
        }
    }
    nested
}

/// A field a write row writes: its documents' values there change after they are
/// inserted.
struct Written {
    /// The write row's name.
    row: String,
    op: write::Op,
    path: String,
}

/// Every field the model's write rows write. A row that is refused for writing and
/// paginating at once is left out (its error says to split it), and so is a path that
/// does not resolve (its own error names it), so that neither mistake adds a second one.
fn written_fields(c: &Container, patterns: &[Access]) -> Vec<Written> {
    let mut out = Vec::new();
    for a in patterns.iter().filter(|a| a.paginate.is_none()) {
        for (op, path, span) in a.update.iter().flat_map(|w| &w.ops) {
            if path != "_id" && paths::resolve(c, path, *span).is_ok() {
                out.push(Written { row: a.name.clone(), op: *op, path: path.clone() });
            }
        }
    }
    out
}

/// Whether writing `written` can change the value at `sorted`: the same path, a
/// document that holds it (`stats` holds `stats.score`) or a field inside it.
fn overlaps(written: &str, sorted: &str) -> bool {
    let inside = |long: &str, short: &str| long.strip_prefix(short).is_some_and(|rest| rest.starts_with('.'));
    written == sorted || inside(sorted, written) || inside(written, sorted)
}

/// The write rows that change a paginated sort key, as the error names them:
/// ``write row `upvote` (`inc(score)`) changes``. Empty when none does, or when the row also
/// filters on the key by equality: then every document of the walk holds the same
/// value there, and a write to it takes the document out of the walk or into it, as a
/// delete or an insert does, which pages already survive.
fn writers_of(a: &Access, key: &Key, written: &[Written]) -> String {
    if a.filter.iter().any(|(f, _)| *f == key.path) {
        return String::new();
    }
    let writers: Vec<String> = written
        .iter()
        .filter(|w| overlaps(&w.path, &key.path))
        .map(|w| format!("`{}` (`{}({})`)", w.row, w.op.word(), w.path))
        .collect();
    match writers.as_slice() {
        [] => String::new(),
        [one] => format!("write row {one} changes"),
        [init @ .., last] => format!("write rows {} and {last} change", init.join(", ")),
    }
}

/// A paginated sort key must be present, single-valued and exactly comparable in every
/// document, or pages skip or repeat items; and no write row may change it, or a
/// document moves from a page not yet read to one already read (or back). Returns the
/// type-level checks for the segments inside other types.
fn sort_key_rules(
    c: &Container,
    a: &Access,
    key: &Key,
    r: &paths::Resolved,
    written: &[Written],
    errors: &mut Accumulator,
) -> TokenStream {
    let waived = |rule: &str| a.allow.waives(rule);
    let writers = writers_of(a, key, written);
    // One error per key however many rows write it: the fix is one decision.
    if !writers.is_empty() && !waived("mutable_sort") {
        errors.push(Error::custom(rule("mutable_sort", format!(
            "access pattern `{}` paginates on `{}`, which {writers}: a document whose sort value changes during a walk moves to another page, so the walk may skip it or return it twice; sort on a field no write row changes, or waive with `allow(mutable_sort, reason = \"...\")` and accept that documents whose key changes may move between pages",
            a.name, key.path
        ))).with_span(&key.span));
    }
    let complain = |name: &str, what: &str, errors: &mut Accumulator| {
        errors.push(Error::custom(rule(name, format!(
            "access pattern `{}` paginates on `{}`, {what}; sort on another field, or waive with `allow({name}, reason = \"...\")`",
            a.name, key.path
        ))).with_span(&key.span));
    };
    if let Some(field) = r.field {
        let ty = &field.recv.ty;
        let nullable = is_option(ty) || field.serde.skip_serializing_if.is_some();
        if nullable && !waived("nullable_sort") {
            complain("nullable_sort", "which can be null or missing: documents without it sort first and a cursor cannot point at them", errors);
        }
        if r.array && !waived("array_sort") {
            complain("array_sort", "which holds an array: a document sorts by one of its elements and may appear on several pages", errors);
        }
        let float = r.rest.is_empty()
            && r.element.as_ref().is_some_and(|t| {
                let t = quote!(#t).to_string();
                t == "f64" || t == "f32"
            });
        if float && !waived("float_sort") {
            complain(
                "float_sort",
                "a float: rounding makes equal-looking values differ and NaN compares unlike any number",
                errors,
            );
        }
    }
    paths::sort_checks(
        c,
        r,
        key.span,
        [!waived("nullable_sort"), !waived("array_sort"), !waived("float_sort")],
    )
}
