//! `#[access(...)]` as written: the rows read from the attributes, with the keys' own mistakes reported where they are written.

#[allow(unused_imports)]
use super::*;

/// Every key of `#[access(...)]`.
pub(super) const KEYS: &[&str] = &[
    "name",
    "operation",
    "filter",
    "sort",
    "range",
    "fields",
    "freq",
    "consistency",
    "allow",
    "paginate",
    "update",
    "upsert",
    "view",
    "cache",
    "variant",
    "include_deleted",
];

/// The keys a row can lose without changing its method or the other checks: its
/// parameters and return type do not depend on them, and no rule needs them (unlike
/// `allow(...)`, whose waivers would turn into second errors).
pub(super) const NEUTRAL_KEYS: &[&str] = &["operation", "freq", "consistency"];

/// A row that darling refused, read again without its mistakes in neutral keys (a
/// misspelt `consistancy`, a `freq = 500` that is no string), so that its method
/// keeps its signature: the mistakes are reported, and a call of the method raises no
/// second error. `None` when a mistake is anywhere else (a misspelt `filtr` would
/// drop a parameter), and the row has no method.
pub(super) fn without_neutral_mistakes(meta: &syn::Meta) -> Option<AccessOpts> {
    let syn::Meta::List(list) = meta else { return None };
    let items = NestedMeta::parse_meta_list(list.tokens.clone()).ok()?;
    let key = |item: &NestedMeta| match item {
        NestedMeta::Meta(m) => m.path().get_ident().map(ToString::to_string),
        NestedMeta::NameValueInvalidExpr(m) => m.path.get_ident().map(ToString::to_string),
        NestedMeta::Lit(_) => None,
    };
    let name = items.iter().find(|i| key(i).as_deref() == Some("name"))?;
    let mut kept = Vec::new();
    for item in &items {
        match key(item) {
            // A neutral key is kept when it parses on its own.
            Some(k) if NEUTRAL_KEYS.contains(&k.as_str()) => {
                if AccessOpts::from_list(&[name.clone(), item.clone()]).is_ok() {
                    kept.push(item.clone());
                }
            }
            // A misspelling of a neutral key is left out; anything else is kept, so
            // that a mistake in it fails the reading below.
            Some(k)
                if !KEYS.contains(&k.as_str())
                    && did_you_mean(&k, KEYS).is_some_and(|s| NEUTRAL_KEYS.contains(&s)) => {}
            _ => kept.push(item.clone()),
        }
    }
    AccessOpts::from_list(&kept).ok()
}

pub(super) fn plain_paths(
    list: &Option<KeyList>,
    what: &str,
    errors: &mut Accumulator,
) -> Vec<(String, Span)> {
    let mut out = Vec::new();
    for item in list.iter().flat_map(|l| &l.items) {
        if let Some((_, span)) = &item.value {
            errors.push(
                Error::custom(format!(
                    "`{what}(...)` lists stored fields; `{}` takes no value here",
                    item.path
                ))
                .with_span(span),
            );
        }
        out.push((item.path.clone(), item.span));
    }
    out
}

