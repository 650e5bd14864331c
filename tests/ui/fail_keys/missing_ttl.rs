use docshape::KeyFamily;

#[derive(KeyFamily)]
#[key(pattern = "cache:product:{id}", kind = string)]
struct ProductCache {
    id: String,
}

fn main() {}
