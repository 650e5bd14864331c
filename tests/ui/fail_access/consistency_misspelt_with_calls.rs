use docshape::bson::DateTime;
use docshape::Model;
use serde::{Deserialize, Serialize};

// One misspelt consistency word, and code that uses everything the model's rows
// generate: the word is the only error.
#[derive(Serialize, Deserialize, Model)]
#[model(collection = "orders")]
#[index(keys(customer_id, placed_at = -1, _id = -1))]
#[access(name = "load_order", filter(_id), consistency = "eventualy consistent")]
#[access(name = "order_summary", filter(_id), fields(status, total_cents), consistency = "strong")]
#[access(name = "orders_of_customer", filter(customer_id), sort(placed_at = -1), paginate)]
#[access(name = "add_item", filter(_id), update(push(items), inc(total_cents)))]
struct Order {
    #[serde(rename = "_id")]
    id: String,
    customer_id: String,
    placed_at: DateTime,
    status: String,
    total_cents: i64,
    #[validate(max_items = 100)]
    items: Vec<String>,
}

fn summary_total(summary: &OrderSummaryView) -> i64 {
    summary.total_cents
}

fn main() {
    let _ = Order::load_order("o1");
    let _ = Order::order_summary("o1");
    let _ = Order::orders_of_customer("c1").page_size(20);
    let _ = Order::add_item("o1", "sku-1", 250);
    let id: <Order as docshape::Identified>::Id = String::from("o1");
    let _ = Order::load_order(id);
    let _ = Order::COLLECTION;
    let _ = <Order as Model>::ACCESS_PATTERNS.len();
}
