//! Checking the access patterns on a live server with `explain`.

use bson::{doc, Bson, Document};

use crate::core::error::{Error, Result};
use crate::core::model::Model;

/// What `explain` says of one access pattern's query.
#[derive(Debug, Clone, PartialEq)]
pub struct ExplainOutcome {
    /// The access pattern.
    pub pattern: &'static str,
    /// The index docshape expects to serve it (`None` when the pattern waived that).
    pub expected: Option<&'static str>,
    /// The indexes the winning plan scans.
    pub used: Vec<String>,
    /// Whether the winning plan scans the whole collection.
    pub collection_scan: bool,
}

impl ExplainOutcome {
    /// Whether the server's plan uses the expected index and never scans the collection.
    pub fn is_served(&self) -> bool {
        match self.expected {
            Some(expected) => !self.collection_scan && self.used.iter().any(|u| u == expected),
            None => true,
        }
    }
}

impl std::fmt::Display for ExplainOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scan = if self.collection_scan { ", with a collection scan" } else { "" };
        match self.expected {
            Some(expected) => write!(
                f,
                "{}: expects index {expected}, the server's plan uses [{}]{scan}",
                self.pattern,
                self.used.join(", ")
            ),
            None => write!(
                f,
                "{}: no index expected (waived); plan uses [{}]{scan}",
                self.pattern,
                self.used.join(", ")
            ),
        }
    }
}

/// Runs `explain` on every access pattern's query (with placeholder values) and
/// reports which index the server's winning plan uses. Run [`crate::sync`](fn@crate::sync) first so
/// the indexes exist.
///
/// The check is on the plan's shape, not its speed: an `IXSCAN` of the expected index
/// and no `COLLSCAN`.
pub async fn explain_access_patterns<T: Model>(db: &mongodb::Database) -> Result<Vec<ExplainOutcome>> {
    let mut out = Vec::new();
    for pattern in T::ACCESS_PATTERNS {
        let mut find = pattern.sample_find(T::COLLECTION);
        // A row on one variant of a polymorphic model reads that variant only: its
        // discriminator is what makes an index partial to the variant usable.
        if let Some((_, tag, value)) = T::POLYMORPHIC_ROWS.iter().find(|(row, _, _)| *row == pattern.name) {
            if let Ok(filter) = find.get_document_mut("filter") {
                filter.insert(*tag, crate::core::model::eq(bson::Bson::String((*value).to_owned())));
            }
        }
        // A soft-delete model's row asks for live documents: without that predicate the
        // server could not use an index partial to them, and the plan would not be the
        // row's.
        if let Some((_, field)) = T::LIVE_ROWS.iter().find(|(row, _)| *row == pattern.name) {
            if let Ok(filter) = find.get_document_mut("filter") {
                filter.insert(*field, Bson::Null);
            }
        }
        let reply = db.run_command(doc! { "explain": find, "verbosity": "queryPlanner" }).await?;
        let plan =
            reply.get_document("queryPlanner").and_then(|q| q.get_document("winningPlan")).map_err(|_| {
                Error::UnexpectedReply {
                    command: "explain",
                    detail: "no queryPlanner.winningPlan".to_owned(),
                }
            })?;
        let mut used = Vec::new();
        let mut collection_scan = false;
        walk_plan(plan, &mut used, &mut collection_scan);
        out.push(ExplainOutcome { pattern: pattern.name, expected: pattern.index, used, collection_scan });
    }
    Ok(out)
}

/// Collects index scans and collection scans from a plan tree, whatever its nesting
/// (`inputStage`, `inputStages`, `queryPlan` in newer servers).
fn walk_plan(stage: &Document, used: &mut Vec<String>, collection_scan: &mut bool) {
    match stage.get_str("stage") {
        Ok("COLLSCAN") => *collection_scan = true,
        Ok("IXSCAN" | "EXPRESS_IXSCAN" | "IDHACK" | "EXPRESS_CLUSTERED_IXSCAN") => {
            let name = stage
                .get_str("indexName")
                .unwrap_or(if stage.get_str("stage").ok() == Some("IDHACK") { "_id_" } else { "" });
            used.push(name.to_owned());
        }
        _ => {}
    }
    for (_, value) in stage {
        match value {
            Bson::Document(d) => walk_plan(d, used, collection_scan),
            Bson::Array(items) => {
                items.iter().filter_map(Bson::as_document).for_each(|d| walk_plan(d, used, collection_scan))
            }
            _ => {}
        }
    }
}
