//! Polymorphic collections: `#[derive(Model)]` on an internally tagged serde enum
//! (`#[serde(tag = "kind")]`) whose variants have named fields, one collection holding
//! several document shapes (an event store's clicks, views and purchases).
//!
//! Each variant is read as a struct of its own ([`VariantModel::container`]: its stored
//! fields plus the tag), so that the index and access rules run unchanged on it; the
//! fields every variant stores under one name, plus the tag, make the
//! [`Polymorphic::common`] container that the enum's own `#[index]` and `#[access]`
//! rows are checked against. What the variants add: an index declared on a variant is
//! partial to it (`{kind: {$eq: "click"}}`, merged with the user's own partial filter),
//! a row names its variant (`variant = Click`) and its command carries the
//! discriminator's `$eq`; the validator is the enum's `anyOf`, one branch per
//! discriminator value.

use std::collections::BTreeSet;

use darling::error::Accumulator;
use darling::{Error, FromField};
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::{DeriveInput, Ident};

use crate::ast::{Body, Container, Field, FieldReceiver, ModelAttrs};
use crate::attr::serde::{SerdeContainer, SerdeField};
use crate::common::types::same_type;

/// A polymorphic model's shape: the tag, the common fields, one struct-like view per variant.
#[derive(Clone)]
pub(crate) struct Polymorphic {
    /// The stored name of the discriminator (`#[serde(tag = "kind")]`).
    pub tag: String,
    /// The fields every variant stores under one name (of one type), and the tag: what
    /// an index or row on the enum may name.
    pub common: Container,
    /// The variants, in declaration order.
    pub variants: Vec<VariantModel>,
}

/// One variant, read as a struct.
#[derive(Clone)]
pub(crate) struct VariantModel {
    pub ident: Ident,
    /// The discriminator value serde writes (after `rename` / `rename_all`).
    pub value: String,
    /// The variant's stored fields and the tag, under the enum's name (so `Self` in
    /// generated code is the enum), with the variant's attributes.
    pub container: Container,
}

impl Polymorphic {
    /// The variant named `ident` in Rust.
    pub(crate) fn variant(&self, ident: &Ident) -> Option<&VariantModel> {
        self.variants.iter().find(|v| v.ident == *ident)
    }

    /// The variant whose discriminator value is `value`.
    pub(crate) fn by_value(&self, value: &str) -> Option<&VariantModel> {
        self.variants.iter().find(|v| v.value == value)
    }

    /// The container an index or row on `variant` (a discriminator value) is checked
    /// against: the variant's, or the common one.
    pub(crate) fn container(&self, variant: Option<&str>) -> &Container {
        variant.and_then(|v| self.by_value(v)).map_or(&self.common, |v| &v.container)
    }

    /// The variants that store a top-level field named `first`, when the enum as a
    /// whole does not: a row or index on the enum that names it must name the variant.
    pub(crate) fn holders(&self, first: &str) -> Vec<&VariantModel> {
        if stored(&self.common).contains(first) {
            return Vec::new();
        }
        self.variants.iter().filter(|v| stored(&v.container).contains(first)).collect()
    }
}

fn stored(c: &Container) -> BTreeSet<String> {
    crate::common::paths::stored_fields(c).into_iter().filter_map(|f| f.name.clone()).collect()
}

