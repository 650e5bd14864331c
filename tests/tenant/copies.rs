//! A denormalized copy whose holder and source both have a tenant is filled only from
//! a source document of the holder's tenant: a write that references another tenant's
//! source is refused with `RefError::CrossTenant`, and nothing is written.

use docshape::bson::doc;
use docshape::refs::{Ref, RefError};
use docshape::Model;
use docshape_testkit as testkit;
use serde::{Deserialize, Serialize};

/// A customer of an organisation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "tenant_customers", tenant = org_id)]
#[index(keys(org_id, _id))]
#[access(name = "customer", filter(org_id, _id))]
pub struct Customer {
    #[serde(rename = "_id")]
    pub id: i64,
    pub org_id: String,
    pub name: String,
}

/// A quote keeping the customer's name as it was when the quote was written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "tenant_quotes", tenant = org_id)]
#[index(keys(org_id, _id))]
#[access(name = "quote", filter(org_id, _id))]
pub struct Quote {
    #[serde(rename = "_id")]
    pub id: i64,
    pub org_id: String,
    pub customer_id: Ref<Customer>,
    #[denormalized(
        from = "Customer::name",
        via = "customer_id",
        refresh = "never",
        reason = "a quote shows the name it was addressed to"
    )]
    pub customer_name: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_never_comes_from_another_tenant() {
    let db = testkit::database("tenant_copies").await.unwrap();
    let customers = Customer::collection(&db);
    customers.insert_one(Customer { id: 1, org_id: "org-a".into(), name: "Ada".into() }).await.unwrap();
    customers
        .insert_one(Customer { id: 2, org_id: "org-b".into(), name: "B's secret".into() })
        .await
        .unwrap();
    let quote = |id, customer| Quote {
        id,
        org_id: "org-a".into(),
        customer_id: Ref::new(customer),
        customer_name: String::new(),
    };

    // Same tenant: filled.
    let mut own = quote(10, 1);
    docshape::relation::insert_one(&db, &mut own).await.unwrap();
    let stored = Quote::collection(&db).find_one(doc! { "_id": 10 }).await.unwrap().unwrap();
    assert_eq!(stored.customer_name, "Ada");

    // Another tenant's customer: refused, nothing copied, nothing inserted.
    let mut foreign = quote(11, 2);
    let err = docshape::relation::insert_one(&db, &mut foreign).await.unwrap_err();
    assert!(
        matches!(&err, RefError::CrossTenant { collection: "tenant_quotes", source: "tenant_customers", id } if **id == docshape::bson::Bson::Int64(2)),
        "{err:?}"
    );
    assert_eq!(foreign.customer_name, "", "the value was not filled from B's document");
    assert!(Quote::collection(&db).find_one(doc! { "_id": 11 }).await.unwrap().is_none());
    let mut many = [quote(12, 1), quote(13, 2)];
    let err = docshape::relation::insert_many(&db, &mut many).await.unwrap_err();
    assert!(matches!(err, RefError::CrossTenant { .. }), "{err:?}");
    let stored =
        Quote::collection(&db).count_documents(doc! { "customer_name": "B's secret" }).await.unwrap();
    assert_eq!(stored, 0, "no quote holds B's customer's name");
    assert_eq!(Quote::collection(&db).count_documents(doc! {}).await.unwrap(), 1);
}
