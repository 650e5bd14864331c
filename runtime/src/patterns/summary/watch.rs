//! The summaries' watcher: writes made around docshape reach the summaries through
//! the source's change stream, as jobs in the refresh queue.

use std::time::Duration;

use bson::{doc, Document};
use futures_util::TryStreamExt;
use mongodb::change_stream::event::{ChangeStreamEvent, OperationType, ResumeToken};
use mongodb::Database;

use super::jobs::queue;
use super::spec::{summaries, SummarySpec};
use super::{SummaryError, LEDGER};

/// Follows the change streams of every summarized source collection and queues each
/// changed document for its summaries in the refresh queue
/// ([`crate::denormalized::Worker`] applies them). The
/// ledger makes pre-images unnecessary: a document's old contribution is its record,
/// so an update, a replace and a delete are all "queue this `_id`".
///
/// Its position per source is saved in [`LEDGER`] (`_id: {watch: <name>, source}`)
/// after the changes before it were queued: a watcher stopped anywhere resumes
/// there, queueing a change twice at worst (harmless: the second application finds a
/// delta of zero). With no saved position (its first start), or one the server cannot
/// resume from, it opens its stream, then queues every source document and every
/// recorded one (a resync: each is applied against its record), then saves the
/// position.
#[derive(Debug, Clone)]
pub struct Watcher {
    db: Database,
    name: String,
    max_await: Duration,
}

/// What a [`Watcher`] run did.
#[derive(Debug, Default, Clone)]
#[non_exhaustive]
pub struct SummaryWatch {
    /// Changes read.
    pub changes: u64,
    /// Jobs queued for them.
    pub queued: u64,
    /// Source collections resynced (first start, lost position, or a dropped source).
    pub resyncs: u64,
}

type Events = mongodb::change_stream::ChangeStream<ChangeStreamEvent<Document>>;

impl Watcher {
    /// A watcher named `"summary"` on `db`.
    pub fn new(db: &Database) -> Self {
        Watcher { db: db.clone(), name: "summary".into(), max_await: Duration::from_millis(200) }
    }

    /// The name its positions are saved under (one per running watcher).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Runs until `stop` resolves; then saves its positions and returns.
    pub async fn run_until<F: std::future::Future<Output = ()>>(
        &self,
        stop: F,
    ) -> Result<SummaryWatch, SummaryError> {
        let mut report = SummaryWatch::default();
        let mut sources: Vec<&'static str> = summaries().iter().map(|s| s.source).collect();
        sources.sort_unstable();
        sources.dedup();
        let mut streams = Vec::new();
        for &source in &sources {
            streams.push((source, self.open(source, &mut report).await?));
        }
        tokio::pin!(stop);
        loop {
            let (mut idle, mut stopped) = (true, false);
            for (source, stream) in streams.iter_mut() {
                let source: &'static str = source;
                let next = tokio::select! {
                    _ = &mut stop => { stopped = true; break; }
                    next = stream.next_if_any() => next,
                };
                let err = |error| SummaryError::Mongo { summary: source, error };
                let Some(event) = next.map_err(err)? else {
                    let token = stream.resume_token();
                    self.save(source, token).await?;
                    continue;
                };
                idle = false;
                report.changes += 1;
                use OperationType::{Drop, DropDatabase, Invalidate, Rename};
                if matches!(event.operation_type, Invalidate | Drop | Rename | DropDatabase) {
                    *stream = self.resync(source, &mut report).await?;
                    continue;
                }
                if let Some(id) = event.document_key.as_ref().and_then(|k| k.get("_id")) {
                    for spec in summaries().into_iter().filter(|s| s.source == source) {
                        queue(&self.db, spec, id, None).await?;
                        report.queued += 1;
                    }
                }
                if report.changes % 64 == 0 {
                    let token = stream.resume_token();
                    self.save(source, token).await?;
                }
            }
            if !stopped && idle {
                tokio::select! {
                    _ = &mut stop => stopped = true,
                    _ = tokio::time::sleep(Duration::from_millis(20)) => {}
                }
            }
            if stopped {
                let positions: Vec<_> = streams.iter().map(|(s, st)| (*s, st.resume_token())).collect();
                for (source, token) in positions {
                    self.save(source, token).await?;
                }
                return Ok(report);
            }
        }
    }