pub(super) fn read(attrs: &[Attribute], errors: &mut Accumulator) -> Vec<Access> {
    let mut out: Vec<Access> = Vec::new();
    for attr in attrs.iter().filter(|a| a.path().is_ident("access")) {
        let opts = match AccessOpts::from_meta(&attr.meta) {
            Ok(opts) => opts,
            Err(e) => {
                errors.push(e);
                let Some(opts) = without_neutral_mistakes(&attr.meta) else { continue };
                opts
            }
        };
        let name = opts.name.value();
        let span = opts.name.span();
        let mut method =
            syn::parse_str::<syn::Ident>(&name).is_ok().then(|| quote::format_ident!("{}", name));
        if method.is_none() {
            errors.push(Error::custom(format!("`{name}` is not an identifier: an access pattern's name becomes a method name, like `posts_by_author`; say it in words with `operation = \"...\"`")).with_span(&span));
        }
        if out.iter().any(|a| a.name == name) {
            errors.push(Error::custom(format!("two access patterns are named `{name}`")).with_span(&span));
            // The first row keeps the method: a second one would add a duplicate definition.
            method = None;
        }
        let mut filter = Vec::new();
        let mut case_insensitive = false;
        for item in opts.filter.iter().flat_map(|l| &l.items) {
            match &item.value {
                None => {}
                Some((KeyValue::Word(w), _)) if w == "case_insensitive" => case_insensitive = true,
                Some((_, span)) => errors.push(Error::custom(format!("`{}`: a filter field is matched by equality; the only option is `(case_insensitive)`", item.path)).with_span(span)),
            }
            filter.push((item.path.clone(), item.span));
        }
        if case_insensitive && opts.filter.iter().flat_map(|l| &l.items).any(|i| i.value.is_none()) {
            errors.push(
                Error::custom(
                    "a query has one collation: mark every filter field `(case_insensitive)` or none",
                )
                .with_span(&span),
            );
        }
        let sort: Vec<Key> = opts
            .sort
            .iter()
            .flat_map(|l| &l.items)
            .filter_map(|item| {
                errors.handle(KeyKind::from_item(item, true)).map(|kind| Key {
                    path: item.path.clone(),
                    kind,
                    span: item.span,
                })
            })
            .collect();
        let mut sort: Vec<Key> = sort;
        let paginate = opts.paginate.is_present().then(|| opts.paginate.span());
        if let Some(span) = paginate {
            // "_id breaks timestamp ties": the tie-breaker ends every paginated sort.
            if !sort.iter().any(|k| k.path == "_id") {
                let kind = sort.last().map_or(KeyKind::Asc, |k| k.kind);
                sort.push(Key { path: "_id".to_owned(), kind, span });
            }
            if let Some(range) = &opts.range {
                errors.push(Error::custom("`paginate` with `range(...)` is not supported: a keyset page continues from its cursor, which is itself a range; declare a separate access pattern without `paginate` for the range query").with_span(&range.span.unwrap_or(span)));
            }
        }
        let mut range = plain_paths(&opts.range, "range", errors);
        if paginate.is_some() {
            // Already reported above; dropping it keeps the index rules from adding
            // a second error for the same mistake.
            range.clear();
        }
        for (path, span) in &range {
            if filter.iter().any(|(f, _)| f == path) {
                errors.push(
                    Error::custom(format!("`{path}` is both an equality filter and a range: keep one"))
                        .with_span(span),
                );
            }
        }
        let update = write::read(
            opts.update.map(|u| {
                let span = u.span();
                (u.into_inner(), span)
            }),
            errors,
        );
        let upsert = write::read_upsert(
            opts.upsert.map(|u| {
                let span = u.span();
                (u.into_inner(), span)
            }),
            update.is_some(),
            errors,
        );
        if let (Some(view), Some(_)) = (&opts.view, &update) {
            if let Some(name) = &view.name {
                errors.push(
                    Error::custom("a write row reads nothing, so it has no view: drop `view(...)`")
                        .with_span(name),
                );
            }
        }
        if let Some(cache) = &opts.cache {
            // `filter(org_id, _id)` is a tenant model's: `tenant::check`, which knows the
            // tenant, checks the fields before the `_id`.
            let by_id = filter.last().is_some_and(|(p, _)| p == "_id");
            if !by_id || opts.range.is_some() {
                errors.push(Error::custom("a cached row reads one document by its id: its key is built from the `_id`, so the row filters on `_id` alone (`filter(_id)`)").with_span(cache));
            } else if update.is_some() || paginate.is_some() {
                errors.push(Error::custom("`cache = ...` is for a read of one document; a write row or a paginated row cannot be cached").with_span(cache));
            }
        }
        out.push(Access {
            method,
            cache: opts.cache.clone(),
            update,
            upsert,
            view: opts.view.unwrap_or_default(),
            owner: None,
            operation: opts.operation.as_ref().map_or_else(|| name.clone(), LitStr::value),
            name,
            span,
            filter,
            case_insensitive,
            sort,
            range,
            fields: plain_paths(&opts.fields, "fields", errors),
            freq: opts.freq.as_ref().map(LitStr::value).unwrap_or_default(),
            consistency: opts.consistency.as_ref().map(LitStr::value).unwrap_or_default(),
            guarantee: consistency::parse(opts.consistency.as_ref(), errors),
            rate: freq::parse(opts.freq.as_ref(), errors),
            reads: freq::Reads::default(),
            allow: Allow::merged(opts.allow),
            index: None,
            paginate,
            foreign: Vec::new(),
            variant: opts.variant.clone(),
            discriminator: None,
            whole_variant: false,
            include_deleted: opts.include_deleted.is_present().then(|| opts.include_deleted.span()),
            live: None,
        });
    }
    out
}
