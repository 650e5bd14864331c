use docshape::KeyFamily;

#[derive(KeyFamily)]
#[key(pattern = "user:{id}:session", kind = hash, ttl = "none", sliding, reason = "sessions end on logout")]
struct UserSession {
    id: String,
}

fn main() {}
