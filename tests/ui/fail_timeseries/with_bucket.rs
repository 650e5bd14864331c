use docshape::bson::DateTime;
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Embedded)]
pub struct Reading {
    pub t: DateTime,
    pub v: f64,
}

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "sensor_days", timeseries(time = first, meta = sensor_id))]
#[bucket(series = sensor_id, period = day, per = "day", max = 1440, items = readings, time = t)]
pub struct SensorDay {
    #[serde(rename = "_id")]
    pub id: String,
    #[validate(max_length = 32)]
    pub sensor_id: String,
    pub day: String,
    #[bucket(min = "t")]
    pub first: DateTime,
    pub count: i32,
    pub readings: Vec<Reading>,
}

fn main() {}
