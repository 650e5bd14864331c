//! A summary of a tenant model groups by the tenant first (the derive refuses one that
//! does not: `tests/ui/fail_summary/tenant_not_grouped_first.rs`), so two tenants'
//! documents with the same customer are kept apart, on a real server.

use docshape::bson::doc;
use docshape::{Embedded, Model};
use docshape_testkit as testkit;
use serde::{Deserialize, Serialize};

/// An invoice of an organisation's customer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "tenant_invoices", tenant = org_id, transactions)]
#[index(keys(org_id, customer))]
#[access(name = "invoices_of", filter(org_id, customer))]
pub struct Invoice {
    #[serde(rename = "_id")]
    pub id: i64,
    pub org_id: String,
    pub customer: String,
    pub cents: i64,
}

/// Totals per tenant and customer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "tenant_customer_totals")]
#[summary(of = Invoice, group(org_id, customer), refresh = "sync")]
pub struct CustomerTotals {
    #[serde(rename = "_id")]
    pub key: CustomerKey,
    #[summary(count)]
    pub invoices: i64,
    #[summary(sum = "cents")]
    pub cents: i64,
}

/// The composite key, led by the tenant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct CustomerKey {
    pub org_id: String,
    pub customer: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_summary_keeps_tenants_apart() {
    let db = testkit::database("tenant_summary").await.unwrap();
    docshape::sync::<Invoice>(&db).await.unwrap();
    let inv = |id, org: &str, cents| Invoice { id, org_id: org.into(), customer: "acme".into(), cents };
    docshape::relation::insert_one(&db, &mut inv(1, "org-a", 100)).await.unwrap();
    docshape::relation::insert_many(&db, &mut [inv(2, "org-b", 7), inv(3, "org-a", 20)]).await.unwrap();
    let totals = db.collection::<CustomerTotals>("tenant_customer_totals");
    let a = totals.find_one(doc! { "_id": { "org_id": "org-a", "customer": "acme" } }).await.unwrap();
    let b = totals.find_one(doc! { "_id": { "org_id": "org-b", "customer": "acme" } }).await.unwrap();
    assert_eq!(a.map(|t| (t.invoices, t.cents)), Some((2, 120)), "org-a's acme: its own two invoices");
    assert_eq!(b.map(|t| (t.invoices, t.cents)), Some((1, 7)), "org-b's acme: its own invoice");
    assert_eq!(totals.count_documents(doc! {}).await.unwrap(), 2, "one document per tenant and customer");
}
