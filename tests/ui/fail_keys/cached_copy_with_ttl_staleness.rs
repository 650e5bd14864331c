use docshape::refs::Ref;
use docshape::{KeyFamily, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "sellers")]
struct Seller {
    #[serde(rename = "_id")]
    id: String,
    name: String,
}

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "products")]
#[index(keys(seller_id))]
#[access(
    name = "product_page",
    filter(_id),
    fields(seller_name),
    view(name = ProductPage, derive(Clone)),
    cache = ProductPageCache,
    consistency = "eventual ok"
)]
struct Product {
    #[serde(rename = "_id")]
    id: String,
    seller_id: Ref<Seller>,
    #[denormalized(from = "Seller::name", via = "seller_id", refresh = "async", max_stale = "5m")]
    seller_name: String,
}

#[derive(KeyFamily)]
#[key(pattern = "cache:product:{id}", kind = string, value = ProductPage, ttl = "300s", staleness = "ttl")]
struct ProductPageCache {
    id: String,
}

fn main() {}
