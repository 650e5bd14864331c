//! A community Q&A site: several patterns on one database, used together through the
//! generated API only (no query or update written by hand).
//!
//! - **Users** carry a reputation counter and a display name shown everywhere; their
//!   profile card is cached in Redis, and every docshape writer of a user deletes the
//!   cached card (or refuses to write when no invalidation is installed).
//! - **Questions** moved from v1 (`tags` one comma-separated string) to v2 (an array):
//!   old documents are read as v2 and upgraded by the next write, a vote included; the
//!   rows over `tags` cannot see v1 documents until the backfill has run, which the
//!   model states in a waiver. A tag's questions are paged newest first with keyset
//!   cursors; the hot list is sorted by score.
//! - **Votes**: one per user per item, an upsert write row over a unique index; a vote,
//!   the question's score and the author's reputation are written in one transaction.
//! - **Answers** embed their comments up to 50 (the outlier pattern: the few answers
//!   with thousands of comments keep the rest in an overflow collection), each with a
//!   reference to its author and a copy of the author's name; an answer keeps a copy of
//!   its author's name too. A rename reaches every copy (the answer's, and each comment
//!   of that author, embedded or in the overflow collection) through a worker.
//! - **Notifications**: one bucket document per user per day, at most 500 a day.
//! - **Sessions and rate limits** live in Redis, each key family with its TTL decision.
//!
//! Run: `cargo run -p docshape-examples --example qa` (no server needed: the testkit
//! starts a local MongoDB-wire server and a redis-server; set `MONGODB_URI` and
//! `REDIS_URL` to use real ones).

// clippy reads equal keys in different `#[access]` rows as duplicated attributes, a
// known false positive for derive helper attributes (rust-clippy#13238).
#![allow(clippy::duplicated_attributes)]

use docshape::access::{UpdateError, Upserted};
use docshape::bson::doc;
use docshape::bson::oid::ObjectId;
use docshape::bson::{DateTime, Document};
use docshape::bucket::BucketError;
use docshape::denormalized::{self, Worker};
use docshape::keys::prelude::*;
use docshape::refs::Ref;
use docshape::versioning::{self, BackfillOptions};
use docshape::{Embedded, Model};
use docshape_examples::fresh_database;
use serde::{Deserialize, Serialize};

/// A member of the site.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "users", strict)]
#[access(
    name = "profile",
    operation = "The profile card beside every post",
    filter(_id),
    fields(name, reputation),
    view(name = ProfileCard, derive(Debug, Clone, PartialEq)),
    cache = ProfileCache,
    freq = "300 r/s",
    consistency = "eventual ok"
)]
#[access(
    name = "add_reputation",
    operation = "Reputation from a vote",
    filter(_id),
    update(inc(reputation)),
    freq = "20 w/s",
    consistency = "strong (same doc)"
)]
struct User {
    #[serde(rename = "_id")]
    #[validate(max_length = 64)]
    id: String,
    #[validate(min_length = 1, max_length = 80)]
    name: String,
    reputation: i64,
}

/// The profile card's cache: a minute at most, and deleted by every docshape writer of
/// the user once `keys::invalidate_on_write` is installed.
#[derive(Debug, Clone, PartialEq, docshape::KeyFamily)]
#[key(pattern = "cache:user:{id}", kind = string, value = ProfileCard, ttl = "60s", note = "invalidate on user write")]
struct ProfileCache {
    id: String,
}

/// A signed-in member's session, kept while it is used.
#[derive(Debug, Clone, PartialEq, docshape::KeyFamily)]
#[key(pattern = "session:{token}", kind = hash, ttl = "14d", sliding, note = "auth token data")]
struct Session {
    token: String,
}

/// Requests per client address per minute.
#[derive(Debug, Clone, PartialEq, docshape::KeyFamily)]
#[key(pattern = "rate:{ip}:{minute}", kind = counter, ttl = "120s", note = "rate limiting window")]
struct RateWindow {
    ip: std::net::IpAddr,
    minute: u64,
}

