// Embed, reference and copy, as the seeds model them: the declarations compile, the
// bounds reach the validator, and the relations and copies are listed.
#![allow(clippy::duplicated_attributes)]

use docshape::denormalized::Refresh;
use docshape::refs::Ref;
use docshape::relation::RelationKind;
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "users")]
pub struct User {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
    pub address: Direccion,
}

// patrones-es: the address is always read with the user: embed it.
#[derive(Serialize, Deserialize, Embedded)]
pub struct Direccion {
    pub calle: String,
    pub ciudad: String,
    pub cp: String,
}

#[derive(Serialize, Deserialize, Embedded)]
pub struct LineItem {
    pub sku: String,
    pub qty: u32,
    pub unit_price_cents: i64,
}

// patterns-en: the order embeds its line items (1:few, bounded), references the user,
// and keeps the name at order time.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "orders")]
pub struct Order {
    #[serde(rename = "_id")]
    pub id: String,
    #[reference(reason = "the user is updated independently")]
    pub user_id: Ref<User>,
    #[denormalized(
        from = "User::name",
        via = "user_id",
        refresh = "never",
        reason = "historical snapshot is correct here"
    )]
    pub user_name: String,
    #[embed(max = 100, reason = "read and updated with the order")]
    pub items: Vec<LineItem>,
}

// patterns-en: posts reference their author (unbounded growth) and copy the name,
// refreshed by an async job; the feed reads the copy, not a join.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "posts")]
#[index(keys(author_id, created_at = -1))]
#[access(name = "feed", filter(author_id), sort(created_at = -1), fields(title, User::name))]
#[access(
    name = "with_city",
    filter(author_id),
    fields(title, "User::address.cp"),
    allow(lookup, reason = "an admin screen, a few reads a day")
)]
pub struct Post {
    #[serde(rename = "_id")]
    pub id: String,
    pub author_id: Ref<User>,
    #[denormalized(from = "User::name", via = "author_id", refresh = "async", max_stale = "5m")]
    pub author_name: String,
    // A copy of a field inside a sub-document, kept in step with the source.
    #[denormalized(from = "User::address.ciudad", via = "author_id", refresh = "sync")]
    pub author_city: String,
    pub title: String,
    pub created_at: docshape::bson::DateTime,
}

// A reference as a raw id, with the model named; an array of them, bounded.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "groups")]
pub struct Group {
    #[reference(User)]
    pub owner_id: String,
    // A copy may follow a raw-id reference too.
    #[denormalized(from = "User::name", via = "owner_id", refresh = "never")]
    pub owner_name: String,
    #[reference(max = 50, reason = "a group is small; members are read with it")]
    pub members: Vec<Ref<User>>,
    // A waived bound, with its reason.
    #[embed(allow(unbounded_array, reason = "capped by the application at 10 per day, purged nightly"))]
    pub log: Vec<LineItem>,
    // Arrays of scalars are not sub-documents: no bound needed.
    pub tags: Vec<String>,
}

pub(super) fn main() {
    let schema = Order::validator();
    let items = schema
        .get_document("$jsonSchema")
        .unwrap()
        .get_document("properties")
        .unwrap()
        .get_document("items")
        .unwrap();
    assert_eq!(items.get_i64("maxItems").unwrap(), 100);

    let kinds: Vec<(&str, RelationKind)> = Order::RELATIONS.iter().map(|r| (r.field, r.kind)).collect();
    assert_eq!(
        kinds,
        [
            ("user_id", RelationKind::Reference),
            ("items", RelationKind::Embed),
            ("user_name", RelationKind::Copy)
        ]
    );
    assert_eq!(Order::RELATIONS[0].target, "users");
    assert_eq!(Order::RELATIONS[1].bound, Some(100));
    assert_eq!(Order::COPIES[0].refresh, Refresh::Never);
    assert_eq!(Order::COPIES[0].source, "users");

    assert_eq!(Post::COPIES.len(), 2);
    assert_eq!(Post::COPIES[0].refresh, Refresh::Async { max_stale: std::time::Duration::from_secs(300) });
    assert_eq!(Post::COPIES[1].source_field, "address.ciudad");
    // The feed's `User::name` is served by the copy.
    assert_eq!(Post::ACCESS_PATTERNS[0].fields, ["title", "author_name"]);
    // The waived one keeps the foreign path, listed.
    assert_eq!(Post::ACCESS_PATTERNS[1].fields, ["title", "User::address.cp"]);

    let members = Group::validator();
    let props = members.get_document("$jsonSchema").unwrap().get_document("properties").unwrap();
    assert_eq!(props.get_document("members").unwrap().get_i64("maxItems").unwrap(), 50);
    assert!(props.get_document("log").unwrap().get("maxItems").is_none());
    assert_eq!(Group::RELATIONS.len(), 4);

    let copies = docshape::denormalized::dependents("users");
    assert_eq!(copies.len(), 4);
}
