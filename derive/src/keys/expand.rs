//! The expansion of a key family: `KeyFamily`, the kind's trait and its checks.

#[allow(unused_imports)]
use super::*;

pub(super) fn expand_family(
    recv: &KeyReceiver,
    kind: Kind,
    segments: &[Seg],
    pattern: &LitStr,
    ttl: &TtlDecision,
    fields: &[&KeyField],
    value: Option<&Type>,
) -> TokenStream {
    let ident = &recv.ident;
    let (impl_generics, ty_generics, where_clause) = recv.generics.split_for_impl();
    let type_name = ident.unraw().to_string();
    let segs = segments.iter().map(|s| match s {
        Seg::Literal(text) => quote!(__ds::Segment::Literal(#text)),
        Seg::Placeholder(name) => quote!(__ds::Segment::Placeholder(#name)),
        Seg::Shards(first, last) => quote!(__ds::Segment::Shards { first: #first, last: #last }),
    });
    let kind_variant = kind.runtime_variant();
    let json = value.is_some();
    let ttl = match ttl {
        TtlDecision::After { seconds, spelled } => {
            let sliding = recv.sliding.is_present();
            quote!(__ds::Ttl::After { seconds: #seconds, sliding: #sliding, spelled: #spelled })
        }
        TtlDecision::Never => {
            let reason = recv.reason.as_ref().map(LitStr::value).unwrap_or_default();
            quote!(__ds::Ttl::Never { reason: #reason })
        }
    };
    let note = recv.note.as_ref().map(LitStr::value).unwrap_or_default();
    // Checked by `check_staleness`: "ttl" or "invalidated".
    let staleness = match recv.staleness.as_ref().map(LitStr::value).as_deref() {
        Some("ttl") => format_ident!("Ttl"),
        _ => format_ident!("Invalidated"),
    };
    // Into `docshape::registry`, for the program's catalog; a generic family has no one
    // type to name (its spec is the same for every instantiation: list it by hand).
    let registration = recv.generics.params.is_empty().then(|| {
        quote! {
            __ds::inventory::submit! {
                __ds::RegisteredKeyFamily { spec: &<#ident as __ds::KeyFamily>::SPEC }
            }
        }
    });

    // Placeholders in the pattern's order, each with its field.
    let placeholders: Vec<(&String, &KeyField)> = segments
        .iter()
        .filter_map(|s| match s {
            Seg::Placeholder(p) => fields
                .iter()
                .find(|f| f.ident.as_ref().is_some_and(|i| i.unraw() == p.as_str()))
                .map(|f| (p, *f)),
            _ => None,
        })
        .collect();
    let count = placeholders.len();
    let texts = placeholders.iter().map(|(_, f)| {
        let (field, ty) = (&f.ident, &f.ty);
        // Under the field's type: that is where a missing `Display` is the user's to fix.
        quote_spanned!(ty.span()=> __ds::placeholder_text::<#ty>(&self.#field))
    });
    let vars: Vec<Ident> = placeholders.iter().map(|(p, _)| format_ident!("__ds_{}", p)).collect();
    let inits = placeholders.iter().zip(&vars).map(|((p, f), var)| {
        let (field, ty) = (&f.ident, &f.ty);
        let parse = quote_spanned!(ty.span()=> __ds::parse_placeholder::<#ty>(#p, #var));
        quote!(#field: #parse?)
    });
    let construct = match &recv.data {
        darling::ast::Data::Struct(f) if f.style == darling::ast::Style::Unit => quote!(Self),
        _ => quote!(Self { #(#inits,)* }),
    };
    // A family with one placeholder caches documents whose `_id` has its type: the key
    // is built from the id value itself (see `CachesId`).
    let caches_id = match (placeholders.as_slice(), fields.len()) {
        ([(_, f)], 1) => {
            let (field, ty) = (&f.ident, &f.ty);
            Some(quote! {
                #[automatically_derived]
                impl #impl_generics __ds::CachesId<#ty> for #ident #ty_generics #where_clause {
                    fn for_id(id: #ty) -> Self {
                        Self { #field: id }
                    }
                }
            })
        }
        // Two placeholders: a tenant model's documents, keyed by the tenant then the id
        // (see `CachesTenantId`).
        ([(_, t), (_, i)], 2) => {
            let (tenant, tenant_ty, id, id_ty) = (&t.ident, &t.ty, &i.ident, &i.ty);
            Some(quote! {
                #[automatically_derived]
                impl #impl_generics __ds::CachesTenantId<#tenant_ty, #id_ty> for #ident #ty_generics #where_clause {
                    fn for_tenant_id(tenant: #tenant_ty, id: #id_ty) -> Self {
                        Self { #tenant: tenant, #id: id }
                    }
                }
            })
        }
        _ => None,
    };
    let family_trait = kind.family_trait();
    let stored = kind.stores_values().then(|| {
        let encoding = match value {
            Some(ty) => quote_spanned!(ty.span()=> __ds::Json<#ty>),
            None => quote!(__ds::Text),
        };
        quote! {
            #[automatically_derived]
            impl #impl_generics __ds::Stored for #ident #ty_generics #where_clause {
                type Encoding = #encoding;
            }
        }
    });
    quote! {
        #[automatically_derived]
        impl #impl_generics __ds::KeyFamily for #ident #ty_generics #where_clause {
            const SPEC: __ds::KeySpec = __ds::KeySpec {
                name: ::core::concat!(::core::module_path!(), "::", #type_name),
                pattern: #pattern,
                segments: &[#(#segs),*],
                kind: __ds::KeyKind::#kind_variant,
                json: #json,
                ttl: #ttl,
                note: #note,
                staleness: __ds::Staleness::#staleness,
            };

            fn placeholder_values(&self) -> __ds::Vec<__ds::String> {
                let mut values = __ds::Vec::with_capacity(#count);
                #(values.push(#texts);)*
                values
            }

            fn from_placeholder_values(
                values: __ds::Vec<__ds::String>,
            ) -> ::core::result::Result<Self, __ds::KeyError> {
                let [#(#vars),*] = __ds::placeholder_texts::<#count>(&<Self as __ds::KeyFamily>::SPEC, values)?;
                ::core::result::Result::Ok(#construct)
            }
        }
        #stored
        #caches_id
        #[automatically_derived]
        impl #impl_generics __ds::#family_trait for #ident #ty_generics #where_clause {}
        #registration
    }
}
