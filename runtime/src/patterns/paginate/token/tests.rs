//! The token format, its codec and its refusals.

use super::*;
use base64::Engine as _;
use bson::doc;
use bson::RawArrayBuf;

pub(in crate::patterns::paginate) const P: AccessPattern = AccessPattern {
    name: "posts_by_author",
    operation: "",
    filter: &["author_id"],
    case_insensitive: false,
    sort: &[("created_at", IndexKey::Desc)],
    range: &[],
    fields: &[],
    freq: "",
    consistency: "",
    guarantee: crate::core::access::Consistency::Unspecified,
    load: crate::core::access::Load {
        rate: None,
        docs_per_call: crate::core::access::DocsPerCall::Page { page_size: super::super::DEFAULT_PAGE_SIZE },
        doc_bytes: None,
        doc_unsized: crate::core::size::Unsized::Known,
    },
    index: Some("author_id_1_created_at_-1__id_-1"),
    waivers: &[],
    paginate: true,
    kind: crate::core::access::RowKind::Read,
};
const OTHER: AccessPattern = AccessPattern { name: "other", ..P };

/// The test's generator, from the workspace's one run seed (`DOCSHAPE_TEST_SEED`
/// replays another), and that seed, which the assertions print.
fn seeded(name: &str) -> (u64, docshape_test_seed::Seeded<proptest::test_runner::TestRng>) {
    (docshape_test_seed::run_seed(), docshape_test_seed::rng(name))
}

/// One random change to `bytes`, which must not be empty: a byte replaced, removed
/// or inserted.
fn mutate(bytes: &mut Vec<u8>, next: &mut impl FnMut() -> u64) {
    let at = (next() % bytes.len() as u64) as usize;
    match next() % 3 {
        0 => bytes[at] = next() as u8,
        1 => {
            bytes.remove(at);
        }
        _ => bytes.insert(at, next() as u8),
    }
}

/// A scope in database `db` for the feed of `u_42`.
fn scope<'a>(collection: &'a str, pattern: &'a AccessPattern) -> Scope<'a> {
    in_scope("db", collection, pattern, "u_42")
}

fn in_scope<'a>(
    database: &'a str,
    collection: &'a str,
    pattern: &'a AccessPattern,
    owner: &str,
) -> Scope<'a> {
    let filter: &'static Document = Box::leak(Box::new(doc! { "author_id": { "$eq": owner } }));
    Scope { database, collection, pattern, filter }
}

pub(in crate::patterns::paginate) fn values() -> Vec<Bson> {
    vec![Bson::DateTime(bson::DateTime::from_millis(1_700_000_000_000)), Bson::String("p_1".into())]
}

#[test]
fn a_token_is_its_header_and_the_bson_document_v() {
    // The byte layout of version 2: a token issued before an upgrade still decodes
    // after it while the version stays.
    let token = encode_token(&scope("posts", &P), &values(), None);
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(&token).unwrap();
    let mut payload = Vec::new();
    doc! { "v": values() }.to_writer(&mut payload).unwrap();
    assert_eq!(bytes[..2], [VERSION, UNSIGNED]);
    assert_eq!(bytes[2..10], fingerprint(&scope("posts", &P)));
    assert_eq!(bytes[10..], payload[..]);
    // A payload with a second key, or `v` twice, is refused.
    let array = || {
        let mut a = RawArrayBuf::new();
        values().into_iter().for_each(|v| a.push(RawBson::try_from(v).unwrap()));
        a
    };
    for second in ["w", "v"] {
        let mut extra = RawDocumentBuf::new();
        bson_compat::append(&mut extra, "v", RawBson::Array(array()));
        bson_compat::append(&mut extra, second, RawBson::Array(array()));
        let mut forged = bytes[..10].to_vec();
        forged.extend_from_slice(extra.as_bytes());
        let forged = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(forged);
        assert!(decode_token(&forged, &scope("posts", &P), None).is_err(), "{second}");
    }
}

