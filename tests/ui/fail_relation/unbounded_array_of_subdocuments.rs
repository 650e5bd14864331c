#[allow(unused_imports)]
use docshape::refs::Ref;
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users")]
pub struct User {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
}

#[derive(Serialize, Deserialize, Embedded)]
pub struct LineItem {
    pub sku: String,
    pub qty: u32,
}

// The seed's "array sin límite": a user whose posts live inside the user document.
#[derive(Serialize, Deserialize, Embedded)]
pub struct Publicacion {
    pub texto: String,
}

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "usuarios")]
pub struct Usuario {
    pub nombre: String,
    pub publicaciones: Vec<Publicacion>,
}

fn main() {}
