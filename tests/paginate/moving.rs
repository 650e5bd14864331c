//! A walk over a sort key that write rows change (`mutable_sort`, waived): votes land
//! on questions between pages. A question whose score changes moves to another place
//! in the order, so the walk may miss it or return it twice; every question whose
//! score stays put is returned exactly once and in order, and the walk never steps
//! back: each item comes after the one before it, by the values it had when read.

use std::collections::{HashMap, HashSet};

use docshape::bson::doc;
use docshape::Model;
use docshape_testkit as testkit;
use futures_util::TryStreamExt;
use proptest::prelude::Rng;
use proptest::test_runner::TestRng;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "questions")]
#[index(keys(board, score = -1, _id = -1))]
#[access(
    name = "top_questions",
    operation = "A board's questions, highest score first",
    filter(board),
    sort(score = -1),
    paginate,
    allow(mutable_sort, reason = "a question voted on during a walk may be missed or shown twice")
)]
#[access(name = "vote", filter(_id), update(inc(score)))]
struct Question {
    #[serde(rename = "_id")]
    id: i64,
    board: String,
    score: i64,
}

/// A number below `n`, from the seeded generator.
fn below(rng: &mut TestRng, n: u64) -> u64 {
    rng.next_u64() % n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn votes_between_pages_move_only_the_voted_questions() {
    let mut rng = docshape_test_seed::rng("paginate::moving");
    let seed = rng.seed();
    let db = testkit::database("paginate_moving").await.unwrap();
    docshape::sync::<Question>(&db).await.unwrap();
    let questions = Question::collection(&db);
    // Whether some walk missed or repeated a voted question: without one, nothing
    // moved across a cursor and the stable questions' guarantee was not exercised.
    let mut moved_across = false;
    for round in 0..30 {
        let at = format!("round {round}, seed {seed:#x}");
        questions.delete_many(doc! {}).await.unwrap();
        let n = 10 + below(&mut rng, 60) as i64;
        // Few distinct scores: many ties, broken by `_id`.
        let docs: Vec<Question> =
            (0..n).map(|id| Question { id, board: "a".into(), score: below(&mut rng, 8) as i64 }).collect();
        questions.insert_many(&docs).await.unwrap();
        // Another board's questions, voted on too, that no page of "a" may show.
        let others: Vec<Question> =
            (0..5).map(|i| Question { id: 10_000 + i, board: "b".into(), score: i }).collect();
        questions.insert_many(&others).await.unwrap();
        let size = 1 + below(&mut rng, 8) as u32;

        let mut voted: HashSet<i64> = HashSet::new();
        let mut seen: Vec<(i64, i64)> = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut p = Question::top_questions("a").page_size(size);
            if let Some(c) = &cursor {
                p = p.after(c);
            }
            let page = p.fetch(&db).await.unwrap();
            assert!(page.items.len() <= size as usize, "{at}");
            seen.extend(page.items.iter().map(|q| (q.id, q.score)));
            assert!(seen.len() <= 4 * n as usize, "{at}: the walk does not end: {seen:?}");
            // Between requests: up to three votes, up or down, on any question of
            // either board, read or not yet read.
            for _ in 0..below(&mut rng, 4) {
                let id = if below(&mut rng, 6) == 0 {
                    10_000 + below(&mut rng, 5) as i64
                } else {
                    below(&mut rng, n as u64) as i64
                };
                let delta = [-5, -3, -1, 1, 2, 4][below(&mut rng, 6) as usize];
                Question::vote(id, delta).run(&db).await.unwrap();
                voted.insert(id);
            }
            match page.next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }

        // Only board "a"'s questions.
        assert!(seen.iter().all(|(id, _)| (0..n).contains(id)), "{at}: another board's question: {seen:?}");
        // The walk never steps back: by the values read, each item comes after the one
        // before it in the order `score` descending, then `_id` descending.
        for pair in seen.windows(2) {
            let ((a_id, a_score), (b_id, b_score)) = (pair[0], pair[1]);
            assert!((b_score, b_id) < (a_score, a_id), "{at}: the walk stepped back at {pair:?}: {seen:?}");
        }
        let mut times: HashMap<i64, usize> = HashMap::new();
        for (id, _) in &seen {
            *times.entry(*id).or_default() += 1;
        }
        // Every question whose score stayed put: exactly once, with its score, in the
        // order of its (unchanged) sort values.
        let stable: Vec<&Question> = docs.iter().filter(|q| !voted.contains(&q.id)).collect();
        for q in &stable {
            assert_eq!(times.get(&q.id), Some(&1), "{at}: question {} (not voted on): {seen:?}", q.id);
        }
        let mut truth: Vec<(i64, i64)> = stable.iter().map(|q| (q.id, q.score)).collect();
        truth.sort_by_key(|(id, score)| std::cmp::Reverse((*score, *id)));
        let got: Vec<(i64, i64)> = seen.iter().copied().filter(|(id, _)| !voted.contains(id)).collect();
        assert_eq!(got, truth, "{at}: the questions not voted on, in order");
        // The server agrees: its sorted query of the stable questions is the same order.
        let sorted: Vec<Question> = questions
            .find(doc! { "board": "a" })
            .sort(doc! { "score": -1, "_id": -1 })
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        let sorted: Vec<(i64, i64)> =
            sorted.into_iter().filter(|q| !voted.contains(&q.id)).map(|q| (q.id, q.score)).collect();
        assert_eq!(got, sorted, "{at}");
        // A voted question may be missing or repeated: nothing is asserted of it.
        moved_across |=
            (0..n).filter(|id| voted.contains(id)).any(|id| times.get(&id).copied().unwrap_or(0) != 1);
    }
    assert!(moved_across, "no walk missed or repeated a voted question (seed {seed:#x}): the votes moved nothing across a cursor");
}
