use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "invoices", tenant = org)]
#[index(keys(org_id, customer))]
#[access(name = "by_customer", filter(org_id, customer))]
struct Invoice {
    #[serde(rename = "_id")]
    id: i64,
    org_id: String,
    customer: String,
}

fn main() {}
