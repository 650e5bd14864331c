//! Rebuilding an index whose options changed, without a moment where its queries have
//! no index: the duplicate check a unique index needs first, and the bridge index that
//! serves the old one's queries while its name changes hands.

use bson::{doc, Bson, Document};
use mongodb::Database;

use super::{applied, SyncPlan};
use crate::core::error::{server_message, Error, Result};
use crate::core::trace;

impl SyncPlan {
    /// Replaces the server's index `dropped` by the model's `model`. The old index must
    /// go first (the new one takes its name or its keys), so a build that would fail is
    /// refused before the drop (a unique index over duplicates), and one that fails
    /// anyway puts the old index back: either way the collection keeps an index.
    pub(super) async fn rebuild(&self, db: &Database, dropped: &str, model: Document) -> Result<()> {
        let spec = &self.spec;
        let wanted = model.get_str("name").unwrap_or_default().to_owned();
        let refused = |reason: String, restored: bool| Error::IndexNotRebuilt {
            collection: spec.name.clone(),
            kept: dropped.to_owned(),
            wanted: wanted.clone(),
            reason,
            restored,
        };
        if let Some((key, count)) = duplicate_for_unique(db, &spec.name, &model).await? {
            return Err(refused(format!("{count} documents share {key}, so it cannot be unique"), true));
        }
        let old = self.server_indexes.iter().find(|s| s.get_str("name").ok() == Some(dropped)).cloned();
        // Between the drop and the build, the old index's queries keep an index: a
        // bridge with its keys and one more (a field no document holds), which the
        // server takes for another index and which serves every query the old one
        // served, by prefix. Only its uniqueness is not enforced meanwhile.
        let bridge = match &old {
            Some(old) => bridge_for(db, &spec.name, old).await,
            None => None,
        };
        if old.is_some() {
            db.run_command(doc! { "dropIndexes": &spec.name, "index": dropped }).await?;
            applied(&spec.name, "dropped index", dropped);
        }
        let built = build(db, &spec.name, vec![model]).await;
        if let Some(bridge) = &bridge {
            // Built or put back below: either way the bridge is no longer needed.
            if built.is_ok() {
                drop_bridge(db, &spec.name, bridge).await;
            }
        }
        if let Err(e) = built {
            let restored = match old {
                Some(mut old) => {
                    // `listIndexes` of older servers names the namespace; a create takes none.
                    old.remove("ns");
                    db.run_command(doc! { "createIndexes": &spec.name, "indexes": [old] }).await.is_ok()
                }
                None => false,
            };
            if let Some(bridge) = &bridge {
                drop_bridge(db, &spec.name, bridge).await;
            }
            return Err(refused(format!("its build failed: {}", server_message(&e)), restored));
        }
        applied(&spec.name, "rebuilt index", &wanted);
        Ok(())
    }
}

/// The key a bridge index adds to the old index's: a field no document holds.
const BRIDGE_KEY: &str = "__docshape_bridge";

/// Builds the bridge of a rebuild (see `SyncPlan::rebuild`) and returns its name, or
/// `None` when the server refuses it (an index kind that takes no extra key: text,
/// hashed, geo): the rebuild then goes on without one, as it always did.
async fn bridge_for(db: &Database, collection: &str, old: &Document) -> Option<String> {
    let mut keys = old.get_document("key").ok()?.clone();
    keys.insert(BRIDGE_KEY, 1);
    let name = format!("{}__bridge", old.get_str("name").ok()?);
    let mut bridge = doc! { "key": keys, "name": &name };
    // The same documents and comparisons as the old index, none of its constraints.
    for option in ["partialFilterExpression", "collation", "sparse"] {
        if let Some(value) = old.get(option) {
            bridge.insert(option, value.clone());
        }
    }
    match build(db, collection, vec![bridge]).await {
        Ok(_) => {
            applied(collection, "created bridge index", &name);
            Some(name)
        }
        Err(e) => {
            trace::event!(WARN, collection, error = %server_message(&e), "no bridge index for the rebuild");
            None
        }
    }
}

/// Drops a rebuild's bridge; a failure is reported, not fatal (the next sync reports
/// the bridge as an extra index).
async fn drop_bridge(db: &Database, collection: &str, name: &str) {
    match db.run_command(doc! { "dropIndexes": collection, "index": name }).await {
        Ok(_) => applied(collection, "dropped bridge index", name),
        Err(e) => {
            trace::event!(WARN, collection, index = name, error = %server_message(&e), "bridge index left")
        }
    }
}

