use docshape::KeyFamily;

#[derive(KeyFamily)]
#[key(pattern = "user:{id:session", kind = hash, ttl = "30d")]
struct UserSession {
    id: String,
}

fn main() {}
