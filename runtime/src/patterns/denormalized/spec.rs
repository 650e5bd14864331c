//! Which copies exist (the registry the derive fills) and which of them an update
//! may touch, from its paths.

use bson::Bson;
use mongodb::options::UpdateModifications;

use crate::core::denormalized::CopySpec;

inventory::collect!(CopySpec);

/// Every registered copy, in a stable order (by collection, then field): the models'
/// own, and those inside their embedded types (`comments.author_name`), each under
/// the collection of the model that holds it.
pub fn copies() -> Vec<&'static CopySpec> {
    let mut all: Vec<&'static CopySpec> = inventory::iter::<CopySpec>.into_iter().collect();
    all.extend(crate::core::denormalized::nested_copies());
    all.sort_by(|a, b| (a.collection, a.field).cmp(&(b.collection, b.field)));
    all.dedup_by(|a, b| a == b);
    all
}

/// The registered copies whose source is the collection `source`.
pub fn dependents(source: &str) -> Vec<&'static CopySpec> {
    copies().into_iter().filter(|c| c.source == source).collect()
}

/// Whether an update may change the field at `field` (a dotted path).
pub(super) fn touches(update: &UpdateModifications, field: &str) -> bool {
    let UpdateModifications::Document(update) = update else {
        // A pipeline can compute anything from anything.
        return true;
    };
    update.iter().any(|(operator, argument)| {
        if !operator.starts_with('$') {
            // A replacement document, which the server refuses here; say touched.
            return true;
        }
        let Bson::Document(paths) = argument else { return true };
        paths.iter().any(|(path, value)| {
            overlaps(path, field)
                || (operator == "$rename" && value.as_str().is_none_or(|to| overlaps(to, field)))
        })
    })
}

/// Whether one dotted path is equal to, a prefix of, or under the other. Array
/// positions (`$`, `$[]`, `$[x]`, `0`) are left out of both first: `tags.$.name` and
/// `tags.0` reach `tags.name`'s values, `tags.$[t].label` does not. (A numeric field
/// name in a subdocument is left out too, which can only make an update count as
/// touching a copy it does not.)
pub(super) fn overlaps(path: &str, field: &str) -> bool {
    let position = |s: &&str| s.starts_with('$') || (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()));
    path.split('.')
        .filter(|s| !position(s))
        .zip(field.split('.').filter(|s| !position(s)))
        .all(|(a, b)| a == b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{doc, Document};

    fn update(d: Document) -> UpdateModifications {
        UpdateModifications::Document(d)
    }

    #[test]
    fn an_update_touches_the_paths_it_names_and_their_prefixes_and_descendants() {
        let set_name = update(doc! { "$set": { "name": "Ada" } });
        assert!(touches(&set_name, "name"));
        assert!(!touches(&set_name, "names"));
        assert!(!touches(&set_name, "nickname"));
        assert!(touches(&update(doc! { "$set": { "profile": {} } }), "profile.name"));
        assert!(touches(&update(doc! { "$set": { "profile.name.first": "A" } }), "profile.name"));
        assert!(!touches(&update(doc! { "$set": { "profile.age": 3 } }), "profile.name"));
        assert!(touches(&update(doc! { "$unset": { "name": "" } }), "name"));
        assert!(touches(&update(doc! { "$inc": { "visits": 1 }, "$set": { "name": "x" } }), "name"));
        assert!(!touches(&update(doc! { "$inc": { "visits": 1 } }), "name"));
    }

    #[test]
    fn renames_positional_paths_pipelines_and_replacements() {
        assert!(touches(&update(doc! { "$rename": { "name": "old_name" } }), "name"));
        assert!(touches(&update(doc! { "$rename": { "alias": "name" } }), "name"));
        assert!(!touches(&update(doc! { "$rename": { "alias": "nick" } }), "name"));
        assert!(touches(&update(doc! { "$set": { "tags.$.name": "x" } }), "tags.0.name"));
        assert!(touches(&update(doc! { "$set": { "tags.0": {} } }), "tags.name"));
        assert!(touches(&update(doc! { "$set": { "tags.$[t].name": "x" } }), "tags.name"));
        assert!(!touches(&update(doc! { "$set": { "tags.$[t].label": "x" } }), "tags.name"));
        assert!(touches(&UpdateModifications::Pipeline(vec![doc! { "$set": { "a": 1 } }]), "name"));
        assert!(touches(&update(doc! { "name": "replacement" }), "name"));
        assert!(touches(&update(doc! { "$set": "not a document" }), "name"));
    }
}
