//! `sync`: make a database's collections match the models: validator, validation
//! level and action, indexes and shard key.
//!
//! [`plan`] reads the server and says what [`SyncPlan::apply`] would change, without
//! touching anything (a dry run); [`sync`] does both. What differs but is not safe to
//! change by default (an index on the server that the model does not declare, an index
//! whose options changed) is reported as a [`SyncNote`] and left alone unless
//! [`SyncOptions`] opts in.

use bson::{doc, Bson, Document};
use mongodb::Database;

use crate::core::error::{Error, Result};
use crate::core::model::Model;
pub use crate::core::spec::CollectionSpec;
use crate::core::trace;

mod rebuild;
mod report;
mod weaker;
use rebuild::duplicate_for_unique;
pub use report::{SyncChange, SyncNote, SyncReport};
pub use weaker::inexpressible;

/// What [`sync`] may do beyond the safe default: `SyncOptions::default()` and the
/// setters, `SyncOptions::default().drop_extra_indexes(true)` (the fields can be read;
/// a later release may add some, so there is no struct literal outside docshape).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SyncOptions {
    /// Drop indexes the server has and the model does not declare (never `_id_`).
    pub drop_extra_indexes: bool,
    /// Drop and recreate indexes whose keys or options differ from the model's.
    pub rebuild_changed_indexes: bool,
    /// Install the validator even when the server's was installed by code of a newer
    /// schema version (a deliberate rollback). Without it, that is
    /// [`Error::OlderSchema`](crate::Error::OlderSchema) and nothing changes.
    pub allow_older_schema: bool,
    /// Replace the server's validator even when it holds constraints docshape cannot
    /// express, which the code's validator would drop (a hand-written `multipleOf`,
    /// `oneOf`, a query operator beside `$jsonSchema`). Without it, that is
    /// [`Error::WeakerValidator`](crate::Error::WeakerValidator) and nothing changes.
    pub allow_weaker_validator: bool,
}

impl SyncOptions {
    /// Sets the field `drop_extra_indexes`.
    pub const fn drop_extra_indexes(mut self, drop: bool) -> Self {
        self.drop_extra_indexes = drop;
        self
    }

    /// Sets the field `rebuild_changed_indexes`.
    pub const fn rebuild_changed_indexes(mut self, rebuild: bool) -> Self {
        self.rebuild_changed_indexes = rebuild;
        self
    }

    /// Sets the field `allow_older_schema`.
    pub const fn allow_older_schema(mut self, allow: bool) -> Self {
        self.allow_older_schema = allow;
        self
    }

    /// Sets the field `allow_weaker_validator`.
    pub const fn allow_weaker_validator(mut self, allow: bool) -> Self {
        self.allow_weaker_validator = allow;
        self
    }
}

/// A dry run's result: the changes [`SyncPlan::apply`] would make.
#[derive(Debug, Clone, PartialEq)]
pub struct SyncPlan {
    /// What would change, and what would be left alone.
    pub report: SyncReport,
    spec: CollectionSpec,
    /// The server's indexes by name, for drops.
    server_indexes: Vec<Document>,
}

/// Creates `T`'s collection with its validator and indexes, or brings an existing one
/// in line with `T`: validator, validation level and action (`collMod`), missing
/// indexes, and the shard key on a sharded deployment. Idempotent: a second run changes
/// nothing and says so. Extra or changed indexes are reported, never dropped (see
/// [`sync_with`]).
///
/// Existing documents are not re-checked: a new validator applies to later writes
/// (with `validation_level = "moderate"`, only to documents that already pass).
/// Several processes may sync at once; each ends with the model's options in place,
/// and more than one may report [`SyncChange::CreatedCollection`].
///
/// ```no_run
/// # use docshape::{Model, validator::Schema};
/// # #[derive(serde::Serialize, serde::Deserialize, Model)]
/// # #[model(collection = "usuarios")]
/// # struct Usuario { nombre: String }
/// # async fn run(db: mongodb::Database) -> docshape::Result<()> {
/// let report = docshape::sync::<Usuario>(&db).await?;
/// println!("{report}"); // "usuarios: created the collection with its validator"
/// assert!(docshape::sync::<Usuario>(&db).await?.is_unchanged());
/// # Ok(()) }
/// ```
pub async fn sync<T: Model>(db: &Database) -> Result<SyncReport> {
    sync_with::<T>(db, SyncOptions::default()).await
}

