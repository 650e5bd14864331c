use docshape::KeyFamily;

#[derive(KeyFamily)]
#[key(pattern = "rate:{ip}", kind = counter, ttl = "120s", reason = "a rate window")]
struct RateWindow {
    ip: String,
}

fn main() {}
