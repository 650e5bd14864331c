use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "shapes")]
enum Shape {
    Circle { radius: f64 },
}

fn main() {}