/// [`sync`] with options: dropping extra indexes, rebuilding changed ones.
///
/// The collections the model owns besides its own (a capped bucket's counters, an
/// outlier field's overflow documents) are synced with it, after it: their reports
/// are in [`SyncReport::owned`].
pub async fn sync_with<T: Model>(db: &Database, options: SyncOptions) -> Result<SyncReport> {
    let mut report = sync_spec(db, &CollectionSpec::of::<T>(), options).await?;
    let owner = std::any::type_name::<T>();
    let mut owned: Vec<CollectionSpec> = inventory::iter::<crate::core::registry::RegisteredCollection>
        .into_iter()
        .filter(|c| (c.owner)() == owner)
        .map(|c| (c.spec)())
        .collect();
    owned.sort_by(|a, b| a.name.cmp(&b.name));
    for spec in owned {
        report.owned.push(sync_spec(db, &spec, options).await?);
    }
    Ok(report)
}

/// [`sync_with`] for every registered model (see [`crate::registry`]), one collection
/// after another in name order; an error before touching anything when two models
/// claim one collection.
pub async fn sync_all(db: &Database, options: SyncOptions) -> Result<Vec<SyncReport>> {
    let mut reports = Vec::new();
    for spec in crate::core::registry::specs()? {
        reports.push(sync_spec(db, &spec, options).await?);
    }
    Ok(reports)
}

/// [`sync`] for a spec built by hand or read from an export
/// ([`crate::artifacts::specs_from`]).
pub async fn sync_spec(db: &Database, spec: &CollectionSpec, options: SyncOptions) -> Result<SyncReport> {
    let span = trace::span!("sync", collection = spec.name.as_str());
    trace::in_span(span, async {
        let planned = plan_spec(db, spec, options).await?;
        let report = match planned.clone().apply(db).await {
            // Another process created the collection between our look and our create:
            // plan again against what it made.
            Err(Error::Mongo(e)) if command_error_code(&e) == Some(NAMESPACE_EXISTS) => {
                trace::event!(DEBUG, "created by another process meanwhile; planning again");
                plan_spec(db, spec, options).await?.apply(db).await
            }
            other => other,
        }?;
        trace::event!(INFO, changes = report.changes.len(), notes = report.notes.len(), "synced");
        Ok(report)
    })
    .await
}

/// A dry run of [`sync_with`]: reads the server and returns what would change,
/// touching nothing.
///
/// ```no_run
/// # use docshape::{Model, validator::Schema};
/// # #[derive(serde::Serialize, serde::Deserialize, Model)]
/// # #[model(collection = "usuarios")]
/// # struct Usuario { nombre: String }
/// # async fn run(db: mongodb::Database) -> docshape::Result<()> {
/// let plan = docshape::sync::plan::<Usuario>(&db, Default::default()).await?;
/// for change in &plan.report.changes {
///     println!("would: {change}");
/// }
/// let done = plan.apply(&db).await?;
/// # Ok(()) }
/// ```
pub async fn plan<T: Model>(db: &Database, options: SyncOptions) -> Result<SyncPlan> {
    plan_spec(db, &CollectionSpec::of::<T>(), options).await
}

/// [`plan`] for a spec built by hand or read from an export.
pub async fn plan_spec(db: &Database, spec: &CollectionSpec, options: SyncOptions) -> Result<SyncPlan> {
    let span = trace::span!("sync.plan", collection = spec.name.as_str());
    let plan = trace::in_span(span.clone(), plan_spec_inner(db, spec, options)).await?;
    span.in_scope(|| trace::event!(DEBUG, changes = plan.report.changes.len(), "planned"));
    Ok(plan)
}

