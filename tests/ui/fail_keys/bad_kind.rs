use docshape::KeyFamily;

#[derive(KeyFamily)]
#[key(pattern = "leaderboard:{season}", kind = sorted_sett, ttl = "90d")]
struct Leaderboard {
    season: u16,
}

fn main() {}
