use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "sessions")]
struct Session {
    #[index(expire_after = "2h")]
    seen: String,
}

fn main() {}