async fn plan_spec_inner(db: &Database, spec: &CollectionSpec, options: SyncOptions) -> Result<SyncPlan> {
    let mut report = SyncReport {
        collection: spec.name.clone(),
        changes: Vec::new(),
        notes: Vec::new(),
        owned: Vec::new(),
    };
    let current = collection_options_for(db, &spec.name, spec.timeseries.is_some()).await?;
    let server_indexes = match &current {
        Some(_) => list_indexes(db, &spec.name).await?,
        None => Vec::new(),
    };
    match (&current, &spec.timeseries) {
        (None, None) => report.changes.push(SyncChange::CreatedCollection),
        (None, Some(options)) => {
            report.changes.push(SyncChange::CreatedTimeSeries { options: options.clone() })
        }
        // mongod takes no schema validation on a time-series collection: its options
        // are the time-series ones.
        (Some(current), Some(model)) => plan_timeseries(current, model, &mut report),
        (Some(current), None) => {
            let validator = current.get_document("validator").ok();
            let differs = !validator.is_some_and(|v| same_validator(v, &spec.validator));
            // Code older than the validator on the server would take the collection
            // back: the newer release's documents would then fail its writes (code 121).
            let server_version = validator.and_then(crate::core::spec::schema_version_of);
            let code_version = crate::core::spec::schema_version_of(&spec.validator);
            if let (true, Some(server), false) = (differs, server_version, options.allow_older_schema) {
                if code_version.is_none_or(|code| code < server) {
                    return Err(Error::OlderSchema {
                        collection: spec.name.clone(),
                        server,
                        code: code_version,
                    });
                }
            }
            // What the server enforces and no model can write is not dropped silently.
            if let (true, Some(server), false) = (differs, validator, options.allow_weaker_validator) {
                let lost = weaker::lost(server, &spec.validator);
                if !lost.is_empty() {
                    return Err(Error::WeakerValidator { collection: spec.name.clone(), lost });
                }
            }
            if differs {
                report.changes.push(SyncChange::ValidatorChanged { before: validator.cloned() });
            }
            let level = current.get_str("validationLevel").unwrap_or("strict");
            if level != spec.validation_level.as_str() {
                report.changes.push(SyncChange::ValidationLevelChanged {
                    before: level.to_owned(),
                    after: spec.validation_level,
                });
            }
            let action = current.get_str("validationAction").unwrap_or("error");
            if action != spec.validation_action.as_str() {
                report.changes.push(SyncChange::ValidationActionChanged {
                    before: action.to_owned(),
                    after: spec.validation_action,
                });
            }
        }
    }
    plan_indexes(spec, &server_indexes, options, &mut report);
    // A unique index over duplicates would fail to build: say so in the plan (one
    // aggregation per unique index the plan builds, returning at most one duplicate).
    if current.is_some() {
        for change in report.changes.clone() {
            let name = match &change {
                SyncChange::CreatedIndex { name } | SyncChange::RebuiltIndex { created: name, .. } => name,
                _ => continue,
            };
            let Some(model) = spec.indexes.iter().find(|i| i.get_str("name").ok() == Some(name.as_str()))
            else {
                continue;
            };
            if let Some((key, count)) = duplicate_for_unique(db, &spec.name, model).await? {
                report.notes.push(SyncNote::UniqueMeetsDuplicates { name: name.clone(), key, count });
            }
        }
    }
    if let Some(key) = &spec.shard_key {
        plan_shard(db, &spec.name, key, &mut report).await?;
    }
    Ok(SyncPlan { report, spec: spec.clone(), server_indexes })
}

/// The time-series options: a plain collection, another time or meta field or finer
/// buckets are a [`SyncNote::TimeSeriesDiffers`] (which `apply` refuses); a coarser
/// granularity or span and another `expireAfterSeconds` are one `collMod`.
fn plan_timeseries(current: &Document, model: &Document, report: &mut SyncReport) {
    let Ok(server_ts) = current.get_document("timeseries") else {
        report.notes.push(SyncNote::TimeSeriesDiffers { server: None, model: model.clone() });
        return;
    };
    let mut server = doc! { "timeseries": server_ts.clone() };
    if let Some(e) = current.get("expireAfterSeconds") {
        server.insert("expireAfterSeconds", e.clone());
    }
    let model_ts = model.get_document("timeseries").cloned().unwrap_or_default();
    let field = |d: &Document, k: &str| d.get_str(k).ok().map(str::to_owned);
    let fixed = ["timeField", "metaField"].iter().all(|k| field(server_ts, k) == field(&model_ts, k));
    // The span of the server's buckets, in seconds: an exact span where one is set,
    // else the granularity's (seconds by default): one hour, one day, 30 days.
    let span = |d: &Document| {
        d.get("bucketMaxSpanSeconds").and_then(number).unwrap_or_else(|| {
            match d.get_str("granularity").ok().and_then(crate::core::spec::Granularity::parse) {
                Some(crate::core::spec::Granularity::Hours) => 2_592_000.0,
                Some(crate::core::spec::Granularity::Minutes) => 86_400.0,
                _ => 3_600.0,
            }
        })
    };
    let (server_span, model_span) = (span(server_ts), span(&model_ts));
    // mongod reports the span a granularity implies (`granularity: "minutes",
    // bucketMaxSpanSeconds: 86400`), so spans are compared as they take effect, and a
    // granularity only where the model states one.
    let same_buckets = server_span == model_span
        && (!model_ts.contains_key("granularity")
            || field(server_ts, "granularity") == field(&model_ts, "granularity"));
    if !fixed || model_span < server_span {
        report.notes.push(SyncNote::TimeSeriesDiffers { server: Some(server), model: model.clone() });
        return;
    }
    let expire = |d: &Document| d.get("expireAfterSeconds").and_then(number);
    if !same_buckets || expire(current) != expire(model) {
        report.changes.push(SyncChange::TimeSeriesChanged { before: server, after: model.clone() });
    }
}

