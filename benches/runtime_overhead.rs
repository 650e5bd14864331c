//! docshape's generated and runtime code against hand-written `mongodb` driver code
//! doing the same thing: same server, same client, same process, interleaved.
//!
//! Each operation runs as pairs, docshape then hand-written or the other way round
//! (swapped every pair), each call timed alone; a round's ratio is the median of
//! docshape's calls over the median of the hand-written ones, and the median over the
//! rounds is reported with its spread. Every command the client starts is counted by
//! driver command monitoring, so the table also gives the round trips of each call.
//! Both sides return the same values (asserted).
//!
//! `cargo bench -p docshape-benches --bench runtime_overhead` measures (against
//! `MONGODB_URI`, or the local SecantusDB the testkit starts; the database
//! `docshape_bench_overhead` is dropped first). Under `cargo test` it runs one tiny
//! round, to show that it works and that both sides agree.

use std::future::Future;
use std::time::Instant;

use docshape::bson::{doc, oid::ObjectId, DateTime, Document};
use docshape::paginate::CursorKey;
use docshape::{relation, versioning, Model};
use docshape_benches::{Cart, CartLine, Post, PostById, Reading, SensorDay, StampedNote, User, UserV1};
use docshape_testkit as testkit;
use futures_util::TryStreamExt;
use mongodb::options::Hint;
use mongodb::Database;

/// How much to run.
struct Plan {
    rounds: usize,
    /// Pairs per round, per operation (pages of the `$or` feed are slow on the local
    /// server: each is a collection scan).
    pairs: usize,
    page_pairs: usize,
    posts: usize,
}

/// One side's calls: microseconds and commands sent, per call.
#[derive(Default)]
struct Calls {
    micros: Vec<f64>,
    commands: Vec<usize>,
}

/// An operation's rounds.
#[derive(Default)]
struct Row {
    docshape: Calls,
    hand: Calls,
    ratios: Vec<f64>,
}

struct Bench {
    db: Database,
    commands: testkit::CommandLog,
}

impl Bench {
    /// Runs `f`, returning its output, wall time in microseconds and commands sent.
    async fn call<T>(&self, f: impl Future<Output = T>) -> (T, f64, usize) {
        let before = self.commands.count();
        let start = Instant::now();
        let out = f.await;
        let micros = start.elapsed().as_secs_f64() * 1e6;
        (out, micros, self.commands.count() - before)
    }
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

impl Row {
    fn record(&mut self, docshape: bool, micros: f64, commands: usize) {
        let side = if docshape { &mut self.docshape } else { &mut self.hand };
        side.micros.push(micros);
        side.commands.push(commands);
    }

    /// Closes a round: the ratio of the medians of the calls made in it.
    fn end_round(&mut self, pairs: usize) {
        let tail = |c: &Calls| median(&c.micros[c.micros.len() - pairs..]);
        self.ratios.push(tail(&self.docshape) / tail(&self.hand));
    }

    fn print(&self, name: &str) {
        let commands = |c: &Calls| {
            let (lo, hi) = (c.commands.iter().min().unwrap_or(&0), c.commands.iter().max().unwrap_or(&0));
            if lo == hi {
                format!("{lo}")
            } else {
                format!("{lo}-{hi}")
            }
        };
        let (lo, hi) =
            self.ratios.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), r| (l.min(*r), h.max(*r)));
        println!(
            "| {name} | {:.0} µs | {:.0} µs | {:.3}x | {lo:.3}x-{hi:.3}x | {} | {} |",
            median(&self.docshape.micros),
            median(&self.hand.micros),
            median(&self.ratios),
            commands(&self.docshape),
            commands(&self.hand),
        );
    }

    /// Round trips must be the hand-written minimum: a property, not a timing.
    fn assert_round_trips(&self, name: &str) {
        let total = |c: &Calls| c.commands.iter().sum::<usize>();
        assert_eq!(
            total(&self.docshape),
            total(&self.hand),
            "{name}: commands sent, docshape vs hand-written"
        );
    }
}

