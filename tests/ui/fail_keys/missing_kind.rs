use docshape::KeyFamily;

#[derive(KeyFamily)]
#[key(pattern = "leaderboard:{season}", ttl = "90d")]
struct Leaderboard {
    season: u16,
}

fn main() {}
