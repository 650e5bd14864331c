//! The shard key (`#[model(shard_key(...))]`): read as an index's keys, its nested paths checked, expanded into `Model::SHARD_KEY`.

#[allow(unused_imports)]
use super::*;

/// The shard key, read like an index's keys.
pub(super) fn shard_key(
    c: &Container,
    list: &Option<KeyList>,
    errors: &mut Accumulator,
) -> (Vec<Key>, TokenStream) {
    let mut keys = Vec::new();
    let mut nested = TokenStream::new();
    for item in list.iter().flat_map(|l| &l.items) {
        let Some(kind) = errors.handle(KeyKind::from_item(item, false)) else { continue };
        if !(kind.is_ordered() || kind == KeyKind::Hashed) || kind == KeyKind::Desc {
            errors.push(
                Error::custom("a shard key field is `1` (ranged) or `\"hashed\"`").with_span(&item.span),
            );
        }
        if let Some(r) = errors.handle(paths::resolve(c, &item.path, item.span)) {
            nested.extend(paths::nested_checks(c, &r, item.span, false));
        }
        keys.push(Key { path: item.path.clone(), kind, span: item.span });
    }
    if let (true, Some(span)) = (keys.is_empty(), list.as_ref().and_then(|l| l.span)) {
        errors.push(Error::custom("`shard_key()` is empty").with_span(&span));
    }
    let items = keys.iter().map(|k| {
        let path = &k.path;
        let kind = k.kind.tokens();
        quote!((#path, #kind))
    });
    let tokens = if keys.is_empty() {
        TokenStream::new()
    } else {
        quote!(const SHARD_KEY: &'static [(&'static str, __ds::IndexKey)] = &[#(#items),*];)
    };
    (keys, quote!(#tokens #nested))
}
