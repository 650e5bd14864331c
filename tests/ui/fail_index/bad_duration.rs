use docshape::Model;
use serde::{Deserialize, Serialize};
use docshape::bson::DateTime;

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "sessions")]
struct Session {
    #[index(expire_after = "30 days")]
    seen: DateTime,
}

fn main() {}
