//! `migrate(v1 = UserV1, v2(document = upgrade_v2))` in `#[model(...)]`: the steps
//! that upgrade older versions of a document, as written.

use darling::ast::NestedMeta;
use darling::{Error, FromMeta};
use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Ident, Type};

/// How one older version is upgraded.
#[derive(Clone)]
pub(crate) enum StepKind {
    /// `vN = OldType`: the old shape as a type, `From` it into the next version's type.
    Typed(Type),
    /// `vN(document = path::to::fn)`: `fn(Document) -> Result<Document, E>`.
    Document(syn::Path),
}

#[derive(Clone)]
pub(crate) struct Step {
    pub version: i64,
    pub span: Span,
    pub kind: StepKind,
}

/// `migrate(v1 = UserV1, v2(document = upgrade_v2))`.
#[derive(Clone, Default)]
pub(crate) struct Migrate {
    pub steps: Vec<Step>,
    pub span: Option<Span>,
}

fn version_of(ident: &Ident) -> Option<i64> {
    let text = ident.to_string();
    let digits = text.strip_prefix('v')?;
    if digits.is_empty() || digits.starts_with('0') || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

impl FromMeta for Migrate {
    fn from_meta(item: &syn::Meta) -> darling::Result<Self> {
        let syn::Meta::List(list) = item else {
            return Err(Error::custom("write `migrate(v1 = UserV1, ...)`: one step per older version")
                .with_span(item));
        };
        let items = NestedMeta::parse_meta_list(list.tokens.clone())?;
        let mut migrate = Self::from_list(&items)?;
        migrate.span = Some(item.span());
        Ok(migrate)
    }

    fn from_list(items: &[NestedMeta]) -> darling::Result<Self> {
        let mut errors = Error::accumulator();
        let mut steps: Vec<Step> = Vec::new();
        for item in items {
            let NestedMeta::Meta(meta) = item else {
                errors.push(
                    Error::custom("expected `vN = OldType` or `vN(document = upgrade_fn)`").with_span(item),
                );
                continue;
            };
            let path = meta.path();
            let Some(version) = path.get_ident().and_then(version_of) else {
                errors.push(
                    Error::custom(
                        "a step is named after the version it upgrades: `v1 = UserV1` or `v1(document = upgrade_v1)`",
                    )
                    .with_span(path),
                );
                continue;
            };
            let kind = match meta {
                syn::Meta::NameValue(nv) => match &nv.value {
                    syn::Expr::Path(p) if p.qself.is_none() => StepKind::Typed(Type::Path(syn::TypePath {
                        attrs: Vec::new(),
                        qself: None,
                        path: p.path.clone(),
                    })),
                    other => {
                        errors.push(
                            Error::custom(format!(
                                "`v{version} = ...` takes the type of the version-{version} shape, e.g. `v{version} = UserV{version}`"
                            ))
                            .with_span(other),
                        );
                        continue;
                    }
                },
                syn::Meta::List(list) => {
                    let mut function = None;
                    let parsed = list.parse_nested_meta(|m| {
                        if m.path.is_ident("document") {
                            function = Some(m.value()?.parse::<syn::Path>()?);
                            Ok(())
                        } else {
                            Err(m.error("expected `document = upgrade_fn`"))
                        }
                    });
                    match (parsed, function) {
                        (Err(e), _) => {
                            errors.push(e.into());
                            continue;
                        }
                        // Called as `path(doc)`: generic arguments there would not parse.
                        (Ok(()), Some(f))
                            if f.segments
                                .iter()
                                .any(|seg| !matches!(seg.arguments, syn::PathArguments::None)) =>
                        {
                            errors.push(
                                Error::custom(format!(
                                    "`document = ...` names a function `fn(Document) -> Result<Document, E>`, such as `upgrade_v{version}`; wrap a generic one in a plain function"
                                ))
                                .with_span(&f),
                            );
                            continue;
                        }
                        (Ok(()), Some(f)) => StepKind::Document(f),
                        (Ok(()), None) => {
                            errors.push(
                                Error::custom(format!(
                                    "name the function: `v{version}(document = upgrade_v{version})`"
                                ))
                                .with_span(list),
                            );
                            continue;
                        }
                    }
                }
                syn::Meta::Path(p) => {
                    errors.push(
                        Error::custom(format!(
                            "`v{version}` needs its step: `v{version} = UserV{version}` or `v{version}(document = upgrade_v{version})`"
                        ))
                        .with_span(p),
                    );
                    continue;
                }
            };
            if steps.iter().any(|s| s.version == version) {
                errors.push(
                    Error::custom(format!("version {version} has two steps; keep one")).with_span(path),
                );
                continue;
            }
            steps.push(Step { version, span: path.span(), kind });
        }
        steps.sort_by_key(|s| s.version);
        errors.finish_with(Self { steps, span: None })
    }
}
