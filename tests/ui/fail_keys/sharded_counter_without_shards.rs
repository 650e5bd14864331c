use docshape::KeyFamily;

#[derive(KeyFamily)]
#[key(pattern = "counter:orders", kind = sharded_counter, ttl = "none", reason = "a running total")]
struct OrderCounter;

fn main() {}
