use docshape::KeyFamily;

#[derive(KeyFamily)]
#[key(pattern = "rate:{ip}", kind = counter, ttl = "120s")]
struct RateWindow {
    ip: String,
    minute: u64,
}

fn main() {}
