//! The guarded append that bucket and outlier documents share: items pushed into a
//! sequence of bounded documents (`{_id: <base, seq>, count, items}`), each filled to
//! its bound by an upsert whose filter only matches while there is room, so that
//! concurrent writers never overfill one.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use bson::{doc, Bson, Document};

use crate::core::model::eq;
use crate::core::trace;

/// What an append did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Appended {
    /// Items written.
    pub items: usize,
    /// `update` commands sent (one per bucket in the common case).
    pub updates: usize,
    /// `find` commands sent to read a full bucket's count.
    pub finds: usize,
    /// Buckets created by these appends.
    pub created: usize,
}

/// Whether the error is a duplicate-key error (11000), however the driver wraps it.
pub(crate) fn is_duplicate_key(e: &mongodb::error::Error) -> bool {
    use mongodb::error::{ErrorKind, WriteFailure};
    match e.kind.as_ref() {
        ErrorKind::Write(WriteFailure::WriteError(w)) => w.code == 11000,
        ErrorKind::Command(c) => c.code == 11000,
        ErrorKind::InsertMany(i) => i.write_errors.iter().flatten().any(|w| w.code == 11000),
        // By code and label only: the message text is the server's to word.
        _ => e.contains_label("DuplicateKey"),
    }
}

/// Process-wide, per bucket base id: the open bucket's sequence number and a lower
/// bound of its count. Counts only grow, so a bound that reaches `max` proves the
/// bucket full, and the next append goes straight to the next bucket: a single
/// writer never sends more than one `update` per append. Only a hint: a stale one
/// costs an extra round trip, never correctness.
struct SeqHints(OnceLock<Mutex<HashMap<String, Hint>>>);

/// The open bucket's sequence number and a lower bound of its count.
type Hint = (u32, Option<i64>);

impl SeqHints {
    const fn new() -> Self {
        Self(OnceLock::new())
    }

    fn get(&self, key: &str) -> (u32, Option<i64>) {
        let map = self.0.get_or_init(Default::default);
        map.lock().map(|m| m.get(key).copied().unwrap_or((0, None))).unwrap_or((0, None))
    }

    /// Records that bucket `seq` holds at least `floor` items (when known).
    fn record(&self, key: &str, seq: u32, floor: Option<i64>) {
        let map = self.0.get_or_init(Default::default);
        if let Ok(mut m) = map.lock() {
            // Bounded memory: periods end, and a forgotten hint is only a round trip.
            if m.len() > 16_384 {
                m.clear();
            }
            let e = m.entry(key.to_owned()).or_insert((0, None));
            if seq > e.0 {
                *e = (seq, floor);
            } else if seq == e.0 {
                e.1 = match (e.1, floor) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    (a, b) => a.or(b),
                };
            }
        }
    }
}

static HINTS: SeqHints = SeqHints::new();

/// Give up after this many rounds for one call, whatever progress they made: no real
/// contention needs them (each round is one `update`, and most make progress).
const MAX_ATTEMPTS: usize = 10_000;

/// A stored count, read as the server compares it: any numeric BSON type holding a
/// whole number from 0 up. `None` for anything else (missing, a string, a fraction,
/// NaN), which the guarded filter can never match as intended.
pub(crate) fn stored_count(value: Option<&Bson>) -> Option<i64> {
    let whole = |f: f64| (f.is_finite() && f >= 0.0 && f.fract() == 0.0 && f < 9.0e18).then_some(f as i64);
    match value? {
        Bson::Int32(i) => (*i >= 0).then_some(i64::from(*i)),
        Bson::Int64(i) => (*i >= 0).then_some(*i),
        Bson::Double(d) => whole(*d),
        Bson::Decimal128(d) => d.to_string().parse::<f64>().ok().and_then(whole),
        _ => None,
    }
}

