use docshape::KeyFamily;

#[derive(KeyFamily)]
#[key(pattern = "cache:product*:{id}", kind = string, ttl = "300s")]
struct ProductCache {
    id: String,
}

fn main() {}
