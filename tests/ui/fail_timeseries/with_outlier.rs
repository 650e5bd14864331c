use docshape::bson::DateTime;
use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "readings", timeseries(time = t, meta = sensor_id))]
pub struct Reading {
    #[serde(rename = "_id")]
    pub id: docshape::bson::oid::ObjectId,
    pub sensor_id: String,
    pub t: DateTime,
    #[outlier(threshold = 100, overflow = "reading_samples", flag = has_more)]
    pub samples: Vec<f64>,
    pub has_more: bool,
}

fn main() {}
