//! The access-pattern descriptor a model carries, and its table in the seed's format.

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
