//! The one way a caller's or a stored value enters a command docshape builds.
//!
//! A value is only ever a value: whatever it holds (an operator-shaped document such
//! as `{$ne: null}`, a regex, JavaScript code, an array, `$`-prefixed or dotted keys),
//! the server compares or stores it, never runs it. Each position has its form:
//!
//! | position | form |
//! |---|---|
//! | equality | `{path: {$eq: v}}` ([`Literal::eq`]) |
//! | inequality | `{path: {$not: {$eq: v}}}` ([`Literal::ne`]): `$ne` refuses a regex |
//! | range bound | `{$gte: v}` … (comparison operators compare, never run) |
//! | `$in` members | `{path: {$in: [plain…]}}`, plus `{path: {$eq: m}}` in an `$or` for every member `$in` would read as a pattern or refuse ([`in_filter`]) |
//! | pushed element | `$push: {path: {$each: [v]}}` ([`Literal::each`]): a document element is never read as `$push` modifiers |
//! | `$set`, `$inc` value | the value itself: an update operator's value is stored as is |
//! | `$pull` value | `{$eq: v}` |
//!
//! Values are written with [`literal`], not `bson::to_bson`: bson's value serializer
//! reads a map shaped as extended JSON (`{"$numberLong": "3"}`, `{"$oid": …}`) as the
//! BSON value it spells, so a `serde_json::Value` or `HashMap` parameter could become
//! another type than the one the caller wrote. [`literal`] writes maps as documents
//! and keeps BSON's own types (`ObjectId`, `DateTime`, …) what they are.

use bson::{doc, Bson, Document, RawDocumentBuf};
use serde::ser::{Serialize, SerializeStruct, Serializer};

use crate::core::bson_compat::{self, SerError};

/// A value on its way into a command, written literally: see the [module docs](self).
#[derive(Debug, Clone, PartialEq)]
pub struct Literal(Bson);

impl Literal {
    /// `value` written as BSON by [`literal`].
    pub fn of<T: Serialize + ?Sized>(value: &T) -> Result<Self, SerError> {
        literal(value).map(Self)
    }

    /// A value already in BSON (a stored value, a typed id written by [`literal`]).
    pub fn stored(value: Bson) -> Self {
        Self(value)
    }

    /// `{$eq: value}`: the condition of an equality, which compares a document or a
    /// regex instead of reading it as operators or a pattern.
    pub fn eq(self) -> Document {
        doc! { "$eq": self.0 }
    }

    /// `{$not: {$eq: value}}`: the condition of an inequality. It means what `$ne`
    /// means (a missing field, or an array without the value, differs too), and it
    /// takes any value, where the server refuses a regex under `$ne`.
    pub fn ne(self) -> Document {
        doc! { "$not": self.eq() }
    }

    /// `{$each: [value]}`: one pushed element. `$push: {f: {$each: …}}` is how the
    /// server is told that what follows is the element list, so a document element
    /// shaped as modifiers (`{$each: [], $slice: 0}`) is pushed, not obeyed.
    pub fn each(self) -> Bson {
        Bson::Document(doc! { "$each": [self.0] })
    }

    /// The value itself, for a position where the server stores it as is (`$set`,
    /// `$inc`).
    pub fn into_bson(self) -> Bson {
        self.0
    }

    /// The value, borrowed.
    pub fn as_bson(&self) -> &Bson {
        &self.0
    }

    /// An aggregation expression that is true exactly when `expression` (a field
    /// path such as `"$total"`, or a `$getField`) evaluates to this value: `$eq` with
    /// the value inside `$literal` (never read as an expression: a string starting
    /// with `$`, an operator-shaped document), and `$type` for `null`, which a missing
    /// field is not. For a check that a stored document holds a value, inside `$expr`.
    pub fn equals_expr(self, expression: impl Into<Bson>) -> Document {
        match self.0 {
            Bson::Null => doc! { "$eq": [{ "$type": expression.into() }, "null"] },
            value => doc! { "$eq": [expression.into(), { "$literal": value }] },
        }
    }

    /// An aggregation expression true exactly when `expression` evaluates to nothing
    /// (a missing field): `$type` is `"missing"`, which neither `null` nor any value
    /// has.
    pub fn missing_expr(expression: impl Into<Bson>) -> Document {
        doc! { "$eq": [{ "$type": expression.into() }, "missing"] }
    }
}

/// `{"v": value}`, for the document serializer, which writes maps literally.
struct Wrapped<'a, T: ?Sized>(&'a T);

impl<T: Serialize + ?Sized> Serialize for Wrapped<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Wrapped", 1)?;
        s.serialize_field("v", self.0)?;
        s.end()
    }
}