/// The keys of the index a time-series collection is read by (mongod 6.3 and newer
/// builds it with the collection): the meta field then the time, or the time alone.
fn timeseries_keys(spec: &CollectionSpec) -> Option<Document> {
    let ts = spec.timeseries.as_ref()?.get_document("timeseries").ok()?;
    let mut keys = Document::new();
    if let Ok(meta) = ts.get_str("metaField") {
        keys.insert(meta, 1_i32);
    }
    keys.insert(ts.get_str("timeField").ok()?, 1_i32);
    Some(keys)
}

/// Whether a server index is the one the server builds for a time-series collection
/// (its meta field and time, in either direction), whatever its name: `sync` neither
/// drops nor rebuilds it.
fn is_timeseries_index(keys: Option<&Document>, server: &Document) -> bool {
    let (Some(keys), Ok(server)) = (keys, server.get_document("key")) else { return false };
    keys.len() == server.len()
        && keys
            .keys()
            .zip(server.iter())
            .all(|(k, (sk, v))| k == sk && number(v).is_some_and(|n| n == 1.0 || n == -1.0))
}

/// The index changes in the order [`SyncPlan::apply`] makes them: rebuilds (their old
/// index must go before the new one can be built under its name or keys), then new
/// indexes, then drops, so that an index replaced by another under a new name (a key
/// order change, say) is dropped only once its successor exists.
fn plan_indexes(spec: &CollectionSpec, server: &[Document], options: SyncOptions, report: &mut SyncReport) {
    let mut changes = Vec::new();
    plan_index_changes(spec, server, options, &mut changes, &mut report.notes);
    let rank = |c: &SyncChange| match c {
        SyncChange::RebuiltIndex { .. } => 0,
        SyncChange::CreatedIndex { .. } => 1,
        _ => 2,
    };
    changes.sort_by_key(rank);
    report.changes.extend(changes);
}

fn plan_index_changes(
    spec: &CollectionSpec,
    server: &[Document],
    options: SyncOptions,
    changes: &mut Vec<SyncChange>,
    notes: &mut Vec<SyncNote>,
) {
    let name_of = |d: &Document| d.get_str("name").unwrap_or_default().to_owned();
    let mut claimed: Vec<String> = vec!["_id_".to_owned()];
    // A time-series collection's own index serves the model's meta/time index under
    // whatever name the server gave it; it is never dropped.
    let ts_keys = timeseries_keys(spec);
    claimed.extend(server.iter().filter(|s| is_timeseries_index(ts_keys.as_ref(), s)).map(name_of));
    for model in &spec.indexes {
        let name = name_of(model);
        if is_timeseries_index(ts_keys.as_ref(), model)
            && server.iter().any(|s| is_timeseries_index(ts_keys.as_ref(), s))
        {
            continue;
        }
        let by_name = server.iter().find(|s| name_of(s) == name);
        let by_keys = server.iter().find(|s| {
            name_of(s) != name
                && s.get_document("key")
                    .ok()
                    .zip(model.get_document("key").ok())
                    .is_some_and(|(a, b)| same_keys(a, b))
        });
        match (by_name, by_keys) {
            (Some(s), _) if same_index(s, model) => claimed.push(name),
            (Some(s), _) | (None, Some(s)) => {
                claimed.push(name_of(s));
                if options.rebuild_changed_indexes {
                    changes.push(SyncChange::RebuiltIndex { dropped: name_of(s), created: name });
                } else {
                    notes.push(SyncNote::ChangedIndex { name, server: s.clone(), model: model.clone() });
                }
            }
            (None, None) => changes.push(SyncChange::CreatedIndex { name }),
        }
    }
    for s in server {
        let name = name_of(s);
        if claimed.contains(&name) {
            continue;
        }
        if options.drop_extra_indexes {
            changes.push(SyncChange::DroppedIndex { name });
        } else {
            notes.push(SyncNote::ExtraIndex { name, spec: s.clone() });
        }
    }
}

