use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "scores")]
#[index(keys(game, points, level))]
#[access(name = "leaderboard", filter(game), sort(points = -1, level = 1))]
struct Score {
    game: String,
    level: i32,
    points: i64,
}

fn main() {}
