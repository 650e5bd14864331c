//! What `sync` did or would do to one collection: its changes, the differences it
//! left alone, and how both read in a log line.

use std::fmt;

use bson::Document;

use crate::core::model::{ValidationAction, ValidationLevel};

/// One change [`sync`](fn@super::sync) makes (or, in a [`SyncPlan`](super::SyncPlan), would make).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SyncChange {
    /// The collection did not exist and was created with its validator.
    CreatedCollection,
    /// The time-series collection did not exist and was created with the model's
    /// options (`{timeseries, expireAfterSeconds}`); mongod takes no validator on one.
    CreatedTimeSeries {
        /// The options it was created with.
        options: Document,
    },
    /// The validator differed and was replaced; `before` is what the server had.
    ValidatorChanged {
        /// The validator the server had, if any.
        before: Option<Document>,
    },
    /// The validation level differed and was set.
    ValidationLevelChanged {
        /// The server's level before.
        before: String,
        /// The level now.
        after: ValidationLevel,
    },
    /// The validation action differed and was set.
    ValidationActionChanged {
        /// The server's action before.
        before: String,
        /// The action now.
        after: ValidationAction,
    },
    /// An index the model declares was created.
    CreatedIndex {
        /// Its name.
        name: String,
    },
    /// An index whose keys or options differed was dropped and recreated
    /// ([`SyncOptions::rebuild_changed_indexes`](super::SyncOptions::rebuild_changed_indexes)).
    RebuiltIndex {
        /// The name of the index that was dropped.
        dropped: String,
        /// The name of the index created instead.
        created: String,
    },
    /// An index the model does not declare was dropped ([`SyncOptions::drop_extra_indexes`](super::SyncOptions::drop_extra_indexes)).
    DroppedIndex {
        /// Its name.
        name: String,
    },
    /// The collection was sharded on the model's shard key.
    ShardedCollection {
        /// The shard key.
        key: Document,
    },
    /// A time-series collection's changeable options differed and were set
    /// (`collMod`): a coarser granularity or bucket span, or another
    /// `expireAfterSeconds`. Both sides as `{timeseries, expireAfterSeconds}`.
    TimeSeriesChanged {
        /// The server's options before.
        before: Document,
        /// The model's options now.
        after: Document,
    },
}

/// A difference [`sync`](fn@super::sync) found and left alone.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SyncNote {
    /// The server has an index the model does not declare; set
    /// [`SyncOptions::drop_extra_indexes`](super::SyncOptions::drop_extra_indexes) to drop it.
    ExtraIndex {
        /// Its name.
        name: String,
        /// Its definition on the server.
        spec: Document,
    },
    /// An index differs from the model's (keys or options, or the same keys under
    /// another name); set [`SyncOptions::rebuild_changed_indexes`](super::SyncOptions::rebuild_changed_indexes) to rebuild it.
    ChangedIndex {
        /// The model's name for it.
        name: String,
        /// The server's index it conflicts with.
        server: Document,
        /// What the model declares.
        model: Document,
    },
    /// A unique index the plan creates or rebuilds would meet documents that share
    /// its key: its build would fail. A rebuild is then refused before the index it
    /// replaces is dropped ([`Error::IndexNotRebuilt`](crate::Error::IndexNotRebuilt)).
    UniqueMeetsDuplicates {
        /// The model's name for the index.
        name: String,
        /// One key value stored more than once (the index's fields, in its order).
        key: Document,
        /// How many documents hold that value.
        count: i64,
    },
    /// A shard key is declared but the deployment is not sharded, so there is nothing
    /// to shard.
    NotSharded {
        /// The declared key.
        key: Document,
    },
    /// The model declares a time-series collection and the server's collection is a
    /// plain one (`server` is `None`), or a time-series collection whose time or meta
    /// field differs, or whose buckets are finer than the model's: none of these can
    /// change in place, so [`SyncPlan::apply`](super::SyncPlan::apply) refuses to touch the collection
    /// ([`Error::NotTimeSeries`](crate::Error::NotTimeSeries), [`Error::TimeSeriesDiffers`](crate::Error::TimeSeriesDiffers)).
    TimeSeriesDiffers {
        /// The server's `{timeseries, expireAfterSeconds}` options; `None` for a plain
        /// collection.
        server: Option<Document>,
        /// The model's.
        model: Document,
    },
    /// The collection is sharded on another key, which MongoDB cannot change in place.
    ShardKeyDiffers {
        /// The server's key.
        server: Document,
        /// The model's key.
        model: Document,
    },
}

