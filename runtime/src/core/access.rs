//! The access-pattern table a model declares with `#[access(...)]`: each row a query
//! the application runs, served by an index found at compile time (the prefix rule,
//! equality → sort → range), rendered in the seed's format, and checked on a live
//! server with `explain`.

use std::fmt::Write as _;

use bson::{doc, Bson, Document};

use crate::core::index::IndexKey;

/// One row of a model's access-pattern table (`#[access(...)]`): a query the
/// application runs, and the index that serves it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AccessPattern {
    /// The pattern's name, an identifier (`posts_by_author`).
    pub name: &'static str,
    /// What the application does, in words (the seed's "Operation" column).
    pub operation: &'static str,
    /// Fields matched by equality.
    pub filter: &'static [&'static str],
    /// Whether the equality matches ignore case (a case-insensitive collation).
    pub case_insensitive: bool,
    /// Sort keys, in order.
    pub sort: &'static [(&'static str, IndexKey)],
    /// Fields matched by a range (`$gt`, `$lt`, ...).
    pub range: &'static [&'static str],
    /// Fields the operation reads ("Fields needed").
    pub fields: &'static [&'static str],
    /// How often it runs ("500 r/s").
    pub freq: &'static str,
    /// The consistency it needs ("read-your-writes").
    pub consistency: &'static str,
    /// The index that serves it, found at compile time; `None` when waived.
    pub index: Option<&'static str>,
    /// Design rules waived for this pattern, each with its reason.
    pub waivers: &'static [(&'static str, &'static str)],
    /// Whether a keyset paginator is generated for it (`paginate`).
    pub paginate: bool,
}

impl AccessPattern {
    /// The pattern's query with placeholder values, as a `find` command's `filter`,
    /// `sort` and (for case-insensitive patterns) `collation`: what `explain` checks.
    pub fn sample_find(&self, collection: &str) -> Document {
        let mut filter = Document::new();
        for field in self.filter {
            filter.insert(*field, "x");
        }
        for field in self.range {
            filter.insert(*field, doc! { "$gt": Bson::MinKey });
        }
        let sort: Document = self.sort.iter().map(|(f, k)| ((*f).to_owned(), k.to_bson())).collect();
        let mut find = doc! { "find": collection, "filter": filter, "limit": 20 };
        if !sort.is_empty() {
            find.insert("sort", sort);
        }
        if self.case_insensitive {
            find.insert("collation", doc! { "locale": "en", "strength": 2 });
        }
        find
    }
}

/// The access-pattern table of one collection in the seed's format, with the serving
/// index as a last column.
pub fn access_table(collection: &str, patterns: &[AccessPattern]) -> String {
    access_tables(&[(collection, patterns)])
}

/// The access-pattern tables of several collections, numbered across all of them.
///
/// ```
/// use docshape::access::{access_tables, AccessPattern};
/// use docshape::index::IndexKey;
///
/// const P: AccessPattern = AccessPattern {
///     name: "posts_by_author", operation: "Posts by user, newest first",
///     filter: &["author_id"], case_insensitive: false,
///     sort: &[("created_at", IndexKey::Desc)], range: &[], fields: &["title"],
///     freq: "500 r/s", consistency: "eventual ok",
///     index: Some("author_id_1_created_at_-1"), waivers: &[], paginate: false,
/// };
/// let md = access_tables(&[("posts", &[P])]);
/// assert!(md.contains("| 1 | Posts by user, newest first | title | 500 r/s | eventual ok | posts: `author_id_1_created_at_-1` |"));
/// ```
pub fn access_tables(collections: &[(&str, &[AccessPattern])]) -> String {
    let mut out = String::from(
        "| # | Operation | Fields needed | Freq | Consistency | Index |\n|---|---|---|---|---|---|\n",
    );
    let mut n = 0;
    for (collection, patterns) in collections {
        for p in *patterns {
            n += 1;
            let served = match p.index {
                Some(index) => format!("{collection}: `{index}`"),
                None => {
                    let reasons: Vec<String> =
                        p.waivers.iter().map(|(rule, why)| format!("{rule}: {why}")).collect();
                    format!("{collection}: none ({})", reasons.join("; "))
                }
            };
            let _ = writeln!(
                out,
                "| {n} | {} | {} | {} | {} | {served} |",
                cell(p.operation),
                cell(&p.fields.join(", ")),
                cell(p.freq),
                cell(p.consistency),
            );
        }
    }
    out
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

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
pub async fn explain_access_patterns<T: crate::core::model::Model>(
    db: &mongodb::Database,
) -> crate::core::error::Result<Vec<ExplainOutcome>> {
    let mut out = Vec::new();
    for pattern in T::ACCESS_PATTERNS {
        let find = pattern.sample_find(T::COLLECTION);
        let reply = db.run_command(doc! { "explain": find, "verbosity": "queryPlanner" }).await?;
        let plan =
            reply.get_document("queryPlanner").and_then(|q| q.get_document("winningPlan")).map_err(|_| {
                crate::core::error::Error::UnexpectedReply {
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
            let name = stage.get_str("indexName").unwrap_or(if stage.get_str("stage") == Ok("IDHACK") {
                "_id_"
            } else {
                ""
            });
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
