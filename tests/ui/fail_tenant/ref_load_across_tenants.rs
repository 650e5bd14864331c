// `Ref::load` reads by `_id` alone: on a model with a tenant it would read across
// tenants, so it is refused where it is written; `Ref::load_in` is the fix.
use docshape::refs::Ref;
use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "invoices", tenant = org_id)]
#[index(keys(org_id, customer))]
#[access(name = "by_customer", filter(org_id, customer))]
struct Invoice {
    #[serde(rename = "_id")]
    id: i64,
    org_id: String,
    customer: String,
}

async fn open(db: &docshape::mongodb::Database) {
    let invoice = Ref::<Invoice>::new(1);
    let _ = invoice.load(db).await;
}

fn main() {
    let _ = open;
}