/// What a guarded append stored before it stopped, item by item in the order given:
/// the first `stored` items are in the documents listed, the next `in_doubt` were in
/// an `update` whose outcome is unknown (the connection failed), the rest were never
/// sent.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Ledger {
    /// `(document id, items)` per successful `update`, in order.
    pub writes: Vec<(Bson, usize)>,
    /// The document and item count of an `update` that may or may not have been applied.
    pub in_doubt: Option<(Bson, usize)>,
}

/// Whether a failed write was certainly not applied: the server answered and refused
/// it. Anything else (a dropped connection, a timeout) leaves it in doubt.
fn refused(e: &mongodb::error::Error) -> bool {
    use mongodb::error::ErrorKind;
    matches!(e.kind.as_ref(), ErrorKind::Write(_) | ErrorKind::Command(_) | ErrorKind::InvalidArgument { .. })
}

/// One bucket's worth of items on their way to a period: their BSON and the update
/// that appends them.
pub(crate) struct GuardedAppend<'a, E> {
    pub collection: mongodb::Collection<Document>,
    /// The hint key for this base id.
    pub hint_key: String,
    /// The id of the document with this sequence number.
    pub id_of: &'a (dyn Fn(u32) -> Result<Bson, E> + Sync),
    /// Fields set when the bucket is created.
    pub on_insert: Document,
    pub items_field: &'a str,
    pub count_field: &'a str,
    pub max: u32,
    /// Builds `$inc`/`$min`/`$max` for a slice of items, besides the count.
    pub extra: &'a (dyn Fn(&[Bson]) -> Result<Document, E> + Sync),
}

