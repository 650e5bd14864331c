//! The tenant property: two tenants' projects interleaved in one collection; every
//! generated read and write called for tenant A with hostile values (B's ids and
//! slugs, operator-shaped strings, B's paginator tokens, B's cache keys), and
//! `Ref::load_in` for A: no document of B is ever read, written, counted, paged or
//! cached for A, and none is served to A from the cache. 10,000 cases from the seeded
//! generator.

use std::collections::BTreeMap;

use docshape::access::UpdateError;
use docshape::bson::oid::ObjectId;
use docshape::bson::{doc, Document};
use docshape::keys::StringFamily;
use docshape::paginate::{CursorError, PageError};
use docshape::refs::Ref;
use docshape::{KeyFamily, Model};
use docshape_testkit as testkit;
use proptest::prelude::Rng;
use proptest::test_runner::TestRng;

use super::{project, Project, Ticket, TicketCache};

const A: &str = "org-a";
const B: &str = "org-b";
const CASES: usize = 10_000;

/// Strings that would be operators or paths if they reached a query as such.
const HOSTILE: &[&str] =
    &["$ne", "$gt", "{\"$ne\": null}", "$where", "", "org-b", "a.b", "$$ROOT", "\0", "ann"];

fn pick<'a, T>(rng: &mut TestRng, from: &'a [T]) -> &'a T {
    &from[(rng.next_u64() % from.len() as u64) as usize]
}

/// B's documents as stored, by id.
async fn snapshot_b(raw: &mongodb::Collection<Document>) -> BTreeMap<String, Document> {
    let mut out = BTreeMap::new();
    let mut cursor = raw.find(doc! { "org_id": B }).await.unwrap();
    while cursor.advance().await.unwrap() {
        let d = cursor.deserialize_current().unwrap();
        out.insert(d.get_object_id("_id").unwrap().to_hex(), d);
    }
    out
}

/// The raw text under each key (`None`: no key).
async fn raw_values(
    redis: &mut docshape::redis::aio::MultiplexedConnection,
    keys: &[String],
) -> Vec<Option<String>> {
    let mut out = Vec::new();
    for key in keys {
        out.push(docshape::redis::cmd("GET").arg(key).query_async(redis).await.unwrap());
    }
    out
}

/// Every cached ticket: under the key of its own tenant and id, so the key of A's
/// read never holds a document of B.
async fn cache_is_per_tenant(redis: &mut docshape::redis::aio::MultiplexedConnection, seed: u64) -> usize {
    let mut found = 0;
    for key in TicketCache::scan(redis).await.unwrap() {
        if let Some(ticket) = key.get(redis).await.unwrap() {
            assert_eq!(
                (&ticket.org_id, &ticket.id),
                (&key.org, &key.id),
                "{} holds {ticket:?} (seed {seed:#x})",
                key.key()
            );
            found += 1;
        }
    }
    found
}

