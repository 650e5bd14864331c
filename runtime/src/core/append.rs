//! The guarded append that bucket and outlier documents share: items pushed into a
//! sequence of bounded documents (`{_id: <base, seq>, count, items}`), each filled to
//! its bound by an upsert whose filter only matches while there is room, so that
//! concurrent writers never overfill one.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use bson::{doc, Bson, Document};

use crate::core::model::eq;

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
fn is_duplicate_key(e: &mongodb::error::Error) -> bool {
    use mongodb::error::{ErrorKind, WriteFailure};
    match e.kind.as_ref() {
        ErrorKind::Write(WriteFailure::WriteError(w)) => w.code == 11000,
        ErrorKind::Command(c) => c.code == 11000,
        ErrorKind::InsertMany(i) => i.write_errors.iter().flatten().any(|w| w.code == 11000),
        _ => e.contains_label("DuplicateKey") || e.to_string().contains("E11000"),
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

/// Give up after this many full buckets in a row for one chunk.
const MAX_ATTEMPTS: usize = 10_000;

/// One bucket's worth of items on their way to a period: their BSON and the update
/// that appends them.
pub(crate) struct GuardedAppend<'a, E> {
    pub collection: mongodb::Collection<Document>,
    /// The hint key for this base id.
    pub hint_key: String,
    /// The id of the bucket with this sequence number.
    pub id_of: &'a (dyn Fn(u32) -> Bson + Sync),
    /// Fields set when the bucket is created.
    pub on_insert: Document,
    pub items_field: &'a str,
    pub count_field: &'a str,
    pub max: u32,
    /// Builds `$inc`/`$min`/`$max` for a slice of items, besides the count.
    pub extra: &'a (dyn Fn(&[Bson]) -> Result<Document, E> + Sync),
}

impl<E: From<mongodb::error::Error> + From<AppendContention>> GuardedAppend<'_, E> {
    /// Appends `items` (any number) to the open buckets, filling each to `max`.
    pub(crate) async fn run(&self, items: Vec<Bson>, report: &mut Appended) -> Result<(), E> {
        let (mut seq, mut floor) = HINTS.get(&self.hint_key);
        let mut rest: &[Bson] = &items;
        // How many items the next attempt may carry: `max`, or what a bucket found
        // nearly full still has room for.
        let mut cap = self.max as usize;
        let mut attempts = 0;
        while !rest.is_empty() {
            attempts += 1;
            if floor.is_some_and(|f| f >= i64::from(self.max)) {
                // Known full: the next items go straight to the next bucket.
                seq += 1;
                floor = None;
                HINTS.record(&self.hint_key, seq, None);
            }
            if let Some(f) = floor {
                cap = cap.min((i64::from(self.max) - f) as usize);
            }
            let id = (self.id_of)(seq);
            if attempts > MAX_ATTEMPTS {
                return Err(AppendContention { id }.into());
            }
            let (chunk, after) = rest.split_at(rest.len().min(cap));
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
            let filter =
                doc! { "_id": eq(id.clone()), self.count_field: { "$lte": i64::from(self.max) - k } };
            report.updates += 1;
            // The hint keeps planners that would scan for `_id` plus another
            // predicate (the local test server does) on the `_id` index.
            let hint = mongodb::options::Hint::Name("_id_".to_owned());
            match self.collection.update_one(filter, update).upsert(true).hint(hint).await {
                Ok(r) => {
                    report.items += chunk.len();
                    rest = after;
                    if r.upserted_id.is_some() {
                        report.created += 1;
                    }
                    // The bucket held at least `floor` before and `k` more now.
                    floor = if r.upserted_id.is_some() { Some(k) } else { floor.map(|f| f + k) };
                    cap = self.max as usize;
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
                    let count = current
                        .as_ref()
                        .and_then(|d| d.get(self.count_field))
                        .and_then(|c| c.as_i32().map(i64::from).or_else(|| c.as_i64()))
                        .unwrap_or(0);
                    let room = (i64::from(self.max) - count).max(0) as usize;
                    floor = current.is_some().then_some(count);
                    HINTS.record(&self.hint_key, seq, floor);
                    if current.is_some() && room == 0 {
                        cap = self.max as usize;
                    } else if room > 0 {
                        // Fill what is left here; the rest goes on after. (Room for
                        // all of it means another writer's insert won the race.)
                        cap = room;
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}

/// The documents of a sequence kept filling up under other writers for far longer
/// than real contention explains; each pattern reports it with its own error.
#[derive(Debug)]
pub(crate) struct AppendContention {
    /// The last document id tried.
    pub id: Bson,
}
