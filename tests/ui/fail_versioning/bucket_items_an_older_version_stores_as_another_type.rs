use docshape::bson::DateTime;
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Embedded)]
struct Reading {
    t: DateTime,
    v: f64,
}

#[derive(Serialize, Deserialize, Embedded)]
struct ReadingV1 {
    t: DateTime,
    v: i32,
}

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "sensor_days", version = 2, migrate(v1 = SensorDayV1))]
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

/// v1's readings were whole numbers: a v2 append would put a fraction into a v1 bucket.
#[derive(Serialize, Deserialize, Embedded)]
struct SensorDayV1 {
    #[serde(rename = "_id")]
    id: String,
    #[validate(max_length = 64)]
    sensor_id: String,
    day: String,
    count: i32,
    #[embed(max = 1440, reason = "the bucket's max")]
    readings: Vec<ReadingV1>,
}

impl From<SensorDayV1> for SensorDay {
    fn from(v1: SensorDayV1) -> Self {
        let readings = v1.readings.into_iter().map(|r| Reading { t: r.t, v: f64::from(r.v) }).collect();
        SensorDay { id: v1.id, sensor_id: v1.sensor_id, day: v1.day, count: v1.count, readings, v: 2 }
    }
}

fn main() {}
