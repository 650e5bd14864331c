use docshape::bson::DateTime;
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Embedded)]
pub struct Reading {
    pub t: DateTime,
    pub v: f64,
    #[validate(max_items = 4)]
    pub labels: Vec<String>,
}

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "readings")]
#[bucket(series = sensor_id, period = day, per = "day", max = 1440, items = readings, time = t)]
pub struct SensorDay {
    #[validate(max_length = 32)]
    pub sensor_id: String,
    pub day: String,
    pub count: i32,
    pub readings: Vec<Reading>,
}

fn main() {}
