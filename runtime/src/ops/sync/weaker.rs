//! Whether replacing the server's validator would drop a constraint docshape cannot
//! write. A validator written by hand (or by another tool) may hold keywords no
//! `#[validate]` expresses (`multipleOf`, `oneOf`, `patternProperties`, a query
//! operator beside `$jsonSchema`, ...): a model inferred from that collection cannot
//! carry them, and a `sync` from it would silently loosen what the server enforces.
//! `sync` refuses that replacement ([`crate::Error::WeakerValidator`]) unless
//! [`SyncOptions::allow_weaker_validator`](super::SyncOptions::allow_weaker_validator)
//! says it is meant.

use bson::{Bson, Document};

/// The `$jsonSchema` keywords docshape's validators are made of: whatever else a
/// server's validator holds, no model can restore once it is replaced.
const VOCABULARY: &[&str] = &[
    "bsonType",
    "required",
    "properties",
    "additionalProperties",
    "items",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minLength",
    "maxLength",
    "pattern",
    "enum",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "anyOf",
    "allOf",
    "not",
    "description",
    "title",
];

/// Each constraint of `validator` outside docshape's vocabulary, as `path: value`
/// (`$jsonSchema.properties.qty.multipleOf: 5`), in the validator's order.
pub fn inexpressible(validator: &Document) -> Vec<String> {
    let mut out = Vec::new();
    for (key, value) in validator {
        match (key.as_str(), value) {
            ("$jsonSchema", Bson::Document(schema)) => walk(schema, "$jsonSchema", &mut out),
            _ => out.push(format!("{key}: {value}")),
        }
    }
    out
}

fn walk(schema: &Document, path: &str, out: &mut Vec<String>) {
    for (key, value) in schema {
        let here = format!("{path}.{key}");
        if !VOCABULARY.contains(&key.as_str()) {
            out.push(format!("{here}: {value}"));
            continue;
        }
        match (key.as_str(), value) {
            ("properties", Bson::Document(properties)) => {
                for (name, property) in properties {
                    if let Bson::Document(property) = property {
                        walk(property, &format!("{here}.{name}"), out);
                    }
                }
            }
            ("items" | "additionalProperties" | "not", Bson::Document(inner)) => walk(inner, &here, out),
            ("items" | "anyOf" | "allOf", Bson::Array(alternatives)) => {
                for (i, alternative) in alternatives.iter().enumerate() {
                    if let Bson::Document(alternative) = alternative {
                        walk(alternative, &format!("{here}[{i}]"), out);
                    }
                }
            }
            _ => {}
        }
    }
}

/// The constraints of the `server`'s validator outside docshape's vocabulary that the
/// `code`'s validator does not hold at the same path with the same value.
pub fn lost(server: &Document, code: &Document) -> Vec<String> {
    let kept = inexpressible(code);
    inexpressible(server).into_iter().filter(|c| !kept.contains(c)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn keywords_outside_the_vocabulary_are_named_with_their_path() {
        let server = doc! {
            "$jsonSchema": {
                "bsonType": "object",
                "required": ["sku"],
                "minProperties": 2,
                "properties": {
                    "sku": { "bsonType": "string", "pattern": "^[A-Z]+$" },
                    "qty": { "bsonType": "int", "multipleOf": 5 },
                    "tags": { "bsonType": "array", "items": { "bsonType": "string", "format": "x" } },
                    "v": { "anyOf": [{ "bsonType": "int" }, { "oneOf": [] }] },
                },
            },
            "$expr": { "$gt": ["$qty", 0] },
        };
        assert_eq!(
            inexpressible(&server),
            [
                "$jsonSchema.minProperties: 2",
                "$jsonSchema.properties.qty.multipleOf: 5",
                "$jsonSchema.properties.tags.items.format: \"x\"",
                "$jsonSchema.properties.v.anyOf[1].oneOf: []",
                "$expr: { \"$gt\": [\"$qty\", 0] }",
            ]
        );
        let code = doc! { "$jsonSchema": { "bsonType": "object", "minProperties": 2 } };
        assert_eq!(lost(&server, &code).len(), 4);
        assert!(lost(&code, &server).is_empty());
        let plain = doc! { "$jsonSchema": { "properties": { "a": { "maxLength": 3, "enum": ["x"] } } } };
        assert!(inexpressible(&plain).is_empty());
    }
}
