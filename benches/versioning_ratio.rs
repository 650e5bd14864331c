//! The versioned-read ratio, interleaved: rounds alternate decoding a current document
//! and decoding + upgrading a v1 one (order swapped every round), and the median of the
//! per-round ratios is reported, so machine noise hits both sides alike.
//!
//! `cargo bench -p docshape-benches --bench versioning_ratio`. Under `cargo test` it
//! runs one short round, to show it works.

use docshape::bson;
use std::hint::black_box;
use std::time::Instant;

use docshape::versioning::decode;
use docshape_benches::{stored_user, User};

fn time_decodes(doc: &bson::Document, n: u32) -> f64 {
    let start = Instant::now();
    for _ in 0..n {
        black_box(decode::<User>(black_box(doc.clone())).unwrap());
    }
    start.elapsed().as_secs_f64() * 1e9 / f64::from(n)
}

fn time_clones(doc: &bson::Document, n: u32) -> f64 {
    let start = Instant::now();
    for _ in 0..n {
        black_box(black_box(doc).clone());
    }
    start.elapsed().as_secs_f64() * 1e9 / f64::from(n)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let measuring = std::env::args().any(|a| a == "--bench");
    let (rounds, n) = if measuring { (41, 20_000) } else { (1, 100) };
    let (v1, v2) = stored_user();
    assert_eq!(decode::<User>(v1.clone()).unwrap(), decode::<User>(v2.clone()).unwrap());
    let (mut current, mut old, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        // Each side's time without the clone of its input, which both pay.
        let (c, o) = if round % 2 == 0 {
            let c = time_decodes(&v2, n) - time_clones(&v2, n);
            (c, time_decodes(&v1, n) - time_clones(&v1, n))
        } else {
            let o = time_decodes(&v1, n) - time_clones(&v1, n);
            (time_decodes(&v2, n) - time_clones(&v2, n), o)
        };
        current.push(c);
        old.push(o);
        ratios.push(o / c);
    }
    println!(
        "versioned read, {rounds} interleaved rounds of {n}: current v2 {:.0} ns, v1 decode + upgrade {:.0} ns, median ratio {:.2}x",
        median(current),
        median(old),
        median(ratios)
    );
}
