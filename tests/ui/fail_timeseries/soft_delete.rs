use docshape::bson::DateTime;
use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(
    collection = "readings",
    timeseries(time = t, meta = sensor_id, granularity = "minutes"),
    soft_delete = deleted_at
)]
pub struct Reading {
    pub sensor_id: String,
    pub t: DateTime,
    pub v: f64,
    pub deleted_at: Option<DateTime>,
}

fn main() {}
