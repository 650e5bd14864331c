//! Async copies: the queue, workers that are aborted and restarted and run side by
//! side, renames in a row, the lag, and jobs of copies this program does not know.

use std::time::Instant;

use docshape::bson::{doc, Bson, DateTime, Document};
use docshape::denormalized::{self, CopyError, RefreshReport, SkippedJobs, Worker, QUEUE};
use mongodb::Database;

use super::*;

/// Polls `check` every 20 ms until it holds; fails the test after a minute.
async fn until<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(60);
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The acceptance test of async copies: a user with 2,000 posts (a job of 100 batches)
/// is renamed; the worker is aborted midway, restarted with its id next to a second
/// worker, and every copy converges within `max_stale`, while another user's 500 posts
/// keep their name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_posts_converge_after_an_aborted_worker_is_restarted() {
    const POSTS: i64 = 2_000;
    let db = setup("many_posts").await;
    insert_user(&db, "ada", "Ada").await;
    insert_user(&db, "grace", "Grace").await;
    let inserting = Instant::now();
    insert_posts(&db, "ada", "Ada", 0..POSTS).await;
    insert_posts(&db, "grace", "Grace", POSTS..POSTS + 500).await;
    eprintln!("inserted {} posts in {:?}", POSTS + 500, inserting.elapsed());

    let done = denormalized::update_one::<User>(&db, "ada", rename("Ada Lovelace")).await.unwrap();
    let renamed = Instant::now();
    assert_eq!(done.jobs_enqueued(), 1);
    let lag = denormalized::lag(&db).await.unwrap();
    assert_eq!((lag.pending, lag.overdue), (1, 0));

    // The local test server's `$in` costs grow faster than linearly with its length:
    // 10,000 posts converged in about 15 s in batches of 100, 35 s of 500, 46 s of
    // 1,000. Batches of 20 make this job 100 batches long, as 10,000 in 100 were.
    let batch = 20;
    let first = Worker::new(&db).id("refresher-1").batch(batch);
    let running = tokio::spawn({
        let first = first.clone();
        async move { first.run_until_empty().await }
    });
    let renamed_posts = doc! { "author_id": "ada", "author_name": "Ada Lovelace" };
    // Abort once some, but not all, posts carry the new name.
    let deadline = Instant::now() + Duration::from_secs(60);
    while count(&db, "posts", renamed_posts.clone()).await == 0 {
        assert!(Instant::now() < deadline, "the worker wrote nothing in a minute");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    running.abort();
    assert!(running.await.unwrap_err().is_cancelled());
    let at_abort = count(&db, "posts", renamed_posts.clone()).await;
    assert!(at_abort < POSTS as u64, "the worker finished before it could be aborted ({at_abort} renamed)");
    eprintln!("aborted with {at_abort} of {POSTS} posts renamed after {:?}", renamed.elapsed());
    let jobs = queue(&db).await;
    assert_eq!(jobs.len(), 1, "the job survives the abort");
    assert_eq!(jobs[0].get_str("owner").unwrap(), "refresher-1");
    assert!(*jobs[0].get_datetime("lease_until").unwrap() > DateTime::now(), "still leased");

    // The same id resumes at once, without waiting out the lease; a second worker runs
    // alongside.
    let second = Worker::new(&db).id("refresher-2").batch(batch);
    let (a, b) = tokio::join!(first.run_until_empty(), second.run_until_empty());
    let (a, b) = (a.unwrap(), b.unwrap());
    let converged = renamed.elapsed();

    assert_eq!(count(&db, "posts", renamed_posts).await, POSTS as u64);
    assert_eq!(count(&db, "posts", doc! { "author_id": "ada" }).await, POSTS as u64);
    assert_eq!(count(&db, "posts", doc! { "author_id": "grace", "author_name": "Grace" }).await, 500);
    assert_eq!(count(&db, "posts", doc! {}).await, POSTS as u64 + 500);
    assert!(queue(&db).await.is_empty());
    assert_eq!(denormalized::lag(&db).await.unwrap().pending, 0);
    assert_eq!(a.jobs + b.jobs, 1, "{a:?} {b:?}");
    assert_eq!(a.jobs, 1, "the restarted worker took its own job back: {a:?} {b:?}");
    assert!(a.documents_updated + b.documents_updated <= POSTS as u64 - at_abort);
    let max_lag = a.max_lag.unwrap();
    eprintln!("converged {converged:?} after the rename; max_lag {max_lag:?}; batch {batch}");
    assert!(converged < MAX_STALE, "converged after {converged:?}");
    assert!(max_lag < MAX_STALE, "max_lag {max_lag:?}");
    assert!(max_lag >= Duration::from_millis(1));
}

