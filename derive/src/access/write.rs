//! Write rows: `#[access(..., update(push(items), set(status), inc(total), pull(tags)))]`
//! is a typed single-command update of the one document the row's filter names
//! (`docshape::access::Update` runs it). A `push` into an array with a bound carries
//! the bound into the command's filter.

use darling::error::Accumulator;
use darling::{Error, FromMeta};
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use crate::access::find::{equality, param_name, param_type, ranges};
use crate::access::Access;
use crate::ast::Container;
use crate::attr::index_keys::KeyList;
use crate::common::fields::stamp_of;
use crate::common::message::did_you_mean;
use crate::common::message::rule;
use crate::common::paths;
use crate::common::respan::respan;
use crate::common::types::{element, is_option};
use crate::index::IndexDef;

/// `update(...)` as written: each operation with its fields, in the order written
/// (the generated method's parameters follow it).
#[derive(Default)]
pub(crate) struct UpdateOpts {
    items: Vec<(Op, KeyList)>,
}

/// The operations a write row can apply.
const OPS: &[&str] = &["push", "set", "inc", "pull"];

impl FromMeta for UpdateOpts {
    fn from_list(items: &[darling::ast::NestedMeta]) -> darling::Result<Self> {
        let mut errors = Error::accumulator();
        let mut out = UpdateOpts::default();
        for item in items {
            let darling::ast::NestedMeta::Meta(meta) = item else {
                errors.push(
                    Error::custom("expected `push(field)`, `set(field)`, `inc(field)` or `pull(field)`")
                        .with_span(item),
                );
                continue;
            };
            let word = meta.path().get_ident().map(ToString::to_string).unwrap_or_default();
            let op = match word.as_str() {
                "push" => Op::Push,
                "set" => Op::Set,
                "inc" => Op::Inc,
                "pull" => Op::Pull,
                other => {
                    let hint = did_you_mean(other, OPS)
                        .map(|s| format!("; did you mean `{s}`?"))
                        .unwrap_or_else(|| "; the operations are push, set, inc and pull".to_owned());
                    errors.push(
                        Error::custom(format!("`{other}` is not an update operation{hint}"))
                            .with_span(meta.path()),
                    );
                    continue;
                }
            };
            if let Some(list) = errors.handle(KeyList::from_meta(meta)) {
                out.items.push((op, list));
            }
        }
        errors.finish_with(out)
    }
}

/// What an update does to one field.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Op {
    Set,
    Inc,
    Push,
    Pull,
}

impl Op {
    pub(crate) fn word(self) -> &'static str {
        match self {
            Op::Set => "set",
            Op::Inc => "inc",
            Op::Push => "push",
            Op::Pull => "pull",
        }
    }
}

/// `upsert` or `upsert(insert(created_at), default(score))` as written.
#[derive(Default)]
pub(crate) struct UpsertOpts {
    insert: Option<KeyList>,
    default: Option<KeyList>,
}

impl FromMeta for UpsertOpts {
    fn from_word() -> darling::Result<Self> {
        Ok(Self::default())
    }

    fn from_list(items: &[darling::ast::NestedMeta]) -> darling::Result<Self> {
        let mut errors = Error::accumulator();
        let mut out = UpsertOpts::default();
        for item in items {
            let darling::ast::NestedMeta::Meta(meta) = item else {
                errors.push(
                    Error::custom("expected `insert(field, ...)` or `default(field, ...)`").with_span(item),
                );
                continue;
            };
            let word = meta.path().get_ident().map(ToString::to_string).unwrap_or_default();
            let slot = match word.as_str() {
                "insert" => &mut out.insert,
                "default" => &mut out.default,
                other => {
                    let hint = did_you_mean(other, &["insert", "default"])
                        .map(|s| format!("; did you mean `{s}`?"))
                        .unwrap_or_default();
                    errors.push(Error::custom(format!("`{other}` is not an upsert option: `insert(field, ...)` writes a parameter each, `default(field, ...)` the field type's `Default`, only when the document is created{hint}")).with_span(meta.path()));
                    continue;
                }
            };
            if slot.is_some() {
                errors.push(
                    Error::custom(format!("`{word}(...)` is given twice: list every field in one"))
                        .with_span(meta.path()),
                );
                continue;
            }
            *slot = errors.handle(KeyList::from_meta(meta));
        }
        errors.finish_with(out)
    }
}