fn user(i: usize) -> User {
    User {
        id: ObjectId::new(),
        full_name: format!("User {i}"),
        email: format!("user{i}@example.com"),
        created_at: DateTime::from_millis(1_786_000_000_000 + i as i64),
        tags: vec!["rust".into(), "mongodb".into()],
        schema_version: 2,
    }
}

/// The hand-written feed cursor: the boundary's sort values as text.
fn hand_cursor(p: &Post) -> String {
    format!("{}:{}", p.created_at.timestamp_millis(), p.id.to_hex())
}

fn parse_hand_cursor(c: &str) -> (DateTime, ObjectId) {
    let (t, id) = c.split_once(':').expect("a cursor this program wrote");
    (DateTime::from_millis(t.parse().expect("millis")), ObjectId::parse_str(id).expect("an id"))
}

/// A hand-written page after `cursor` of the date-sorted feed: the seed's `$or`, with
/// the first key's bound lifted out of it, as docshape sends.
async fn hand_page_by_date(
    db: &Database,
    cursor: &str,
) -> mongodb::error::Result<(Vec<Post>, Option<String>)> {
    let (t, id) = parse_hand_cursor(cursor);
    let filter = doc! {
        "author_id": "u_42",
        "created_at": { "$lte": t },
        "$or": [ { "created_at": { "$lt": t } }, { "created_at": t, "_id": { "$lt": id } } ],
    };
    let mut items: Vec<Post> = db
        .collection::<Post>(Post::COLLECTION)
        .find(filter)
        .sort(doc! { "created_at": -1, "_id": -1 })
        .limit(21)
        .await?
        .try_collect()
        .await?;
    let more = items.len() > 20;
    items.truncate(20);
    let next = if more { items.last().map(hand_cursor) } else { None };
    Ok((items, next))
}

/// A hand-written page after `cursor` (an `_id` in hex) of the `_id`-sorted feed.
async fn hand_page_by_id(
    db: &Database,
    cursor: &str,
) -> mongodb::error::Result<(Vec<PostById>, Option<String>)> {
    let id = ObjectId::parse_str(cursor).expect("an id");
    let mut items: Vec<PostById> = db
        .collection::<PostById>(PostById::COLLECTION)
        .find(doc! { "author_id": "u_42", "_id": { "$lt": id } })
        .sort(doc! { "_id": -1 })
        .limit(21)
        .await?
        .try_collect()
        .await?;
    let more = items.len() > 20;
    items.truncate(20);
    let next = if more { items.last().map(|p| p.id.to_hex()) } else { None };
    Ok((items, next))
}

/// A hand-written append of one reading to its day bucket: the same guarded upsert,
/// keeping the same aggregates.
async fn hand_append(db: &Database, series: &str, r: &Reading) -> mongodb::error::Result<()> {
    let day = r.t.try_to_rfc3339_string().expect("a date")[..10].to_owned();
    db.collection::<Document>(SensorDay::COLLECTION)
        .update_one(
            doc! { "_id": format!("{series}:{day}"), "count": { "$lte": 1439_i64 } },
            doc! {
                "$push": { "readings": { "t": r.t, "v": r.v } },
                "$setOnInsert": { "sensor_id": series, "day": day },
                "$inc": { "count": 1, "sum_v": r.v },
                "$min": { "min_v": r.v },
                "$max": { "max_v": r.v },
            },
        )
        .upsert(true)
        .hint(Hint::Name("_id_".into()))
        .await?;
    Ok(())
}

/// A hand-written read of a user stored at any version: v1 has no version field.
/// The finder's query by hand: the same filter, sort, projection and limit.
async fn hand_recent_titles(db: &Database, author: &str) -> mongodb::error::Result<Vec<(String, DateTime)>> {
    #[derive(serde::Deserialize)]
    struct Title {
        title: String,
        created_at: DateTime,
    }
    let found: Vec<Title> = db
        .collection::<Title>(Post::COLLECTION)
        .find(doc! { "author_id": author })
        .sort(doc! { "created_at": -1 })
        .projection(doc! { "title": 1, "created_at": 1, "_id": 0 })
        .limit(20)
        .await?
        .try_collect()
        .await?;
    Ok(found.into_iter().map(|t| (t.title, t.created_at)).collect())
}

