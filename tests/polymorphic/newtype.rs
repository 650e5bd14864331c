//! Newtype variants: a variant that wraps a struct deriving `Embedded` stores that
//! struct's fields beside the tag, as serde writes it. The derive cannot see the
//! wrapped fields, so its paths are looked up through the type at compile time; on
//! the server it is a variant like the others: validated by `strict`, indexed partial
//! to it, read by its rows into the wrapped type.

use docshape::bson::oid::ObjectId;
use docshape::bson::{doc, Document};
use docshape::{Embedded, Model};
use docshape_testkit as testkit;
use serde::{Deserialize, Serialize};

/// Who writes comments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "poly_authors")]
pub struct Author {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
}

/// A card, stored with its owner and the number of payments it made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct Card {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub owner: String,
    #[validate(max_length = 64)]
    pub fingerprint: String,
    #[validate(pattern = "^[0-9]{4}$")]
    pub last4: String,
    pub uses: i64,
}

/// A wallet's payment methods: a card is its own struct (shared with the code that
/// talks to the card processor), a bank account a struct variant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[serde(tag = "type", rename_all = "snake_case")]
#[model(collection = "payment_methods", strict)]
#[index(keys(owner))]
#[access(name = "methods_of", filter(owner))]
#[access(name = "card_by_fingerprint", variant = Card, filter(fingerprint), view(derive(Debug)))]
#[access(name = "charge_card", variant = Card, filter(_id), update(inc(uses)))]
#[access(name = "card_pages", variant = Card, filter(owner), sort(_id = 1), paginate)]
pub enum PaymentMethod {
    #[index(keys(fingerprint), unique)]
    #[index(keys(owner, _id))]
    Card(Card),
    Bank {
        #[serde(rename = "_id")]
        id: ObjectId,
        owner: String,
        #[validate(max_length = 34)]
        iban: String,
    },
}

fn card(owner: &str, fingerprint: &str) -> Card {
    Card {
        id: ObjectId::new(),
        owner: owner.into(),
        fingerprint: fingerprint.into(),
        last4: "4242".into(),
        uses: 0,
    }
}

fn bank(owner: &str) -> PaymentMethod {
    PaymentMethod::Bank { id: ObjectId::new(), owner: owner.into(), iban: "DE89370400440532013000".into() }
}

#[test]
fn the_validator_holds_the_wrapped_fields_beside_the_tag_strictly() {
    let schema = <PaymentMethod as docshape::validator::Schema>::schema();
    let branches = schema.get_array("anyOf").unwrap();
    let card = branches[0].as_document().unwrap();
    let properties = card.get_document("properties").unwrap();
    let names: Vec<&str> = properties.keys().map(String::as_str).collect();
    assert_eq!(names, ["_id", "owner", "fingerprint", "last4", "uses", "type"], "{card}");
    assert_eq!(properties.get_document("type").unwrap().get_array("enum").unwrap()[0].as_str(), Some("card"));
    assert_eq!(card.get_bool("additionalProperties").ok(), Some(false), "strict: {card}");
    let required = card.get_array("required").unwrap();
    assert_eq!(required.len(), 6, "{card}");
}

