use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "orders", shard_key(tenant))]
#[index(keys(status))]
#[access(name = "by_status", filter(status))]
struct Order {
    tenant: String,
    status: String,
}

fn main() {}
