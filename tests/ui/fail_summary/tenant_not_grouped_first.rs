// The source is a tenant model: a summary grouped by the customer alone would add
// two tenants' invoices into one document. The fix is `group(org_id, customer)`.
use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "invoices", tenant = org_id, transactions)]
#[index(keys(org_id, customer))]
#[access(name = "by_customer", filter(org_id, customer))]
pub struct Invoice {
    #[serde(rename = "_id")]
    pub id: i64,
    pub org_id: String,
    pub customer: String,
    pub cents: i64,
}

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "customer_totals")]
#[summary(of = Invoice, group(customer), refresh = "sync")]
pub struct CustomerTotals {
    #[serde(rename = "_id")]
    pub customer: String,
    #[summary(count)]
    pub invoices: i64,
    #[summary(sum = "cents")]
    pub cents: i64,
}

fn main() {}
