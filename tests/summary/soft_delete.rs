//! A soft-deleted source document counts as deleted: its contribution leaves the
//! summary, and a restore brings it back, through docshape's writers and through a
//! recount alike.

use docshape::summary;

use super::*;

/// A source with a soft delete.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "sm_tickets", soft_delete = deleted_at, transactions)]
pub struct Ticket {
    #[serde(rename = "_id")]
    pub id: String,
    pub team: String,
    pub points: i64,
    #[serde(default)]
    pub deleted_at: Option<DateTime>,
}

/// Points per team, over live tickets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "sm_team_points")]
#[summary(of = Ticket, group(team), refresh = "sync")]
pub struct TeamPoints {
    #[serde(rename = "_id")]
    pub team: String,
    #[summary(count)]
    pub tickets: i64,
    #[summary(sum = "points")]
    pub points: i64,
}

fn ticket(id: &str, team: &str, points: i64) -> Ticket {
    Ticket { id: id.into(), team: team.into(), points, deleted_at: None }
}

async fn team(db: &Database, team: &str) -> Option<(i64, i64)> {
    one(db, "sm_team_points", team)
        .await
        .map(|d| (d.get_i64("tickets").unwrap(), d.get_i64("points").unwrap()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_soft_deleted_document_leaves_its_summary_and_a_restore_brings_it_back() {
    let db = testkit::database("summary_soft_delete").await.unwrap();
    docshape::relation::insert_many(
        &db,
        &mut [ticket("t1", "a", 3), ticket("t2", "a", 5), ticket("t3", "b", 1)],
    )
    .await
    .unwrap();
    assert_eq!(team(&db, "a").await, Some((2, 8)));

    assert!(Ticket::delete_by_id("t1").run(&db).await.unwrap());
    assert_eq!(team(&db, "a").await, Some((1, 5)), "a deleted ticket counts no more");
    assert!(Ticket::delete_by_id("t2").run(&db).await.unwrap());
    assert_eq!(team(&db, "a").await, None, "a group of deleted tickets only is removed");
    assert!(Ticket::restore_by_id("t1").run(&db).await.unwrap());
    assert_eq!(team(&db, "a").await, Some((1, 3)), "a restored ticket counts again");
    let spec = summary::summary("sm_team_points").unwrap();
    assert!(summary::check(&db, spec).await.unwrap().drifted.is_empty());

    // A foreign program soft-deletes behind docshape's back: the recount reads the
    // deletion date too, so the group drifts, and `reconcile` takes the ticket out.
    db.collection::<Document>("sm_tickets")
        .update_one(doc! { "_id": "t3" }, doc! { "$currentDate": { "deleted_at": true } })
        .await
        .unwrap();
    let drift = summary::check(&db, spec).await.unwrap();
    assert_eq!(drift.drifted.len(), 1, "{drift:?}");
    assert_eq!(drift.drifted[0].key, Bson::from("b"));
    summary::reconcile(&db, spec).await.unwrap();
    assert_eq!(team(&db, "b").await, None);
    assert!(summary::check(&db, spec).await.unwrap().drifted.is_empty());
}

/// Inserts and soft deletes have session forms: in a transaction (docshape's or the
/// caller's own), the write and its sync summary commit together, or neither; in a
/// session that runs none, they are applied after the write as outside a session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inserts_and_soft_deletes_in_a_transaction_commit_with_their_summary() {
    let db = testkit::database("summary_soft_delete_tx").await.unwrap();
    let d = &db;
    docshape::transaction(db.client(), |tx| {
        Box::pin(async move {
            docshape::relation::insert_one_in(d, &mut ticket("t1", "a", 3), tx).await?;
            docshape::relation::insert_many_in(d, &mut [ticket("t2", "a", 5), ticket("t3", "b", 1)], tx)
                .await?;
            // The transaction reads its own writes: the summary is already in it.
            let seen = TeamPoints::collection(d).find_one(doc! { "_id": "a" }).session(&mut **tx).await;
            assert_eq!(seen.unwrap().map(|t| t.points), Some(8));
            Ok::<_, docshape::refs::RefError>(())
        })
    })
    .await
    .unwrap();
    assert_eq!(team(&db, "a").await, Some((2, 8)));

    // The caller's own transaction, aborted: neither the deletes nor the insert, nor
    // their summaries, are applied.
    let mut session = db.client().start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    assert!(Ticket::delete_by_id("t1").run_in(&db, &mut session).await.unwrap());
    docshape::relation::insert_one_in(&db, &mut ticket("t4", "b", 7), &mut session).await.unwrap();
    let inside = TeamPoints::collection(&db).find_one(doc! { "_id": "a" }).session(&mut session).await;
    assert_eq!(inside.unwrap().map(|t| t.points), Some(5), "in the transaction: written");
    assert_eq!(team(&db, "a").await, Some((2, 8)), "outside it: not before the commit");
    session.abort_transaction().await.unwrap();
    assert_eq!(team(&db, "a").await, Some((2, 8)));
    assert_eq!(team(&db, "b").await, Some((1, 1)));
    assert!(Ticket::collection(&db).find_one(doc! { "_id": "t4" }).await.unwrap().is_none());

    // Committed: both, with their summaries.
    session.start_transaction().await.unwrap();
    assert!(Ticket::delete_by_id("t1").run_in(&db, &mut session).await.unwrap());
    docshape::relation::insert_one_in(&db, &mut ticket("t4", "b", 7), &mut session).await.unwrap();
    session.commit_transaction().await.unwrap();
    assert_eq!(team(&db, "a").await, Some((1, 5)));
    assert_eq!(team(&db, "b").await, Some((2, 8)));

    // The same session, no transaction running: applied right after each write.
    assert!(Ticket::restore_by_id("t1").run_in(&db, &mut session).await.unwrap());
    assert_eq!(team(&db, "a").await, Some((2, 8)));
    docshape::relation::insert_many_in(&db, &mut [ticket("t5", "c", 2)], &mut session).await.unwrap();
    assert_eq!(team(&db, "c").await, Some((1, 2)));
    let spec = summary::summary("sm_team_points").unwrap();
    assert!(summary::check(&db, spec).await.unwrap().drifted.is_empty());
}
