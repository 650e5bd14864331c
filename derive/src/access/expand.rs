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
        // Only what differs from `AccessPattern::row` is written, each one `const fn` call
        // on it: struct update syntax would copy every field of `AccessPattern` in each
        // model's MIR.
        let ci = ci.then(|| quote!(.with_case_insensitive(true)));
        let range = (!a.range.is_empty()).then(|| {
            let range = strs(&a.range);
            quote!(.with_range(#range))
        });
        // A write row's "fields needed" are the fields it writes (the seed's "cart items").
        let written: Vec<&String> = a.update.iter().flat_map(|w| w.ops.iter().map(|(_, p, _)| p)).collect();
        let fields: Vec<&String> = a.fields.iter().map(|(p, _)| p).chain(&a.foreign).chain(written).collect();
        let fields = (!fields.is_empty()).then(|| quote!(.with_fields(&[#(#fields),*])));
        let freq = (!a.freq.is_empty()).then(|| {
            let freq = &a.freq;
            quote!(.with_freq(#freq))
        });
        let consistency = (!a.consistency.is_empty()).then(|| {
            let consistency = &a.consistency;
            quote!(.with_consistency(#consistency))
        });
        let guarantee = (!matches!(a.guarantee, consistency::Consistency::Unspecified)).then(|| {
            let guarantee = consistency::tokens(a.guarantee);
            quote!(.with_guarantee(#guarantee))
        });
        let load = freq::load_tokens(a, cx);
        let index = match &a.index {
            Some(i) => quote!(::core::option::Option::Some(#i)),
            None => quote!(::core::option::Option::None),
        };
        let waivers: Vec<TokenStream> = a
            .allow
            .rules
            .iter()
            .zip(&a.allow.reasons)
            .map(|((r, _), reason)| quote!((#r, #reason)))
            .collect();
        let waivers = (!waivers.is_empty()).then(|| quote!(.with_waivers(&[#(#waivers),*])));
        let paginate = a.paginate.is_some().then(|| quote!(.with_paginate(true)));
        let kind = match (&a.update, &a.upsert) {
            (None, _) => None,
            (Some(_), None) => Some(quote!(.with_kind(__ds::RowKind::Write))),
            (Some(_), Some(_)) => Some(quote!(.with_kind(__ds::RowKind::Upsert))),
        };
        // The operation defaults to the name, the sort to none (`AccessPattern::row`).
        let operation = (operation != name).then(|| quote!(.with_operation(#operation)));
        let sort = (!a.sort.is_empty()).then(|| quote!(.with_sort(&[#(#sort),*])));
        let row = quote!(__ds::AccessPattern::row(#name, #filter, #load, #index));
        quote!(#row #operation #sort #ci #range #fields #freq #consistency #guarantee #waivers #paginate #kind)
    });
    quote!(const ACCESS_PATTERNS: &'static [__ds::AccessPattern] = &[#(#items),*];)
}