/// One key value that more than one document holds, for a unique index `model` (with
/// how many hold it), or `None` when the index is not unique or the data fits it. One
/// aggregation that returns at most one duplicate; it reads the indexed fields of every
/// document the index would hold, as the build itself would, and honours the index's
/// partial filter, sparseness and collation. (An array value is grouped whole: two
/// documents sharing one element of different arrays are not found here, and their
/// build fails, which puts the old index back.)
pub(super) async fn duplicate_for_unique(
    db: &Database,
    collection: &str,
    model: &Document,
) -> Result<Option<(Document, i64)>> {
    if !model.get_bool("unique").unwrap_or(false) {
        return Ok(None);
    }
    let Ok(keys) = model.get_document("key") else { return Ok(None) };
    let mut pipeline = Vec::new();
    if let Ok(partial) = model.get_document("partialFilterExpression") {
        pipeline.push(doc! { "$match": partial.clone() });
    }
    if model.get_bool("sparse").unwrap_or(false) {
        let present: Vec<Bson> =
            keys.keys().map(|k| Bson::Document(doc! { k: { "$exists": true } })).collect();
        pipeline.push(doc! { "$match": { "$or": present } });
    }
    // Fields by position: a key path may hold dots, which a group key cannot.
    let mut group = Document::new();
    for (i, k) in keys.keys().enumerate() {
        group.insert(format!("k{i}"), doc! { "$ifNull": [format!("${k}"), Bson::Null] });
    }
    pipeline.push(doc! { "$group": { "_id": group, "n": { "$sum": 1 } } });
    pipeline.push(doc! { "$match": { "n": { "$gt": 1 } } });
    pipeline.push(doc! { "$limit": 1 });
    let coll = db.collection::<Document>(collection);
    let mut aggregate = coll.aggregate(pipeline);
    if let Ok(collation) = model.get_document("collation") {
        let collation = crate::core::bson_compat::from_document(collation.clone()).map_err(|e| {
            Error::UnexpectedReply { command: "aggregate", detail: format!("collation: {e}") }
        })?;
        aggregate = aggregate.collation(collation);
    }
    let mut cursor = aggregate.await?;
    use futures_util::TryStreamExt;
    let Some(found) = cursor.try_next().await? else { return Ok(None) };
    let ids = found.get_document("_id").cloned().unwrap_or_default();
    let mut key = Document::new();
    for (i, k) in keys.keys().enumerate() {
        key.insert(k.clone(), ids.get(format!("k{i}")).cloned().unwrap_or(Bson::Null));
    }
    let count = match found.get("n") {
        Some(Bson::Int32(n)) => i64::from(*n),
        Some(Bson::Int64(n)) => *n,
        _ => 2,
    };
    Ok(Some((key, count)))
}

/// How often a long index build reports that it is still running.
const BUILD_PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// `createIndexes` of `indexes`, with a `building indexes` INFO event every 10 s while
/// it runs (a build over a large collection takes minutes): the time so far, and the
/// server's own progress (`$currentOp`'s `progress.done` / `progress.total`) when it
/// reports one. A server that does not answer `$currentOp` (no privilege, or no such
/// stage) only gets the time.
pub(super) async fn build(
    db: &Database,
    collection: &str,
    indexes: Vec<Document>,
) -> mongodb::error::Result<Document> {
    build_reporting_every(db, collection, indexes, BUILD_PROGRESS_EVERY).await
}

/// [`build`], reporting every `every` (a test's build is not minutes long).
async fn build_reporting_every(
    db: &Database,
    collection: &str,
    indexes: Vec<Document>,
    every: std::time::Duration,
) -> mongodb::error::Result<Document> {
    let names: Vec<String> =
        indexes.iter().filter_map(|i| i.get_str("name").ok().map(str::to_owned)).collect();
    let command = std::future::IntoFuture::into_future(
        db.run_command(doc! { "createIndexes": collection, "indexes": indexes }),
    );
    tokio::pin!(command);
    let started = std::time::Instant::now();
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    loop {
        tokio::select! {
            done = &mut command => return done,
            _ = ticker.tick() => {
                let (done, total) = build_progress(db, collection).await.unwrap_or((0, 0));
                trace::event!(
                    INFO,
                    collection,
                    indexes = names.join(",").as_str(),
                    elapsed_s = started.elapsed().as_secs(),
                    done,
                    total,
                    "building indexes"
                );
            }
        }
    }
}

