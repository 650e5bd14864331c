use docshape::KeyFamily;

#[derive(KeyFamily)]
#[key(pattern = "rate:{ip}", kind = counter, value = u64, ttl = "120s")]
struct RateWindow {
    ip: String,
}

fn main() {}
