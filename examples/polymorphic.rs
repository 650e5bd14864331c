//! A polymorphic collection: an event store keeping clicks, page views and purchases in
//! one collection, as the variants of one internally tagged enum.
//!
//! The validator has one branch per event type, keyed by `kind`; the purchase's
//! `order_id` is unique among purchases only (a partial index), so clicks and views,
//! which have no `order_id`, never collide on it; each row names the event type it
//! reads, returns that type's fields, and its query carries `kind`'s `$eq`. A write
//! row on one type (`refund`) writes only documents of that type, and a paginated row
//! pages one user's activity across every type. A search is a newtype variant: the
//! search service's own struct, stored beside the tag.
//!
//! Run: `cargo run --example polymorphic`

use docshape::bson::oid::ObjectId;
use docshape::bson::{doc, DateTime, Document};
use docshape::{Embedded, Model};
use docshape_examples::fresh_database;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, Model)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[model(collection = "events", strict)]
#[index(keys(user, at = -1, _id = -1))]
#[access(name = "timeline", filter(user), sort(at = -1), freq = "50 r/s")]
#[access(name = "activity", filter(user), sort(at = -1, _id = -1), paginate, freq = "10 r/s")]
#[access(name = "clicks_of", variant = Click, filter(user), sort(at = -1), freq = "5 r/s")]
#[access(name = "views_of_page", variant = PageView, filter(path), sort(at = -1), freq = "2 r/s")]
#[access(name = "purchase_of_order", variant = Purchase, filter(order_id), freq = "20 r/s")]
#[access(name = "refund", variant = Purchase, filter(order_id), update(inc(refunded_cents)), freq = "1 w/s")]
#[access(name = "searches_of", variant = Search, filter(user), sort(at = -1), freq = "1 r/s")]
pub enum Event {
    Click {
        #[serde(rename = "_id")]
        id: ObjectId,
        #[validate(max_length = 64)]
        user: String,
        at: DateTime,
        #[validate(max_length = 128)]
        target: String,
    },
    #[index(keys(path, at = -1))]
    PageView {
        #[serde(rename = "_id")]
        id: ObjectId,
        #[validate(max_length = 64)]
        user: String,
        at: DateTime,
        #[validate(max_length = 512)]
        path: String,
    },
    Purchase {
        #[serde(rename = "_id")]
        id: ObjectId,
        #[validate(max_length = 64)]
        user: String,
        at: DateTime,
        #[index(unique)]
        #[validate(max_length = 32)]
        order_id: String,
        #[validate(minimum = 0)]
        amount_cents: i64,
        refunded_cents: i64,
    },
    /// A newtype variant: the search service's own type, stored beside the tag.
    Search(Search),
}

/// A search, as the search service records it: its fields are stored in the event,
/// beside `kind: "search"`, and checked through this type at compile time.
#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]
pub struct Search {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[validate(max_length = 64)]
    pub user: String,
    pub at: DateTime,
    #[validate(max_length = 256)]
    pub query: String,
    pub results: i32,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("== the validator: one branch per event type\n{}", Event::validator_json());
    for index in Event::INDEXES {
        println!("index {}: partial filter {:?}", index.name, index.partial_filter);
    }
    // Each event type's largest stored document; the model's bound is the largest.
    use docshape::size::MaxBsonSize;
    for variant in Event::VARIANT_SIZES {
        println!("variant {:?}: at most {:?} bytes", variant.value, variant.size);
    }
    println!("an event: at most {:?} bytes", Event::MAX_BSON_SIZE);

    let db = fresh_database("docshape_events").await?;
    println!("\n== sync\n{}", docshape::sync::<Event>(&db).await?);
    let at = DateTime::now();
    let events = Event::collection(&db);
    events
        .insert_many([
            Event::Click { id: ObjectId::new(), user: "ana".into(), at, target: "buy".into() },
            Event::PageView { id: ObjectId::new(), user: "ana".into(), at, path: "/cart".into() },
            Event::Click { id: ObjectId::new(), user: "bo".into(), at, target: "home".into() },
            Event::Search(Search {
                id: ObjectId::new(),
                user: "bo".into(),
                at,
                query: "red shoes".into(),
                results: 12,
            }),
            Event::Purchase {
                id: ObjectId::new(),
                user: "ana".into(),
                at,
                order_id: "o-1".into(),
                amount_cents: 4999,
                refunded_cents: 0,
            },
        ])
        .await?;
    println!("two clicks without an order_id are no duplicates: the unique index holds purchases only");

