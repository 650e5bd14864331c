use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users")]
#[index(keys(email))]
#[access(name = "by_email", filter(email(case_insensitive)))]
struct User {
    email: String,
}

fn main() {}
