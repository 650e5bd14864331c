use docshape::bson::DateTime;
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "readings", version = 2, migrate(v1 = ReadingV1), timeseries(time = t, meta = sensor_id))]
pub struct Reading {
    pub sensor_id: String,
    pub t: DateTime,
    pub celsius: f64,
    #[schema_version]
    pub schema_version: i32,
}

#[derive(Serialize, Deserialize, Embedded)]
pub struct ReadingV1 {
    pub sensor_id: String,
    pub t: DateTime,
    pub v: f64,
}

impl From<ReadingV1> for Reading {
    fn from(r: ReadingV1) -> Self {
        Reading { sensor_id: r.sensor_id, t: r.t, celsius: r.v, schema_version: 2 }
    }
}

fn main() {}
