//! How models relate: each embedded sub-document or array, each reference, each
//! denormalized copy and each array spread over several documents, declared with
//! `#[embed]`, `Ref<T>` / `#[reference(T)]`, `#[denormalized]`, `#[outlier]` and
//! `#[bucket]`, with its bound, its refresh policy and its reason
//! ([`Model::RELATIONS`]), rendered as the design-decision table
//! ([`design_decisions`]); and filling denormalized copies when a document is
//! written ([`snapshot`], [`insert_one`]).

pub mod refs;

use crate::core::bson_compat;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use bson::{doc, Bson, Document};
use mongodb::{ClientSession, Database};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::core::denormalized::refresh::{fill, instances, projection, refresh, value_at};
use crate::core::denormalized::{nested_copies, CopyError, CopySpec, Refresh};
use crate::core::hooks::GeneratedFile;
use crate::core::model::Model;
use crate::core::registry;
use crate::core::relation::DESIGN_DECISIONS_FILE;
pub use crate::core::relation::{EmbeddedRelations, Nested, Relation, RelationKind, Split, Variant};
use crate::patterns::relation::refs::RefError;

fn duration_text(d: std::time::Duration) -> String {
    let s = d.as_secs();
    if s != 0 && s.is_multiple_of(86_400) {
        format!("{}d", s / 86_400)
    } else if s != 0 && s.is_multiple_of(3_600) {
        format!("{}h", s / 3_600)
    } else if s != 0 && s.is_multiple_of(60) {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// The design-decision table: per relation or pattern (embed, reference, copy,
/// outlier, bucket), what it holds, its bound, its refresh policy and its reason, as
/// Markdown. `models` are `(collection, relations)` pairs, listed in the order given.
///
/// A reason is the attribute's `reason = "..."`. Where none is declared the cell says
/// so and names the attribute that takes one; `#[outlier]` and `#[bucket]` take no
/// reason, so theirs is `—`.
///
/// ```
/// use docshape::relation::{design_decisions, Relation, RelationKind, Split};
///
/// let items = Relation {
///     field: "items", kind: RelationKind::Embed, target: "LineItem", many: true,
///     bound: Some(50), refresh: None, via: None,
///     reason: Some("read and updated with the order"), split: None,
/// };
/// let followers = Relation {
///     field: "followers", kind: RelationKind::Outlier, target: "ObjectId", many: true,
///     bound: Some(1000), refresh: None, via: None, reason: None,
///     split: Some(Split::Outlier { overflow: "users_followers_overflow", per_doc: 1000 }),
/// };
/// let table = design_decisions(&[("orders", &[items][..]), ("users", &[followers][..])]);
/// assert!(table.contains("| orders | items | embed | LineItem (array) | ≤ 50 | — | read and updated with the order |"));
/// assert!(table.contains("| users | followers | outlier | ObjectId (array) | ≤ 1000 embedded, then ≤ 1000 per document of `users_followers_overflow` | — | — |"));
/// ```
pub fn design_decisions(models: &[(&str, &[Relation])]) -> String {
    let rows: Vec<(&str, Vec<(String, Relation)>)> = models
        .iter()
        .map(|(collection, relations)| {
            (*collection, relations.iter().map(|r| (r.field.to_owned(), *r)).collect())
        })
        .collect();
    render(&rows)
}

/// [`design_decisions`] of models with the relations inside their embedded types:
/// `(collection, relations, nested)`, each nested row under its field's dotted path
/// (`comments.author`: the `author` reference of each item of `comments`). The
/// relations of one variant of a polymorphic model (a [`Nested`] entry with a
/// [`Variant`]) are listed under their path and the variant's discriminator
/// (`items (kind: "purchase")`: the `items` of the documents whose `kind` is
/// `"purchase"`).
///
/// ```
/// use docshape::relation::{design_decisions_with_nested, Nested, Relation, RelationKind, Variant};
///
/// const AUTHOR: Relation = Relation {
///     field: "author", kind: RelationKind::Reference, target: "users", many: false,
///     bound: None, refresh: None, via: None, reason: Some("users live on their own"), split: None,
/// };
/// let nested = [Nested { field: "comments", many: true, relations: &[AUTHOR], copies: &[], nested: &[], variant: None }];
/// let table = design_decisions_with_nested(&[("questions", &[], &nested)]);
/// assert!(table.contains("| questions | comments.author | reference | users | — | — | users live on their own |"));
///
/// let purchase = Variant { tag: "kind", value: "purchase" };
/// let nested = [Nested { field: "", many: false, relations: &[AUTHOR], copies: &[], nested: &[], variant: Some(purchase) }];
/// let table = design_decisions_with_nested(&[("events", &[], &nested)]);
/// assert!(table.contains(r#"| events | author (kind: "purchase") | reference | users |"#));
/// ```
pub fn design_decisions_with_nested(models: &[(&str, &[Relation], &[Nested])]) -> String {
    fn walk(prefix: &str, variant: Option<Variant>, nested: &[Nested], out: &mut Vec<(String, Relation)>) {
        for n in nested {
            // A flattened sub-document (no field of its own) adds no segment, nor does
            // a variant, whose fields are the document's.
            let path = if n.field.is_empty() { prefix.to_owned() } else { format!("{prefix}{}.", n.field) };
            let variant = n.variant.or(variant);
            let label = |field: &str| match variant {
                Some(v) => format!("{path}{field} ({}: {:?})", v.tag, v.value),
                None => format!("{path}{field}"),
            };
            out.extend(n.relations.iter().map(|r| (label(r.field), *r)));
            walk(&path, variant, n.nested, out);
        }
    }
    let rows: Vec<(&str, Vec<(String, Relation)>)> = models
        .iter()
        .map(|(collection, relations, nested)| {
            let mut rows: Vec<(String, Relation)> =
                relations.iter().map(|r| (r.field.to_owned(), *r)).collect();
            walk("", None, nested, &mut rows);
            (*collection, rows)
        })
        .collect();
    render(&rows)
}

/// Why a `#[bucket]` rather than a time-series collection: what only a bucket document
/// gives.
pub const BUCKET_NOT_TIMESERIES: &str = "bucket, not a time-series collection: the application reads a period's items as one array, keeps aggregates beside them or caps a period, or the server is older than 5.0; if none of these holds, `#[model(timeseries(...))]` is simpler (server-side compression, expiry per reading)";

/// Why a time-series collection rather than a `#[bucket]`.
pub const TIMESERIES_NOT_BUCKET: &str = "time-series, not a bucket: the server buckets and compresses the readings, expires each one (`expire_after`) and aggregates any time range; a `#[bucket]` instead when a period is read as one array, keeps aggregates, is capped, or the server is older than 5.0";

fn render(models: &[(&str, Vec<(String, Relation)>)]) -> String {
    let mut out = String::from(
        "# Design decisions\n\n\
         Generated from the models' `#[embed]`, reference, `#[denormalized]`, `#[outlier]`, \
         `#[bucket]` and `timeseries(...)` attributes: what is embedded (read with its parent, bounded), referenced \
         (grows or lives on its own), copied (denormalized, with the freshness the product \
         accepts), or spread over several documents past a bound (an outlier's overflow, a \
         series' buckets, a time-series collection's readings). A reason is the attribute's \
         `reason = \"...\"`; `#[outlier]` takes none, and a bucket or a time-series \
         collection says why it is not the other.\n\n\
         | Collection | Field | Decision | Of | Bound | Refresh | Reason |\n\
         |---|---|---|---|---|---|---|\n",
    );
    let mut any = false;
    for (collection, relations) in models {
        for (field, r) in relations {
            any = true;
            let of = match (r.kind, r.via, r.split) {
                (RelationKind::Copy, Some(via), _) => format!("{} via `{via}`", r.target),
                (_, _, Some(Split::Bucket { series, per, .. })) => {
                    format!("{} (array), a bucket per `{series}` per {per}", r.target)
                }
                (RelationKind::TimeSeries, _, _) if r.target.is_empty() => {
                    "a document per reading, bucketed by the server".to_owned()
                }
                (RelationKind::TimeSeries, _, _) => {
                    format!("a document per reading, bucketed by the server per `{}`", r.target)
                }
                (_, _, _) if r.many => format!("{} (array)", r.target),
                _ => r.target.to_owned(),
            };
            let bound = match (r.bound, r.split) {
                (None, _) => "—".to_owned(),
                (Some(b), None) => format!("≤ {b}"),
                (Some(b), Some(Split::Outlier { overflow, per_doc })) => {
                    format!("≤ {b} embedded, then ≤ {per_doc} per document of `{overflow}`")
                }
                (Some(b), Some(Split::Bucket { cap: None, .. })) => format!("≤ {b} per bucket"),
                (Some(b), Some(Split::Bucket { cap: Some(cap), per, .. })) => {
                    format!("≤ {b} per bucket, ≤ {cap} per {per} (`cap`)")
                }
            };
            let refresh = match r.refresh {
                None => "—".to_owned(),
                Some(Refresh::Never) => "never (snapshot at write)".to_owned(),
                Some(Refresh::Sync) => "sync (same call as the source)".to_owned(),
                Some(Refresh::Async { max_stale }) => format!("async, stale ≤ {}", duration_text(max_stale)),
            };
            // Only what the attributes say: a missing reason is not guessed at.
            let reason = match (r.reason, r.kind.reason_attribute()) {
                (Some(reason), _) => reason.to_owned(),
                (None, Some(attribute)) => {
                    format!("no reason declared: add `reason = \"...\"` to `{attribute}`")
                }
                // Bucket or time-series is a choice either way: the table says why.
                (None, None) if r.kind == RelationKind::Bucket => BUCKET_NOT_TIMESERIES.to_owned(),
                (None, None) if r.kind == RelationKind::TimeSeries => TIMESERIES_NOT_BUCKET.to_owned(),
                (None, None) => "—".to_owned(),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} |",
                cell(collection),
                cell(field),
                r.kind.as_str(),
                cell(&of),
                bound,
                refresh,
                cell(&reason),
            );
        }
    }
    if !any {
        out.push_str("| (none) | | | | | | |\n");
    }
    out
}

inventory::submit! { GeneratedFile { file_name: DESIGN_DECISIONS_FILE, build: design_decisions_file } }

/// `DESIGN_DECISIONS.md`: [`design_decisions_with_nested`] of every registered model
/// that declares relations or holds embedded types that do, in registry order.
fn design_decisions_file() -> Result<Option<String>, crate::core::error::Error> {
    let models = registry::models();
    let relations: Vec<(&str, &[Relation], &[Nested])> = models
        .iter()
        .filter(|m| !m.relations.is_empty() || !m.nested.is_empty())
        .map(|m| (m.collection, m.relations, m.nested))
        .collect();
    Ok(Some(design_decisions_with_nested(&relations)))
}

/// The value at a dotted path of a document.
/// The copies a document of `T` holds: its own, and those inside its embedded types.
fn copies_of<T: Model>() -> Vec<&'static CopySpec> {
    let nested = nested_copies().iter().copied().filter(|c| c.collection == T::COLLECTION);
    T::COPIES.iter().chain(nested).collect()
}