/// A question, at version 2: `tags` is an array (v1 stored one comma-separated string).
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "questions", version = 2, migrate(v1 = QuestionV1))]
#[index(keys(tags, created_at = -1, _id = -1))]
#[index(keys(tags, score = -1))]
#[access(
    name = "questions_tagged",
    operation = "A tag's page, newest first",
    filter(tags),
    sort(created_at = -1),
    paginate,
    freq = "50 r/s",
    consistency = "eventual ok",
    allow(old_version_field, reason = "the backfill runs before the tag pages ship")
)]
#[access(
    name = "hot_by_tag",
    operation = "A tag's highest-voted questions",
    filter(tags),
    sort(score = -1),
    freq = "20 r/s",
    consistency = "eventual ok",
    allow(old_version_field, reason = "the backfill runs before the tag pages ship")
)]
#[access(
    name = "add_score",
    operation = "A vote on a question",
    filter(_id),
    update(inc(score)),
    freq = "20 w/s",
    consistency = "strong (same doc)"
)]
struct Question {
    #[serde(rename = "_id")]
    #[validate(max_length = 64)]
    id: String,
    #[validate(min_length = 10, max_length = 200)]
    title: String,
    #[reference(reason = "a member asks many questions and changes on their own")]
    author: Ref<User>,
    #[validate(max_items = 5, unique_items, items(min_length = 1, max_length = 35))]
    tags: Vec<String>,
    score: i64,
    created_at: DateTime,
    #[schema_version]
    schema_version: i32,
}

/// Version 1, as the old code wrote it: tags as one comma-separated string.
#[derive(Serialize, Deserialize, Embedded)]
struct QuestionV1 {
    #[serde(rename = "_id")]
    #[validate(max_length = 64)]
    id: String,
    title: String,
    author: Ref<User>,
    #[validate(max_length = 200)]
    tags: String,
    score: i64,
    created_at: DateTime,
}

impl From<QuestionV1> for Question {
    fn from(v1: QuestionV1) -> Self {
        let tags = v1.tags.split(',').map(str::trim).filter(|t| !t.is_empty()).map(str::to_owned).collect();
        Question {
            id: v1.id,
            title: v1.title,
            author: v1.author,
            tags,
            score: v1.score,
            created_at: v1.created_at,
            schema_version: 2,
        }
    }
}

/// One member's vote on one item: the unique index makes the upsert insert-if-absent.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "votes", strict)]
#[index(keys(item_id, user_id), unique)]
#[access(
    name = "vote",
    operation = "Vote, or change one's vote",
    filter(item_id, user_id),
    update(set(value)),
    upsert(insert(created_at)),
    freq = "20 w/s",
    consistency = "strong (same doc)"
)]
struct Vote {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[validate(max_length = 64)]
    item_id: String,
    #[validate(max_length = 64)]
    user_id: String,
    #[validate(minimum = -1, maximum = 1)]
    value: i32,
    created_at: DateTime,
}

/// A comment under an answer.
#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
struct Comment {
    #[reference(reason = "members change on their own")]
    author: Ref<User>,
    #[denormalized(
        from = "User::name",
        via = "author",
        refresh = "async",
        max_stale = "5m",
        reason = "a comment shows its author's name; a rename may take minutes to reach it"
    )]
    #[validate(max_length = 80)]
    author_name: String,
    #[validate(min_length = 1, max_length = 600)]
    text: String,
    at: DateTime,
}

/// An answer, with its first 50 comments embedded and the rest (for the few answers
/// that draw thousands) in `answer_comments`.
#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "answers")]
#[index(keys(question, score = -1))]
#[index(keys(author))]
#[index(keys("comments.author"))]
#[access(
    name = "answers_to",
    operation = "A question's answers, best first",
    filter(question),
    sort(score = -1),
    fields(author_name, body, score, comment_count),
    freq = "50 r/s",
    consistency = "eventual ok"
)]
struct Answer {
    #[serde(rename = "_id")]
    #[validate(max_length = 64)]
    id: String,
    #[reference(reason = "a question has many answers, read one page at a time")]
    question: Ref<Question>,
    #[reference(reason = "members change on their own")]
    author: Ref<User>,
    #[denormalized(
        from = "User::name",
        via = "author",
        refresh = "async",
        max_stale = "5m",
        reason = "a renamed author may show the old name for minutes"
    )]
    #[validate(max_length = 80)]
    author_name: String,
    #[validate(min_length = 1, max_length = 30000)]
    body: String,
    score: i64,
    #[outlier(threshold = 50, overflow = "answer_comments", flag = more_comments, count = comment_count, per_doc = 200)]
    comments: Vec<Comment>,
    more_comments: bool,
    comment_count: i64,
}

