use docshape::bson::DateTime;
use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "readings", timeseries(time = t, meta = sensor_id))]
#[access(name = "reading", filter(_id))]
pub struct Reading {
    #[serde(rename = "_id")]
    pub id: docshape::bson::oid::ObjectId,
    pub sensor_id: String,
    pub t: DateTime,
    pub v: f64,
}

fn main() {}