    let again = Event::Purchase {
        id: ObjectId::new(),
        user: "bo".into(),
        at,
        order_id: "o-1".into(),
        amount_cents: 100,
        refunded_cents: 0,
    };
    if events.insert_one(again).await.is_ok() {
        return Err("a second purchase of order o-1 was admitted".into());
    }
    println!("a second purchase of order o-1 is refused");
    let mixed = doc! { "_id": ObjectId::new(), "kind": "click", "user": "x", "at": at, "target": "t", "amount_cents": 1 };
    if db.collection::<Document>("events").insert_one(mixed).await.is_ok() {
        return Err("a click carrying a purchase's field was admitted".into());
    }
    println!("a click carrying a purchase's field is refused by the validator");

    println!("\n== rows");
    let timeline = Event::timeline("ana").all(&db).await?;
    for event in &timeline {
        println!("timeline: {event:?}");
    }
    let clicks = Event::clicks_of("ana").all(&db).await?;
    for click in &clicks {
        println!("click of ana on {} (a ClicksOfView, the click's own fields)", click.target);
    }
    if (timeline.len(), clicks.len()) != (3, 1) {
        return Err(format!(
            "ana has 3 events and 1 click, the rows read {} and {}",
            timeline.len(),
            clicks.len()
        )
        .into());
    }
    let views = Event::views_of_page("/cart").all(&db).await?;
    if views.len() != 1 || views[0].user != "ana" {
        return Err(format!("/cart was viewed once, by ana; the row read {} views", views.len()).into());
    }
    println!("/cart viewed by {} (a ViewsOfPageView)", views[0].user);
    let purchase = Event::purchase_of_order("o-1").one(&db).await?.ok_or("the purchase of o-1 is missing")?;
    println!("order o-1: {} cents by {}", purchase.amount_cents, purchase.user);

    let searches = Event::searches_of("bo").all(&db).await?;
    match searches.as_slice() {
        // A `SearchesOfView`: it derefs to the wrapped `Search`.
        [search] if search.query == "red shoes" => {
            println!(
                "bo searched {:?}: {} results (a SearchesOfView over Search)",
                search.query, search.results
            )
        }
        other => return Err(format!("bo searched once, the row read {} searches", other.len()).into()),
    }

    println!("\n== a write row on one event type");
    // Its filter is `{order_id: {$eq: "o-1"}, kind: {$eq: "purchase"}}`: it writes purchases only.
    Event::refund("o-1", 1000_i64).run(&db).await?;
    let purchase = Event::purchase_of_order("o-1").one(&db).await?.ok_or("the purchase of o-1 is missing")?;
    if purchase.refunded_cents != 1000 {
        return Err(format!("the refund wrote {} cents, not 1000", purchase.refunded_cents).into());
    }
    println!("order o-1 refunded {} cents", purchase.refunded_cents);

    println!("\n== ana's activity, two events a page");
    let (mut pages, mut walked, mut cursor) = (0, 0, None::<String>);
    loop {
        let mut page = Event::activity("ana").page_size(2);
        if let Some(c) = &cursor {
            page = page.after(c);
        }
        let page = page.fetch(&db).await?;
        pages += 1;
        walked += page.items.len();
        println!("page {pages}: {:?}", page.items);
        match page.next {
            Some(next) if pages < 10 => cursor = Some(next),
            _ => break,
        }
    }
    if (pages, walked) != (2, 3) {
        return Err(format!("ana's 3 events took {pages} pages holding {walked}").into());
    }
    println!("\n{}", Event::access_table());
    Ok(())
}