#[test]
fn the_payload_is_what_the_bson_crate_writes_for_every_scalar() {
    // Written by hand for speed; it must stay byte for byte what tokens issued
    // through the bson crate hold, for every type and for two-digit indexes.
    let scalars = vec![
        Bson::String("p_1".into()),
        Bson::String(String::new()),
        Bson::String("é\0x".into()),
        Bson::Int32(-7),
        Bson::Int64(1 << 40),
        Bson::Double(-0.5),
        Bson::DateTime(bson::DateTime::from_millis(-1)),
        Bson::ObjectId(bson::oid::ObjectId::from_bytes([7; 12])),
        Bson::Boolean(true),
        Bson::Boolean(false),
        Bson::Decimal128(bson::Decimal128::from_bytes([3; 16])),
        Bson::Timestamp(bson::Timestamp { time: 5, increment: 9 }),
        Bson::Binary(bson::Binary { subtype: bson::spec::BinarySubtype::Generic, bytes: vec![1, 2] }),
        Bson::Binary(bson::Binary { subtype: bson::spec::BinarySubtype::BinaryOld, bytes: vec![1, 2] }),
    ];
    let mut expected = RawArrayBuf::new();
    scalars.iter().for_each(|v| expected.push(RawBson::try_from(v.clone()).unwrap()));
    let mut doc = RawDocumentBuf::new();
    bson_compat::append(&mut doc, "v", RawBson::Array(expected));
    let mut written = Vec::new();
    write_payload(&mut written, &scalars);
    assert_eq!(written, doc.as_bytes());
    let mut empty = Vec::new();
    write_payload(&mut empty, &[]);
    assert_eq!(empty, bson::rawdoc! { "v": [] }.as_bytes());
}

#[test]
// bson 2 stores a regex's parts as `String`, bson 3 as `CString`: one spelling for both.
#[allow(clippy::useless_conversion)]
fn the_scope_filter_is_hashed_as_the_bson_crate_writes_it() {
    let scalars = || {
        vec![
            Bson::String("u_42".into()),
            Bson::Int64(-3),
            Bson::Double(f64::NAN),
            Bson::Null,
            Bson::Array(vec![Bson::Int32(1), bson::bson!({ "a": [true] })]),
            Bson::Decimal128(bson::Decimal128::from_bytes([1; 16])),
            Bson::RegularExpression(bson::Regex {
                pattern: "^a".to_owned().try_into().unwrap(),
                options: "i".to_owned().try_into().unwrap(),
            }),
        ]
    };
    for value in scalars() {
        for filter in [
            doc! { "author_id": { "$eq": value.clone() } },
            doc! { "a": { "$eq": { "nested": value.clone(), "n": 1 } }, "b": { "$eq": value.clone() } },
            doc! {},
        ] {
            let mut written = Vec::new();
            assert!(write_document(&mut written, &filter));
            assert_eq!(written, bson_compat::to_vec(&filter).unwrap(), "{filter}");
        }
    }
    // Where the bson crate refuses (a key with a NUL), so does the hand-written one,
    // and the digest hashes no filter bytes, as it always did.
    let mut bad = Document::new();
    bad.insert("a\0b", 1);
    let filter = doc! { "author_id": { "$eq": bad.clone() } };
    assert!(bson_compat::to_vec(&filter).is_err());
    assert!(!write_document(&mut Vec::new(), &filter));
    let empty = Document::new();
    let (with_bad, with_nothing) = (in_scope_with("db", &filter), in_scope_with("db", &empty));
    let mut nothing = Vec::new();
    write_document(&mut nothing, &empty);
    assert_ne!(nothing.len(), 0);
    assert_ne!(with_bad.digest(), with_nothing.digest(), "no filter bytes is not the empty document");
    let mut a = Vec::new();
    assert!(!write_element(&mut a, Name::Index(0), &Bson::Document(bad)));
    assert!(a.is_empty(), "a refused value appends nothing");
}

fn in_scope_with<'a>(database: &'a str, filter: &'a Document) -> Scope<'a> {
    Scope { database, collection: "posts", pattern: &P, filter }
}

#[test]
fn tokens_round_trip_and_bind_to_their_pattern() {
    let token = encode_token(&scope("posts", &P), &values(), None);
    assert_eq!(decode_token(&token, &scope("posts", &P), None).unwrap(), values());
    assert_eq!(decode_token(&token, &scope("posts", &OTHER), None), Err(CursorError::WrongPattern));
    assert_eq!(decode_token(&token, &scope("other_posts", &P), None), Err(CursorError::WrongPattern));
    let key = CursorKey::new(*b"0123456789abcdef0123456789abcdef").unwrap();
    assert_eq!(decode_token(&token, &scope("posts", &P), Some(&key)), Err(CursorError::Unsigned));
    let signed = encode_token(&scope("posts", &P), &values(), Some(&key));
    assert_eq!(decode_token(&signed, &scope("posts", &P), Some(&key)).unwrap(), values());
    assert_eq!(decode_token(&signed, &scope("posts", &P), None), Err(CursorError::UnexpectedSignature));
    let other_key = CursorKey::new(*b"fedcba9876543210fedcba9876543210").unwrap();
    assert_eq!(decode_token(&signed, &scope("posts", &P), Some(&other_key)), Err(CursorError::BadSignature));
}