/// A notification.
#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
struct Note {
    at: DateTime,
    #[validate(max_length = 200)]
    text: String,
}

/// A member's notifications of one day: at most 100 a document, 500 a day.
#[derive(Debug, Serialize, Deserialize, Model)]
#[model(collection = "notifications")]
#[bucket(series = user_id, period = day, per = "day", max = 100, items = notes, time = at, cap = 500)]
struct NotificationDay {
    #[serde(rename = "_id")]
    id: String,
    #[validate(max_length = 64)]
    user_id: String,
    day: String,
    count: i32,
    notes: Vec<Note>,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let db = fresh_database("docshape_qa").await?;
    // A transaction's session comes from the client the database belongs to (an
    // application builds its own: the guide's chapter `docshape::guide::application`).
    let client = db.client().clone();
    let redis_server = docshape_testkit::redis::server()?;
    let mut redis = redis_server.database().await?;
    ProfileCache { id: "u_ann".into() }.delete(&mut redis).await?;
    ProfileCache { id: "u_bob".into() }.delete(&mut redis).await?;

    println!("== sync_all: every collection with its validator and indexes (the bucket's cap counters too)");
    for report in docshape::sync_all(&db, Default::default()).await? {
        println!("   {report}");
    }

    let users = [("u_ann", "Ann"), ("u_bob", "Bob")];
    User::collection(&db)
        .insert_many(users.map(|(id, name)| User { id: id.into(), name: name.into(), reputation: 1 }))
        .await?;

    println!("\n== questions: v1 documents from the old release, v2 from this one");
    // The old release wrote v1 documents; this one only reads them. The v1 shape is
    // inserted through the driver, as the old code did.
    let old = db.collection::<Document>("questions");
    for i in 0..3_i64 {
        old.insert_one(doc! {
            "_id": format!("q_old_{i}"),
            "title": format!("How do lifetimes work, part {i}?"),
            "author": "u_bob",
            "tags": "rust, lifetimes",
            "score": i,
            "created_at": DateTime::from_millis(1_780_000_000_000 + i * 60_000),
        })
        .await?;
    }
    let questions = Question::collection(&db);
    for i in 0..4_i64 {
        questions
            .insert_one(Question {
                id: format!("q_new_{i}"),
                title: format!("Which async runtime for a CLI, take {i}?"),
                author: Ref::new("u_ann".into()),
                tags: vec!["rust".into(), "async".into()],
                score: 0,
                created_at: DateTime::from_millis(1_790_000_000_000 + i * 60_000),
                schema_version: 2,
            })
            .await?;
    }
    println!("   stored: {}", versioning::version_counts::<Question>(&db).await?);
    let q0 = versioning::find_one::<Question>(&db, doc! { "_id": "q_old_0" }).await?.ok_or("no q_old_0")?;
    println!("   q_old_0 stored at v{}, read as tags {:?}", q0.stored_version, q0.value.tags);
    let before = Question::hot_by_tag("rust").all(&db).await?;
    if before.len() != 4 {
        return Err(
            format!("before the backfill the row saw {} questions, not the 4 at v2", before.len()).into()
        );
    }
    println!(
        "   hot_by_tag(\"rust\") before the backfill: {} of 7 (a row over `tags` cannot see v1 documents)",
        before.len()
    );

