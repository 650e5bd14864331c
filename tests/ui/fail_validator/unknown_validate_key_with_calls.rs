use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

// A misspelt `#[validate]` key in a model and in an embedded type, with code that
// calls the model's generated methods through a path into the embedded type: each
// misspelling is one error, and the calls raise none.
#[derive(Serialize, Deserialize, Embedded)]
struct Address {
    #[validate(max_lenght = 80)]
    city: String,
}

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users")]
#[index(keys(name))]
#[index(keys("address.city"))]
#[access(name = "load_user", filter(_id))]
#[access(name = "users_named", filter(name), fields(name))]
#[access(name = "users_in_city", filter("address.city"))]
struct User {
    #[serde(rename = "_id")]
    id: String,
    #[validate(min_lenght = 2, max_length = 100)]
    name: String,
    address: Address,
}

fn main() {
    let _ = User::load_user("u1");
    let _ = User::users_named("Ana");
    let _ = User::users_in_city("Lyon");
    let _: Option<UsersNamedView> = None;
}
