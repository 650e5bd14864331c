//! Decode + upgrade of a v1 document against decode of a current one (the goal:
//! at most 1.5x). Both start from an owned `Document` as a cursor yields it, so the
//! difference is the upgrade chain: reading the version, decoding the v1 shape, `From`.
//!
//! `cargo bench -p docshape-benches --bench versioning`; the ratio goes in BENCHMARKS.md.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use docshape::versioning::decode;
use docshape_benches::{stored_user, User};

fn versioned_read(c: &mut Criterion) {
    let (v1, v2) = stored_user();
    assert_eq!(decode::<User>(v1.clone()).unwrap(), decode::<User>(v2.clone()).unwrap());
    let mut group = c.benchmark_group("versioned_read");
    group.bench_function("current_v2_plain_bson", |b| {
        b.iter_batched(
            || v2.clone(),
            |d| docshape::bson_compat::from_document::<User>(d).unwrap(),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("current_v2", |b| {
        b.iter_batched(|| v2.clone(), |d| decode::<User>(d).unwrap(), BatchSize::SmallInput)
    });
    group.bench_function("v1_upgraded", |b| {
        b.iter_batched(|| v1.clone(), |d| decode::<User>(d).unwrap(), BatchSize::SmallInput)
    });
    group.finish();
}

criterion_group!(benches, versioned_read);
criterion_main!(benches);
