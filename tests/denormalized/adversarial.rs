//! Adversarial refresh jobs and sources, written around the validator: random wrong
//! types, missing fields and oversized arrays. The worker and `lag` return the right
//! answer or a typed error, never panic, and send a bounded number of commands.

use docshape::bson::{doc, Bson, DateTime, Document};
use docshape::denormalized::{self, Worker, QUEUE};
use docshape_testkit as testkit;
use proptest::prelude::Rng as _;
use proptest::test_runner::TestRng;

use super::{Post, User, POSTS};

/// Enough for every kind of wrong value in every field many times over (each is drawn
/// with probability 1/16, about 12 times in each of the eight values; the test checks
/// that each was drawn): the property is per job, and every claim sorts the whole
/// queue, so a larger queue only makes the run longer.
const JOBS: u32 = 200;

/// The kinds of value [`pick`] draws: 0..=5 are wrong, 6 is the right one.
const KINDS: usize = 7;

/// A wrong value (an array of `long` elements among them) or the right one; `drawn`
/// counts the kinds drawn.
fn pick(rng: &mut TestRng, drawn: &mut [usize; KINDS], right: Bson, long: i32) -> Option<Bson> {
    let kind = (rng.next_u32() % 16) as usize;
    drawn[kind.min(KINDS - 1)] += 1;
    match kind {
        0 => None,
        1 => Some(Bson::Null),
        2 => Some(Bson::String("x".into())),
        3 => Some(Bson::Double(f64::NAN)),
        4 => Some(Bson::Array((0..long).map(Bson::Int32).collect())),
        5 => Some(Bson::Document(doc! { "$gt": 1 })),
        _ => Some(right),
    }
}

/// Runs `worker` until the queue is empty. An endless round shows as a run that goes
/// over `budget` commands before it ends: they are counted while it runs, so that a
/// slow machine (every claim sorts the queue, and the server here is an interpreter)
/// does not fail a run that ends, as a wall-clock limit did.
async fn within_budget(
    worker: Worker,
    log: &testkit::CommandLog,
    budget: usize,
) -> Result<denormalized::RefreshReport, denormalized::CopyError> {
    let run = worker.run_until_empty();
    tokio::pin!(run);
    let started = std::time::Instant::now();
    loop {
        tokio::select! {
            report = &mut run => return report,
            () = tokio::time::sleep(std::time::Duration::from_millis(200)) => {
                assert!(log.count() <= budget, "{} commands and the worker has not ended", log.count());
                // A server that stops answering is a hang of another kind.
                assert!(started.elapsed() < std::time::Duration::from_secs(1_800), "no end in 30 minutes");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worker_and_lag_on_adversarial_jobs_are_right_or_typed_errors() {
    let (db, log) = testkit::monitored("copies-adversarial").await.unwrap();
    docshape::sync::<User>(&db).await.unwrap();
    docshape::sync::<Post>(&db).await.unwrap();
    let mut rng = docshape_test_seed::rng("denormalized::adversarial");
    // Per field: the source's name, the job's id part and copy, five queue fields.
    let mut drawn = [[0_usize; KINDS]; 8];
    let users = db.collection::<Document>("users");
    let posts = db.collection::<Document>("posts");
    let mut jobs = Vec::new();
    for i in 0..JOBS {
        let id = format!("u{i}");
        // Sources other programs wrote: the copied field of any type, or missing.
        let mut user = doc! { "_id": &id, "visits": 0_i64 };
        if let Some(name) = pick(&mut rng, &mut drawn[0], Bson::String(format!("name {i}")), 2_000) {
            user.insert("name", name);
        }
        users.insert_one(user).bypass_document_validation(true).await.unwrap();
        posts
            .insert_one(doc! { "_id": i as i64, "author_id": &id, "author_name": "old", "title": "t" })
            .await
            .unwrap();
        // The job's id part may be of another type than the source's `_id`.
        let job_id = pick(&mut rng, &mut drawn[1], Bson::String(id.clone()), 20).unwrap_or(Bson::Null);
        let copy = pick(&mut rng, &mut drawn[2], Bson::String(POSTS.into()), 20).unwrap_or(Bson::Null);
        let mut job = doc! { "_id": { "copy": copy, "id": job_id, "n": i } };
        for (k, (field, right)) in [
            ("seq", Bson::Int64(1)),
            ("enqueued_at", DateTime::now().into()),
            ("due", DateTime::now().into()),
            ("lease_until", DateTime::from_millis(0).into()),
            ("owner", Bson::String("someone".into())),
        ]
        .into_iter()
        .enumerate()
        {
            // Queue fields get short arrays: every claim sorts the queue by `due`.
            if let Some(value) = pick(&mut rng, &mut drawn[3 + k], right, 20) {
                job.insert(field, value);
            }
        }
        jobs.push(job);
    }
    for (field, kinds) in drawn.iter().enumerate() {
        assert!(kinds.iter().all(|&n| n > 0), "field {field} never drew some kind: {kinds:?}");
    }
    for chunk in jobs.chunks(200) {
        db.collection::<Document>(QUEUE).insert_many(chunk.to_vec()).await.unwrap();
    }

    log.clear();
    let lag = denormalized::lag(&db).await.unwrap();
    assert!(log.count() <= 3, "{:?}", log.names());
    assert_eq!(lag.pending, u64::from(JOBS));
    assert!(lag.overdue >= lag.undated);

    log.clear();
    let worker = Worker::new(&db).lease(std::time::Duration::from_secs(600));
    // Each job costs a claim, a source read, a copy write and a completion or a
    // failure record (and a lease renewal and a re-enqueue at most): bounded per job.
    let budget = 10 * JOBS as usize + 20;
    let run = within_budget(worker, &log, budget).await;
    assert!(log.count() <= budget, "{} commands", log.count());
    match run {
        Ok(report) => {
            let skipped: u64 = report.skipped.iter().map(|s| s.jobs).sum();
            assert!(report.jobs + report.failures.len() as u64 + skipped >= 1, "{report:?}");
            // What is left is skipped, failed (leased for later) or another copy's.
            let left = db.collection::<Document>(QUEUE).count_documents(doc! {}).await.unwrap();
            assert_eq!(report.jobs + left, u64::from(JOBS), "{report:?}");
        }
        Err(e) => {
            // A typed error that names its cause.
            assert!(!e.to_string().is_empty());
        }
    }
    // A second run on what is left ends too.
    log.clear();
    let _ = within_budget(Worker::new(&db).lease(std::time::Duration::from_secs(600)), &log, budget).await;
    assert!(log.count() <= budget, "{} commands", log.count());
    denormalized::lag(&db).await.unwrap();
}
