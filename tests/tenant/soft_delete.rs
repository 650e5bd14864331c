//! Soft delete on a real server: every read row against live and deleted documents,
//! a unique key re-used after a delete, restore, and the TTL purge.

use std::time::{Duration, Instant};

use docshape::bson::{doc, Document};
use docshape::soft_delete::SoftDeleteError;
use docshape::Model;
use docshape_testkit as testkit;

use super::{project, Draft, Project};

/// The slugs a read returned, sorted.
fn slugs(items: &[Project]) -> Vec<String> {
    let mut out: Vec<String> = items.iter().map(|p| p.slug.clone()).collect();
    out.sort();
    out
}

/// Every read row against a live and a deleted project of one owner: the live rows
/// read, count and page the live one only; `include_deleted` reads both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_rows_leave_deleted_documents_out() {
    let db = testkit::database("tenant_soft_matrix").await.unwrap();
    docshape::sync::<Project>(&db).await.unwrap();
    let (live, gone) = (project("o1", "live", "ann", 1), project("o1", "gone", "ann", 2));
    Project::collection(&db).insert_many([&live, &gone]).await.unwrap();
    assert!(Project::delete_by_id("o1", gone.id).run(&db).await.unwrap());
    // Deleting again matches nothing: it is no live document any more.
    assert!(!Project::delete_by_id("o1", gone.id).run(&db).await.unwrap());
    let stored = Project::collection(&db).find_one(doc! { "_id": gone.id }).await.unwrap().unwrap();
    assert!(stored.deleted_at.is_some(), "a soft delete keeps the document and dates it");

    // (row, reads the live one, reads the deleted one)
    assert_eq!(Project::project("o1", live.id).one(&db).await.unwrap().map(|p| p.slug), Some("live".into()));
    assert_eq!(Project::project("o1", gone.id).one(&db).await.unwrap(), None);
    assert!(Project::project_by_slug("o1", "live").one(&db).await.unwrap().is_some());
    assert_eq!(Project::project_by_slug("o1", "gone").one(&db).await.unwrap(), None);
    let all = Project::projects_of_owner("o1", "ann").all(&db).await.unwrap();
    assert_eq!(slugs(&all), ["live"]);
    assert_eq!(Project::projects_of_owner("o1", "ann").count(&db).await.unwrap(), 1);
    let page = Project::owner_feed("o1", "ann").page_size(10).fetch(&db).await.unwrap();
    assert_eq!(slugs(&page.items), ["live"]);
    assert!(
        Project::any_project("o1", gone.id).one(&db).await.unwrap().is_some(),
        "include_deleted reads it"
    );
    assert!(Project::any_project("o1", live.id).one(&db).await.unwrap().is_some());
    // A write row writes live documents only.
    let err = Project::rename_project("o1", gone.id, "renamed").run(&db).await.unwrap_err();
    assert!(matches!(err, docshape::access::UpdateError::NotFound { .. }), "{err}");
    Project::rename_project("o1", live.id, "renamed").run(&db).await.unwrap();

    // Every live read command carries `{deleted_at: null}`, the unique indexes' partial filter.
    let find = Project::projects_of_owner("o1", "ann");
    assert_eq!(find.filter().unwrap().get("deleted_at"), Some(&docshape::bson::Bson::Null));
    let any = Project::any_project("o1", gone.id);
    assert_eq!(any.filter().unwrap().get("deleted_at"), None);
}

/// A deleted document does not block a new one with its unique key; restoring it
/// while the new one lives is refused by the server, and allowed once that one is
/// deleted in turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unique_keys_are_unique_among_live_documents_and_restore_brings_back() {
    let db = testkit::database("tenant_soft_unique").await.unwrap();
    docshape::sync::<Project>(&db).await.unwrap();
    let (first, second) = (project("o1", "same", "ann", 1), project("o1", "same", "bob", 2));
    Project::collection(&db).insert_one(&first).await.unwrap();
    let dup = Project::collection(&db).insert_one(&second).await.unwrap_err();
    assert!(dup.to_string().contains("E11000") || dup.to_string().contains("duplicate"), "{dup}");
    // Another tenant may use the slug: unique per tenant.
    Project::collection(&db).insert_one(project("o2", "same", "ann", 1)).await.unwrap();

    assert!(Project::delete_by_id("o1", first.id).run(&db).await.unwrap());
    Project::collection(&db).insert_one(&second).await.unwrap();
    assert_eq!(Project::project_by_slug("o1", "same").one(&db).await.unwrap().map(|p| p.id), Some(second.id));

    let refused = Project::restore_by_id("o1", first.id).run(&db).await.unwrap_err();
    assert!(matches!(refused, SoftDeleteError::Command(_)), "{refused}");
    assert!(Project::delete_by_id("o1", second.id).run(&db).await.unwrap());
    assert!(Project::restore_by_id("o1", first.id).run(&db).await.unwrap());
    // Restoring a live document matches nothing.
    assert!(!Project::restore_by_id("o1", first.id).run(&db).await.unwrap());
    let back = Project::project("o1", first.id).one(&db).await.unwrap().unwrap();
    assert_eq!((back.slug.as_str(), back.deleted_at), ("same", None));
    // Another tenant cannot delete or restore it.
    assert!(!Project::delete_by_id("o2", first.id).run(&db).await.unwrap());
    assert!(!Project::restore_by_id("o2", second.id).run(&db).await.unwrap());
    assert!(Project::any_project("o1", second.id).one(&db).await.unwrap().unwrap().deleted_at.is_some());
}

