use docshape::bson::DateTime;
use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "readings", timeseries(time = t, meta = sensor_id, granularity = "minutes"))]
pub struct Reading {
    pub sensor_id: String,
    pub t: DateTime,
    pub v: f64,
}

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "per_sensor")]
#[summary(of = Reading, group(sensor_id), refresh = "async", max_stale = "5m")]
pub struct PerSensor {
    #[serde(rename = "_id")]
    pub sensor_id: String,
    #[summary(count)]
    pub readings: i64,
    #[summary(sum = "v")]
    pub total: f64,
}

fn main() {}
