use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Embedded)]
struct Customer {
    name: String,
    address: Address,
}

#[derive(Serialize, Deserialize, Embedded)]
struct Address {
    city: String,
}

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "orders")]
#[index(keys("customer.adress.city"))]
struct Order {
    customer: Customer,
}

fn main() {}
