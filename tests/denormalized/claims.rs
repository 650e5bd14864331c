//! Claims of several jobs at once: how many commands a drain sends, jobs of a claim
//! that another worker takes before they run, a worker aborted with jobs of its claim
//! not yet run, workers whose claims interleave, a restarted worker taking its jobs
//! back, and a claim whose connection the server closes.

use docshape::bson::{doc, oid::ObjectId, Bson, DateTime, Document};
use docshape::denormalized::{self, RefreshReport, Worker, QUEUE};
use docshape_testkit as testkit;

use super::worker::{midway, users_with_posts};
use super::*;

/// The `update` commands that stamped claims on the queue: one statement each, whose
/// `$set` carries a claim token.
fn claim_updates(commands: &testkit::CommandLog) -> Vec<Document> {
    commands
        .named("update")
        .into_iter()
        .filter(|c| c.get_str("update").is_ok_and(|name| name == QUEUE))
        .filter(|c| {
            c.get_array("updates").unwrap().iter().any(|u| {
                let u = u.as_document().unwrap();
                u.get_document("u")
                    .and_then(|u| u.get_document("$set"))
                    .is_ok_and(|s| s.contains_key("claim"))
            })
        })
        .collect()
}

/// Ten jobs claimed four at a time take three claims (each one `update` command
/// stamping the jobs found, a single-document statement per job: 4, 4 and 2), and no
/// `findAndModify`; one at a time, eleven
/// `findAndModify`s (the last finds none) and no batch update. Either way every job runs once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_takes_up_to_its_number_of_jobs_in_one_update() {
    let (db, commands) = testkit::monitored("claims_counted").await.unwrap();
    docshape::sync::<User>(&db).await.unwrap();
    docshape::sync::<Post>(&db).await.unwrap();
    users_with_posts(&db, 10, 2).await;
    for (round, per_claim) in [(1, 4_usize), (2, 1)] {
        for u in 0..10 {
            denormalized::update_one::<User>(&db, &format!("u{u}"), rename(&format!("n{round} {u}")))
                .await
                .unwrap();
        }
        commands.clear();
        let report = Worker::new(&db).jobs_per_claim(per_claim).run_until_empty().await.unwrap();
        assert_eq!((report.jobs, report.requeued), (10, 0), "{report:?}");
        let stamps = claim_updates(&commands);
        let modify = commands.named("findAndModify").len();
        if per_claim == 4 {
            assert_eq!((stamps.len(), modify), (3, 0), "{:?}", commands.names());
            let mut sizes = Vec::new();
            for stamp in &stamps {
                let statements = stamp.get_array("updates").unwrap();
                sizes.push(statements.len());
                for statement in statements {
                    let statement = statement.as_document().unwrap();
                    assert_eq!(statement.get_bool("multi").ok(), Some(false), "{statement}");
                }
            }
            assert_eq!(sizes, [4, 4, 2], "{stamps:?}");
        } else {
            // Ten claims and the one that finds the queue empty.
            assert_eq!((stamps.len(), modify), (0, 11), "{:?}", commands.names());
        }
        for u in 0..10 {
            let filter = doc! { "author_id": format!("u{u}"), "author_name": format!("n{round} {u}") };
            assert_eq!(count(&db, "posts", filter).await, 2, "u{u}");
        }
        assert!(queue(&db).await.is_empty());
    }
}

