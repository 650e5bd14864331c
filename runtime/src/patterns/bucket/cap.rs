//! The per-period cap (`#[bucket(cap = N)]`): at most `N` items per series per period,
//! across all of that period's bucket documents.
//!
//! Counting the period's items at every append would take a read of every bucket of
//! the period, and two writers counting at once would both see room. Instead each
//! (series, period) has one counter document, in a collection of its own, and an
//! append first *reserves* its items' places in it with one conditional update:
//!
//! ```text
//! update { _id: <the period's first bucket id>, reserved: { $lte: cap - k } }
//!        { $inc: { reserved: k }, $setOnInsert: { start: <period start> } }
//!        upsert: true
//! ```
//!
//! The server applies it to the one document atomically, so the sum of all granted
//! reservations never passes `cap`, whatever the number of writers; items are appended
//! only after their reservation is granted, so the period never holds more than `cap`.
//! When the counter lacks room the upsert tries to insert a second document with the
//! same `_id` and fails with a duplicate-key error (11000), as it does when two writers
//! create the counter at once: one `find` tells which, and the reservation is retried
//! for what still fits (an empty period's counter is then there), or the append is
//! refused.
//!
//! The counter can only overstate what the buckets hold, never understate it: a
//! reservation whose items are then certainly not stored (the server refused their
//! update, or it was never sent) is given back; one whose items' fate is unknown (the
//! connection failed, the process died, the future was dropped between the two
//! updates) is kept. So the cap is never exceeded, and a crash can waste a slot.
//!
//! Why a collection of its own rather than a document among the buckets or a field
//! of the first bucket: the bucket collection's validator requires every field an
//! append writes (the count, the items, the aggregates), which a counter created
//! before the first item lacks, and a strict model admits no extra field. The counter
//! collection is `<bucket collection>_caps`, with its own validator.

use bson::{doc, Bson, DateTime, Document};
use mongodb::{ClientSession, Collection};

use super::error::BucketError;
use super::spec::Bucket;
use crate::core::append::{by_id, is_duplicate_key, stored_count, Appended};
use crate::core::model::eq;
use crate::core::spec::CollectionSpec;
use crate::core::trace;
use crate::core::transaction::with_session;

/// The counter's field of granted reservations.
pub(super) const RESERVED: &str = "reserved";
/// The counter's field holding the period's first instant, so old counters can be
/// found (and removed) by date.
pub(super) const START: &str = "start";

/// Give up after this many rounds of one reservation: each refused round means
/// another writer changed the counter in between, which no real contention repeats
/// this often.
const MAX_ATTEMPTS: usize = 10_000;

/// The name of the collection holding the cap counters of the bucket collection
/// `collection`.
///
/// ```
/// assert_eq!(docshape::bucket::cap_collection_name("sensor_days"), "sensor_days_caps");
/// ```
pub fn cap_collection_name(collection: &str) -> String {
    format!("{collection}_caps")
}

/// The validator of a cap counter collection: `{_id, start: date, reserved: long >= 0}`.
pub fn cap_validator() -> Document {
    doc! { "$jsonSchema": {
        "bsonType": "object",
        "required": ["_id", START, RESERVED],
        "properties": {
            START: { "bsonType": "date" },
            RESERVED: { "bsonType": "long", "minimum": 0_i64 },
        },
    } }
}

/// The collection spec of `B`'s cap counters: what the registry holds for it, so
/// `sync_all`, `check` and the artifacts cover it. Counters are found by `_id` only,
/// so the collection needs no index but `_id`'s.
pub fn cap_collection_spec<B: Bucket>() -> CollectionSpec {
    CollectionSpec {
        timeseries: None,
        name: cap_collection_name(B::COLLECTION),
        validator: cap_validator(),
        validation_level: crate::core::model::ValidationLevel::Strict,
        validation_action: crate::core::model::ValidationAction::Error,
        indexes: Vec::new(),
        shard_key: None,
    }
}

/// One (series, period) counter.
pub(super) struct Counter {
    pub collection: Collection<Document>,
    /// The period's first bucket id, which names the series and the period.
    pub id: Bson,
    /// The period's first instant.
    pub start: DateTime,
    pub cap: u32,
}

impl Counter {
    /// Reserves places for up to `want` items: the number granted, `want` or fewer
    /// (what is left under the cap), 0 when the period is at its cap.
    ///
    /// Progress: every refused round reads the counter and then either learns the
    /// period is full (the loop ends), or retries for what the count read leaves room
    /// for. A refused round whose count leaves room for the request and equals the
    /// count read after the previous refusal cannot be explained by other writers
    /// (they only move the count): the counter is corrupt, and the loop ends with
    /// [`BucketError::CorruptBucket`]. [`MAX_ATTEMPTS`] bounds the rest (counts that
    /// keep moving, up and down as reservations are given back).
    pub async fn reserve(&self, want: usize, report: &mut Appended) -> Result<usize, BucketError> {
        let span =
            trace::span!("bucket.reserve", collection = self.collection.name(), cap = self.cap, items = want);
        let before = (report.updates, report.finds);
        let granted = trace::in_span(span.clone(), self.reserve_inner(want, report)).await;
        span.in_scope(|| {
            trace::event!(
                DEBUG,
                granted = granted.as_ref().ok().copied(),
                updates = report.updates - before.0,
                finds = report.finds - before.1,
                "reserved"
            )
        });
        granted
    }