#[test]
fn a_newtype_variant_has_its_partial_index_and_rows() {
    let fingerprint =
        PaymentMethod::INDEXES.iter().find(|i| i.name == "fingerprint_1_card").expect("partial");
    assert!(fingerprint.unique);
    assert_eq!(fingerprint.partial_filter, Some(r#"{"type":{"$eq":"card"}}"#));
    let index = |name: &str| PaymentMethod::ACCESS_PATTERNS.iter().find(|p| p.name == name).unwrap().index;
    assert_eq!(index("card_by_fingerprint"), Some("fingerprint_1_card"));
    assert_eq!(index("methods_of"), Some("owner_1"));
    assert_eq!(index("charge_card"), Some("_id_"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn newtype_variants_round_trip_validate_and_read_their_type() {
    let (db, log) = testkit::monitored("poly_newtype").await.unwrap();
    docshape::sync::<PaymentMethod>(&db).await.unwrap();
    let visa = card("u1", "fp-visa");
    let written = vec![PaymentMethod::Card(visa.clone()), bank("u1"), bank("u1")];
    PaymentMethod::collection(&db).insert_many(&written).await.unwrap();

    // Stored flat: the card's fields beside the tag.
    let raw = db.collection::<Document>("payment_methods");
    let stored = raw.find_one(doc! { "_id": visa.id }).await.unwrap().unwrap();
    assert_eq!(stored.get_str("type").ok(), Some("card"));
    assert_eq!(stored.get_str("fingerprint").ok(), Some("fp-visa"));

    // The enum's row reads every variant back equal.
    log.clear();
    let mine = PaymentMethod::methods_of("u1").all(&db).await.unwrap();
    assert_eq!(mine, written);

    // The variant's row returns the wrapped type, and carries the discriminator.
    log.clear();
    let found = PaymentMethod::card_by_fingerprint("fp-visa").one(&db).await.unwrap().expect("the card");
    assert_eq!(found.last4, "4242");
    assert_eq!(found.into_inner(), visa);
    let commands = log.take();
    assert_eq!(commands.len(), 1);
    assert_eq!(
        commands[0].1.get_document("filter").unwrap(),
        &doc! { "fingerprint": { "$eq": "fp-visa" }, "type": { "$eq": "card" } }
    );
    // A hostile value is compared literally.
    assert!(PaymentMethod::card_by_fingerprint("{\"$ne\": null}").one(&db).await.unwrap().is_none());

    // `strict` refuses a key the card does not have, a card without a wrapped field,
    // and a bank account holding a card's field.
    let refused = |document: Document| {
        let raw = raw.clone();
        async move {
            let e = raw.insert_one(document).await.expect_err("refused by the validator");
            assert!(
                e.to_string().contains("121") || e.to_string().to_lowercase().contains("validation"),
                "{e}"
            );
        }
    };
    refused(doc! { "_id": ObjectId::new(), "type": "card", "owner": "u1", "fingerprint": "f", "last4": "1234", "uses": 0_i64, "cvv": "123" }).await;
    refused(doc! { "_id": ObjectId::new(), "type": "card", "owner": "u1", "last4": "1234", "uses": 0_i64 })
        .await;
    refused(doc! { "_id": ObjectId::new(), "type": "card", "owner": "u1", "fingerprint": "f", "last4": "12345", "uses": 0_i64 }).await;
    refused(
        doc! { "_id": ObjectId::new(), "type": "bank", "owner": "u1", "iban": "DE89", "fingerprint": "f" },
    )
    .await;
}

/// The card's unique fingerprint is unique among cards: bank accounts, which have
/// none, are no duplicates of each other (mongoose #6343), and a second card with the
/// same fingerprint is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wrapped_unique_field_is_unique_among_that_variant() {
    let db = testkit::database("poly_newtype_unique").await.unwrap();
    docshape::sync::<PaymentMethod>(&db).await.unwrap();
    let methods = PaymentMethod::collection(&db);
    methods.insert_one(PaymentMethod::Card(card("u1", "fp"))).await.unwrap();
    methods.insert_one(bank("u1")).await.unwrap();
    methods.insert_one(bank("u2")).await.unwrap();
    let duplicate =
        methods.insert_one(PaymentMethod::Card(card("u2", "fp"))).await.expect_err("a duplicate card");
    assert!(duplicate.to_string().contains("E11000"), "{duplicate}");
    methods.insert_one(PaymentMethod::Card(card("u2", "fp-other"))).await.unwrap();
    let report = docshape::check::<PaymentMethod>(&db).await.unwrap();
    assert!(report.is_clean(), "{report}");
}

/// A write row on the newtype variant: its parameter typed by the wrapped field, its
/// filter carrying the discriminator, so another variant's `_id` writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_row_on_a_newtype_variant_writes_that_variant_only() {
    let db = testkit::database("poly_newtype_write").await.unwrap();
    docshape::sync::<PaymentMethod>(&db).await.unwrap();
    let visa = card("u1", "fp-visa");
    let account = bank("u1");
    let PaymentMethod::Bank { id: bank_id, .. } = &account else { unreachable!() };
    PaymentMethod::collection(&db)
        .insert_many([PaymentMethod::Card(visa.clone()), account.clone()])
        .await
        .unwrap();

    PaymentMethod::charge_card(visa.id, 2_i64).run(&db).await.unwrap();
    let raw = db.collection::<Document>("payment_methods");
    let stored = raw.find_one(doc! { "_id": visa.id }).await.unwrap().unwrap();
    assert_eq!(stored.get_i64("uses").ok(), Some(2));

    let wrong = PaymentMethod::charge_card(*bank_id, 1_i64).run(&db).await;
    assert!(matches!(wrong, Err(docshape::access::UpdateError::NotFound { .. })), "{wrong:?}");
    let untouched = raw.find_one(doc! { "_id": bank_id }).await.unwrap().unwrap();
    assert!(!untouched.contains_key("uses"), "{untouched}");
}

/// A text message waiting to be sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct Sms {
    #[serde(rename = "_id")]
    pub id: String,
    pub phone: String,
}

/// An email waiting to be sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct Mail {
    #[serde(rename = "_id")]
    pub id: String,
    pub address: String,
}

/// Every variant wraps a type: the `_id` is the wrapped types' (checked to be one type).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[serde(tag = "via", rename_all = "lowercase")]
#[model(collection = "outbox", strict)]
#[index(keys(via, _id))]
#[access(name = "outbox_entry", filter(_id))]
#[access(name = "queue_of", filter(via), sort(_id = 1))]
#[access(name = "texts_to", variant = Sms, filter(phone))]
pub enum Outbox {
    #[index(keys(phone))]
    Sms(Sms),
    Mail(Mail),
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enum_of_newtype_variants_shares_their_id() {
    // The enum's id type is the wrapped types' `_id`: a `String`, taken by its finder.
    let id: <Outbox as docshape::Identified>::Id = String::from("m1");
    let db = testkit::database("poly_newtype_only").await.unwrap();
    docshape::sync::<Outbox>(&db).await.unwrap();
    let written = [
        Outbox::Sms(Sms { id: "s1".into(), phone: "+100".into() }),
        Outbox::Mail(Mail { id: id.clone(), address: "a@example.com".into() }),
    ];
    Outbox::collection(&db).insert_many(&written).await.unwrap();
    assert_eq!(Outbox::outbox_entry(id).one(&db).await.unwrap().as_ref(), Some(&written[1]));
    // The tag is common to every variant: a row on the enum may filter on it.
    assert_eq!(Outbox::queue_of("mail").all(&db).await.unwrap(), [written[1].clone()]);
    let texts = Outbox::texts_to("+100").all(&db).await.unwrap();
    assert_eq!(
        texts.into_iter().map(|t| t.into_inner()).collect::<Vec<_>>(),
        [Sms { id: "s1".into(), phone: "+100".into() }]
    );
    // An sms with a mail's field is neither variant.
    let raw = db.collection::<Document>("outbox");
    raw.insert_one(doc! { "_id": "x", "via": "sms", "phone": "+1", "address": "a@example.com" })
        .await
        .expect_err("refused by strict");
}

/// A comment, showing its author's name: a copy inside the wrapped type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct Comment {
    #[serde(rename = "_id")]
    pub id: i64,
    pub by: docshape::refs::Ref<Author>,
    #[denormalized(from = "Author::name", via = "by", refresh = "sync")]
    pub by_name: String,
}

/// A post's entries: comments (a newtype variant holding a copy) and notes whose
/// fields only share the names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[model(collection = "poly_entries")]
pub enum Entry {
    #[index(keys(by))]
    Comment(Comment),
    Note {
        #[serde(rename = "_id")]
        id: i64,
        by: String,
        by_name: String,
    },
}

/// The copy inside a newtype variant's type is registered under that variant, filled
/// on insert and refreshed by a rename in that variant's documents only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_inside_a_wrapped_type_is_refreshed_in_its_variant_only() {
    use docshape::denormalized;
    const KEY: &str = "poly_entries.by_name (kind: \"comment\")";
    let keys: Vec<String> = denormalized::dependents("poly_authors").iter().map(|c| c.key()).collect();
    assert_eq!(keys, [KEY]);

    let db = testkit::database("poly_newtype_copies").await.unwrap();
    docshape::sync::<Author>(&db).await.unwrap();
    docshape::sync::<Entry>(&db).await.unwrap();
    Author::collection(&db).insert_one(Author { id: "ann".into(), name: "Ann".into() }).await.unwrap();
    let by = docshape::refs::Ref::<Author>::new("ann".to_owned());
    let mut comment = Entry::Comment(Comment { id: 1, by, by_name: String::new() });
    docshape::relation::insert_one(&db, &mut comment).await.unwrap();
    let mut note = Entry::Note { id: 2, by: "ann".into(), by_name: "a note".into() };
    docshape::relation::insert_one(&db, &mut note).await.unwrap();
    let names = || async {
        let raw = db.collection::<Document>("poly_entries");
        let one = |id: i64| {
            let raw = raw.clone();
            async move {
                raw.find_one(doc! { "_id": id })
                    .await
                    .unwrap()
                    .unwrap()
                    .get_str("by_name")
                    .unwrap()
                    .to_owned()
            }
        };
        (one(1).await, one(2).await)
    };
    assert_eq!(names().await, ("Ann".to_owned(), "a note".to_owned()));
    denormalized::update_one::<Author>(&db, "ann", doc! { "$set": { "name": "Ann Lee" } }).await.unwrap();
    assert_eq!(names().await, ("Ann Lee".to_owned(), "a note".to_owned()));
}

