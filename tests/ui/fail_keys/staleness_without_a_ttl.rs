use docshape::KeyFamily;

#[derive(KeyFamily)]
#[key(pattern = "totals:{day}", kind = counter, ttl = "none", reason = "a running total", staleness = "ttl")]
struct DailyTotal {
    day: String,
}

fn main() {}
