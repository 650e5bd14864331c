//! References and copies between collections: a top-level field whose values are
//! another collection's `_id`s (checked on a sample of its values), and a field beside
//! it that equals a field of the referenced document (a denormalized copy), with the
//! documents where the copy is stale. Reads only: one `$sample` per candidate field,
//! one count per candidate collection, one `$lookup` per reference.

use docshape::bson::{doc, Bson, Document};
use docshape::mongodb::Database;
use docshape::Result;
use futures_util::TryStreamExt;

use super::{md, thousands, CollectionShape};

/// Values of a field checked against the other collection's ids.
const PROBE: i64 = 20;

/// Documents compared through the `$lookup` (all of them up to this many).
const COMPARED: i64 = 5_000;

/// A field holding another collection's `_id`s.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    /// The field (top level).
    pub field: String,
    /// The collection whose ids it holds.
    pub target: String,
    /// Distinct values checked, and how many were ids of `target`.
    pub checked: u64,
    /// How many of them were found.
    pub found: u64,
    /// Fields beside it that copy a field of the referenced document.
    pub copies: Vec<CopiedField>,
}

/// A field equal to a field of the referenced document in most documents.
#[derive(Debug, Clone, PartialEq)]
pub struct CopiedField {
    /// The copy's field (top level).
    pub field: String,
    /// The source's field in the referenced collection.
    pub source: String,
    /// Documents compared (whose reference resolved), and whether that was all of them.
    pub compared: u64,
    /// Whether every document of the collection was compared.
    pub exact: bool,
    /// Documents whose copy differs from the source.
    pub stale: u64,
    /// A few of them: (id, the copy, the source).
    pub examples: Vec<(String, String, String)>,
}

/// A candidate copy's documents compared, those equal to the source, and examples of
/// the others.
type Tally = (u64, u64, Vec<(String, String, String)>);

/// The scalar kind of a value, for matching a field with an `_id` or a copy with its
/// source.
fn scalar(value: &Bson) -> Option<&'static str> {
    Some(match value {
        Bson::ObjectId(_) => "objectId",
        Bson::String(_) => "string",
        Bson::Int32(_) | Bson::Int64(_) => "integer",
        _ => return None,
    })
}

fn kinds_of(node: &super::Node) -> Option<&'static str> {
    let kinds = node.non_null();
    if kinds.len() != 1 {
        return None;
    }
    match *kinds.keys().next()? {
        "objectId" => Some("objectId"),
        "string" => Some("string"),
        "int" | "long" => Some("integer"),
        _ => None,
    }
}

