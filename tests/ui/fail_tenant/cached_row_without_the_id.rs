// A tenant model's cached row reads one document by its tenant and its id.
use docshape::{KeyFamily, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "tickets", tenant = org_id)]
#[index(keys(org_id, title, _id))]
#[access(name = "ticket", filter(org_id, title, _id), cache = TicketCache)]
struct Ticket {
    #[serde(rename = "_id")]
    id: String,
    org_id: String,
    title: String,
}

#[derive(KeyFamily)]
#[key(pattern = "cache:ticket:{org}:{id}", kind = string, value = Ticket, ttl = "300s")]
struct TicketCache {
    org: String,
    id: String,
}

fn main() {}
