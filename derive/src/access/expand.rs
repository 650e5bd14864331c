//! `Model::ACCESS_PATTERNS`: the checked rows as one constant table.

#[allow(unused_imports)]
use super::*;

/// `const ACCESS_PATTERNS: &[AccessPattern] = &[...]`.
pub(super) fn patterns_const(patterns: &[Access], cx: &Facts) -> TokenStream {
    let strs = |v: &[(String, Span)]| {
        let v = v.iter().map(|(p, _)| p);
        quote!(&[#(#v),*])
    };
    let items = patterns.iter().map(|a| {
        let name = &a.name;
        let operation = &a.operation;
        let filter = strs(&a.filter);
        let ci = a.case_insensitive;
        let sort = a.sort.iter().map(|k| {
            let path = &k.path;
            let kind = k.kind.tokens();
            quote!((#path, #kind))
        });
        let range = strs(&a.range);
        // A write row's "fields needed" are the fields it writes (the seed's "cart items").
        let written: Vec<&String> = a.update.iter().flat_map(|w| w.ops.iter().map(|(_, p, _)| p)).collect();
        let fields = {
            let v = a.fields.iter().map(|(p, _)| p).chain(&a.foreign).chain(written);
            quote!(&[#(#v),*])
        };
        let freq = &a.freq;
        let consistency = &a.consistency;
        let guarantee = consistency::tokens(a.guarantee);
        let load = freq::load_tokens(a, cx);
        let index = match &a.index {
            Some(i) => quote!(::core::option::Option::Some(#i)),
            None => quote!(::core::option::Option::None),
        };
        let waivers =
            a.allow.rules.iter().zip(&a.allow.reasons).map(|((r, _), reason)| quote!((#r, #reason)));
        let paginate = a.paginate.is_some();
        let kind = match (&a.update, &a.upsert) {
            (None, _) => quote!(__ds::RowKind::Read),
            (Some(_), None) => quote!(__ds::RowKind::Write),
            (Some(_), Some(_)) => quote!(__ds::RowKind::Upsert),
        };
        quote! {
            __ds::AccessPattern {
                name: #name,
                operation: #operation,
                filter: #filter,
                case_insensitive: #ci,
                sort: &[#(#sort),*],
                range: #range,
                fields: #fields,
                freq: #freq,
                consistency: #consistency,
                guarantee: #guarantee,
                load: #load,
                index: #index,
                waivers: &[#(#waivers),*],
                paginate: #paginate,
                kind: #kind,
            }
        }
    });
    quote!(const ACCESS_PATTERNS: &'static [__ds::AccessPattern] = &[#(#items),*];)
}
