use docshape::bson::DateTime;
use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "invoices", tenant = org_id, soft_delete = deleted_at)]
#[index(keys(org_id, number), unique)]
#[access(name = "by_number", filter(org_id, number))]
struct Invoice {
    #[serde(rename = "_id")]
    id: i64,
    org_id: String,
    number: i64,
    deleted_at: Option<DateTime>,
}

fn main() {}