/// A key under which two equal BSON values are equal bytes.
fn key(value: &Bson) -> Vec<u8> {
    bson_compat::to_vec(&doc! { "k": value.clone() }).unwrap_or_default()
}

/// The copies that follow one source document, keyed by (source collection, the
/// reference's bytes), with the reference itself.
type Groups<'c> = BTreeMap<(&'static str, Vec<u8>), (Bson, Vec<&'c CopySpec>)>;

/// Each (source collection, referenced id) that `copies` of `stored` follow, once, with
/// the copies that follow it; a null or missing reference follows none.
fn groups<'c>(stored: &Document, copies: &[&'c CopySpec]) -> Groups<'c> {
    let mut groups: Groups<'c> = BTreeMap::new();
    for &c in copies {
        for (via, _) in instances(c, stored) {
            let Some(id) = via.filter(|v| !matches!(v, Bson::Null)) else { continue };
            let group = groups.entry((c.source, key(&id))).or_insert_with(|| (id, Vec::new()));
            if !group.1.iter().any(|g| std::ptr::eq(*g, c)) {
                group.1.push(c);
            }
        }
    }
    groups
}

/// Reads each source document the copies in `stored` need (one query per source
/// document, asking only for the copied fields) and writes their values into every
/// copy that follows it, as each copy's type stores them (inside arrays, into each
/// element that references it).
async fn fill_copies<T: Model>(
    db: &Database,
    stored: &mut Document,
    copies: &[&CopySpec],
) -> Result<(), RefError> {
    let mut found_sources: BTreeMap<(&'static str, Vec<u8>), Document> = BTreeMap::new();
    // The holder's tenant, when it has one: a source of a tenant model must be of it.
    let tenant = T::TENANT.map(|field| value_at(stored, field));
    for ((source, k), (id, specs)) in groups(stored, copies) {
        let source_tenant = specs.iter().find_map(|s| s.source_tenant).filter(|_| tenant.is_some());
        let found = db
            .collection::<Document>(source)
            // A soft-deleted source is a deleted one: nothing is copied from it.
            .find_one(registry::live_by_id(source, &id))
            .projection(projection(specs.iter().map(|s| s.source_field).chain(source_tenant)))
            .await
            .map_err(|e| RefError::Mongo { collection: T::COLLECTION, source: Box::new(e) })?;
        let Some(found) = found else {
            // The collection name is only known at run time here; report the ids.
            return Err(RefError::Missing { collection: T::COLLECTION, ids: vec![id] });
        };
        // Compared as stored values: a missing tenant on either side is no match for
        // a present one, and two missing ones cannot occur (the tenant is required).
        if let (Some(holder), Some(field)) = (&tenant, source_tenant) {
            if value_at(&found, field) != *holder {
                return Err(RefError::CrossTenant { collection: T::COLLECTION, source, id: Box::new(id) });
            }
        }
        found_sources.insert((source, k), found);
    }
    for &c in copies {
        fill(c, stored, &mut |via| {
            let source = found_sources.get(&(c.source, key(via)))?;
            Some(value_at(source, c.source_field))
        });
    }
    Ok(())
}

fn to_document<T: Model + Serialize>(value: &T) -> Result<Document, RefError> {
    bson_compat::to_document(value).map_err(|e| RefError::Decode {
        collection: T::COLLECTION,
        id: Box::new(Bson::Null),
        source: Box::new(e),
    })
}

/// Fills every denormalized copy of `value` from its source, as the document is about
/// to be written: the snapshot a `refresh = "never"` copy keeps, and the first value
/// of the others. One query per referenced source document. A reference to a document
/// that does not exist, or that is soft-deleted (`#[model(soft_delete = ...)]`), is
/// [`RefError::Missing`], and `value` is left unchanged.
pub async fn snapshot<T>(db: &Database, value: &mut T) -> Result<(), RefError>
where
    T: Model + Serialize + DeserializeOwned,
{
    let copies = copies_of::<T>();
    if copies.is_empty() {
        return Ok(());
    }
    let mut stored = to_document(value)?;
    fill_copies::<T>(db, &mut stored, &copies).await?;
    *value = bson_compat::from_document(stored).map_err(|e| RefError::Decode {
        collection: T::COLLECTION,
        id: Box::new(Bson::Null),
        source: Box::new(e),
    })?;
    Ok(())
}

/// Inserts `value` with its copies filled ([`snapshot`]), and returns its `_id`.
///
/// The model's stamps are set in the inserted document ([`crate::stamps`]): both times
/// from this machine's clock, the revision at 1. `value` keeps the values it had.
///
/// A copy that is refreshed (`sync` or `async`) could miss a rename that lands between
/// the snapshot and the insert: the refresh would run before this document exists.
/// So after inserting, the new document's refreshed copies are brought in line by the
/// path every docshape writer outside a transaction takes (see
/// [`crate::denormalized`]): each source read again, the new value written as the
/// copy's type stores it (`$unset` for a null the type omits), and the source read
/// once more until it shows what was written. A source gone meanwhile is
/// [`RefError::Missing`]; a write that fails or that the server refuses is
/// [`RefError::Copies`], the document being inserted either way.
///
/// On a model with a `sync` summary, the insert and the summaries it counts in run in
/// a transaction started for it, so they commit together (see [`crate::guide::writes`]);
/// the copies are settled after the commit.
pub async fn insert_one<T>(db: &Database, value: &mut T) -> Result<Bson, RefError>
where
    T: Model + Serialize + DeserializeOwned,
{
    insert_one_with(db, value, None).await
}

/// [`insert_one`] in `session`. In the transaction it runs, if any (a
/// `docshape::transaction`'s `tx`, or one the caller started), the document and the
/// `sync` summaries it counts in commit together; the refreshed copies it holds are
/// then as [`snapshot`] read them before the insert (their settling read would not see
/// the uncommitted document): a rename committed in between reaches them at the
/// source's next write, or with `denormalized::reconcile`. Without a transaction, as
/// [`insert_one`].
pub async fn insert_one_in<T>(
    db: &Database,
    value: &mut T,
    session: &mut ClientSession,
) -> Result<Bson, RefError>
where
    T: Model + Serialize + DeserializeOwned,
{
    insert_one_with(db, value, Some(session)).await
}

async fn insert_one_with<T>(
    db: &Database,
    value: &mut T,
    session: Option<&mut ClientSession>,
) -> Result<Bson, RefError>
where
    T: Model + Serialize + DeserializeOwned,
{
    snapshot(db, value).await?;
    let mut stored = to_document(value)?;
    // Its `#[created_at]`, `#[updated_at]` and `#[revision]`, in the insert itself:
    // the writer's clock, as an insert cannot read the server's (`crate::stamps`).
    // (Step 2 of the write pipeline: an insert has no other.)
    let effects = crate::core::write::Effects::of::<T>();
    effects.on_insert(&mut stored);
    let stored = [stored];
    let mut ids = insert_alone::<T>(db, &stored, session).await?;
    Ok(ids.pop().unwrap_or(Bson::Null))
}

/// Inserts `stored` given no transaction (no session, or one that runs none): in a
/// transaction of its own when the model keeps data that must commit with its writes
/// (a `sync` summary: the documents and the summaries commit together; in the
/// caller's session when given), then settles their refreshed copies once the
/// documents are visible; otherwise as [`insert_stored`] says.
async fn insert_alone<T: Model>(
    db: &Database,
    stored: &[Document],
    mut session: Option<&mut ClientSession>,
) -> Result<Vec<Bson>, RefError> {
    let mongo = |source| RefError::Mongo { collection: T::COLLECTION, source: Box::new(source) };
    let running = crate::core::transaction::in_transaction(session.as_deref_mut()).await.map_err(mongo)?;
    if !running && crate::core::write::Effects::of::<T>().commits_with_source() {
        let own = crate::core::transaction::for_write(
            db.client(),
            session.as_deref_mut(),
            |tx| Box::pin(insert_stored::<T>(db, stored, Some(&mut **tx))),
            // The transaction was aborted with it: the inner error says nothing was
            // written (`source_updated: false`).
            |e| e,
            mongo,
            |source| RefError::Copies { collection: T::COLLECTION, source },
        );
        if let Some(done) = own.await {
            let ids = done?;
            for (document, id) in stored.iter().zip(&ids) {
                settle_copies::<T>(db, document, id).await?;
            }
            return Ok(ids);
        }
    }
    insert_stored::<T>(db, stored, session).await
}

/// Inserts the documents `stored` (copies filled, stamps set) in one `insert`
/// command (ordered), in `session` when given; outside a transaction, settles each
/// one's refreshed copies after the insert; then the summaries they count in.
/// Returns their `_id`s in order.
async fn insert_stored<T: Model>(
    db: &Database,
    stored: &[Document],
    mut session: Option<&mut ClientSession>,
) -> Result<Vec<Bson>, RefError> {
    let effects = crate::core::write::Effects::of::<T>();
    let collection = db.collection::<Document>(T::COLLECTION);
    let mongo = |source| RefError::Mongo { collection: T::COLLECTION, source: Box::new(source) };
    let transaction =
        crate::core::transaction::in_transaction(session.as_deref_mut()).await.map_err(mongo)?;
    // One document: an `insert_one` (the same `insert` command), whose error is the
    // driver's write error rather than a bulk one.
    let inserted: HashMap<usize, Bson> = match stored {
        [one] => {
            let command = collection.insert_one(one);
            let result = match session.as_deref_mut() {
                Some(s) => command.session(s).await,
                None => command.await,
            };
            HashMap::from([(0, result.map_err(mongo)?.inserted_id)])
        }
        many => {
            let command = collection.insert_many(many);
            let result = match session.as_deref_mut() {
                Some(s) => command.session(s).await,
                None => command.await,
            };
            result.map_err(mongo)?.inserted_ids
        }
    };
    let mut ids = Vec::with_capacity(stored.len());
    for (i, document) in stored.iter().enumerate() {
        let id = inserted.get(&i).cloned().or_else(|| document.get("_id").cloned()).unwrap_or(Bson::Null);
        if !transaction {
            settle_copies::<T>(db, document, &id).await?;
        }
        let derived = |source| RefError::Copies { collection: T::COLLECTION, source: Box::new(source) };
        let written = document.contains_key("_id").then_some(document);
        effects.after_insert_in(db, &id, written, session.as_deref_mut()).await.map_err(derived)?; // summaries
        ids.push(id);
    }
    Ok(ids)
}

/// [`insert_one`] of several documents in one `insert` command (ordered): each one's
/// copies filled, its stamps set, and its refreshed copies settled after the insert,
/// as `insert_one` does. Returns their `_id`s in order.
///
/// An error of the insert leaves the documents before the failing one inserted (an
/// ordered insert stops there) and their copies as filled before the insert: a
/// rename landing in between reaches them at the source's next write, or with
/// `denormalized::reconcile`. On a model with a `sync` summary the insert and the
/// summaries run in a transaction started for them (as in [`insert_one`]), so there an
/// error leaves **none** of the documents inserted.
pub async fn insert_many<T>(db: &Database, values: &mut [T]) -> Result<Vec<Bson>, RefError>
where
    T: Model + Serialize + DeserializeOwned,
{
    insert_many_with(db, values, None).await
}

/// [`insert_many`] in `session`, as [`insert_one_in`] says: in a running transaction
/// the documents and their `sync` summaries commit together (or, after an error,
/// none of them), and their refreshed copies are as read before the insert.
pub async fn insert_many_in<T>(
    db: &Database,
    values: &mut [T],
    session: &mut ClientSession,
) -> Result<Vec<Bson>, RefError>
where
    T: Model + Serialize + DeserializeOwned,
{
    insert_many_with(db, values, Some(session)).await
}

async fn insert_many_with<T>(
    db: &Database,
    values: &mut [T],
    session: Option<&mut ClientSession>,
) -> Result<Vec<Bson>, RefError>
where
    T: Model + Serialize + DeserializeOwned,
{
    if values.is_empty() {
        return Ok(Vec::new());
    }
    let effects = crate::core::write::Effects::of::<T>();
    let mut stored = Vec::with_capacity(values.len());
    for value in values.iter_mut() {
        snapshot(db, value).await?;
        let mut document = to_document(value)?;
        effects.on_insert(&mut document);
        stored.push(document);
    }
    insert_alone::<T>(db, &stored, session).await
}

/// Brings the refreshed copies of `stored`, just inserted with `_id` `id`, in line
/// with their sources: a rename that landed between the snapshot and the insert is
/// not lost.
async fn settle_copies<T: Model>(db: &Database, stored: &Document, id: &Bson) -> Result<(), RefError> {
    // One refresh per source document, with its refreshed copies (inside arrays, of
    // every element that references it).
    let refreshed: Vec<&'static CopySpec> =
        copies_of::<T>().into_iter().filter(|c| c.refresh != Refresh::Never).collect();
    let copies = |source| RefError::Copies { collection: T::COLLECTION, source: Box::new(source) };
    for ((source, _), (via, specs)) in groups(stored, &refreshed) {
        let refreshed = refresh(db, source, &via, &specs, None, Some(id)).await.map_err(copies)?;
        if !refreshed.found {
            return Err(RefError::Missing { collection: T::COLLECTION, ids: vec![via] });
        }
        let refused = refreshed.refused();
        if !refused.is_empty() {
            return Err(copies(CopyError::Refused { id: via, documents: refused }));
        }
    }
    Ok(())
}

/// Type-level checks the derives emit for references and copies, each with a message
/// that says which rule the types break.
pub mod checks {
    /// `#[reference(T)]` on a field whose type is not `T`'s `_id` type.
    #[diagnostic::on_unimplemented(
        message = "this field holds `{Self}`, but the referenced model's `_id` is `{Id}`",
        label = "not the referenced model's `_id` type",
        note = "a reference stores the `_id` of the referenced document: give the field that type, or use `Ref<Model>`"
    )]
    pub trait ReferenceId<Id: ?Sized> {}
    impl<T: ?Sized> ReferenceId<T> for T {}

    /// A copy whose type is not the source field's (or an `Option` of it: a copy may
    /// be missing where its source is, through an optional sub-document say).
    #[diagnostic::on_unimplemented(
        message = "the copy is a `{Self}`, but the source field is a `{Source}`",
        label = "the copy's type differs from the source field's",
        note = "a denormalized copy holds the very value of its source: declare it with the source field's type, or an `Option` of it"
    )]
    pub trait CopyType<Source: ?Sized> {}
    impl<T: ?Sized> CopyType<T> for T {}
    // Not listed in the error: the message's note already offers the `Option`.
    #[diagnostic::do_not_recommend]
    impl<T> CopyType<T> for Option<T> {}

    /// A `via` field that references another model than the copy's source.
    #[diagnostic::on_unimplemented(
        message = "`via` references `{Self}`, but the copy comes from `{Source}`",
        label = "not a reference to the source model",
        note = "`via` names the field holding the source document's `_id`: a `Ref<Source>` or `#[reference(Source)]` field"
    )]
    pub trait ViaSource<Source: ?Sized> {}
    impl<T: ?Sized> ViaSource<T> for T {}

    /// Compiles when `Field` is `Id`.
    pub const fn assert_reference_id<Field: ?Sized + ReferenceId<Id>, Id: ?Sized>() {}
    /// Compiles when the copy's type is the source field's.
    pub const fn assert_copy_type<Copy: ?Sized + CopyType<Source>, Source: ?Sized>() {}
    /// Compiles when the reference's model is the copy's source.
    pub const fn assert_via<Referenced: ?Sized + ViaSource<Source>, Source: ?Sized>() {}
    /// Compiles when `T` is a model (has a collection).
    pub const fn assert_model<T: crate::core::model::Model>() {}
}
