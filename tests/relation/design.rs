//! The design-decision table of models that hold every relation and pattern the
//! derive knows: an outlier array of raw references, a bucket, a raw
//! `#[reference(User)]`, a `Ref<T>` with no reason, and references inside embedded
//! types (a bucket's items, an outlier's items, a sub-document two levels down). Each
//! is a row, with its bound and its reason where one is declared.

use docshape::bson::{oid::ObjectId, DateTime};
use docshape::refs::Ref;
use docshape::{Embedded, Model};
use serde::{Deserialize, Serialize};

use super::User;

/// A fan, with a numeric id so that a full array of references has a known size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "fans")]
pub struct Fan {
    #[serde(rename = "_id")]
    pub id: i64,
}

/// A celebrity: a manager referenced by raw id, an agent by `Ref` with no reason, and
/// followers that stay embedded up to 100 and overflow beyond.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "celebrities")]
pub struct Celebrity {
    #[serde(rename = "_id")]
    pub id: i64,
    #[reference(User, reason = "managers are users of their own")]
    pub manager_id: String,
    pub agent: Ref<User>,
    #[reference(Fan)]
    #[outlier(threshold = 100, overflow = "celebrity_followers", flag = has_more_followers, per_doc = 500)]
    pub followers: Vec<i64>,
    pub has_more_followers: bool,
}

/// One visit of a page, by a fan (a reference inside a bucket's items).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct Visit {
    pub t: DateTime,
    pub ms: i32,
    #[reference(reason = "fans visit many pages")]
    pub fan: Ref<Fan>,
}

/// Who last edited a comment: a raw id with `#[reference]`, two embedded levels down.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct Edit {
    pub at: DateTime,
    #[reference(User, reason = "editors are users")]
    #[validate(max_length = 64)]
    pub editor_id: String,
}

/// A comment on a post: its author by `Ref`, and its last edit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct Remark {
    #[validate(max_length = 500)]
    pub text: String,
    #[reference(reason = "authors change their names")]
    pub author: Ref<Fan>,
    pub edit: Option<Edit>,
}

/// A post whose remarks stay embedded up to 20 and overflow beyond.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "fan_posts")]
pub struct FanPost {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[outlier(threshold = 20, overflow = "fan_post_remarks", flag = has_more_remarks)]
    pub remarks: Vec<Remark>,
    pub has_more_remarks: bool,
    #[embed(reason = "shown with the post")]
    pub pinned: Option<Remark>,
}

/// A page's visits, one bucket per page per day.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "page_days")]
#[bucket(series = page, period = day, per = "day", max = 500, items = visits, time = t)]
pub struct PageDay {
    #[serde(rename = "_id")]
    pub id: String,
    #[validate(max_length = 64)]
    pub page: String,
    pub day: String,
    pub count: i32,
    pub visits: Vec<Visit>,
}

/// At most 120 visits a page an hour, in documents of at most 50.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "page_hours")]
#[bucket(series = page, period = hour, per = "hour", max = 50, items = visits, time = t, cap = 120)]
pub struct PageHour {
    #[serde(rename = "_id")]
    pub id: String,
    #[validate(max_length = 64)]
    pub page: String,
    pub hour: String,
    pub count: i32,
    pub visits: Vec<Visit>,
}

/// A fan's feed, one collection of two shapes: a shout references its fan, a
/// highlight embeds a few remarks (each with its own references).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[model(collection = "fan_feed")]
pub enum FeedItem {
    Shout {
        #[serde(rename = "_id")]
        id: ObjectId,
        #[reference(reason = "fans live on their own")]
        by: Ref<Fan>,
    },
    Highlight {
        #[serde(rename = "_id")]
        id: ObjectId,
        #[embed(max = 5, reason = "a highlight shows a few remarks")]
        remarks: Vec<Remark>,
    },
}

#[test]
fn the_design_decision_table_lists_outliers_buckets_and_every_reference() {
    let artifacts = docshape::artifacts::registered().unwrap();
    let table = &artifacts.iter().find(|a| a.file_name == "DESIGN_DECISIONS.md").unwrap().contents;
    for row in [
        // A raw id with `#[reference(T)]`, and its declared reason.
        "| celebrities | manager_id | reference | users | — | — | managers are users of their own |",
        // A `Ref<T>` with no reason: the table says so, and where one is given.
        "| celebrities | agent | reference | users | — | — | no reason declared: add `reason = \"...\"` to `#[reference]` |",
        // An outlier array of raw references: the reference, then the outlier's bounds.
        "| celebrities | followers | reference | fans (array) | ≤ 100 | — | no reason declared: add `reason = \"...\"` to `#[reference]` |",
        "| celebrities | followers | outlier | i64 (array) | ≤ 100 embedded, then ≤ 500 per document of `celebrity_followers` | — | — |",
        // A bucket: its items, the series and period that name a bucket, its bound.
        // With neither aggregates nor a cap, the reason says a time-series collection
        // would be simpler.
        "| page_days | visits | bucket | Visit (array), a bucket per `page` per day | ≤ 500 per bucket | — | bucket: no aggregate and no cap here, so unless the application reads a period's items as one array or the server is older than 5.0, a time-series collection (`#[model(timeseries(...))]`) would be simpler: the server buckets, compresses and expires readings itself |",
        // A capped bucket: the period's cap beside the bound, and the cap as the reason
        // it is no time-series collection.
        "| page_hours | visits | bucket | Visit (array), a bucket per `page` per hour | ≤ 50 per bucket, ≤ 120 per hour (`cap`) | — | bucket, not a time-series collection: it caps a period at 120 items, which only a bucket document does |",
        // References inside embedded types, under the path of the field holding them:
        // a bucket's items,
        "| page_days | visits.fan | reference | fans | — | — | fans visit many pages |",
        // an outlier's items, with their own sub-document's raw reference,
        "| fan_posts | remarks | outlier | Remark (array) | ≤ 20 embedded, then ≤ 20 per document of `fan_post_remarks` | — | — |",
        "| fan_posts | remarks.author | reference | fans | — | — | authors change their names |",
        "| fan_posts | remarks.edit.editor_id | reference | users | — | — | editors are users |",
        // and an embedded sub-document.
        "| fan_posts | pinned | embed | Remark | — | — | shown with the post |",
        "| fan_posts | pinned.author | reference | fans | — | — | authors change their names |",
        "| fan_posts | pinned.edit.editor_id | reference | users | — | — | editors are users |",
        // The relations of a polymorphic model's variants, under their variant.
        "| fan_feed | by (kind: \"shout\") | reference | fans | — | — | fans live on their own |",
        "| fan_feed | remarks (kind: \"highlight\") | embed | Remark (array) | ≤ 5 | — | a highlight shows a few remarks |",
        "| fan_feed | remarks.author (kind: \"highlight\") | reference | fans | — | — | authors change their names |",
        "| fan_feed | remarks.edit.editor_id (kind: \"highlight\") | reference | users | — | — | editors are users |",
        // A copy with no reason.
        "| reviews | author_name | copy | Author::name via `author_id` | — | sync (same call as the source) | no reason declared: add `reason = \"...\"` to `#[denormalized]` |",
    ] {
        assert!(table.contains(row), "missing row {row}\nin\n{table}");
    }
    assert!(!table.contains("(no reason given)"), "{table}");
}
