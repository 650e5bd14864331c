use docshape::bson::DateTime;
use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "readings", timeseries(time = t, meta = sensor_id))]
#[access(name = "fix_value", filter(sensor_id), update(set(v)))]
pub struct Reading {
    pub sensor_id: String,
    pub t: DateTime,
    pub v: f64,
}

fn main() {}
