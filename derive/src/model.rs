//! Expand: `impl Model` for a collection's type.

use proc_macro2::TokenStream;
use quote::quote;
use syn::LitStr;

use crate::ast::{Action, Container, Level};

/// The `#[model(...)]` options that reach the `Model` impl.
pub(crate) struct ModelOptions {
    pub collection: LitStr,
    pub level: Option<Level>,
    pub action: Option<Action>,
}

pub(crate) fn model_impl(c: &Container, opts: &ModelOptions, consts: TokenStream) -> TokenStream {
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
    quote! {
        #[automatically_derived]
        impl #impl_generics __ds::Model for #ident #ty_generics #where_clause {
            const COLLECTION: &'static str = #collection;
            #level
            #action
            #consts
        }
    }
}

/// Submits the model to `docshape::registry`, so deploy tools find it without a list.
/// A generic model has no one spec to register.
pub(crate) fn registration(c: &Container) -> Option<TokenStream> {
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
