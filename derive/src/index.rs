//! `#[index(...)]` on fields and on the struct: parse, check (paths, TTL, duplicates,
//! prefixes, the budget, `unique` inside arrays), expand into `Model::INDEXES`
//! (`runtime/src/core/index.rs` and `core/descriptor.rs` hold the types).

use darling::error::Accumulator;
use darling::{Error, FromMeta};
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::spanned::Spanned;
use syn::{Attribute, LitStr};

use crate::ast::{Container, Field};
use crate::attr::index_keys::{Allow, KeyItem, KeyList, KeyValue};
use crate::attr::Flag;
use crate::common::duration::parse_duration;
use crate::common::expansion::Expansion;
use crate::common::message::rule;
use crate::common::paths;
use crate::common::types::known_helper;
use crate::facts::Facts;

/// The model's indexes, with what the checks found.
pub(crate) struct Parsed {
    /// Every index, in declaration order; the bucket pattern adds its own before the checks.
    pub indexes: Vec<IndexDef>,
    /// The compile-time checks of paths past a first segment, found by [`check`].
    nested: TokenStream,
}

/// Reads every `#[index]` on the struct and its fields; on a polymorphic model, those
/// on the enum (for every variant) and on each variant and its fields (partial to it).
pub(crate) fn parse(cx: &Facts, errors: &mut Accumulator) -> Parsed {
    let c = &cx.container;
    let indexes = match &cx.polymorphic {
        _ if !cx.is_model() => Vec::new(),
        Some(p) => polymorphic(p, errors),
        None => read(c, &c.attrs, errors),
    };
    Parsed { indexes, nested: TokenStream::new() }
}

/// A polymorphic model's indexes: the enum's own hold every variant; a variant's are
/// partial to it, so `unique` there is unique among that variant's documents only (a
/// document of another variant, which lacks the field, is no duplicate of it).
fn polymorphic(p: &crate::polymorphic::Polymorphic, errors: &mut Accumulator) -> Vec<IndexDef> {
    let mut out: Vec<IndexDef> = read(&p.common, &p.common.attrs, errors)
        .into_iter()
        .filter(|def| {
            let misplaced: Vec<Error> = def
                .keys
                .iter()
                .filter_map(|k| crate::polymorphic::variant_only(p, &k.path, "an `#[index]`", k.span))
                .collect();
            let keep = misplaced.is_empty();
            errors.extend(misplaced);
            keep
        })
        .collect();
    for v in &p.variants {
        for mut def in read(&v.container, &v.container.attrs, errors) {
            match crate::polymorphic::partial_filter(&p.tag, &v.value, def.partial.as_deref()) {
                Ok(filter) => def.partial = Some(filter),
                Err(problem) => {
                    errors.push(Error::custom(problem).with_span(&def.span));
                    continue;
                }
            }
            // Two variants may index one field: the names tell their indexes apart.
            if def.name == default_name(&def.keys) {
                def.name = format!("{}_{}", def.name, v.value);
            }
            def.variant = Some(v.value.clone());
            out.push(def);
        }
    }
    out
}

/// The name MongoDB gives an index of these keys: `author_id_1_created_at_-1`.
fn default_name(keys: &[Key]) -> String {
    keys.iter().map(|k| format!("{}_{}", k.path, k.kind.name_part())).collect::<Vec<_>>().join("_")
}

/// The rules that concern indexes alone: paths, TTL, duplicates, prefixes, the budget,
/// `unique` inside arrays.
pub(crate) fn check(parsed: &mut Parsed, cx: &Facts, errors: &mut Accumulator) {
    let Some(m) = &cx.model else { return };
    let budget = m.max_indexes.as_ref().map_or((10, None), |n| (**n, Some(n.span())));
    let waived = m.allow.as_ref().is_some_and(|a| a.waives("index_budget"));
    parsed.nested = rules(cx, &parsed.indexes, budget, waived, errors);
}

/// `Model::INDEXES`, and the nested path checks.
pub(crate) fn expand(parsed: &Parsed, _cx: &Facts) -> Expansion {
    Expansion { model: indexes_const(&parsed.indexes), items: parsed.nested.clone(), ..Expansion::default() }
}

