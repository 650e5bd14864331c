use docshape::KeyFamily;

#[derive(KeyFamily)]
#[key(pattern = "cache:user:{id}", kind = string, ttl = "300s", staleness = "forever")]
struct UserCache {
    id: String,
}

fn main() {}