/// A checked upsert: what a created document gets besides the filter and the update.
pub(crate) struct UpsertRow {
    pub span: Span,
    /// Fields written only on insert, from a parameter each, in the order written.
    pub insert: Vec<(String, Span)>,
    /// Fields written only on insert, with their type's `Default`.
    pub default: Vec<(String, Span)>,
}

/// Reads `upsert`; `write` says whether the row has `update(...)`.
pub(crate) fn read_upsert(
    opts: Option<(UpsertOpts, Span)>,
    write: bool,
    errors: &mut Accumulator,
) -> Option<UpsertRow> {
    let (opts, span) = opts?;
    if !write {
        errors.push(Error::custom("`upsert` belongs to a write row: it creates the document the row's update finds missing; add `update(...)`, like `update(set(value))`").with_span(&span));
        return None;
    }
    let mut seen: Vec<String> = Vec::new();
    let mut list = |l: &Option<KeyList>, what: &str, errors: &mut Accumulator| {
        let mut out = Vec::new();
        for item in l.iter().flat_map(|l| &l.items) {
            if let Some((_, vspan)) = &item.value {
                errors.push(
                    Error::custom(format!(
                        "`{what}({})` names a stored field; {}",
                        item.path,
                        if what == "insert" {
                            "its value is the generated method's parameter"
                        } else {
                            "its value is its type's `Default`"
                        }
                    ))
                    .with_span(vspan),
                );
            }
            if seen.contains(&item.path) {
                errors.push(
                    Error::custom(format!("`{}` is written on insert twice: keep one", item.path))
                        .with_span(&item.span),
                );
                continue;
            }
            seen.push(item.path.clone());
            out.push((item.path.clone(), item.span));
        }
        out
    };
    let insert = list(&opts.insert, "insert", errors);
    let default = list(&opts.default, "default", errors);
    Some(UpsertRow { span, insert, default })
}

/// A checked write row's update.
pub(crate) struct WriteRow {
    pub span: Span,
    /// Each field the update writes: what it does, its stored path and where it was written.
    pub ops: Vec<(Op, String, Span)>,
}

/// Reads `update(...)`; the row's other keys are checked in [`check`].
pub(crate) fn read(opts: Option<(UpdateOpts, Span)>, errors: &mut Accumulator) -> Option<WriteRow> {
    let (opts, span) = opts?;
    let mut ops = Vec::new();
    for (op, list) in &opts.items {
        let op = *op;
        for item in &list.items {
            if let Some((_, vspan)) = &item.value {
                errors.push(
                    Error::custom(format!(
                        "`{}({})` names a stored field; its value is the generated method's parameter",
                        op.word(),
                        item.path
                    ))
                    .with_span(vspan),
                );
            }
            if ops.iter().any(|(_, p, _)| *p == item.path) {
                errors.push(
                    Error::custom(format!("`{}` is written twice by one update: keep one", item.path))
                        .with_span(&item.span),
                );
            }
            ops.push((op, item.path.clone(), item.span));
        }
    }
    if ops.is_empty() {
        errors.push(
            Error::custom("`update(...)` is empty: name what it writes, like `update(push(items))` or `update(set(status), inc(total_cents))`")
                .with_span(&span),
        );
    }
    Some(WriteRow { span, ops })
}

/// Numbers as their type is spelt: the types `$inc` can add to.
const NUMBERS: &[&str] =
    &["i8", "i16", "i32", "i64", "isize", "u8", "u16", "u32", "u64", "usize", "f32", "f64"];

