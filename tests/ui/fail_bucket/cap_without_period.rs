use docshape::bson::DateTime;
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Embedded)]
pub struct Reading {
    pub t: DateTime,
    pub v: f64,
}

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "readings")]
#[bucket(series = sensor_id, per = "day", max = 20, items = readings, time = t, cap = 500)]
pub struct SensorDay {
    #[validate(max_length = 32)]
    pub sensor_id: String,
    pub day: String,
    pub count: i32,
    pub readings: Vec<Reading>,
}

fn main() {}
