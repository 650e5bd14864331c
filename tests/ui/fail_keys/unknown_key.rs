use docshape::KeyFamily;

#[derive(KeyFamily)]
#[key(patern = "leaderboard:{season}", kind = sorted_set, ttl = "90d")]
struct Leaderboard {
    season: u16,
}

fn main() {}
