//! The collection's own `$jsonSchema` validator, read back: every keyword a
//! `#[validate]` (or `#[model(validation_level, validation_action)]`) can say becomes
//! one, so that a `sync` from the inferred models enforces at least what the server
//! does; every other keyword is named in the report (and `sync` refuses to drop those
//! docshape cannot express at all: `SyncOptions::allow_weaker_validator`).

use docshape::bson::{Bson, Document};

use super::escaped;

/// Keywords that constrain nothing (annotations) or that the inferred type itself
/// states (`bsonType`, checked apart).
const ANNOTATIONS: &[&str] = &["description", "title"];

/// A field's `#[validate(...)]` from its property in the server's `$jsonSchema`: the
/// attribute's contents (none when nothing maps) and the keywords it keeps.
pub(super) fn from_validator(schema: &Document, ty: &str) -> (Option<String>, Vec<&'static str>) {
    let mut parts = Vec::new();
    let mut kept = Vec::new();
    let base = ty.strip_prefix("Option<").and_then(|t| t.strip_suffix('>')).unwrap_or(ty);
    match base {
        "String" => strings(schema, "", &mut parts, &mut kept),
        "i32" | "i64" | "f64" => numbers(schema, base, &mut parts, &mut kept),
        _ if base.starts_with("Vec<") => {
            let count = |key: &str| int(schema, key).filter(|n| *n >= 0);
            if let (Some(a), Some(b)) = (count("minItems"), count("maxItems")) {
                if a > b {
                    return (None, kept);
                }
            }
            for (key, name) in [("minItems", "min_items"), ("maxItems", "max_items")] {
                if let Some(n) = count(key) {
                    parts.push(format!("{name} = {n}"));
                    kept.push(if key == "minItems" { "minItems" } else { "maxItems" });
                }
            }
            if matches!(schema.get_bool("uniqueItems"), Ok(true)) {
                parts.push("unique_items".into());
                kept.push("uniqueItems");
            }
            if let (Ok(items), "Vec<String>") = (schema.get_document("items"), base) {
                let mut each = Vec::new();
                let mut each_kept = Vec::new();
                strings(items, "items", &mut each, &mut each_kept);
                // `items(...)` takes lengths and a pattern, not an `enum`.
                each.retain(|p| !p.starts_with("allowed"));
                each_kept.retain(|k| *k != "items.enum");
                let only_known = items.keys().all(|k| {
                    ["bsonType", "minLength", "maxLength", "pattern"].contains(&k.as_str())
                        || ANNOTATIONS.contains(&k.as_str())
                });
                if !each.is_empty() {
                    parts.push(format!("items({})", each.join(", ")));
                }
                if only_known && items.get_str("bsonType").is_ok_and(|t| t == "string") {
                    kept.push("items");
                }
            }
        }
        _ => {}
    }
    ((!parts.is_empty()).then(|| parts.join(", ")), kept)
}

fn int(schema: &Document, key: &str) -> Option<i64> {
    match schema.get(key) {
        Some(Bson::Int32(n)) => Some(i64::from(*n)),
        Some(Bson::Int64(n)) => Some(*n),
        Some(Bson::Double(d)) if d.fract() == 0.0 && d.abs() < 9e15 => Some(*d as i64),
        _ => None,
    }
}

fn number(schema: &Document, key: &str) -> Option<f64> {
    match schema.get(key) {
        Some(Bson::Int32(n)) => Some(f64::from(*n)),
        Some(Bson::Int64(n)) => Some(*n as f64),
        Some(Bson::Double(d)) if d.is_finite() => Some(*d),
        _ => None,
    }
}

/// Lengths, `pattern` and a string `enum`; `prefix` names the keywords kept
/// (`items.` for an array's strings).
fn strings(schema: &Document, prefix: &str, parts: &mut Vec<String>, kept: &mut Vec<&'static str>) {
    let (min, max) =
        (int(schema, "minLength").filter(|n| *n >= 0), int(schema, "maxLength").filter(|n| *n >= 0));
    let key = |k: &'static str, items: &'static str| if prefix.is_empty() { k } else { items };
    if min.zip(max).is_none_or(|(a, b)| a <= b) {
        if let Some(n) = min {
            parts.push(format!("min_length = {n}"));
            kept.push(key("minLength", "items.minLength"));
        }
        if let Some(n) = max {
            parts.push(format!("max_length = {n}"));
            kept.push(key("maxLength", "items.maxLength"));
        }
    }
    if let Ok(pattern) = schema.get_str("pattern") {
        parts.push(format!("pattern = {}", escaped(pattern)));
        kept.push(key("pattern", "items.pattern"));
    }
    if let Ok(values) = schema.get_array("enum") {
        let strings: Vec<String> = values.iter().filter_map(|v| v.as_str().map(escaped)).collect();
        if !strings.is_empty() && strings.len() == values.len() {
            parts.push(format!("allowed = [{}]", strings.join(", ")));
            kept.push(key("enum", "items.enum"));
        }
    }
}

