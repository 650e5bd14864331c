use docshape::{KeyFamily, Model};
use serde::{Deserialize, Serialize};

// The ids are strings ("007" and "7" are two users); a `u64` family would give both
// the key `cache:user:7`.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users")]
#[access(name = "profile", filter(_id), cache = UserCache, consistency = "eventual ok")]
#[access(name = "rename", filter(_id), update(set(name)))]
struct User {
    #[serde(rename = "_id")]
    id: String,
    name: String,
}

#[derive(KeyFamily)]
#[key(pattern = "cache:user:{id}", kind = string, value = User, ttl = "300s")]
struct UserCache {
    id: u64,
}

fn main() {}
