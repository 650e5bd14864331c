use docshape::Model;
use serde::{Deserialize, Serialize};
use docshape::bson::DateTime;

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "sessions")]
#[index(keys(user, seen), expire_after = "2h")]
struct Session {
    user: String,
    seen: DateTime,
}

fn main() {}