/// The kind of one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyKind {
    Asc,
    Desc,
    Text,
    Hashed,
    Sphere2d,
}

impl KeyKind {
    fn name_part(self) -> &'static str {
        match self {
            Self::Asc => "1",
            Self::Desc => "-1",
            Self::Text => "text",
            Self::Hashed => "hashed",
            Self::Sphere2d => "2dsphere",
        }
    }

    pub(crate) fn tokens(self) -> TokenStream {
        match self {
            Self::Asc => quote!(__ds::IndexKey::Asc),
            Self::Desc => quote!(__ds::IndexKey::Desc),
            Self::Text => quote!(__ds::IndexKey::Text),
            Self::Hashed => quote!(__ds::IndexKey::Hashed),
            Self::Sphere2d => quote!(__ds::IndexKey::Sphere2d),
        }
    }

    pub(crate) fn is_ordered(self) -> bool {
        matches!(self, Self::Asc | Self::Desc)
    }

    /// The key read from `= 1`, `= -1`, `= desc`, `= "text"`, `(desc)`.
    pub(crate) fn from_item(item: &KeyItem, ordered_only: bool) -> Result<Self, Error> {
        let kind = match &item.value {
            None => Some(Self::Asc),
            Some((KeyValue::Int(1), _)) => Some(Self::Asc),
            Some((KeyValue::Int(-1), _)) => Some(Self::Desc),
            Some((KeyValue::Word(w) | KeyValue::Str(w), _)) => match w.as_str() {
                "asc" => Some(Self::Asc),
                "desc" => Some(Self::Desc),
                "text" if !ordered_only => Some(Self::Text),
                "hashed" if !ordered_only => Some(Self::Hashed),
                "2dsphere" if !ordered_only => Some(Self::Sphere2d),
                _ => None,
            },
            _ => None,
        };
        kind.ok_or_else(|| {
            let span = item.value.as_ref().map_or(item.span, |(_, s)| *s);
            let allowed = if ordered_only {
                "`1`, `-1`, `asc` or `desc`"
            } else {
                "`1`, `-1`, `asc`, `desc`, `\"text\"`, `\"hashed\"` or `\"2dsphere\"`"
            };
            Error::custom(format!("`{}`: expected {allowed}", item.path)).with_span(&span)
        })
    }
}

/// One key of an index.
#[derive(Debug, Clone)]
pub(crate) struct Key {
    pub path: String,
    pub kind: KeyKind,
    pub span: Span,
}

/// `#[index(...)]`'s options; `keys` only on the struct, the key kind only on a field.
#[derive(FromMeta, Default)]
struct IndexOpts {
    keys: Option<KeyList>,
    desc: Flag,
    text: Flag,
    hashed: Flag,
    wildcard: Flag,
    unique: Flag,
    sparse: Flag,
    name: Option<LitStr>,
    expire_after: Option<LitStr>,
    case_insensitive: Flag,
    locale: Option<LitStr>,
    partial_filter: Option<LitStr>,
    /// Several `allow(...)` are one waiver, each rule with its own reason.
    #[darling(multiple)]
    allow: Vec<Allow>,
}

/// A checked index.
pub(crate) struct IndexDef {
    pub keys: Vec<Key>,
    pub name: String,
    pub unique: Option<Span>,
    pub sparse: bool,
    pub ttl: Option<u64>,
    pub locale: Option<String>,
    pub partial: Option<String>,
    pub allow: Allow,
    pub span: Span,
    /// On a polymorphic model, the discriminator value of the variant the index is
    /// partial to; `None` for an index on every document.
    pub variant: Option<String>,
}

impl IndexDef {
    /// An ascending index a pattern adds for its own reads (a bucket's series and
    /// period, a time-series collection's meta and time): no option, no waiver.
    pub(crate) fn added(keys: Vec<Key>, name: String, span: Span) -> Self {
        Self {
            keys,
            name,
            unique: None,
            sparse: false,
            ttl: None,
            locale: None,
            partial: None,
            allow: Default::default(),
            span,
            variant: None,
        }
    }

