//! `#[access(...)]` rows: the access-pattern table, checked against the indexes at
//! compile time (the prefix rule: equality fields in any order, then the sort keys in
//! order with matching or fully reversed directions, then the range fields), against
//! the shard key, and expanded into `Model::ACCESS_PATTERNS`.

mod consistency;
mod find;
mod freq;
mod versions;
mod write;

use std::collections::BTreeSet;

use darling::ast::NestedMeta;
use darling::error::Accumulator;
use darling::{Error, FromMeta};
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::{Attribute, LitStr};

use crate::ast::{Container, Context};
use crate::attr::index_keys::{Allow, KeyList, KeyValue};
use crate::common::expansion::Expansion;
use crate::common::message::{did_you_mean, rule};
use crate::common::paths;
use crate::common::types::is_option;
use crate::index::{IndexDef, Key, KeyKind};

/// The model's access patterns and shard key, with what the checks found.
pub(crate) struct Parsed {
    /// Every `#[access]` row; the denormalized pattern rewrites the paths its copies serve.
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
pub(crate) fn parse(cx: &Context, errors: &mut Accumulator) -> Parsed {
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
    cx: &Context,
    index: &crate::index::Parsed,
    errors: &mut Accumulator,
) {
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
pub(crate) fn expand(parsed: &Parsed, cx: &Context) -> (Expansion, TokenStream) {
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
    (Expansion { model: quote!(#patterns #shard #polymorphic), items, ..Expansion::default() }, outer)
}

/// The access-pattern parameter type and name rules, and the type a read row returns,
/// shared with the paginator.
pub(crate) use find::{equality, result_type};

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
            (Some(partial), None) => crate::tenant::holds_live(self, partial),
        }
    }
}

/// Every key of `#[access(...)]`.
const KEYS: &[&str] = &[
    "name",
    "operation",
    "filter",
    "sort",
    "range",
    "fields",
    "freq",
    "consistency",
    "allow",
    "paginate",
    "update",
    "upsert",
    "view",
    "cache",
    "variant",
    "include_deleted",
];

/// The keys a row can lose without changing its method or the other checks: its
/// parameters and return type do not depend on them, and no rule needs them (unlike
/// `allow(...)`, whose waivers would turn into second errors).
const NEUTRAL_KEYS: &[&str] = &["operation", "freq", "consistency"];

/// A row that darling refused, read again without its mistakes in neutral keys (a
/// misspelt `consistancy`, a `freq = 500` that is no string), so that its method
/// keeps its signature: the mistakes are reported, and a call of the method raises no
/// second error. `None` when a mistake is anywhere else (a misspelt `filtr` would
/// drop a parameter), and the row has no method.
fn without_neutral_mistakes(meta: &syn::Meta) -> Option<AccessOpts> {
    let syn::Meta::List(list) = meta else { return None };
    let items = NestedMeta::parse_meta_list(list.tokens.clone()).ok()?;
    let key = |item: &NestedMeta| match item {
        NestedMeta::Meta(m) => m.path().get_ident().map(ToString::to_string),
        NestedMeta::NameValueInvalidExpr(m) => m.path.get_ident().map(ToString::to_string),
        NestedMeta::Lit(_) => None,
    };
    let name = items.iter().find(|i| key(i).as_deref() == Some("name"))?;
    let mut kept = Vec::new();
    for item in &items {
        match key(item) {
            // A neutral key is kept when it parses on its own.
            Some(k) if NEUTRAL_KEYS.contains(&k.as_str()) => {
                if AccessOpts::from_list(&[name.clone(), item.clone()]).is_ok() {
                    kept.push(item.clone());
                }
            }
            // A misspelling of a neutral key is left out; anything else is kept, so
            // that a mistake in it fails the reading below.
            Some(k)
                if !KEYS.contains(&k.as_str())
                    && did_you_mean(&k, KEYS).is_some_and(|s| NEUTRAL_KEYS.contains(&s)) => {}
            _ => kept.push(item.clone()),
        }
    }
    AccessOpts::from_list(&kept).ok()
}

fn plain_paths(list: &Option<KeyList>, what: &str, errors: &mut Accumulator) -> Vec<(String, Span)> {
    let mut out = Vec::new();
    for item in list.iter().flat_map(|l| &l.items) {
        if let Some((_, span)) = &item.value {
            errors.push(
                Error::custom(format!(
                    "`{what}(...)` lists stored fields; `{}` takes no value here",
                    item.path
                ))
                .with_span(span),
            );
        }
        out.push((item.path.clone(), item.span));
    }
    out
}

fn read(attrs: &[Attribute], errors: &mut Accumulator) -> Vec<Access> {
    let mut out: Vec<Access> = Vec::new();
    for attr in attrs.iter().filter(|a| a.path().is_ident("access")) {
        let opts = match AccessOpts::from_meta(&attr.meta) {
            Ok(opts) => opts,
            Err(e) => {
                errors.push(e);
                let Some(opts) = without_neutral_mistakes(&attr.meta) else { continue };
                opts
            }
        };
        let name = opts.name.value();
        let span = opts.name.span();
        let mut method =
            syn::parse_str::<syn::Ident>(&name).is_ok().then(|| quote::format_ident!("{}", name));
        if method.is_none() {
            errors.push(Error::custom(format!("`{name}` is not an identifier: an access pattern's name becomes a method name, like `posts_by_author`; say it in words with `operation = \"...\"`")).with_span(&span));
        }
        if out.iter().any(|a| a.name == name) {
            errors.push(Error::custom(format!("two access patterns are named `{name}`")).with_span(&span));
            // The first row keeps the method: a second one would add a duplicate definition.
            method = None;
        }
        let mut filter = Vec::new();
        let mut case_insensitive = false;
        for item in opts.filter.iter().flat_map(|l| &l.items) {
            match &item.value {
                None => {}
                Some((KeyValue::Word(w), _)) if w == "case_insensitive" => case_insensitive = true,
                Some((_, span)) => errors.push(Error::custom(format!("`{}`: a filter field is matched by equality; the only option is `(case_insensitive)`", item.path)).with_span(span)),
            }
            filter.push((item.path.clone(), item.span));
        }
        if case_insensitive && opts.filter.iter().flat_map(|l| &l.items).any(|i| i.value.is_none()) {
            errors.push(
                Error::custom(
                    "a query has one collation: mark every filter field `(case_insensitive)` or none",
                )
                .with_span(&span),
            );
        }
        let sort: Vec<Key> = opts
            .sort
            .iter()
            .flat_map(|l| &l.items)
            .filter_map(|item| {
                errors.handle(KeyKind::from_item(item, true)).map(|kind| Key {
                    path: item.path.clone(),
                    kind,
                    span: item.span,
                })
            })
            .collect();
        let mut sort: Vec<Key> = sort;
        let paginate = opts.paginate.is_present().then(|| opts.paginate.span());
        if let Some(span) = paginate {
            // "_id breaks timestamp ties": the tie-breaker ends every paginated sort.
            if !sort.iter().any(|k| k.path == "_id") {
                let kind = sort.last().map_or(KeyKind::Asc, |k| k.kind);
                sort.push(Key { path: "_id".to_owned(), kind, span });
            }
            if let Some(range) = &opts.range {
                errors.push(Error::custom("`paginate` with `range(...)` is not supported: a keyset page continues from its cursor, which is itself a range; declare a separate access pattern without `paginate` for the range query").with_span(&range.span.unwrap_or(span)));
            }
        }
        let mut range = plain_paths(&opts.range, "range", errors);
        if paginate.is_some() {
            // Already reported above; dropping it keeps the index rules from adding
            // a second error for the same mistake.
            range.clear();
        }
        for (path, span) in &range {
            if filter.iter().any(|(f, _)| f == path) {
                errors.push(
                    Error::custom(format!("`{path}` is both an equality filter and a range: keep one"))
                        .with_span(span),
                );
            }
        }
        let update = write::read(
            opts.update.map(|u| {
                let span = u.span();
                (u.into_inner(), span)
            }),
            errors,
        );
        let upsert = write::read_upsert(
            opts.upsert.map(|u| {
                let span = u.span();
                (u.into_inner(), span)
            }),
            update.is_some(),
            errors,
        );
        if let (Some(view), Some(_)) = (&opts.view, &update) {
            if let Some(name) = &view.name {
                errors.push(
                    Error::custom("a write row reads nothing, so it has no view: drop `view(...)`")
                        .with_span(name),
                );
            }
        }
        if let Some(cache) = &opts.cache {
            let only_id = filter.len() == 1 && filter[0].0 == "_id" && opts.range.is_none();
            if !only_id {
                errors.push(Error::custom("a cached row reads one document by its id: its key is built from the `_id`, so the row filters on `_id` alone (`filter(_id)`)").with_span(cache));
            } else if update.is_some() || paginate.is_some() {
                errors.push(Error::custom("`cache = ...` is for a read of one document; a write row or a paginated row cannot be cached").with_span(cache));
            }
        }
        out.push(Access {
            method,
            cache: opts.cache.clone(),
            update,
            upsert,
            view: opts.view.unwrap_or_default(),
            owner: None,
            operation: opts.operation.as_ref().map_or_else(|| name.clone(), LitStr::value),
            name,
            span,
            filter,
            case_insensitive,
            sort,
            range,
            fields: plain_paths(&opts.fields, "fields", errors),
            freq: opts.freq.as_ref().map(LitStr::value).unwrap_or_default(),
            consistency: opts.consistency.as_ref().map(LitStr::value).unwrap_or_default(),
            guarantee: consistency::parse(opts.consistency.as_ref(), errors),
            rate: freq::parse(opts.freq.as_ref(), errors),
            reads: freq::Reads::default(),
            allow: Allow::merged(opts.allow),
            index: None,
            paginate,
            foreign: Vec::new(),
            variant: opts.variant.clone(),
            discriminator: None,
            whole_variant: false,
            include_deleted: opts.include_deleted.is_present().then(|| opts.include_deleted.span()),
            live: None,
        });
    }
    out
}

/// How an index relates to an access pattern.
enum Fit {
    Serves,
    /// The index holds the pattern's fields, in an order that does not serve it.
    WrongOrder,
    /// It would serve, but its collation differs from the query's.
    Collation,
    /// The sort keys are there, with directions matching neither the sort nor its reverse.
    Direction,
    No,
}

fn fit(a: &Access, index: &IndexDef) -> Fit {
    if index.keys.iter().any(|k| !k.kind.is_ordered())
        && !(index.keys.len() == 1 && index.keys[0].kind == KeyKind::Hashed)
    {
        return Fit::No;
    }
    let equality: BTreeSet<&str> = a.filter.iter().map(|(p, _)| p.as_str()).collect();
    // A sort key also matched by equality is constant, so the index need not order it.
    let sort: Vec<&Key> = a.sort.iter().filter(|k| !equality.contains(k.path.as_str())).collect();
    // A range on a sort key is bounded by that key where the sort reads it (mongod
    // scans the key's bounds in index order): it needs no key of its own after the sort.
    let range: BTreeSet<&str> =
        a.range.iter().map(|(p, _)| p.as_str()).filter(|p| !sort.iter().any(|k| k.path == *p)).collect();
    let needed = equality.len() + sort.len() + range.len();
    if needed == 0 || index.keys.len() < needed {
        return Fit::No;
    }
    let keys = &index.keys;
    if index.keys.iter().any(|k| k.kind == KeyKind::Hashed)
        && (!sort.is_empty() || !range.is_empty() || equality.len() != 1)
    {
        return Fit::No;
    }
    let head: BTreeSet<&str> = keys[..equality.len()].iter().map(|k| k.path.as_str()).collect();
    let mid = &keys[equality.len()..equality.len() + sort.len()];
    let same = mid.iter().zip(&sort).all(|(k, s)| k.path == s.path && k.kind == s.kind);
    let reversed = mid.iter().zip(&sort).all(|(k, s)| k.path == s.path && k.kind != s.kind);
    let tail: BTreeSet<&str> =
        keys[equality.len() + sort.len()..needed].iter().map(|k| k.path.as_str()).collect();
    let serves = head == equality && (sort.is_empty() || same || reversed) && tail == range;
    let collation_ok = index.locale.is_some() == a.case_insensitive;
    let sort_paths_match = mid.iter().zip(&sort).all(|(k, s)| k.path == s.path);
    match (serves, collation_ok) {
        (true, true) => Fit::Serves,
        (true, false) => Fit::Collation,
        (false, _) if head == equality && tail == range && sort_paths_match => Fit::Direction,
        _ => {
            let wanted: BTreeSet<&str> = equality
                .iter()
                .copied()
                .chain(sort.iter().map(|k| k.path.as_str()))
                .chain(range.iter().copied())
                .collect();
            let held: BTreeSet<&str> = keys[..needed].iter().map(|k| k.path.as_str()).collect();
            if wanted == held {
                Fit::WrongOrder
            } else {
                Fit::No
            }
        }
    }
}

/// The index that would serve `a`, as attribute text.
fn proposal(a: &Access) -> String {
    let equality: Vec<&str> = a.filter.iter().map(|(p, _)| p.as_str()).collect();
    let mut keys: Vec<String> = equality.iter().map(|p| key_text(p, "")).collect();
    for k in a.sort.iter().filter(|k| !equality.contains(&k.path.as_str())) {
        keys.push(key_text(&k.path, if k.kind == KeyKind::Desc { " = -1" } else { "" }));
    }
    let sorted = |p: &str| a.sort.iter().any(|k| k.path == p);
    keys.extend(
        a.range
            .iter()
            .filter(|(p, _)| !sorted(p) && !equality.contains(&p.as_str()))
            .map(|(p, _)| key_text(p, "")),
    );
    let ci = if a.case_insensitive { ", case_insensitive" } else { "" };
    format!("#[index(keys({}){ci})]", keys.join(", "))
}

fn key_text(path: &str, suffix: &str) -> String {
    if path.contains('.') || syn::parse_str::<syn::Ident>(path).is_err() {
        format!("\"{path}\"{suffix}")
    } else {
        format!("{path}{suffix}")
    }
}

fn describe(a: &Access) -> String {
    let mut parts = Vec::new();
    if !a.filter.is_empty() {
        parts.push(format!(
            "filter {}",
            a.filter.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>().join(", ")
        ));
    }
    if !a.sort.is_empty() {
        let sort: Vec<String> = a
            .sort
            .iter()
            .map(|k| format!("{} {}", k.path, if k.kind == KeyKind::Desc { "desc" } else { "asc" }))
            .collect();
        parts.push(format!("sort {}", sort.join(", ")));
    }
    if !a.range.is_empty() {
        parts.push(format!(
            "range {}",
            a.range.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>().join(", ")
        ));
    }
    if parts.is_empty() {
        "no filter, sort or range: it reads the whole collection".to_owned()
    } else {
        parts.join("; ")
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

/// `const ACCESS_PATTERNS: &[AccessPattern] = &[...]`.
fn patterns_const(patterns: &[Access], cx: &Context) -> TokenStream {
    let strs = |v: &[(String, Span)]| {
        let v = v.iter().map(|(p, _)| p);
        quote!(&[#(#v),*])
    };
    let items = patterns.iter().map(|a| {
        let name = &a.name;
        let operation = &a.operation;
        let filter = strs(&a.filter);
        let ci = a.case_insensitive;
        let sort = a.sort.iter().map(|k| {
            let path = &k.path;
            let kind = k.kind.tokens();
            quote!((#path, #kind))
        });
        let range = strs(&a.range);
        // A write row's "fields needed" are the fields it writes (the seed's "cart items").
        let written: Vec<&String> = a.update.iter().flat_map(|w| w.ops.iter().map(|(_, p, _)| p)).collect();
        let fields = {
            let v = a.fields.iter().map(|(p, _)| p).chain(&a.foreign).chain(written);
            quote!(&[#(#v),*])
        };
        let freq = &a.freq;
        let consistency = &a.consistency;
        let guarantee = consistency::tokens(a.guarantee);
        let load = freq::load_tokens(a, cx);
        let index = match &a.index {
            Some(i) => quote!(::core::option::Option::Some(#i)),
            None => quote!(::core::option::Option::None),
        };
        let waivers =
            a.allow.rules.iter().zip(&a.allow.reasons).map(|((r, _), reason)| quote!((#r, #reason)));
        let paginate = a.paginate.is_some();
        let kind = match (&a.update, &a.upsert) {
            (None, _) => quote!(__ds::RowKind::Read),
            (Some(_), None) => quote!(__ds::RowKind::Write),
            (Some(_), Some(_)) => quote!(__ds::RowKind::Upsert),
        };
        quote! {
            __ds::AccessPattern {
                name: #name,
                operation: #operation,
                filter: #filter,
                case_insensitive: #ci,
                sort: &[#(#sort),*],
                range: #range,
                fields: #fields,
                freq: #freq,
                consistency: #consistency,
                guarantee: #guarantee,
                load: #load,
                index: #index,
                waivers: &[#(#waivers),*],
                paginate: #paginate,
                kind: #kind,
            }
        }
    });
    quote!(const ACCESS_PATTERNS: &'static [__ds::AccessPattern] = &[#(#items),*];)
}

/// The shard key, read like an index's keys.
fn shard_key(c: &Container, list: &Option<KeyList>, errors: &mut Accumulator) -> (Vec<Key>, TokenStream) {
    let mut keys = Vec::new();
    let mut nested = TokenStream::new();
    for item in list.iter().flat_map(|l| &l.items) {
        let Some(kind) = errors.handle(KeyKind::from_item(item, false)) else { continue };
        if !(kind.is_ordered() || kind == KeyKind::Hashed) || kind == KeyKind::Desc {
            errors.push(
                Error::custom("a shard key field is `1` (ranged) or `\"hashed\"`").with_span(&item.span),
            );
        }
        if let Some(r) = errors.handle(paths::resolve(c, &item.path, item.span)) {
            nested.extend(paths::nested_checks(c, &r, item.span, false));
        }
        keys.push(Key { path: item.path.clone(), kind, span: item.span });
    }
    if let (true, Some(span)) = (keys.is_empty(), list.as_ref().and_then(|l| l.span)) {
        errors.push(Error::custom("`shard_key()` is empty").with_span(&span));
    }
    let items = keys.iter().map(|k| {
        let path = &k.path;
        let kind = k.kind.tokens();
        quote!((#path, #kind))
    });
    let tokens = if keys.is_empty() {
        TokenStream::new()
    } else {
        quote!(const SHARD_KEY: &'static [(&'static str, __ds::IndexKey)] = &[#(#items),*];)
    };
    (keys, quote!(#tokens #nested))
}
