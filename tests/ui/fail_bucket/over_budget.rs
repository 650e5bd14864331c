use docshape::bson::DateTime;
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Embedded)]
pub struct Reading {
    pub t: DateTime,
    pub temperature_in_degrees_celsius: f64,
}

// A full day at one reading a second is over 5 MB with this field name: over the budget.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "readings")]
#[bucket(series = sensor_id, period = day, per = "day", max = 86400, items = readings, time = t, max_bytes = 1000000)]
pub struct SensorDay {
    #[validate(max_length = 32)]
    pub sensor_id: String,
    pub day: String,
    pub count: i32,
    pub readings: Vec<Reading>,
}

fn main() {}
