use docshape::bson::DateTime;
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Embedded)]
struct Reading {
    t: DateTime,
    v: f64,
}

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "sensor_days", version = 2, migrate(v1 = SensorDay))]
#[bucket(series = sensor_id, period = day, per = "day", max = 1440, items = readings, time = t)]
struct SensorDay {
    #[serde(rename = "_id")]
    id: String,
    #[validate(max_length = 64)]
    sensor_id: String,
    day: String,
    count: i32,
    readings: Vec<Reading>,
    #[schema_version]
    v: i32,
}

fn main() {}
