//! The patterns the source writes as attributes when the evidence is clear: a
//! polymorphic model (an enum tagged by the discriminator, one variant per value) and
//! a tenant (`#[model(tenant = ...)]`, when every index leads with one field). Each
//! decision is a function of the collection's statistics alone, so that `models.rs`
//! and `INFERRED.md` say the same.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::source::{pascal, rust_ident, storable, Gen, KEYWORDS, RESERVED_TYPES};
use super::{distribution, escaped, CollectionShape, Discriminator, MIN_TENANT_INDEXES};

/// A field every index leads with.
pub(super) struct TenantFinding {
    /// The field's stored name (a plain identifier).
    pub(super) field: String,
    /// How many indexes lead with it (TTL ones aside).
    pub(super) indexes: usize,
    /// Why it is not declared the tenant, if it is not.
    pub(super) refused: Option<String>,
}

/// The field that every index besides `_id_` leads with, when at least
/// [`MIN_TENANT_INDEXES`] do and none leads with another. TTL indexes are left out:
/// MongoDB gives them one key, and docshape's tenant rule exempts them (they serve no
/// row). The field is declared the tenant only if docshape can: a top-level field
/// whose name is a Rust identifier, in every sampled document, never null, of one
/// scalar type (a tenant is required), and not on a polymorphic model.
pub(super) fn tenant(c: &CollectionShape, polymorphic: bool) -> Option<TenantFinding> {
    let mut leads = BTreeSet::new();
    let mut indexes = 0;
    for index in &c.indexes {
        if index.contains_key("expireAfterSeconds") {
            continue;
        }
        let first = index.get_document("key").ok().and_then(|k| k.keys().next().cloned())?;
        leads.insert(first);
        indexes += 1;
    }
    if indexes < MIN_TENANT_INDEXES || leads.len() != 1 {
        return None;
    }
    let field = leads.into_iter().next()?;
    let refused = (|| {
        if field == "_id" {
            return Some("it is `_id`: each document would be a tenant of its own".to_owned());
        }
        if !storable(&field) || field.contains('.') || rust_ident(&field) != field {
            return Some(
                "it is not a top-level field named as a Rust identifier, which `tenant = ...` names"
                    .to_owned(),
            );
        }
        if polymorphic {
            return Some(
                "the collection is written as a polymorphic model, whose rows and indexes are per document type; declare the tenant by hand"
                    .to_owned(),
            );
        }
        let Some(node) = c.root.field(&field) else {
            return Some("no sampled document holds it".to_owned());
        };
        if node.seen < c.sampled || node.kinds.contains_key("null") {
            let held = node.seen - node.kinds.get("null").copied().unwrap_or(0);
            return Some(format!(
                "only {held} of {} sampled documents hold a value: a tenant is required (a document without one belongs to nobody); fill it first",
                c.sampled
            ));
        }
        let kinds = node.non_null();
        let scalar =
            kinds.len() == 1 && ["string", "objectId", "int", "long"].iter().any(|k| kinds.contains_key(k));
        if !scalar {
            return Some(format!(
                "it holds {}: a tenant is one type of id or name",
                distribution(&node.kinds)
            ));
        }
        None
    })();
    Some(TenantFinding { field, indexes, refused })
}

/// The discriminator, when the collection is written as a polymorphic model (`Ok`),
/// or why it is not (`Err`); `None` without a discriminator. Written when every
/// document of a second sample holds one of the first sample's values, every
/// variant stores `_id` as one type, every index names only the tag and fields every
/// variant stores (an index on one type's field would be partial to it in docshape,
/// unlike the server's), and the collection has no validator of its own (the struct
/// keeps it keyword by keyword; a polymorphic validator is one branch per type).
pub(super) fn polymorphic(c: &CollectionShape) -> Option<Result<Discriminator, String>> {
    let d = c.discriminator()?;
    Some(writable(c, &d).map(|()| d))
}