impl<E: From<mongodb::error::Error> + From<AppendContention> + From<CorruptCount>> GuardedAppend<'_, E> {
    /// Appends `items` (any number) to the open documents, filling each to `max`, and
    /// records each write in `ledger` as it is acknowledged.
    ///
    /// Progress argument: every round sends one `update` and then either stores items
    /// (`rest` shrinks), or learns that document `seq` is full (`seq` grows), or reads a
    /// count of `seq` larger than the last one read (counts only grow, up to `max`), or
    /// shrinks the chunk to the room left. A round that does none of these (the count
    /// read says the guarded filter should have matched, and it is the count read last
    /// time) cannot be explained by other writers: the document is corrupt, and the
    /// loop ends with [`CorruptCount`]. A count that is not a whole number ends it at
    /// once. [`MAX_ATTEMPTS`] bounds the rest.
    pub(crate) async fn run(
        &self,
        items: Vec<Bson>,
        report: &mut Appended,
        ledger: &mut Ledger,
    ) -> Result<(), E> {
        let span = trace::span!(
            "bucket.append",
            collection = self.collection.name(),
            base = self.hint_key.as_str(),
            items = items.len()
        );
        let before = report.clone();
        let outcome = trace::in_span(span.clone(), self.run_inner(items, report, ledger)).await;
        span.in_scope(|| {
            trace::event!(
                DEBUG,
                stored = report.items - before.items,
                updates = report.updates - before.updates,
                finds = report.finds - before.finds,
                created = report.created - before.created,
                ok = outcome.is_ok(),
                "appended"
            )
        });
        outcome
    }

    async fn run_inner(&self, items: Vec<Bson>, report: &mut Appended, ledger: &mut Ledger) -> Result<(), E> {
        let (mut seq, mut floor) = HINTS.get(&self.hint_key);
        let mut rest: &[Bson] = &items;
        // How many items the next attempt may carry: `max`, or what a document found
        // nearly full still has room for.
        let mut cap = self.max as usize;
        let mut attempts = 0;
        // The count read from document `seq` after its last refused update.
        let mut last_read: Option<Option<i64>> = None;
        while !rest.is_empty() {
            attempts += 1;
            if floor.is_some_and(|f| f >= i64::from(self.max)) {
                // Known full: the next items go straight to the next document.
                seq += 1;
                floor = None;
                last_read = None;
                HINTS.record(&self.hint_key, seq, None);
            }
            if let Some(f) = floor {
                cap = cap.min((i64::from(self.max) - f).max(1) as usize);
            }
            let id = (self.id_of)(seq)?;
            if attempts > MAX_ATTEMPTS {
                trace::event!(WARN, attempts = attempts - 1, seq, "gave up under contention");
                return Err(AppendContention { id }.into());
            }
            let (chunk, after) = rest.split_at(rest.len().min(cap));
            let k = chunk.len() as i64;
            let (filter, update) = self.statement(&id, chunk)?;
            report.updates += 1;
            match self.collection.update_one(filter, update).upsert(true).hint(by_id()).await {
                Ok(r) => {
                    report.items += chunk.len();
                    ledger.writes.push((id, chunk.len()));
                    rest = after;
                    if r.upserted_id.is_some() {
                        report.created += 1;
                    }
                    // The document held at least `floor` before and `k` more now.
                    floor = if r.upserted_id.is_some() { Some(k) } else { floor.map(|f| f + k) };
                    cap = self.max as usize;
                    last_read = None;
                    HINTS.record(&self.hint_key, seq, floor);
                }
                Err(e) if is_duplicate_key(&e) => {
                    // Full for `k` items, or another writer created it first: see how
                    // much room is left.
                    report.finds += 1;
                    let current = self
                        .collection
                        .find_one(doc! { "_id": eq(id.clone()) })
                        .projection(doc! { self.count_field: 1 })
                        .await?;
                    let count = match &current {
                        None => None,
                        Some(d) => match stored_count(d.get(self.count_field)) {
                            Some(c) => Some(c),
                            None => {
                                let found = d.get(self.count_field).map_or("nothing".to_owned(), |c| {
                                    format!("{c} ({:?})", c.element_type())
                                });
                                return Err(
                                    CorruptCount { id, field: self.count_field.to_owned(), found }.into()
                                );
                            }
                        },
                    };
                    let room = count.map_or(self.max as usize, |c| (i64::from(self.max) - c).max(0) as usize);
                    if room as i64 >= k && last_read == Some(count) {
                        // The filter should have matched, twice, and nothing changed.
                        let found = count.map_or("no document".to_owned(), |c| c.to_string());
                        return Err(CorruptCount { id, field: self.count_field.to_owned(), found }.into());
                    }
                    // A retry: full for these items, or created by another writer first.
                    trace::event!(DEBUG, seq, attempt = attempts, chunk = k, room, "contended; retrying");
                    last_read = Some(count);
                    floor = count;
                    HINTS.record(&self.hint_key, seq, floor);
                    cap = if room == 0 { self.max as usize } else { room };
                    if room == 0 {
                        floor = Some(i64::from(self.max));
                    }
                }
                Err(e) => {
                    if !refused(&e) {
                        ledger.in_doubt = Some((id, chunk.len()));
                    }
                    return Err(e.into());
                }
            }
        }
        Ok(())
    }
}

