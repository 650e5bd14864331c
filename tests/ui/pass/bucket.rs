use docshape::bson::{oid::ObjectId, DateTime};
use docshape::bucket::{Bucket, IdForm, Per, PeriodKind};
use docshape::outlier::Outliers;
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Embedded)]
pub struct Reading {
    pub t: DateTime,
    pub v: f64,
}

// patterns-en: one bucket per sensor per day, a string id.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "sensor_days")]
#[bucket(series = sensor_id, period = day, per = "day", max = 1440, items = readings, time = t)]
pub struct SensorDay {
    #[serde(rename = "_id")]
    pub id: String,
    #[validate(max_length = 64)]
    pub sensor_id: String,
    pub day: String,
    pub count: i32,
    pub readings: Vec<Reading>,
    #[bucket(max = "v")]
    pub max_v: f64,
    // Optional and left out when absent: a new bucket may lack it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[validate(max_length = 200)]
    pub note: Option<String>,
}

#[derive(Serialize, Deserialize, Embedded)]
pub struct Lectura {
    pub ts: DateTime,
    pub temp: f64,
}

#[derive(Serialize, Deserialize, Embedded)]
pub struct HoraId {
    #[serde(rename = "dispositivoId")]
    #[validate(max_length = 64)]
    pub dispositivo_id: String,
    pub hora: DateTime,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<i64>,
}

// patrones-es: per device per hour, a compound id, renamed fields.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "lecturas")]
#[bucket(series = "dispositivoId", period = hora, per = "hour", max = 3600, items = lecturas, time = ts, count = conteo, max_bytes = 200000)]
pub struct DispositivoHora {
    #[serde(rename = "_id")]
    pub id: HoraId,
    #[serde(rename = "dispositivoId")]
    #[validate(max_length = 64)]
    pub dispositivo_id: String,
    pub hora: DateTime,
    pub conteo: i64,
    pub lecturas: Vec<Lectura>,
}

// patrones-es: the outlier pattern.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "usuarios")]
pub struct Usuario {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[outlier(threshold = 1000, overflow = "seguidores_extra", flag = tiene_extras)]
    pub seguidores: Vec<ObjectId>,
    pub tiene_extras: bool,
}

// A constant, so checked when the case compiles.
const _: () = assert!(DispositivoHora::MAX_BUCKET_BYTES <= 200_000);

pub(super) fn main() {
    assert_eq!(SensorDay::BUCKET.id, IdForm::String);
    assert_eq!(SensorDay::BUCKET.period_kind, PeriodKind::Label);
    assert_eq!(DispositivoHora::BUCKET.id, IdForm::Compound);
    assert_eq!(DispositivoHora::BUCKET.per, Per::Hour);
    assert_eq!(Usuario::OUTLIERS[0].threshold, 1000);
    assert_eq!(<SensorDay as Model>::INDEXES[0].name, "sensor_id_1_day_1");
}

// The generated methods exist, with typed arguments.
#[allow(dead_code)]
async fn uses(db: &docshape::mongodb::Database) {
    let r = Reading { t: DateTime::now(), v: 1.0 };
    SensorDay::append(db, "sensor_9", &r).await.unwrap();
    let _: Vec<Reading> = SensorDay::read_range(db, "sensor_9", DateTime::MIN, DateTime::MAX).await.unwrap();
    let _: Vec<ObjectId> = Usuario::load_seguidores(db, &ObjectId::new()).await.unwrap();
}
