//! The access-pattern descriptor a model carries, and its table in the seed's format.

use std::fmt::Write as _;

use bson::{doc, Bson, Document};

use super::load::{self, DocsPerCall, Load};
pub use crate::core::descriptor::{AccessPattern, RowKind};

impl RowKind {
    /// How the table's Operation column marks it: nothing for a read.
    fn mark(self) -> &'static str {
        match self {
            Self::Read => "",
            Self::Write => " (write)",
            Self::Upsert => " (write; upsert: inserts the document when none matches)",
        }
    }
}

impl AccessPattern {
    /// The pattern's query with placeholder values, as a `find` command built by the
    /// one command builder ([`crate::access::command::ReadCommand`]): `filter`, the
    /// sort its reads send (with a paginated row's `_id` tie-break) and, for
    /// case-insensitive patterns, `collation`. This is what `explain` checks.
    pub fn sample_find(&'static self, collection: &str) -> Document {
        let mut filter = Document::new();
        for field in self.filter {
            filter.insert(*field, "x");
        }
        for field in self.range {
            filter.insert(*field, doc! { "$gt": Bson::MinKey });
        }
        crate::core::access::command::ReadCommand::new(self, collection, filter).limit(20).command()
    }
}

/// The access-pattern table of one collection in the seed's format, with the serving
/// index and the load estimate as last columns (see [`access_tables`]).
pub fn access_table(collection: &str, patterns: &[AccessPattern]) -> String {
    access_tables(&[(collection, patterns)])
}

/// The access-pattern tables of several collections, numbered across all of them.
///
/// After the author's columns (Operation, Fields needed, Freq, Consistency, in their
/// own words) come the serving index and the load estimate, each an upper bound:
/// documents and bytes one call reads, and documents and bytes per second at the
/// declared freq ([`Load`]). A second table totals them per collection, and a list
/// says why each `unbounded` cell is unbounded.
///
/// ```
/// use docshape::access::{access_tables, AccessPattern, Consistency, DocsPerCall, Load, Rate, RateKind, RowKind};
/// use docshape::index::IndexKey;
///
/// const P: AccessPattern = AccessPattern {
///     name: "posts_by_author", operation: "Posts by user, newest first",
///     filter: &["author_id"], case_insensitive: false,
///     sort: &[("created_at", IndexKey::Desc)], range: &[], fields: &["title"],
///     freq: "500 r/s", consistency: "eventual ok",
///     guarantee: Consistency::Eventual { max_staleness: None },
///     load: Load {
///         rate: Some(Rate { per_second: 500.0, kind: RateKind::Read }),
///         docs_per_call: DocsPerCall::Page { page_size: 20 },
///         doc_bytes: Some(512), doc_unsized: docshape::size::Unsized::Known,
///     },
///     index: Some("author_id_1_created_at_-1"), waivers: &[], paginate: true, kind: RowKind::Read,
/// };
/// let md = access_tables(&[("posts", &[P])]);
/// assert!(md.contains("| 1 | Posts by user, newest first | title | 500 r/s | eventual ok \
///     | posts: `author_id_1_created_at_-1` | 21 | 10.5 KiB | 10,500 | 5.1 MiB |"));
/// assert!(md.contains("| posts | 10,500 | 5.1 MiB |"));
/// ```
pub fn access_tables(collections: &[(&str, &[AccessPattern])]) -> String {
    let collections: Vec<CollectionRows<'_>> = collections.iter().map(|(c, p)| (*c, *p, &[][..])).collect();
    access_tables_with_variants(&collections)
}

