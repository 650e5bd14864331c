#[allow(unused_imports)]
use docshape::refs::Ref;
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Embedded)]
pub struct Address {
    pub city: String,
    pub country: String,
}

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users")]
pub struct User {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
    pub address: Address,
}

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "posts")]
#[index(keys(author_id))]
pub struct Post {
    pub author_id: Ref<User>,
    #[denormalized(from = "User::address.cty", via = "author_id", refresh = "sync")]
    pub author_city: String,
}

fn main() {}
