//! Client CPU of docshape's runtime, no server: building validators and index
//! documents (what `sync` sends once; no read or write path builds them), cursor token
//! encode + decode (the work a page adds over a hand-written query), the lazy upgrade
//! of a stored v1 document, and Redis key building and parsing.
//!
//! `cargo bench -p docshape-benches --bench client_cpu`; the figures go in
//! BENCHMARKS.md. Under `cargo test` each function runs once.

use docshape::bson;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use docshape::bson::{oid::ObjectId, Bson, DateTime};
use docshape::paginate::{decode_token, encode_token, CursorKey, Scope};
use docshape::sync::CollectionSpec;
use docshape::versioning::decode;
use docshape::{KeyFamily, Model};
use docshape_benches::{stored_user, Post, RateWindow, SensorDay, User, UserSession};

fn schema_artifacts(c: &mut Criterion) {
    let mut group = c.benchmark_group("artifacts");
    // The constants are data in the binary: reading them costs nothing.
    group.bench_function("indexes_const", |b| b.iter(|| black_box(Post::INDEXES).len()));
    group.bench_function("validator_post", |b| b.iter(Post::validator));
    group.bench_function("validator_user_versioned", |b| b.iter(User::validator));
    group.bench_function("validator_bucket", |b| b.iter(SensorDay::validator));
    group.bench_function("index_documents_post", |b| {
        b.iter(|| Post::INDEXES.iter().map(|i| i.to_document()).collect::<Vec<_>>())
    });
    // Everything `sync` compares with the server, built once per collection per sync.
    group.bench_function("collection_spec_post", |b| b.iter(CollectionSpec::of::<Post>));
    group.finish();
}

fn cursor_tokens(c: &mut Criterion) {
    let pattern = &Post::ACCESS_PATTERNS[0];
    let key = CursorKey::new(b"bench-cursor-secret-0123456789abc".to_vec()).unwrap();
    // A feed position: the boundary's `created_at` and `_id`.
    let values = [Bson::DateTime(DateTime::from_millis(1_786_000_000_000)), Bson::ObjectId(ObjectId::new())];
    // The scope a token of the feed `author_id = "u_42"` is bound to.
    let filter = bson::doc! { "author_id": { "$eq": "u_42" } };
    let scope = Scope { database: "shop", collection: Post::COLLECTION, pattern, filter: &filter };
    let scope = &scope;
    let signed = encode_token(scope, &values, Some(&key));
    let unsigned = encode_token(scope, &values, None);
    assert_eq!(decode_token(&signed, scope, Some(&key)).unwrap(), values);
    assert_eq!(decode_token(&unsigned, scope, None).unwrap(), values);
    let mut group = c.benchmark_group("cursor_token");
    for (name, key, token) in [("signed", Some(&key), &signed), ("unsigned", None, &unsigned)] {
        group.bench_function(format!("encode_{name}"), |b| {
            b.iter(|| encode_token(scope, black_box(&values), key))
        });
        group.bench_function(format!("decode_{name}"), |b| {
            b.iter(|| decode_token(black_box(token), scope, key).unwrap())
        });
        group.bench_function(format!("encode_decode_{name}"), |b| {
            b.iter(|| {
                let t = encode_token(scope, black_box(&values), key);
                decode_token(&t, scope, key).unwrap()
            })
        });
        // What a page that reads a cursor and writes the next one costs: the scope is
        // hashed once for both, as `Paginator::fetch` does.
        group.bench_function(format!("page_{name}"), |b| {
            b.iter(|| {
                let prepared = scope.prepare();
                let values = prepared.decode(black_box(token), key).unwrap();
                prepared.encode(&values, key)
            })
        });
    }
    group.finish();
}

fn lazy_upgrade(c: &mut Criterion) {
    let (v1, v2) = stored_user();
    let mut group = c.benchmark_group("lazy_upgrade");
    group.bench_function("plain_bson_v2", |b| {
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

fn redis_keys(c: &mut Criterion) {
    let window = RateWindow { ip: "203.0.113.7".parse().unwrap(), minute: 202_608_051_211 };
    let v6 = RateWindow { ip: "2001:db8::1".parse().unwrap(), minute: 202_608_051_211 };
    let session = UserSession { id: "u_9f3e-ab".into() };
    let window_key = window.key();
    assert_eq!(RateWindow::parse_key(&window_key).unwrap(), window);
    let mut group = c.benchmark_group("keys");
    group.bench_function("key_session", |b| b.iter(|| black_box(&session).key()));
    group.bench_function("key_rate_window_v4", |b| b.iter(|| black_box(&window).key()));
    group.bench_function("key_rate_window_v6_escaped", |b| b.iter(|| black_box(&v6).key()));
    // Hand-written, unescaped: what the key costs without docshape.
    group.bench_function("format_rate_window_v4", |b| {
        b.iter(|| format!("rate:{}:{}", black_box(&window).ip, black_box(&window).minute))
    });
    group.bench_function("parse_rate_window_v4", |b| {
        b.iter(|| RateWindow::parse_key(black_box(&window_key)).unwrap())
    });
    group.finish();
}

criterion_group!(benches, schema_artifacts, cursor_tokens, lazy_upgrade, redis_keys);
criterion_main!(benches);