impl<E: From<mongodb::error::Error> + From<AppendContention> + From<CorruptCount>> GuardedAppend<'_, E> {
    /// The guarded upsert that appends `chunk` to document `id`: its filter matches
    /// only while the document has room for the whole chunk.
    fn statement(&self, id: &Bson, chunk: &[Bson]) -> Result<(Document, Document), E> {
        let k = chunk.len() as i64;
        let mut update = doc! {
            "$push": { self.items_field: { "$each": chunk.to_vec() } },
            "$setOnInsert": self.on_insert.clone(),
        };
        let mut extra = (self.extra)(chunk)?;
        let mut inc = match extra.remove("$inc") {
            Some(Bson::Document(d)) => d,
            _ => Document::new(),
        };
        inc.insert(self.count_field, Bson::Int32(k as i32));
        update.insert("$inc", inc);
        update.extend(extra);
        let filter = doc! { "_id": eq(id.clone()), self.count_field: { "$lte": i64::from(self.max) - k } };
        Ok((filter, update))
    }

    /// [`GuardedAppend::run`] in `session`'s running transaction. There a refused
    /// write aborts the whole transaction, so the append cannot learn that a document
    /// is full from its guarded upsert's refused insert: each document's count is
    /// read in the transaction first, and the chunk sent is what it has room for, so
    /// the upsert matches (or creates the document). A concurrent writer of the same
    /// document makes the transaction conflict instead (the server's write conflict,
    /// labelled transient), and its owner runs it again. Two commands per document
    /// written instead of one.
    ///
    /// Each document is read at most once per call, before this call writes to it: a
    /// count read is the committed one, so a document read full is full for good, and
    /// only that is recorded as a hint (where the next append starts); what this
    /// transaction writes is not, as it may still be aborted.
    ///
    /// Progress: every round either finds document `seq` full or fills it as far as
    /// the items go, and then `seq` grows or the items are all sent;
    /// [`MAX_ATTEMPTS`] bounds the rounds all the same. A count that is not a whole
    /// number ends it with [`CorruptCount`].
    pub(crate) async fn run_in(
        &self,
        items: Vec<Bson>,
        report: &mut Appended,
        ledger: &mut Ledger,
        session: &mut mongodb::ClientSession,
    ) -> Result<(), E> {
        let (mut seq, _) = HINTS.get(&self.hint_key);
        let mut rest: &[Bson] = &items;
        let mut rounds = 0;
        while !rest.is_empty() {
            rounds += 1;
            let id = (self.id_of)(seq)?;
            if rounds > MAX_ATTEMPTS {
                return Err(AppendContention { id }.into());
            }
            report.finds += 1;
            let current = self
                .collection
                .find_one(doc! { "_id": eq(id.clone()) })
                .projection(doc! { self.count_field: 1 })
                .session(&mut *session)
                .await?;
            let count = match &current {
                None => 0,
                Some(d) => match stored_count(d.get(self.count_field)) {
                    Some(c) => c,
                    None => {
                        let found = d
                            .get(self.count_field)
                            .map_or("nothing".to_owned(), |c| format!("{c} ({:?})", c.element_type()));
                        return Err(CorruptCount { id, field: self.count_field.to_owned(), found }.into());
                    }
                },
            };
            let room = (i64::from(self.max) - count).clamp(0, i64::from(self.max)) as usize;
            if room == 0 {
                seq += 1;
                HINTS.record(&self.hint_key, seq, None);
                continue;
            }
            let (chunk, after) = rest.split_at(rest.len().min(room));
            let (filter, update) = self.statement(&id, chunk)?;
            report.updates += 1;
            let r = self
                .collection
                .update_one(filter, update)
                .upsert(true)
                .hint(by_id())
                .session(&mut *session)
                .await?;
            report.items += chunk.len();
            ledger.writes.push((id, chunk.len()));
            if r.upserted_id.is_some() {
                report.created += 1;
            }
            rest = after;
            // Filled by this write: the next items go to the next document, unread.
            if chunk.len() == room {
                seq += 1;
            }
        }
        Ok(())
    }
}

/// The hint that keeps planners that would scan for `_id` plus another predicate (the
/// local test server does) on the `_id` index.
pub(crate) fn by_id() -> mongodb::options::Hint {
    mongodb::options::Hint::Name("_id_".to_owned())
}

/// The documents of a sequence kept filling up under other writers for far longer
/// than real contention explains; each pattern reports it with its own error.
#[derive(Debug)]
pub(crate) struct AppendContention {
    /// The last document id tried.
    pub id: Bson,
}

/// A document of the sequence whose count is not a whole number, or disagrees with
/// the guarded filter (another program wrote it around the validator); each pattern
/// reports it with its own error.
#[derive(Debug)]
pub(crate) struct CorruptCount {
    /// The document.
    pub id: Bson,
    /// The count field.
    pub field: String,
    /// What was found there.
    pub found: String,
}