/// A write row names one document by a filter, reads nothing, and each field it
/// writes exists with a type its operation can apply to. Returns the type-level checks.
pub(crate) fn check(
    c: &Container,
    a: &Access,
    indexes: &[IndexDef],
    errors: &mut Accumulator,
) -> TokenStream {
    let Some(w) = &a.update else { return TokenStream::new() };
    let mut checks = TokenStream::new();
    if let Some(u) = &a.upsert {
        check_upsert(c, a, w, u, indexes, errors);
    }
    if a.filter.is_empty() && a.range.is_empty() {
        errors.push(Error::custom(format!(
            "write row `{}` has no filter, so it would update whichever document comes first; name the document with `filter(...)`, like `filter(_id)`",
            a.name
        )).with_span(&w.span));
    }
    if let Some(span) = a.paginate {
        errors.push(
            Error::custom("`paginate` reads pages; a row with `update(...)` writes one document: split them into two rows")
                .with_span(&span),
        );
    }
    if let Some((_, span)) = a.fields.first() {
        errors.push(Error::custom(format!(
            "write row `{}` returns the updated document's `_id`, not fields: drop `fields(...)`, or declare a read row for what is read",
            a.name
        )).with_span(span));
    }
    for (op, path, span) in &w.ops {
        if path == "_id" {
            errors.push(Error::custom("`_id` cannot change: an update never writes it").with_span(span));
            continue;
        }
        let Some(r) = errors.handle(paths::resolve(c, path, *span)) else { continue };
        checks.extend(paths::nested_checks(c, &r, *span, false));
        let Some(field) = r.field else { continue };
        if let Some((stamp, _)) = stamp_of(field).filter(|_| r.rest.is_empty()) {
            errors.push(Error::custom(format!(
                "`{}({path})`: `{path}` is `#[{stamp}]`, which every write sets itself in the same command ({}); a write row never takes it as a parameter: drop it from `update(...)`",
                op.word(),
                if stamp == "revision" { "`$inc` by one" } else { "from the server's clock" }
            )).with_span(span));
            continue;
        }
        let ty = &field.recv.ty;
        let spelt = quote!(#ty).to_string().replace(' ', "");
        let nested = !r.rest.is_empty();
        match op {
            Op::Push | Op::Pull if nested => errors.push(Error::custom(format!(
                "`{}({path})`: a push or pull writes a top-level array field; `{path}` is a nested path",
                op.word()
            )).with_span(span)),
            Op::Push | Op::Pull if !r.array => errors.push(Error::custom(format!(
                "`{}({path})`: `{path}` is `{spelt}`, not an array, so there is nothing to {} into; use `set({path})` to replace it",
                op.word(),
                op.word()
            )).with_span(span)),
            Op::Inc if !nested => {
                let (inner, array) = element(ty);
                let inner = inner.map(|t| quote!(#t).to_string().replace(' ', "")).unwrap_or_default();
                if array || !NUMBERS.contains(&inner.as_str()) && is_spelt_non_number(&inner) {
                    errors.push(Error::custom(format!(
                        "`inc({path})`: `{path}` is `{spelt}`, not a number, so `$inc` cannot add to it; use `set({path})`"
                    )).with_span(span));
                } else if !NUMBERS.contains(&inner.as_str()) {
                    // A type the derive cannot read by its spelling: the compiler checks it.
                    let assert = respan(quote!(__ds::assert_number::<#ty>), *span);
                    checks.extend(quote! { const _: () = #assert(); });
                }
            }
            _ => {}
        }
    }
    checks
}

/// `T` for `Option<T>`, else the type itself.
fn strip_option(ty: &syn::Type) -> syn::Type {
    if is_option(ty) {
        if let syn::Type::Path(p) = ty {
            if let Some(syn::PathArguments::AngleBracketed(args)) =
                p.path.segments.last().map(|s| &s.arguments)
            {
                if let Some(syn::GenericArgument::Type(t)) = args.args.first() {
                    return t.clone();
                }
            }
        }
    }
    ty.clone()
}

/// The last segment of a type's path, through one `Option`: `ObjectId` for
/// `Option<bson::oid::ObjectId>`.
fn last_segment(ty: &syn::Type) -> String {
    match &strip_option(ty) {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default(),
        _ => String::new(),
    }
}

/// The `_id` an upsert row sets on insert when its filter does not name `_id`: the
/// `insert(_id)` parameter (`None` here), or a new `ObjectId` when that is what the
/// model's `_id` holds (`Some(type)`; the model without an `_id` field stores one).
fn generated_id(c: &Container) -> Option<TokenStream> {
    match paths::stored_fields(c).into_iter().find(|f| f.name.as_deref() == Some("_id")) {
        None => Some(quote!(__ds::ObjectId)),
        Some(f) if last_segment(&f.recv.ty) == "ObjectId" => {
            let ty = strip_option(&f.recv.ty);
            Some(quote!(#ty))
        }
        Some(_) => None,
    }
}

/// An upsert row creates a document that the model's validator accepts, and names it
/// by a key a unique index holds.
fn check_upsert(
    c: &Container,
    a: &Access,
    w: &WriteRow,
    u: &UpsertRow,
    indexes: &[IndexDef],
    errors: &mut Accumulator,
) {
    if let (Some(inner), Some(variant)) = (&c.wraps, &a.variant) {
        let inner = quote::quote!(#inner).to_string().replace(' ', "");
        errors.push(Error::custom(format!("upsert row `{}` is on `{variant}`, a newtype over `{inner}`, whose fields this derive cannot see to check that a created document holds every one; keep this row an update and insert documents whole", a.name)).with_span(&u.span));
        return;
    }
    if let Some((_, span)) = a.range.first() {
        errors.push(Error::custom(format!("upsert row `{}` has `range(...)`: a created document takes its filter's values, and a range names none; name the document by equality only", a.name)).with_span(span));
    }
    for (path, span) in &a.filter {
        if path.contains('.') {
            errors.push(Error::custom(format!("upsert row `{}` filters on `{path}`, a nested path: a created document would hold only that part of `{}`; filter on whole top-level fields", a.name, path.split('.').next().unwrap_or(path))).with_span(span));
            continue;
        }
        // A stamp in an upsert's filter: the write is meant to be conditional, but a
        // miss creates a document instead of reporting the conflict.
        let stamp = paths::resolve(c, path, *span).ok().and_then(|r| r.field).and_then(|f| stamp_of(f));
        if let Some((stamp, _)) = stamp {
            errors.push(Error::custom(format!("upsert row `{}` filters on `{path}`, the `#[{stamp}]` field: a filter on it makes a conditional write, and an upsert would create a second document (or collide on `_id`) when another writer moved it, instead of reporting the conflict; drop `upsert` (the row then returns `UpdateError::Conflict`), or drop `{path}` from the filter", a.name)).with_span(span));
        }
    }
    // Fields written on insert are neither matched nor updated: the server refuses a
    // path two operators write.
    let written: Vec<&str> =
        a.filter.iter().map(|(p, _)| p.as_str()).chain(w.ops.iter().map(|(_, p, _)| p.as_str())).collect();
    for (path, span) in u.insert.iter().chain(&u.default) {
        if written.contains(&path.as_str()) {
            errors.push(Error::custom(format!("`{path}` is already written by the row's filter or update; a created document gets that value: drop it from `upsert(...)`")).with_span(span));
            continue;
        }
        if path.contains('.') {
            errors.push(
                Error::custom(format!("`{path}`: `upsert(...)` writes whole top-level fields on insert"))
                    .with_span(span),
            );
            continue;
        }
        if path == "_id" && u.default.iter().any(|(p, _)| p == "_id") {
            errors.push(
                Error::custom(
                    "`_id` has no default: set it with `insert(_id)`, or leave it out for a new `ObjectId`",
                )
                .with_span(span),
            );
            continue;
        }
        if let Some(r) = errors.handle(paths::resolve(c, path, *span)) {
            if let Some((stamp, _)) = r.field.and_then(stamp_of) {
                errors.push(Error::custom(format!("`{path}` is `#[{stamp}]`, which the upsert sets itself when it creates the document: drop it from `upsert(...)`")).with_span(span));
                continue;
            }
            if r.field.is_none() && path != "_id" {
                errors.push(
                    Error::custom(format!(
                        "`{path}` is inside a flattened field: `upsert(...)` writes the model's own fields"
                    ))
                    .with_span(span),
                );
            }
            let default = u.default.iter().any(|(p, _)| p == path);
            if default && r.field.is_some_and(|f| f.serde.with.is_some()) {
                errors.push(Error::custom(format!("`default({path})`: `{path}` is stored by its `serialize_with`, not as its type's `Default`; use `insert({path})`")).with_span(span));
            }
        }
    }
    // What a created document holds: the filter's values, each field the update sets,
    // adds to (`$inc` creates the amount) or pushes to (a one-element array), and what
    // is written on insert. A `pull` creates nothing, and a nested path only part of
    // its field.
    let mut filled: Vec<&str> = a.filter.iter().map(|(p, _)| p.as_str()).collect();
    // A row on one variant of a polymorphic model: its filter's discriminator `$eq`
    // is copied into the created document, as the filter's other values are.
    filled.extend(a.discriminator.as_ref().map(|(tag, _)| tag.as_str()));
    // Soft delete: the live predicate `{deleted_at: null}` is copied too.
    filled.extend(a.live.as_deref());
    filled.extend(
        w.ops.iter().filter(|(op, p, _)| *op != Op::Pull && !p.contains('.')).map(|(_, p, _)| p.as_str()),
    );
    filled.extend(u.insert.iter().chain(&u.default).map(|(p, _)| p.as_str()));
    let mut missing = Vec::new();
    let mut flattened = false;
    for f in paths::stored_fields(c) {
        let Some(name) = f.name.as_deref() else { continue };
        if f.serde.flatten.is_some() {
            flattened = true;
            continue;
        }
        // The validator requires what serde always writes; the version field comes
        // from the version the write row's filter requires.
        let required = f.serde.skip_serializing_if.is_none();
        // So do the stamps, which the upsert itself writes.
        let version =
            f.recv.attrs.iter().any(|a| a.path().is_ident("schema_version")) || stamp_of(f).is_some();
        if required && !version && name != "_id" && !filled.contains(&name) {
            missing.push(name.to_owned());
        }
    }
    if flattened {
        errors.push(Error::custom(format!("upsert row `{}`: the model has a flattened field, whose keys a created document must hold and `upsert(...)` cannot name; keep this row an update and insert documents whole", a.name)).with_span(&u.span));
    }
    if !missing.is_empty() {
        let list = missing.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", ");
        let names = missing.join(", ");
        errors.push(Error::custom(format!(
            "upsert row `{}` would create documents without {list}, which the model's validator requires, so the server would refuse every insert; write them when the document is created: `upsert(insert({names}))` (one parameter each) or `upsert(default({names}))` (each type's `Default`), or in `update(set(...))`",
            a.name
        )).with_span(&u.span));
    }
    let filters_id = a.filter.iter().any(|(p, _)| p == "_id");
    let inserts_id = u.insert.iter().any(|(p, _)| p == "_id");
    if !filters_id && !inserts_id && generated_id(c).is_none() {
        errors.push(Error::custom(format!(
            "upsert row `{}` creates documents whose `_id` nothing sets, and the model's `_id` is no `ObjectId` the server or docshape could make; set it on insert with `upsert(insert(_id))`, or filter on `_id`",
            a.name
        )).with_span(&u.span));
    }
    if filters_id && inserts_id {
        if let Some((_, span)) = u.insert.iter().find(|(p, _)| p == "_id") {
            errors.push(Error::custom("`_id` is in the row's filter, which gives a created document its `_id`: drop `_id` from `insert(...)`").with_span(span));
        }
    }
    // The race: two writers read "no such document" and both insert. A unique index
    // on keys the filter matches by equality leaves one of them a duplicate key, which
    // the upsert retries as an update.
    let keys: Vec<&str> = a.filter.iter().map(|(p, _)| p.as_str()).collect();
    let unique = filters_id
        || indexes.iter().any(|i| {
            i.unique.is_some()
                && a.read_whole(i)
                && i.locale.is_some() == a.case_insensitive
                && i.keys.iter().all(|k| k.kind.is_ordered() && keys.contains(&k.path.as_str()))
        });
    if !unique && !a.allow.waives("upsert_without_unique") && !keys.is_empty() {
        let ci = if a.case_insensitive { ", case_insensitive" } else { "" };
        let keys_text = keys
            .iter()
            .map(|k| if k.contains('.') { format!("\"{k}\"") } else { (*k).to_owned() })
            .collect::<Vec<_>>()
            .join(", ");
        errors.push(Error::custom(rule("upsert_without_unique", format!(
            "upsert row `{}` names its document by {}, which no unique index holds: two writers upserting the same key at once can both insert, and the collection then holds two documents for one key; declare #[index(keys({keys_text}), unique{ci})] (or make the index serving the row unique), or waive with `allow(upsert_without_unique, reason = \"...\")`",
            a.name, keys.join(", ")
        ))).with_span(&u.span));
    }
}

/// Types whose spelling says they are not numbers.
fn is_spelt_non_number(ty: &str) -> bool {
    matches!(ty, "String" | "str" | "bool" | "char" | "DateTime" | "ObjectId" | "Document" | "Uuid")
        || ty.ends_with("::String")
        || ty.ends_with("::DateTime")
}

/// The families that cache the model's reads: each write deletes the written document's
/// key in all of them. Each under its `cache = Family`, where a family over another type
/// than the `_id` is reported (once: the cached row's finder names the same tokens).
fn caches(c: &Container, patterns: &[Access]) -> Vec<TokenStream> {
    let model = &c.ident;
    patterns
        .iter()
        .filter_map(|a| a.cache.as_ref().map(|f| (a, f)))
        .map(|(a, f)| match a.filter.as_slice() {
            // A tenant model's row, `filter(org_id, _id)`: its keys hold the tenant.
            [(tenant, _), _] => {
                let ty = param_type(c, tenant);
                quote_spanned!(f.span()=> __ds::cache_in::<#f, #ty, <#model as __ds::Identified>::Id>(#tenant).written)
            }
            _ => quote_spanned!(f.span()=> __ds::cache_of::<#f, <#model as __ds::Identified>::Id>().written),
        })
        .collect()
}

/// The model's cached families, registered under its collection: every docshape writer
/// of the model (versioned writers, copies' `update_one`) finds the families to
/// invalidate by the collection. A generic model has no one collection to register.
pub(crate) fn registration(c: &Container, patterns: &[Access]) -> TokenStream {
    let model = &c.ident;
    let caches = caches(c, patterns);
    if caches.is_empty() || !c.generics.params.is_empty() {
        return TokenStream::new();
    }
    quote! {
        __ds::inventory::submit! {
            __ds::CachedModel {
                collection: <#model as __ds::Model>::COLLECTION,
                families: &[#(#caches),*],
            }
        }
    }
}

/// The type of the value a `set(path)` (or an upsert's `insert(path)`) writes: the whole
/// field, as declared (`Vec<T>`, `Option<T>`, an embedded struct), not one element as
/// an equality filter on an array takes ([`param_type`]): `$set` replaces the field.
/// A nested path takes its last segment's own type (`HasField::Param`) already.
fn whole_type(c: &Container, path: &str) -> TokenStream {
    let resolved = paths::resolve(c, path, Span::call_site()).ok();
    match resolved.as_ref().and_then(|r| r.rest.is_empty().then_some(r.field)) {
        Some(Some(f)) if f.serde.with.is_none() && f.recv.bson_type.is_none() => {
            let ty = &f.recv.ty;
            quote!(#ty)
        }
        Some(Some(_)) => quote!(__ds::Bson),
        _ => param_type(c, path),
    }
}

/// The write methods of the rows with `update(...)`; of the row at `only` alone when it
/// is set (a polymorphic model's rows each write their variant's fields).
pub(crate) fn expand(
    c: &Container,
    patterns: &[Access],
    versioned: bool,
    only: Option<usize>,
) -> TokenStream {
    let mut methods = Vec::new();
    let caches = caches(c, patterns);
    for (i, a) in patterns.iter().enumerate() {
        if only.is_some_and(|o| o != i) {
            continue;
        }
        let (Some(w), Some(method)) = (&a.update, &a.method) else { continue };
        let mut taken = Vec::new();
        let (mut params, filter_inserts) = equality(c, a, &mut taken);
        let (range_params, range_inserts) = ranges(c, a, &mut taken);
        params.extend(range_params);
        let mut updates = Vec::new();
        for (op, path, _) in &w.ops {
            let param = param_name(path, &mut taken);
            let resolved = paths::resolve(c, path, Span::call_site()).ok();
            let field = resolved.as_ref().and_then(|r| r.field);
            let ty = match op {
                Op::Push | Op::Pull => {
                    let elem = field.and_then(|f| element(&f.recv.ty).0);
                    match elem {
                        Some(t) if field.is_some_and(|f| f.serde.with.is_none()) => quote!(#t),
                        _ => quote!(__ds::Bson),
                    }
                }
                Op::Set => whole_type(c, path),
                Op::Inc => param_type(c, path),
            };
            params.push(quote!(#param: impl ::core::convert::Into<#ty>));
            let value = quote!(&::core::convert::Into::<#ty>::into(#param));
            updates.push(match op {
                Op::Set => quote!(.set(#path, #value)),
                Op::Inc => quote!(.inc(#path, #value)),
                Op::Pull => quote!(.pull(#path, #value)),
                Op::Push => {
                    let max = field.and_then(|f| f.recv.max_items.as_ref().map(|m| *m.as_ref()));
                    let bound = match max {
                        Some(max) => {
                            quote!(::core::option::Option::Some(__ds::PushBound { field: #path, max: #max }))
                        }
                        None => quote!(::core::option::Option::None),
                    };
                    quote!(.push(#path, #value, #bound))
                }
            });
        }
        if let Some(u) = &a.upsert {
            for (path, _) in &u.insert {
                let param = param_name(path, &mut taken);
                let ty = whole_type(c, path);
                params.push(quote!(#param: impl ::core::convert::Into<#ty>));
                updates.push(quote!(.set_on_insert(#path, &::core::convert::Into::<#ty>::into(#param))));
            }
            for (path, _) in &u.default {
                let field = paths::resolve(c, path, Span::call_site()).ok().and_then(|r| r.field);
                if let Some(f) = field {
                    let ty = &f.recv.ty;
                    let value =
                        respan(quote!(<#ty as ::core::default::Default>::default()), f.recv.ty.span());
                    updates.push(quote!(.set_on_insert(#path, &#value)));
                }
            }
            let names_id =
                a.filter.iter().any(|(p, _)| p == "_id") || u.insert.iter().any(|(p, _)| p == "_id");
            if let (false, Some(ty)) = (names_id, generated_id(c)) {
                // The created document's `_id`, made here so that the reply can say
                // which document an insert created.
                updates.push(quote!(.generated_id::<#ty>(&__ds::ObjectId::new())));
            }
        }
        // A versioned model's write row writes the current shape: to current documents,
        // after upgrading an older one in place (the seed's lazy migration).
        let version = versioned.then(|| {
            quote! {
                let __update = __update
                    .versioned(<Self as __ds::Versioned>::VERSION_FIELD, <Self as __ds::Versioned>::VERSION)
                    .upgrading(__ds::upgrade_in_place::<Self>);
            }
        });
        let what: Vec<String> = w.ops.iter().map(|(op, p, _)| format!("{} `{p}`", op.word())).collect();
        let doc = format!(
            "The write row `{}` ({}): {} in the one document its filter names, in one command. Served by index `{}`.",
            a.name,
            a.operation,
            what.join(", "),
            a.index.as_deref().unwrap_or("none (waived)"),
        );
        let vis = &c.vis;
        let (ret, wrap) = if a.upsert.is_some() {
            // An upsert row's write deletes cached keys through the connection
            // installed with `keys::invalidate_on_write`, as docshape's other writers do.
            (quote!(__ds::Upsert<Self>), quote!(__ds::Upsert::new(__update)))
        } else if caches.is_empty() {
            (quote!(__ds::Update<Self>), quote!(__update))
        } else {
            (
                quote!(__ds::CachedUpdate<Self>),
                quote! {{
                    const __KEYS: &[__ds::CachedFamily] =
                        &[#(#caches),*];
                    __ds::CachedUpdate::new(__update, __KEYS)
                }},
            )
        };
        let doc = if let Some(u) = &a.upsert {
            let mut on_insert: Vec<String> =
                u.insert.iter().map(|(p, _)| format!("`{p}` (a parameter)")).collect();
            on_insert.extend(u.default.iter().map(|(p, _)| format!("`{p}` (its type's `Default`)")));
            let extra = if on_insert.is_empty() {
                String::new()
            } else {
                format!(", and {} on insert", on_insert.join(", "))
            };
            format!("{doc} When no document matches, creates it (an upsert): the filter's values, the written fields{extra}. `run` says whether it inserted or updated.")
        } else if caches.is_empty() {
            doc
        } else {
            format!("{doc} Deletes the document's cached copies after the update (`run(&db, &mut redis)`).")
        };
        methods.push(quote! {
            #[doc = #doc]
            #[allow(clippy::too_many_arguments)]
            #vis fn #method(#(#params),*) -> #ret {
                let __update = __ds::Update::row(
                    #i,
                    __ds::FilterBuilder::new()#(#filter_inserts)*#(#range_inserts)*.build(),
                    __ds::UpdateBuilder::new()#(#updates)*.build(),
                );
                #version
                #wrap
            }
        });
    }
    if methods.is_empty() {
        return TokenStream::new();
    }
    let ident = &c.ident;
    let generics = c.bounded_generics();
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    quote! {
        #[automatically_derived]
        impl #impl_generics #ident #ty_generics #where_clause {
            #(#methods)*
        }
    }
}
