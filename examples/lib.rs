//! Shared pieces of the docshape examples: where they find a server, and the seed's
//! bucket models, which the tests and benchmarks use too.

use docshape::bson::Document;
use docshape_testkit as testkit;
use mongodb::Database;

/// A clean database named `name` on a real server: the one `MONGODB_URI` names, or a
/// local SecantusDB the testkit starts (and installs on first use).
///
/// The database is dropped first, so the example can run again and again.
pub async fn fresh_database(name: &str) -> Result<Database, Box<dyn std::error::Error>> {
    let server = testkit::server()?;
    if server.is_external() {
        println!("server: MONGODB_URI");
    } else {
        println!("server: local SecantusDB at {}", server.uri());
    }
    let client = server.client().await?;
    let db = client.database(name);
    db.drop().await?;
    Ok(db)
}

/// The server's reason for rejecting a write, in one line: for a validation failure,
/// each rule that failed and where (read from the server's `errInfo`).
pub fn why(e: &mongodb::error::Error) -> String {
    use mongodb::error::{ErrorKind, WriteFailure};
    match e.kind.as_ref() {
        ErrorKind::Write(WriteFailure::WriteError(w)) => {
            let mut rules = Vec::new();
            if let Some(details) = w.details.as_ref().and_then(|d| d.get_document("details").ok()) {
                failed_rules(details, "", &mut rules);
            }
            format!("code {} ({}): {}", w.code, w.message, rules.join("; "))
        }
        _ => e.to_string(),
    }
}

fn failed_rules(d: &Document, path: &str, out: &mut Vec<String>) {
    let at = if path.is_empty() { "document" } else { path };
    let docs = |key: &str| -> Vec<Document> {
        d.get_array(key)
            .map(|a| a.iter().filter_map(|b| b.as_document().cloned()).collect())
            .unwrap_or_default()
    };
    match d.get_str("operatorName").unwrap_or_default() {
        "$jsonSchema" => docs("schemaRulesNotSatisfied").iter().for_each(|r| failed_rules(r, path, out)),
        "properties" => {
            for p in docs("propertiesNotSatisfied") {
                let name = p.get_str("propertyName").unwrap_or("?");
                let inner = if path.is_empty() { name.to_owned() } else { format!("{path}.{name}") };
                p.get_array("details")
                    .into_iter()
                    .flatten()
                    .filter_map(|b| b.as_document())
                    .for_each(|r| failed_rules(r, &inner, out));
            }
        }
        "items" => {
            let index =
                d.get_i32("itemIndex").map(i64::from).or_else(|_| d.get_i64("itemIndex")).unwrap_or(0);
            let inner = format!("{path}.{index}");
            docs("details").iter().for_each(|r| failed_rules(r, &inner, out));
        }
        "anyOf" | "oneOf" => {
            out.push(format!("{at}: matches none of the {} alternatives", docs("schemasNotSatisfied").len()))
        }
        "required" => out.push(format!(
            "{at}: missing {}",
            d.get("missingProperties").map(|m| m.to_string()).unwrap_or_default()
        )),
        "additionalProperties" => out.push(format!(
            "{at}: fields not in the model {}",
            d.get("additionalProperties").map(|m| m.to_string()).unwrap_or_default()
        )),
        op => {
            let spec = d.get_document("specifiedAs").map(|s| s.to_string()).unwrap_or_default();
            let reason = d.get_str("reason").unwrap_or_default();
            out.push(format!("{at}: {op} {spec} ({reason})"));
        }
    }
}

/// patterns-en's bucket pattern: one document per sensor per day,
/// `_id: "sensor_9:2026-08-05"`, instead of one ever-growing `readings` array.
pub mod bucket {
    use docshape::bson::DateTime;
    use docshape::{Embedded, Model};
    use serde::{Deserialize, Serialize};

    /// One reading: `{ t, v }`, with a full date so it can be placed in a day and
    /// filtered by range (a time of day alone could not).
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
    pub struct Reading {
        /// When it was taken.
        pub t: DateTime,
        /// The value read.
        pub v: f64,
    }

    /// A reading a minute makes 1,440 a day: the bucket's bound, checked against 16 MB
    /// at compile time. The aggregates are kept by the same update as the append.
    #[derive(Debug, Clone, Serialize, Deserialize, Model)]
    #[model(collection = "sensor_days")]
    #[bucket(series = sensor_id, period = day, per = "day", max = 1440, items = readings, time = t)]
    pub struct SensorDay {
        /// `series:day`.
        #[serde(rename = "_id")]
        pub id: String,
        /// The series.
        #[validate(max_length = 64)]
        pub sensor_id: String,
        /// The day's label.
        pub day: String,
        /// Readings held.
        pub count: i32,
        /// The readings, in append order.
        pub readings: Vec<Reading>,
        /// The sum of `v`, for the mean.
        #[bucket(sum = "v")]
        pub sum_v: f64,
        /// The least `v`.
        #[bucket(min = "v")]
        pub min_v: f64,
        /// The greatest `v`.
        #[bucket(max = "v")]
        pub max_v: f64,
    }
}

/// The seed's sensor readings as a time-series collection: the server buckets them
/// itself (one document per reading), beside the `bucket` module's `SensorDay`.
pub mod timeseries {
    use docshape::bson::DateTime;
    use docshape::Model;
    use serde::{Deserialize, Serialize};

    /// One reading of one sensor: `sensor_id` names the series (the meta field), `t`
    /// is when it was taken, and the server keeps a reading 30 days.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
    #[model(
        collection = "sensor_readings",
        timeseries(time = t, meta = sensor_id, granularity = "minutes", expire_after = "30d")
    )]
    #[access(
        name = "readings_of_sensor",
        filter(sensor_id),
        range(t),
        sort(t),
        freq = "10 r/s",
        consistency = "eventual ok"
    )]
    pub struct SensorReading {
        /// The series: what stays the same across one sensor's readings.
        #[validate(max_length = 64)]
        pub sensor_id: String,
        /// When it was taken.
        pub t: DateTime,
        /// The value read.
        pub v: f64,
    }
}