/// The bounded push by hand: the guard in the filter, one update.
async fn hand_add_line(db: &Database, cart: &str, line: &CartLine) -> Result<(), String> {
    let line = docshape::bson_compat::to_bson(line).map_err(|e| e.to_string())?;
    let done = db
        .collection::<Document>(Cart::COLLECTION)
        .update_one(
            doc! { "_id": cart, "lines.99": { "$exists": false } },
            doc! { "$push": { "lines": line }, "$inc": { "total": 1_i64 } },
        )
        .await
        .map_err(|e| e.to_string())?;
    if done.matched_count == 1 {
        Ok(())
    } else {
        Err(format!("cart {cart} is full or missing"))
    }
}

/// The revision-guarded write row's command by hand: the filter names the document and
/// the revision the caller read; the update sets the body and applies the stamps, the
/// server's clock into `updated_at` and the revision up by one (an `i64`, as stored).
fn hand_edit_command(id: &str, rev: i64, body: &str) -> (Document, Document) {
    (
        doc! { "_id": { "$eq": id }, "rev": { "$eq": rev } },
        doc! { "$set": { "body": body }, "$currentDate": { "updated_at": true }, "$inc": { "rev": 1_i64 } },
    )
}

/// The revision-guarded write by hand: one `update_one`; nothing matched is an error
/// (the hand-written code does not read again to say why).
async fn hand_edit_if_at(db: &Database, id: &str, rev: i64, body: &str) -> Result<(), String> {
    let (filter, update) = hand_edit_command(id, rev, body);
    let done = db
        .collection::<Document>(StampedNote::COLLECTION)
        .update_one(filter, update)
        .await
        .map_err(|e| e.to_string())?;
    if done.matched_count == 1 {
        Ok(())
    } else {
        Err(format!("note {id} is not at revision {rev}"))
    }
}

/// A note at revision 1, as `relation::insert_one` stores it (both times from this
/// machine's clock).
fn stamped_note(id: &str) -> StampedNote {
    let zero = DateTime::from_millis(0);
    StampedNote { id: id.to_owned(), body: "first".into(), created_at: zero, updated_at: zero, rev: 0 }
}

async fn hand_versioned_read(
    db: &Database,
    id: ObjectId,
) -> Result<Option<User>, Box<dyn std::error::Error>> {
    let Some(d) = db.collection::<Document>(User::COLLECTION).find_one(doc! { "_id": id }).await? else {
        return Ok(None);
    };
    Ok(Some(match d.get("schema_version") {
        None => User::from(docshape::bson_compat::from_document::<UserV1>(d)?),
        Some(_) => docshape::bson_compat::from_document::<User>(d)?,
    }))
}

