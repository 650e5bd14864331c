use docshape::validator::Schema;
use docshape::Model;
use serde::{Deserialize, Serialize};

// No collection, and code that calls the model's generated methods: the missing
// collection is the only error.
#[derive(Serialize, Deserialize, Model)]
#[model(strict)]
#[access(name = "load_user", filter(_id))]
#[access(name = "rename_user", filter(_id), update(set(name)))]
struct User {
    #[serde(rename = "_id")]
    id: String,
    name: String,
}

fn main() {
    let _ = User::load_user("u1");
    let _ = User::rename_user("u1", "Ana");
    let _ = User::validator();
    let _ = User::schema();
}
