//! Property tests of the key encoding: any field values round-trip key → struct, and
//! a family's key never parses as another family's or matches another family's
//! `SCAN` pattern.

use std::net::IpAddr;

use docshape::keys::{check_catalog, escape, KeySpec};
use docshape::KeyFamily;
use proptest::prelude::*;

use super::{EmailQueue, OrderCounter, ProductCache, RateWindow, UserSession};

#[derive(Debug, Clone, PartialEq, KeyFamily)]
#[key(pattern = "user:{id}:profile", kind = hash, ttl = "1d")]
struct UserProfile {
    id: String,
}

#[derive(Debug, Clone, PartialEq, KeyFamily)]
#[key(pattern = "cache:user:{id}", kind = string, ttl = "60s")]
struct UserCache {
    id: String,
}

#[derive(Debug, Clone, PartialEq, KeyFamily)]
#[key(pattern = "queue:sms", kind = list, ttl = "none", reason = "durable store elsewhere")]
struct SmsQueue;

#[derive(Debug, Clone, PartialEq, KeyFamily)]
#[key(pattern = "counter:signups:{0..3}", kind = sharded_counter, ttl = "none", reason = "a running total")]
struct SignupCounter;

#[derive(Debug, Clone, PartialEq, KeyFamily)]
#[key(pattern = "pair:{left}:{right}", kind = set, ttl = "1h")]
struct Pair {
    left: String,
    right: String,
}

/// A family's spec, and whether a text parses as one of its keys.
type Family = (&'static KeySpec, fn(&str) -> bool);

/// Every family of the property tests.
fn families() -> Vec<Family> {
    vec![
        (&UserSession::SPEC, |k| UserSession::parse_key(k).is_ok()),
        (&ProductCache::SPEC, |k| ProductCache::parse_key(k).is_ok()),
        (&RateWindow::SPEC, |k| RateWindow::parse_key(k).is_ok()),
        (&EmailQueue::SPEC, |k| EmailQueue::parse_key(k).is_ok()),
        (&OrderCounter::SPEC, |k| OrderCounter::parse_key(k).is_ok()),
        (&UserProfile::SPEC, |k| UserProfile::parse_key(k).is_ok()),
        (&UserCache::SPEC, |k| UserCache::parse_key(k).is_ok()),
        (&SmsQueue::SPEC, |k| SmsQueue::parse_key(k).is_ok()),
        (&SignupCounter::SPEC, |k| SignupCounter::parse_key(k).is_ok()),
        (&Pair::SPEC, |k| Pair::parse_key(k).is_ok()),
    ]
}

/// Redis's glob (`stringmatchlen`) for the patterns families produce: `*` and literal
/// text (their literals hold no other glob character, which the derive checks).
fn glob(pattern: &[u8], key: &[u8]) -> bool {
    match pattern.split_first() {
        None => key.is_empty(),
        Some((b'*', rest)) => (0..=key.len()).any(|i| glob(rest, &key[i..])),
        Some((c, rest)) => key.first() == Some(c) && glob(rest, &key[1..]),
    }
}

/// The key is well-formed, belongs to `own` only, and no other family's `SCAN`
/// pattern matches it.
fn belongs_only_to(key: &str, own: &KeySpec) -> Result<(), TestCaseError> {
    prop_assert!(key.bytes().all(|b| b.is_ascii_graphic()), "{key}");
    prop_assert!(!key.contains(['*', '?', '[', ']', '\\', '{', '}']), "{key}");
    prop_assert_eq!(key.matches(':').count() + 1, own.segments.len());
    for (spec, parses) in families() {
        let matched = glob(spec.match_pattern().as_bytes(), key.as_bytes());
        if spec == own {
            prop_assert!(parses(key) && matched, "{key} is not a key of its own family {}", spec.pattern);
        } else {
            prop_assert!(!parses(key), "{key} parses as {}", spec.pattern);
            prop_assert!(!matched, "{key} matches {}'s SCAN pattern", spec.pattern);
        }
    }
    Ok(())
}

/// Text with every character that matters to keys, globs and escaping, and any text.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[:*?{}\\[\\]%\\\\ a-zA-Z0-9._~@/-]{0,16}",
        any::<String>(),
        Just(String::new()),
        Just("session".to_owned()),
        Just("%3A".to_owned()),
    ]
}

#[test]
fn the_test_catalog_has_no_overlap() {
    let specs: Vec<&KeySpec> = families().into_iter().map(|(s, _)| s).collect();
    check_catalog(&specs).unwrap();
}

