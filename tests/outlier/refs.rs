//! A Q&A site's questions whose comments each hold a `Ref<User>`: the reference is as
//! large as `User._id` with its `max_length`, so the outlier array of comments has a
//! size bound and compiles (on a `Ref` sized from the id's type alone, a `String` id
//! left it unbounded and this file did not compile); pushed comments spill into the
//! overflow and read back whole, and their authors load in one query.

use docshape::bson::{doc, Document};
use docshape::refs::{load_many, Ref};
use docshape::size::MaxBsonSize;
use docshape::{Embedded, Model};
use docshape_testkit as testkit;
use serde::{Deserialize, Serialize};

use super::runtime;

/// A user, keyed by a handle of at most 64 code points.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "qa_users")]
pub struct User {
    #[serde(rename = "_id")]
    #[validate(max_length = 64)]
    pub id: String,
    #[validate(max_length = 100)]
    pub name: String,
}

/// A comment: its text and its author.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct Comment {
    #[validate(max_length = 500)]
    pub text: String,
    pub author: Ref<User>,
}

/// A question whose comments stay embedded up to 3 and overflow beyond.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "qa_questions")]
pub struct Question {
    #[serde(rename = "_id")]
    pub id: i64,
    #[outlier(threshold = 3, overflow = "qa_question_comments", flag = has_more_comments)]
    pub comments: Vec<Comment>,
    pub has_more_comments: bool,
}

#[test]
fn a_reference_is_as_large_as_the_referenced_id() {
    // A string of at most 64 code points: length, up to 4 bytes each, NUL.
    assert_eq!(<Ref<User> as MaxBsonSize>::MAX_BSON_SIZE, Some(4 + 64 * 4 + 1));
    // The comment: 4 + [1 + "text\0" + (4 + 2000 + 1)] + [1 + "author\0" + 261] + 1.
    assert_eq!(Comment::MAX_BSON_SIZE, Some(4 + (1 + 5 + 2005) + (1 + 7 + 261) + 1));
    // An ObjectId or integer `_id` is fixed-size; an unbounded one says where to bound it.
    assert_eq!(<Ref<Question> as MaxBsonSize>::MAX_BSON_SIZE, Some(8));
    assert_eq!(<Ref<super::Usuario> as MaxBsonSize>::MAX_BSON_SIZE, Some(8));
}

#[test]
fn comments_with_references_spill_past_the_threshold_and_read_back_whole() {
    let rt = runtime();
    rt.block_on(async {
        let db = testkit::database("outlier_refs").await.unwrap();
        docshape::sync::<User>(&db).await.unwrap();
        docshape::sync::<Question>(&db).await.unwrap();
        docshape::outlier::sync::<Question>(&db).await.unwrap();
        let users: Vec<User> =
            ["ana", "bo", "chen"].iter().map(|h| User { id: (*h).into(), name: h.to_uppercase() }).collect();
        User::collection(&db).insert_many(&users).await.unwrap();
        let question = Question { id: 7, comments: vec![], has_more_comments: false };
        Question::collection(&db).insert_one(&question).await.unwrap();

        let comments: Vec<Comment> = (0..8)
            .map(|i| Comment { text: format!("comment {i}"), author: Ref::new(users[i % 3].id.clone()) })
            .collect();
        for c in &comments[..2] {
            Question::push_comments(&db, &7, std::slice::from_ref(c)).await.unwrap();
        }
        Question::push_comments(&db, &7, &comments[2..]).await.unwrap();

        // Stored as the users' `_id`s: the two pushed singly stay embedded, and the
        // batch of six, which does not fit whole under the threshold, overflows.
        let stored =
            db.collection::<Document>("qa_questions").find_one(doc! { "_id": 7_i64 }).await.unwrap().unwrap();
        let embedded = stored.get_array("comments").unwrap();
        assert_eq!(embedded.len(), 2);
        assert_eq!(embedded[0].as_document().unwrap().get_str("author").unwrap(), "ana");
        assert!(stored.get_bool("has_more_comments").unwrap());
        let loaded = Question::load_comments(&db, &7).await.unwrap();
        assert_eq!(loaded, comments, "every comment once, in push order");

        // The authors, in one query, in the comments' order.
        let authors: Vec<Ref<User>> = loaded.iter().map(|c| c.author.clone()).collect();
        let found = load_many(&db, &authors).await.unwrap().all().unwrap();
        let names: Vec<&str> = found.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, ["ANA", "BO", "CHEN", "ANA", "BO", "CHEN", "ANA", "BO"]);
    });
}