/// `value` as a BSON value, literally: a map is a document whatever its keys (never
/// read as extended JSON), BSON's own types stay themselves.
///
/// bson's document serializer (`to_vec`) tells BSON's own types from maps by the serde
/// calls they make, where its value serializer (`to_bson`) reads every `$`-keyed map
/// as extended JSON; so the value is written as the one field of a document and read
/// back.
pub fn literal<T: Serialize + ?Sized>(value: &T) -> Result<Bson, SerError> {
    let bytes = bson_compat::to_vec(&Wrapped(value))?;
    let raw = RawDocumentBuf::from_bytes(bytes).map_err(|e| {
        <SerError as serde::ser::Error>::custom(format!("the serializer wrote malformed BSON: {e}"))
    })?;
    let v = raw.get("v").ok().flatten().and_then(bson_compat::raw_to_bson);
    v.ok_or_else(|| <SerError as serde::ser::Error>::custom("the serializer wrote no value"))
}

/// [`literal`] for a builder whose calls chain: each value written, the first error
/// kept for the end, so that generated code builds a command in one expression (no
/// closure and no `?` per value for the compiler to check in every model's crate).
#[derive(Debug, Default, Clone)]
pub(crate) struct Chained {
    error: Option<SerError>,
}

impl Chained {
    /// `value` written literally; `None` once a value was refused (this one or an
    /// earlier one), whose error [`Chained::finish`] returns.
    pub(crate) fn write<T: Serialize + ?Sized>(&mut self, value: &T) -> Option<Bson> {
        if self.error.is_some() {
            return None;
        }
        literal(value).map_err(|e| self.error = Some(e)).ok()
    }

    /// `built`, or the first value refused.
    pub(crate) fn finish<B>(self, built: B) -> Result<B, SerError> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(built),
        }
    }
}

/// A value the literal encoder refuses (serde reports the error), for the builders'
/// tests.
#[cfg(test)]
pub(crate) struct Refused;

#[cfg(test)]
impl Serialize for Refused {
    fn serialize<S: Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        Err(serde::ser::Error::custom("refused on purpose"))
    }
}

/// Whether `$in` reads `member` as something else than a value to equal: a regex is a
/// pattern there, and the server refuses a document with a `$`-prefixed key
/// (`cannot nest $ under $in`) anywhere in a member.
fn in_reads_it(member: &Bson) -> bool {
    match member {
        Bson::RegularExpression(_) => true,
        Bson::Document(d) => d.iter().any(|(k, v)| k.starts_with('$') || in_reads_it(v)),
        Bson::Array(items) => items.iter().any(in_reads_it),
        _ => false,
    }
}

/// The filter matching documents whose `path` equals one of `members`, literally.
///
/// Plain members share one `$in`; a member `$in` would read as a pattern (a regex) or
/// refuse (an operator-shaped document) is asked by `{path: {$eq: m}}` instead, the
/// whole an `$or`. With no member, the filter matches nothing (`{$in: []}`).
pub fn in_filter(path: &str, members: impl IntoIterator<Item = Literal>) -> Document {
    let (mut plain, mut special) = (Vec::new(), Vec::new());
    for m in members {
        if in_reads_it(&m.0) {
            special.push(m);
        } else {
            plain.push(m.0);
        }
    }
    if special.is_empty() {
        return doc! { path: { "$in": plain } };
    }
    let mut branches: Vec<Bson> = Vec::with_capacity(special.len() + 1);
    if !plain.is_empty() {
        branches.push(Bson::Document(doc! { path: { "$in": plain } }));
    }
    branches.extend(special.into_iter().map(|m| Bson::Document(doc! { path: m.eq() })));
    doc! { "$or": branches }
}

