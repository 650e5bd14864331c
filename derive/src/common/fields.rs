//! Stored field names written in attributes (`series = sensor_id`, `flag = "big"`) and
//! their lookup among the model's fields, with a suggestion when they miss.

use darling::Error;

use crate::ast::{Container, Field};
pub(crate) use crate::attr::Name;
use crate::common::message::did_you_mean;
use crate::common::paths;

/// The stored field named `name`, or an error saying what exists.
pub(crate) fn field<'a>(c: &'a Container, name: &Name, what: &str) -> Result<&'a Field, Error> {
    let fields = paths::stored_fields(c);
    if name.value.contains('.') {
        return Err(Error::custom(format!(
            "`{}`: the {what} is a top-level field of `{}`, not a path",
            name.value, c.ident
        ))
        .with_span(&name.span));
    }
    if let Some(f) =
        fields.iter().find(|f| f.name.as_deref() == Some(&name.value) && f.serde.flatten.is_none())
    {
        return Ok(f);
    }
    let names: Vec<&str> = fields.iter().filter_map(|f| f.name.as_deref()).collect();
    let renamed = fields.iter().find(|f| f.recv.ident.as_ref().is_some_and(|i| *i == name.value));
    let hint = match (renamed, did_you_mean(&name.value, &names)) {
        (Some(f), _) => {
            format!("; the field `{}` is stored as `{}`", name.value, f.name.as_deref().unwrap_or_default())
        }
        (None, Some(s)) => format!("; did you mean `{s}`?"),
        (None, None) => format!("; the stored fields are {}", names.join(", ")),
    };
    Err(Error::custom(format!("no stored field `{}` in `{}` for the {what}{hint}", name.value, c.ident))
        .with_span(&name.span))
}

/// A field a pattern's writers maintain on the stored documents themselves (an
/// outlier's array, flag and count; a bucket's series, period, items, count and
/// aggregates). Those writers append to a document whatever its schema version, so a
/// versioned model must store such a field the same way in every version, and its
/// upgrade keeps the stored value rather than what a step computes.
pub(crate) struct Kept<'a> {
    pub field: &'a Field,
    /// What the field is to its pattern, for messages: "the outlier array".
    pub what: &'static str,
}

/// A denormalized copy, as an access row's path of another collection finds it: the
/// source type as written (whole and last segment, spaces dropped), the source's
/// stored path, and the local field that holds the copy.
pub(crate) struct Lookup {
    pub source: String,
    pub source_last: String,
    pub source_path: String,
    pub field: String,
}

/// The stamp attributes a field can carry (`#[created_at]`, `#[updated_at]`,
/// `#[revision]`): the writers set these fields themselves.
pub(crate) const STAMPS: &[&str] = &["created_at", "updated_at", "revision"];

/// The stamp attribute on `field`, by its name, when it carries one.
pub(crate) fn stamp_of(field: &crate::ast::Field) -> Option<(&'static str, &syn::Attribute)> {
    field.recv.attrs.iter().find_map(|a| STAMPS.iter().find(|s| a.path().is_ident(s)).map(|s| (*s, a)))
}
