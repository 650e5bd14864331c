//! The `chrono` feature: chrono's types are stored as chrono's serde writes them
//! (strings), so the validator admits what the type serializes and refuses a BSON date
//! that another program wrote into the same field.

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, Utc};
use docshape::bson::{doc, Bson, Document};
use docshape::Model;
use docshape_testkit as testkit;
use serde::{Deserialize, Serialize};

use super::is_validation_failure;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "appointments")]
struct Appointment {
    #[serde(rename = "_id")]
    id: String,
    at: DateTime<Utc>,
    day: NaiveDate,
    local: NaiveDateTime,
    time: NaiveTime,
    #[serde(skip_serializing_if = "Option::is_none")]
    reminder: Option<DateTime<Utc>>,
}

fn appointment(i: i64, millis: i64) -> Appointment {
    let at = DateTime::from_timestamp_millis(millis).unwrap();
    Appointment {
        id: format!("a{i}"),
        at,
        day: at.date_naive(),
        local: at.naive_utc(),
        time: at.time(),
        reminder: (i % 2 == 0).then(|| at - chrono::Duration::minutes(15)),
    }
}

#[test]
fn every_chrono_field_is_a_string_in_the_schema() {
    let schema = Appointment::validator();
    let properties = schema.get_document("$jsonSchema").unwrap().get_document("properties").unwrap();
    for field in ["at", "day", "local", "time"] {
        assert_eq!(
            properties.get_document(field).unwrap().get("bsonType"),
            Some(&Bson::String("string".into())),
            "{field}: {properties}"
        );
    }
    // Optional and skipped when `None`: a string when present, never required.
    let required = schema.get_document("$jsonSchema").unwrap().get_array("required").unwrap();
    assert!(!required.contains(&Bson::String("reminder".into())), "{required:?}");
    assert!(required.contains(&Bson::String("at".into())), "{required:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_chrono_writes_is_admitted_and_a_bson_date_is_refused() {
    let db = testkit::database("chrono").await.unwrap();
    docshape::sync::<Appointment>(&db).await.unwrap();
    let collection = Appointment::collection(&db);
    // Before 1970, at the epoch, with milliseconds, far ahead: all as chrono writes them.
    let values: Vec<Appointment> = [-86_400_000_123, 0, 1_786_000_000_456, 253_402_300_799_000]
        .iter()
        .enumerate()
        .map(|(i, &millis)| appointment(i as i64, millis))
        .collect();
    collection.insert_many(&values).await.unwrap();
    for value in &values {
        let stored = collection.find_one(doc! { "_id": { "$eq": &value.id } }).await.unwrap();
        assert_eq!(stored.as_ref(), Some(value));
    }

    // Another program stores a BSON date in `at`: the validator refuses it.
    let mut raw = docshape::bson_compat::to_document(&appointment(9, 0)).unwrap();
    raw.insert("at", docshape::bson::DateTime::from_millis(0));
    let err = db.collection::<Document>(Appointment::COLLECTION).insert_one(raw).await.unwrap_err();
    assert!(is_validation_failure(&err), "{err}");
}