    /// Whether the index holds the documents a row on `variant` reads: an index on
    /// every document does; a variant's partial index holds only its own.
    pub(crate) fn holds(&self, variant: Option<&str>) -> bool {
        self.variant.is_none() || self.variant.as_deref() == variant
    }

    /// The tag and value of a variant's partial index, as its error names them.
    pub(crate) fn partial_of(&self) -> (String, String) {
        let tag = self
            .partial
            .as_deref()
            .and_then(|p| serde_json::from_str::<serde_json::Value>(p).ok())
            .and_then(|v| v.as_object().and_then(|m| m.keys().next().cloned()))
            .unwrap_or_default();
        (tag, self.variant.clone().unwrap_or_default())
    }

    /// Options that make an index more than its keys: a prefix with them is not redundant.
    fn has_options(&self) -> bool {
        self.unique.is_some() || self.sparse || self.ttl.is_some() || self.partial.is_some()
    }
}

fn parse_opts(attr: &Attribute) -> darling::Result<IndexOpts> {
    match &attr.meta {
        syn::Meta::Path(_) => Ok(IndexOpts::default()),
        meta => IndexOpts::from_meta(meta),
    }
}

fn read(c: &Container, struct_attrs: &[Attribute], errors: &mut Accumulator) -> Vec<IndexDef> {
    let mut out = Vec::new();
    for attr in struct_attrs.iter().filter(|a| a.path().is_ident("index")) {
        let Some(opts) = errors.handle(parse_opts(attr)) else { continue };
        let span = attr.path().span();
        let Some(list) = &opts.keys else {
            errors.push(Error::custom("an `#[index]` on the struct needs `keys(...)`, like `#[index(keys(author_id, created_at = -1))]`; or put `#[index]` on a field").with_span(&span));
            continue;
        };
        for (flag, name) in
            [(opts.desc, "desc"), (opts.text, "text"), (opts.hashed, "hashed"), (opts.wildcard, "wildcard")]
        {
            if flag.is_present() {
                errors.push(Error::custom(format!("`{name}` goes on a field's `#[index]`; in `keys(...)` write the key's kind, like `field = -1` or `field = \"text\"`")).with_span(&flag.span()));
            }
        }
        let keys: Vec<Key> = list
            .items
            .iter()
            .filter_map(|item| {
                errors.handle(KeyKind::from_item(item, false)).map(|kind| Key {
                    path: item.path.clone(),
                    kind,
                    span: item.span,
                })
            })
            .collect();
        if keys.is_empty() {
            errors.push(Error::custom("`keys()` is empty: an index needs at least one key").with_span(&span));
            continue;
        }
        out.extend(finish(keys, &opts, span, errors));
    }
    if let crate::ast::Body::Struct(_, fields) = &c.body {
        for f in fields {
            for attr in f.recv.attrs.iter().filter(|a| a.path().is_ident("index")) {
                let Some(opts) = errors.handle(parse_opts(attr)) else { continue };
                let span = attr.path().span();
                let Some(name) = &f.name else {
                    errors.push(Error::custom("`#[index]` goes on a named field").with_span(&span));
                    continue;
                };
                if f.serde.skip || f.serde.flatten.is_some() {
                    errors.push(Error::custom("`#[index]` on a field that is not stored under its own name (`skip` or `flatten`); index the stored paths with `#[index(keys(...))]` on the struct").with_span(&span));
                    continue;
                }
                if let Some(keys) = &opts.keys {
                    errors.push(Error::custom("`keys(...)` goes on the struct's `#[index]`; on a field the key is the field itself").with_span(&keys.span.unwrap_or(span)));
                }
                let kinds: Vec<(Flag, KeyKind)> =
                    [(opts.desc, KeyKind::Desc), (opts.text, KeyKind::Text), (opts.hashed, KeyKind::Hashed)]
                        .into_iter()
                        .filter(|(flag, _)| flag.is_present())
                        .collect();
                if kinds.len() + usize::from(opts.wildcard.is_present()) > 1 {
                    errors.push(
                        Error::custom("choose one of `desc`, `text`, `hashed` and `wildcard`")
                            .with_span(&span),
                    );
                }
                let kind = kinds.first().map_or(KeyKind::Asc, |(_, k)| *k);
                let path = if opts.wildcard.is_present() { format!("{name}.$**") } else { name.clone() };
                out.extend(finish(vec![Key { path, kind, span: f.span }], &opts, span, errors));
            }
        }
    }
    out
}