/// A paginated row on a newtype variant pages that variant's documents, as the
/// wrapped type, and never another variant's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paginated_row_on_a_newtype_variant_pages_its_type() {
    let db = testkit::database("poly_newtype_pages").await.unwrap();
    docshape::sync::<PaymentMethod>(&db).await.unwrap();
    let mut cards: Vec<Card> = (0..5).map(|i| card("u1", &format!("fp-{i}"))).collect();
    cards.sort_by_key(|c| c.id);
    let mut all: Vec<PaymentMethod> = cards.iter().cloned().map(PaymentMethod::Card).collect();
    all.extend([bank("u1"), bank("u1"), PaymentMethod::Card(card("u2", "fp-other"))]);
    PaymentMethod::collection(&db).insert_many(&all).await.unwrap();
    let (mut read, mut cursor, mut pages) = (Vec::new(), None::<String>, 0);
    loop {
        let mut page = PaymentMethod::card_pages("u1").page_size(2);
        if let Some(c) = &cursor {
            page = page.after(c);
        }
        let page = page.fetch(&db).await.unwrap();
        pages += 1;
        read.extend(page.items.into_iter().map(|v| v.into_inner()));
        match page.next {
            Some(next) if pages < 10 => cursor = Some(next),
            _ => break,
        }
    }
    assert_eq!(read, cards);
    assert_eq!(pages, 3);
}
