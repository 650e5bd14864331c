use docshape::bson::DateTime;
use docshape::refs::Ref;
use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "sensors")]
pub struct Sensor {
    #[serde(rename = "_id")]
    pub id: String,
    pub site: String,
}

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "readings", timeseries(time = t, meta = sensor_id))]
pub struct Reading {
    pub sensor_id: Ref<Sensor>,
    #[denormalized(from = "Sensor::site", via = "sensor_id", refresh = "never")]
    pub site: String,
    pub t: DateTime,
    pub v: f64,
}

fn main() {}
