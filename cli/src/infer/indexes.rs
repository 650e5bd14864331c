//! A collection's indexes as `#[index(...)]` attributes: each key resolved through the
//! inferred shape, the waivers docshape requires, and a comment for what cannot be
//! declared.

use docshape::bson::Bson;

use super::source::{key_path, raw_string, storable};
use super::{escaped, CollectionShape, Node};

/// What an index key resolves to in the inferred shape.
pub(super) struct Resolved {
    date: bool,
    in_array: bool,
}

/// Follows a dotted path through the fields the generated types will have.
pub(super) fn resolve(root: &Node, path: &str) -> Option<Resolved> {
    let mut node = root;
    let mut in_array = false;
    let segments: Vec<&str> = path.split('.').collect();
    for (i, segment) in segments.iter().enumerate() {
        if !storable(segment) || !node.is_struct() && i > 0 {
            return None;
        }
        let child = node.field(segment)?;
        if i + 1 == segments.len() {
            let kinds = child.non_null();
            return Some(Resolved { date: kinds.len() == 1 && kinds.contains_key("date"), in_array });
        }
        let kinds = child.non_null();
        node = if kinds.len() == 1 && kinds.contains_key("array") {
            in_array = true;
            child.items.as_deref()?
        } else {
            child
        };
        if !node.is_struct() {
            return None;
        }
    }
    None
}

