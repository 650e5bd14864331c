use docshape::Model;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "scores")]
#[index(keys(game, level, points = -1))]
#[access(name = "top_above_level", filter(game), sort(points = -1), range(level))]
struct Score {
    game: String,
    level: i32,
    points: i64,
}

fn main() {}
