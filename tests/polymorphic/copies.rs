//! Denormalized copies inside the variants of a polymorphic model. Two variants store
//! `owner` and `owner_name` with different meanings (a person's, a team's), and a
//! third stores plain fields of the same names: each copy is filled, refreshed and
//! reconciled in its own variant's documents only.

use docshape::bson::{doc, Document};
use docshape::denormalized::{self, Worker};
use docshape::refs::Ref;
use docshape::{relation, Embedded, Model};
use futures_util::TryStreamExt;
use mongodb::Database;
use serde::{Deserialize, Serialize};

/// A person who owns reviews.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "poly_owners")]
pub struct Owner {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
}

/// A team that owns chores; its ids may equal a person's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "poly_teams")]
pub struct Team {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
}

/// A remark on a review, showing its author's name (a copy inside an embedded type
/// held by one variant).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct Remark {
    pub by: Ref<Owner>,
    #[denormalized(from = "Owner::name", via = "by", refresh = "sync")]
    pub by_name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[model(collection = "poly_tasks")]
pub enum Task {
    #[index(keys(owner))]
    #[index(keys("remarks.by"))]
    Review {
        #[serde(rename = "_id")]
        id: i64,
        #[embed(max = 5, reason = "a review shows its few remarks")]
        remarks: Vec<Remark>,
        owner: Ref<Owner>,
        #[denormalized(
            from = "Owner::name",
            via = "owner",
            refresh = "async",
            max_stale = "5m",
            reason = "a review shows who owns it"
        )]
        owner_name: String,
    },
    #[index(keys(owner))]
    Chore {
        #[serde(rename = "_id")]
        id: i64,
        owner: Ref<Team>,
        #[denormalized(from = "Team::name", via = "owner", refresh = "sync")]
        owner_name: String,
    },
    Note {
        #[serde(rename = "_id")]
        id: i64,
        owner: String,
        owner_name: String,
    },
}

const REVIEWS: &str = "poly_tasks.owner_name (kind: \"review\")";
const CHORES: &str = "poly_tasks.owner_name (kind: \"chore\")";
const REMARKS: &str = "poly_tasks.remarks.by_name (kind: \"review\")";

/// Each task's `(_id, kind, owner_name)`, and each review's remarks' `by_name`.
async fn names(db: &Database) -> Vec<(i64, String, String, Vec<String>)> {
    let all: Vec<Document> = db
        .collection::<Document>("poly_tasks")
        .find(doc! {})
        .sort(doc! { "_id": 1 })
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    all.iter()
        .map(|t| {
            let s = |k: &str| t.get_str(k).unwrap().to_owned();
            let remarks = t.get_array("remarks").map(|r| r.as_slice()).unwrap_or_default();
            let remarks = remarks
                .iter()
                .map(|r| r.as_document().unwrap().get_str("by_name").unwrap().to_owned())
                .collect();
            (t.get_i64("_id").unwrap(), s("kind"), s("owner_name"), remarks)
        })
        .collect()
}

/// Review 1 (ann's, remarked by ann and bo), chore 2 (team ann's), note 3, review 4
/// (bo's, remarked by ann): `remark` is ann's name in the remarks.
fn expected(review: &str, chore: &str, remark: &str) -> Vec<(i64, String, String, Vec<String>)> {
    let row = |id: i64, kind: &str, name: &str, remarks: &[&str]| {
        (id, kind.to_owned(), name.to_owned(), remarks.iter().map(|r| (*r).to_owned()).collect())
    };
    vec![
        row(1, "review", review, &[remark, "Bo"]),
        row(2, "chore", chore, &[]),
        row(3, "note", "a note", &[]),
        row(4, "review", "Bo", &[remark]),
    ]
}