/// The TTL index on the deletion date purges a deleted draft (the server's TTL
/// monitor runs every minute, as mongod's does), and never a live one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttl_purges_deleted_documents() {
    let db = testkit::database("tenant_soft_ttl").await.unwrap();
    docshape::sync::<Draft>(&db).await.unwrap();
    let drafts = Draft::collection(&db);
    drafts
        .insert_many([
            Draft { id: 1, org_id: "o1".into(), deleted_at: None },
            Draft { id: 2, org_id: "o1".into(), deleted_at: None },
        ])
        .await
        .unwrap();
    assert!(Draft::delete_by_id("o1", 2).run(&db).await.unwrap());
    let raw = db.collection::<Document>(Draft::COLLECTION);
    let start = Instant::now();
    while raw.count_documents(doc! { "_id": 2 }).await.unwrap() == 1 {
        assert!(start.elapsed() < Duration::from_secs(150), "the deleted draft was never purged");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(Draft::draft("o1", 1).one(&db).await.unwrap().is_some(), "a live draft stays");
}

/// `explain` checks each row with the predicate the row sends: a live row's plan is
/// asked with `{deleted_at: null}` (what lets mongod use an index partial to live
/// documents, such as the unique slug index), an `include_deleted` row's without it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_asks_each_row_with_its_live_predicate() {
    let (db, log) = testkit::monitored("tenant_soft_explain").await.unwrap();
    docshape::sync::<Project>(&db).await.unwrap();
    assert!(Project::LIVE_ROWS.contains(&("projects_of_owner", "deleted_at")), "{:?}", Project::LIVE_ROWS);
    assert!(!Project::LIVE_ROWS.iter().any(|(row, _)| *row == "any_project"), "{:?}", Project::LIVE_ROWS);
    log.clear();
    let outcomes = docshape::access::explain_access_patterns::<Project>(&db).await.unwrap();
    let explained: Vec<Document> = log
        .take()
        .into_iter()
        .filter(|(name, _)| name == "explain")
        .map(|(_, command)| command.get_document("explain").unwrap().get_document("filter").unwrap().clone())
        .collect();
    assert_eq!(explained.len(), outcomes.len());
    for (outcome, filter) in outcomes.iter().zip(&explained) {
        let live = Project::LIVE_ROWS.iter().any(|(row, _)| *row == outcome.pattern);
        let asked = filter.get("deleted_at") == Some(&docshape::bson::Bson::Null);
        assert_eq!(asked, live, "{}: {filter}", outcome.pattern);
    }
    assert!(
        explained.iter().any(|f| f.get("deleted_at").is_none()),
        "the include_deleted row is explained too"
    );
}

/// A polymorphic soft-delete model: `delete_by_id` and `restore_by_id` serve every
/// variant.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, Model)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[model(collection = "tenant_events", tenant = org_id, soft_delete = deleted_at)]
#[index(keys(org_id, _id))]
#[access(name = "event", filter(org_id, _id))]
pub enum Event {
    Note {
        #[serde(rename = "_id")]
        id: i64,
        org_id: String,
        text: String,
        deleted_at: Option<docshape::bson::DateTime>,
    },
    Alert {
        #[serde(rename = "_id")]
        id: i64,
        org_id: String,
        level: i32,
        deleted_at: Option<docshape::bson::DateTime>,
    },
}

/// A generic soft-delete model: its `_id` parameter has the field's own type.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, Model)]
#[serde(bound(deserialize = ""))]
#[model(collection = "tenant_boxes", soft_delete = deleted_at)]
#[access(name = "boxed", filter(_id))]
pub struct Boxed<T>
where
    T: serde::Serialize + serde::de::DeserializeOwned + Send + Sync + 'static,
{
    #[serde(rename = "_id")]
    pub id: i64,
    pub value: T,
    pub deleted_at: Option<docshape::bson::DateTime>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polymorphic_and_generic_models_delete_and_restore() {
    let db = testkit::database("tenant_soft_shapes").await.unwrap();
    let note = Event::Note { id: 1, org_id: "o1".into(), text: "hi".into(), deleted_at: None };
    let alert = Event::Alert { id: 2, org_id: "o1".into(), level: 3, deleted_at: None };
    Event::collection(&db).insert_many([&note, &alert]).await.unwrap();
    assert!(!Event::delete_by_id("o2", 2_i64).run(&db).await.unwrap(), "another tenant's");
    assert!(Event::delete_by_id("o1", 2_i64).run(&db).await.unwrap());
    assert_eq!(Event::event("o1", 2_i64).one(&db).await.unwrap(), None);
    assert_eq!(Event::event("o1", 1_i64).one(&db).await.unwrap(), Some(note));
    assert!(Event::restore_by_id("o1", 2_i64).run(&db).await.unwrap());
    assert_eq!(Event::event("o1", 2_i64).one(&db).await.unwrap(), Some(alert));

    let boxed = Boxed { id: 7, value: "kept".to_owned(), deleted_at: None };
    Boxed::<String>::collection(&db).insert_one(&boxed).await.unwrap();
    assert!(Boxed::<String>::delete_by_id(7_i64).run(&db).await.unwrap());
    assert_eq!(Boxed::<String>::boxed(7_i64).one(&db).await.unwrap(), None);
    assert!(Boxed::<String>::restore_by_id(7_i64).run(&db).await.unwrap());
    assert_eq!(Boxed::<String>::boxed(7_i64).one(&db).await.unwrap(), Some(boxed));
}