async fn plan_shard(db: &Database, name: &str, key: &Document, report: &mut SyncReport) -> Result<()> {
    let hello = db.client().database("admin").run_command(doc! { "hello": 1 }).await?;
    if hello.get_str("msg").ok() != Some("isdbgrid") {
        report.notes.push(SyncNote::NotSharded { key: key.clone() });
        return Ok(());
    }
    let namespace = format!("{}.{name}", db.name());
    let entry = db
        .client()
        .database("config")
        .collection::<Document>("collections")
        .find_one(doc! { "_id": &namespace })
        .await?;
    match entry.and_then(|e| e.get_document("key").ok().cloned()) {
        Some(server) if same_keys(&server, key) => {}
        Some(server) => report.notes.push(SyncNote::ShardKeyDiffers { server, model: key.clone() }),
        None => report.changes.push(SyncChange::ShardedCollection { key: key.clone() }),
    }
    Ok(())
}

impl SyncPlan {
    /// Makes the planned changes, in order, and returns them as the report.
    pub async fn apply(self, db: &Database) -> Result<SyncReport> {
        let spec = &self.spec;
        // What cannot change in place is refused before anything changes.
        for note in &self.report.notes {
            match note {
                SyncNote::TimeSeriesDiffers { server: None, .. } => {
                    return Err(Error::NotTimeSeries { collection: spec.name.clone() })
                }
                SyncNote::TimeSeriesDiffers { server: Some(server), model } => {
                    return Err(Error::TimeSeriesDiffers {
                        collection: spec.name.clone(),
                        server: Box::new(server.clone()),
                        model: Box::new(model.clone()),
                    })
                }
                _ => {}
            }
        }
        let index_doc =
            |name: &str| spec.indexes.iter().find(|i| i.get_str("name").ok() == Some(name)).cloned();
        let mut collmod = false;
        let mut rebuilds = Vec::new();
        let mut drops = Vec::new();
        let mut creates = Vec::new();
        for change in &self.report.changes {
            match change {
                SyncChange::CreatedCollection => {
                    db.run_command(doc! {
                        "create": &spec.name,
                        "validator": spec.validator.clone(),
                        "validationLevel": spec.validation_level.as_str(),
                        "validationAction": spec.validation_action.as_str(),
                    })
                    .await?;
                    applied(&spec.name, "created the collection", &spec.name);
                }
                SyncChange::CreatedTimeSeries { options } => {
                    let mut create = doc! { "create": &spec.name };
                    create.extend(options.clone());
                    db.run_command(create).await?;
                    applied(&spec.name, "created the time-series collection", &spec.name);
                }
                SyncChange::TimeSeriesChanged { before, after } => {
                    let mut collmod = doc! { "collMod": &spec.name };
                    let (server_ts, model_ts) = (
                        before.get_document("timeseries").cloned().unwrap_or_default(),
                        after.get_document("timeseries").cloned().unwrap_or_default(),
                    );
                    if let Ok(g) = model_ts.get_str("granularity") {
                        if server_ts.get_str("granularity").ok() != Some(g) {
                            collmod.insert("timeseries", doc! { "granularity": g });
                        }
                    } else if let Some(span) = model_ts.get("bucketMaxSpanSeconds") {
                        collmod.insert(
                            "timeseries",
                            doc! { "bucketMaxSpanSeconds": span.clone(), "bucketRoundingSeconds": span.clone() },
                        );
                    }
                    // "off" removes an expiry the model no longer declares.
                    let expire =
                        after.get("expireAfterSeconds").cloned().unwrap_or(Bson::String("off".into()));
                    if before.get("expireAfterSeconds").and_then(number) != expire.as_i64().map(|e| e as f64)
                    {
                        collmod.insert("expireAfterSeconds", expire);
                    }
                    db.run_command(collmod).await?;
                    applied(&spec.name, "set the time-series options (collMod)", &spec.name);
                }
                SyncChange::ValidatorChanged { .. }
                | SyncChange::ValidationLevelChanged { .. }
                | SyncChange::ValidationActionChanged { .. } => collmod = true,
                SyncChange::CreatedIndex { name } => creates.extend(index_doc(name)),
                SyncChange::RebuiltIndex { dropped, created } => {
                    rebuilds.extend(index_doc(created).map(|model| (dropped.clone(), model)));
                }
                SyncChange::DroppedIndex { name } => drops.push(name.clone()),
                SyncChange::ShardedCollection { .. } => {}
            }
        }
        if collmod {
            db.run_command(doc! {
                "collMod": &spec.name,
                "validator": spec.validator.clone(),
                "validationLevel": spec.validation_level.as_str(),
                "validationAction": spec.validation_action.as_str(),
            })
            .await?;
            let version = crate::core::spec::schema_version_of(&spec.validator).map(|v| v.to_string());
            applied(&spec.name, "replaced the validator (collMod)", version.as_deref().unwrap_or(""));
        }
        // Rebuilds, then new indexes, then drops: an index is dropped only once what
        // replaces it exists (see `plan_indexes`).
        for (dropped, model) in rebuilds {
            self.rebuild(db, &dropped, model).await?;
        }
        if !creates.is_empty() {
            let names: Vec<String> =
                creates.iter().filter_map(|c| c.get_str("name").ok().map(str::to_owned)).collect();
            rebuild::build(db, &spec.name, creates).await?;
            for name in names {
                applied(&spec.name, "created index", &name);
            }
        }
        for name in drops {
            if self.server_indexes.iter().any(|s| s.get_str("name").ok() == Some(name.as_str())) {
                db.run_command(doc! { "dropIndexes": &spec.name, "index": &name }).await?;
                applied(&spec.name, "dropped index", &name);
            }
        }
        for change in &self.report.changes {
            if let SyncChange::ShardedCollection { key } = change {
                let namespace = format!("{}.{}", db.name(), spec.name);
                db.client()
                    .database("admin")
                    .run_command(doc! { "shardCollection": namespace, "key": key.clone() })
                    .await?;
            }
        }
        Ok(self.report)
    }
}

