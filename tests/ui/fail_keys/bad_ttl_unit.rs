use docshape::KeyFamily;

#[derive(KeyFamily)]
#[key(pattern = "cache:product:{id}", kind = string, ttl = "5 minutes")]
struct ProductCache {
    id: String,
}

fn main() {}
