use docshape::bson::DateTime;
use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "readings", timeseries(time = t, meta = sensor_id))]
#[access(name = "ensure", filter(sensor_id), update(set(sensor_id)), upsert(insert(t, v)), allow(upsert_without_unique, reason = "one sensor, one writer"))]
pub struct Reading {
    pub sensor_id: String,
    pub t: DateTime,
    pub v: f64,
}

fn main() {}
