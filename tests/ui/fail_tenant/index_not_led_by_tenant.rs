use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "invoices", tenant = org_id)]
#[index(keys(org_id, customer))]
#[index(keys(number, org_id))]
#[access(name = "by_customer", filter(org_id, customer))]
struct Invoice {
    #[serde(rename = "_id")]
    id: i64,
    org_id: String,
    customer: String,
    number: i64,
}

fn main() {}
