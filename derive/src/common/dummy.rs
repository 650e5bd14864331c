//! The wrapper around everything a derive generates.

use proc_macro2::TokenStream;
use quote::quote;

/// Wraps generated items so they leak no names into the user's module; inside,
/// `__ds` is the runtime's `__private` module.
pub(crate) fn dummy(body: TokenStream) -> TokenStream {
    quote! {
        #[doc(hidden)]
        #[allow(non_upper_case_globals, unused_qualifications, clippy::all)]
        const _: () = {
            use ::docshape::__private as __ds;
            #body
        };
    }
}
