//! What an access pattern's `consistency` means on the wire (see [`Consistency`]).

use std::time::Duration;

use mongodb::options::{
    AggregateOptions, CountOptions, DeleteOptions, FindOneAndUpdateOptions, FindOneOptions, FindOptions,
    InsertOneOptions, ReadConcern, ReadPreference, ReadPreferenceOptions, SelectionCriteria, UpdateOptions,
    WriteConcern,
};

/// The smallest staleness MongoDB accepts for `maxStalenessSeconds`.
pub const MIN_MAX_STALENESS: Duration = Duration::from_secs(90);

/// An access pattern's consistency, parsed from its `consistency = "..."` words: the
/// read preference, read concern and write concern its queries carry, and why.
///
/// The vocabulary is closed; `#[derive(Model)]` refuses any other word at compile time.
///
/// | Words (case and spacing free) | Read preference | Read concern | Write concern | Why |
/// |---|---|---|---|---|
/// | `strong` | `primary` | `majority` | `majority` | a read sees only writes a majority holds, so nothing it returns is rolled back after a failover; writes are acknowledged by a majority, so the next strong read sees them |
/// | `strong (same doc)` | `primary` | none (the server's `local`) | `majority` | one document is changed atomically by one command; a `local` read on the primary sees the latest change to it, a `majority` read could lag behind it |
/// | `read-your-writes` | `primary` | none | none | every acknowledged write is on the primary, so a primary read sees it; with a causally consistent session it also survives a change of primary (the read carries `afterClusterTime`) |
/// | `eventual ok`, `eventual` | `secondaryPreferred` | none | none | any member may answer, so reads spread over the secondaries; with `(≤ 90s)` a secondary further behind than that is not asked (`maxStalenessSeconds`) |
/// | (omitted) | nothing sent | nothing sent | nothing sent | the client's, database's or collection's own settings apply (the driver's default is `primary`) |
///
/// MongoDB requires `maxStalenessSeconds` of at least 90 seconds (a secondary's lag is
/// only known to within the heartbeat and the primary's idle-write period), so a
/// smaller staleness is a compile error.
///
/// A `$readPreference` reaches the server only when the topology needs it: the driver
/// leaves it out for a standalone server and for `primary` on a replica set, and sends
/// `primaryPreferred` for `primary` over a direct connection. Inside a
/// transaction the transaction's own concerns apply and the read preference must be
/// `primary`, so run `eventual` patterns outside transactions.
///
/// Read-your-writes with a session:
///
/// ```no_run
/// # use docshape::access::Consistency;
/// # use docshape::bson::{doc, Document};
/// # async fn run(client: docshape::mongodb::Client) -> docshape::mongodb::error::Result<()> {
/// let coll = client.database("shop").collection::<Document>("orders");
/// let mut session = client.start_session().causal_consistency(true).await?;
/// coll.insert_one(doc! { "_id": "o_1" }).session(&mut session).await?;
/// let options = Consistency::ReadYourWrites.apply_find(Default::default());
/// // The read carries `lsid` and `readConcern.afterClusterTime`: it waits for the insert.
/// let mut cursor = coll.find(doc! { "_id": "o_1" }).with_options(options).session(&mut session).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Consistency {
    /// `strong`: primary, majority read concern, majority writes.
    Strong,
    /// `strong (same doc)`: primary; the guarantee is one document's atomicity; majority
    /// writes.
    StrongSameDoc,
    /// `read-your-writes`: primary, or any read in a causally consistent session.
    ReadYourWrites,
    /// `eventual ok` / `eventual`: secondaries preferred, no older than `max_staleness`
    /// when given (at least [`MIN_MAX_STALENESS`]).
    Eventual {
        /// `maxStalenessSeconds`, from `eventual (≤ 90s)`.
        max_staleness: Option<Duration>,
    },
    /// No `consistency` declared: nothing is sent, the client's settings apply.
    #[default]
    Unspecified,
}

impl Consistency {
    /// The read preference its reads carry, or `None` to keep the client's.
    pub fn selection_criteria(&self) -> Option<SelectionCriteria> {
        let preference = match self {
            Self::Strong | Self::StrongSameDoc | Self::ReadYourWrites => ReadPreference::Primary,
            Self::Eventual { max_staleness } => ReadPreference::SecondaryPreferred {
                options: max_staleness.map(|d| ReadPreferenceOptions::builder().max_staleness(d).build()),
            },
            Self::Unspecified => return None,
        };
        Some(SelectionCriteria::ReadPreference(preference))
    }

    /// The read concern its reads carry, or `None` for the server's default (`local`).
    pub fn read_concern(&self) -> Option<ReadConcern> {
        match self {
            Self::Strong => Some(ReadConcern::majority()),
            _ => None,
        }
    }

