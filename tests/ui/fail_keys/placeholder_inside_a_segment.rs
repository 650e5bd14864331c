use docshape::KeyFamily;

#[derive(KeyFamily)]
#[key(pattern = "avatar:user{id}", kind = string, ttl = "1d")]
struct Avatar {
    id: u64,
}

fn main() {}
