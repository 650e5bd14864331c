use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "readings")]
struct Reading {
    #[validate(exclusive_minimum = 1.5, maximum = 1.5)]
    value: f64,
}

fn main() {}