/// Renames v1, v2, v3 while a worker runs: the copies end at v3, whatever the worker
/// had read when.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renames_in_a_row_while_a_worker_runs_converge_to_the_last() {
    let db = setup("renames").await;
    insert_user(&db, "ada", "v0").await;
    // 500 posts in batches of 25: a job of 20 batches, long enough for renames to land
    // mid-job, as 2,000 in batches of 100 were.
    insert_posts(&db, "ada", "v0", 0..500).await;
    let worker = Worker::new(&db).batch(25);
    let running = tokio::spawn({
        let worker = worker.clone();
        async move { worker.run(Duration::from_millis(10)).await }
    });
    for name in ["v1", "v2", "v3"] {
        denormalized::update_one::<User>(&db, "ada", rename(name)).await.unwrap();
        let db = (*db).clone();
        // Let the worker start on it, so later renames land mid-job.
        until("the worker to start", || {
            let db = db.clone();
            async move { count(&db, "posts", doc! { "author_name": { "$ne": "v0" } }).await > 0 }
        })
        .await;
    }
    until("v3 everywhere and an empty queue", || {
        let db = (*db).clone();
        async move {
            count(&db, "posts", doc! { "author_name": "v3" }).await == 500 && queue(&db).await.is_empty()
        }
    })
    .await;
    // Still v3 after the worker has had every chance to write something older.
    tokio::time::sleep(Duration::from_millis(200)).await;
    running.abort();
    assert_eq!(count(&db, "posts", doc! { "author_name": "v3" }).await, 500);
    assert!(queue(&db).await.is_empty());
}

pub(super) async fn users_with_posts(db: &Database, users: i64, posts_each: i64) {
    for u in 0..users {
        let id = format!("u{u}");
        insert_user(db, &id, "old").await;
        insert_posts(db, &id, "old", u * posts_each..(u + 1) * posts_each).await;
    }
}

/// Two workers drain one queue at once: every job is run once, and everything
/// converges.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_drain_one_queue() {
    let db = setup("two_workers").await;
    users_with_posts(&db, 12, 40).await;
    for u in 0..12 {
        denormalized::update_one::<User>(&db, &format!("u{u}"), rename(&format!("new {u}"))).await.unwrap();
    }
    assert_eq!(denormalized::lag(&db).await.unwrap().pending, 12);
    let one = Worker::new(&db).batch(15);
    let two = Worker::new(&db).batch(15);
    assert_ne!(one.name(), two.name(), "default ids are unique");
    let (a, b) = tokio::join!(one.run_until_empty(), two.run_until_empty());
    let (a, b): (RefreshReport, RefreshReport) = (a.unwrap(), b.unwrap());
    assert_eq!(a.jobs + b.jobs, 12, "{a:?} {b:?}");
    assert_eq!(a.documents_updated + b.documents_updated, 12 * 40);
    assert_eq!(a.requeued + b.requeued, 0);
    assert!(a.failures.is_empty() && b.failures.is_empty());
    for u in 0..12 {
        let filter = doc! { "author_id": format!("u{u}"), "author_name": format!("new {u}") };
        assert_eq!(count(&db, "posts", filter).await, 40, "u{u}");
    }
    assert!(queue(&db).await.is_empty());
}

/// Waits until some of `author`'s posts carry `name`, and checks that not all do yet.
pub(super) async fn midway(db: &Database, author: &str, name: &str, total: u64) {
    let filter = doc! { "author_id": author, "author_name": name };
    until("the first batches", || {
        let db = db.clone();
        let filter = filter.clone();
        async move { count(&db, "posts", filter).await > 0 }
    })
    .await;
    let now = count(db, "posts", filter).await;
    assert!(now < total, "the job finished before the test could step in ({now} of {total})");
}

/// The source changes again while a worker is writing the previous value: the
/// worker's completion fails on the moved `seq`, it runs the job again, and the copies
/// end at the newer value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rename_during_a_job_makes_the_worker_run_it_again() {
    let db = setup("rename_mid_job").await;
    insert_user(&db, "ada", "v0").await;
    insert_posts(&db, "ada", "v0", 0..3000).await;
    denormalized::update_one::<User>(&db, "ada", rename("v1")).await.unwrap();
    let worker = Worker::new(&db).batch(20);
    let running = tokio::spawn({
        let worker = worker.clone();
        async move { worker.run_until_empty().await }
    });
    midway(&db, "ada", "v1", 3000).await;
    denormalized::update_one::<User>(&db, "ada", rename("v2")).await.unwrap();
    let report = running.await.unwrap().unwrap();
    assert_eq!(report.jobs, 1, "{report:?}");
    assert!(report.requeued >= 1, "{report:?}");
    assert_eq!(count(&db, "posts", doc! { "author_name": "v2" }).await, 3000);
    assert!(queue(&db).await.is_empty());
}