/// One user with 3,000 posts (a long job, run first) and nine with five; a worker
/// claims all ten. While it writes the long one, another worker takes one of the
/// nine (as a claim would, after the lease expired). The worker renews the rest of
/// its claim before each job (its lease is 1 ms, so every time), finds that one
/// gone, and leaves it: no source read, no write, no enqueue (`seq` stays 1), the
/// job stays the thief's. The other eight and the long one are done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_of_the_claim_that_another_worker_takes_is_dropped_before_it_runs() {
    let db = setup("claims_dropped").await;
    insert_user(&db, "long", "old").await;
    insert_posts(&db, "long", "old", 10_000..13_000).await;
    users_with_posts(&db, 9, 5).await;
    denormalized::update_one::<User>(&db, "long", rename("new")).await.unwrap();
    for u in 0..9 {
        denormalized::update_one::<User>(&db, &format!("u{u}"), rename("new")).await.unwrap();
    }
    // The long job first.
    db.collection::<Document>(QUEUE)
        .update_one(doc! { "_id.id": "long" }, doc! { "$set": { "due": DateTime::from_millis(0) } })
        .await
        .unwrap();
    let worker = Worker::new(&db).id("batcher").batch(20).lease(Duration::from_millis(1));
    let running = tokio::spawn(async move { worker.run_until_empty().await });
    midway(&db, "long", "new", 3000).await;
    let held = db
        .collection::<Document>(QUEUE)
        .count_documents(doc! { "owner": "batcher", "_id.id": { "$ne": "long" } })
        .await
        .unwrap();
    assert_eq!(held, 9, "the whole queue was one claim");
    let in_an_hour = DateTime::from_millis(DateTime::now().timestamp_millis() + 3_600_000);
    let taken = db
        .collection::<Document>(QUEUE)
        .update_one(
            doc! { "_id.id": "u4", "owner": "batcher" },
            doc! { "$set": { "owner": "thief", "lease_until": in_an_hour, "claim": ObjectId::new() } },
        )
        .await
        .unwrap();
    assert_eq!(taken.modified_count, 1, "u4 had not run yet");
    let report = running.await.unwrap().unwrap();
    assert_eq!((report.jobs, report.requeued), (9, 0), "{report:?}");
    assert_eq!(count(&db, "posts", doc! { "author_name": "new" }).await, 3000 + 8 * 5);
    assert_eq!(count(&db, "posts", doc! { "author_id": "u4", "author_name": "old" }).await, 5);
    let left = queue(&db).await;
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0].get_document("_id").unwrap().get("id"), Some(&Bson::from("u4")));
    assert_eq!((left[0].get_str("owner").ok(), left[0].get_i64("seq").ok()), (Some("thief"), Some(1)));
}

/// A worker aborted while it runs the first job of its claim leaves the other jobs of
/// the claim leased to it: a worker with another id takes none of them (their lease
/// has not expired), and a worker restarted with the aborted one's id takes them all
/// back at once and converges.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aborted_worker_leaves_the_rest_of_its_claim_leased() {
    let db = setup("claims_aborted").await;
    insert_user(&db, "long", "old").await;
    insert_posts(&db, "long", "old", 10_000..13_000).await;
    users_with_posts(&db, 5, 5).await;
    denormalized::update_one::<User>(&db, "long", rename("new")).await.unwrap();
    for u in 0..5 {
        denormalized::update_one::<User>(&db, &format!("u{u}"), rename("new")).await.unwrap();
    }
    db.collection::<Document>(QUEUE)
        .update_one(doc! { "_id.id": "long" }, doc! { "$set": { "due": DateTime::from_millis(0) } })
        .await
        .unwrap();
    let worker = Worker::new(&db).id("crashy").batch(20);
    let running = tokio::spawn({
        let worker = worker.clone();
        async move { worker.run_until_empty().await }
    });
    midway(&db, "long", "new", 3000).await;
    running.abort();
    assert!(running.await.unwrap_err().is_cancelled());
    let jobs = queue(&db).await;
    assert_eq!(jobs.len(), 6);
    assert!(jobs.iter().all(|j| j.get_str("owner").is_ok_and(|o| o == "crashy")), "{jobs:?}");
    let tokens: std::collections::BTreeSet<String> =
        jobs.iter().map(|j| j.get_object_id("claim").unwrap().to_hex()).collect();
    assert_eq!(tokens.len(), 1, "one claim: {jobs:?}");

    let other = Worker::new(&db).run_until_empty().await.unwrap();
    assert_eq!(other.jobs, 0, "{other:?}");
    assert_eq!(count(&db, "posts", doc! { "author_id": { "$ne": "long" }, "author_name": "new" }).await, 0);

    let back = worker.run_until_empty().await.unwrap();
    assert_eq!((back.jobs, back.requeued), (6, 0), "{back:?}");
    assert_eq!(count(&db, "posts", doc! { "author_name": "new" }).await, 3000 + 5 * 5);
    assert!(queue(&db).await.is_empty());
}

