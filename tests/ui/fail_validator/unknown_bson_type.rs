use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users")]
struct User {
    #[serde(serialize_with = "as_hex")]
    #[validate(bson_type = "objectid")]
    owner: [u8; 12],
}

fn as_hex<S: serde::Serializer>(v: &[u8; 12], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{v:?}"))
}

fn main() {}
