//! Soundness: every value a model's type can serialize (within its declared
//! constraints) is admitted by the validator the server enforces.

use docshape::bson;
use std::fmt::Debug;

use docshape::Model;

use docshape_testkit as testkit;
use docshape_tests::{Constrained, EventLog, Order, Profile, Usuario};
use proptest::strategy::{Strategy, ValueTree};
use serde::Serialize;

const INSTANCES: usize = 1_000;
const BATCH: usize = 200;

/// Inserts `INSTANCES` generated values with validation on; none may be rejected.
async fn every_generated_value_is_admitted<T>(strategy: impl Strategy<Value = T>, fix: impl Fn(usize, &mut T))
where
    T: Model + Serialize + Debug + Send + Sync + 'static,
{
    let db = testkit::database(&format!("sound_{}", T::COLLECTION)).await.unwrap();
    docshape::sync::<T>(&db).await.unwrap();
    let collection = T::collection(&db);
    let mut runner =
        docshape_test_seed::runner(&format!("validator::soundness::{}", T::COLLECTION), INSTANCES as u32);
    let values: Vec<T> = (0..INSTANCES)
        .map(|i| {
            let mut value = strategy.new_tree(&mut runner).unwrap().current();
            fix(i, &mut value);
            value
        })
        .collect();
    for chunk in values.chunks(BATCH) {
        if let Err(batch_error) = collection.insert_many(chunk).ordered(false).await {
            // Name the first rejected value and the server's reason.
            for value in chunk {
                if let Err(e) = collection.insert_one(value).await {
                    if !e.to_string().contains("E11000") {
                        panic!(
                            "{}: the validator rejected a value the type serializes:\n{value:#?}\n{}\nerror: {e}",
                            T::COLLECTION,
                            docshape::bson_compat::to_document(value).map(|d| d.to_string()).unwrap_or_default()
                        );
                    }
                }
            }
            panic!("{}: insert_many failed: {batch_error}", T::COLLECTION);
        }
    }
    let stored = collection.count_documents(bson::doc! {}).await.unwrap();
    assert_eq!(stored, INSTANCES as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usuario() {
    every_generated_value_is_admitted(proptest::arbitrary::any::<Usuario>(), |_, _| {}).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn profile_scalars_options_maps_renames_flatten() {
    every_generated_value_is_admitted(proptest::arbitrary::any::<Profile>(), |_, _| {}).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn order_nested_embedded_and_arrays() {
    every_generated_value_is_admitted(proptest::arbitrary::any::<Order>(), |i, o| o.id = format!("ord_{i}"))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_log_enums_in_every_representation() {
    every_generated_value_is_admitted(proptest::arbitrary::any::<EventLog>(), |_, _| {}).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn constrained_every_constraint_kind() {
    every_generated_value_is_admitted(proptest::arbitrary::any::<Constrained>(), |_, _| {}).await;
}
