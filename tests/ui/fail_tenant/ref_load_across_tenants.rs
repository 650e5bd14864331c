// checked when built
//
// `Ref::load` reads by `_id` alone: on a model with a tenant it would read across
// tenants, so it is refused where it is written; `Ref::load_in` is the fix.
use docshape::refs::Ref;
use docshape::Model;
use std::future::Future;
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

fn main() {
    let db: Option<&docshape::mongodb::Database> = None;
    if let Some(db) = db {
        let invoice = Ref::<Invoice>::new(1);
        let mut load = std::pin::pin!(invoice.load(db));
        let waker = std::task::Waker::noop();
        let _ = load.as_mut().poll(&mut std::task::Context::from_waker(waker));
    }
}
