use docshape::KeyFamily;

// Parses from text, but has no `Display` to write a key with.
struct UserId(u64);

impl std::str::FromStr for UserId {
    type Err = std::num::ParseIntError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.parse().map(UserId)
    }
}

#[derive(KeyFamily)]
#[key(pattern = "user:{id}:session", kind = hash, ttl = "30d")]
struct UserSession {
    id: UserId,
}

fn main() {}
