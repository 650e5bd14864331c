//! The catalog table in the seed's format, and overlapping families reported.

use docshape::keys::{catalog_markdown, check_catalog, KeyKind, Segment, Ttl};
use docshape::KeyFamily;

use super::{OrderCounter, ProductCache, RateWindow, UserSession, SEED};

/// patterns-en, "Redis key catalog", as written there.
const SEED_TABLE: &str = "\
| Key pattern | Type | TTL | Notes |
|---|---|---|---|
| `user:{id}:session` | hash | 30d sliding | auth token data |
| `cache:product:{id}` | string(json) | 300s | invalidate on product write |
| `rate:{ip}:{minute}` | int (INCR) | 120s | rate limiting window |
| `queue:emails` | list | none | worker queue (durable store elsewhere) |
| `counter:orders:{0..15}` | int | none | sharded hot counter; SUM on read |
";

fn cells(row: &str) -> Vec<String> {
    row.trim().trim_matches('|').split(" | ").map(|c| c.trim().to_owned()).collect()
}

#[test]
fn every_seed_row_is_reproduced() {
    let table = catalog_markdown(&SEED);
    let rows: Vec<Vec<String>> = table.lines().skip(2).map(cells).collect();
    assert_eq!(rows.len(), 5, "{table}");
    for seed_row in SEED_TABLE.lines().skip(2).map(cells) {
        let row = rows
            .iter()
            .find(|r| r[0] == seed_row[0])
            .unwrap_or_else(|| panic!("no row for {}:\n{table}", seed_row[0]));
        assert_eq!(row[1..3], seed_row[1..3], "type and TTL of {}", seed_row[0]);
        // A family that never expires carries its reason after the seed's notes.
        assert!(row[3].starts_with(&seed_row[3]), "notes of {}: {}", seed_row[0], row[3]);
    }
}

#[test]
fn the_table_is_sorted_and_deterministic() {
    let expected = "\
| Key pattern | Type | TTL | Notes |
|---|---|---|---|
| `cache:product:{id}` | string(json) | 300s | invalidate on product write |
| `counter:orders:{0..15}` | int | none | sharded hot counter; SUM on read (a running total: expiring a shard would lose its counts) |
| `queue:emails` | list | none | worker queue (durable store elsewhere) |
| `rate:{ip}:{minute}` | int (INCR) | 120s | rate limiting window |
| `user:{id}:session` | hash | 30d sliding | auth token data |
";
    assert_eq!(catalog_markdown(&SEED), expected);
    let mut shuffled = SEED.to_vec();
    shuffled.reverse();
    shuffled.push(&ProductCache::SPEC);
    assert_eq!(catalog_markdown(&shuffled), expected, "order and repeats do not change it");
}

#[test]
fn the_spec_is_plain_static_data() {
    let spec: &'static docshape::keys::KeySpec = &UserSession::SPEC;
    assert_eq!(spec.name, "integration::keys::UserSession");
    assert_eq!(spec.pattern, "user:{id}:session");
    assert_eq!(
        spec.segments,
        [Segment::Literal("user"), Segment::Placeholder("id"), Segment::Literal("session")]
    );
    assert_eq!(spec.kind, KeyKind::Hash);
    assert_eq!(spec.ttl, Ttl::After { seconds: 30 * 86_400, sliding: true, spelled: "30d" });
    assert_eq!(RateWindow::SPEC.placeholders().collect::<Vec<_>>(), ["ip", "minute"]);
    assert_eq!(OrderCounter::SPEC.shards(), Some(0..=15));
    assert_eq!(
        OrderCounter::SPEC.ttl,
        Ttl::Never { reason: "a running total: expiring a shard would lose its counts" }
    );
    assert_eq!(RateWindow::SPEC.match_pattern(), "rate:*:*");
}

#[test]
fn the_seed_catalog_has_no_overlap() {
    check_catalog(&SEED).unwrap();
}

#[derive(KeyFamily)]
#[key(pattern = "user:{id}:{what}", kind = string, ttl = "60s")]
struct UserAnything {
    id: String,
    what: String,
}

#[derive(KeyFamily)]
#[key(pattern = "cache:user:{id}", kind = string, ttl = "60s")]
struct UserCache {
    id: u64,
}

#[derive(KeyFamily)]
#[key(pattern = "user:@me:session", kind = hash, ttl = "60s")]
struct MySession;

#[derive(KeyFamily)]
#[key(pattern = "user:admin:session", kind = hash, ttl = "60s")]
struct AdminSession;

#[derive(KeyFamily)]
#[key(pattern = "counter:orders:{16..31}", kind = sharded_counter, ttl = "none", reason = "r")]
struct MoreOrderShards;

#[derive(KeyFamily)]
#[key(pattern = "counter:orders:15", kind = counter, ttl = "none", reason = "r")]
struct Shard15;

#[derive(KeyFamily)]
#[key(pattern = "counter:orders:015", kind = counter, ttl = "none", reason = "r")]
struct Shard015;

#[derive(KeyFamily)]
#[key(pattern = "counter:{name}:{0..3}", kind = sharded_counter, ttl = "none", reason = "r")]
struct AnyCounter {
    name: String,
}

#[test]
fn overlapping_patterns_are_reported_with_a_key_both_would_claim() {
    let overlaps =
        check_catalog(&[&UserSession::SPEC, &UserAnything::SPEC, &ProductCache::SPEC]).unwrap_err();
    assert_eq!(overlaps.len(), 1);
    assert_eq!(overlaps[0].example, "user:x:session");
    assert!(UserSession::SPEC.matches(&overlaps[0].example));
    assert!(UserAnything::SPEC.matches(&overlaps[0].example));
    let message = overlaps[0].to_string();
    assert!(
        message.contains("`user:{id}:session` (integration::keys::UserSession) and `user:{id}:{what}`"),
        "{message}"
    );

    // A value can be `admin`, so `{id}` can name the admin's literal key...
    let overlaps = check_catalog(&[&UserSession::SPEC, &AdminSession::SPEC]).unwrap_err();
    assert_eq!(overlaps[0].example, "user:admin:session");
    assert_eq!(UserSession::parse_key("user:admin:session").unwrap(), UserSession { id: "admin".into() });
    // ...but never `@me`, which escaping writes `%40me`.
    check_catalog(&[&UserSession::SPEC, &MySession::SPEC]).unwrap();

    check_catalog(&[&ProductCache::SPEC, &UserCache::SPEC]).unwrap();
    check_catalog(&[&OrderCounter::SPEC, &MoreOrderShards::SPEC]).unwrap();
    check_catalog(&[&OrderCounter::SPEC, &Shard015::SPEC]).unwrap();
    let overlaps = check_catalog(&[&OrderCounter::SPEC, &Shard15::SPEC]).unwrap_err();
    assert_eq!(overlaps[0].example, "counter:orders:15");
    let overlaps =
        check_catalog(&[&OrderCounter::SPEC, &AnyCounter::SPEC, &MoreOrderShards::SPEC]).unwrap_err();
    let examples: Vec<&str> = overlaps.iter().map(|o| o.example.as_str()).collect();
    // Shards 0 to 3 of any counter include the orders' first ones; 16 to 31 do not.
    assert_eq!(examples, ["counter:orders:0"]);
}