    println!("\n== a vote: insert-if-absent, then score and reputation, in one transaction");
    let now = DateTime::now();
    let (db_ref, item, voter, author) = (&db, "q_old_1", "u_ann", "u_bob");
    let voted = docshape::transaction(&client, |tx| {
        Box::pin(async move {
            let vote = Vote::vote(item, voter, 1, now).session(tx).run(db_ref).await?;
            // The question is still v1: the write row upgrades it to v2 and then
            // writes, without losing a concurrent writer's change.
            Question::add_score(item, 1_i64).session(tx).run(db_ref).await?;
            Ok::<_, UpdateError>(vote)
        })
    })
    .await;
    match voted {
        Ok(Upserted::Inserted { id }) => println!("   first vote {id}; q_old_1 upgraded and scored"),
        Ok(Upserted::Updated { id }) => println!("   vote {id} changed"),
        Err(docshape::TransactionError::Unsupported) => {
            println!("   (a standalone server: no transactions; the writes go one by one)");
            Vote::vote(item, voter, 1, now).run(&db).await?;
            Question::add_score(item, 1_i64).run(&db).await?;
        }
        Err(e) => return Err(e.into()),
    }
    // The reputation row writes a cached model: it deletes the card through Redis.
    User::add_reputation(author, 10_i64).run(&db, &mut redis).await?;
    let again = Vote::vote(item, voter, -1, now).run(&db).await?;
    println!("   the same member votes again: {again:?} (one vote per member and item)");
    let raw = old.find_one(doc! { "_id": item }).await?.ok_or("q_old_1 is gone")?;
    println!(
        "   q_old_1 stored now: schema_version {:?}, tags {:?}",
        raw.get("schema_version"),
        raw.get("tags")
    );

    println!("\n== the backfill upgrades the rest; then the tag rows see every question");
    let report = versioning::backfill::<Question>(&db, BackfillOptions::default()).await?;
    println!("   upgraded {}; counts now {}", report.progress.upgraded, report.counts);
    let hot = Question::hot_by_tag("rust").first(3, &db).await?;
    println!("   hot_by_tag(\"rust\"): {:?}", hot.iter().map(|q| (&q.id, q.score)).collect::<Vec<_>>());
    if Question::hot_by_tag("rust").count(&db).await? != 7 {
        return Err("the backfill left questions the tag rows cannot see".into());
    }
    let mut page = Question::questions_tagged("rust").page_size(3).fetch(&db).await?;
    let mut pages = vec![page.items.iter().map(|q| q.id.clone()).collect::<Vec<_>>()];
    while let Some(next) = page.next.clone() {
        page = Question::questions_tagged("rust").page_size(3).after(&next).fetch(&db).await?;
        pages.push(page.items.iter().map(|q| q.id.clone()).collect());
    }
    println!("   questions_tagged(\"rust\"), pages of 3, newest first: {pages:?}");

    println!("\n== answers with comments: 50 embedded, the rest in answer_comments");
    let mut answer = Answer {
        id: "a_1".into(),
        question: Ref::new("q_old_1".into()),
        author: Ref::new("u_bob".into()),
        author_name: String::new(),
        body: "A lifetime names a region of code a reference is valid for.".into(),
        score: 0,
        comments: vec![],
        more_comments: false,
        comment_count: 0,
    };
    // Fills the copy of the author's name from the user, then inserts.
    docshape::relation::insert_one(&db, &mut answer).await?;
    for i in 0..120 {
        let (author, name) = if i % 2 == 0 { ("u_ann", "Ann") } else { ("u_bob", "Bob") };
        let comment = Comment {
            author: Ref::new(author.into()),
            author_name: name.into(),
            text: format!("comment {i}"),
            at: DateTime::from_millis(1_790_000_000_000 + i),
        };
        Answer::push_comments(&db, "a_1", &[comment]).await?;
    }
    let all = Answer::load_comments(&db, "a_1").await?;
    let shown = Answer::answers_to(Ref::new("q_old_1".into())).first(10, &db).await?;
    println!(
        "   a_1: {} comments loaded; the answer row says {:?} by {:?}",
        all.len(),
        shown.first().map(|a| a.comment_count),
        shown.first().map(|a| &a.author_name)
    );

