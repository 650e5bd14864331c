//! Indexes and the access-pattern table a model declares with `#[index(...)]` and
//! `#[access(...)]`; the derive checks at compile time that every access pattern is
//! served by one of the indexes (the prefix rule, equality → sort → range).

use std::fmt::Write as _;

use bson::{doc, Bson, Document};

/// One key of an index, or one sort key of an access pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IndexKey {
    /// Ascending (`1`).
    Asc,
    /// Descending (`-1`).
    Desc,
    /// A text index key (`"text"`).
    Text,
    /// A hashed key (`"hashed"`), for hashed shard keys.
    Hashed,
    /// A geospatial key (`"2dsphere"`).
    Sphere2d,
}

impl IndexKey {
    /// The value the key has in an index's key document.
    pub fn to_bson(self) -> Bson {
        match self {
            Self::Asc => Bson::Int32(1),
            Self::Desc => Bson::Int32(-1),
            Self::Text => "text".into(),
            Self::Hashed => "hashed".into(),
            Self::Sphere2d => "2dsphere".into(),
        }
    }

    /// The suffix MongoDB gives the key in a default index name.
    pub fn name_part(self) -> &'static str {
        match self {
            Self::Asc => "1",
            Self::Desc => "-1",
            Self::Text => "text",
            Self::Hashed => "hashed",
            Self::Sphere2d => "2dsphere",
        }
    }
}

/// An index of a model's collection, as `#[index(...)]` declares it.
///
/// ```
/// use docshape::index::{Index, IndexKey};
/// use docshape::bson::doc;
///
/// const BY_AUTHOR: Index = Index {
///     name: "author_id_1_created_at_-1",
///     keys: &[("author_id", IndexKey::Asc), ("created_at", IndexKey::Desc)],
///     ..Index::DEFAULT
/// };
/// assert_eq!(BY_AUTHOR.key_document(), doc! { "author_id": 1, "created_at": -1 });
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Index {
    /// The index's name: MongoDB's default (`author_id_1_created_at_-1`) unless
    /// `name = "..."` overrides it.
    pub name: &'static str,
    /// The keys, in order, by stored path.
    pub keys: &'static [(&'static str, IndexKey)],
    /// `unique: true`.
    pub unique: bool,
    /// `sparse: true`.
    pub sparse: bool,
    /// `expireAfterSeconds` of a TTL index.
    pub expire_after_secs: Option<u64>,
    /// A case-insensitive collation (`{locale, strength: 2}`); the locale, `"en"` unless set.
    pub case_insensitive: Option<&'static str>,
    /// `partialFilterExpression`, as extended JSON text.
    pub partial_filter: Option<&'static str>,
}

impl Index {
    /// An index with no keys and no options, to fill in with `..Index::DEFAULT`.
    pub const DEFAULT: Index = Index {
        name: "",
        keys: &[],
        unique: false,
        sparse: false,
        expire_after_secs: None,
        case_insensitive: None,
        partial_filter: None,
    };

    /// The `key` document: `{author_id: 1, created_at: -1}`.
    pub fn key_document(&self) -> Document {
        self.keys.iter().map(|(path, key)| ((*path).to_owned(), key.to_bson())).collect()
    }

    /// The collation document of a case-insensitive index.
    pub fn collation(&self) -> Option<Document> {
        self.case_insensitive.map(|locale| doc! { "locale": locale, "strength": 2 })
    }

    /// The partial filter, parsed from its extended JSON.
    pub fn partial_filter_document(&self) -> Option<Document> {
        let text = self.partial_filter?;
        let value: serde_json::Value = serde_json::from_str(text).ok()?;
        match Bson::try_from(value).ok()? {
            Bson::Document(d) => Some(d),
            _ => None,
        }
    }

    /// The index as `createIndexes` receives it.
    pub fn to_document(&self) -> Document {
        let mut d = doc! { "key": self.key_document(), "name": self.name };
        if self.unique {
            d.insert("unique", true);
        }
        if self.sparse {
            d.insert("sparse", true);
        }
        if let Some(secs) = self.expire_after_secs {
            d.insert("expireAfterSeconds", i64::try_from(secs).unwrap_or(i64::MAX));
        }
        if let Some(c) = self.collation() {
            d.insert("collation", c);
        }
        if let Some(p) = self.partial_filter_document() {
            d.insert("partialFilterExpression", p);
        }
        d
    }
}

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
/// use docshape::index::{access_tables, AccessPattern, IndexKey};
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
/// reports which index the server's winning plan uses. Run [`crate::sync`] first so
/// the indexes exist.
///
/// The check is on the plan's shape, not its speed: an `IXSCAN` of the expected index
/// and no `COLLSCAN`.
pub async fn explain_access_patterns<T: crate::Model>(
    db: &mongodb::Database,
) -> crate::Result<Vec<ExplainOutcome>> {
    let mut out = Vec::new();
    for pattern in T::ACCESS_PATTERNS {
        let find = pattern.sample_find(T::COLLECTION);
        let reply = db.run_command(doc! { "explain": find, "verbosity": "queryPlanner" }).await?;
        let plan =
            reply.get_document("queryPlanner").and_then(|q| q.get_document("winningPlan")).map_err(|_| {
                crate::Error::UnexpectedReply {
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
