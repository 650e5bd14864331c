//! `reconcile` and `check`: a summary recounted from its source, its drifting groups
//! reported (and repaired).

use bson::{doc, Bson, Document};
use futures_util::TryStreamExt;
use mongodb::Database;

use super::contribution::{compare, contributions, Num};
use super::spec::{SummaryOp, SummarySpec};
use super::SummaryError;

/// One group whose stored document differs from a recount of the source.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Drift {
    /// The group key (the summary document's `_id`).
    pub key: Bson,
    /// The stored document's maintained fields (`None`: no document).
    pub stored: Option<Document>,
    /// The recount's (`None`: the group has no source document).
    pub recounted: Option<Document>,
}

/// What [`reconcile`] or [`check`] found.
#[derive(Debug, Default, Clone)]
#[non_exhaustive]
pub struct SummaryReconcile {
    /// The summary's collection.
    pub summary: &'static str,
    /// Groups in the recount or the summary.
    pub groups: u64,
    /// Source documents read.
    pub documents: u64,
    /// The groups that drift.
    pub drifted: Vec<Drift>,
    /// Whether the drifting groups were rewritten.
    pub repaired: bool,
}

/// The source documents that may contribute to `spec`: those of its variant (its tag
/// equal to the value, through the literal encoder like every stored value), or all.
pub(crate) fn source_filter(spec: &SummarySpec) -> Document {
    match spec.variant {
        Some(v) => doc! { v.tag: crate::core::model::eq(Bson::String(v.value.to_owned())) },
        None => doc! {},
    }
}

/// The recount of `spec` from its source: one read of the source in batches, each
/// document's contribution computed by the function every maintainer uses.
async fn recount(db: &Database, spec: &SummarySpec) -> Result<(Vec<(Bson, Document)>, u64), SummaryError> {
    let mongo = |error| SummaryError::Mongo { summary: spec.collection, error };
    let mut projection = doc! {};
    let paths = spec.group.iter().map(|g| g.path()).chain(spec.fields.iter().map(|f| f.path));
    // A soft-deleted document counts as deleted: its deletion date is read too.
    // A variant's tag is read too: the contribution checks it again, as on every
    // other maintainer's path.
    for p in paths.chain(spec.soft_delete).chain(spec.variant.map(|v| v.tag)) {
        if !p.is_empty() {
            projection.insert(p.split('.').next().unwrap_or(p), 1);
        }
    }
    let mut cursor = db
        .collection::<Document>(spec.source)
        .find(source_filter(spec))
        .projection(projection)
        .batch_size(1000)
        .await
        .map_err(mongo)?;
    let mut groups: Vec<(Bson, Document)> = Vec::new();
    let mut index = std::collections::HashMap::<String, usize>::new();
    let mut documents = 0;
    while let Some(d) = cursor.try_next().await.map_err(mongo)? {
        documents += 1;
        for c in contributions(spec, Some(&d)) {
            let k = format!("{:?}", c.key);
            let i = *index.entry(k).or_insert_with(|| {
                groups.push((c.key.clone(), Document::new()));
                groups.len() - 1
            });
            let acc = &mut groups[i].1;
            for (f, v) in spec.fields.iter().zip(&c.values) {
                match f.op {
                    SummaryOp::Count => {
                        let n = acc.get(f.name).and_then(Num::of).unwrap_or(Num::Int(0));
                        acc.insert(f.name, n.add(Num::Int(1)).bson());
                    }
                    SummaryOp::Sum => {
                        let n = acc.get(f.name).and_then(Num::of).unwrap_or(Num::Int(0));
                        acc.insert(f.name, n.add(Num::of(v).unwrap_or(Num::Int(0))).bson());
                    }
                    SummaryOp::Min | SummaryOp::Max if matches!(v, Bson::Null) => {}
                    SummaryOp::Min | SummaryOp::Max => {
                        let better = acc.get(f.name).is_none_or(|cur| match f.op {
                            SummaryOp::Min => compare(v, cur).is_lt(),
                            _ => compare(v, cur).is_gt(),
                        });
                        if better {
                            acc.insert(f.name, v.clone());
                        }
                    }
                }
            }
        }
    }
    Ok((groups, documents))
}