/// Three workers claiming three jobs at a time drain 40 jobs together: each job is
/// completed once (no completion finds its job taken, nothing is requeued), and every
/// copy converges.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_claiming_in_batches_complete_each_job_once() {
    let db = setup("claims_three").await;
    users_with_posts(&db, 40, 3).await;
    for u in 0..40 {
        denormalized::update_one::<User>(&db, &format!("u{u}"), rename(&format!("new {u}"))).await.unwrap();
    }
    let workers: Vec<Worker> =
        (0..3).map(|i| Worker::new(&db).id(format!("w{i}")).jobs_per_claim(3)).collect();
    let (a, b, c) = tokio::join!(
        workers[0].run_until_empty(),
        workers[1].run_until_empty(),
        workers[2].run_until_empty()
    );
    let reports: Vec<RefreshReport> = vec![a.unwrap(), b.unwrap(), c.unwrap()];
    assert_eq!(reports.iter().map(|r| r.jobs).sum::<u64>(), 40, "{reports:?}");
    assert_eq!(reports.iter().map(|r| r.requeued).sum::<u64>(), 0, "{reports:?}");
    assert_eq!(reports.iter().map(|r| r.documents_updated).sum::<u64>(), 40 * 3, "{reports:?}");
    for u in 0..40 {
        let filter = doc! { "author_id": format!("u{u}"), "author_name": format!("new {u}") };
        assert_eq!(count(&db, "posts", filter).await, 3, "u{u}");
    }
    assert!(queue(&db).await.is_empty());
}

/// A worker restarted under its id takes back the jobs it holds without writing
/// them (no stamp: a write to a job would make a transaction queuing it conflict)
/// when at least two thirds of their lease is left, and runs them; a job whose lease
/// is nearer its end is claimed again as usual (stamped).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_worker_takes_back_its_jobs_without_writing_them() {
    let (db, commands) = testkit::monitored("claims_resumed").await.unwrap();
    docshape::sync::<User>(&db).await.unwrap();
    docshape::sync::<Post>(&db).await.unwrap();
    users_with_posts(&db, 3, 2).await;
    let lease = std::time::Duration::from_secs(60);
    for (round, left_secs) in [(1, 59_i64), (2, 10)] {
        for u in 0..3 {
            denormalized::update_one::<User>(&db, &format!("u{u}"), rename(&format!("n{round} {u}")))
                .await
                .unwrap();
        }
        // Held by "back", as a claim leaves them when its worker is stopped.
        let until = DateTime::from_millis(DateTime::now().timestamp_millis() + left_secs * 1000);
        db.collection::<Document>(QUEUE)
            .update_many(
                doc! {},
                doc! { "$set": { "owner": "back", "lease_until": until, "claim": ObjectId::new() } },
            )
            .await
            .unwrap();
        let other = Worker::new(&db).lease(lease).run_until_empty().await.unwrap();
        assert_eq!(other.jobs, 0, "held by another worker: {other:?}");
        commands.clear();
        let report =
            Worker::new(&db).id("back").lease(lease).jobs_per_claim(4).run_until_empty().await.unwrap();
        assert_eq!((report.jobs, report.requeued), (3, 0), "{report:?}");
        let stamps = claim_updates(&commands).len() + commands.named("findAndModify").len();
        if round == 1 {
            assert_eq!(stamps, 0, "taken back without a write: {:?}", commands.names());
        } else {
            assert_eq!(stamps, 1, "claimed again: {:?}", commands.names());
        }
        for u in 0..3 {
            let filter = doc! { "author_id": format!("u{u}"), "author_name": format!("n{round} {u}") };
            assert_eq!(count(&db, "posts", filter).await, 2, "u{u}");
        }
        assert!(queue(&db).await.is_empty());
    }
}

/// A claim's stamp (one `update` command sent with `run_command`, which the driver does
/// not retry) whose connection the server closes is sent again: the worker drains the
/// queue instead of ending its run with the network's error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_whose_connection_closes_is_sent_again() {
    let Some((_server, client)) = testkit::failpoint_server().await.unwrap() else { return };
    let db = client.database("claims_closed");
    docshape::sync::<User>(&db).await.unwrap();
    docshape::sync::<Post>(&db).await.unwrap();
    users_with_posts(&db, 3, 2).await;
    for u in 0..3 {
        denormalized::update_one::<User>(&db, &format!("u{u}"), rename(&format!("closed {u}")))
            .await
            .unwrap();
    }
    // The next `update` command, the claim's stamp, meets a closed connection.
    let fail = doc! {
        "configureFailPoint": "failCommand",
        "mode": { "times": 1 },
        "data": { "failCommands": ["update"], "closeConnection": true },
    };
    client.database("admin").run_command(fail).await.unwrap();
    let report = Worker::new(&db).jobs_per_claim(4).run_until_empty().await.unwrap();
    assert_eq!((report.jobs, report.requeued), (3, 0), "{report:?}");
    for u in 0..3 {
        let filter = doc! { "author_id": format!("u{u}"), "author_name": format!("closed {u}") };
        assert_eq!(count(&db, "posts", filter).await, 2, "u{u}");
    }
    assert!(queue(&db).await.is_empty());
}