/// Finds the references and copies of every collection in `shapes`.
pub(super) async fn find(db: &Database, shapes: &mut [CollectionShape]) -> Result<()> {
    // Each collection's `_id` kind: a field can only reference ids of its own kind.
    let ids: Vec<(String, Option<&'static str>)> =
        shapes.iter().map(|c| (c.name.clone(), c.root.field("_id").and_then(kinds_of))).collect();
    for c in shapes.iter_mut() {
        let mut links = Vec::new();
        for (field, node) in &c.root.fields {
            let Some(kind) = kinds_of(node).filter(|k| *k == "objectId" || *k == "integer") else { continue };
            if field == "_id" || node.seen * 2 < c.sampled {
                continue;
            }
            let targets: Vec<&String> =
                ids.iter().filter(|(n, k)| *n != c.name && *k == Some(kind)).map(|(n, _)| n).collect();
            if targets.is_empty() {
                continue;
            }
            let values = probe(db, &c.name, field).await?;
            if values.len() < 3 {
                continue;
            }
            for target in targets {
                let found = db
                    .collection::<Document>(target)
                    .count_documents(doc! { "_id": { "$in": values.clone() } })
                    .await?;
                // Nearly every value an id there: a reference (a dangling few aside).
                if found * 10 >= values.len() as u64 * 9 {
                    links.push(Link {
                        field: field.clone(),
                        target: target.clone(),
                        checked: values.len() as u64,
                        found,
                        copies: Vec::new(),
                    });
                    break;
                }
            }
        }
        for link in &mut links {
            link.copies = copies(db, c, link).await?;
        }
        c.links = links;
    }
    Ok(())
}

/// Up to [`PROBE`] distinct values of `field`, from a sample.
async fn probe(db: &Database, collection: &str, field: &str) -> Result<Vec<Bson>> {
    let mut cursor = db
        .collection::<Document>(collection)
        .aggregate(vec![doc! { "$sample": { "size": PROBE * 3 } }])
        .await?;
    let mut values: Vec<Bson> = Vec::new();
    while let Some(d) = cursor.try_next().await? {
        if let Some(v) = d.get(field).filter(|v| scalar(v).is_some()) {
            if !values.contains(v) && values.len() < PROBE as usize {
                values.push(v.clone());
            }
        }
    }
    Ok(values)
}

/// The fields of `c` that equal a field of the referenced document in at least 80% of
/// the compared documents, with the documents where they differ.
async fn copies(db: &Database, c: &CollectionShape, link: &Link) -> Result<Vec<CopiedField>> {
    let exact = c.estimated_count <= COMPARED as u64;
    let mut pipeline = Vec::new();
    if !exact {
        pipeline.push(doc! { "$sample": { "size": COMPARED } });
    }
    pipeline.push(doc! { "$lookup": { "from": &link.target, "localField": &link.field, "foreignField": "_id", "as": "__docshape_source" } });
    let mut cursor = db.collection::<Document>(&c.name).aggregate(pipeline).await?;
    // Per (copy field, source field): compared, equal, stale examples.
    let mut tally: std::collections::BTreeMap<(String, String), Tally> = std::collections::BTreeMap::new();
    while let Some(d) = cursor.try_next().await? {
        let Some(Bson::Document(source)) = d.get_array("__docshape_source").ok().and_then(|a| a.first())
        else {
            continue;
        };
        for (field, value) in &d {
            if field == "_id" || *field == link.field || field.starts_with("__docshape") {
                continue;
            }
            let Some(kind) = scalar(value) else { continue };
            for (source_field, source_value) in source {
                if source_field == "_id" || scalar(source_value) != Some(kind) {
                    continue;
                }
                let key = (field.clone(), source_field.clone());
                if !tally.contains_key(&key) && tally.len() >= 400 {
                    continue;
                }
                let entry = tally.entry(key).or_default();
                entry.0 += 1;
                if value == source_value {
                    entry.1 += 1;
                } else if entry.2.len() < 5 {
                    let id = d.get("_id").cloned().unwrap_or(Bson::Null).into_relaxed_extjson().to_string();
                    entry.2.push((id, value.to_string(), source_value.to_string()));
                }
            }
        }
    }
    let mut out = Vec::new();
    for ((field, source), (n, equal, examples)) in tally {
        // Mostly equal, over enough documents, and never the same field twice.
        if n >= 5 && equal * 5 >= n * 4 && !out.iter().any(|c: &CopiedField| c.field == field) {
            out.push(CopiedField { field, source, compared: n, exact, stale: n - equal, examples });
        }
    }
    Ok(out)
}

/// The report's sentences on references and copies.
pub(super) fn sentences(c: &CollectionShape, out: &mut Vec<String>) {
    for link in &c.links {
        for copy in link.copies.iter().filter(|copy| copy.stale > 0) {
            let scope = if copy.exact { "documents" } else { "sampled documents" };
            let examples: Vec<String> = copy
                .examples
                .iter()
                .map(|(id, mine, theirs)| {
                    format!("`{}` ({} where the source has {})", md(id), md(mine), md(theirs))
                })
                .collect();
            out.push(format!(
                "**stale copy** `{}` copies `{}.{}` through `{}`: {} of {} {scope} ({:.1}%) differ from their source: {}. Refresh them (`$lookup` the source and `$merge` the field back), then declare the copy `#[denormalized(...)]` so that docshape's writers keep it in step",
                md(&copy.field),
                md(&link.target),
                md(&copy.source),
                md(&link.field),
                thousands(copy.stale),
                thousands(copy.compared),
                copy.stale as f64 * 100.0 / copy.compared.max(1) as f64,
                examples.join(", ")
            ));
        }
    }
}
