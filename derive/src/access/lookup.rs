//! Access rows' paths of another collection (`Order::total`): resolved to the local
//! copy a denormalized field keeps of it, from the copies the driver hands over as
//! plain facts ([`crate::common::fields::Lookup`]).

use darling::error::Accumulator;
use darling::Error;
use proc_macro2::Span;

use super::Access;
use crate::common::fields::Lookup;
use crate::common::message::rule;

/// The `lookup` rule: an access pattern path written `Model::field` needs another
/// collection's field. A copy of that field serves it (the path becomes the copy's);
/// otherwise it is an error, unless the pattern waives `lookup`, in which case the
/// path is the application's join: listed in the table, not checked against this
/// model's fields and indexes.
pub(super) fn resolve(copies: &[Lookup], patterns: &mut [Access], errors: &mut Accumulator) {
    for a in patterns.iter_mut() {
        let waived = a.allow.waives("lookup");
        let name = a.name.clone();
        let mut foreign = Vec::new();
        // `Some(local path)` to keep, `None` to take the path out of the checks.
        let mut fix = |path: &str, span: Span| -> Option<String> {
            let Some((ty, field)) = path.rsplit_once("::") else { return Some(path.to_owned()) };
            let ty = ty.replace(' ', "");
            let copy =
                copies.iter().find(|c| c.source_path == field && (ty == c.source || ty == c.source_last));
            if let Some(c) = copy {
                return Some(c.field.clone());
            }
            if !waived {
                errors.push(
                    Error::custom(rule(
                        "lookup",
                        format!(
                            "access pattern `{name}` needs `{path}`, a field of another collection: every read would need a `$lookup` (a join), which runs on unsharded, local paths and gets slow fast. Copy it into this model (`#[denormalized(from = \"{path}\", via = \"<its Ref field>\", refresh = \"async\", max_stale = \"5m\")]` on a field of the same type) or embed it, or waive with `allow(lookup, reason = \"...\")`"
                        ),
                    ))
                    .with_span(&span),
                );
            }
            foreign.push(path.to_owned());
            None
        };
        for list in [&mut a.filter, &mut a.range, &mut a.fields] {
            *list = list.drain(..).filter_map(|(p, s)| fix(&p, s).map(|p| (p, s))).collect();
        }
        a.sort = a
            .sort
            .drain(..)
            .filter_map(|mut k| {
                k.path = fix(&k.path, k.span)?;
                Some(k)
            })
            .collect();
        a.foreign = foreign;
    }
}
