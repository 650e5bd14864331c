//! Parse: attributes into a model of the type (darling receivers plus serde's view).
//! [`crate::facts`] reads them into the facts every pattern reads.
//!
//! The receivers forward every attribute they do not parse themselves; each pattern
//! picks its own by name. The attribute names a derive registers are listed once, in
//! `lib.rs`.

use darling::ast::{Data, Fields, Style};
use darling::util::SpannedValue;
use darling::{FromDeriveInput, FromField, FromMeta, FromVariant};
use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Attribute, Generics, Ident, LitStr, Type};

use crate::attr::serde::{SerdeContainer, SerdeField, SerdeVariant};
use crate::attr::validate::{Allowed, Num};
use crate::attr::Flag;

/// `#[validate(...)]` and serde's attributes on one field.
#[derive(FromField, Clone)]
#[darling(attributes(validate), forward_attrs)]
pub(crate) struct FieldReceiver {
    pub ident: Option<Ident>,
    pub vis: syn::Visibility,
    pub ty: Type,
    pub attrs: Vec<Attribute>,
    pub min_length: Option<SpannedValue<u64>>,
    pub max_length: Option<SpannedValue<u64>>,
    pub pattern: Option<LitStr>,
    pub minimum: Option<Num>,
    pub maximum: Option<Num>,
    pub exclusive_minimum: Option<Num>,
    pub exclusive_maximum: Option<Num>,
    pub min_items: Option<SpannedValue<u64>>,
    pub max_items: Option<SpannedValue<u64>>,
    pub unique_items: Flag,
    pub allowed: Option<Allowed>,
    pub bson_type: Option<LitStr>,
    /// `items(...)`: the string constraints every item of an array field meets.
    pub items: Option<SpannedValue<ItemRules>>,
}

/// `#[validate(items(max_length = N, min_length = N, pattern = "..."))]`: what each
/// string of an array holds (the array's own length is `max_items`).
#[derive(FromMeta, Clone, Default)]
pub(crate) struct ItemRules {
    pub min_length: Option<SpannedValue<u64>>,
    pub max_length: Option<SpannedValue<u64>>,
    pub pattern: Option<LitStr>,
}

impl FieldReceiver {
    /// The span of the first `#[validate]` key, where problems with the whole
    /// attribute are reported.
    pub(crate) fn validate_span(&self) -> Option<Span> {
        let spans = [
            self.min_length.as_ref().map(|v| v.span()),
            self.max_length.as_ref().map(|v| v.span()),
            self.pattern.as_ref().map(|v| v.span()),
            self.minimum.as_ref().map(|v| v.span),
            self.maximum.as_ref().map(|v| v.span),
            self.exclusive_minimum.as_ref().map(|v| v.span),
            self.exclusive_maximum.as_ref().map(|v| v.span),
            self.min_items.as_ref().map(|v| v.span()),
            self.max_items.as_ref().map(|v| v.span()),
            self.unique_items.is_present().then(|| self.unique_items.span()),
            self.allowed.as_ref().map(|v| v.span),
            self.bson_type.as_ref().map(|v| v.span()),
            self.items.as_ref().map(|v| v.span()),
        ];
        spans.into_iter().flatten().next()
    }
}

/// An enum variant; docshape has no variant attributes of its own.
#[derive(FromVariant)]
#[darling(forward_attrs)]
pub(crate) struct VariantReceiver {
    pub ident: Ident,
    pub fields: Fields<FieldReceiver>,
    pub attrs: Vec<Attribute>,
}

/// `validationLevel` values.
#[derive(FromMeta, Clone, Copy, PartialEq, Eq, Debug)]
#[darling(rename_all = "lowercase")]
pub(crate) enum Level {
    Strict,
    Moderate,
    Off,
}

/// `validationAction` values.
#[derive(FromMeta, Clone, Copy, PartialEq, Eq, Debug)]
#[darling(rename_all = "lowercase")]
pub(crate) enum Action {
    Error,
    Warn,
}

/// `#[derive(Model)]`'s input.
#[derive(FromDeriveInput)]
#[darling(attributes(model), forward_attrs)]
pub(crate) struct ModelReceiver {
    pub ident: Ident,
    pub vis: syn::Visibility,
    pub generics: Generics,
    pub data: Data<VariantReceiver, FieldReceiver>,
    pub attrs: Vec<Attribute>,
    pub collection: Option<LitStr>,
    pub validation_level: Option<SpannedValue<Level>>,
    pub validation_action: Option<SpannedValue<Action>>,
    pub strict: Flag,
    pub max_indexes: Option<SpannedValue<usize>>,
    pub shard_key: Option<crate::attr::index_keys::KeyList>,
    pub allow: Option<crate::attr::index_keys::Allow>,
    pub version: Option<syn::LitInt>,
    pub migrate: Option<crate::attr::migrate::Migrate>,
    pub timeseries: Option<SpannedValue<crate::attr::timeseries::TimeSeriesOpts>>,
    // Tenant and soft delete (`crate::tenant`).
    pub tenant: Option<syn::Ident>,
    pub soft_delete: Option<syn::Ident>,
    /// `#[model(transactions)]`: the model's writes are made in transactions.
    pub transactions: Flag,
}

/// `#[derive(Embedded)]`'s input.
#[derive(FromDeriveInput)]
#[darling(attributes(embedded), forward_attrs)]
pub(crate) struct EmbeddedReceiver {
    pub ident: Ident,
    pub vis: syn::Visibility,
    pub generics: Generics,
    pub data: Data<VariantReceiver, FieldReceiver>,
    pub attrs: Vec<Attribute>,
    pub strict: Flag,
}