fn finish(keys: Vec<Key>, opts: &IndexOpts, span: Span, errors: &mut Accumulator) -> Option<IndexDef> {
    let name = match &opts.name {
        Some(n) if n.value().is_empty() => {
            errors.push(Error::custom("an index name cannot be empty").with_span(n));
            return None;
        }
        Some(n) => n.value(),
        None => default_name(&keys),
    };
    let ttl = opts.expire_after.as_ref().and_then(|lit| errors.handle(parse_duration(lit)));
    if let (Some(lit), true) = (&opts.expire_after, keys.len() > 1) {
        errors.push(Error::custom("a TTL index (`expire_after`) has exactly one key, a date field: MongoDB ignores TTL on compound indexes").with_span(lit));
    }
    let partial = opts.partial_filter.as_ref().and_then(|lit| {
        match serde_json::from_str::<serde_json::Value>(&lit.value()) {
            Ok(serde_json::Value::Object(_)) => Some(lit.value()),
            Ok(_) => {
                errors.push(
                    Error::custom(
                        "`partial_filter` must be a JSON object, like r#\"{\"status\": \"active\"}\"#",
                    )
                    .with_span(lit),
                );
                None
            }
            Err(e) => {
                errors.push(Error::custom(format!("`partial_filter` is not valid JSON: {e}")).with_span(lit));
                None
            }
        }
    });
    if let (Some(locale), false) = (&opts.locale, opts.case_insensitive.is_present()) {
        errors.push(
            Error::custom("`locale` sets the language of a `case_insensitive` index; add `case_insensitive`")
                .with_span(locale),
        );
    }
    let locale = opts
        .case_insensitive
        .is_present()
        .then(|| opts.locale.as_ref().map_or_else(|| "en".to_owned(), LitStr::value));
    Some(IndexDef {
        keys,
        name,
        unique: opts.unique.is_present().then(|| opts.unique.span()),
        sparse: opts.sparse.is_present(),
        ttl,
        locale,
        partial,
        allow: Allow::merged(opts.allow.clone()),
        span,
        variant: None,
    })
}