const NAMESPACE_EXISTS: i32 = 48;

fn command_error_code(e: &mongodb::error::Error) -> Option<i32> {
    match e.kind.as_ref() {
        mongodb::error::ErrorKind::Command(c) => Some(c.code),
        _ => None,
    }
}

/// The `options` document `listCollections` reports for `name`, or `None` when there
/// is no such namespace. The model may declare a time-series collection:
/// `listCollections` reports one with `type: "timeseries"` (mongod) or as a collection
/// whose options hold `timeseries` (servers that store the options only). A
/// time-series collection where the model declares a plain one is
/// [`Error::NotACollection`]; the reverse is planned as
/// [`SyncNote::TimeSeriesDiffers`].
async fn collection_options_for(db: &Database, name: &str, timeseries: bool) -> Result<Option<Document>> {
    let reply = db.run_command(doc! { "listCollections": 1, "filter": { "name": name } }).await?;
    let Some(entry) = first_batch(&reply, "listCollections")?.into_iter().next() else {
        return Ok(None);
    };
    let options = entry.get_document("options").cloned().unwrap_or_default();
    let kind = match entry.get_str("type").unwrap_or("collection") {
        "collection" if options.contains_key("timeseries") => "timeseries",
        other => other,
    };
    match (kind, timeseries) {
        ("collection", _) | ("timeseries", true) => Ok(Some(options)),
        _ => Err(Error::NotACollection { name: name.to_owned(), kind: kind.to_owned() }),
    }
}

/// The collection's indexes as `listIndexes` reports them (`_id_` included).
pub(crate) async fn list_indexes(db: &Database, name: &str) -> Result<Vec<Document>> {
    let reply = db.run_command(doc! { "listIndexes": name }).await?;
    first_batch(&reply, "listIndexes")
}

// Collections and indexes are few, so the first batch holds them all.
fn first_batch(reply: &Document, command: &'static str) -> Result<Vec<Document>> {
    let batch = reply
        .get_document("cursor")
        .and_then(|c| c.get_array("firstBatch"))
        .map_err(|_| Error::UnexpectedReply { command, detail: "no cursor.firstBatch".to_owned() })?;
    Ok(batch.iter().filter_map(Bson::as_document).cloned().collect())
}

