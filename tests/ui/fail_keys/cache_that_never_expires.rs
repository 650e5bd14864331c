use docshape::KeyFamily;

#[derive(KeyFamily)]
#[key(pattern = "cache:product:{id}", kind = string, ttl = "none", reason = "products rarely change")]
struct ProductCache {
    id: String,
}

fn main() {}
