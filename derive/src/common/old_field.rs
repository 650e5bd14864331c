//! Whether an older version's typed shape stores a field as the current type does: the
//! one compile-time check behind the rule `old_version_field` (rows over a changed
//! field) and the versioned patterns' kept fields (an outlier's or a bucket's fields,
//! which their writers append to in documents of every version).

use proc_macro2::{Span, TokenStream};
use quote::quote_spanned;
use syn::Type;

/// What to say when the check fails.
pub(crate) struct Messages<'a> {
    /// The shape stores no field `name`.
    pub missing: &'a str,
    /// It stores it as another type: an `on_unimplemented` message, where `{Self}` is
    /// the stored type and `{T}` the current one.
    pub other: &'a str,
    /// The label under the span for `other`.
    pub label: &'a str,
}

/// A `const _` block, under `span`, that fails when the shape `old` stores no field
/// `name` (a constant assertion) or, when `current` is given, stores it as a type other
/// than `current` (a trait bound). An `Option` of the type, or the type an `Option`
/// holds, counts as the same: such documents are found, or lack the field.
pub(crate) fn check(
    old: &Type,
    name: &str,
    current: Option<&Type>,
    says: &Messages<'_>,
    span: Span,
) -> TokenStream {
    let (missing, other, label) = (says.missing, says.other, says.label);
    let types = current.map(|current| {
        quote_spanned! {span=>
            #[diagnostic::on_unimplemented(message = #other, label = #label)]
            trait __SameAcrossVersions<T: ?Sized> {}
            impl<T: ?Sized> __SameAcrossVersions<T> for T {}
            impl<T> __SameAcrossVersions<T> for ::core::option::Option<T> {}
            impl<T> __SameAcrossVersions<::core::option::Option<T>> for T {}
            fn __same<A: ?Sized + __SameAcrossVersions<B>, B: ?Sized>() {}
            fn __check() {
                __same::<
                    <__ds::If<{ __L.compare() }> as __ds::Choose<
                        <#old as __ds::HasField<{ __L.index() }>>::Stored,
                        #current,
                    >>::Out,
                    #current,
                >();
            }
        }
    });
    quote_spanned! {span=>
        const _: () = {
            const __L: __ds::OldField = __ds::OldField::find::<#old>(#name);
            ::core::assert!(!__L.missing(), #missing);
            #types
        };
    }
}