/// A worker whose job is taken over mid-write (its lease expired and another worker
/// claimed it) stops at its next batch and enqueues the job again, so that whatever
/// it wrote last is followed by a run of the new owner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_loses_its_job_stops_and_enqueues_it_again() {
    let db = setup("lost_lease").await;
    insert_user(&db, "ada", "v0").await;
    insert_posts(&db, "ada", "v0", 0..3000).await;
    denormalized::update_one::<User>(&db, "ada", rename("v1")).await.unwrap();
    let loser = Worker::new(&db).id("loser").batch(20);
    let running = tokio::spawn({
        let loser = loser.clone();
        async move { loser.run_until_empty().await }
    });
    midway(&db, "ada", "v1", 3000).await;
    // What a claim by another worker does, with a lease that outlasts the test.
    let in_an_hour = DateTime::from_millis(DateTime::now().timestamp_millis() + 3_600_000);
    let taken = db
        .collection::<Document>(QUEUE)
        .update_one(
            doc! { "_id.id": "ada" },
            doc! { "$set": { "owner": "thief", "lease_until": in_an_hour } },
        )
        .await
        .unwrap();
    assert_eq!(taken.matched_count, 1);
    let report = running.await.unwrap().unwrap();
    assert_eq!((report.jobs, report.requeued), (0, 1), "{report:?}");
    let jobs = queue(&db).await;
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].get_i64("seq").unwrap(), 2, "enqueued again");
    assert_eq!(jobs[0].get_str("owner").unwrap(), "thief");
    assert!(count(&db, "posts", doc! { "author_name": "v1" }).await < 3000, "the loser stopped writing");

    let report = Worker::new(&db).id("thief").batch(500).run_until_empty().await.unwrap();
    assert_eq!(report.jobs, 1);
    assert_eq!(count(&db, "posts", doc! { "author_name": "v1" }).await, 3000);
    assert!(queue(&db).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lag_counts_pending_and_overdue_jobs() {
    let db = setup("lag").await;
    users_with_posts(&db, 3, 5).await;
    let empty = denormalized::lag(&db).await.unwrap();
    assert_eq!((empty.pending, empty.overdue, empty.oldest_enqueued_at), (0, 0, None));
    let before = DateTime::now();
    for u in 0..3 {
        denormalized::update_one::<User>(&db, &format!("u{u}"), rename("new")).await.unwrap();
    }
    // A second rename of one user is the same job.
    denormalized::update_one::<User>(&db, "u0", rename("newer")).await.unwrap();
    let lag = denormalized::lag(&db).await.unwrap();
    assert_eq!((lag.pending, lag.overdue), (3, 0));
    assert_eq!(lag.by_copy.keys().collect::<Vec<_>>(), [POSTS]);
    assert_eq!(lag.by_copy[POSTS].pending, 3);
    let oldest = lag.oldest_enqueued_at.unwrap();
    assert!(oldest >= DateTime::from_millis(before.timestamp_millis() - 1000), "{oldest} {before}");
    assert!(lag.oldest_age.unwrap() < MAX_STALE);
    let job = &queue(&db).await[0];
    let due = job.get_datetime("due").unwrap().timestamp_millis();
    let enqueued = job.get_datetime("enqueued_at").unwrap().timestamp_millis();
    assert_eq!(due - enqueued, MAX_STALE.as_millis() as i64);

    // A job past its due date is overdue.
    db.collection::<Document>(QUEUE)
        .update_one(doc! { "_id.id": "u1" }, doc! { "$set": { "due": DateTime::from_millis(0) } })
        .await
        .unwrap();
    assert_eq!(denormalized::lag(&db).await.unwrap().overdue, 1);

    let report = Worker::new(&db).run_until_empty().await.unwrap();
    assert_eq!(report.jobs, 3);
    let lag = denormalized::lag(&db).await.unwrap();
    assert_eq!((lag.pending, lag.overdue, lag.oldest_age), (0, 0, None));
    assert!(lag.by_copy.is_empty());
    assert_eq!(count(&db, "posts", doc! { "author_id": "u0", "author_name": "newer" }).await, 5);
}

/// Jobs of a copy no registered model declares (another program's, or a removed one)
/// are left in the queue and reported, never claimed; naming such a copy is an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_of_unknown_copies_are_skipped_and_reported() {
    let db = setup("unknown").await;
    users_with_posts(&db, 1, 5).await;
    denormalized::update_one::<User>(&db, "u0", rename("new")).await.unwrap();
    let ghost = doc! {
        "_id": { "copy": "ghosts.name", "id": "u0" },
        "seq": 1_i64,
        "enqueued_at": DateTime::now(),
        "due": DateTime::now(),
        "lease_until": DateTime::from_millis(0),
    };
    db.collection::<Document>(QUEUE).insert_one(ghost.clone()).await.unwrap();

    let report = Worker::new(&db).run_until_empty().await.unwrap();
    assert_eq!(report.jobs, 1);
    assert_eq!(report.skipped, [SkippedJobs { copy: "ghosts.name".into(), jobs: 1 }]);
    assert_eq!(queue(&db).await, [ghost], "left as it was");
    assert_eq!(denormalized::lag(&db).await.unwrap().by_copy["ghosts.name"].pending, 1);

    let err = Worker::new(&db).only(["ghosts.name"]).run_until_empty().await.unwrap_err();
    assert!(matches!(&err, CopyError::UnknownCopy { copy } if copy == "ghosts.name"), "{err}");
}

