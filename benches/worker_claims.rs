//! Refresh jobs drained per second by one worker claiming one job per `findAndModify`
//! (`jobs_per_claim(1)`, the claim before batched claims) against the default claim of
//! up to 32 jobs: same server, same client, same process, rounds interleaved.
//!
//! Each round makes every copy stale (one `update_many`), writes the jobs into the
//! queue (one `insert_many`, in the queue's documented format: what as many renames
//! through `denormalized::update_one` leave there), and times one worker's
//! `run_until_empty` over them; the copies are checked to hold their sources' names
//! and the queue to be empty afterwards. Driver command monitoring counts the commands
//! each drain sends. The two sides alternate, the order swapped every round; the
//! median of each side and the median of the per-round ratios are reported.
//!
//! `cargo bench -p docshape-benches --bench worker_claims` measures 3 rounds of 500
//! jobs (`-- --jobs 2000 --rounds 1` to change them) against `MONGODB_URI`, or the
//! local SecantusDB the testkit starts; the database `docshape_bench_claims` is
//! dropped first. Under `cargo test` it runs one round of 60 jobs, to show that it
//! works.

use std::time::{Duration, Instant};

use docshape::bson::{doc, DateTime, Document};
use docshape::denormalized::{Worker, QUEUE};
use docshape::refs::Ref;
use docshape::Model;
use docshape_testkit as testkit;
use mongodb::Database;
use serde::{Deserialize, Serialize};

/// A source.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "claim_authors")]
pub struct Author {
    /// Its id.
    #[serde(rename = "_id")]
    pub id: i64,
    /// The copied name.
    pub name: String,
}

/// One copy per source.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "claim_notes")]
#[index(keys(author_id))]
pub struct Note {
    /// Its id.
    #[serde(rename = "_id")]
    pub id: i64,
    /// The source.
    pub author_id: Ref<Author>,
    /// The copy.
    #[denormalized(from = "Author::name", via = "author_id", refresh = "async", max_stale = "5m")]
    pub author_name: String,
}

const COPY: &str = "claim_notes.author_name";

/// One drain: how long it took and how many commands it sent.
struct Drain {
    took: Duration,
    commands: usize,
}

/// Makes every copy stale, queues one job per source, and times a worker claiming
/// `per_claim` jobs at a time until the queue is empty.
async fn drain(
    db: &Database,
    log: &testkit::CommandLog,
    jobs: i64,
    per_claim: usize,
) -> Result<Drain, Box<dyn std::error::Error>> {
    db.collection::<Document>("claim_notes")
        .update_many(doc! {}, doc! { "$set": { "author_name": "stale" } })
        .await?;
    let now = DateTime::now();
    let due = DateTime::from_millis(now.timestamp_millis() + 300_000);
    db.collection::<Document>(QUEUE)
        .insert_many((0..jobs).map(|i| {
            doc! {
                "_id": { "copy": COPY, "id": i },
                "seq": 1_i64,
                "enqueued_at": now,
                "due": due,
                "lease_until": DateTime::from_millis(0),
            }
        }))
        .await?;
    let worker = Worker::new(db).only([COPY]).jobs_per_claim(per_claim);
    let before = log.count();
    let start = Instant::now();
    let report = worker.run_until_empty().await?;
    let took = start.elapsed();
    let commands = log.count() - before;
    assert_eq!((report.jobs, report.requeued), (jobs as u64, 0), "{report:?}");
    assert!(report.failures.is_empty(), "{report:?}");
    assert_eq!(db.collection::<Document>(QUEUE).count_documents(doc! {}).await?, 0);
    let stale =
        db.collection::<Document>("claim_notes").count_documents(doc! { "author_name": "stale" }).await?;
    assert_eq!(stale, 0, "every copy refreshed");
    Ok(Drain { took, commands })
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let measuring = args.iter().any(|a| a == "--bench");
    let given = |name: &str| {
        args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse::<i64>().ok())
    };
    let (rounds, jobs) = if measuring { (3, 500) } else { (1, 60) };
    let (rounds, jobs) = (given("--rounds").unwrap_or(rounds), given("--jobs").unwrap_or(jobs));
    let log = testkit::CommandLog::counting();
    let client = testkit::monitored_client(&log).await?;
    let db = client.database("docshape_bench_claims");
    db.drop().await?;
    docshape::sync::<Author>(&db).await?;
    docshape::sync::<Note>(&db).await?;
    db.collection::<Document>("claim_authors")
        .insert_many((0..jobs).map(|i| doc! { "_id": i, "name": format!("author {i}") }))
        .await?;
    db.collection::<Document>("claim_notes")
        .insert_many((0..jobs).map(|i| doc! { "_id": i, "author_id": i, "author_name": "stale" }))
        .await?;
    let batched = Worker::DEFAULT_JOBS_PER_CLAIM;
    let (mut one, mut many, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let mut commands = (0, 0);
    for round in 0..rounds {
        let round = round as usize;
        let (a, b) = if round.is_multiple_of(2) {
            let a = drain(&db, &log, jobs, 1).await?;
            (a, drain(&db, &log, jobs, batched).await?)
        } else {
            let b = drain(&db, &log, jobs, batched).await?;
            (drain(&db, &log, jobs, 1).await?, b)
        };
        let (rate_one, rate_many) = (jobs as f64 / a.took.as_secs_f64(), jobs as f64 / b.took.as_secs_f64());
        eprintln!(
            "round {round}: 1 per claim {rate_one:.1} jobs/s ({} commands), {batched} per claim {rate_many:.1} jobs/s ({} commands)",
            a.commands, b.commands
        );
        one.push(rate_one);
        many.push(rate_many);
        ratios.push(rate_many / rate_one);
        commands = (a.commands, b.commands);
    }
    println!(
        "worker drain of {jobs} jobs, {rounds} interleaved rounds: 1 job per claim {:.1} jobs/s ({:.2} commands a job), \
         {batched} per claim {:.1} jobs/s ({:.2} commands a job), median ratio {:.2}x",
        median(&one),
        commands.0 as f64 / jobs as f64,
        median(&many),
        commands.1 as f64 / jobs as f64,
        median(&ratios)
    );
    Ok(())
}
