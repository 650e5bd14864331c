//! When the derive fails: the errors, plus stub impls so that the user sees the real
//! error instead of a cascade of "trait not implemented" at every use of the type; and
//! when it found errors but could still expand, the expansion without its checks.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{DeriveInput, Ident};

use crate::common::dummy::dummy;

/// The errors, with stub impls of `Schema` (and `Model` for a model).
pub(crate) fn expand(input: &DeriveInput, errors: darling::Error, model: bool) -> TokenStream {
    let errors = errors.write_errors();
    let stubs = stubs(&input.ident, &input.generics, model);
    quote! {
        #errors
        #stubs
    }
}

fn stubs(ident: &Ident, generics: &syn::Generics, model: bool) -> TokenStream {
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let model = model.then(|| {
        quote! {
            impl #impl_generics __ds::Model for #ident #ty_generics #where_clause {
                const COLLECTION: &'static str = "";
            }
        }
    });
    dummy(quote! {
        impl #impl_generics __ds::Schema for #ident #ty_generics #where_clause {
            fn schema() -> __ds::Document {
                __ds::Document::new()
            }
        }
        #model
    })
}

/// The generated items of a derive that reported errors, without its compile-time
/// checks: every check is an anonymous `const _` item (an assertion, a bound, a path
/// lookup), and none declares anything the type's users name. A check may rest on a
/// value that a reported error replaced by a neutral one (a bucket that did not parse
/// leaves its items' array unbounded), so it could raise a second error for the first
/// mistake; the checks run once the reported errors are fixed. Tokens that do not
/// parse as items are kept whole.
pub(crate) fn without_checks(items: TokenStream) -> TokenStream {
    let Ok(mut file) = syn::parse2::<syn::File>(items.clone()) else { return items };
    file.items.retain(|item| !matches!(item, syn::Item::Const(c) if c.ident == "_"));
    quote!(#file)
}