/// Key documents are ordered: `{a: 1, b: 1}` is not `{b: 1, a: 1}`.
pub(crate) fn same_keys(a: &Document, b: &Document) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|((ka, va), (kb, vb))| ka == kb && same_bson(va, vb))
}

/// Whether a server index is the model's: same keys and the same options, reading
/// absent options as their defaults and collations by locale and strength only (the
/// server fills in the rest).
fn same_index(server: &Document, model: &Document) -> bool {
    let flag = |d: &Document, k: &str| d.get_bool(k).unwrap_or(false);
    let option = |d: &Document, k: &str| d.get(k).and_then(number);
    let collation = |d: &Document| {
        d.get_document("collation")
            .ok()
            .map(|c| (c.get_str("locale").unwrap_or("simple").to_owned(), c.get("strength").and_then(number)))
    };
    let partial = |d: &Document| d.get("partialFilterExpression").cloned();
    server.get_document("key").ok().zip(model.get_document("key").ok()).is_some_and(|(a, b)| same_keys(a, b))
        && flag(server, "unique") == flag(model, "unique")
        && flag(server, "sparse") == flag(model, "sparse")
        && option(server, "expireAfterSeconds") == option(model, "expireAfterSeconds")
        && collation(server).filter(|(l, _)| l != "simple") == collation(model)
        && match (partial(server), partial(model)) {
            (Some(a), Some(b)) => same_bson(&a, &b),
            (a, b) => a == b,
        }
}

/// BSON equality as the server means it for options read back: key order inside
/// documents does not matter, and numbers compare by value whatever their width.
pub(crate) fn same_bson(a: &Bson, b: &Bson) -> bool {
    match (a, b) {
        (Bson::Document(x), Bson::Document(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same_bson(v, w)))
        }
        (Bson::Array(x), Bson::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same_bson(v, w))
        }
        _ => match (number(a), number(b)) {
            (Some(x), Some(y)) => x == y,
            _ => a == b,
        },
    }
}

/// Validators compared as the server applies them: [`same_bson`], and each `required`
/// list as a set (the order of its names changes nothing the server checks).
pub(crate) fn same_validator(a: &Document, b: &Document) -> bool {
    same_bson(&required_sorted(Bson::Document(a.clone())), &required_sorted(Bson::Document(b.clone())))
}

/// `value` with every `required` list of strings sorted.
fn required_sorted(value: Bson) -> Bson {
    match value {
        Bson::Document(d) => Bson::Document(
            d.into_iter()
                .map(|(k, v)| match v {
                    Bson::Array(mut names)
                        if k == "required" && names.iter().all(|n| n.as_str().is_some()) =>
                    {
                        names.sort_by(|x, y| x.as_str().cmp(&y.as_str()));
                        (k, Bson::Array(names))
                    }
                    v => (k, required_sorted(v)),
                })
                .collect(),
        ),
        Bson::Array(items) => Bson::Array(items.into_iter().map(required_sorted).collect()),
        other => other,
    }
}

fn number(b: &Bson) -> Option<f64> {
    match b {
        Bson::Int32(i) => Some(f64::from(*i)),
        // Bounds written by docshape fit in f64's 53 bits except near i64's ends,
        // where i64::MAX and its f64 rounding compare equal: both mean "the top".
        Bson::Int64(i) => Some(*i as f64),
        Bson::Double(d) => Some(*d),
        _ => None,
    }
}