fn all_of_a(items: &[Project], what: &str, seed: u64) {
    for p in items {
        assert_eq!(p.org_id, A, "{what} returned another tenant's project {p:?} (seed {seed:#x})");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_call_for_one_tenant_reaches_another() {
    let db = testkit::database("tenant_isolation").await.unwrap();
    docshape::sync::<Project>(&db).await.unwrap();
    let mut rng = docshape_test_seed::rng("tenant::isolation");
    let seed = rng.seed();
    let owners = ["ann", "bob", "$ne", ""];
    // Interleaved: the same slugs and owners in both tenants.
    let docs: Vec<Project> = (0..60)
        .map(|i| project(if i % 2 == 0 { A } else { B }, &format!("s{}", i / 2), owners[i % 4], i as i64))
        .collect();
    Project::collection(&db).insert_many(&docs).await.unwrap();
    let b_ids: Vec<ObjectId> = docs.iter().filter(|p| p.org_id == B).map(|p| p.id).collect();
    for id in b_ids.iter().step_by(3) {
        assert!(Project::delete_by_id(B, *id).run(&db).await.unwrap());
    }
    let mut ids: Vec<ObjectId> = docs.iter().map(|p| p.id).collect();
    ids.push(ObjectId::new());
    let mut strings: Vec<String> = HOSTILE.iter().map(|s| (*s).to_owned()).collect();
    strings.extend(docs.iter().map(|p| p.slug.clone()));
    // B's tokens: every page of B's feeds.
    let mut tokens = Vec::new();
    for owner in owners {
        let mut after: Option<String> = None;
        loop {
            let mut p = Project::owner_feed(B, owner).page_size(2);
            if let Some(t) = &after {
                p = p.after(t);
            }
            let page = p.fetch(&db).await.unwrap();
            tokens.extend(page.next.clone());
            tokens.extend(page.prev.clone());
            match page.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
    }
    assert!(tokens.len() > 10, "B's feeds gave tokens");
    let raw = db.collection::<Document>(Project::COLLECTION);
    let before = snapshot_b(&raw).await;

    // Tickets, cached by tenant and id; every docshape writer deletes their keys.
    docshape::sync::<Ticket>(&db).await.unwrap();
    let mut redis = testkit::redis::database().await.unwrap();
    docshape::keys::invalidate_on_write(&db, redis.clone());
    let tickets: Vec<Ticket> = (0..40)
        .map(|i| Ticket {
            id: format!("t{i}"),
            org_id: (if i % 2 == 0 { A } else { B }).to_owned(),
            title: format!("title {i}"),
            deleted_at: None,
        })
        .collect();
    Ticket::collection(&db).insert_many(&tickets).await.unwrap();
    // B's cache, filled by B's own reads: its keys are hostile ids for A.
    let mut b_keys = Vec::new();
    for t in tickets.iter().filter(|t| t.org_id == B) {
        let read = Ticket::ticket(B, t.id.as_str());
        b_keys.push(read.key().unwrap());
        assert_eq!(read.one(&db, &mut redis).await.unwrap().as_ref(), Some(t));
    }
    let b_cached = raw_values(&mut redis, &b_keys).await;
    assert!(b_cached.iter().all(Option::is_some), "B's reads filled B's keys");
    let tickets_raw = db.collection::<Document>(Ticket::COLLECTION);
    let tickets_of_b = || async {
        let mut cursor = tickets_raw.find(doc! { "org_id": B }).sort(doc! { "_id": 1 }).await.unwrap();
        let mut out = Vec::new();
        while cursor.advance().await.unwrap() {
            out.push(cursor.deserialize_current().unwrap());
        }
        out
    };
    let b_tickets = tickets_of_b().await;
    let a_tickets: Vec<String> = tickets.iter().filter(|t| t.org_id == A).map(|t| t.id.clone()).collect();
    let mut ticket_ids: Vec<String> = tickets.iter().map(|t| t.id.clone()).collect();
    ticket_ids.extend(b_keys.iter().cloned());
    ticket_ids.extend(HOSTILE.iter().map(|s| (*s).to_owned()));
    ticket_ids.push("cache:tenant_ticket:org-a:t0".to_owned());

    let mut ops = [0usize; 13];
    for case in 0..CASES {
        let op = (rng.next_u64() % 13) as usize;
        ops[op] += 1;
        let id = *pick(&mut rng, &ids);
        let s = pick(&mut rng, &strings).clone();
        match op {
            0 => all_of_a(
                &Project::project(A, id).one(&db).await.unwrap().into_iter().collect::<Vec<_>>(),
                "project",
                seed,
            ),
            1 => all_of_a(
                &Project::project_by_slug(A, s.as_str())
                    .one(&db)
                    .await
                    .unwrap()
                    .into_iter()
                    .collect::<Vec<_>>(),
                "project_by_slug",
                seed,
            ),
            2 => {
                let all = Project::projects_of_owner(A, s.as_str()).all(&db).await.unwrap();
                all_of_a(&all, "projects_of_owner", seed);
                let counted = Project::projects_of_owner(A, s.as_str()).count(&db).await.unwrap();
                let truth = raw
                    .count_documents(doc! { "org_id": A, "owner": {"$eq": &s}, "deleted_at": null })
                    .await
                    .unwrap();
                assert_eq!((counted, all.len() as u64), (truth, truth), "count for A (seed {seed:#x})");
            }
            3 => {
                let token = pick(&mut rng, &tokens);
                let err = Project::owner_feed(A, s.as_str()).after(token).fetch(&db).await.unwrap_err();
                assert!(
                    matches!(err, PageError::Cursor(CursorError::WrongPattern)),
                    "B's token for A: {err} (seed {seed:#x})"
                );
                let page = Project::owner_feed(A, s.as_str()).page_size(3).fetch(&db).await.unwrap();
                all_of_a(&page.items, "owner_feed", seed);
            }
            4 => all_of_a(
                &Project::any_project(A, id).one(&db).await.unwrap().into_iter().collect::<Vec<_>>(),
                "any_project",
                seed,
            ),
            5 => match Project::rename_project(A, id, format!("renamed {case}")).run(&db).await {
                Ok(done) => assert_eq!(
                    raw.find_one(doc! { "_id": done.id }).await.unwrap().unwrap().get_str("org_id").unwrap(),
                    A
                ),
                Err(UpdateError::NotFound { .. }) => {}
                Err(e) => panic!("rename for A: {e} (seed {seed:#x})"),
            },
            6 => {
                let done =
                    Project::touch_project(A, s.as_str(), format!("touched {case}")).run(&db).await.unwrap();
                let stored = raw.find_one(doc! { "_id": done.id() }).await.unwrap().unwrap();
                assert_eq!(
                    stored.get_str("org_id").unwrap(),
                    A,
                    "an upsert for A wrote {stored} (seed {seed:#x})"
                );
            }
            7 => {
                let changed = Project::delete_by_id(A, id).run(&db).await.unwrap();
                assert!(!(changed && b_ids.contains(&id)), "A deleted B's {id} (seed {seed:#x})");
            }
            8 => {
                let loaded = Ref::<Project>::new(id).load_in(&db, A).await.unwrap();
                all_of_a(&loaded.into_iter().collect::<Vec<_>>(), "Ref::load_in", seed);
            }
            10 => {
                let s = pick(&mut rng, &ticket_ids);
                let read = Ticket::ticket(A, s.as_str());
                let key = read.key().unwrap();
                assert!(!b_keys.contains(&key), "A's read of {s:?} uses B's key {key} (seed {seed:#x})");
                if let Some(t) = read.one(&db, &mut redis).await.unwrap() {
                    assert_eq!((t.org_id.as_str(), &t.id), (A, s), "served to A for {s:?} (seed {seed:#x})");
                }
                let cached = TicketCache { org: A.to_owned(), id: s.clone() }.get(&mut redis).await.unwrap();
                if let Some(t) = cached {
                    assert_eq!(
                        (t.org_id.as_str(), &t.id),
                        (A, s),
                        "cached for A under {key} (seed {seed:#x})"
                    );
                }
            }
            11 => {
                let s = pick(&mut rng, &ticket_ids);
                let title = format!("ticket {case}");
                match Ticket::retitle_ticket(A, s.as_str(), title.as_str()).uncached().run(&db).await {
                    Ok(_) => {
                        // The write pipeline deleted the key of A's document: the next
                        // read is a miss that sees the new title.
                        let key = TicketCache { org: A.to_owned(), id: s.clone() };
                        assert_eq!(
                            key.get(&mut redis).await.unwrap(),
                            None,
                            "{} kept after a write (seed {seed:#x})",
                            key.key()
                        );
                        let read = Ticket::ticket(A, s.as_str()).one(&db, &mut redis).await.unwrap().unwrap();
                        assert_eq!((read.org_id.as_str(), read.title.as_str()), (A, title.as_str()));
                    }
                    Err(UpdateError::NotFound { .. }) => {}
                    Err(e) => panic!("retitle for A: {e} (seed {seed:#x})"),
                }
            }
            12 => {
                let s = pick(&mut rng, &ticket_ids);
                let key = TicketCache { org: A.to_owned(), id: s.clone() };
                let deleted = Ticket::delete_by_id(A, s.as_str()).run(&db).await.unwrap();
                if deleted {
                    assert_eq!(
                        key.get(&mut redis).await.unwrap(),
                        None,
                        "{} kept after a delete (seed {seed:#x})",
                        key.key()
                    );
                    assert_eq!(Ticket::ticket(A, s.as_str()).one(&db, &mut redis).await.unwrap(), None);
                } else if Ticket::restore_by_id(A, s.as_str()).run(&db).await.unwrap() {
                    assert_eq!(
                        key.get(&mut redis).await.unwrap(),
                        None,
                        "{} kept after a restore (seed {seed:#x})",
                        key.key()
                    );
                    let read = Ticket::ticket(A, s.as_str()).one(&db, &mut redis).await.unwrap().unwrap();
                    assert_eq!(read.org_id, A);
                }
                assert!(!deleted || a_tickets.contains(s), "A deleted {s:?} (seed {seed:#x})");
            }
            _ => match Project::restore_by_id(A, id).run(&db).await {
                Ok(changed) => {
                    assert!(!(changed && b_ids.contains(&id)), "A restored B's {id} (seed {seed:#x})")
                }
                // Restoring A's project whose slug a newer live one took: the partial
                // unique index refuses it.
                Err(docshape::soft_delete::SoftDeleteError::Command(_)) => assert!(!b_ids.contains(&id)),
                Err(e) => panic!("restore for A: {e} (seed {seed:#x})"),
            },
        }
        if case % 500 == 499 {
            assert_eq!(
                snapshot_b(&raw).await,
                before,
                "B's documents changed by case {case} (seed {seed:#x})"
            );
            assert_eq!(
                tickets_of_b().await,
                b_tickets,
                "B's tickets changed by case {case} (seed {seed:#x})"
            );
            assert_eq!(
                raw_values(&mut redis, &b_keys).await,
                b_cached,
                "B's cache changed by case {case} (seed {seed:#x})"
            );
            cache_is_per_tenant(&mut redis, seed).await;
        }
    }
    assert_eq!(snapshot_b(&raw).await, before, "B's documents changed (seed {seed:#x})");
    assert_eq!(tickets_of_b().await, b_tickets, "B's tickets changed (seed {seed:#x})");
    assert_eq!(raw_values(&mut redis, &b_keys).await, b_cached, "B's cache changed (seed {seed:#x})");
    // A's reads filled keys, all of them A's own documents under A's keys.
    assert!(cache_is_per_tenant(&mut redis, seed).await > b_keys.len(), "A's reads were cached");
    docshape::keys::stop_invalidating(&db);
    assert!(ops.iter().all(|&n| n > CASES / 20), "every call was made: {ops:?}");
}
