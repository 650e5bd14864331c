use std::collections::BTreeMap;

use docshape::bson::{doc, oid::ObjectId, DateTime};
// bson 2's serde helpers by their real paths. bson 3 has none of these names (its
// helpers are `serde_as` types), so under `bson-3` the same names are written here:
// the schema inference recognises a helper by its name.
#[cfg(not(feature = "bson-3"))]
use docshape::bson::serde_helpers::{hex_string_as_object_id, serialize_u64_as_i64};
use docshape::validator::Schema;
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "usuarios", validation_level = "moderate", validation_action = "warn", strict)]
#[serde(rename_all = "camelCase")]
struct Usuario {
    #[serde(rename = "_id")]
    id: ObjectId,
    #[validate(min_length = 2, max_length = 100)]
    nombre_completo: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[validate(minimum = 0, maximum = 150)]
    edad: Option<i32>,
    #[serde(with = "hex_string_as_object_id")]
    legacy_id: String,
    #[validate(bson_type = "date")]
    #[serde(serialize_with = "serialize_u64_as_i64")]
    raw_millis: u64,
    creado: DateTime,
    direccion: Direccion,
    #[validate(max_items = 3)]
    telefonos: Vec<Telefono>,
    #[serde(flatten)]
    extra: BTreeMap<String, i32>,
    r#type: Tipo,
}

#[derive(Serialize, Deserialize, Embedded)]
#[embedded(strict)]
struct Direccion {
    calle: String,
    #[validate(pattern = "^[0-9]{5}$")]
    cp: String,
}

#[derive(Serialize, Deserialize, Embedded)]
#[serde(tag = "kind", content = "number")]
enum Telefono {
    Movil(String),
    Fijo { lada: u16, numero: String },
    Ninguno,
}

#[derive(Serialize, Deserialize, Embedded)]
#[serde(rename_all = "lowercase")]
enum Tipo {
    Persona,
    Empresa,
}

pub(super) fn main() {
    assert_eq!(Usuario::COLLECTION, "usuarios");
    assert_eq!(Usuario::VALIDATION_LEVEL, docshape::ValidationLevel::Moderate);
    assert_eq!(Usuario::VALIDATION_ACTION, docshape::ValidationAction::Warn);
    let schema = Usuario::schema();
    let props = schema.get_document("properties").unwrap();
    assert_eq!(props.get_document("legacyId").unwrap(), &doc! { "bsonType": "objectId" });
    assert_eq!(props.get_document("rawMillis").unwrap(), &doc! { "bsonType": "date" });
    assert_eq!(
        props.get_document("type").unwrap(),
        &doc! { "bsonType": "string", "enum": ["persona", "empresa"] }
    );
    // The flattened map admits any further key as an int, even though the model is strict.
    assert_eq!(schema.get_document("additionalProperties").unwrap(), &doc! { "bsonType": "int" });
    assert!(!schema.get_array("required").unwrap().iter().any(|r| r.as_str() == Some("edad")));
}

/// A hex string stored as an `ObjectId`, as bson 2's helper of this name does.
#[cfg(feature = "bson-3")]
mod hex_string_as_object_id {
    use docshape::bson::oid::ObjectId;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(hex: &str, serializer: S) -> Result<S::Ok, S::Error> {
        ObjectId::parse_str(hex).map_err(serde::ser::Error::custom)?.serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
        Ok(ObjectId::deserialize(deserializer)?.to_hex())
    }
}

/// A `u64` stored as an `i64`, as bson 2's helper of this name does.
#[cfg(feature = "bson-3")]
fn serialize_u64_as_i64<S: serde::Serializer>(value: &u64, serializer: S) -> Result<S::Ok, S::Error> {
    let value = i64::try_from(*value).map_err(serde::ser::Error::custom)?;
    serializer.serialize_i64(value)
}
