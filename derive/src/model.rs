//! The `Model` impl of a collection's type: parse `#[model(collection = "...",
//! validation_level, validation_action)]`, and expand into `impl Model`, which holds
//! what the other patterns put in it (indexes, access patterns, the versioned
//! validator, the relations table), and the registry entry.

use darling::error::Accumulator;
use darling::Error;
use proc_macro2::TokenStream;
use quote::quote;
use syn::LitStr;

use crate::ast::{Action, Container, Level};
use crate::common::expansion::Expansion;
use crate::facts::Facts;

/// A checked `#[model(...)]`.
pub(crate) struct Parsed(ModelOptions);

/// Reads the collection and the validation options; refuses waivers that belong on an
/// `#[index]` or `#[access]`.
pub(crate) fn parse(cx: &Facts, errors: &mut Accumulator) -> Parsed {
    let Some(m) = &cx.model else { return Parsed(ModelOptions::missing(cx)) };
    let collection = match &m.collection {
        Some(lit) => {
            if let Some(problem) = collection_problem(&lit.value()) {
                errors.push(Error::custom(problem).with_span(lit));
            }
            lit.clone()
        }
        None => {
            errors.push(
                Error::custom(
                    "missing `#[model(collection = \"...\")]`: a Model is stored in a collection; name it",
                )
                .with_span(&cx.container.ident),
            );
            ModelOptions::missing(cx).collection
        }
    };
    let allow = m.allow.clone().unwrap_or_default();
    for (rule, span) in allow.rules.iter().filter(|(r, _)| r != "index_budget") {
        errors.push(
            Error::custom(format!("waive `{rule}` on the `#[index]` or `#[access]` it concerns; the model's own `allow` takes `index_budget`"))
                .with_span(span),
        );
    }
    Parsed(ModelOptions {
        collection,
        level: m.validation_level.as_ref().map(|l| **l),
        action: m.validation_action.as_ref().map(|a| **a),
        transactions: m.transactions.is_present(),
    })
}

// The options' rules are single-key rules, found while parsing: no check of its own.

/// `impl Model`, holding the patterns' constants and the relations table, and the
/// registry entry, placed apart by the driver.
pub(crate) fn expand(parsed: &Parsed, cx: &Facts, parts: &[&Expansion]) -> (TokenStream, TokenStream) {
    let options = &parsed.0;
    let c = &cx.container;
    let consts = parts.iter().map(|p| &p.model);
    let rows: Vec<&TokenStream> = parts.iter().flat_map(|p| &p.relations).collect();
    let copies: Vec<&TokenStream> = parts.iter().flat_map(|p| &p.copies).collect();
    let nested: Vec<&TokenStream> = parts.iter().flat_map(|p| &p.nested).collect();
    let table = (!rows.is_empty() || !copies.is_empty()).then(|| {
        quote! {
            const RELATIONS: &'static [__ds::Relation] = &[#(#rows),*];
            const COPIES: &'static [__ds::CopySpec] = &[#(#copies),*];
        }
    });
    let nested =
        (!nested.is_empty()).then(|| quote!(const NESTED: &'static [__ds::Nested] = &[#(#nested),*];));
    let table = quote!(#table #nested);
    (model_impl(c, options, quote!(#(#consts)* #table)), registration(c).unwrap_or_default())
}

/// The `#[model(...)]` options that reach the `Model` impl.
struct ModelOptions {
    pub collection: LitStr,
    pub level: Option<Level>,
    pub action: Option<Action>,
    /// `#[model(transactions)]`.
    pub transactions: bool,
}

impl ModelOptions {
    /// Without a collection, whose absence is reported: the `Model` impl still exists,
    /// so that the uses of the type's generated methods raise no second error. The
    /// empty name is never used, as the reported error fails the build.
    fn missing(cx: &Facts) -> Self {
        Self {
            collection: LitStr::new("", cx.container.ident.span()),
            level: None,
            action: None,
            transactions: false,
        }
    }
}

fn model_impl(c: &Container, opts: &ModelOptions, consts: TokenStream) -> TokenStream {
    let ident = &c.ident;
    let generics = c.bounded_generics();
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let collection = &opts.collection;
    let level = opts.level.map(|l| match l {
        Level::Strict => quote!(
            const VALIDATION_LEVEL: __ds::ValidationLevel = __ds::ValidationLevel::Strict;
        ),
        Level::Moderate => quote!(
            const VALIDATION_LEVEL: __ds::ValidationLevel = __ds::ValidationLevel::Moderate;
        ),
        Level::Off => quote!(
            const VALIDATION_LEVEL: __ds::ValidationLevel = __ds::ValidationLevel::Off;
        ),
    });
    let action = opts.action.map(|a| match a {
        Action::Error => quote!(
            const VALIDATION_ACTION: __ds::ValidationAction = __ds::ValidationAction::Error;
        ),
        Action::Warn => quote!(
            const VALIDATION_ACTION: __ds::ValidationAction = __ds::ValidationAction::Warn;
        ),
    });
    let transactions = opts.transactions.then(|| {
        quote!(
            const TRANSACTIONS: bool = true;
        )
    });
    quote! {
        #[automatically_derived]
        impl #impl_generics __ds::Model for #ident #ty_generics #where_clause {
            const COLLECTION: &'static str = #collection;
            #transactions
            #level
            #action
            #consts
        }
    }
}

/// Submits the model to `docshape::registry`, so deploy tools find it without a list.
/// A generic model has no one spec to register.
fn registration(c: &Container) -> Option<TokenStream> {
    let ident = &c.ident;
    c.generics.params.is_empty().then(|| {
        quote! {
            __ds::inventory::submit! { __ds::RegisteredModel::of::<#ident>() }
        }
    })
}

/// A collection name MongoDB accepts.
pub(crate) fn collection_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("the collection name is empty")
    } else if name.contains('$') {
        Some("a collection name cannot contain `$`")
    } else if name.contains('\0') {
        Some("a collection name cannot contain a NUL character")
    } else if name.starts_with("system.") {
        Some("names starting with `system.` are reserved for the server")
    } else if name.starts_with('.') || name.ends_with('.') {
        Some("a collection name cannot start or end with `.`")
    } else {
        None
    }
}
