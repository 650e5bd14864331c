use docshape::Embedded;

#[derive(Embedded)]
union Bits {
    int: u32,
    float: f32,
}

fn main() {}