/// The bound a reference's size counts on is the validator's too: a comment whose
/// `author` is longer than any `User._id` can be is refused by the server, in the
/// embedded array and in the overflow documents alike, and one within it is admitted.
#[test]
fn the_validator_holds_a_reference_to_its_ids_bound() {
    let schema = <Comment as docshape::validator::Schema>::schema();
    assert_eq!(
        schema.get_document("properties").unwrap().get_document("author").unwrap().get("maxLength"),
        Some(&docshape::bson::Bson::Int64(64)),
        "{schema}"
    );
    let rt = runtime();
    rt.block_on(async {
        let db = testkit::database("outlier_refs_validated").await.unwrap();
        docshape::sync::<Question>(&db).await.unwrap();
        docshape::outlier::sync::<Question>(&db).await.unwrap();
        let questions = db.collection::<Document>("qa_questions");
        let long = "x".repeat(65);
        let refused = questions
            .insert_one(doc! { "_id": 1_i64, "comments": [{ "text": "hi", "author": &long }], "has_more_comments": false })
            .await;
        assert!(refused.is_err(), "an author longer than any User._id was admitted");
        questions
            .insert_one(doc! { "_id": 2_i64, "comments": [{ "text": "hi", "author": "x".repeat(64) }], "has_more_comments": false })
            .await
            .expect("an author within the bound");
    });
}

/// A comment whose author is a raw `String` marked `#[reference(User)]` (no
/// `max_length` of its own), and its editors, up to three.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct RawComment {
    #[validate(max_length = 500)]
    pub text: String,
    #[reference(User, reason = "authors change on their own")]
    pub author: String,
    #[reference(User, max = 3, reason = "a few editors")]
    pub editors: Vec<String>,
    #[reference(User, reason = "one reviewer at most")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviewer: Option<String>,
}

/// [`RawComment`] with `Ref<User>`s: the size the raw one must have.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]
pub struct TypedComment {
    #[validate(max_length = 500)]
    pub text: String,
    pub author: Ref<User>,
    #[reference(max = 3, reason = "a few editors")]
    pub editors: Vec<Ref<User>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviewer: Option<Ref<User>>,
}

/// The same outlier over comments that hold raw references: it compiles because each
/// reference is as large as `User._id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Model)]
#[model(collection = "qa_raw_questions")]
pub struct RawQuestion {
    #[serde(rename = "_id")]
    pub id: i64,
    #[outlier(threshold = 3, overflow = "qa_raw_question_comments", flag = has_more_comments)]
    pub comments: Vec<RawComment>,
    pub has_more_comments: bool,
}

/// A raw `#[reference(User)]` takes `User._id`'s bound, as a `Ref<User>` does: in its
/// size, and in the validator, which the server holds to it.
#[test]
fn a_raw_reference_is_sized_and_validated_as_the_referenced_id() {
    assert_eq!(<RawComment as MaxBsonSize>::MAX_BSON_SIZE, <TypedComment as MaxBsonSize>::MAX_BSON_SIZE);
    assert!(<RawComment as MaxBsonSize>::MAX_BSON_SIZE.is_some());
    let schema = <RawComment as docshape::validator::Schema>::schema();
    let properties = schema.get_document("properties").unwrap();
    assert_eq!(
        properties.get_document("author").unwrap().get("maxLength"),
        Some(&docshape::bson::Bson::Int64(64)),
        "{schema}"
    );
    let reviewer = properties.get_document("reviewer").unwrap();
    assert_eq!(reviewer.get("maxLength"), Some(&docshape::bson::Bson::Int64(64)), "{schema}");
    let editors = properties.get_document("editors").unwrap();
    assert_eq!(
        editors.get_document("items").unwrap().get("maxLength"),
        Some(&docshape::bson::Bson::Int64(64)),
        "{schema}"
    );
    let rt = runtime();
    rt.block_on(async {
        let db = testkit::database("outlier_raw_refs").await.unwrap();
        docshape::sync::<RawQuestion>(&db).await.unwrap();
        let questions = db.collection::<Document>("qa_raw_questions");
        let comment = |author: String| doc! { "text": "hi", "author": author, "editors": [] };
        let refused = questions
            .insert_one(
                doc! { "_id": 1_i64, "comments": [comment("x".repeat(65))], "has_more_comments": false },
            )
            .await;
        assert!(refused.is_err(), "an author longer than any User._id was admitted");
        questions
            .insert_one(
                doc! { "_id": 2_i64, "comments": [comment("x".repeat(64))], "has_more_comments": false },
            )
            .await
            .expect("an author within the bound");
    });
}