/// The rules that concern indexes alone; returns the nested path checks to emit.
fn rules(
    cx: &Facts,
    indexes: &[IndexDef],
    budget: (usize, Option<Span>),
    budget_waived: bool,
    errors: &mut Accumulator,
) -> TokenStream {
    let mut nested = TokenStream::new();
    for index in indexes {
        let c = cx.container_for(index.variant.as_deref());
        for key in &index.keys {
            let Some(resolved) = errors.handle(paths::resolve(c, &key.path, key.span)) else { continue };
            let unique_waived = index.allow.waives("unique_in_array");
            if let (Some(unique), true, false) =
                (index.unique, resolved.array && !resolved.rest.is_empty(), unique_waived)
            {
                errors.push(Error::custom(rule("unique_in_array", format!(
                    "`unique` on `{}`, a path inside an array of sub-documents: MongoDB enforces uniqueness across documents, not between the elements of one array, so two elements of one document may still share a value; keep such values unique in the code that writes the array, or waive with `allow(unique_in_array, reason = \"...\")`",
                    key.path
                ))).with_span(&unique));
            }
            nested.extend(paths::nested_checks(
                c,
                &resolved,
                key.span,
                index.unique.is_some() && !unique_waived && !resolved.array,
            ));
            // An index on the enum holds the newtype variants' documents too.
            if let (Some(p), None) = (&cx.polymorphic, &index.variant) {
                nested.extend(crate::polymorphic::wrapped_paths(p, &key.path, key.span));
            }
            // A compound TTL index already has its own error; the date check is for one key.
            if index.ttl.is_some() && index.keys.len() == 1 {
                if let Some(field) = resolved.field.filter(|_| resolved.rest.is_empty()) {
                    if !is_date(field) {
                        errors.push(Error::custom(format!(
                            "a TTL index (`expire_after`) expires documents by a BSON date, but `{}` is not stored as one; use `bson::DateTime` (chrono's types store strings)",
                            key.path
                        )).with_span(&key.span));
                    }
                }
            }
        }
    }
    for (i, a) in indexes.iter().enumerate() {
        for b in &indexes[..i] {
            if a.name == b.name {
                errors.push(
                    Error::custom(format!(
                        "two indexes are named `{}`; give one another `name = \"...\"`",
                        a.name
                    ))
                    .with_span(&a.span),
                );
            } else if same_keys(&a.keys, &b.keys) && a.locale == b.locale && a.variant == b.variant {
                errors.push(Error::custom(rule("redundant_index", format!(
                    "this index has the same keys as `{}`; MongoDB refuses two indexes with one key pattern: merge their options into one",
                    b.name
                ))).with_span(&a.span));
            }
        }
        for b in indexes {
            let prefix = a.keys.len() < b.keys.len()
                && same_keys(&a.keys, &b.keys[..a.keys.len()])
                && !a.has_options()
                && a.locale == b.locale
                && a.variant == b.variant;
            if prefix && !a.allow.waives("redundant_index") {
                errors.push(Error::custom(rule("redundant_index", format!(
                    "index `{}` is a prefix of `{}`, which serves every query it serves; remove it, or waive with `allow(redundant_index, reason = \"...\")`",
                    a.name, b.name
                ))).with_span(&a.span));
            }
        }
    }
    let (max, max_span) = budget;
    if indexes.len() > max && !budget_waived {
        let over = &indexes[max];
        let hint =
            if max_span.is_some() { "" } else { " (the default budget, as MongoDB Compass warns above 10)" };
        errors.push(Error::custom(rule("index_budget", format!(
            "{} indexes exceed the budget of {max}{hint}: every index costs memory and slows every write; drop one, raise `#[model(max_indexes = N)]`, or waive with `#[model(allow(index_budget, reason = \"...\"))]`",
            indexes.len()
        ))).with_span(&over.span));
    }
    nested
}

fn same_keys(a: &[Key], b: &[Key]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.path == y.path && x.kind == y.kind)
}

fn is_date(field: &Field) -> bool {
    if let Some(bt) = &field.recv.bson_type {
        return bt.value() == "date";
    }
    if let Some(with) = &field.serde.with {
        return known_helper(&with.value()) == Some("date");
    }
    let ty = &field.recv.ty;
    let text = quote!(#ty).to_string().replace(' ', "");
    text.contains("DateTime") && !text.contains("chrono")
}

/// `const INDEXES: &[Index] = &[...]`.
fn indexes_const(indexes: &[IndexDef]) -> TokenStream {
    let items = indexes.iter().map(|i| {
        let name = &i.name;
        let keys = i.keys.iter().map(|k| {
            let path = &k.path;
            let kind = k.kind.tokens();
            quote!((#path, #kind))
        });
        // Only the options the index sets, each one `const fn` call on `Index::of`:
        // struct update syntax would copy every field of `Index` in each model's MIR.
        let unique = i.unique.is_some().then(|| quote!(.with_unique(true)));
        let sparse = i.sparse.then(|| quote!(.with_sparse(true)));
        let ttl = i.ttl.map(|s| quote!(.with_expire_after_secs(::core::option::Option::Some(#s))));
        let locale =
            i.locale.as_ref().map(|l| quote!(.with_case_insensitive(::core::option::Option::Some(#l))));
        let partial =
            i.partial.as_ref().map(|p| quote!(.with_partial_filter(::core::option::Option::Some(#p))));
        quote!(__ds::Index::of(#name, &[#(#keys),*]) #unique #sparse #ttl #locale #partial)
    });
    quote!(const INDEXES: &'static [__ds::Index] = &[#(#items),*];)
}
