use docshape::KeyFamily;

#[derive(KeyFamily)]
#[key(pattern = "user:{user_idd}:session", kind = hash, ttl = "30d", sliding)]
struct UserSession {
    user_id: String,
}

fn main() {}
