//! Refresh jobs written by another program: `due`, `lease_until` and `enqueued_at`
//! that are not dates, or missing.

use docshape::bson::{doc, Bson, DateTime, Document};
use docshape::denormalized::{self, Worker, QUEUE};

use super::{count, insert_posts, insert_user, queue, setup, POSTS};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undated_jobs_are_claimed_and_counted_overdue() {
    let db = setup("undated").await;
    let hour_ahead = DateTime::from_millis(DateTime::now().timestamp_millis() + 3_600_000);
    let odd: [(Option<Bson>, Option<Bson>, Option<Bson>); 5] = [
        (Some("tomorrow".into()), Some("x".into()), Some("yesterday".into())),
        (None, None, None),
        (Some(Bson::Int32(5)), Some(Bson::Null), Some(Bson::Int64(7))),
        (Some(DateTime::from_millis(0).into()), Some(true.into()), Some(DateTime::from_millis(1_000).into())),
        (Some(hour_ahead.into()), Some(Bson::Int64(0)), Some(DateTime::from_millis(2_000).into())),
    ];
    for (u, (due, lease, enqueued)) in odd.into_iter().enumerate() {
        let id = format!("u{u}");
        insert_user(&db, &id, "new").await;
        insert_posts(&db, &id, "old", (u as i64 * 10)..(u as i64 * 10 + 3)).await;
        let mut job = doc! { "_id": { "copy": POSTS, "id": &id }, "seq": 1_i64 };
        for (field, value) in [("due", due), ("lease_until", lease), ("enqueued_at", enqueued)] {
            if let Some(value) = value {
                job.insert(field, value);
            }
        }
        db.collection::<Document>(QUEUE).insert_one(job).await.unwrap();
    }

    let lag = denormalized::lag(&db).await.unwrap();
    assert_eq!(lag.pending, 5);
    // Three without a due date, one past it.
    assert_eq!((lag.overdue, lag.undated), (4, 3), "{lag:?}");
    assert_eq!(lag.by_copy[POSTS].undated, 3);
    // The oldest enqueue is the oldest date: a string or a number is no date.
    assert_eq!(lag.oldest_enqueued_at, Some(DateTime::from_millis(1_000)));

    let report = Worker::new(&db).run_until_empty().await.unwrap();
    assert_eq!(report.jobs, 5, "{report:?}");
    assert!(queue(&db).await.is_empty());
    assert_eq!(count(&db, "posts", doc! { "author_name": "new" }).await, 15);
    let lag = denormalized::lag(&db).await.unwrap();
    assert_eq!((lag.pending, lag.overdue, lag.undated), (0, 0, 0));
}

/// A job that fails comes back within the run when the lease is shorter than the run;
/// the run still ends, with the failure once, and the other jobs done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_job_with_a_short_lease_does_not_keep_the_run_going() {
    let db = setup("short-lease").await;
    for u in 0..2 {
        let id = format!("u{u}");
        insert_user(&db, &id, "x").await;
        insert_posts(&db, &id, "old", (u * 10)..(u * 10 + 3)).await;
    }
    db.run_command(doc! {
        "collMod": "posts",
        "validator": { "$jsonSchema": { "properties": { "author_name": { "bsonType": "string", "maxLength": 10 } } } },
    })
    .await
    .unwrap();
    denormalized::update_one::<super::User>(&db, "u0", super::rename("a name far too long")).await.unwrap();
    denormalized::update_one::<super::User>(&db, "u1", super::rename("short")).await.unwrap();
    let worker = Worker::new(&db).lease(std::time::Duration::from_millis(1));
    let report = tokio::time::timeout(std::time::Duration::from_secs(30), worker.run_until_empty())
        .await
        .expect("the run ends")
        .unwrap();
    assert_eq!((report.jobs, report.failures.len()), (1, 1), "{report:?}");
    // The failed job waits for its retry, and the lag says so, with its cause.
    let lag = denormalized::lag(&db).await.unwrap();
    assert_eq!((lag.pending, lag.failing), (1, 1), "{lag:?}");
    let posts = &lag.by_copy[POSTS];
    assert_eq!(posts.failing, 1, "{lag:?}");
    assert!(posts.last_error.as_deref().is_some_and(|e| e.contains("validation")), "{lag:?}");
}