/// The `#[index(...)]` attributes of a collection, notes on the indexes that cannot be
/// declared, the `max_indexes` its count needs past the default budget of 10, and the
/// names of the declared indexes that any row may use (neither partial nor sparse, no
/// collation).
pub(super) fn indexes(c: &CollectionShape) -> (Vec<String>, Vec<String>, Option<usize>, Vec<String>) {
    struct Declared {
        keys: Vec<(String, String)>,
        options: bool,
        parts: Vec<String>,
    }
    let mut declared: Vec<Declared> = Vec::new();
    let mut notes = Vec::new();
    let mut plain = Vec::new();
    for index in &c.indexes {
        let name = index.get_str("name").unwrap_or("").to_owned();
        let shown = Bson::Document(index.clone()).into_relaxed_extjson().to_string();
        let Ok(key) = index.get_document("key") else { continue };
        let mut keys = Vec::new();
        let mut why_not = None;
        for (path, direction) in key {
            let kind = match direction {
                Bson::Int32(1) | Bson::Int64(1) => "1".to_owned(),
                Bson::Double(d) if *d == 1.0 => "1".to_owned(),
                Bson::Int32(-1) | Bson::Int64(-1) => "-1".to_owned(),
                Bson::Double(d) if *d == -1.0 => "-1".to_owned(),
                Bson::String(s) if s == "hashed" || s == "2dsphere" => s.clone(),
                other => {
                    why_not = Some(format!("key `{path}: {other}` is not a kind docshape declares"));
                    break;
                }
            };
            if path.contains("$**") || path.starts_with("_fts") {
                why_not = Some("wildcard and text indexes are declared by hand".to_owned());
                break;
            }
            match resolve(&c.root, path) {
                None => {
                    why_not = Some(format!("`{path}` is not a field of the inferred types"));
                    break;
                }
                Some(r) => keys.push((path.clone(), kind, r)),
            }
        }
        let unique = index.get_bool("unique").unwrap_or(false);
        let sparse = index.get_bool("sparse").unwrap_or(false);
        let ttl = match index.get("expireAfterSeconds") {
            Some(Bson::Int32(s)) => Some(i64::from(*s)),
            Some(Bson::Int64(s)) => Some(*s),
            Some(Bson::Double(s)) => Some(*s as i64),
            _ => None,
        };
        if why_not.is_none() && ttl.is_some() && (keys.len() != 1 || !keys[0].2.date) {
            why_not = Some("a TTL index needs one key on a field stored only as a date".to_owned());
        }
        if why_not.is_none() && ttl.is_some_and(|s| s < 0) {
            why_not = Some("a negative expireAfterSeconds".to_owned());
        }
        let collation = index.get_document("collation").ok();
        let case_insensitive = collation.and_then(|c| {
            let strength = match c.get("strength") {
                Some(Bson::Int32(s)) => i64::from(*s),
                Some(Bson::Int64(s)) => *s,
                _ => 3,
            };
            (strength <= 2).then(|| c.get_str("locale").unwrap_or("en").to_owned())
        });
        if why_not.is_none() && collation.is_some() && case_insensitive.is_none() {
            why_not = Some("a collation other than a case-insensitive one".to_owned());
        }
        if let Some(why) = why_not {
            notes.push(format!("index {} not declared ({why}): {}", escaped(&name), escaped(&shown)));
            continue;
        }
        let mut parts = Vec::new();
        let list: Vec<String> = keys
            .iter()
            .map(|(path, kind, _)| match kind.as_str() {
                "1" => key_path(path),
                "-1" => format!("{} = -1", key_path(path)),
                other => format!("{} = {}", key_path(path), escaped(other)),
            })
            .collect();
        parts.push(format!("keys({})", list.join(", ")));
        if unique {
            parts.push("unique".into());
        }
        if sparse {
            parts.push("sparse".into());
        }
        let default_name: String =
            keys.iter().map(|(p, k, _)| format!("{p}_{k}")).collect::<Vec<_>>().join("_");
        if name != default_name {
            parts.push(format!("name = {}", escaped(&name)));
        }
        if let Some(seconds) = ttl {
            parts.push(format!("expire_after = \"{seconds}s\""));
        }
        if let Some(locale) = &case_insensitive {
            parts.push(format!("case_insensitive, locale = {}", escaped(locale)));
        }
        if let Ok(filter) = index.get_document("partialFilterExpression") {
            let json = serde_json::to_string(&Bson::Document(filter.clone()).into_relaxed_extjson())
                .unwrap_or_else(|_| "{}".into());
            parts.push(format!("partial_filter = {}", raw_string(&json)));
        }
        let mut waived = Vec::new();
        if unique && keys.iter().any(|k| k.2.in_array) {
            waived.push("unique_in_array");
        }
        let options = unique || sparse || ttl.is_some() || index.contains_key("partialFilterExpression");
        let same = declared
            .iter()
            .any(|d| d.keys == keys.iter().map(|(p, k, _)| (p.clone(), k.clone())).collect::<Vec<_>>());
        if same {
            notes.push(format!(
                "index {} not declared: another index has the same keys, which docshape declares once: {}",
                escaped(&name),
                escaped(&shown)
            ));
            continue;
        }
        if !sparse && collation.is_none() && !index.contains_key("partialFilterExpression") {
            plain.push(name.clone());
        }
        declared.push(Declared { keys: keys.into_iter().map(|(p, k, _)| (p, k)).collect(), options, parts });
        if !waived.is_empty() {
            let last = declared.last_mut().expect("just pushed");
            last.parts.push(format!(
                "allow({}, reason = \"TODO: on the server already (inferred); say why it is right\")",
                waived.join(", ")
            ));
        }
    }
    // An index that is a plain prefix of another is refused unless waived: the server
    // has both, so the inferred model says so and asks why.
    let prefixes: Vec<bool> = declared
        .iter()
        .map(|a| {
            !a.options
                && declared
                    .iter()
                    .any(|b| a.keys.len() < b.keys.len() && b.keys[..a.keys.len()] == a.keys[..])
        })
        .collect();
    let mut attrs = Vec::new();
    for (mut d, prefix) in declared.into_iter().zip(prefixes) {
        if prefix {
            d.parts.push(
                "allow(redundant_index, reason = \"TODO: on the server already (inferred); a prefix of another index, drop one?\")"
                    .into(),
            );
        }
        attrs.push(format!("#[index({})]", d.parts.join(", ")));
    }
    let budget = (attrs.len() > 10).then_some(attrs.len());
    (attrs, notes, budget, plain)
}
