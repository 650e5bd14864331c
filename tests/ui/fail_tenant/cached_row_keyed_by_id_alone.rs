// A tenant model's cached row keys each document by its tenant and its id: a family
// with one placeholder (the id alone) would let two tenants' reads meet in one key.
use docshape::{KeyFamily, Model};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Model)]
#[model(collection = "tickets", tenant = org_id)]
#[index(keys(org_id, _id))]
#[access(name = "ticket", filter(org_id, _id), cache = TicketCache)]
struct Ticket {
    #[serde(rename = "_id")]
    id: String,
    org_id: String,
    title: String,
}

#[derive(KeyFamily)]
#[key(pattern = "cache:ticket:{id}", kind = string, value = Ticket, ttl = "300s")]
struct TicketCache {
    id: String,
}

fn main() {}