/// What [`sync`](fn@super::sync) did to one collection, or what [`plan`](fn@super::plan) says it would do.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SyncReport {
    /// The collection's name.
    pub collection: String,
    /// Each change, in the order it is applied; empty when the collection matched.
    pub changes: Vec<SyncChange>,
    /// Differences left alone.
    pub notes: Vec<SyncNote>,
    /// The collections the model owns besides its own, synced with it by [`sync`](fn@super::sync)
    /// (a capped bucket's counters, outlier overflow collections); empty from
    /// [`sync_spec`](fn@super::sync_spec) and [`sync_all`](fn@super::sync_all), which list every collection on its own.
    pub owned: Vec<SyncReport>,
}

impl SyncReport {
    /// Whether the collection, and those it owns, already matched the model (notes
    /// aside).
    pub fn is_unchanged(&self) -> bool {
        self.changes.is_empty() && self.owned.iter().all(SyncReport::is_unchanged)
    }
}

impl fmt::Display for SyncChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::CreatedCollection => f.write_str("created the collection with its validator"),
            Self::CreatedTimeSeries { options } => write!(f, "created the time-series collection {options}"),
            Self::ValidatorChanged { before: None } => f.write_str("added a validator"),
            Self::ValidatorChanged { before: Some(_) } => f.write_str("replaced the validator"),
            Self::ValidationLevelChanged { before, after } => {
                write!(f, "validationLevel {before} -> {after}")
            }
            Self::ValidationActionChanged { before, after } => {
                write!(f, "validationAction {before} -> {after}")
            }
            Self::CreatedIndex { name } => write!(f, "created index {name}"),
            Self::RebuiltIndex { dropped, created } => {
                write!(f, "rebuilt index {dropped} as {created} (through a bridge index {dropped}__bridge)")
            }
            Self::DroppedIndex { name } => write!(f, "dropped index {name}"),
            Self::ShardedCollection { key } => write!(f, "sharded on {key}"),
            Self::TimeSeriesChanged { before, after } => {
                write!(f, "time-series options {before} -> {after} (collMod)")
            }
        }
    }
}

impl fmt::Display for SyncNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ExtraIndex { name, spec } => write!(
                f,
                "index {name} {} is not in the model; left in place (drop it with SyncOptions::drop_extra_indexes)",
                spec.get("key").map(ToString::to_string).unwrap_or_default()
            ),
            Self::ChangedIndex { name, server, model } => write!(
                f,
                "index {name} differs: server has {server}, model declares {model}; left in place (rebuild with SyncOptions::rebuild_changed_indexes)"
            ),
            Self::UniqueMeetsDuplicates { name, key, count } => write!(
                f,
                "unique index {name} would meet {count} documents sharing {key}; remove the duplicates first (a rebuild is refused before anything is dropped)"
            ),
            Self::NotSharded { key } => write!(f, "shard key {key} declared; the deployment is not sharded"),
            Self::TimeSeriesDiffers { server: None, model } => write!(
                f,
                "the model declares a time-series collection {model}, the server has a plain collection; create a new one and copy the documents (nothing is changed)"
            ),
            Self::TimeSeriesDiffers { server: Some(server), model } => write!(
                f,
                "time-series options differ: server has {server}, model declares {model}; they cannot change in place: migrate into a new collection (nothing is changed)"
            ),
            Self::ShardKeyDiffers { server, model } => {
                write!(f, "sharded on {server}, but the model declares {model}; reshard by hand")
            }
        }
    }
}

impl fmt::Display for SyncReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.collection)?;
        if self.changes.is_empty() {
            f.write_str("unchanged")?;
        }
        for (i, change) in self.changes.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{change}")?;
        }
        for note in &self.notes {
            write!(f, "; note: {note}")?;
        }
        for owned in &self.owned {
            write!(f, "; {owned}")?;
        }
        Ok(())
    }
}