/// A field as it is stored.
#[derive(Clone)]
pub(crate) struct Field {
    /// The stored name (after serde's renames); `None` for tuple fields.
    pub name: Option<String>,
    /// Where the name came from, for errors.
    pub span: Span,
    pub serde: SerdeField,
    pub recv: FieldReceiver,
}

/// A variant as it is stored.
#[derive(Clone)]
pub(crate) struct Variant {
    pub ident: Ident,
    pub name: String,
    pub serde: SerdeVariant,
    pub style: Style,
    pub fields: Vec<Field>,
    pub attrs: Vec<Attribute>,
}

#[derive(Clone)]
pub(crate) enum Body {
    Struct(Style, Vec<Field>),
    Enum(Vec<Variant>),
}

/// The type with serde's view applied: what every later stage works from.
#[derive(Clone)]
pub(crate) struct Container {
    pub ident: Ident,
    pub vis: syn::Visibility,
    pub generics: Generics,
    pub serde: SerdeContainer,
    pub strict: bool,
    pub body: Body,
    pub attrs: Vec<Attribute>,
    /// A polymorphic model's newtype variant, read as a struct: the type it wraps,
    /// whose stored fields (beside the tag) are the variant's. Paths on the variant are
    /// looked up through that type's `HasField` impls, at compile time.
    pub wraps: Option<syn::Type>,
}

impl Container {
    /// The type's generics with `Schema` bounds on its type parameters, as every
    /// generated impl needs them (serde bounds its impls the same way).
    pub(crate) fn bounded_generics(&self) -> Generics {
        let mut generics = self.generics.clone();
        let params: Vec<Ident> = generics.type_params().map(|p| p.ident.clone()).collect();
        let where_clause = generics.make_where_clause();
        for p in params {
            where_clause.predicates.push(syn::parse_quote!(#p: ::docshape::__private::Schema));
        }
        generics
    }

    /// The stored name of the container itself (serde's `rename`, used by a struct `tag`).
    pub(crate) fn stored_name(&self) -> String {
        self.serde.rename.clone().unwrap_or_else(|| self.ident.unraw().to_string())
    }
}

fn fields(
    fields: Vec<FieldReceiver>,
    rule: Option<crate::attr::case::RenameRule>,
    errors: &mut darling::error::Accumulator,
) -> Vec<Field> {
    fields
        .into_iter()
        .map(|recv| {
            let serde = SerdeField::parse(&recv.attrs, errors);
            let name = recv.ident.as_ref().map(|ident| {
                serde.rename.clone().unwrap_or_else(|| {
                    let raw = ident.unraw().to_string();
                    rule.map_or(raw.clone(), |r| r.apply_to_field(&raw))
                })
            });
            // Point at the rename when there is one: that is where the stored name is written.
            let span = serde
                .rename_span
                .or_else(|| recv.ident.as_ref().map(|i| i.span()))
                .unwrap_or_else(|| recv.ty.span());
            Field { name, span, serde, recv }
        })
        .collect()
}

/// Builds the [`Container`] from darling's receivers and serde's attributes.
pub(crate) fn container(
    ident: Ident,
    vis: syn::Visibility,
    generics: Generics,
    data: Data<VariantReceiver, FieldReceiver>,
    attrs: Vec<Attribute>,
    strict: bool,
    errors: &mut darling::error::Accumulator,
) -> Container {
    let serde = SerdeContainer::parse(&attrs, errors);
    let body = match data {
        Data::Struct(f) => {
            let style = f.style;
            Body::Struct(style, fields(f.fields, serde.rename_all, errors))
        }
        Data::Enum(variants) => Body::Enum(
            variants
                .into_iter()
                .map(|v| {
                    let vserde = SerdeVariant::parse(&v.attrs, errors);
                    let raw = v.ident.unraw().to_string();
                    let name = vserde.rename.clone().unwrap_or_else(|| {
                        serde.rename_all.map_or(raw.clone(), |r| r.apply_to_variant(&raw))
                    });
                    let rule = vserde.rename_all.or(serde.rename_all_fields);
                    let style = v.fields.style;
                    Variant {
                        ident: v.ident,
                        name,
                        style,
                        fields: fields(v.fields.fields, rule, errors),
                        serde: vserde,
                        attrs: v.attrs,
                    }
                })
                .collect(),
        ),
    };
    Container { ident, vis, generics, serde, strict, body, attrs, wraps: None }
}

/// `#[model(...)]`'s keys beyond the type's shape, as written: each pattern reads its own.
#[derive(Clone)]
pub(crate) struct ModelAttrs {
    pub collection: Option<LitStr>,
    pub validation_level: Option<SpannedValue<Level>>,
    pub validation_action: Option<SpannedValue<Action>>,
    pub max_indexes: Option<SpannedValue<usize>>,
    pub shard_key: Option<crate::attr::index_keys::KeyList>,
    pub allow: Option<crate::attr::index_keys::Allow>,
    pub version: Option<syn::LitInt>,
    pub migrate: Option<crate::attr::migrate::Migrate>,
    pub timeseries: Option<SpannedValue<crate::attr::timeseries::TimeSeriesOpts>>,
    // Tenant and soft delete (`crate::tenant`).
    pub tenant: Option<syn::Ident>,
    pub soft_delete: Option<syn::Ident>,
    /// `#[model(transactions)]`: the model's writes are made in transactions.
    pub transactions: Flag,
}