    fn position(&self, source: &str) -> Document {
        doc! { "_id": { "watch": self.name.as_str(), "source": source } }
    }

    async fn save(&self, source: &'static str, token: Option<ResumeToken>) -> Result<(), SummaryError> {
        let Some(token) = token else { return Ok(()) };
        let token = crate::core::bson_compat::to_bson(&token)
            .map_err(|e| SummaryError::Decode { summary: source, detail: e.to_string() })?;
        self.db
            .collection::<Document>(LEDGER)
            .update_one(self.position(source), doc! { "$set": { "token": token } })
            .upsert(true)
            .await
            .map_err(|error| SummaryError::Mongo { summary: source, error })?;
        Ok(())
    }

    async fn open(&self, source: &'static str, report: &mut SummaryWatch) -> Result<Events, SummaryError> {
        let err = |error| SummaryError::Mongo { summary: source, error };
        let saved =
            self.db.collection::<Document>(LEDGER).find_one(self.position(source)).await.map_err(err)?;
        let token = saved
            .and_then(|d| d.get("token").cloned())
            .and_then(|t| crate::core::bson_compat::from_bson::<ResumeToken>(t).ok());
        if let Some(token) = token {
            if let Ok(stream) = self.stream(source, Some(token)).await {
                return Ok(stream);
            }
        }
        self.resync(source, report).await
    }

    async fn stream(
        &self,
        source: &'static str,
        token: Option<ResumeToken>,
    ) -> mongodb::error::Result<Events> {
        self.db
            .collection::<Document>(source)
            .watch()
            .resume_after(token)
            .max_await_time(self.max_await)
            .await
    }

    /// A stream opened now, then every source document and every recorded one
    /// queued, then the position saved.
    async fn resync(&self, source: &'static str, report: &mut SummaryWatch) -> Result<Events, SummaryError> {
        let err = |error| SummaryError::Mongo { summary: source, error };
        let stream = self.stream(source, None).await.map_err(err)?;
        for spec in summaries().into_iter().filter(|s| s.source == source) {
            report.queued += resync(&self.db, spec).await?;
        }
        report.resyncs += 1;
        self.save(source, stream.resume_token()).await?;
        Ok(stream)
    }
}

/// Queues every document of `spec`'s source and every document its ledger records
/// (one upsert each into the refresh queue): applied by a
/// [`crate::denormalized::Worker`], each one's contribution is brought in line with
/// the source, whatever was missed (a process that died between a source write and
/// its job, writes made while no watcher ran). Returns the number of jobs queued.
pub async fn resync(db: &Database, spec: &SummarySpec) -> Result<u64, SummaryError> {
    let err = |error| SummaryError::Mongo { summary: spec.collection, error };
    let mut n = 0;
    let mut ids = db
        .collection::<Document>(spec.source)
        .find(doc! {})
        .projection(doc! { "_id": 1 })
        .await
        .map_err(err)?;
    while let Some(d) = ids.try_next().await.map_err(err)? {
        if let Some(id) = d.get("_id") {
            queue(db, spec, id, None).await?;
            n += 1;
        }
    }
    let mut recorded = db
        .collection::<Document>(LEDGER)
        .find(doc! { "_id.s": spec.collection })
        .projection(doc! { "_id": 1 })
        .await
        .map_err(err)?;
    while let Some(d) = recorded.try_next().await.map_err(err)? {
        if let Some(id) = d.get_document("_id").ok().and_then(|i| i.get("id")) {
            queue(db, spec, id, None).await?;
            n += 1;
        }
    }
    Ok(n)
}
