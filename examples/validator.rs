//! The seed's `usuarios` collection (patrones-es, "Reglas de Validación"), written as a
//! Rust struct: docshape generates the `$jsonSchema`, `sync` creates the collection,
//! and the server enforces it.
//!
//! Run: `cargo run -p docshape-examples --example validator`

use docshape::bson;
use docshape::bson::doc;
use docshape::{Embedded, Model};
use docshape_examples::{fresh_database, why};
use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize, Model)]
#[model(collection = "usuarios", validation_action = "error")]
struct Usuario {
    #[validate(min_length = 2, max_length = 100)]
    nombre: String,
    #[validate(pattern = r"^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}$")]
    email: String,
    // Left out when None, so the stored field is an int or absent, never null:
    // exactly the seed's `edad: {bsonType: "int"}` outside `required`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[validate(minimum = 0, maximum = 150)]
    edad: Option<i32>,
    // Embebido: siempre se lee con el usuario.
    #[serde(skip_serializing_if = "Option::is_none")]
    direccion: Option<Direccion>,
}

#[derive(Debug, Serialize, Deserialize, Embedded)]
struct Direccion {
    calle: String,
    ciudad: String,
    #[validate(pattern = "^[0-9]{5}$")]
    cp: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("validator generated from the struct, before any database:\n{}\n", Usuario::validator_json());

    let db = fresh_database("docshape_usuarios").await?;
    println!("sync: {}", docshape::sync::<Usuario>(&db).await?);
    println!("sync again: {}", docshape::sync::<Usuario>(&db).await?);

    let usuarios = Usuario::collection(&db);
    let alicia = Usuario {
        nombre: "Alicia".into(),
        email: "alicia@example.com".into(),
        edad: Some(34),
        direccion: Some(Direccion {
            calle: "Av. Reforma 123".into(),
            ciudad: "Ciudad de México".into(),
            cp: "06600".into(),
        }),
    };
    usuarios.insert_one(&alicia).await?;
    println!("inserted {alicia:?}");

    // Documents written by anything else (another service, a shell) meet the same rules.
    let raw = db.collection::<bson::Document>("usuarios");
    for bad in [
        doc! { "nombre": "A", "email": "a@example.com" },
        doc! { "nombre": "Beto", "email": "no-es-un-email" },
        doc! { "nombre": "Carla", "email": "carla@example.com", "edad": 151 },
        doc! { "nombre": "Dani", "email": "dani@example.com", "edad": 30.5 },
        doc! { "email": "sin-nombre@example.com" },
    ] {
        match raw.insert_one(bad.clone()).await {
            Ok(_) => return Err(format!("the server admitted {bad}").into()),
            Err(e) => println!("rejected {bad}: {}", why(&e)),
        }
    }
    let count = usuarios.count_documents(doc! {}).await?;
    println!("usuarios stored: {count}");
    assert_eq!(count, 1);
    Ok(())
}