/// The server's progress of an index build on `collection`, from `$currentOp`.
async fn build_progress(db: &Database, collection: &str) -> Option<(i64, i64)> {
    use futures_util::TryStreamExt;
    let namespace = format!("{}.{}", db.name(), collection);
    let admin = db.client().database("admin");
    let pipeline =
        [doc! { "$currentOp": {} }, doc! { "$match": { "ns": namespace, "progress": { "$exists": true } } }];
    let ops: Vec<Document> = admin.aggregate(pipeline).await.ok()?.try_collect().await.ok()?;
    let progress = ops.first()?.get_document("progress").ok()?;
    let number = |key: &str| match progress.get(key) {
        Some(Bson::Int32(n)) => Some(i64::from(*n)),
        Some(Bson::Int64(n)) => Some(*n),
        Some(Bson::Double(n)) => Some(*n as i64),
        _ => None,
    };
    Some((number("done")?, number("total")?))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use bson::{doc, Document};
    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Metadata};

    use super::build_reporting_every;
    use docshape_testkit::TestServer;

    /// The fields of every `building indexes` event seen where it is the default
    /// subscriber.
    #[derive(Clone, Default)]
    struct BuildEvents(Arc<Mutex<Vec<BTreeMap<String, String>>>>);

    struct Fields<'a>(&'a mut BTreeMap<String, String>);

    impl Visit for Fields<'_> {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            self.0.insert(field.name().to_owned(), format!("{value:?}"));
        }
        fn record_str(&mut self, field: &Field, value: &str) {
            self.0.insert(field.name().to_owned(), value.to_owned());
        }
    }

    impl tracing::Subscriber for BuildEvents {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, event: &Event<'_>) {
            let mut fields = BTreeMap::new();
            event.record(&mut Fields(&mut fields));
            fields.insert("target".to_owned(), event.metadata().target().to_owned());
            if fields.get("message").map(String::as_str) == Some("building indexes") {
                self.0.lock().unwrap().push(fields);
            }
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }

    /// A build the server holds for a second (`failCommand` blocks `createIndexes`
    /// before running it) reports that it is still running, every 20 ms here, with what
    /// an operator needs to recognise it; then it completes and the index is there. On
    /// SecantusDB `$currentOp` lists no index build (it answers with the `$currentOp`
    /// itself), so `done` and `total` are 0 here; on `mongod` they are its progress.
    #[test]
    fn a_long_build_reports_that_it_is_still_running() {
        let server = TestServer::start_local_with_test_commands().unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let events = BuildEvents::default();
        let client = rt.block_on(server.client()).unwrap();
        let db = client.database("build_progress");
        let built = tracing::subscriber::with_default(events.clone(), || {
            rt.block_on(async {
                db.collection::<Document>("items").insert_one(doc! { "a": 1 }).await.unwrap();
                let hold = doc! {
                    "configureFailPoint": "failCommand",
                    "mode": { "times": 1 },
                    "data": { "failCommands": ["createIndexes"], "blockConnection": true, "blockTimeMS": 1000 },
                };
                client.database("admin").run_command(hold).await.unwrap();
                let index = doc! { "key": { "a": 1 }, "name": "a_1" };
                build_reporting_every(&db, "items", vec![index], Duration::from_millis(20)).await
            })
        });
        built.unwrap();
        let events = events.0.lock().unwrap();
        let first = events.first().expect("a `building indexes` event while the build was held");
        assert_eq!(first.get("target").map(String::as_str), Some("docshape"), "{first:?}");
        assert_eq!(first.get("collection").map(String::as_str), Some("items"), "{first:?}");
        assert_eq!(first.get("indexes").map(String::as_str), Some("a_1"), "{first:?}");
        for number in ["elapsed_s", "done", "total"] {
            assert!(first.get(number).is_some_and(|n| n.parse::<u64>().is_ok()), "{number}: {first:?}");
        }
        let names: Vec<String> =
            rt.block_on(async { db.collection::<Document>("items").list_index_names().await }).unwrap();
        assert!(names.iter().any(|n| n == "a_1"), "{names:?}");
    }
}
