//! The outlier pattern, patrones-es's form: followers embedded in the user, except for
//! the few users with millions, whose extra followers go to an overflow collection
//! while a flag (`tiene_extras`) tells readers to look there.
//!
//! A normal user's follow is one `update`; the embedded array never passes the
//! threshold; the count stays right; a read merges embedded and overflow followers.
//!
//! Run: `cargo run --example outlier`

use docshape::bson;
use docshape::bson::doc;
use docshape::Model;
use docshape_examples::fresh_database;
use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize, Model)]
#[model(collection = "usuarios")]
struct Usuario {
    #[serde(rename = "_id")]
    id: i64,
    #[validate(min_length = 2, max_length = 100)]
    nombre: String,
    /// Up to 50 embedded; overflow documents of up to 200 each beyond.
    #[outlier(threshold = 50, overflow = "seguidores_extra", flag = tiene_extras, count = num_seguidores, per_doc = 200)]
    seguidores: Vec<i64>,
    tiene_extras: bool,
    num_seguidores: i64,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let db = fresh_database("docshape_followers").await?;
    docshape::sync::<Usuario>(&db).await?;
    // The overflow collection, with its own validator and `{parent, _id.seq}` index.
    docshape::outlier::sync::<Usuario>(&db).await?;
    let usuarios = Usuario::collection(&db);
    for (id, nombre) in [(1, "Usuario Regular"), (2, "Celebridad")] {
        usuarios
            .insert_one(Usuario {
                id,
                nombre: nombre.into(),
                seguidores: vec![],
                tiene_extras: false,
                num_seguidores: 0,
            })
            .await?;
    }

    println!("== a regular user gains 3 followers: one update each");
    for f in [101, 102, 103] {
        let pushed = Usuario::push_seguidores(&db, &1, &[f]).await?;
        println!("follower {f}: embedded {}, {} command(s)", pushed.embedded, pushed.commands);
    }

    println!("== a celebrity gains 1,000 followers (20x the threshold): 60 one by one, then batches of 100");
    let mut commands = Vec::new();
    for i in 0..60 {
        let pushed = Usuario::push_seguidores(&db, &2, &[10_000 + i]).await?;
        commands.push(pushed.commands);
    }
    // The first 50 fit: one update each. From the 51st: the update finds no room, then
    // the flag, the overflow upsert and the count: four commands.
    println!("commands per follow: first {:?}, last {:?}", commands[0], commands[59]);
    let mut batches = 0;
    for start in (60..1000).step_by(100) {
        let batch: Vec<i64> = (start..(start + 100).min(1000)).map(|i| 10_000 + i).collect();
        batches += Usuario::push_seguidores(&db, &2, &batch).await?.commands;
    }
    println!("{batches} commands for the 10 batches");

    for id in [1, 2] {
        let u = usuarios.find_one(doc! { "_id": id }).await?.ok_or("missing user")?;
        let all = Usuario::load_seguidores(&db, &id).await?;
        println!(
            "{:<16} tiene_extras: {:<5} embedded: {:>3}  num_seguidores: {:>5}  loaded: {:>5}",
            u.nombre,
            u.tiene_extras,
            u.seguidores.len(),
            u.num_seguidores,
            all.len()
        );
        assert_eq!(all.len() as i64, u.num_seguidores);
        assert!(u.seguidores.len() <= 50);
    }
    let overflow = db.collection::<bson::Document>("seguidores_extra").count_documents(doc! {}).await?;
    println!("overflow documents: {overflow}");
    Ok(())
}
