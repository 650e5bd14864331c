use docshape::bson::Bson;
use docshape::{KeyFamily, Model};
use serde::{Deserialize, Serialize};

// An `_id` of any BSON type has no placeholder type that holds each value exactly: a
// string family would build `"b_alice"`'s key from a JavaScript code id's text too.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "accounts")]
#[access(name = "account", filter(_id), cache = AccountCache, consistency = "eventual ok")]
struct Account {
    #[serde(rename = "_id")]
    id: Bson,
    name: String,
}

#[derive(KeyFamily)]
#[key(pattern = "cache:account:{id}", kind = string, value = Account, ttl = "300s")]
struct AccountCache {
    id: String,
}

fn main() {}
