use docshape::bson::DateTime;
use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[serde(tag = "kind")]
#[model(collection = "events", timeseries(time = t, meta = device))]
pub enum Event {
    Up { #[serde(rename = "_id")] id: String, device: String, t: DateTime },
    Down { #[serde(rename = "_id")] id: String, device: String, t: DateTime },
}

fn main() {}