/// Whether a `#[derive(Model)]` enum has the one shape a collection can hold: internally
/// tagged, every variant a document. One error under the offending tokens otherwise.
pub(crate) fn shape(input: &DeriveInput, data: &syn::DataEnum) -> darling::Result<()> {
    let mut ignored = Error::accumulator();
    let serde = SerdeContainer::parse(&input.attrs, &mut ignored);
    // serde's own attribute mistakes are reported with the model's other errors.
    drop(ignored.finish());
    let fix = "a polymorphic Model is an internally tagged enum whose variants have named fields: add `#[serde(tag = \"kind\")]` to the enum, so every document stores its variant in the field `kind`, which the validator and the indexes key on";
    if let Some(span) = serde.untagged {
        return Err(Error::custom(format!(
            "an untagged enum stores no discriminator: its documents cannot be told apart by the server; {fix}"
        ))
        .with_span(&span));
    }
    match (&serde.tag, &serde.content) {
        (None, _) => {
            let example = data.variants.first().map_or_else(|| "Variant".to_owned(), |v| v.ident.to_string());
            return Err(Error::custom(format!(
                "an externally tagged enum stores each document under a key named after its variant (`{{\"{example}\": {{...}}}}`), with no discriminator field to validate or index by; {fix}"
            ))
            .with_span(&data.enum_token.span))
        }
        (Some(_), Some(content)) => {
            return Err(Error::custom(format!(
                "an adjacently tagged enum stores each document's fields under `{}`, a sub-document; {fix}, without `content`",
                content.value()
            ))
            .with_span(content))
        }
        (Some(_), None) => {}
    }
    if data.variants.is_empty() {
        return Err(Error::custom("an enum without variants has no documents to store; add a variant with named fields, like `Click { #[serde(rename = \"_id\")] id: ObjectId, .. }`").with_span(&input.ident));
    }
    for v in &data.variants {
        let newtype = matches!(&v.fields, syn::Fields::Unnamed(f) if f.unnamed.len() == 1);
        if !matches!(v.fields, syn::Fields::Named(_)) && !newtype {
            return Err(Error::custom(format!(
                "variant `{}` of a polymorphic Model is a document: give it named fields, like `{} {{ #[serde(rename = \"_id\")] id: ObjectId, .. }}`, or make it a newtype over a struct that derives `Embedded` (`{}({}Data)`), whose fields serde writes beside the tag",
                v.ident, v.ident, v.ident, v.ident
            ))
            .with_span(&v.ident));
        }
    }
    Ok(())
}

/// The synthetic field standing for the tag: a `String` stored under the tag's name.
fn tag_field(tag: &str, span: Span) -> Option<Field> {
    let field: syn::Field = syn::parse_quote!(__docshape_tag: ::std::string::String);
    let recv = FieldReceiver::from_field(&field).ok()?;
    Some(Field { name: Some(tag.to_owned()), span, serde: SerdeField::default(), recv })
}

/// The `_id` of a newtype variant's type, as a field: its type is the one the wrapped
/// type's `StoredNames::Id` names.
fn wrapped_id(m: &VariantModel, span: Span) -> Option<Field> {
    let inner = m.container.wraps.as_ref()?;
    let field: syn::Field = syn::parse_quote! {
        id: <#inner as ::docshape::__private::StoredNames>::Id
    };
    let recv = FieldReceiver::from_field(&field).ok()?;
    Some(Field { name: Some("_id".to_owned()), span, serde: SerdeField::default(), recv })
}

/// A field without its `#[index]` attributes: a variant's field-level index belongs to
/// the variant, not to the common container that holds the same field.
fn without_index(f: &Field) -> Field {
    let mut f = f.clone();
    f.recv.attrs.retain(|a| !a.path().is_ident("index"));
    f
}

/// Reads the variants of an internally tagged enum as structs; `None` for any other shape.
pub(crate) fn read(c: &Container) -> Option<Polymorphic> {
    let Body::Enum(variants) = &c.body else { return None };
    let tag = c.serde.tag.as_ref()?;
    let tag_span = tag.span();
    let tag = tag.value();
    let tag_field = tag_field(&tag, tag_span)?;
    let models: Vec<VariantModel> = variants
        .iter()
        .filter(|v| !v.serde.skip)
        .map(|v| {
            let mut fields = v.fields.clone();
            // A variant's fields are as visible as the enum: a row's view type has them.
            for f in &mut fields {
                f.recv.vis = c.vis.clone();
            }
            // A newtype variant is its type's fields beside the tag: to serde, the
            // struct flattened into the variant.
            let wraps = (v.style == darling::ast::Style::Tuple).then(|| {
                for f in &mut fields {
                    f.serde.flatten = Some(f.span);
                }
                fields.first().map(|f| f.recv.ty.clone())
            });
            fields.push(tag_field.clone());
            let container = Container {
                body: Body::Struct(darling::ast::Style::Struct, fields),
                attrs: v.attrs.clone(),
                wraps: wraps.flatten(),
                ..c.clone()
            };
            VariantModel { ident: v.ident.clone(), value: v.name.clone(), container }
        })
        .collect();
    // The common fields: stored by every variant under one name with one type. A
    // newtype variant's fields are its type's, which the derive cannot see: the struct
    // variants decide, and each path a row or index on the enum names is checked
    // through the wrapped types at compile time ([`wrapped_checks`]).
    let structs: Vec<&VariantModel> = models.iter().filter(|m| m.container.wraps.is_none()).collect();
    let first = structs.first().map(|m| &m.container);
    let mut common: Vec<Field> = Vec::new();
    if first.is_none() {
        // Every variant wraps a type: the `_id` is the first one's, which the others'
        // checks compare theirs to.
        common.extend(models.first().and_then(|m| wrapped_id(m, tag_span)));
        common.push(tag_field.clone());
    }
    if let Some(Container { body: Body::Struct(_, fields), .. }) = first {
        for f in fields.iter().filter(|f| !f.serde.skip && f.serde.flatten.is_none() && f.name.is_some()) {
            let ty = &f.recv.ty;
            let everywhere = structs.iter().all(|m| {
                crate::common::paths::stored_fields(&m.container)
                    .iter()
                    .any(|g| g.name == f.name && g.serde.flatten.is_none() && same_type(&g.recv.ty, ty))
            });
            if everywhere {
                common.push(without_index(f));
            }
        }
    }
    let common = Container { body: Body::Struct(darling::ast::Style::Struct, common), ..c.clone() };
    Some(Polymorphic { tag, common, variants: models })
}

