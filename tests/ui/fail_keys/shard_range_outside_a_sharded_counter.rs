use docshape::KeyFamily;

#[derive(KeyFamily)]
#[key(pattern = "counter:orders:{0..15}", kind = counter, ttl = "none", reason = "a running total")]
struct OrderCounter;

fn main() {}