/// Bounds (inclusive, or exclusive in draft 4's `exclusiveMinimum: true` form) and a
/// numeric `enum`, where they fit the field's type.
fn numbers(schema: &Document, ty: &str, parts: &mut Vec<String>, kept: &mut Vec<&'static str>) {
    let ordered = match (number(schema, "minimum"), number(schema, "maximum")) {
        (Some(a), Some(b)) => a <= b,
        _ => true,
    };
    let show = |key: &str| -> Option<String> {
        if ty == "f64" {
            return number(schema, key).map(|n| format!("{n:?}"));
        }
        int(schema, key).filter(|n| ty == "i64" || i32::try_from(*n).is_ok()).map(|n| n.to_string())
    };
    let bounds = [
        ("minimum", "exclusiveMinimum", "minimum", "exclusive_minimum"),
        ("maximum", "exclusiveMaximum", "maximum", "exclusive_maximum"),
    ];
    for (key, flag, name, exclusive_name) in bounds {
        let exclusive = match schema.get(flag) {
            None | Some(Bson::Boolean(false)) => false,
            Some(Bson::Boolean(true)) => true,
            // A numeric `exclusiveMinimum` is a later draft's; the server refuses it.
            Some(_) => continue,
        };
        if let (true, Some(value)) = (ordered, show(key)) {
            parts.push(format!("{} = {value}", if exclusive { exclusive_name } else { name }));
            kept.push(key_static(key));
            if schema.contains_key(flag) {
                kept.push(key_static(flag));
            }
        }
    }
    if let Ok(values) = schema.get_array("enum") {
        let shown: Vec<String> = values
            .iter()
            .filter_map(|v| match (v, ty) {
                (Bson::Int32(n), _) => Some(n.to_string()),
                (Bson::Int64(n), "i64" | "f64") => Some(n.to_string()),
                (Bson::Double(d), "f64") if d.is_finite() => Some(format!("{d:?}")),
                _ => None,
            })
            .collect();
        if !shown.is_empty() && shown.len() == values.len() {
            parts.push(format!("allowed = [{}]", shown.join(", ")));
            kept.push("enum");
        }
    }
}

fn key_static(key: &str) -> &'static str {
    match key {
        "minimum" => "minimum",
        "maximum" => "maximum",
        "exclusiveMinimum" => "exclusiveMinimum",
        _ => "exclusiveMaximum",
    }
}

/// The BSON types a field of the generated type `ty` is stored as (its schema's
/// `bsonType`), `None` when the type says nothing simple (an enum, `Bson`).
fn stored_types(ty: &str, embedded: bool) -> Option<Vec<&'static str>> {
    let base = ty.strip_prefix("Option<").and_then(|t| t.strip_suffix('>')).unwrap_or(ty);
    Some(match base {
        "String" => vec!["string"],
        "i32" => vec!["int"],
        "i64" => vec!["long"],
        "f64" => vec!["double"],
        "bool" => vec!["bool"],
        "ObjectId" => vec!["objectId"],
        "DateTime" => vec!["date"],
        "Decimal128" => vec!["decimal"],
        "Binary" => vec!["binData"],
        "Document" => vec!["object"],
        _ if base.starts_with("Vec<") => vec!["array"],
        _ if embedded => vec!["object"],
        _ => return None,
    })
}

/// Whether the server's `bsonType` admits everything the generated type stores (the
/// code's is then as strict or stricter).
fn bson_type_kept(server: &Bson, ty: &str, embedded: bool, widened: bool) -> bool {
    let allowed: Vec<&str> = match server {
        Bson::String(s) => vec![s.as_str()],
        Bson::Array(a) => a.iter().filter_map(Bson::as_str).collect(),
        _ => return false,
    };
    let admits = |t: &str| {
        allowed.contains(&t)
            || (allowed.contains(&"number") && ["int", "long", "double", "decimal"].contains(&t))
    };
    let mut code = stored_types(ty, embedded).unwrap_or_default();
    if widened {
        // `bson_type = "number"`: every numeric type.
        code = vec!["int", "long", "double", "decimal"];
    }
    !code.is_empty() && code.iter().all(|t| admits(t))
}

/// One property's keywords the generated field does not keep, as `path: value`.
pub(super) fn property_gaps(
    path: &str,
    schema: &Document,
    ty: &str,
    embedded: bool,
    widened: bool,
    kept: &[&str],
    out: &mut Vec<String>,
) {
    for (key, value) in schema {
        let k = key.as_str();
        let fine = ANNOTATIONS.contains(&k)
            || kept.contains(&k)
            || (k == "bsonType" && bson_type_kept(value, ty, embedded, widened))
            || (k == "items" && kept.contains(&"items"))
            || (k == "properties" && embedded);
        if !fine {
            out.push(format!("{path}.{key}: {value}"));
        }
    }
}

/// The model's `validation_level` / `validation_action` entries, where the server's
/// differ from docshape's defaults (`strict`, `error`).
pub(super) fn model_options(level: Option<&str>, action: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(level) = level.filter(|l| ["moderate", "off"].contains(l)) {
        out.push(format!("validation_level = {}", escaped(level)));
    }
    if let Some(action) = action.filter(|a| *a == "warn") {
        out.push(format!("validation_action = {}", escaped(action)));
    }
    out
}