/// One collection of [`access_tables_with_variants`]: its name, its rows, and the rows
/// that read one variant of a polymorphic model as `(row, tag, value)`
/// ([`Model::POLYMORPHIC_ROWS`](crate::Model::POLYMORPHIC_ROWS)).
pub type CollectionRows<'a> = (&'a str, &'a [AccessPattern], &'a [(&'a str, &'a str, &'a str)]);

/// [`access_tables`], where a row that reads one variant of a polymorphic model says
/// which in its Operation cell (``Clicks of a user (variant `kind: "click"`)``). Its
/// Bytes/call was computed at compile time from that variant's bound (its fields as the
/// row projects them, without the tag; see
/// [`MaxBsonSize::VARIANT_SIZES`](crate::size::MaxBsonSize::VARIANT_SIZES)), and a row
/// on the enum's from the largest variant's.
///
/// ```
/// use docshape::access::access_tables_with_variants;
/// use docshape::bson::oid::ObjectId;
/// use docshape::Model;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Model)]
/// #[serde(tag = "kind", rename_all = "snake_case")]
/// #[model(collection = "events")]
/// #[index(keys(user))]
/// #[access(name = "clicks_of", operation = "Clicks of a user", variant = Click, filter(user))]
/// enum Event {
///     Click { #[serde(rename = "_id")] id: ObjectId, #[validate(max_length = 8)] user: String },
///     View { #[serde(rename = "_id")] id: ObjectId, #[validate(max_length = 8)] user: String, page: String },
/// }
///
/// let md = access_tables_with_variants(&[("events", Event::ACCESS_PATTERNS, Event::POLYMORPHIC_ROWS)]);
/// assert!(md.contains(r#"| 1 | Clicks of a user (variant `kind: "click"`) |"#), "{md}");
/// ```
pub fn access_tables_with_variants(collections: &[CollectionRows<'_>]) -> String {
    let mut out = String::from(
        "| # | Operation | Fields needed | Freq | Consistency | Index | Docs/call | Bytes/call | Docs/s | Bytes/s |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    let mut n = 0;
    let mut totals = Vec::new();
    let mut notes = Vec::new();
    // Why documents' sizes are unbounded, with the rows each reason concerns.
    let mut sizes: Vec<(String, Vec<usize>)> = Vec::new();
    for (collection, patterns, variants) in collections {
        let mut total = Total::default();
        for p in *patterns {
            n += 1;
            let variant = match variants.iter().find(|(row, _, _)| *row == p.name) {
                Some((_, tag, value)) => format!(" (variant `{tag}: \"{value}\"`)"),
                None => String::new(),
            };
            let served = match p.index {
                Some(index) => format!("{collection}: `{index}`"),
                None => {
                    let reasons: Vec<String> =
                        p.waivers.iter().map(|(rule, why)| format!("{rule}: {why}")).collect();
                    format!("{collection}: none ({})", reasons.join("; "))
                }
            };
            let l = &p.load;
            let docs = l.docs_per_call.max().map_or_else(|| UNBOUNDED.to_owned(), |d| d.to_string());
            let bytes = l.bytes_per_call().map_or_else(|| UNBOUNDED.to_owned(), |b| load::bytes(b as f64));
            let per_second = |v: Option<Option<f64>>, show: fn(f64) -> String| match v {
                None => NO_FREQ.to_owned(),
                Some(None) => UNBOUNDED.to_owned(),
                Some(Some(v)) => show(v),
            };
            let _ = writeln!(
                out,
                "| {n} | {} | {} | {} | {} | {served} | {docs} | {bytes} | {} | {} |",
                cell(&format!("{}{}{variant}", p.operation, p.kind.mark())),
                cell(&p.fields.join(", ")),
                cell(p.freq),
                cell(p.consistency),
                per_second(l.docs_per_second(), load::count),
                per_second(l.bytes_per_second(), load::bytes),
            );
            total.add(n, l);
            if l.docs_per_call == DocsPerCall::Unbounded {
                let filter = if p.range.is_empty() && p.filter.is_empty() {
                    "it has no filter"
                } else {
                    "neither `_id` nor a unique index bounds its equality filter (one bounds it when the filter \
                     names every key, the index is neither sparse nor partial, and compares as the query does)"
                };
                notes.push(format!(
                    "- row {n} (`{}`), documents: {filter}, and it is not paginated, so nothing bounds how many documents one call reads",
                    p.name
                ));
            }
            if l.doc_bytes.is_none() {
                // The field that leaves the size open, and the attribute that bounds it.
                let why = l.doc_unsized.to_string();
                let why = if why.is_empty() { "its type has no size bound".to_owned() } else { why };
                match sizes.iter_mut().find(|(w, _)| *w == why) {
                    Some((_, rows)) => rows.push(n),
                    None => sizes.push((why, vec![n])),
                }
            }
        }
        for (why, rows) in sizes.drain(..) {
            notes.push(format!(
                "- {}, bytes: a document of `{collection}` has no size bound ({}); the server's 16 MiB per document is the only limit",
                rows_text(&rows),
                cell(&why)
            ));
        }
        if !patterns.is_empty() {
            totals.push((*collection, total));
        }
    }
    out.push_str(
        "\nDocs/call and Bytes/call are the most one call reads; Docs/s and Bytes/s are those at \
         the declared freq (`-`: no freq). Per collection:\n\n",
    );
    out.push_str("| Collection | Docs/s | Bytes/s |\n|---|---|---|\n");
    for (collection, total) in &totals {
        let _ = writeln!(
            out,
            "| {collection} | {} | {} |",
            total.show(total.docs, &total.docs_unbounded, load::count),
            total.show(total.bytes, &total.bytes_unbounded, load::bytes),
        );
    }
    if !notes.is_empty() {
        out.push_str("\nUnbounded:\n\n");
        for note in notes {
            out.push_str(&note);
            out.push('\n');
        }
    }
    out
}

const UNBOUNDED: &str = "unbounded";
const NO_FREQ: &str = "-";

/// One collection's sums, and the rows that leave them unbounded.
#[derive(Default)]
struct Total {
    docs: f64,
    bytes: f64,
    docs_unbounded: Vec<usize>,
    bytes_unbounded: Vec<usize>,
    /// Rows with a freq, bounded or not.
    rated: usize,
}

impl Total {
    fn add(&mut self, row: usize, l: &Load) {
        self.rated += usize::from(l.rate.is_some());
        match l.docs_per_second() {
            Some(Some(d)) => self.docs += d,
            Some(None) => self.docs_unbounded.push(row),
            None => {}
        }
        match l.bytes_per_second() {
            Some(Some(b)) => self.bytes += b,
            Some(None) => self.bytes_unbounded.push(row),
            None => {}
        }
    }

    fn show(&self, sum: f64, unbounded: &[usize], show: fn(f64) -> String) -> String {
        if self.rated == 0 {
            return NO_FREQ.to_owned();
        }
        if unbounded.is_empty() {
            return show(sum);
        }
        let which = rows_text(unbounded);
        if unbounded.len() == self.rated {
            format!("unbounded ({which})")
        } else {
            format!("unbounded ({which}); the others {}", show(sum))
        }
    }
}

/// `row 3` or `rows 2, 4`.
fn rows_text(rows: &[usize]) -> String {
    let numbers: Vec<String> = rows.iter().map(ToString::to_string).collect();
    format!("{} {}", if rows.len() == 1 { "row" } else { "rows" }, numbers.join(", "))
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::access::consistency::Consistency;
    use crate::core::access::{Rate, RateKind};
    use crate::core::size::{element_of, Unsized, NO_MAX_LENGTH};

    const P: AccessPattern = AccessPattern {
        name: "by_id",
        operation: "Load one",
        filter: &["_id"],
        case_insensitive: false,
        sort: &[],
        range: &[],
        fields: &[],
        freq: "",
        consistency: "",
        guarantee: Consistency::Unspecified,
        load: Load {
            rate: None,
            docs_per_call: DocsPerCall::One,
            doc_bytes: Some(100),
            doc_unsized: Unsized::Known,
        },
        index: Some("_id_"),
        waivers: &[],
        paginate: false,
        kind: RowKind::Read,
    };

    #[test]
    fn totals_skip_collections_without_patterns_and_say_when_no_row_has_a_freq() {
        let rated = AccessPattern {
            freq: "2 w/s",
            load: Load { rate: Some(Rate { per_second: 2.0, kind: RateKind::Write }), ..P.load },
            ..P
        };
        let md = access_tables(&[("a", &[P]), ("empty", &[]), ("b", &[rated, P])]);
        assert!(md.contains("| 1 | Load one |  |  |  | a: `_id_` | 1 | 100 B | - | - |\n"), "{md}");
        assert!(md.contains("| 2 | Load one |  | 2 w/s |  | b: `_id_` | 1 | 100 B | 2 | 200 B |\n"), "{md}");
        assert!(md.contains("| a | - | - |\n| b | 2 | 200 B |\n"), "{md}");
        assert!(!md.contains("| empty |"), "{md}");
        assert!(!md.contains("Unbounded:"), "{md}");
    }

    #[test]
    fn unbounded_sizes_are_explained_once_per_collection_and_reason() {
        const NAME: Unsized =
            Unsized::Fields { owner: "T", elements: &[element_of("name", false, (None, NO_MAX_LENGTH))] };
        let unsized_doc = AccessPattern { load: Load { doc_bytes: None, doc_unsized: NAME, ..P.load }, ..P };
        let scan = AccessPattern {
            name: "all",
            filter: &[],
            load: Load { docs_per_call: DocsPerCall::Unbounded, ..unsized_doc.load },
            ..unsized_doc
        };
        let md = access_tables(&[("t", &[unsized_doc, scan])]);
        assert!(md.contains("- row 2 (`all`), documents: it has no filter, and it is not paginated"), "{md}");
        assert!(
            md.contains("- rows 1, 2, bytes: a document of `t` has no size bound (`T.name` is a String with no `#[validate(max_length = N)]`; add it to `T.name`)"),
            "{md}"
        );
        assert_eq!(md.matches("bytes:").count(), 1, "{md}");
    }
}
