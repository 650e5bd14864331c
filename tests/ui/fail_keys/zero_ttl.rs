use docshape::KeyFamily;

#[derive(KeyFamily)]
#[key(pattern = "cache:product:{id}", kind = string, ttl = "0s")]
struct ProductCache {
    id: String,
}

fn main() {}