/// The filter matching documents whose `path` equals none of `members`, literally: the
/// negation of [`in_filter`]. Plain members share one `$nin`; with a member `$nin`
/// would read as a pattern or refuse, the whole is `{$nor: [in_filter(...)]}`.
pub fn not_in_filter(path: &str, members: impl IntoIterator<Item = Literal>) -> Document {
    let members: Vec<Literal> = members.into_iter().collect();
    if members.iter().any(|m| in_reads_it(&m.0)) {
        return doc! { "$nor": [in_filter(path, members)] };
    }
    let plain: Vec<Bson> = members.into_iter().map(|m| m.0).collect();
    doc! { path: { "$nin": plain } }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use bson::oid::ObjectId;
    use bson::{doc, Binary, Bson, DateTime, Decimal128, JavaScriptCodeWithScope, Regex, Timestamp};

    use super::{in_filter, literal, not_in_filter, Literal};

    /// A regex value under either bson: bson 3 holds its parts as C strings, bson 2 as
    /// `String`s (where the conversion is the identity).
    #[allow(clippy::unnecessary_fallible_conversions, clippy::useless_conversion)]
    fn regex(pattern: &str, options: &str) -> Bson {
        Bson::RegularExpression(Regex {
            pattern: pattern.to_owned().try_into().unwrap(),
            options: options.to_owned().try_into().unwrap(),
        })
    }

    #[test]
    fn extended_json_maps_stay_documents() {
        let v = serde_json::json!({ "$numberLong": "3" });
        assert_eq!(literal(&v).unwrap(), Bson::Document(doc! { "$numberLong": "3" }));
        let v = serde_json::json!({ "$oid": "000000000000000000000000" });
        assert!(matches!(literal(&v).unwrap(), Bson::Document(_)));
        let m: HashMap<&str, &str> = [("$date", "2020-01-01T00:00:00Z")].into_iter().collect();
        assert!(matches!(literal(&m).unwrap(), Bson::Document(_)));
        // A `Bson::Document` of the same shape too.
        let d = Bson::Document(doc! { "$numberLong": "3" });
        assert_eq!(literal(&d).unwrap(), d);
    }

    #[test]
    fn bson_values_write_as_themselves() {
        let values = vec![
            Bson::Double(1.5),
            Bson::String("s".into()),
            Bson::Array(vec![Bson::Int32(1), Bson::Null]),
            Bson::Document(doc! { "a.b": 1, "$ne": null }),
            Bson::Boolean(true),
            Bson::Null,
            regex(".", "i"),
            Bson::JavaScriptCode("1".into()),
            Bson::JavaScriptCodeWithScope(JavaScriptCodeWithScope {
                code: "x".into(),
                scope: doc! { "x": 1 },
            }),
            Bson::Int32(-3),
            Bson::Int64(i64::MAX),
            Bson::Timestamp(Timestamp { time: 1, increment: 2 }),
            Bson::Binary(Binary { subtype: bson::spec::BinarySubtype::Generic, bytes: vec![1, 2] }),
            Bson::ObjectId(ObjectId::new()),
            Bson::DateTime(DateTime::from_millis(5)),
            Bson::Symbol("y".into()),
            Bson::Decimal128("1.5".parse::<Decimal128>().unwrap()),
            Bson::MaxKey,
            Bson::MinKey,
        ];
        for v in values {
            assert_eq!(literal(&v).unwrap(), v, "{v:?}");
        }
        assert_eq!(literal(&7_u32).unwrap(), crate::bson_compat::to_bson(&7_u32).unwrap());
        assert_eq!(literal("x").unwrap(), Bson::String("x".into()));
        assert_eq!(literal(&Some(2_i64)).unwrap(), Bson::Int64(2));
        assert_eq!(literal(&None::<i64>).unwrap(), Bson::Null);
    }

    #[test]
    fn in_members_that_in_would_read_are_asked_by_eq() {
        let re = regex(".", "");
        let members = [Bson::from("a"), re.clone(), Bson::Document(doc! { "x": { "$ne": null } })];
        let filter = in_filter("_id", members.into_iter().map(Literal::stored));
        assert_eq!(
            filter,
            doc! { "$or": [
                { "_id": { "$in": ["a"] } },
                { "_id": { "$eq": re } },
                { "_id": { "$eq": { "x": { "$ne": null } } } },
            ] }
        );
        assert_eq!(in_filter("_id", [Literal::stored(Bson::from(1))]), doc! { "_id": { "$in": [1] } });
        assert_eq!(in_filter("_id", []), doc! { "_id": { "$in": [] } });
    }

    #[test]
    fn nin_members_that_nin_would_read_are_excluded_by_eq() {
        let re = regex(".", "");
        let odd = Bson::Document(doc! { "copy": "c", "id": { "$gt": 1 } });
        let members = [Bson::from("a"), re.clone(), odd.clone()];
        assert_eq!(
            not_in_filter("_id", members.into_iter().map(Literal::stored)),
            doc! { "$nor": [{ "$or": [
                { "_id": { "$in": ["a"] } },
                { "_id": { "$eq": re } },
                { "_id": { "$eq": odd } },
            ] }] }
        );
        let plain = [Bson::from(1), Bson::Document(doc! { "copy": "c", "id": 1 })];
        assert_eq!(
            not_in_filter("_id", plain.into_iter().map(Literal::stored)),
            doc! { "_id": { "$nin": [1, { "copy": "c", "id": 1 }] } }
        );
        assert_eq!(not_in_filter("_id", []), doc! { "_id": { "$nin": [] } });
    }

    #[test]
    fn an_expression_equality_reads_its_value_as_a_value_and_tells_null_from_missing() {
        let path = || Bson::String("$total".into());
        // A string that reads as a field path, an operator-shaped document: literal.
        assert_eq!(
            Literal::stored(Bson::String("$other".into())).equals_expr(path()),
            doc! { "$eq": ["$total", { "$literal": "$other" }] }
        );
        assert_eq!(
            Literal::stored(Bson::Document(doc! { "$gt": 1 })).equals_expr(path()),
            doc! { "$eq": ["$total", { "$literal": { "$gt": 1 } }] }
        );
        // `null` is a type test: `$eq` would compare a missing field too on servers
        // that read missing as null.
        assert_eq!(
            Literal::stored(Bson::Null).equals_expr(path()),
            doc! { "$eq": [{ "$type": "$total" }, "null"] }
        );
        assert_eq!(Literal::missing_expr(path()), doc! { "$eq": [{ "$type": "$total" }, "missing"] });
    }
}