/// Whether two maintained values agree (numbers by value, whatever their width).
fn same(a: Option<&Bson>, b: Option<&Bson>) -> bool {
    match (a, b) {
        (None | Some(Bson::Null), None | Some(Bson::Null)) => true,
        (Some(x), Some(y)) => match (Num::of(x), Num::of(y)) {
            (Some(x), Some(y)) => x.f() == y.f(),
            _ => x == y,
        },
        _ => false,
    }
}

fn maintained(spec: &SummarySpec, d: &Document) -> Document {
    spec.fields.iter().filter_map(|f| d.get(f.name).map(|v| (f.name.to_owned(), v.clone()))).collect()
}

async fn compare_all(db: &Database, spec: &'static SummarySpec) -> Result<SummaryReconcile, SummaryError> {
    let mongo = |error| SummaryError::Mongo { summary: spec.collection, error };
    let (counted, documents) = recount(db, spec).await?;
    let stored: Vec<Document> = db
        .collection::<Document>(spec.collection)
        .find(doc! {})
        .await
        .map_err(mongo)?
        .try_collect()
        .await
        .map_err(mongo)?;
    let mut report = SummaryReconcile { summary: spec.collection, documents, ..Default::default() };
    let mut seen = vec![false; stored.len()];
    for (key, recounted) in &counted {
        report.groups += 1;
        let found = stored.iter().position(|d| d.get("_id") == Some(key));
        let have = found.map(|i| {
            seen[i] = true;
            maintained(spec, &stored[i])
        });
        let agrees = have
            .as_ref()
            .is_some_and(|h| spec.fields.iter().all(|f| same(h.get(f.name), recounted.get(f.name))));
        if !agrees {
            report.drifted.push(Drift { key: key.clone(), stored: have, recounted: Some(recounted.clone()) });
        }
    }
    for (d, _) in stored.iter().zip(&seen).filter(|(_, s)| !**s) {
        report.groups += 1;
        let key = d.get("_id").cloned().unwrap_or(Bson::Null);
        report.drifted.push(Drift { key, stored: Some(maintained(spec, d)), recounted: None });
    }
    Ok(report)
}

/// The groups of summary `spec` whose stored document differs from a recount of the
/// source, without writing anything.
pub async fn check(db: &Database, spec: &'static SummarySpec) -> Result<SummaryReconcile, SummaryError> {
    compare_all(db, spec).await
}

/// Recounts summary `spec` from its source and rewrites every drifting group
/// document (removing those of groups with no source document), reporting them.
///
/// The recount is the truth only once the queue holds nothing pending for the summary
/// (run it with the writers quiet, after a [`crate::denormalized::Worker`] drained the
/// refresh queue of its jobs):
/// the ledger keeps each source document's applied contribution, which later deltas
/// are taken against, and a pending one is applied on top of the recount.
pub async fn reconcile(db: &Database, spec: &'static SummarySpec) -> Result<SummaryReconcile, SummaryError> {
    let mongo = |error| SummaryError::Mongo { summary: spec.collection, error };
    let mut report = compare_all(db, spec).await?;
    let summary = db.collection::<Document>(spec.collection);
    for d in &report.drifted {
        let filter = super::apply::by_id(&d.key);
        match &d.recounted {
            Some(r) => {
                let mut set = r.clone();
                let unset: Document = spec
                    .fields
                    .iter()
                    .filter(|f| !r.contains_key(f.name))
                    .map(|f| (f.name.to_owned(), Bson::String(String::new())))
                    .collect();
                set.remove("_id");
                let mut update = doc! { "$set": set };
                if !unset.is_empty() {
                    update.insert("$unset", unset);
                }
                summary.update_one(filter, update).upsert(true).await.map_err(mongo)?;
            }
            None => {
                summary.delete_one(filter).await.map_err(mongo)?;
            }
        }
    }
    report.repaired = true;
    Ok(report)
}
