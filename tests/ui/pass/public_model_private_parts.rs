// A public model may embed private types: the generated impls must not leak them.
#![deny(private_interfaces, private_bounds)]

mod shop {
    use docshape::{Embedded, Model};
    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize, Model)]
    #[model(collection = "carts")]
    #[index(keys("owner.name"))]
    pub struct Cart {
        owner: Owner,
        #[embed(max = 50)]
        items: Vec<Item>,
    }

    #[derive(Serialize, Deserialize, Embedded)]
    struct Owner {
        name: String,
    }

    #[derive(Serialize, Deserialize, Embedded)]
    struct Item {
        sku: String,
    }
}

pub(super) fn main() {
    use docshape::Model;
    assert_eq!(shop::Cart::INDEXES[0].name, "owner.name_1");
}
