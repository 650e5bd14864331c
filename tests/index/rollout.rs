//! A rolling deploy's two releases of one model: version 2 syncs, then an instance of
//! the release before it (no schema version) runs its startup `sync`. That sync would
//! install the older validator, which refuses every version-2 document (code 121), so
//! it is refused and changes nothing; a deliberate rollback passes
//! `allow_older_schema`. The two releases are two modules, as two builds of the service
//! would be; each is synced under the one collection name through its spec.

use docshape::bson::doc;
use docshape::sync::SyncOptions;
use docshape::{Error, Model};
use docshape_testkit as testkit;

mod release1 {
    use docshape::Model;
    use serde::{Deserialize, Serialize};

    /// The first release: a name, no schema version.
    #[derive(Debug, Clone, Serialize, Deserialize, Model)]
    #[model(collection = "rollout_accounts_v1")]
    pub struct Account {
        #[serde(rename = "_id")]
        pub id: String,
        pub name: String,
    }
}

mod release2 {
    use docshape::Model;
    use serde::{Deserialize, Serialize};

    /// The second release: the name became `display_name`, at schema version 2.
    #[derive(Debug, Clone, Serialize, Deserialize, Model)]
    #[model(collection = "rollout_accounts_v2", version = 2, migrate(v1 = AccountV1))]
    pub struct Account {
        #[serde(rename = "_id")]
        pub id: String,
        pub display_name: String,
        #[schema_version]
        pub schema_version: i32,
    }

    /// Version 1's shape.
    #[derive(Debug, Clone, Serialize, Deserialize, docshape::Embedded)]
    pub struct AccountV1 {
        #[serde(rename = "_id")]
        pub id: String,
        pub name: String,
    }

    impl From<AccountV1> for Account {
        fn from(v1: AccountV1) -> Self {
            Account { id: v1.id, display_name: v1.name, schema_version: 2 }
        }
    }
}

const COLLECTION: &str = "rollout_accounts";

fn spec<T: Model>() -> docshape::sync::CollectionSpec {
    let mut spec = docshape::sync::CollectionSpec::of::<T>();
    spec.name = COLLECTION.to_owned();
    spec
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_releases_sync_does_not_take_the_validator_back() {
    let db = testkit::database("rollout").await.unwrap();
    let (old, new) = (spec::<release1::Account>(), spec::<release2::Account>());
    docshape::sync::sync_spec(&db, &old, SyncOptions::default()).await.unwrap();
    docshape::sync::sync_spec(&db, &new, SyncOptions::default()).await.unwrap();
    let accounts = db.collection::<docshape::bson::Document>(COLLECTION);
    accounts.insert_one(doc! { "_id": "a", "display_name": "Ann", "schema_version": 2 }).await.unwrap();

    // The old release's startup sync, and its dry run: refused, typed, nothing changed.
    let err = docshape::sync::sync_spec(&db, &old, SyncOptions::default()).await.unwrap_err();
    match &err {
        Error::OlderSchema { collection, server: 2, code: None } => assert_eq!(collection, COLLECTION),
        other => panic!("expected OlderSchema, got {other}"),
    }
    assert!(err.to_string().contains("--allow-older-schema"), "{err}");
    assert!(matches!(
        docshape::sync::plan_spec(&db, &old, SyncOptions::default()).await,
        Err(Error::OlderSchema { .. })
    ));
    // The new release still writes.
    accounts.insert_one(doc! { "_id": "b", "display_name": "Bob", "schema_version": 2 }).await.unwrap();
    // `check` from the old release reports the difference instead of failing.
    let report = docshape::check::check_spec(&db, &old).await.unwrap();
    assert!(!report.is_clean(), "{report}");

    // A deliberate rollback installs it; the newer release's sync takes it back.
    let rollback = SyncOptions::default().allow_older_schema(true);
    docshape::sync::sync_spec(&db, &old, rollback).await.unwrap();
    let refused = accounts.insert_one(doc! { "_id": "c", "display_name": "Cy", "schema_version": 2 }).await;
    assert!(refused.is_err(), "the old validator refuses version 2, which is why the default refuses it");
    docshape::sync::sync_spec(&db, &new, SyncOptions::default()).await.unwrap();
    accounts.insert_one(doc! { "_id": "c", "display_name": "Cy", "schema_version": 2 }).await.unwrap();
    // Syncing the same release again changes nothing and is allowed.
    let again = docshape::sync::sync_spec(&db, &new, SyncOptions::default()).await.unwrap();
    assert!(again.changes.is_empty(), "{again:?}");
}
