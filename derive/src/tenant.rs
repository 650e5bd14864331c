//! `#[model(tenant = org_id)]` and `#[model(soft_delete = deleted_at)]`: predicates
//! every access row carries, checked here at compile time.
//!
//! A tenant model's every row filters on the tenant by equality, as the first field of
//! its `filter(...)` (so the tenant is the first parameter of every generated finder,
//! paginator, write and upsert row, and of their counts and explains); every index
//! leads with the tenant unless waived with `allow(cross_tenant, reason = "...")` (a
//! TTL index, which has one key by MongoDB's rule and serves no row, excepted); so a
//! unique index is unique per tenant; a shard key leads with it.
//!
//! A soft-delete model's rows carry `{deleted_at: null}` (unless `include_deleted`);
//! its unique indexes are partial to that predicate, so a deleted document does not
//! block a new one; `delete_by_id` sets the field and `restore_by_id` clears it. The
//! rows' predicate is expanded by the access module (`Access::live`, set here).

use darling::error::Accumulator;
use darling::Error;
use proc_macro2::TokenStream;
use quote::quote;

use crate::access::partial_live;
use crate::ast::{Body, Field};
use crate::common::message::rule;
use crate::common::paths;
use crate::common::types::is_option;
use crate::facts::Facts;

/// A stored field named by `#[model(...)]`: its stored name and its Rust type.
struct Named {
    stored: String,
    ty: syn::Type,
}

/// The tenant and soft-delete fields of a model, as read.
#[derive(Default)]
pub(crate) struct Parsed {
    tenant: Option<Named>,
    soft_delete: Option<Named>,
}

/// The stored field `ident`; on a polymorphic model, the one every variant stores
/// under one name and type (the first variant's).
fn field<'a>(cx: &'a Facts, ident: &syn::Ident) -> Option<&'a Field> {
    let named = |f: &&Field| f.recv.ident.as_ref().is_some_and(|i| i == ident);
    match &cx.container.body {
        Body::Enum(variants) => {
            let stored = |f: &&Field| named(f) && !f.serde.skip && f.name.is_some();
            let found: Vec<&Field> =
                variants.iter().map(|v| v.fields.iter().find(stored)).collect::<Option<_>>()?;
            let first = *found.first()?;
            let ty = |f: &Field| {
                let ty = &f.recv.ty;
                quote!(#ty).to_string()
            };
            found.iter().all(|f| f.name == first.name && ty(f) == ty(first)).then_some(first)
        }
        Body::Struct(..) => paths::stored_fields(&cx.container).into_iter().find(named),
    }
}

/// Reads `tenant = field` and `soft_delete = field`: each names a stored field of the
/// struct; the tenant is required (no `Option`), the deletion date optional.
pub(crate) fn parse(cx: &Facts, errors: &mut Accumulator) -> Parsed {
    let Some(m) = &cx.model else { return Parsed::default() };
    let mut out = Parsed::default();
    if let Some(ident) = &m.tenant {
        match field(cx, ident) {
            None => errors.push(Error::custom(format!("`tenant = {ident}`: the struct (or, on a polymorphic model, one of its variants) stores no field `{ident}`; name the field that holds the document's tenant, like `tenant = org_id`, stored by every variant with one type")).with_span(ident)),
            Some(f) if is_option(&f.recv.ty) => errors.push(Error::custom(format!("`tenant = {ident}`: the tenant field is an `Option`, and a document without a tenant belongs to nobody; make it required")).with_span(ident)),
            Some(f) => out.tenant = Some(Named { stored: f.name.clone().unwrap_or_default(), ty: f.recv.ty.clone() }),
        }
    }
    if let Some(ident) = &m.soft_delete {
        match field(cx, ident) {
            None => errors.push(Error::custom(format!("`soft_delete = {ident}`: the struct (or, on a polymorphic model, one of its variants) stores no field `{ident}`; name the date field a deletion sets, like `soft_delete = deleted_at` on `deleted_at: Option<DateTime>`, stored by every variant with one type")).with_span(ident)),
            Some(f) if !is_option(&f.recv.ty) => errors.push(Error::custom(format!("`soft_delete = {ident}`: a live document has no deletion date, so the field is an `Option` (`Option<DateTime>`)")).with_span(ident)),
            Some(f) => out.soft_delete = Some(Named { stored: f.name.clone().unwrap_or_default(), ty: f.recv.ty.clone() }),
        }
    }
    out
}