    /// [`Counter::reserve`] in `session`'s running transaction when given. There a
    /// refused write aborts the whole transaction, so the counter is read first and
    /// the places asked are those left (the guarded upsert then matches, or creates
    /// the counter); a concurrent reservation makes the transaction conflict, and its
    /// owner runs it again. Two commands instead of one.
    pub async fn reserve_in(
        &self,
        want: usize,
        report: &mut Appended,
        session: Option<&mut ClientSession>,
    ) -> Result<usize, BucketError> {
        let Some(session) = session else { return self.reserve(want, report).await };
        report.finds += 1;
        let (_, reserved) = self.read(Some(&mut *session)).await?;
        let ask = (want as i64).min(i64::from(self.cap) - reserved.unwrap_or(0));
        if ask <= 0 {
            return Ok(0);
        }
        let (filter, update) = self.statement(ask);
        report.updates += 1;
        self.collection.update_one(filter, update).upsert(true).hint(by_id()).session(&mut *session).await?;
        Ok(ask as usize)
    }

    /// The guarded upsert that reserves `ask` places: its filter matches only while
    /// the counter has room for all of them.
    fn statement(&self, ask: i64) -> (Document, Document) {
        let filter = doc! { "_id": eq(self.id.clone()), RESERVED: { "$lte": i64::from(self.cap) - ask } };
        let update = doc! { "$inc": { RESERVED: ask }, "$setOnInsert": { START: self.start } };
        (filter, update)
    }

    /// The counter as stored (`None`: there is none) and its places reserved, in
    /// `session` when given; a count that is not a whole number is
    /// [`BucketError::CorruptBucket`].
    async fn read(
        &self,
        mut session: Option<&mut ClientSession>,
    ) -> Result<(Option<Document>, Option<i64>), BucketError> {
        let find =
            self.collection.find_one(doc! { "_id": eq(self.id.clone()) }).projection(doc! { RESERVED: 1 });
        let current = with_session!(find, session)?;
        let reserved = match &current {
            None => None,
            Some(d) => Some(stored_count(d.get(RESERVED)).ok_or_else(|| self.corrupt(d.get(RESERVED)))?),
        };
        Ok((current, reserved))
    }

    async fn reserve_inner(&self, want: usize, report: &mut Appended) -> Result<usize, BucketError> {
        let cap = i64::from(self.cap);
        let mut ask = (want as i64).min(cap);
        let mut last_read: Option<Option<i64>> = None;
        for attempt in 1..=MAX_ATTEMPTS {
            if ask <= 0 {
                return Ok(0);
            }
            let (filter, update) = self.statement(ask);
            report.updates += 1;
            // Upserts that hit a duplicate key are retried by mongod (4.2+) only when the
            // filter is equalities on the unique index's fields; this one has a range
            // too, so the retry is ours.
            match self.collection.update_one(filter, update).upsert(true).hint(by_id()).await {
                Ok(_) => return Ok(ask as usize),
                Err(e) if is_duplicate_key(&e) => {
                    report.finds += 1;
                    // `None`: removed meanwhile (by an operator clearing old counters),
                    // and the next round creates it again.
                    let (current, count) = self.read(None).await?;
                    let room = cap - count.unwrap_or(0);
                    if room >= ask && last_read == Some(count) {
                        return Err(self.corrupt(current.as_ref().and_then(|d| d.get(RESERVED))));
                    }
                    trace::event!(DEBUG, attempt, asked = ask, room, "cap counter contended; retrying");
                    last_read = Some(count);
                    ask = (want as i64).min(room);
                }
                Err(e) => return Err(e.into()),
            }
        }
        trace::event!(WARN, attempts = MAX_ATTEMPTS, "gave up reserving under contention");
        Err(BucketError::Contention { id: self.id.clone() })
    }

    /// Gives back `n` places whose items were certainly not stored. Best effort: when
    /// it fails, the places stay reserved (the count overstates, the cap still holds),
    /// and the append's own error is the one reported. In `session` when given (a
    /// transaction's: they go back with its commit, and an abort takes back their
    /// reservation with them).
    pub async fn release_in(&self, n: usize, report: &mut Appended, mut session: Option<&mut ClientSession>) {
        if n == 0 {
            return;
        }
        let n = n as i64;
        report.updates += 1;
        let filter = doc! { "_id": eq(self.id.clone()), RESERVED: { "$gte": n } };
        let update = self.collection.update_one(filter, doc! { "$inc": { RESERVED: -n } });
        let released = with_session!(update, session);
        if let Err(e) = released {
            trace::event!(WARN, error = %e, released = n, "could not give back reserved places");
        }
    }

    fn corrupt(&self, found: Option<&Bson>) -> BucketError {
        let found = found.map_or("nothing".to_owned(), |c| format!("{c} ({:?})", c.element_type()));
        BucketError::CorruptBucket {
            id: Box::new(self.id.clone()),
            detail: format!(
                "its cap counter in `{}` holds {found} in `{RESERVED}`, which the reservation's filter cannot compare as intended",
                self.collection.name()
            ),
        }
    }
}