/// A job leased to a live worker is not taken; one whose lease expired (its worker
/// died) is, by anyone; and a worker with the job's owner id takes it back at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_respect_live_leases_and_take_over_expired_ones() {
    let db = setup("claims").await;
    users_with_posts(&db, 2, 10).await;
    for u in 0..2 {
        denormalized::update_one::<User>(&db, &format!("u{u}"), rename("new")).await.unwrap();
    }
    let jobs = db.collection::<Document>(QUEUE);
    let hold = |user: &str, owner: &str, until: DateTime| {
        let jobs = jobs.clone();
        let (user, owner) = (user.to_owned(), owner.to_owned());
        async move {
            jobs.update_one(
                doc! { "_id.id": user },
                doc! { "$set": { "owner": owner, "lease_until": until } },
            )
            .await
            .unwrap();
        }
    };
    let in_an_hour = DateTime::from_millis(DateTime::now().timestamp_millis() + 3_600_000);
    hold("u0", "alive", in_an_hour).await;
    hold("u1", "dead", DateTime::from_millis(DateTime::now().timestamp_millis() - 1000)).await;

    let report = Worker::new(&db).run_until_empty().await.unwrap();
    assert_eq!(report.jobs, 1, "only the expired lease was taken: {report:?}");
    assert_eq!(count(&db, "posts", doc! { "author_id": "u1", "author_name": "new" }).await, 10);
    assert_eq!(count(&db, "posts", doc! { "author_id": "u0", "author_name": "old" }).await, 10);
    let left = queue(&db).await;
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].get_document("_id").unwrap().get("id"), Some(&Bson::from("u0")));

    let report = Worker::new(&db).id("alive").run_until_empty().await.unwrap();
    assert_eq!(report.jobs, 1);
    assert_eq!(count(&db, "posts", doc! { "author_name": "new" }).await, 20);
    assert!(queue(&db).await.is_empty());
}

/// A copy the server refuses to write is a failure recorded on the job, naming the
/// refused documents, not the end of the worker: the others are done, and the failed
/// job waits out a lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_write_fails_its_job_and_the_worker_goes_on() {
    let db = setup("refused").await;
    users_with_posts(&db, 2, 10).await;
    db.run_command(doc! {
        "collMod": "posts",
        "validator": { "$jsonSchema": { "properties": { "author_name": { "bsonType": "string", "maxLength": 10 } } } },
    })
    .await
    .unwrap();
    denormalized::update_one::<User>(&db, "u0", rename("a name far too long")).await.unwrap();
    denormalized::update_one::<User>(&db, "u1", rename("short")).await.unwrap();

    let worker = Worker::new(&db);
    let report = worker.run_until_empty().await.unwrap();
    assert_eq!(report.jobs, 1);
    assert_eq!(report.failures.len(), 1, "{report:?}");
    let failure = &report.failures[0];
    assert_eq!((failure.copy.as_str(), &failure.id), (POSTS, &Bson::from("u0")));
    match &failure.error {
        CopyError::Refused { id, documents } => {
            assert_eq!(id, &Bson::from("u0"));
            assert_eq!(documents.len(), 10, "every post of u0 is refused: {documents:?}");
            assert!(documents.iter().all(|d| d.copy == POSTS && d.reason.contains("121")), "{documents:?}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(count(&db, "posts", doc! { "author_name": "short" }).await, 10);
    let left = queue(&db).await;
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].get_i64("failures").unwrap(), 1);
    assert!(left[0].get_str("last_error").unwrap().contains(POSTS));
    assert!(!left[0].contains_key("owner"));
    // Not claimable until its lease passes, not even by the same worker.
    assert_eq!(worker.run_until_empty().await.unwrap().jobs, 0);
}