fn writable(c: &CollectionShape, d: &Discriminator) -> Result<(), String> {
    if !storable(&d.field) {
        return Err("the tag's name is not one MongoDB can query".to_owned());
    }
    if c.validator.is_some() {
        return Err(
            "the collection has a validator of its own, which the struct keeps keyword by keyword".to_owned()
        );
    }
    if c.variants.len() != d.variants.len() || c.untagged > 0 {
        return Err(format!(
            "a second sample held {} document(s) whose `{}` is none of these values",
            c.untagged, d.field
        ));
    }
    if let Some(v) = c.variants.iter().find(|v| v.sampled == 0) {
        return Err(format!("a second sample held no document of `{}`", v.value));
    }
    let ids: BTreeSet<Vec<&str>> = c
        .variants
        .iter()
        .map(|v| v.root.field("_id").map(|n| n.non_null().into_keys().collect()).unwrap_or_default())
        .collect();
    let id_complete = c.variants.iter().all(|v| v.root.field("_id").is_some_and(|n| n.seen == v.sampled));
    if ids.len() != 1 || !id_complete {
        return Err("`_id` is stored as different types in different document types".to_owned());
    }
    let common = common_fields(c, d);
    for index in &c.indexes {
        let Ok(key) = index.get_document("key") else { continue };
        for path in key.keys() {
            let top = path.split('.').next().unwrap_or(path);
            if !common.contains(top) {
                return Err(format!(
                    "the index {} names `{}`, which only some document types store; docshape would make it partial to them, unlike the server's",
                    escaped(index.get_str("name").unwrap_or("")),
                    path
                ));
            }
        }
    }
    Ok(())
}

/// The top-level fields every variant stores, the tag and `_id` among them: the ones
/// a row or an index on the whole enum may name.
pub(super) fn common_fields(c: &CollectionShape, d: &Discriminator) -> BTreeSet<String> {
    let mut common: Option<BTreeSet<String>> = None;
    for v in &c.variants {
        let names: BTreeSet<String> = v.root.fields.iter().map(|(f, _)| f.clone()).collect();
        common = Some(match common {
            Some(c) => c.intersection(&names).cloned().collect(),
            None => names,
        });
    }
    let mut common = common.unwrap_or_default();
    common.insert(d.field.clone());
    common.insert("_id".to_owned());
    common
}

impl Gen {
    /// The enum `name` of a polymorphic model: one struct variant per tag value,
    /// renamed to it, with the fields its documents hold (the tag left to serde).
    pub(super) fn variants(&mut self, c: &CollectionShape, name: &str, d: &Discriminator) -> String {
        let mut body = format!("pub enum {name} {{\n");
        let mut taken = BTreeSet::new();
        let total: u64 = c.variants.iter().map(|v| v.sampled).sum();
        self.skip = Some(d.field.clone());
        for v in &c.variants {
            let base = match pascal(&v.value) {
                p if p.is_empty() => "Variant".to_owned(),
                p if RESERVED_TYPES.contains(&p.as_str()) || KEYWORDS.contains(&p.as_str()) => {
                    format!("{p}Kind")
                }
                p => p,
            };
            let mut variant = base.clone();
            let mut n = 2;
            while !taken.insert(variant.clone()) {
                variant = format!("{base}{n}");
                n += 1;
            }
            let _ = writeln!(
                body,
                "    // {} = {}: {} of {} documents of the second sample",
                escaped(&d.field),
                escaped(&v.value),
                v.sampled,
                total
            );
            let _ = writeln!(body, "    #[serde(rename = {})]", escaped(&v.value));
            let _ = writeln!(body, "    {variant} {{");
            let (lines, _) = self.field_lines(&format!("{name}{variant}"), &v.root, v.sampled, Some(None));
            for line in lines.lines() {
                let _ = match line.strip_prefix("    pub ") {
                    Some(rest) => writeln!(body, "        {rest}"),
                    None => writeln!(body, "    {line}"),
                };
            }
            let _ = writeln!(body, "    }},");
        }
        self.skip = None;
        body.push_str("}\n");
        body
    }
}