/// The rules of the enum's shape: one `_id` of one type in every variant, discriminator
/// values that tell the variants apart, no field named like the tag, and the patterns
/// that do not yet know variants refused with one error each.
pub(crate) fn check(c: &Container, model: &ModelAttrs, p: &Polymorphic, errors: &mut Accumulator) {
    let Body::Enum(variants) = &c.body else { return };
    let mut seen: Vec<(&str, &Ident)> = Vec::new();
    let mut id: Option<(&syn::Type, &Ident)> = None;
    for v in variants.iter().filter(|v| !v.serde.skip) {
        let ident = &v.ident;
        if let Some((_, other)) = seen.iter().find(|(value, _)| *value == v.name) {
            errors.push(
                Error::custom(format!(
                    "variants `{other}` and `{ident}` are both stored as `{}: \"{}\"`: the server could not tell their documents apart; give one another `#[serde(rename = \"...\")]`",
                    p.tag, v.name
                ))
                .with_span(ident),
            );
        }
        seen.push((&v.name, ident));
        if v.style == darling::ast::Style::Tuple {
            // A newtype variant's `_id` and tag are checked through its type, at
            // compile time ([`wrapped_checks`]).
            continue;
        }
        let stored: Vec<&Field> = v.fields.iter().filter(|f| !f.serde.skip).collect();
        match stored.iter().find(|f| f.name.as_deref() == Some("_id")) {
            None => errors.push(
                Error::custom(format!(
                    "variant `{ident}` stores no `_id`: every document of a polymorphic collection is found by one `_id`, so every variant declares it with one type; add `#[serde(rename = \"_id\")] id: ObjectId` (the type the other variants use)"
                ))
                .with_span(ident),
            ),
            Some(f) => {
                let ty = &f.recv.ty;
                match &id {
                    Some((first, first_variant)) if !same_type(first, ty) => {
                        let (first, ty) = (quote!(#first).to_string(), quote!(#ty).to_string());
                        errors.push(
                            Error::custom(format!(
                                "the `_id` of variant `{ident}` is `{ty}`, but variant `{first_variant}` stores `{first}`: a collection's documents share one `_id` type, which `Ref<{}>` and the finders take; use `{first}`",
                                c.ident
                            ))
                            .with_span(&f.recv.ty),
                        )
                    }
                    Some(_) => {}
                    None => id = Some((ty, ident)),
                }
            }
        }
        if let Some(f) = stored.iter().find(|f| f.name.as_deref() == Some(p.tag.as_str())) {
            errors.push(
                Error::custom(format!(
                    "variant `{ident}` has a field stored as `{}`, the enum's tag: serde writes the variant's name there; rename the field",
                    p.tag
                ))
                .with_span(&f.span),
            );
        }
    }
    // The upgrade stamps the version into each variant's field by name: a wrapped
    // type's field is not one the enum's code can name.
    let versioned = model.version.is_some();
    for v in variants.iter().filter(|v| versioned && !v.serde.skip && v.style == darling::ast::Style::Tuple) {
        errors.push(
            Error::custom(format!(
                "variant `{}` wraps a type, and `{}` is versioned: the upgrade writes the version into each variant's `#[schema_version]` field by name; give `{}` named fields",
                v.ident, c.ident, v.ident
            ))
            .with_span(&v.ident),
        );
    }
    // Patterns that read a struct's fields and do not yet know variants. (`#[embed]`,
    // `#[reference]` and `#[denormalized]` on a variant's field are read per variant
    // by their patterns.)
    let refused = ["bucket", "outlier"];
    // A copy is a field: on the enum or on a variant it would be read by no one.
    for attr in c.attrs.iter().chain(variants.iter().flat_map(|v| &v.attrs)) {
        if attr.path().is_ident("denormalized") {
            errors.push(
                Error::custom(
                    "`#[denormalized]` goes on the field that holds the copy, a field of a variant",
                )
                .with_span(attr.path()),
            );
        }
    }
    let on_fields = variants.iter().flat_map(|v| v.fields.iter().flat_map(|f| f.recv.attrs.iter()));
    for attr in c.attrs.iter().chain(variants.iter().flat_map(|v| &v.attrs)).chain(on_fields) {
        if let Some(name) = refused.iter().find(|n| attr.path().is_ident(n)) {
            errors.push(
                Error::custom(format!(
                    "`#[{name}]` is not supported on a polymorphic model: the pattern writes documents of its own shape (a bucket, an outlier's overflow) that no variant describes; keep this data in a struct model, and reference it from a variant with `Ref<T>`"
                ))
                .with_span(attr.path()),
            );
        }
    }
}

/// `Model::VARIANTS`: the discriminator's stored name and each variant's value, in
/// declaration order.
pub(crate) fn variants_const(p: &Polymorphic) -> TokenStream {
    let tag = &p.tag;
    let values = p.variants.iter().map(|v| &v.value);
    quote! {
        const VARIANTS: &'static [__ds::Variant] = &[#(__ds::Variant { tag: #tag, value: #values }),*];
    }
}

/// A partial index's filter for the variant stored as `value`: `{tag: {$eq: value}}`,
/// then the user's own partial filter, which keeps every key it has. `Err` when the
/// user's filter already constrains the tag (the two could contradict).
pub(crate) fn partial_filter(tag: &str, value: &str, user: Option<&str>) -> Result<String, String> {
    let mut map = serde_json::Map::new();
    map.insert(tag.to_owned(), serde_json::json!({ "$eq": value }));
    let mut text = serde_json::Value::Object(map).to_string();
    if let Some(user) = user {
        let parsed: serde_json::Value = serde_json::from_str(user).map_err(|e| e.to_string())?;
        let serde_json::Value::Object(user_map) = parsed else {
            return Err("`partial_filter` must be a JSON object".to_owned());
        };
        if user_map.contains_key(tag) {
            return Err(format!(
                "the partial filter of a variant's index names `{tag}`, the enum's tag, which docshape sets to `{{\"{tag}\": {{\"$eq\": \"{value}\"}}}}` for this variant; drop `{tag}` from `partial_filter`, or put the index on the enum"
            ));
        }
        // Kept in the user's order after the tag: the text is the index's spec.
        let outer = user.trim();
        let inner = outer.strip_prefix('{').and_then(|o| o.strip_suffix('}')).unwrap_or_default().trim();
        if !inner.is_empty() {
            text.pop();
            text.push(',');
            text.push_str(inner);
            text.push('}');
        }
    }
    Ok(text)
}

/// The error for a path that only some variants store, named on the enum.
pub(crate) fn variant_only(p: &Polymorphic, path: &str, what: &str, span: Span) -> Option<Error> {
    let first = path.split('.').next().unwrap_or(path);
    let holders = p.holders(first);
    let names: Vec<String> = holders.iter().map(|v| format!("`{}`", v.ident)).collect();
    let wrapping: Vec<&VariantModel> = p.variants.iter().filter(|v| v.container.wraps.is_some()).collect();
    if holders.is_empty() && first != "_id" && !stored(&p.common).contains(first) {
        // No struct variant stores it: a wrapped type may, and its variant's row or
        // index finds it there.
        let example = wrapping.first()?;
        let list: Vec<String> = wrapping.iter().map(|v| format!("`{}`", v.ident)).collect();
        return Some(
            Error::custom(format!(
                "`{first}` is stored by no struct variant of `{}`, and {what} on the enum reads every variant; if the type a newtype variant wraps stores it ({}), name that variant, like `variant = {}`",
                p.common.ident,
                list.join(", "),
                example.ident
            ))
            .with_span(&span),
        );
    }
    let example = holders.first()?;
    if holders.len() == p.variants.len() {
        return Some(
            Error::custom(format!(
                "`{first}` is stored by every variant of `{}`, but not with one type, and {what} on the enum reads every variant as one; give `{first}` one type in every variant, or name the variant, like `variant = {}`",
                p.common.ident, example.ident
            ))
            .with_span(&span),
        );
    }
    Some(
        Error::custom(format!(
            "`{first}` is stored only by variant{} {} of `{}`, and {what} on the enum reads every variant; name the variant, like `variant = {}`",
            if names.len() == 1 { "" } else { "s" },
            names.join(", "),
            p.common.ident,
            example.ident
        ))
        .with_span(&span),
    )
}

/// The compile-time checks of the newtype variants, through each wrapped type's
/// `HasField` impls (the derive cannot see its fields): it stores `_id`, of the type
/// the other variants share, and no field named like the tag.
pub(crate) fn wrapped_checks(p: &Polymorphic) -> TokenStream {
    let model = &p.common.ident;
    let tag = &p.tag;
    let mut out = TokenStream::new();
    for v in &p.variants {
        let Some(inner) = &v.container.wraps else { continue };
        let shown = quote!(#inner).to_string().replace(' ', "");
        let no_id = format!(
            "variant `{}` wraps `{shown}`, which stores no `_id`: every document of a polymorphic collection is found by one `_id`; add `#[serde(rename = \"_id\")] id: ...` to `{shown}`, of the type the other variants use",
            v.ident
        );
        let tagged = format!(
            "variant `{}` wraps `{shown}`, which has a field stored as `{tag}`, the enum's tag: serde writes the variant's name there; rename the field",
            v.ident
        );
        let span = v.ident.span();
        out.extend(quote_spanned! {span=>
            const _: () = {
                const __ID: __ds::FieldLookup = __ds::FieldLookup::find::<#inner>("_id");
                if !__ds::FieldLookup::find::<#inner>(#tag).missing() && !<#inner as __ds::StoredNames>::OPEN {
                    ::core::panic!(#tagged)
                }
                if __ID.missing() {
                    ::core::panic!(#no_id)
                }
            };
            // One `_id` type: the wrapped type's is the enum's (compared only when it
            // has one: the missing `_id` has its own error above).
            const _: fn(<__ds::If<{ !__ds::FieldLookup::find::<#inner>("_id").missing() }> as __ds::Choose<<#inner as __ds::HasField<{ __ds::FieldLookup::find::<#inner>("_id").index() }>>::Stored, <#model as __ds::Identified>::Id>>::Out) -> <#model as __ds::Identified>::Id = |__id| __id;
        });
    }
    out
}

/// The checks of a path named on the enum (a row or an index on it) through each
/// newtype variant's type: the common fields are the struct variants', and a wrapped
/// type must store the path too.
pub(crate) fn wrapped_paths(p: &Polymorphic, path: &str, span: Span) -> TokenStream {
    let first = path.split('.').next().unwrap_or(path);
    if first == "_id" || first == p.tag {
        return TokenStream::new();
    }
    let mut out = TokenStream::new();
    for v in p.variants.iter().filter(|v| v.container.wraps.is_some()) {
        if let Ok(r) = crate::common::paths::resolve(&v.container, path, span) {
            out.extend(crate::common::paths::nested_checks(&v.container, &r, span, false));
        }
    }
    out
}

/// `Variants` and one `VariantFields` impl per variant: each variant's stored fields as
/// a type another derive looks paths up in (a summary's `variant = Click` checks its
/// group and summed paths against the variant's own fields). A variant of named fields
/// gets its table (`__ds::VariantTable`), a newtype variant is its wrapped type; a
/// variant the table cannot describe (a flattened field, too many fields) is open.
/// Nothing for a generic enum, whose field types are only known at use.
pub(crate) fn variant_shapes(p: &Polymorphic) -> TokenStream {
    let model = &p.common.ident;
    if p.common.generics.params.iter().next().is_some() {
        return TokenStream::new();
    }
    let name = model.to_string();
    let idents: Vec<String> = p.variants.iter().map(|v| v.ident.to_string()).collect();
    let mut out = quote! {
        impl __ds::Variants for #model {
            const NAME: &'static str = #name;
            const IDENTS: &'static [&'static str] = &[#(#idents),*];
        }
    };
    for (i, v) in p.variants.iter().enumerate() {
        let shape_name = format!("{model}::{}", v.ident);
        let (shape, names, table) =
            match (&v.container.wraps, crate::common::paths::field_table(&v.container)) {
                (Some(inner), _) => (quote!(#inner), Vec::new(), quote!(())),
                (None, Some((names, table))) => (quote!(__ds::VariantTable<#model, #i>), names, table),
                (None, None) => (quote!(__ds::Open), Vec::new(), quote!(())),
            };
        out.extend(quote! {
            impl __ds::VariantFields<#i> for #model {
                type Shape = #shape;
                const SHAPE_NAME: &'static str = #shape_name;
                const SHAPE_NAMES: &'static [&'static str] = &[#(#names),*];
                type Fields = #table;
            }
        });
    }
    out
}