/// One event per action `sync` takes, for an operator reading the logs.
pub(super) fn applied(collection: &str, action: &str, name: &str) {
    trace::event!(INFO, collection, action, name, "applied");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_bson_ignores_key_order_and_number_width() {
        let a = Bson::Document(doc! { "a": 1_i32, "b": { "c": [1_i64, "x"] } });
        let b = Bson::Document(doc! { "b": { "c": [1.0, "x"] }, "a": 1_i64 });
        assert!(same_bson(&a, &b));
        let c = Bson::Document(doc! { "b": { "c": ["x", 1.0] }, "a": 1_i64 });
        assert!(!same_bson(&a, &c));
        let d = Bson::Document(doc! { "a": 1_i32 });
        assert!(!same_bson(&a, &d));
        // `required` is a set; any other array keeps its order.
        let x = doc! { "$jsonSchema": { "required": ["a", "b"], "enum": [1, 2] } };
        assert!(same_validator(&x, &doc! { "$jsonSchema": { "required": ["b", "a"], "enum": [1, 2] } }));
        assert!(!same_validator(&x, &doc! { "$jsonSchema": { "required": ["b", "a"], "enum": [2, 1] } }));
        assert!(!same_validator(&x, &doc! { "$jsonSchema": { "required": ["a"], "enum": [1, 2] } }));
    }

    fn ts_report() -> SyncReport {
        SyncReport { collection: "r".into(), changes: Vec::new(), notes: Vec::new(), owned: Vec::new() }
    }

    #[test]
    fn time_series_options_compare_as_mongod_reports_them() {
        let model = doc! {
            "timeseries": { "timeField": "t", "metaField": "m", "granularity": "minutes" },
            "expireAfterSeconds": 2_592_000_i64,
        };
        // mongod adds the span a granularity implies, and reports the expiry as a long.
        let server = doc! {
            "timeseries": { "timeField": "t", "metaField": "m", "granularity": "minutes", "bucketMaxSpanSeconds": 86_400 },
            "expireAfterSeconds": 2_592_000_i64,
        };
        let mut report = ts_report();
        plan_timeseries(&server, &model, &mut report);
        assert!(report.changes.is_empty() && report.notes.is_empty(), "{report}");
        // Coarser in the model: one collMod.
        let finer = doc! { "timeseries": { "timeField": "t", "metaField": "m", "granularity": "seconds", "bucketMaxSpanSeconds": 3_600 } };
        let mut report = ts_report();
        plan_timeseries(&finer, &model, &mut report);
        assert!(matches!(report.changes[..], [SyncChange::TimeSeriesChanged { .. }]), "{report}");
        // Finer in the model, or another meta field: refused.
        let coarser = doc! { "timeseries": { "timeField": "t", "metaField": "m", "granularity": "hours" }, "expireAfterSeconds": 2_592_000_i64 };
        let mut report = ts_report();
        plan_timeseries(&coarser, &model, &mut report);
        assert!(
            matches!(report.notes[..], [SyncNote::TimeSeriesDiffers { server: Some(_), .. }]),
            "{report}"
        );
        let other_meta =
            doc! { "timeseries": { "timeField": "t", "metaField": "device", "granularity": "minutes" } };
        let mut report = ts_report();
        plan_timeseries(&other_meta, &model, &mut report);
        assert!(matches!(report.notes[..], [SyncNote::TimeSeriesDiffers { .. }]), "{report}");
        // Defaults: no granularity in the model is mongod's `seconds` and an hour's span.
        let plain = doc! { "timeseries": { "timeField": "t" } };
        let server = doc! { "timeseries": { "timeField": "t", "granularity": "seconds", "bucketMaxSpanSeconds": 3_600 } };
        let mut report = ts_report();
        plan_timeseries(&server, &plain, &mut report);
        assert!(report.changes.is_empty() && report.notes.is_empty(), "{report}");
        // A server index on the meta field and the time is the collection's own,
        // whatever its name and direction.
        let keys = doc! { "m": 1, "t": 1 };
        assert!(is_timeseries_index(Some(&keys), &doc! { "key": { "m": 1, "t": -1 }, "name": "x" }));
        assert!(!is_timeseries_index(Some(&keys), &doc! { "key": { "t": 1, "m": 1 }, "name": "x" }));
        assert!(!is_timeseries_index(Some(&keys), &doc! { "key": { "m": 1 }, "name": "x" }));
        assert!(!is_timeseries_index(None, &doc! { "key": { "m": 1, "t": 1 }, "name": "x" }));
    }

    #[test]
    fn index_keys_are_ordered_and_options_default() {
        assert!(!same_keys(&doc! { "a": 1, "b": 1 }, &doc! { "b": 1, "a": 1 }));
        let model =
            doc! { "key": { "a": 1_i32 }, "name": "a_1", "collation": { "locale": "en", "strength": 2 } };
        let server = doc! {
            "v": 2, "key": { "a": 1.0 }, "name": "a_1", "unique": false,
            "collation": { "locale": "en", "strength": 2_i64, "caseLevel": false, "version": "57.1" },
        };
        assert!(same_index(&server, &model));
        let unique = doc! { "key": { "a": 1 }, "name": "a_1", "unique": true };
        assert!(!same_index(&server, &unique));
    }
}
