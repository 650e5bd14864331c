//! A paginator's equality values never become query operators: whatever the
//! parameter's type (a field of type `Bson`, `Document`, `serde_json::Value`, one with
//! `serialize_with`, a nested path), an operator document or a regex passed as a value is
//! compared literally and matches nothing.

use docshape::bson;
use docshape::bson::{doc, Bson, Document};
use docshape::{Embedded, Model};
use docshape_testkit as testkit;
use serde::{Deserialize, Serialize, Serializer};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct Owner {
    pub id: String,
}

fn upper<S: Serializer>(code: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&code.to_uppercase())
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "hostile_values")]
#[index(keys("owner.id", _id))]
#[index(keys(meta, _id))]
#[index(keys(extra, _id))]
#[index(keys(json, _id))]
#[index(keys(code, _id))]
#[access(name = "by_owner", filter("owner.id"), paginate)]
#[access(name = "by_meta", filter(meta), paginate)]
#[access(name = "by_extra", filter(extra), paginate)]
#[access(name = "by_json", filter(json), paginate)]
#[access(name = "by_code", filter(code), paginate)]
pub struct Hostile {
    #[serde(rename = "_id")]
    pub id: i64,
    pub owner: Owner,
    pub meta: Bson,
    pub extra: Document,
    pub json: serde_json::Value,
    #[serde(serialize_with = "upper")]
    #[validate(bson_type = "string")]
    pub code: String,
}

fn hostile(id: i64, owner: &str) -> Hostile {
    Hostile {
        id,
        owner: Owner { id: owner.to_owned() },
        meta: Bson::String(owner.to_owned()),
        extra: doc! { "k": owner },
        json: serde_json::json!(owner),
        code: owner.to_owned(),
    }
}

/// What a request body would hold where a value was expected.
fn operators() -> Vec<Document> {
    vec![
        doc! { "$ne": null },
        doc! { "$gt": "" },
        doc! { "$regex": "." },
        doc! { "$exists": true },
        doc! { "$gte": { "$minKey": 1 } },
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_values_match_nothing_in_every_kind_of_parameter() {
    let db = testkit::database("paginate_injection").await.unwrap();
    docshape::sync::<Hostile>(&db).await.unwrap();
    let docs: Vec<Hostile> = (0..6).map(|i| hostile(i, if i < 3 { "a" } else { "b" })).collect();
    Hostile::collection(&db).insert_many(&docs).await.unwrap();

    // The honest values find the owner's three documents, through every parameter.
    let ids = |items: Vec<Hostile>| items.into_iter().map(|h| h.id).collect::<Vec<_>>();
    assert_eq!(ids(Hostile::by_owner("a").fetch(&db).await.unwrap().items), vec![0, 1, 2]);
    assert_eq!(ids(Hostile::by_meta(Bson::from("b")).fetch(&db).await.unwrap().items), vec![3, 4, 5]);
    assert_eq!(ids(Hostile::by_extra(doc! { "k": "a" }).fetch(&db).await.unwrap().items), vec![0, 1, 2]);
    assert_eq!(ids(Hostile::by_json(serde_json::json!("a")).fetch(&db).await.unwrap().items), vec![0, 1, 2]);
    assert_eq!(ids(Hostile::by_code(Bson::from("A")).fetch(&db).await.unwrap().items), vec![0, 1, 2]);

    for op in operators() {
        let json: serde_json::Value = serde_json::to_value(&op).unwrap();
        let pages = [
            ("meta", Hostile::by_meta(Bson::Document(op.clone())).fetch(&db).await.unwrap()),
            ("extra", Hostile::by_extra(op.clone()).fetch(&db).await.unwrap()),
            ("json", Hostile::by_json(json).fetch(&db).await.unwrap()),
            ("code", Hostile::by_code(Bson::Document(op.clone())).fetch(&db).await.unwrap()),
            // A request body passed through `bson::to_bson`, as a handler would.
            (
                "to_bson",
                Hostile::by_meta(docshape::bson_compat::to_bson(&op).unwrap()).fetch(&db).await.unwrap(),
            ),
        ];
        for (parameter, page) in pages {
            assert!(page.items.is_empty(), "{parameter} = {op} matched {:?}", ids(page.items));
        }
        // A nested path takes the path's own type: a string, compared as one.
        let as_text = Hostile::by_owner(op.to_string()).fetch(&db).await.unwrap();
        assert!(as_text.items.is_empty(), "owner.id = {op:?} as text matched");
    }
    // A regex value is a value, not a pattern.
    // `try_into`: bson 3 holds the pattern as a C string, bson 2 as a `String`.
    #[allow(clippy::unnecessary_fallible_conversions)]
    let regex = Bson::RegularExpression(bson::Regex {
        pattern: ".".try_into().unwrap(),
        options: "".try_into().unwrap(),
    });
    assert!(Hostile::by_meta(regex.clone()).fetch(&db).await.unwrap().items.is_empty());
    assert!(Hostile::by_code(regex).fetch(&db).await.unwrap().items.is_empty());

    // Every equality in the command is an `$eq`.
    let find = Hostile::by_meta(Bson::Document(doc! { "$ne": null })).find_command(db.name()).unwrap();
    let filter = find.get_document("filter").unwrap();
    assert_eq!(filter.get_document("meta").unwrap(), &doc! { "$eq": { "$ne": null } });
    // And nothing else but the sort key's stored type, which a first page bounds it to.
    let find = Hostile::by_owner("a").find_command(db.name()).unwrap();
    assert_eq!(
        find.get_document("filter").unwrap(),
        &doc! { "owner.id": { "$eq": "a" }, "_id": { "$type": "number" } }
    );
}