#[test]
fn each_variants_copy_is_registered_under_its_variant() {
    let keys = |source| denormalized::dependents(source).iter().map(|c| c.key()).collect::<Vec<_>>();
    assert_eq!(keys("poly_owners"), [REVIEWS, REMARKS]);
    let remarks = denormalized::copies().into_iter().find(|c| c.key() == REMARKS).unwrap();
    assert_eq!((remarks.via, remarks.arrays), ("remarks.by", &["remarks"][..]));
    assert_eq!(keys("poly_teams"), [CHORES]);
    let table = relation::design_decisions_with_nested(&[("poly_tasks", Task::RELATIONS, Task::NESTED)]);
    for row in [
        r#"| poly_tasks | owner_name (kind: "review") | copy | Owner::name via `owner` | — | async, stale ≤ 5m | a review shows who owns it |"#,
        r#"| poly_tasks | owner_name (kind: "chore") | copy | Team::name via `owner` | — | sync (same call as the source) |"#,
        r#"| poly_tasks | remarks.by_name (kind: "review") | copy | Owner::name via `by` | — | sync (same call as the source) |"#,
    ] {
        assert!(table.contains(row), "{row}\n{table}");
    }
}

/// Insert fills each variant's copy from its own source; a person's rename reaches the
/// reviews through the worker, a team's reaches the chores in its own call, and the
/// note, whose fields only share the names, is never written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rename_refreshes_the_copies_of_its_variant_only() {
    let db = docshape_testkit::database("poly_copies").await.unwrap();
    docshape::sync::<Owner>(&db).await.unwrap();
    docshape::sync::<Team>(&db).await.unwrap();
    docshape::sync::<Task>(&db).await.unwrap();
    // Person "ann" and team "ann": one id, two sources.
    for (id, name) in [("ann", "Ann"), ("bo", "Bo")] {
        Owner::collection(&db).insert_one(Owner { id: id.into(), name: name.into() }).await.unwrap();
    }
    Team::collection(&db).insert_one(Team { id: "ann".into(), name: "Ann's team".into() }).await.unwrap();
    let owner = |id: &str| Ref::<Owner>::new(id.to_owned());
    let remark = |id: &str| Remark { by: owner(id), by_name: String::new() };
    let tasks = [
        Task::Review {
            id: 1,
            remarks: vec![remark("ann"), remark("bo")],
            owner: owner("ann"),
            owner_name: String::new(),
        },
        Task::Chore { id: 2, owner: Ref::new("ann".to_owned()), owner_name: String::new() },
        Task::Note { id: 3, owner: "ann".into(), owner_name: "a note".into() },
        Task::Review { id: 4, remarks: vec![remark("ann")], owner: owner("bo"), owner_name: String::new() },
    ];
    for mut task in tasks {
        relation::insert_one(&db, &mut task).await.unwrap();
    }
    assert_eq!(names(&db).await, expected("Ann", "Ann's team", "Ann"));

    let report =
        denormalized::update_one::<Owner>(&db, "ann", doc! { "$set": { "name": "Ann Lee" } }).await.unwrap();
    assert_eq!(report.matched, 1);
    assert_eq!(
        names(&db).await,
        expected("Ann", "Ann's team", "Ann Lee"),
        "the remarks' sync copies are written in the rename's call, the async copy waits for the worker"
    );
    let done = Worker::new(&db).only([REVIEWS]).run_until_empty().await.unwrap();
    assert_eq!(done.jobs, 1);
    assert_eq!(names(&db).await, expected("Ann Lee", "Ann's team", "Ann Lee"));

    denormalized::update_one::<Team>(&db, "ann", doc! { "$set": { "name": "Team A" } }).await.unwrap();
    assert_eq!(
        names(&db).await,
        expected("Ann Lee", "Team A", "Ann Lee"),
        "the sync copy is written in the rename's call"
    );

    // Reconcile reads the reviews only, and finds them in line.
    let spec = denormalized::copies().into_iter().find(|c| c.key() == REVIEWS).unwrap();
    let reconciled = denormalized::reconcile(&db, spec).await.unwrap();
    assert_eq!((reconciled.documents_seen, reconciled.documents_updated), (2, 0));
    // A review set wrong by another program is repaired; the note, same fields, is not.
    let raw = db.collection::<Document>("poly_tasks");
    raw.update_one(doc! { "_id": 1 }, doc! { "$set": { "owner_name": "stale" } }).await.unwrap();
    let reconciled = denormalized::reconcile(&db, spec).await.unwrap();
    assert_eq!(reconciled.documents_updated, 1);
    assert_eq!(names(&db).await, expected("Ann Lee", "Team A", "Ann Lee"));
}
