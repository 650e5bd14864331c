//! When the derive fails: the errors, plus stub impls so that the user sees the real
//! error instead of a cascade of "trait not implemented" at every use of the type.

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