    /// The write concern its writes carry, or `None` to keep the client's.
    pub fn write_concern(&self) -> Option<WriteConcern> {
        match self {
            Self::Strong | Self::StrongSameDoc => Some(WriteConcern::majority()),
            _ => None,
        }
    }

    /// `options` with this consistency's read preference and read concern; what it does
    /// not specify is left as the caller set it.
    pub fn apply_find(&self, mut options: FindOptions) -> FindOptions {
        set(&mut options.selection_criteria, self.selection_criteria());
        set(&mut options.read_concern, self.read_concern());
        options
    }

    /// As [`Consistency::apply_find`], for `find_one`.
    pub fn apply_find_one(&self, mut options: FindOneOptions) -> FindOneOptions {
        set(&mut options.selection_criteria, self.selection_criteria());
        set(&mut options.read_concern, self.read_concern());
        options
    }

    /// As [`Consistency::apply_find`], for `count_documents`.
    pub fn apply_count(&self, mut options: CountOptions) -> CountOptions {
        set(&mut options.selection_criteria, self.selection_criteria());
        set(&mut options.read_concern, self.read_concern());
        options
    }

    /// As [`Consistency::apply_find`], for `aggregate`.
    pub fn apply_aggregate(&self, mut options: AggregateOptions) -> AggregateOptions {
        set(&mut options.selection_criteria, self.selection_criteria());
        set(&mut options.read_concern, self.read_concern());
        options
    }

    /// `options` with this consistency's write concern, for `update_one`/`update_many`
    /// (writes always go to the primary).
    pub fn apply_update(&self, mut options: UpdateOptions) -> UpdateOptions {
        set(&mut options.write_concern, self.write_concern());
        options
    }

    /// As [`Consistency::apply_update`], for `find_one_and_update`.
    pub fn apply_find_one_and_update(&self, mut options: FindOneAndUpdateOptions) -> FindOneAndUpdateOptions {
        set(&mut options.write_concern, self.write_concern());
        options
    }

    /// As [`Consistency::apply_update`], for `insert_one`.
    pub fn apply_insert_one(&self, mut options: InsertOneOptions) -> InsertOneOptions {
        set(&mut options.write_concern, self.write_concern());
        options
    }

    /// As [`Consistency::apply_update`], for `delete_one`/`delete_many`.
    pub fn apply_delete(&self, mut options: DeleteOptions) -> DeleteOptions {
        set(&mut options.write_concern, self.write_concern());
        options
    }

    /// What reaches the server, in words (`"primary, readConcern majority"`).
    pub fn wire(&self) -> String {
        match self {
            Self::Strong => "primary, readConcern majority, w: majority".to_owned(),
            Self::StrongSameDoc => "primary, w: majority".to_owned(),
            Self::ReadYourWrites => "primary (or a causally consistent session)".to_owned(),
            Self::Eventual { max_staleness: None } => "secondaryPreferred".to_owned(),
            Self::Eventual { max_staleness: Some(d) } => {
                format!("secondaryPreferred, maxStalenessSeconds {}", d.as_secs())
            }
            Self::Unspecified => "the client's defaults".to_owned(),
        }
    }
}

fn set<T>(slot: &mut Option<T>, value: Option<T>) {
    if value.is_some() {
        *slot = value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_word_maps_to_its_concerns() {
        let primary = Some(SelectionCriteria::ReadPreference(ReadPreference::Primary));
        assert_eq!(Consistency::Strong.selection_criteria(), primary);
        assert_eq!(Consistency::Strong.read_concern(), Some(ReadConcern::majority()));
        assert_eq!(Consistency::Strong.write_concern(), Some(WriteConcern::majority()));
        assert_eq!(Consistency::StrongSameDoc.selection_criteria(), primary);
        assert_eq!(Consistency::StrongSameDoc.read_concern(), None);
        assert_eq!(Consistency::ReadYourWrites.selection_criteria(), primary);
        assert_eq!(Consistency::ReadYourWrites.write_concern(), None);
        let stale = Consistency::Eventual { max_staleness: Some(Duration::from_secs(120)) };
        match stale.selection_criteria() {
            Some(SelectionCriteria::ReadPreference(ReadPreference::SecondaryPreferred { options })) => {
                assert_eq!(options.and_then(|o| o.max_staleness), Some(Duration::from_secs(120)));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(Consistency::Unspecified.selection_criteria(), None);
        assert_eq!(Consistency::Unspecified.read_concern(), None);
    }

    #[test]
    fn unspecified_keeps_what_the_caller_set() {
        let mut options = FindOptions::default();
        options.read_concern = Some(ReadConcern::local());
        let options = Consistency::Unspecified.apply_find(options);
        assert_eq!(options.read_concern, Some(ReadConcern::local()));
        assert!(options.selection_criteria.is_none());
        let options = Consistency::Strong.apply_find(options);
        assert_eq!(options.read_concern, Some(ReadConcern::majority()));
    }
}
