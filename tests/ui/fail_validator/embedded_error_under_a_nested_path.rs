use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

// A mistake in an embedded type, whose fields a model's index, access row and write
// row name: the embedded type's mistake is the only error.
#[derive(Serialize, Deserialize, Embedded)]
struct Address {
    #[validate(min_length = 5, max_length = 2)]
    city: String,
    zip: String,
}

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "customers")]
#[index(keys("address.city"))]
#[access(name = "customers_in_city", filter("address.city"))]
#[access(name = "move_customer", filter(_id), update(set("address.zip")))]
struct Customer {
    #[serde(rename = "_id")]
    id: String,
    address: Address,
}

fn main() {
    let _ = Customer::customers_in_city("Lyon");
    let _ = Customer::move_customer("c1", "69001");
}
