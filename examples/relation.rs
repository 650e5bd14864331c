//! Embed and reference: patterns-en's order and posts on a real server.
//!
//! The order embeds its line items (bounded: `#[embed(max = 50)]` becomes `maxItems`),
//! references its user with a typed `Ref<User>` and keeps the user's name as a
//! historical snapshot; posts reference their author. The design-decision table lists
//! every relation with its reason, and 2,000 posts' authors load in one query, never
//! one query per post. (The copies' refresh policies are the `denormalized` example.)
//!
//! Run: `cargo run -p docshape-examples --example relation`.

#![allow(clippy::duplicated_attributes)]

use docshape::bson::DateTime;
use docshape::refs::{self, Ref};
use docshape::relation;
use docshape::{Embedded, Model};
use docshape_examples::fresh_database;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "users")]
struct User {
    #[serde(rename = "_id")]
    id: String,
    #[validate(min_length = 1, max_length = 100)]
    name: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
struct LineItem {
    sku: String,
    qty: i32,
    unit_price_cents: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "orders")]
struct Order {
    #[serde(rename = "_id")]
    id: String,
    #[reference(reason = "user updates independently")]
    user_id: Ref<User>,
    #[denormalized(
        from = "User::name",
        via = "user_id",
        refresh = "never",
        reason = "historical snapshot is correct here"
    )]
    user_name: String,
    status: String,
    #[embed(max = 50, reason = "1:few, read and updated together")]
    items: Vec<LineItem>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[model(collection = "posts")]
#[index(keys(author_id, created_at = -1))]
#[access(name = "posts_by_user", filter(author_id), sort(created_at = -1), fields(title, User::name))]
struct Post {
    #[serde(rename = "_id")]
    id: String,
    #[reference(reason = "unbounded growth: the post references its author")]
    author_id: Ref<User>,
    #[denormalized(
        from = "User::name",
        via = "author_id",
        refresh = "async",
        max_stale = "5m",
        reason = "name may be stale ≤5 min"
    )]
    author_name: String,
    title: String,
    created_at: DateTime,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let db = fresh_database("docshape_relation").await?;
    docshape::sync_all(&db, Default::default()).await?;

    let relations: Vec<_> = docshape::registry::models()
        .iter()
        .filter(|m| !m.relations.is_empty())
        .map(|m| (m.collection, m.relations))
        .collect();
    print!("{}", relation::design_decisions(&relations));

    User::collection(&db).insert_one(User { id: "u_42".into(), name: "Alice".into() }).await?;
    let mut order = Order {
        id: "ord_81".into(),
        user_id: Ref::new("u_42".into()),
        user_name: String::new(),
        status: "shipped".into(),
        items: vec![LineItem { sku: "A-1".into(), qty: 2, unit_price_cents: 1250 }],
    };
    relation::insert_one(&db, &mut order).await?;
    println!("\norder {} written with user_name {:?} (copied at write time)", order.id, order.user_name);
    let user = order.user_id.load(&db).await?.ok_or("the order's user is gone")?;
    println!("the order's user, loaded through its reference: {} ({})", user.id, user.name);

    let mut posts: Vec<Post> = (0..2000)
        .map(|i| Post {
            id: format!("p_{i}"),
            author_id: Ref::new(format!("u_{}", 40 + i % 3)),
            author_name: String::new(),
            title: format!("post {i}"),
            created_at: DateTime::from_millis(1_785_000_000_000 + i),
        })
        .collect();
    for id in ["u_40", "u_41"] {
        User::collection(&db).insert_one(User { id: id.into(), name: format!("User {id}") }).await?;
    }
    for post in &mut posts {
        relation::snapshot(&db, post).await?;
    }
    Post::collection(&db).insert_many(&posts).await?;
    println!("2,000 posts by three authors");

    // Every post's author, as a feed page would: one query, whatever the count.
    let refs: Vec<Ref<User>> = posts.iter().map(|p| p.author_id.clone()).collect();
    let distinct = refs.iter().collect::<std::collections::HashSet<_>>().len();
    let authors = refs::load_many(&db, &refs).await?;
    println!(
        "{} references ({distinct} distinct) loaded with one find; {} missing",
        authors.items().len(),
        authors.missing().len()
    );
    if !authors.missing().is_empty() {
        return Err("a reference to an existing user was reported missing".into());
    }
    Ok(())
}
