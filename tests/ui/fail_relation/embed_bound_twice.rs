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

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "orders")]
pub struct Order {
    #[embed(max = 50)]
    #[validate(max_items = 50)]
    pub items: Vec<LineItem>,
}

fn main() {}
