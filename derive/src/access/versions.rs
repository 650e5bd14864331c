//! The rule `old_version_field`: a row of a versioned model that filters or sorts on a
//! field an older version stores under another name or as another type cannot find the
//! documents still at that version. Lazy migration upgrades a document only when it is
//! written, so until a backfill has run such a row silently misses them.
//!
//! The older shapes are other types (`migrate(v1 = QuestionV1)`), whose fields the
//! derive cannot see: each check is generated as constant evaluation and a trait bound
//! over the shape's `StoredNames`/`HasField` impls, under the row's path, so that one
//! error names the row, the path, the version and the fixes.

use proc_macro2::{Span, TokenStream};
use quote::quote;

use super::Access;
use crate::ast::Container;
use crate::attr::migrate::{Migrate, StepKind};
use crate::common::{old_field, paths};

/// What the fixes are, at the end of every message of the rule.
const FIXES: &str = "lazy migration upgrades a document only when it is written, so until then this row does not see it; run `versioning::backfill` before the row is relied on and waive with `allow(old_version_field, reason = \"backfilled before release ...\")`, or keep the field's name and type across versions";

/// The checks for every row of a versioned model against every older shape declared
/// as a type. Document steps (`v1(document = f)`) have no shape to check.
pub(super) fn checks(
    c: &Container,
    patterns: &[Access],
    migrate: Option<&Migrate>,
    version_field: Option<&str>,
) -> TokenStream {
    let Some(migrate) = migrate else { return TokenStream::new() };
    if c.generics.params.first().is_some() {
        return TokenStream::new();
    }
    let mut out = TokenStream::new();
    for a in patterns.iter().filter(|a| !a.allow.waives("old_version_field")) {
        let read = a
            .filter
            .iter()
            .map(|(p, s)| ("filters on", p, *s))
            .chain(a.range.iter().map(|(p, s)| ("filters on", p, *s)))
            .chain(a.sort.iter().map(|k| ("sorts on", &k.path, k.span)));
        for (verb, path, span) in read {
            let first = path.split('.').next().unwrap_or_default();
            if first == "_id" || Some(first) == version_field {
                continue;
            }
            // A path that does not resolve has its own error.
            let Ok(r) = paths::resolve(c, path, span) else { continue };
            let Some(field) = r.field else { continue };
            for step in &migrate.steps {
                let StepKind::Typed(old) = &step.kind else { continue };
                let whole = path.as_str() == first;
                out.extend(check(
                    a,
                    verb,
                    path,
                    first,
                    whole.then_some(&field.recv.ty),
                    old,
                    step.version,
                    span,
                ));
            }
        }
    }
    out
}

/// One row's path against one older shape: the first segment must be stored by it,
/// and, for a top-level path, with the same type (an `Option` of it, or the type an
/// `Option` holds, counts as the same: such documents are found, or lack the field).
#[allow(clippy::too_many_arguments)]
fn check(
    a: &Access,
    verb: &str,
    path: &str,
    first: &str,
    current: Option<&syn::Type>,
    old: &syn::Type,
    version: i64,
    span: Span,
) -> TokenStream {
    let shape = quote!(#old).to_string().replace(' ', "");
    let row = &a.name;
    let missing = format!(
        "docshape rule `old_version_field`: access pattern `{row}` {verb} `{path}`, but version {version} (`{shape}`) stores no field `{first}`: {FIXES}"
    );
    let other = format!(
        "docshape rule `old_version_field`: access pattern `{row}` {verb} `{path}`, which version {version} (`{shape}`) stores as `{{Self}}`, not `{{T}}`: {FIXES}"
    );
    let says = old_field::Messages {
        missing: &missing,
        other: &other,
        label: "an older version stores this field as another type",
    };
    old_field::check(old, first, current, &says, span)
}
