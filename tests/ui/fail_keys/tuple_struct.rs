use docshape::KeyFamily;

#[derive(KeyFamily)]
#[key(pattern = "user:{0}:session", kind = hash, ttl = "30d")]
struct UserSession(String);

fn main() {}