    println!("\n== a cached profile card, and a rename");
    let card = User::profile("u_bob").one(&db, &mut redis).await?.ok_or("no u_bob")?;
    println!("   profile(\"u_bob\") -> {card:?} (now cached for 60 s)");
    // Without an invalidation installed, a docshape writer refuses to leave the card
    // stale by accident.
    match denormalized::update_one::<User>(&db, "u_bob", doc! { "$set": { "name": "Robert" } }).await {
        Err(e) => println!("   rename without invalidation: refused ({e})"),
        Ok(_) => return Err("a cached user was renamed with no invalidation installed".into()),
    }
    docshape::keys::invalidate_on_write(&db, redis.clone());
    let renamed =
        denormalized::update_one::<User>(&db, "u_bob", doc! { "$set": { "name": "Robert" } }).await?;
    let card = User::profile("u_bob").one(&db, &mut redis).await?.ok_or("no u_bob")?;
    println!(
        "   renamed with invalidation: {} copy job(s) queued; profile -> {card:?}",
        renamed.jobs_enqueued()
    );
    let worker = Worker::new(&db).run_until_empty().await?;
    let shown = Answer::answers_to(Ref::new("q_old_1".into())).first(1, &db).await?;
    println!(
        "   the worker ran {} job(s) (the answers' copy, the embedded comments', the overflow comments') and rewrote {} document(s): a_1 now by {:?}",
        worker.jobs,
        worker.documents_updated,
        shown.first().map(|a| &a.author_name)
    );
    if card.name != "Robert" || shown.first().map(|a| a.author_name.as_str()) != Some("Robert") {
        return Err("the rename did not reach the card and the copies".into());
    }
    // Bob's comments, embedded and in `answer_comments`, show the new name; Ann's
    // are left alone.
    let comments = Answer::load_comments(&db, "a_1").await?;
    let names = |who: &str| -> std::collections::BTreeSet<&str> {
        comments.iter().filter(|c| c.author.id() == who).map(|c| c.author_name.as_str()).collect()
    };
    println!(
        "   the {} comments by u_bob now show {:?}, those by u_ann {:?}",
        comments.iter().filter(|c| c.author.id() == "u_bob").count(),
        names("u_bob"),
        names("u_ann")
    );
    if names("u_bob") != ["Robert"].into() || names("u_ann") != ["Ann"].into() || comments.len() != 120 {
        return Err("the rename did not reach exactly the renamed author's comments".into());
    }

    println!("\n== notifications: one bucket per member per day, at most 500 a day");
    let notes: Vec<Note> = (0..520)
        .map(|i| Note {
            at: DateTime::from_millis(1_790_000_000_000 + i),
            text: format!("someone answered, #{i}"),
        })
        .collect();
    match NotificationDay::append_many(&db, "u_ann", &notes).await {
        Err(BucketError::Incomplete(stopped)) if matches!(stopped.cause, BucketError::Capped { .. }) => {
            println!(
                "   520 appended: stopped at the cap ({}); {} not stored",
                stopped.cause,
                stopped.unsent.len()
            )
        }
        Ok(done) => return Err(format!("the cap let 520 notifications through: {done:?}").into()),
        Err(e) => return Err(e.into()),
    }
    let buckets =
        db.collection::<Document>("notifications").count_documents(doc! { "user_id": "u_ann" }).await?;
    println!("   stored in {buckets} bucket documents of at most 100");

    println!("\n== sessions and rate limits in Redis");
    let session = Session { token: "t0k3n".into() };
    session.hset_many(&mut redis, &[("user", "u_ann"), ("device", "laptop")]).await?;
    println!("   {} -> {:?}", session.key(), session.hgetall(&mut redis).await?);
    let window = RateWindow { ip: "127.0.0.1".parse()?, minute: 29_833_333 };
    let mut last = 0;
    for _ in 0..3 {
        last = window.incr(&mut redis, 1).await?;
    }
    println!("   {} -> {last} requests this minute", window.key());
    session.delete(&mut redis).await?;
    window.delete(&mut redis).await?;
    println!("\ndone");
    Ok(())
}