#[test]
fn tokens_bind_their_database_and_equality_values() {
    let key = CursorKey::new(vec![3u8; 32]).unwrap();
    for key in [None, Some(&key)] {
        let token = encode_token(&in_scope("a", "posts", &P, "u_42"), &values(), key);
        assert_eq!(decode_token(&token, &in_scope("a", "posts", &P, "u_42"), key).unwrap(), values());
        assert_eq!(
            decode_token(&token, &in_scope("b", "posts", &P, "u_42"), key),
            Err(CursorError::WrongPattern)
        );
        assert_eq!(
            decode_token(&token, &in_scope("a", "posts", &P, "u_43"), key),
            Err(CursorError::WrongPattern)
        );
        // Length-prefixed parts: moving a byte from one name to the next is another scope.
        assert_eq!(
            decode_token(&token, &in_scope("ap", "osts", &P, "u_42"), key),
            Err(CursorError::WrongPattern)
        );
    }
}

#[test]
fn signed_tokens_reject_any_changed_byte() {
    let key = CursorKey::new(vec![7u8; 32]).unwrap();
    let signed = encode_token(&scope("posts", &P), &values(), Some(&key));
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(&signed).unwrap();
    for i in 0..bytes.len() {
        for bit in 0..8 {
            let mut changed = bytes.clone();
            changed[i] ^= 1 << bit;
            let token = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&changed);
            assert!(decode_token(&token, &scope("posts", &P), Some(&key)).is_err(), "byte {i} bit {bit}");
        }
    }
}

#[test]
fn the_base64_is_the_base64_crates_url_safe_no_pad() {
    let (seed, mut rng) = seeded("the_base64_is_the_base64_crates_url_safe_no_pad");
    use proptest::prelude::Rng;
    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let alphabet = b"AQgw-_Zz09+/=. \0\xff";
    let (mut accepted, mut refused) = (0, 0);
    for i in 0..50_000 {
        let len = rng.next_u32() as usize % 120;
        let bytes: Vec<u8> = (0..len).map(|_| rng.next_u32() as u8).collect();
        let text = base64_encode(&bytes);
        assert_eq!(text, engine.encode(&bytes), "seed {seed}");
        let mut out = [0u8; 256];
        assert_eq!(base64_decode(text.as_bytes(), &mut out), Some(len), "seed {seed}");
        assert_eq!(out[..len], bytes[..], "seed {seed}");
        // Any text: the same bytes, or refused by both.
        let text: Vec<u8> = if i % 2 == 0 {
            (0..len).map(|_| alphabet[rng.next_u32() as usize % alphabet.len()]).collect()
        } else {
            let mut text = text.into_bytes();
            if !text.is_empty() {
                let at = rng.next_u32() as usize % text.len();
                text[at] = alphabet[rng.next_u32() as usize % alphabet.len()];
            }
            text
        };
        let ours = base64_decode(&text, &mut out).map(|n| out[..n].to_vec());
        let theirs = engine.decode(&text).ok();
        assert_eq!(ours, theirs, "seed {seed}: {:?}", String::from_utf8_lossy(&text));
        if ours.is_some() {
            accepted += 1
        } else {
            refused += 1
        }
    }
    assert!(accepted > 1000 && refused > 1000, "{accepted} accepted, {refused} refused (seed {seed})");
    // Too short a buffer is refused, not a panic.
    assert_eq!(base64_decode(b"AAAA", &mut [0u8; 2]), None);
    assert_eq!(base64_decode(b"AAA", &mut [0u8; 1]), None);
}