proptest! {
    #![proptest_config(docshape_test_seed::config("keys::props", 512))]

    #[test]
    fn string_placeholders_round_trip(id in text()) {
        let session = UserSession { id: id.clone() };
        let key = session.key();
        prop_assert_eq!(&key, &format!("user:{}:session", escape(&id)));
        prop_assert_eq!(UserSession::parse_key(&key).unwrap(), session);
        belongs_only_to(&key, &UserSession::SPEC)?;

        let cache = ProductCache { id: id.clone() };
        prop_assert_eq!(ProductCache::parse_key(&cache.key()).unwrap(), cache.clone());
        belongs_only_to(&cache.key(), &ProductCache::SPEC)?;

        let profile = UserProfile { id: id.clone() };
        prop_assert_eq!(UserProfile::parse_key(&profile.key()).unwrap(), profile.clone());
        belongs_only_to(&profile.key(), &UserProfile::SPEC)?;

        let user = UserCache { id };
        prop_assert_eq!(UserCache::parse_key(&user.key()).unwrap(), user.clone());
        belongs_only_to(&user.key(), &UserCache::SPEC)?;
    }

    #[test]
    fn two_placeholders_round_trip(left in text(), right in text()) {
        let pair = Pair { left, right };
        prop_assert_eq!(Pair::parse_key(&pair.key()).unwrap(), pair.clone());
        belongs_only_to(&pair.key(), &Pair::SPEC)?;
    }

    #[test]
    fn typed_placeholders_round_trip(ip in any::<IpAddr>(), minute in any::<u64>()) {
        let window = RateWindow { ip, minute };
        prop_assert_eq!(RateWindow::parse_key(&window.key()).unwrap(), window.clone());
        belongs_only_to(&window.key(), &RateWindow::SPEC)?;
    }

    #[test]
    fn shards_round_trip(shard in 0u32..16) {
        let key = OrderCounter.shard_key(shard).unwrap();
        prop_assert_eq!(OrderCounter::parse_shard_key(&key).unwrap(), (OrderCounter, Some(shard)));
        belongs_only_to(&key, &OrderCounter::SPEC)?;
        if shard < 4 {
            let key = SignupCounter.shard_key(shard).unwrap();
            belongs_only_to(&key, &SignupCounter::SPEC)?;
        } else {
            prop_assert!(SignupCounter.shard_key(shard).is_err());
        }
    }

    /// Parsing is the exact inverse of building: whatever text parses gives back that
    /// very text as its key, and nothing panics.
    #[test]
    fn any_text_that_parses_is_the_key_of_what_it_parses_to(
        key in prop_oneof!["(user|cache|rate|pair|counter):[:%0-9A-Fa-f.x*]{0,20}(:session|:product)?", any::<String>()]
    ) {
        if let Ok(v) = UserSession::parse_key(&key) { prop_assert_eq!(v.key(), key.clone()); }
        if let Ok(v) = ProductCache::parse_key(&key) { prop_assert_eq!(v.key(), key.clone()); }
        if let Ok(v) = RateWindow::parse_key(&key) { prop_assert_eq!(v.key(), key.clone()); }
        if let Ok(v) = Pair::parse_key(&key) { prop_assert_eq!(v.key(), key.clone()); }
        if let Ok((v, shard)) = OrderCounter::parse_shard_key(&key) {
            prop_assert_eq!(v.shard_key(shard.unwrap()).unwrap(), key.clone());
        }
    }
}

// ---- cached ids: a key per id, built from the id value itself ------------------------

#[derive(Debug, Clone, PartialEq, KeyFamily)]
#[key(pattern = "cache:by_text:{id}", kind = string, ttl = "60s")]
struct TextIdCache {
    id: String,
}

#[derive(Debug, Clone, PartialEq, KeyFamily)]
#[key(pattern = "cache:by_u64:{id}", kind = string, ttl = "60s")]
struct U64IdCache {
    id: u64,
}

#[derive(Debug, Clone, PartialEq, KeyFamily)]
#[key(pattern = "cache:by_i64:{id}", kind = string, ttl = "60s")]
struct I64IdCache {
    id: i64,
}

/// 10,000 distinct ids of one type: each has its own key (through `CachesId`, as a
/// cached row and the model's writers build it), and the key parses back to that id.
fn distinct_ids_have_distinct_keys<F, I>(ids: Vec<I>, seed: u64)
where
    F: docshape::keys::CachesId<I> + KeyFamily + PartialEq + std::fmt::Debug,
    I: Clone + Eq + std::hash::Hash + std::fmt::Debug,
{
    let mut by_key: std::collections::HashMap<String, I> = std::collections::HashMap::new();
    for id in ids {
        let family = F::for_id(id.clone());
        let key = family.key();
        if let Some(other) = by_key.insert(key.clone(), id.clone()) {
            assert_eq!(other, id, "{other:?} and {id:?} share the key {key:?} (seed {seed})");
        }
        assert_eq!(F::parse_key(&key).ok().as_ref(), Some(&family), "{key:?} (seed {seed})");
    }
}

/// The texts that collided when keys were built from another type's `Display`: as
/// `String` ids they are distinct, so their keys must be too.
const COLLIDING_TEXTS: &[&str] = &[
    "7",
    "07",
    "007",
    "+7",
    "b_alice",
    "\"b_alice\"",
    "{\"tenant\": \"t1\", \"user\": \"alice\"}",
    "t1\", \"user\": \"alice",
    "a:b",
    "a\\:b",
    "a\\\\:b",
    "{id}",
    "*",
    "",
];

#[test]
fn cached_ids_never_share_a_key() {
    use proptest::strategy::ValueTree;
    let mut runner = docshape_test_seed::runner("keys::props::cached_ids", 1);
    let seed = runner.seed();
    let strings = text();
    let mut texts: std::collections::HashSet<String> =
        COLLIDING_TEXTS.iter().map(|t| t.to_string()).collect();
    while texts.len() < 10_000 {
        texts.insert(strings.new_tree(&mut runner).unwrap().current());
    }
    distinct_ids_have_distinct_keys::<TextIdCache, String>(texts.into_iter().collect(), seed);
    let mut u: std::collections::HashSet<u64> = [0, 7, u64::MAX].into();
    let mut i: std::collections::HashSet<i64> = [0, 7, -7, i64::MIN, i64::MAX].into();
    // Every magnitude, not only the huge values a uniform draw gives.
    let rng = runner.rng();
    while u.len() < 10_000 {
        u.insert(rng.next_u64() >> (rng.next_u32() % 64));
    }
    while i.len() < 10_000 {
        i.insert((rng.next_u64() as i64) >> (rng.next_u32() % 64));
    }
    distinct_ids_have_distinct_keys::<U64IdCache, u64>(u.into_iter().collect(), seed);
    distinct_ids_have_distinct_keys::<I64IdCache, i64>(i.into_iter().collect(), seed);
}