/// The rules; marks every row that reads live documents only. Runs before the access
/// check, which needs the mark to know which partial indexes serve a row.
pub(crate) fn check(
    parsed: &Parsed,
    cx: &Facts,
    index: &crate::index::Parsed,
    access: &mut crate::access::Parsed,
    errors: &mut Accumulator,
) {
    let Some(m) = &cx.model else { return };
    for a in &mut access.patterns {
        match (&parsed.soft_delete, a.include_deleted) {
            (Some(sd), None) => a.live = Some(sd.stored.clone()),
            (Some(_), Some(_)) => {}
            (None, Some(span)) => errors.push(Error::custom("`include_deleted` reads deleted documents too, and this model has none: declare `#[model(soft_delete = deleted_at)]` or drop it").with_span(&span)),
            (None, None) => {}
        }
    }
    if let Some(t) = &parsed.tenant {
        let name = &t.stored;
        for a in &mut access.patterns {
            // Once reported, the row is read as fixed (the tenant first), so that the
            // index rules do not report the same mistake again.
            match a.filter.iter().position(|(p, _)| p == name) {
                Some(0) => {}
                Some(i) => {
                    errors.push(Error::custom(rule("tenant_filter", format!("the tenant `{name}` is the first parameter of every generated method: put it first, `filter({name}, ...)`"))).with_span(&a.filter[i].1));
                    let tenant = a.filter.remove(i);
                    a.filter.insert(0, tenant);
                }
                None => {
                    errors.push(Error::custom(rule("tenant_filter", format!("access pattern `{}` does not filter on the tenant `{name}`, so it could read or write another tenant's documents; add it first: `filter({name}, ...)`", a.name))).with_span(&a.span));
                    a.filter.insert(0, (name.clone(), a.span));
                }
            }
        }
        for a in &mut access.patterns {
            // A document never changes tenant: its cached keys (which hold the tenant)
            // are found from the tenant it has, and no write row moves it to another.
            let moved = a
                .update
                .as_ref()
                .and_then(|u| u.ops.iter().find(|(_, p, _)| p == name || p.starts_with(&format!("{name}."))));
            if let Some((_, _, span)) = moved {
                errors.push(Error::custom(rule("tenant_write", format!("write row `{}` writes the tenant `{name}`: a document never moves to another tenant (every row finds it by its tenant, and its cached keys hold it); leave `{name}` out of `update(...)`, or insert a copy for the other tenant", a.name))).with_span(span));
            }
            let Some(family) = &a.cache else { continue };
            if !matches!(a.filter.as_slice(), [_, (id, _)] if id == "_id") {
                errors.push(Error::custom(format!("a cached row of a tenant model reads one document by its tenant and its id, and its key holds both: `filter({name}, _id)`")).with_span(family));
                a.filter.retain(|(p, _)| p == name || p == "_id");
            }
        }
        for def in &index.indexes {
            let Some(lead) = def.keys.first() else { continue };
            // A TTL index has one key (MongoDB's rule) and serves no row: it expires
            // documents of every tenant alike.
            if lead.path == *name || def.ttl.is_some() || def.allow.waives("cross_tenant") {
                continue;
            }
            let unique = if def.unique.is_some() { " unique across every tenant, and" } else { "" };
            errors.push(Error::custom(rule("tenant_index", format!("index `{}` does not lead with the tenant `{name}`: it is{unique} a scan over every tenant's keys; lead with it, `keys({name}, {})`, or declare it global: `allow(cross_tenant, reason = \"...\")`", def.name, lead.path))).with_span(&lead.span));
        }
        if let Some(shard) = &m.shard_key {
            if let Some(first) = shard.items.first().filter(|k| k.path != *name) {
                errors.push(Error::custom(rule("tenant_shard_key", format!("the shard key does not lead with the tenant `{name}`: every row filters on it, and only a shard key led by it sends each row to one shard; `shard_key({name}, ...)`"))).with_span(&first.span));
            }
        }
    }
    if parsed.tenant.is_none() {
        for a in &mut access.patterns {
            let Some(family) = &a.cache else { continue };
            // `filter(x, _id)` passed the reading as a tenant model's shape.
            if a.filter.len() > 1 {
                errors.push(Error::custom("a cached row reads one document by its id: its key is built from the `_id`, so the row filters on `_id` alone (`filter(_id)`)").with_span(family));
                a.filter.retain(|(p, _)| p == "_id");
            }
        }
    }
    if let Some(sd) = &parsed.soft_delete {
        let name = &sd.stored;
        for def in &index.indexes {
            let Some(unique) = def.unique else { continue };
            if !def.partial.as_deref().is_some_and(|p| partial_live(p, name)) {
                errors.push(Error::custom(rule("soft_delete_unique", format!("unique index `{}` on a soft-delete model: a deleted document would block a new one with the same keys; make it unique among live documents, `partial_filter = r#\"{{\"{name}\": null}}\"#`", def.name))).with_span(&unique));
            }
        }
    }
}