#[test]
fn the_hand_reader_agrees_with_the_bson_crate_on_written_and_mutated_payloads() {
    // Where the hand reader answers, the bson crate's reader answers the same;
    // where it declines, the bson crate decides (see `read_written_payload`).
    let (seed, mut rng) =
        seeded("the_hand_reader_agrees_with_the_bson_crate_on_written_and_mutated_payloads");
    use proptest::prelude::Rng;
    let mut next = move || rng.next_u64();
    let pick = |next: &mut dyn FnMut() -> u64| -> Bson {
        match next() % 8 {
            0 => Bson::String(["", "p_1", "é✓", "a\0b", "{\"$gt\":1}"][(next() % 5) as usize].to_owned()),
            1 => Bson::Int32(next() as i32),
            2 => Bson::Int64(next() as i64),
            3 => Bson::Double(f64::from_bits(next())),
            4 => Bson::DateTime(bson::DateTime::from_millis(next() as i64)),
            5 => Bson::ObjectId(bson::oid::ObjectId::from_bytes([next() as u8; 12])),
            6 => Bson::Boolean(next().is_multiple_of(2)),
            _ => Bson::Timestamp(bson::Timestamp { time: next() as u32, increment: 1 }),
        }
    };
    let same = |a: &[Bson], b: &[Bson]| format!("{a:?}") == format!("{b:?}");
    let (mut answered, mut declined) = (0, 0);
    for _ in 0..20_000 {
        let values: Vec<Bson> = (0..(next() % 13)).map(|_| pick(&mut next)).collect();
        let mut payload = Vec::new();
        write_payload(&mut payload, &values);
        let general = read_payload(&payload, values.len()).unwrap();
        assert!(same(&general, &values), "seed {seed}: {values:?}");
        // Every payload of the types it reads is read by hand.
        let plain = !values.iter().any(|v| matches!(v, Bson::Timestamp(_)))
            && !values.iter().any(|v| matches!(v, Bson::String(s) if s.contains('\0')));
        assert_eq!(read_written_payload(&payload, values.len()).is_some(), plain, "seed {seed}: {values:?}");
        for _ in 0..=(next() % 3) {
            if payload.is_empty() {
                break;
            }
            mutate(&mut payload, &mut next);
        }
        match read_written_payload(&payload, values.len()) {
            Some(fast) => {
                answered += 1;
                let general = read_payload(&payload, values.len());
                assert!(matches!(&general, Ok(g) if same(g, &fast)), "seed {seed}: {fast:?} vs {general:?}");
            }
            None => declined += 1,
        }
    }
    // Both sides of the comparison were reached.
    assert!(answered > 100 && declined > 100, "{answered} answered, {declined} declined (seed {seed})");
}

#[test]
fn a_hundred_thousand_random_and_mutated_tokens_are_typed_errors() {
    let (seed, mut rng) = seeded("a_hundred_thousand_random_and_mutated_tokens_are_typed_errors");
    use proptest::prelude::Rng;
    let mut next = move || rng.next_u64();
    let key = CursorKey::new(vec![9u8; 32]).unwrap();
    let valid = [
        encode_token(&scope("posts", &P), &values(), None),
        encode_token(&scope("posts", &P), &values(), Some(&key)),
    ];
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=+/.%$ {}\"\\\0";
    let mut accepted = 0;
    for i in 0..100_000 {
        let token = if i % 2 == 0 {
            let len = (next() % 200) as usize;
            (0..len).map(|_| alphabet[(next() % alphabet.len() as u64) as usize] as char).collect::<String>()
        } else {
            // Mutate the decoded bytes of a valid token, then re-encode, so the
            // mutations reach the version, kind, fingerprint and BSON parsing.
            let base = &valid[(next() % 2) as usize];
            let mut bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(base).unwrap();
            for _ in 0..=(next() % 4) {
                mutate(&mut bytes, &mut next);
                if bytes.is_empty() {
                    bytes.push(1);
                }
            }
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&bytes)
        };
        let key = if i % 3 == 0 { Some(&key) } else { None };
        let outcome = std::panic::catch_unwind(|| decode_token(&token, &scope("posts", &P), key));
        match outcome {
            Err(_) => panic!("decoding panicked (seed {seed}) on {token:?}"),
            Ok(Ok(values)) => {
                // A mutation may leave an unsigned token well-formed (a changed
                // string byte, say): it must still hold one scalar per sort key.
                assert_eq!(values.len(), 2);
                accepted += 1;
            }
            Ok(Err(_)) => {}
        }
    }
    assert!(accepted < 10_000, "{accepted} mutated tokens accepted (seed {seed})");
}