async fn seed(b: &Bench, plan: &Plan) -> Result<(Vec<ObjectId>, Vec<ObjectId>), Box<dyn std::error::Error>> {
    let db = &b.db;
    docshape::sync::<User>(db).await?;
    docshape::sync::<Post>(db).await?;
    docshape::sync::<PostById>(db).await?;
    docshape::sync::<SensorDay>(db).await?;
    docshape::sync::<StampedNote>(db).await?;
    for id in ["note_ds", "note_hw"] {
        relation::insert_one(db, &mut stamped_note(id)).await?;
    }
    let posts: Vec<Post> = (0..plan.posts)
        .map(|i| Post {
            id: ObjectId::new(),
            author_id: if i % 4 == 3 { "u_7".into() } else { "u_42".into() },
            title: format!("Post {i}"),
            // Three posts a minute: ties that `_id` breaks.
            created_at: DateTime::from_millis(1_786_000_000_000 + (i / 3) as i64 * 60_000),
        })
        .collect();
    Post::collection(db).insert_many(&posts).await?;
    let by_id: Vec<PostById> = posts
        .iter()
        .map(|p| PostById {
            id: p.id,
            author_id: p.author_id.clone(),
            title: p.title.clone(),
            created_at: p.created_at,
        })
        .collect();
    PostById::collection(db).insert_many(&by_id).await?;
    let current: Vec<User> = (0..50).map(user).collect();
    db.collection::<User>(User::COLLECTION).insert_many(&current).await?;
    let old: Vec<Document> = (0..50)
        .map(|i| {
            let u = user(100 + i);
            doc! { "_id": u.id, "name": u.full_name, "email": u.email, "created_at": u.created_at, "tags": u.tags }
        })
        .collect();
    db.collection::<Document>(User::COLLECTION).insert_many(&old).await?;
    let ids = |docs: &[Document]| docs.iter().filter_map(|d| d.get_object_id("_id").ok()).collect::<Vec<_>>();
    Ok((current.iter().map(|u| u.id).collect(), ids(&old)))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let measuring = std::env::args().any(|a| a == "--bench");
    let plan = if measuring {
        Plan { rounds: 5, pairs: 60, page_pairs: 10, posts: 400 }
    } else {
        Plan { rounds: 1, pairs: 2, page_pairs: 2, posts: 60 }
    };
    let commands = testkit::CommandLog::counting();
    let client = testkit::monitored_client(&commands).await?;
    let db = client.database("docshape_bench_overhead");
    db.drop().await?;
    let b = Bench { db, commands };
    let (current_ids, old_ids) = seed(&b, &plan).await?;
    let db = &b.db;
    let key = CursorKey::new(b"overhead-cursor-secret-0123456789".to_vec())?;

    // The cursors both sides start from: after the first page.
    let first = Post::posts_by_author("u_42").signed_with(&key).fetch(db).await?;
    let ds_date_cursor = first.next.clone().expect("a second page");
    let hand_date_cursor = hand_cursor(first.items.last().expect("a full page"));
    let first_by_id = PostById::newest_by_author("u_42").signed_with(&key).fetch(db).await?;
    let ds_id_cursor = first_by_id.next.clone().expect("a second page");
    let hand_id_cursor = first_by_id.items.last().expect("a full page").id.to_hex();

    let names = [
        "insert",
        "find by id",
        "page fetch, date sort (`$or`)",
        "page fetch, `_id` sort",
        "bucket append",
        "versioned read (v1 document)",
        "finder, first 20 projected",
        "bounded push (write row)",
        "stamped write row, revision-guarded",
    ];
    // Both sides send the very same command: the row's filter and update, stamps
    // included, are the hand-written ones.
    assert_eq!(
        StampedNote::edit_if_at("note_ds", 7_i64, "text").command()?,
        hand_edit_command("note_ds", 7, "text")
    );
    // The revision each side's note is at: both start at 1, each write adds one.
    let (mut ds_rev, mut hw_rev) = (1_i64, 1_i64);
    let mut rows: Vec<Row> = names.iter().map(|_| Row::default()).collect();
    let mut serial = 1000;
    for round in 0..plan.rounds {
        // A fresh cart a side every round, so neither fills up.
        let carts = [format!("cart_ds_{round}"), format!("cart_hw_{round}")];
        for cart in &carts {
            Cart::collection(db).insert_one(Cart { id: cart.clone(), lines: Vec::new(), total: 0 }).await?;
        }
        for pair in 0..plan.pairs.max(plan.page_pairs) {
            // Alternate which side goes first, so neither always finds a warmer cache.
            let docshape_first = pair % 2 == 0;
            {
                for side in [docshape_first, !docshape_first] {
                    if pair < plan.pairs {
                        serial += 1;
                        let u = user(serial);
                        let (r, us, n) = if side {
                            b.call(async { versioning::insert_one(db, &u).await.map_err(|e| e.to_string()) })
                                .await
                        } else {
                            b.call(async {
                                db.collection::<User>(User::COLLECTION)
                                    .insert_one(&u)
                                    .await
                                    .map(|_| ())
                                    .map_err(|e| e.to_string())
                            })
                            .await
                        };
                        r?;
                        rows[0].record(side, us, n);

                        let id = current_ids[(serial) % current_ids.len()];
                        let (found, us, n) = if side {
                            b.call(async {
                                versioning::find_one::<User>(db, doc! { "_id": id })
                                    .await
                                    .map(|l| l.map(|l| l.value))
                                    .map_err(|e| e.to_string())
                            })
                            .await
                        } else {
                            b.call(async {
                                db.collection::<User>(User::COLLECTION)
                                    .find_one(doc! { "_id": id })
                                    .await
                                    .map_err(|e| e.to_string())
                            })
                            .await
                        };
                        assert_eq!(found?.map(|u| u.id), Some(id));
                        rows[1].record(side, us, n);

                        let (page, us, n) = if side {
                            b.call(async {
                                let p = PostById::newest_by_author("u_42")
                                    .signed_with(&key)
                                    .after(&ds_id_cursor)
                                    .fetch(db)
                                    .await?;
                                Ok::<_, docshape::paginate::PageError>((p.items, p.next.is_some()))
                            })
                            .await
                        } else {
                            b.call(async {
                                hand_page_by_id(db, &hand_id_cursor)
                                    .await
                                    .map(|(items, next)| (items, next.is_some()))
                                    .map_err(docshape::paginate::PageError::from)
                            })
                            .await
                        };
                        let (items, more) = page.map_err(|e| e.to_string())?;
                        assert_eq!((items.len(), more), (20, true));
                        rows[3].record(side, us, n);

                        // A fresh pair of buckets every round: day `round`, one series a side.
                        let reading = Reading {
                            t: DateTime::from_millis(
                                1_786_060_800_000 + round as i64 * 86_400_000 + pair as i64 * 60_000,
                            ),
                            v: 20.0 + pair as f64 / 10.0,
                        };
                        let (r, us, n) = if side {
                            b.call(async {
                                SensorDay::append(db, "sensor_ds", &reading)
                                    .await
                                    .map(|_| ())
                                    .map_err(|e| e.to_string())
                            })
                            .await
                        } else {
                            b.call(async {
                                hand_append(db, "sensor_hw", &reading).await.map_err(|e| e.to_string())
                            })
                            .await
                        };
                        r?;
                        rows[4].record(side, us, n);

                        let id = old_ids[serial % old_ids.len()];
                        let (found, us, n) = if side {
                            b.call(async {
                                versioning::find_one::<User>(db, doc! { "_id": id })
                                    .await
                                    .map(|l| l.map(|l| l.value))
                                    .map_err(|e| e.to_string())
                            })
                            .await
                        } else {
                            b.call(async { hand_versioned_read(db, id).await.map_err(|e| e.to_string()) })
                                .await
                        };
                        let found = found?.expect("a stored v1 user");
                        assert_eq!((found.id, found.schema_version), (id, 2));
                        rows[5].record(side, us, n);

                        let (titles, us, n) = if side {
                            b.call(async {
                                Post::recent_titles("u_42")
                                    .first(20, db)
                                    .await
                                    .map(|v| {
                                        v.into_iter().map(|t| (t.title, t.created_at)).collect::<Vec<_>>()
                                    })
                                    .map_err(|e| e.to_string())
                            })
                            .await
                        } else {
                            b.call(async { hand_recent_titles(db, "u_42").await.map_err(|e| e.to_string()) })
                                .await
                        };
                        assert_eq!(titles?.len(), 20);
                        rows[6].record(side, us, n);

                        let line = CartLine { sku: format!("S-{pair}"), qty: 1 };
                        let (r, us, n) = if side {
                            b.call(async {
                                Cart::add_line(carts[0].clone(), line, 1_i64)
                                    .run(db)
                                    .await
                                    .map(|_| ())
                                    .map_err(|e| e.to_string())
                            })
                            .await
                        } else {
                            b.call(hand_add_line(db, &carts[1], &line)).await
                        };
                        r?;
                        rows[7].record(side, us, n);

                        // The same text on both sides, so their notes end alike.
                        let body = format!("edit {round}.{pair}");
                        let (r, us, n) = if side {
                            b.call(async {
                                StampedNote::edit_if_at("note_ds", ds_rev, body.as_str())
                                    .run(db)
                                    .await
                                    .map(|_| ())
                                    .map_err(|e| e.to_string())
                            })
                            .await
                        } else {
                            b.call(hand_edit_if_at(db, "note_hw", hw_rev, &body)).await
                        };
                        r?;
                        if side {
                            ds_rev += 1;
                        } else {
                            hw_rev += 1;
                        }
                        rows[8].record(side, us, n);
                    }
                    if pair < plan.page_pairs {
                        let (page, us, n) = if side {
                            b.call(async {
                                let p = Post::posts_by_author("u_42")
                                    .signed_with(&key)
                                    .after(&ds_date_cursor)
                                    .fetch(db)
                                    .await?;
                                Ok::<_, docshape::paginate::PageError>((p.items, p.next.is_some()))
                            })
                            .await
                        } else {
                            b.call(async {
                                hand_page_by_date(db, &hand_date_cursor)
                                    .await
                                    .map(|(items, next)| (items, next.is_some()))
                                    .map_err(docshape::paginate::PageError::from)
                            })
                            .await
                        };
                        let (items, more) = page.map_err(|e| e.to_string())?;
                        assert_eq!((items.len(), more), (20, true));
                        rows[2].record(side, us, n);
                    }
                }
            }
        }
        for (i, row) in rows.iter_mut().enumerate() {
            row.end_round(if i == 2 { plan.page_pairs } else { plan.pairs });
        }
    }
    // Both sides read the same titles, and pushed the same lines.
    assert_eq!(
        Post::recent_titles("u_42")
            .first(20, db)
            .await?
            .into_iter()
            .map(|t| (t.title, t.created_at))
            .collect::<Vec<_>>(),
        hand_recent_titles(db, "u_42").await?
    );
    let carts: Vec<Cart> =
        Cart::collection(db).find(doc! {}).sort(doc! { "_id": 1 }).await?.try_collect().await?;
    for pair in carts.chunks(2) {
        assert_eq!(pair[0].lines, pair[1].lines, "{} and {}", pair[0].id, pair[1].id);
    }
    // Both sides stamped the same writes: the same body and revision, the server's
    // clock in `updated_at`.
    let notes: Vec<StampedNote> =
        StampedNote::collection(db).find(doc! {}).sort(doc! { "_id": 1 }).await?.try_collect().await?;
    assert_eq!(notes.len(), 2);
    assert_eq!((ds_rev, hw_rev), (1 + (plan.rounds * plan.pairs) as i64, ds_rev));
    for note in &notes {
        assert_eq!((note.rev, note.body.as_str()), (ds_rev, notes[0].body.as_str()), "{}", note.id);
        assert!(note.updated_at > note.created_at, "{}: {note:?}", note.id);
    }
    // The revision-guarded row takes one round trip: the read that explains a
    // conflict is sent only when nothing matched, which never happened here.
    let stamped = &rows[8].docshape.commands;
    assert!(stamped.iter().all(|&n| n == 1), "commands per stamped write row: {stamped:?}");
    // Both sides read the same pages.
    let ds_page = Post::posts_by_author("u_42").signed_with(&key).after(&ds_date_cursor).fetch(db).await?;
    assert_eq!(ds_page.items, hand_page_by_date(db, &hand_date_cursor).await?.0);

    println!(
        "{} rounds; per round {} pairs of each operation ({} of the `$or` page); {} posts, 3 a minute.",
        plan.rounds, plan.pairs, plan.page_pairs, plan.posts
    );
    println!();
    println!("| operation | docshape (median) | hand-written (median) | docshape / hand-written (median of rounds) | spread of the rounds | commands per call, docshape | commands per call, hand-written |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (name, row) in names.iter().zip(&rows) {
        row.print(name);
    }
    for (name, row) in names.iter().zip(&rows) {
        row.assert_round_trips(name);
    }
    Ok(())
}
