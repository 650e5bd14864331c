use docshape::KeyFamily;

#[derive(KeyFamily)]
#[key(pattern = "queue:emails", kind = list, ttl = "none")]
struct EmailQueue;

fn main() {}
