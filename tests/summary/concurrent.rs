//! Eight writers adding, removing and editing the items of orders shared by five
//! sellers, half of them in `docshape::transaction`s and half given no transaction (each
//! write then runs in one started for it); either way the sync summaries and the async
//! jobs are written in the write's transaction, and two of them on one group conflict
//! and run again,
//! with workers of the one refresh queue killed at random points (after an
//! application committed and before its job was acknowledged among them) and
//! restarted: once drained, every summary (sync and async) equals a recount of the
//! orders.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use docshape::denormalized::{self, Worker};

use super::*;

/// A small deterministic generator: the test needs spread, not secrecy.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

const SELLERS: [&str; 5] = ["s0", "s1", "s2", "s3", "s4"];
const ORDERS: u64 = 6;
/// The lease of the workers killed under a new id each time.
const LEASE: Duration = Duration::from_millis(250);
/// How often the killed workers look for jobs when they found none.
const POLL: Duration = Duration::from_millis(10);

/// Runs `row` (built anew for each attempt) alone, or in a transaction of its own.
async fn send(
    db: &Database,
    transaction: bool,
    row: impl Fn() -> docshape::access::Update<Order> + Sync,
) -> Result<(), String> {
    if !transaction {
        return row().run(db).await.map(drop).map_err(|e| e.to_string());
    }
    let row = &row;
    docshape::transaction(db.client(), |tx| Box::pin(async move { row().session(tx).run(db).await }))
        .await
        .map(drop)
        .map_err(|e| e.to_string())
}

async fn writer(db: Database, seed: u64, ops: usize, transaction: bool) {
    let mut rng = Rng(seed);
    for op in 0..ops {
        let id = format!("o{}", rng.below(ORDERS));
        let seller = SELLERS[rng.below(5) as usize];
        match rng.below(3) {
            0 => {
                let it = item(
                    seller,
                    &format!("w{}-{op}", seed % 1000),
                    1 + rng.below(4) as i64,
                    100 * (1 + rng.below(9) as i64),
                );
                // A full cart refuses the push (the bound): a refusal writes nothing.
                let _ = send(&db, transaction, || Order::add_item(&id, it.clone())).await;
            }
            1 => {
                let Some(order) = Order::collection(&db).find_one(doc! { "_id": &id }).await.unwrap() else {
                    continue;
                };
                if let Some(it) = order.items.get(rng.below(order.items.len().max(1) as u64) as usize) {
                    send(&db, transaction, || Order::remove_item(&id, it.clone())).await.unwrap();
                }
            }
            _ => {
                let Some(mut order) = Order::collection(&db).find_one(doc! { "_id": &id }).await.unwrap()
                else {
                    continue;
                };
                if order.items.is_empty() {
                    continue;
                }
                let i = rng.below(order.items.len() as u64) as usize;
                order.items[i].qty = 1 + rng.below(7) as i64;
                order.items[i].seller_id = seller.into();
                send(&db, transaction, || Order::set_items(&id, order.items.clone())).await.unwrap();
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_and_killed_workers_leave_no_drift() {
    let db = setup("summary_concurrent").await;
    for i in 0..ORDERS {
        let items = vec![
            item(SELLERS[i as usize % 5], "seed", 1, 100),
            item(SELLERS[(i as usize + 1) % 5], "seed2", 2, 200),
        ];
        docshape::relation::insert_one(&db, &mut order(&format!("o{i}"), "c", "2026-08-05T10:00:00Z", items))
            .await
            .unwrap();
    }
    let writing = Arc::new(AtomicBool::new(true));
    // Workers started and aborted at random points (mid-transaction, and between an
    // application's commit and its acknowledgement, included), two at a time, while
    // the writers run: one restarted under the same id (it resumes its leased jobs at
    // once), one under a new id with a short lease (its jobs are taken over when the
    // lease ends). Restarted after a pause, as a supervisor restarts a crashed
    // worker, and polling every `POLL`: the test's own load then stays bounded. With
    // no pause and a 2 ms poll, the two workers were restarted about 66 times a
    // second, each looking for jobs every 2 ms, for as long as the writers ran; the
    // longer they ran, the more they sent, and on a loaded machine the one test server
    // slowed until a writer lost its transaction to conflicts for the whole of its
    // retry budget.
    let killer = {
        let (db, writing) = ((*db).clone(), writing.clone());
        tokio::spawn(async move {
            let mut rng = Rng(docshape_test_seed::seed_for("summary::concurrent::kills") | 1);
            let mut kills = 0;
            while writing.load(Ordering::Relaxed) {
                let a = tokio::spawn({
                    let db = db.clone();
                    async move { Worker::new(&db).id("killed-a").jobs_per_claim(4).run(POLL).await }
                });
                let b = tokio::spawn({
                    let db = db.clone();
                    async move { Worker::new(&db).jobs_per_claim(1).lease(LEASE).run(POLL).await }
                });
                tokio::time::sleep(Duration::from_millis(1 + rng.below(25))).await;
                a.abort();
                b.abort();
                for h in [a, b] {
                    if let Ok(Err(e)) = h.await {
                        panic!("a worker failed: {e}");
                    }
                }
                kills += 2;
                // The restart's pause: no worker runs, and jobs pile up meanwhile.
                tokio::time::sleep(Duration::from_millis(1 + rng.below(25))).await;
            }
            kills
        })
    };
    let base = docshape_test_seed::seed_for("summary::concurrent");
    let writers: Vec<_> = (0..8)
        .map(|w| tokio::spawn(writer((*db).clone(), base.wrapping_add(w * 7919) | 1, 30, w % 2 == 0)))
        .collect();
    for w in writers {
        w.await.unwrap();
    }
    writing.store(false, Ordering::Relaxed);
    let kills = killer.await.unwrap();
    assert!(kills >= 2, "the workers were killed {kills} times");
    // The killed workers' jobs: "killed-a"'s resumed under its id, the others' once
    // their short lease has ended.
    tokio::time::sleep(LEASE * 2).await;
    for worker in [Worker::new(&db).id("killed-a"), Worker::new(&db)] {
        let drained = worker.run_until_empty().await.unwrap();
        assert!(drained.failures.is_empty(), "{drained:?}");
    }
    assert_eq!(denormalized::lag(&db).await.unwrap().pending, 0);
    assert_no_drift(&db).await;
    // Not vacuous: the sellers' totals are there.
    let sales = all(&db, "sm_seller_sales").await;
    assert!(sales.len() >= 3, "{sales:?}");
    assert_eq!(sales, {
        let mut now = all(&db, "sm_seller_sales_now").await;
        now.iter_mut().for_each(|d| {
            d.remove("biggest_line");
        });
        let mut s = sales.clone();
        s.iter_mut().for_each(|d| {
            for f in ["biggest_line", "total_cents", "first_sale"] {
                d.remove(f);
            }
        });
        assert_eq!(s, now, "sync and async agree");
        sales.clone()
    });
}
