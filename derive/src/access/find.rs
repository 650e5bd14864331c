//! The read rows of the access-pattern table, executed: one typed finder method per
//! `#[access]` row without `paginate` or `update(...)`, and the view type its
//! `fields(...)` name (`docshape::access::Find` runs them).

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Meta, Token};

use crate::access::Access;
use crate::ast::{Container, Field};
use crate::common::paths;
use crate::index::KeyKind;

/// The most fields a view's `Serialize` writes through the runtime's `NamedFields`,
/// which implements `Serialize` for one to this many values.
const NAMED_FIELDS_MAX: usize = 16;

/// A parameter name for a stored path: `author_id`, `customer.id` -> `customer_id`.
pub(crate) fn param_name(path: &str, taken: &mut Vec<String>) -> syn::Ident {
    let mut name: String = path
        .trim_start_matches('_')
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' })
        .collect();
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert_str(0, "v_");
    }
    if syn::parse_str::<syn::Ident>(&name).is_err() {
        name.push('_');
    }
    while taken.contains(&name) {
        name.push('_');
    }
    taken.push(name.clone());
    format_ident!("{}", name)
}

/// The type a stored path's value is written from: a top-level field by its own type
/// (an array field by its element's),
/// a nested path by the type its last segment declares (through `HasField`), `_id` by
/// the model's id type. Only where the stored form is not the type's own `Serialize`
/// (a `serialize_with`, a field that cannot be named) is it `Bson`. Whatever the type,
/// the value is compared with `$eq` or under a comparison operator, so a `Document` or
/// `Bson` value is matched literally and never runs as an operator.
pub(crate) fn param_type(c: &Container, path: &str) -> TokenStream {
    let resolved = paths::resolve(c, path, Span::call_site()).ok();
    let generic = c.generics.type_params().next().is_some();
    match &resolved {
        // Equality on an array field matches the documents holding that element (the
        // multikey index is on the elements), so the parameter is one element.
        Some(r) if r.rest.is_empty() && r.array && r.field.is_some_and(|f| f.serde.with.is_none()) => {
            r.element.as_ref().map(|t| quote!(#t))
        }
        Some(r) if r.rest.is_empty() => match r.field {
            Some(f) if f.serde.with.is_none() && f.recv.bson_type.is_none() => {
                let ty = &f.recv.ty;
                Some(quote!(#ty))
            }
            Some(_) => None,
            None if path == "_id" && !generic => Some(quote!(<Self as __ds::Identified>::Id)),
            None => None,
        },
        Some(r) => paths::param_type(c, r, Span::call_site()),
        None => None,
    }
    .unwrap_or_else(|| quote!(__ds::Bson))
}

/// The equality parameters of a row and the calls that add them to a `FilterBuilder`
/// chain (`__ds::FilterBuilder::new()#(#calls)*.build()`).
pub(crate) fn equality(
    c: &Container,
    a: &Access,
    taken: &mut Vec<String>,
) -> (Vec<TokenStream>, Vec<TokenStream>) {
    let mut params = Vec::new();
    let mut inserts = Vec::new();
    for (path, _) in &a.filter {
        let param = param_name(path, taken);
        let ty = param_type(c, path);
        params.push(quote!(#param: impl ::core::convert::Into<#ty>));
        inserts.push(quote!(.equal(#path, &::core::convert::Into::<#ty>::into(#param))));
    }
    inserts.extend(discriminator(a));
    (params, inserts)
}

/// A row on one variant of a polymorphic model reads and writes only that variant's
/// documents: the discriminator's `$eq`, through the finders' typed builder.
fn discriminator(a: &Access) -> Option<TokenStream> {
    let tag = a.discriminator.as_ref().map(|(tag, value)| quote!(.tag(#tag, #value)));
    // Soft delete: a row reads and writes live documents only.
    let live = a.live.as_ref().map(|field| quote!(.live(#field)));
    (tag.is_some() || live.is_some()).then(|| quote!(#tag #live))
}

/// The range parameters of a row (`impl RangeBounds<FieldType>`) and their calls.
pub(crate) fn ranges(
    c: &Container,
    a: &Access,
    taken: &mut Vec<String>,
) -> (Vec<TokenStream>, Vec<TokenStream>) {
    let mut params = Vec::new();
    let mut inserts = Vec::new();
    for (path, _) in &a.range {
        let param = param_name(path, taken);
        let ty = param_type(c, path);
        params.push(quote!(#param: impl __ds::RangeBounds<#ty>));
        inserts.push(quote!(.range::<#ty>(#path, &#param)));
    }
    (params, inserts)
}

/// The finder methods, and the view types (outside the generated `const _`, so the
/// application can name them); of the row at `only` alone when it is set (a
/// polymorphic model's rows each read their variant's fields).
pub(crate) fn expand(
    c: &Container,
    patterns: &[Access],
    versioned: bool,
    only: Option<usize>,
) -> (TokenStream, TokenStream) {
    let mut views = TokenStream::new();
    let mut items = TokenStream::new();
    let mut methods = Vec::new();
    for (i, a) in patterns.iter().enumerate() {
        if only.is_some_and(|o| o != i) {
            continue;
        }
        let Some(method) = &a.method else { continue };
        if a.update.is_some() {
            continue;
        }
        let view = has_view(c, a).then(|| view(c, a, versioned));
        if let Some((_, tokens, impls)) = &view {
            views.extend(tokens.clone());
            items.extend(impls.clone());
        }
        if a.paginate.is_some() {
            // Its method is the paginator's, which returns the same view.
            continue;
        }
        let result = result_type(c, a);
        let mut taken = Vec::new();
        let (mut params, mut inserts) = equality(c, a, &mut taken);
        let (range_params, range_inserts) = ranges(c, a, &mut taken);
        params.extend(range_params);
        inserts.extend(range_inserts);
        let doc = finder_doc(a, view.as_ref().map(|_| view_ident(a).to_string()));
        let vis = &c.vis;
        if let Some(family) = &a.cache {
            methods.push(cached(c, i, a, method, family, &result, &doc, vis));
            items.extend(cached_copies(c, a, family));
            continue;
        }
        methods.push(quote! {
            #[doc = #doc]
            #[allow(clippy::too_many_arguments)]
            #vis fn #method(#(#params),*) -> __ds::Find<#result> {
                __ds::Find::row(#i, __ds::FilterBuilder::new()#(#inserts)*.build())
            }
        });
    }
    if !methods.is_empty() {
        let ident = &c.ident;
        let generics = c.bounded_generics();
        let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
        items.extend(quote! {
            #[automatically_derived]
            impl #impl_generics #ident #ty_generics #where_clause {
                #(#methods)*
            }
        });
    }
    (views, items)
}

/// Whether a read row has a view type: it declares `fields(...)` on a model without
/// type parameters (a generic model's rows read the model).
fn has_view(c: &Container, a: &Access) -> bool {
    let reads = !a.fields.is_empty() || (a.whole_variant && c.wraps.is_some());
    reads && a.update.is_none() && c.generics.type_params().next().is_none()
}

/// The type a read row returns: its view, or the model (`Self`).
pub(crate) fn result_type(c: &Container, a: &Access) -> TokenStream {
    if has_view(c, a) {
        let ident = view_struct_ident(a);
        quote!(#ident)
    } else {
        quote!(Self)
    }
}

/// A read row through its key family: the id (and on a tenant model the tenant, the
/// row's first filter field) is converted once, for the key and the filter.
#[allow(clippy::too_many_arguments)]
fn cached(
    c: &Container,
    i: usize,
    a: &Access,
    method: &syn::Ident,
    family: &syn::Path,
    result: &TokenStream,
    doc: &str,
    vis: &syn::Visibility,
) -> TokenStream {
    let doc = format!(
        "{doc} Read through the key family [`{}`]: `GET`, and on a miss the query, then `SET` with the family's TTL.",
        quote!(#family).to_string().replace(' ', "")
    );
    // Under `cache = Family`: a family over another type than the `_id` is the user's
    // to fix there.
    let for_id = quote_spanned!(family.span()=> (__ds::cache_of::<#family, <Self as __ds::Identified>::Id>().family)(id));
    // A row on one variant reads that variant's document only: a miss on another
    // variant's `_id` finds nothing, and nothing is cached for it.
    let variant = discriminator(a);
    // A tenant model's row, `filter(org_id, _id)`: the key holds the tenant.
    if let [(tenant, _), _] = a.filter.as_slice() {
        let ty = param_type(c, tenant);
        let in_tenant = quote_spanned!(family.span()=> (__ds::cache_in::<#family, #ty, <Self as __ds::Identified>::Id>(#tenant).family)(tenant, id));
        return quote! {
            #[doc = #doc]
            #vis fn #method(tenant: impl ::core::convert::Into<#ty>, id: impl ::core::convert::Into<<Self as __ds::Identified>::Id>) -> __ds::CachedFind<#family, #result> {
                let tenant: #ty = ::core::convert::Into::into(tenant);
                let id: <Self as __ds::Identified>::Id = ::core::convert::Into::into(id);
                let __filter = __ds::FilterBuilder::new().equal(#tenant, &tenant).equal("_id", &id)#variant.build();
                let __family = ::core::result::Result::Ok(#in_tenant);
                __ds::CachedFind::new(__ds::Find::row(#i, __filter), __family)
            }
        };
    }
    quote! {
        #[doc = #doc]
        #vis fn #method(id: impl ::core::convert::Into<<Self as __ds::Identified>::Id>) -> __ds::CachedFind<#family, #result> {
            let id: <Self as __ds::Identified>::Id = ::core::convert::Into::into(id);
            let __filter = __ds::FilterBuilder::new().equal("_id", &id)#variant.build();
            let __family = ::core::result::Result::Ok(#for_id);
            __ds::CachedFind::new(__ds::Find::row(#i, __filter), __family)
        }
    }
}

/// A cached row whose value holds a denormalized copy: its family may not accept
/// staleness up to its TTL (`staleness = "ttl"`), or the cached view could be older
/// than the copy's `max_stale` by the TTL besides. Checked where the family's decision
/// is known, in a `const` under the family's tokens.
fn cached_copies(c: &Container, a: &Access, family: &syn::Path) -> TokenStream {
    let copies: Vec<String> = crate::common::paths::stored_fields(c)
        .into_iter()
        .filter(|f| f.recv.attrs.iter().any(|at| at.path().is_ident("denormalized")))
        .filter_map(|f| f.name.clone())
        .filter(|n| {
            a.fields.is_empty() || a.fields.iter().any(|(p, _)| p == n || p.starts_with(&format!("{n}.")))
        })
        .collect();
    if copies.is_empty() {
        return TokenStream::new();
    }
    let family_name = quote!(#family).to_string().replace(' ', "");
    let message = format!(
        "docshape rule `cached_copy`: row `{}` caches {}, a denormalized copy that its writers keep within `max_stale`, but `{family_name}` declares `staleness = \"ttl\"`, so a cached view could be older than `max_stale` by up to the TTL besides; drop `staleness = \"ttl\"` (every docshape writer of the copy then deletes the keys), or leave the copy out of the row's `fields(...)`",
        a.name,
        copies.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ")
    );
    quote_spanned!(family.span()=> const _: () = __ds::copies_invalidated::<#family>(#message);)
}

fn finder_doc(a: &Access, view: Option<String>) -> String {
    let list = |v: &[(String, Span)]| v.iter().map(|(p, _)| format!("`{p}`")).collect::<Vec<_>>().join(", ");
    let mut parts = Vec::new();
    if !a.filter.is_empty() {
        parts.push(format!("equality on {}", list(&a.filter)));
    }
    if !a.range.is_empty() {
        parts.push(format!("a range on {}", list(&a.range)));
    }
    if !a.sort.is_empty() {
        let sort: Vec<String> = a
            .sort
            .iter()
            .map(|k| {
                format!("`{}` {}", k.path, if k.kind == KeyKind::Desc { "descending" } else { "ascending" })
            })
            .collect();
        parts.push(format!("sorted by {}", sort.join(", ")));
    }
    let reads = match view {
        Some(v) => format!("Reads only its fields, as [`{v}`]."),
        None => "Reads whole documents.".to_owned(),
    };
    format!(
        "The access pattern `{}` ({}): {}. {reads} Served by index `{}`; consistency {}.",
        a.name,
        a.operation,
        if parts.is_empty() { "every document".to_owned() } else { parts.join(", ") },
        a.index.as_deref().unwrap_or("none (waived)"),
        if a.consistency.is_empty() { "unstated".to_owned() } else { format!("\"{}\"", a.consistency) },
    )
}

/// The view's name: `view(name = ...)`, else the pattern's name in UpperCamelCase
/// with `View` (`load_order` -> `LoadOrderView`).
fn view_ident(a: &Access) -> syn::Ident {
    if let Some(name) = &a.view.name {
        return name.clone();
    }
    let mut out = String::new();
    for part in a.name.split('_').filter(|p| !p.is_empty()) {
        let mut chars = part.chars();
        if let Some(first) = chars.next() {
            out.extend(first.to_uppercase());
            out.push_str(chars.as_str());
        }
    }
    format_ident!("{}View", out, span = a.span)
}

/// The view struct's own name. With `view(name = ...)`, that name. Otherwise the
/// model's name before the row's view name (`Order` and `load_order` ->
/// `OrderLoadOrderView`), and [`view_alias`] names it after the row in the model's
/// module: two models of one module with rows of the same name then define two
/// structs, and only the two imports of one name collide, in one error under both
/// rows' names (a struct defined twice also had its serde and `Projection` impls
/// conflict, in three more errors that named neither row).
fn view_struct_ident(a: &Access) -> syn::Ident {
    match (&a.view.name, &a.owner) {
        (None, Some(owner)) => format_ident!("{}{}", owner, view_ident(a), span = a.span),
        _ => view_ident(a),
    }
}

/// The row's name for the view struct, in the model's module, when the struct is not
/// named after the row alone: `type LoadOrderView = OrderLoadOrderView;` (a struct
/// literal and pattern work through it), or for a newtype wrapper, whose constructor a
/// type alias does not carry, `use OrderLoadOrderView as LoadOrderView;`. With the
/// model's visibility, under the row's name, so that a collision points at both rows.
fn view_alias(a: &Access, vis: &syn::Visibility, tuple: bool) -> TokenStream {
    let (public, real) = (view_ident(a), view_struct_ident(a));
    if public == real {
        return TokenStream::new();
    }
    let doc = format!("What the access pattern `{}` reads: the row's name for [`{real}`].", a.name);
    if tuple {
        quote::quote_spanned! {a.span=>
            #[allow(unused_imports)]
            #vis use #real as #public;
        }
    } else {
        quote::quote_spanned! {a.span=>
            #[doc = #doc]
            #[allow(dead_code)]
            #vis type #public = #real;
        }
    }
}

/// `#[serde(...)]` of a model field without its renames: the view names each field
/// by its stored name itself.
fn serde_attrs(field: &Field) -> Vec<TokenStream> {
    let mut out = Vec::new();
    for attr in field.recv.attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let Ok(metas) = attr.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated) else {
            continue;
        };
        let kept: Vec<&Meta> =
            metas.iter().filter(|m| !(m.path().is_ident("rename") || m.path().is_ident("alias"))).collect();
        if !kept.is_empty() {
            out.push(quote!(#[serde(#(#kept),*)]));
        }
    }
    out
}

/// The view struct of a row with `fields(...)`: each listed path's top-level field,
/// with the model's type and serde attributes, stored under the model's name. A
/// nested path (`address.city`) reads its top-level field (`address`) whole, so the
/// view's types stay the model's. A versioned model's view reads whole documents and
/// upgrades them first: an older version's fields are not the current ones.
fn view(c: &Container, a: &Access, versioned: bool) -> (syn::Ident, TokenStream, TokenStream) {
    if let (Some(inner), Some(variant), Some((_, value))) = (&c.wraps, &a.variant, &a.discriminator) {
        return wrapper_view(c, a, inner, variant, value);
    }
    let ident = view_struct_ident(a);
    let model = &c.ident;
    let vis = &c.vis;
    // A row that reads one variant whole takes its view from the enum's own decoding,
    // which every finder of the model already instantiates: the view's own
    // `Deserialize` would be the largest part of the row's code (a visitor per view).
    // A cached row keeps it, to read the view back from the cache.
    let whole = match (&a.variant, &a.discriminator) {
        (Some(variant), Some((tag, value))) if a.whole_variant && a.cache.is_none() => {
            Some((variant, tag, value))
        }
        _ => None,
    };
    let mut firsts: Vec<String> = Vec::new();
    for (path, _) in &a.fields {
        let first = path.split('.').next().unwrap_or_default().to_owned();
        if !firsts.contains(&first) {
            firsts.push(first);
        }
    }
    let stored = paths::stored_fields(c);
    let mut fields = Vec::new();
    let mut names = Vec::new();
    // The Rust names of the view's fields, as the variant's: a whole variant's view is
    // moved out of the decoded enum.
    let mut idents = Vec::new();
    // Each field's stored name and Rust name, and whether every field is written as
    // serde's derive would write it with no attribute but its `rename`.
    let mut keyed: Vec<(String, syn::Ident)> = Vec::new();
    // The fields without their `serde` attributes, for a view whose `Serialize` is
    // written here: no derive reads those attributes then.
    let mut bare = Vec::new();
    let mut plain = true;
    for first in &firsts {
        let field =
            stored.iter().find(|f| f.serde.flatten.is_none() && f.name.as_deref() == Some(first.as_str()));
        match field {
            Some(f) => {
                let Some(fident) = &f.recv.ident else { continue };
                let ty = &f.recv.ty;
                let fvis = &f.recv.vis;
                let docs: Vec<_> = f.recv.attrs.iter().filter(|a| a.path().is_ident("doc")).collect();
                let serde = serde_attrs(f);
                plain &= serde.is_empty();
                bare.push(quote!(#(#docs)* #fvis #fident: #ty));
                fields.push(quote! {
                    #(#docs)*
                    #[serde(rename = #first)]
                    #(#serde)*
                    #fvis #fident: #ty
                });
                idents.push(fident.clone());
                keyed.push((first.clone(), fident.clone()));
            }
            None if first == "_id" => {
                let doc = format!("The document's `_id`, as [`{model}`]'s id type.");
                fields.push(quote! {
                    #[doc = #doc]
                    #[serde(rename = "_id")]
                    pub id: <#model as ::docshape::__private::Identified>::Id
                });
                bare.push(quote! {
                    #[doc = #doc]
                    pub id: <#model as ::docshape::__private::Identified>::Id
                });
                keyed.push((first.clone(), format_ident!("id")));
            }
            // A path through a flattened field: not a field of its own in the view.
            None => continue,
        }
        names.push(first.clone());
    }
    let read = match whole {
        Some((variant, ..)) => format!("every field of the variant `{variant}`"),
        None => "its `fields(...)`".to_owned(),
    };
    let doc = format!(
        "What the access pattern `{}` of [`{model}`] reads: {} ({read}), projected by the server.",
        a.name,
        names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
    );
    let derives = a.view.derive.iter();
    let doc = match whole {
        Some(_) => format!("{doc} Moved out of the enum the finder decodes: it implements `Serialize` (the stored names, as serde's derive writes them), and derives `Deserialize` with `view(derive(serde::Deserialize))`."),
        None => doc,
    };
    let deserialize = whole.is_none().then(|| quote!(, ::docshape::__private::serde::Deserialize));
    let alias = view_alias(a, vis, false);
    let tokens = if whole.is_some() && a.view.derive.is_empty() && plain {
        // Nothing else reads the fields' `serde` attributes: the view's `Serialize`
        // is written here, as serde's derive writes it for these fields, instead of
        // running that derive once more per view. Up to sixteen fields it is one call
        // to the runtime's `NamedFields`, whose impl does the writing: the compiler
        // then checks one call per view instead of one per field.
        let name = ident.to_string();
        let body = if (1..=NAMED_FIELDS_MAX).contains(&keyed.len()) {
            let (keys, fields): (Vec<_>, Vec<_>) = keyed.iter().map(|(key, field)| (key, field)).unzip();
            quote! {
                ::docshape::__private::serde::Serialize::serialize(
                    &::docshape::__private::NamedFields {
                        name: #name,
                        keys: &[#(#keys),*],
                        values: (#(&self.#fields,)*),
                    },
                    __serializer,
                )
            }
        } else {
            let len = keyed.len();
            let writes = keyed.iter().map(|(key, field)| {
                quote!(::docshape::__private::serde::ser::SerializeStruct::serialize_field(&mut __state, #key, &self.#field)?;)
            });
            quote! {
                let mut __state =
                    ::docshape::__private::serde::Serializer::serialize_struct(__serializer, #name, #len)?;
                #(#writes)*
                ::docshape::__private::serde::ser::SerializeStruct::end(__state)
            }
        };
        quote! {
            #[doc = #doc]
            #vis struct #ident {
                #(#bare,)*
            }

            #[automatically_derived]
            impl ::docshape::__private::serde::Serialize for #ident {
                fn serialize<__S>(&self, __serializer: __S) -> ::core::result::Result<__S::Ok, __S::Error>
                where
                    __S: ::docshape::__private::serde::Serializer,
                {
                    #body
                }
            }
        }
    } else {
        quote! {
            #[doc = #doc]
            #[derive(::docshape::__private::serde::Serialize #deserialize #(, #derives)*)]
            #[serde(crate = "::docshape::__private::serde")]
            #vis struct #ident {
                #(#fields,)*
            }
        }
    };
    let tokens = quote!(#tokens #alias);
    let (fields_const, decode) = if let Some((variant, tag, value)) = whole {
        let fields = if versioned {
            quote!(::core::option::Option::None)
        } else {
            // The tag too: the enum's decoding reads it first.
            quote!(::core::option::Option::Some(&[#(#names,)* #tag]))
        };
        let decode = quote! {
            __ds::decode_variant::<#model, Self>(document, #value, |__model| match __model {
                #model::#variant { #(#idents,)* .. } => ::core::option::Option::Some(Self { #(#idents,)* }),
                #[allow(unreachable_patterns)]
                _ => ::core::option::Option::None,
            })
        };
        (fields, decode)
    } else if versioned {
        (quote!(::core::option::Option::None), quote!(__ds::decode_upgraded::<#model, Self>(document)))
    } else {
        (
            quote!(::core::option::Option::Some(&[#(#names),*])),
            quote!(__ds::decode_raw::<Self>(<#model as __ds::Model>::COLLECTION, &document)),
        )
    };
    let impls = quote! {
        #[automatically_derived]
        impl __ds::Projection for #ident {
            type Model = #model;
            const FIELDS: ::core::option::Option<&'static [&'static str]> = #fields_const;
            // `inline`: compiled where a finder is called, not in every crate of
            // models; this body instantiates the BSON deserializer for the view, which
            // doubled what a view row cost the models' crate.
            #[inline]
            fn decode(document: __ds::RawDocumentBuf) -> ::core::result::Result<Self, __ds::FindError> {
                #decode
            }
        }
    };
    (ident, tokens, impls)
}

/// The view of a row on a newtype variant: the wrapped type itself, in a struct named
/// after the row (the wrapped type may be another crate's, or another model's, so it
/// cannot be the row's `Projection` itself). It derefs to the wrapped value, and
/// `into_inner` moves it out.
fn wrapper_view(
    c: &Container,
    a: &Access,
    inner: &syn::Type,
    variant: &syn::Ident,
    value: &str,
) -> (syn::Ident, TokenStream, TokenStream) {
    let ident = view_struct_ident(a);
    let model = &c.ident;
    let vis = &c.vis;
    let shown = quote!(#inner).to_string().replace(' ', "");
    let doc = format!(
        "What the access pattern `{}` of [`{model}`] reads: a whole `{variant}` document, as its `{shown}`. Derefs to it; `into_inner` moves it out.",
        a.name
    );
    // A cached row reads its view back from the cache.
    let deserialize = a.cache.is_some().then(|| quote!(, ::docshape::__private::serde::Deserialize));
    let alias = view_alias(a, vis, true);
    let derives = a.view.derive.iter();
    let tokens = quote! {
        #[doc = #doc]
        #[derive(::docshape::__private::serde::Serialize #deserialize #(, #derives)*)]
        #[serde(crate = "::docshape::__private::serde", transparent)]
        #vis struct #ident(pub #inner);

        #[automatically_derived]
        impl #ident {
            /// The wrapped value.
            #[inline]
            #vis fn into_inner(self) -> #inner {
                self.0
            }
        }

        #[automatically_derived]
        impl ::core::ops::Deref for #ident {
            type Target = #inner;
            #[inline]
            fn deref(&self) -> &#inner {
                &self.0
            }
        }

        #[automatically_derived]
        impl ::core::ops::DerefMut for #ident {
            #[inline]
            fn deref_mut(&mut self) -> &mut #inner {
                &mut self.0
            }
        }

        #alias
    };
    let impls = quote! {
        #[automatically_derived]
        impl __ds::Projection for #ident {
            type Model = #model;
            // The wrapped type's fields and the tag: the whole document.
            const FIELDS: ::core::option::Option<&'static [&'static str]> = ::core::option::Option::None;
            #[inline]
            fn decode(document: __ds::RawDocumentBuf) -> ::core::result::Result<Self, __ds::FindError> {
                __ds::decode_variant::<#model, Self>(document, #value, |__model| match __model {
                    #model::#variant(__inner) => ::core::option::Option::Some(Self(__inner)),
                    #[allow(unreachable_patterns)]
                    _ => ::core::option::Option::None,
                })
            }
        }
    };
    (ident, tokens, impls)
}