/// `TENANT` and `SOFT_DELETE` on the model, and on a soft-delete model (a struct, a
/// polymorphic enum, a generic model), `delete_by_id` and `restore_by_id` (tenant first
/// on a tenant model).
pub(crate) fn expand(parsed: &Parsed, cx: &Facts) -> crate::common::expansion::Expansion {
    let tenant = parsed.tenant.as_ref().map(|t| &t.stored);
    let soft = parsed.soft_delete.as_ref().map(|s| &s.stored);
    let mut model = TokenStream::new();
    if let Some(t) = tenant {
        model.extend(
            quote!(const TENANT: ::core::option::Option<&'static str> = ::core::option::Option::Some(#t);),
        );
    }
    if let Some(s) = soft {
        model.extend(quote!(const SOFT_DELETE: ::core::option::Option<&'static str> = ::core::option::Option::Some(#s);));
    }
    let c = &cx.container;
    // A model without a tenant may be loaded by `_id` alone (`Ref::load`); a tenant
    // model's load by `_id` alone is then an error under the call, naming `load_in`.
    let no_tenant = match (&parsed.tenant, c.generics.params.is_empty()) {
        (None, true) => {
            let ident = &c.ident;
            quote!(#[automatically_derived] impl __ds::NoTenant for #ident {})
        }
        _ => TokenStream::new(),
    };
    let items = match &parsed.soft_delete {
        Some(sd) => {
            let field = &sd.stored;
            let (param, insert) = match &parsed.tenant {
                Some(t) => {
                    let (ty, name) = (&t.ty, &t.stored);
                    (
                        quote!(tenant: impl ::core::convert::Into<#ty>,),
                        quote!(.equal(#name, &::core::convert::Into::<#ty>::into(tenant))),
                    )
                }
                None => (TokenStream::new(), TokenStream::new()),
            };
            let (ident, vis) = (&c.ident, &c.vis);
            // A generic model has no `Identified` impl: its `_id` parameter is typed as
            // its finders' (the field's own type).
            let id = match c.generics.params.is_empty() {
                true => quote!(<Self as __ds::Identified>::Id),
                false => crate::access::param_type(c, "_id"),
            };
            let generics = c.bounded_generics();
            let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
            quote! {
                #[automatically_derived]
                impl #impl_generics #ident #ty_generics #where_clause {
                    /// Soft-deletes the live document `id` (of the tenant, on a tenant
                    /// model): sets its deletion date; every live row stops reading it.
                    #vis fn delete_by_id(#param id: impl ::core::convert::Into<#id>) -> __ds::SoftDelete<Self> {
                        let id: #id = ::core::convert::Into::into(id);
                        __ds::SoftDelete::delete(#field, __ds::FilterBuilder::new()#insert.equal("_id", &id).build())
                    }
                    /// Restores the deleted document `id` (of the tenant, on a tenant
                    /// model): clears its deletion date.
                    #vis fn restore_by_id(#param id: impl ::core::convert::Into<#id>) -> __ds::SoftDelete<Self> {
                        let id: #id = ::core::convert::Into::into(id);
                        __ds::SoftDelete::restore(#field, __ds::FilterBuilder::new()#insert.equal("_id", &id).build())
                    }
                }
            }
        }
        None => TokenStream::new(),
    };
    let items = quote!(#no_tenant #items);
    crate::common::expansion::Expansion { model, items, ..Default::default() }
}
