//! The refresh's documents and filters, checked on plain documents (no server).

use super::*;
use crate::core::denormalized::{OnDelete, Refresh};

fn spec(null: Cleared) -> CopySpec {
    CopySpec {
        collection: "posts",
        field: "author_name",
        via: "author_id",
        source: "users",
        source_field: "name",
        source_tenant: None,
        refresh: Refresh::Sync,
        reason: None,
        on_delete: OnDelete::Keep,
        null,
        arrays: &[],
        variant: None,
    }
}

#[test]
fn a_copy_stores_null_as_its_type_does() {
    let (unset, null) = (spec(Cleared::Unset), spec(Cleared::Null));
    let v = Bson::from("Ada");
    for s in [&unset, &null] {
        assert_eq!(change(s, &v, Some(&v)), (doc! { "$set": { "author_name": "Ada" } }, vec![]));
    }
    for value in [None, Some(&Bson::Null)] {
        assert_eq!(change(&unset, &v, value).0, doc! { "$unset": { "author_name": "" } });
        assert_eq!(change(&null, &v, value).0, doc! { "$set": { "author_name": null } });
    }
    assert_eq!(
        stale_filter(&unset, &v, None).get_document("author_name").unwrap(),
        &doc! { "$exists": true }
    );
    assert_eq!(
        stale_filter(&null, &v, None).get_document("author_name").unwrap(),
        &doc! { "$not": { "$type": "null" } }
    );
}

#[test]
fn a_copy_inside_arrays_is_written_by_array_filters_on_its_elements() {
    let nested = CopySpec {
        field: "topics.replies.meta.author_name",
        via: "topics.replies.meta.author_id",
        arrays: &["topics", "topics.replies"],
        ..spec(Cleared::Null)
    };
    let id = Bson::from("ann");
    let via = doc! { "$eq": "ann", "$not": { "$type": "array" } };
    let (update, filters) = change(&nested, &id, Some(&Bson::from("Ann")));
    assert_eq!(update, doc! { "$set": { "topics.$[d0].replies.$[d1].meta.author_name": "Ann" } });
    assert_eq!(
        filters,
        vec![
            doc! { "d0.replies": { "$elemMatch": { "meta.author_id": via.clone() } } },
            doc! { "d1.meta.author_id": via.clone() },
        ]
    );
    assert_eq!(
        via_filter(&nested, &id),
        doc! { "topics": { "$elemMatch": { "replies": { "$elemMatch": { "meta.author_id": via.clone() } } } } }
    );
    // One element must both reference the source and differ.
    assert_eq!(
        stale_filter(&nested, &id, Some(&Bson::from("Ann"))),
        doc! { "topics": { "$elemMatch": { "replies": { "$elemMatch": {
            "meta.author_id": via.clone(), "meta.author_name": { "$not": { "$eq": "Ann" } },
        } } } } }
    );
    let d = doc! { "topics": [
        { "replies": [
            { "meta": { "author_id": "ann", "author_name": "A" } },
            { "meta": { "author_id": "bob" } },
            "not a document",
        ] },
        { "replies": "not an array" },
    ] };
    assert_eq!(
        instances(&nested, &d),
        vec![(Some(Bson::from("ann")), Some(Bson::from("A"))), (Some(Bson::from("bob")), None)]
    );
    let mut filled = d.clone();
    fill(&nested, &mut filled, &mut |v| (v == &Bson::from("ann")).then(|| Some(Bson::from("Ann"))));
    assert_eq!(instances(&nested, &filled)[0].1, Some(Bson::from("Ann")));
    assert_eq!(instances(&nested, &filled)[1].1, None, "a source not given is left alone");

    // In sub-documents only: a dotted path, no array filter.
    let sub = CopySpec { field: "byline.name", via: "byline.user_id", arrays: &[], ..spec(Cleared::Unset) };
    assert_eq!(change(&sub, &id, None), (doc! { "$unset": { "byline.name": "" } }, vec![]));
    assert_eq!(via_filter(&sub, &id), doc! { "byline.user_id": via });
}

#[test]
fn a_copy_in_a_variant_reads_and_writes_that_variants_documents_only() {
    use crate::core::descriptor::Variant;
    let review = CopySpec { variant: Some(Variant { tag: "kind", value: "review" }), ..spec(Cleared::Null) };
    let id = Bson::from("ann");
    let filter = via_filter(&review, &id);
    assert_eq!(filter.get_document("kind").unwrap(), &doc! { "$eq": "review" });
    assert!(filter.contains_key("author_id"));
    assert!(stale_filter(&review, &id, Some(&Bson::from("Ann"))).contains_key("kind"));
    assert!(!via_filter(&spec(Cleared::Null), &id).contains_key("kind"));
    // A chore and a document without a tag share the fields, not the copy.
    for other in [
        doc! { "kind": "chore", "author_id": "ann", "author_name": "Team" },
        doc! { "author_id": "ann", "author_name": "Team" },
        doc! { "kind": 1, "author_id": "ann", "author_name": "Team" },
    ] {
        assert!(instances(&review, &other).is_empty(), "{other}");
        let mut filled = other.clone();
        fill(&review, &mut filled, &mut |_| Some(Some(Bson::from("Ann"))));
        assert_eq!(filled, other);
    }
    let mine = doc! { "kind": "review", "author_id": "ann", "author_name": "A" };
    assert_eq!(instances(&review, &mine), vec![(Some(id), Some(Bson::from("A")))]);
    assert_eq!(review.key(), "posts.author_name (kind: \"review\")");
}

#[test]
fn values_at_paths_and_projections_without_collisions() {
    let d = doc! { "name": "Ada", "profile": { "city": "London", "n": null }, "tags": ["a"] };
    assert_eq!(value_at(&d, "name"), Some(Bson::String("Ada".into())));
    assert_eq!(value_at(&d, "profile.city"), Some(Bson::String("London".into())));
    assert_eq!(value_at(&d, "profile.n"), Some(Bson::Null));
    assert_eq!(value_at(&d, "profile.zip"), None);
    assert_eq!(value_at(&d, "name.first"), None);
    assert_eq!(value_at(&d, "missing"), None);
    assert_eq!(
        projection(["profile.city", "name", "profile", "name"].into_iter()),
        doc! { "name": 1, "profile": 1 }
    );
    assert_eq!(projection(["ab", "a.b", "a"].into_iter()), doc! { "a": 1, "ab": 1 });
}
