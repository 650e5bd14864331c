// A type of more than 64 stored fields: past the runtime's field table, its paths are
// checked through one `HasField` impl per field, beside the generic impl of the types
// that have a table, and an index reaches a field past the 64th.

mod wide {
    use docshape::{Embedded, Model};
    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize, Embedded)]
    pub struct Wide {
        pub f0: i64,
        pub f1: i64,
        pub f2: i64,
        pub f3: i64,
        pub f4: i64,
        pub f5: i64,
        pub f6: i64,
        pub f7: i64,
        pub f8: i64,
        pub f9: i64,
        pub f10: i64,
        pub f11: i64,
        pub f12: i64,
        pub f13: i64,
        pub f14: i64,
        pub f15: i64,
        pub f16: i64,
        pub f17: i64,
        pub f18: i64,
        pub f19: i64,
        pub f20: i64,
        pub f21: i64,
        pub f22: i64,
        pub f23: i64,
        pub f24: i64,
        pub f25: i64,
        pub f26: i64,
        pub f27: i64,
        pub f28: i64,
        pub f29: i64,
        pub f30: i64,
        pub f31: i64,
        pub f32: i64,
        pub f33: i64,
        pub f34: i64,
        pub f35: i64,
        pub f36: i64,
        pub f37: i64,
        pub f38: i64,
        pub f39: i64,
        pub f40: i64,
        pub f41: i64,
        pub f42: i64,
        pub f43: i64,
        pub f44: i64,
        pub f45: i64,
        pub f46: i64,
        pub f47: i64,
        pub f48: i64,
        pub f49: i64,
        pub f50: i64,
        pub f51: i64,
        pub f52: i64,
        pub f53: i64,
        pub f54: i64,
        pub f55: i64,
        pub f56: i64,
        pub f57: i64,
        pub f58: i64,
        pub f59: i64,
        pub f60: i64,
        pub f61: i64,
        pub f62: i64,
        pub f63: i64,
        pub f64: i64,
        pub f65: i64,
        pub f66: i64,
        pub f67: i64,
        pub f68: Vec<String>,
        pub f69: i64,
    }

    #[derive(Serialize, Deserialize, Model)]
    #[model(collection = "wide_holders")]
    #[index(keys("wide.f68", "wide.f3"))]
    pub struct Holder {
        pub wide: Wide,
    }
}

pub(super) fn main() {
    use docshape::Model;
    let keys: Vec<&str> = wide::Holder::INDEXES[0].keys.iter().map(|(k, _)| *k).collect();
    assert_eq!(keys, ["wide.f68", "wide.f3"]);
}
