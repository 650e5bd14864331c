// A document never moves to another tenant: a write row may not write the tenant.
use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "invoices", tenant = org_id)]
#[index(keys(org_id, _id))]
#[access(name = "move_invoice", filter(org_id, _id), update(set(org_id)))]
struct Invoice {
    #[serde(rename = "_id")]
    id: i64,
    org_id: String,
}

fn main() {}
