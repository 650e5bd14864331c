//! The patterns the source writes as attributes when the evidence is clear: a
//! polymorphic model (an enum tagged by the discriminator, one variant per value) and
//! a tenant (`#[model(tenant = ...)]`, when every index leads with one field). Each
//! decision is a function of the collection's statistics alone, so that `models.rs`
//! and `INFERRED.md` say the same.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::source::{pascal, rust_ident, storable, Gen, KEYWORDS, RESERVED_TYPES};
use super::{distribution, escaped, CollectionShape, Discriminator, MIN_TENANT_INDEXES};

/// A field every index leads with.
pub(super) struct TenantFinding {
    /// The field's stored name (a plain identifier).
    pub(super) field: String,
    /// How many indexes lead with it (TTL ones aside).
    pub(super) indexes: usize,
    /// Why it is not declared the tenant, if it is not.
    pub(super) refused: Option<String>,
}

/// The field that every index besides `_id_` leads with, when at least
/// [`MIN_TENANT_INDEXES`] do and none leads with another. TTL indexes are left out:
/// MongoDB gives them one key, and docshape's tenant rule exempts them (they serve no
/// row). The field is declared the tenant only if docshape can: a top-level field
/// whose name is a Rust identifier, in every sampled document, never null, of one
/// scalar type (a tenant is required), and not on a polymorphic model.
pub(super) fn tenant(c: &CollectionShape, polymorphic: bool) -> Option<TenantFinding> {
    let mut leads = BTreeSet::new();
    let mut indexes = 0;
    for index in &c.indexes {
        if index.contains_key("expireAfterSeconds") {
            continue;
        }
        let first = index.get_document("key").ok().and_then(|k| k.keys().next().cloned())?;
        leads.insert(first);
        indexes += 1;
    }
    if indexes < MIN_TENANT_INDEXES || leads.len() != 1 {
        return None;
    }
    let field = leads.into_iter().next()?;
    let refused = (|| {
        if field == "_id" {
            return Some("it is `_id`: each document would be a tenant of its own".to_owned());
        }
        if !storable(&field) || field.contains('.') || rust_ident(&field) != field {
            return Some(
                "it is not a top-level field named as a Rust identifier, which `tenant = ...` names"
                    .to_owned(),
            );
        }
        if polymorphic {
            return Some(
                "the collection is written as a polymorphic model, whose rows and indexes are per document type; declare the tenant by hand"
                    .to_owned(),
            );
        }
        let Some(node) = c.root.field(&field) else {
            return Some("no sampled document holds it".to_owned());
        };
        if node.seen < c.sampled || node.kinds.contains_key("null") {
            let held = node.seen - node.kinds.get("null").copied().unwrap_or(0);
            return Some(format!(
                "only {held} of {} sampled documents hold a value: a tenant is required (a document without one belongs to nobody); fill it first",
                c.sampled
            ));
        }
        let kinds = node.non_null();
        let scalar =
            kinds.len() == 1 && ["string", "objectId", "int", "long"].iter().any(|k| kinds.contains_key(k));
        if !scalar {
            return Some(format!(
                "it holds {}: a tenant is one type of id or name",
                distribution(&node.kinds)
            ));
        }
        None
    })();
    Some(TenantFinding { field, indexes, refused })
}

/// The discriminator, when the collection is written as a polymorphic model (`Ok`),
/// or why it is not (`Err`); `None` without a discriminator. Written when every
/// document of a second sample holds one of the first sample's values, every
/// variant stores `_id` as one type, every index names only the tag and fields every
/// variant stores (an index on one type's field would be partial to it in docshape,
/// unlike the server's), and the collection has no validator of its own (the struct
/// keeps it keyword by keyword; a polymorphic validator is one branch per type).
pub(super) fn polymorphic(c: &CollectionShape) -> Option<Result<Discriminator, String>> {
    let d = c.discriminator()?;
    Some(writable(c, &d).map(|()| d))
}

fn writable(c: &CollectionShape, d: &Discriminator) -> Result<(), String> {
    if !storable(&d.field) {
        return Err("the tag's name is not one MongoDB can query".to_owned());
    }
    if c.validator.is_some() {
        return Err(
            "the collection has a validator of its own, which the struct keeps keyword by keyword".to_owned()
        );
    }
    if c.variants.len() != d.variants.len() || c.untagged > 0 {
        return Err(format!(
            "a second sample held {} document(s) whose `{}` is none of these values",
            c.untagged, d.field
        ));
    }
    if let Some(v) = c.variants.iter().find(|v| v.sampled == 0) {
        return Err(format!("a second sample held no document of `{}`", v.value));
    }
    let ids: BTreeSet<Vec<&str>> = c
        .variants
        .iter()
        .map(|v| v.root.field("_id").map(|n| n.non_null().into_keys().collect()).unwrap_or_default())
        .collect();
    let id_complete = c.variants.iter().all(|v| v.root.field("_id").is_some_and(|n| n.seen == v.sampled));
    if ids.len() != 1 || !id_complete {
        return Err("`_id` is stored as different types in different document types".to_owned());
    }
    let common = common_fields(c, d);
    for index in &c.indexes {
        let Ok(key) = index.get_document("key") else { continue };
        for path in key.keys() {
            let top = path.split('.').next().unwrap_or(path);
            if !common.contains(top) {
                return Err(format!(
                    "the index {} names `{}`, which only some document types store; docshape would make it partial to them, unlike the server's",
                    escaped(index.get_str("name").unwrap_or("")),
                    path
                ));
            }
        }
    }
    Ok(())
}

/// The top-level fields every variant stores, the tag and `_id` among them: the ones
/// a row or an index on the whole enum may name.
pub(super) fn common_fields(c: &CollectionShape, d: &Discriminator) -> BTreeSet<String> {
    let mut common: Option<BTreeSet<String>> = None;
    for v in &c.variants {
        let names: BTreeSet<String> = v.root.fields.iter().map(|(f, _)| f.clone()).collect();
        common = Some(match common {
            Some(c) => c.intersection(&names).cloned().collect(),
            None => names,
        });
    }
    let mut common = common.unwrap_or_default();
    common.insert(d.field.clone());
    common.insert("_id".to_owned());
    common
}

impl Gen {
    /// The enum `name` of a polymorphic model: one struct variant per tag value,
    /// renamed to it, with the fields its documents hold (the tag left to serde).
    pub(super) fn variants(&mut self, c: &CollectionShape, name: &str, d: &Discriminator) -> String {
        let mut body = format!("pub enum {name} {{\n");
        let mut taken = BTreeSet::new();
        let total: u64 = c.variants.iter().map(|v| v.sampled).sum();
        self.skip = Some(d.field.clone());
        for v in &c.variants {
            let base = match pascal(&v.value) {
                p if p.is_empty() => "Variant".to_owned(),
                p if RESERVED_TYPES.contains(&p.as_str()) || KEYWORDS.contains(&p.as_str()) => {
                    format!("{p}Kind")
                }
                p => p,
            };
            let mut variant = base.clone();
            let mut n = 2;
            while !taken.insert(variant.clone()) {
                variant = format!("{base}{n}");
                n += 1;
            }
            let _ = writeln!(
                body,
                "    // {} = {}: {} of {} documents of the second sample",
                escaped(&d.field),
                escaped(&v.value),
                v.sampled,
                total
            );
            let _ = writeln!(body, "    #[serde(rename = {})]", escaped(&v.value));
            let _ = writeln!(body, "    {variant} {{");
            let (lines, _) = self.field_lines(&format!("{name}{variant}"), &v.root, v.sampled, Some(None));
            for line in lines.lines() {
                let _ = match line.strip_prefix("    pub ") {
                    Some(rest) => writeln!(body, "        {rest}"),
                    None => writeln!(body, "    {line}"),
                };
            }
            let _ = writeln!(body, "    }},");
        }
        self.skip = None;
        body.push_str("}\n");
        body
    }
}

/// An array already stored in docshape's outlier shape, declared `#[outlier(...)]`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct OutlierFinding {
    /// The array field (top level).
    pub(super) array: String,
    /// The longest array stored: the most kept embedded.
    pub(super) threshold: usize,
    /// The longest overflow document's items, when longer than the threshold.
    pub(super) per_doc: Option<usize>,
    /// The overflow collection.
    pub(super) overflow: String,
    /// The `bool` field set once the document overflowed.
    pub(super) flag: String,
    /// The integer field counting every item, embedded and overflowed, if there is one.
    pub(super) count: Option<String>,
    /// How many documents have overflowed (their flag is `true`).
    pub(super) overflowed: u64,
}

/// The element kinds an outlier's items may have here: those whose size is known, so
/// the derive can bound the embedded array and each overflow document (`outlier_size`)
/// without a `max_length` the data cannot prove.
const SIZED_ITEMS: &[&str] = &["objectId", "int", "long", "double", "date", "bool"];

/// The arrays of `c` stored in docshape's outlier shape: another collection read with
/// it holds overflow documents (`{_id: {parent, seq}, parent, count, items}`, their
/// `parent`s of the kind of `c`'s `_id`, and not found to be another collection's
/// ids), `c` has a `bool` field in every document,
/// `true` in some, beside the array, and the array's elements and the overflow's
/// items are one scalar kind of known size. The threshold is the longest array
/// stored, so the validator's `maxItems` refuses none of them. One finding per
/// overflow collection; an array two overflow collections could belong to, or one
/// with two candidate flags, is left alone.
pub(super) fn outliers(c: &CollectionShape, all: &[CollectionShape]) -> Vec<OutlierFinding> {
    let mut out = Vec::new();
    if c.root.field("_id").is_none() {
        return out;
    }
    let plain = |n: &str| storable(n) && rust_ident(n) == n;
    for o in all.iter().filter(|o| o.name != c.name) {
        // Its `parent`s are of the kind of this collection's `_id` (found among them by
        // sampling when three or more parents overflowed: the link).
        let kinds = |n: Option<&super::Node>| n.map(|n| n.non_null().into_keys().collect::<Vec<_>>());
        let same_kind = kinds(o.root.field("parent")) == kinds(c.root.field("_id"));
        let linked_elsewhere = o.links.iter().any(|l| l.field == "parent" && l.target != c.name);
        if !overflow_shaped(o) || !same_kind || linked_elsewhere {
            continue;
        }
        let Some(items) = o.root.field("items").and_then(|n| n.items.as_deref()) else { continue };
        let kind = one_kind(items);
        let mut found = Vec::new();
        for (array, node) in &c.root.fields {
            let arrays_only = node.non_null().keys().eq(["array"].iter()) && node.seen == c.sampled;
            let Some(elements) = node.items.as_deref() else { continue };
            if !arrays_only || !plain(array) || one_kind(elements).is_none() || one_kind(elements) != kind {
                continue;
            }
            let flags: Vec<(&String, u64)> = c
                .anomalies
                .flags
                .iter()
                .filter(|((f, a), p)| a == array && p.both == c.sampled && p.set > 0 && plain(f))
                .filter(|((f, _), _)| {
                    c.root.field(f).is_some_and(|n| n.seen == c.sampled && n.kinds.keys().eq(["bool"].iter()))
                })
                .map(|((f, _), p)| (f, p.set))
                .collect();
            let [(flag, set)] = flags[..] else { continue };
            // The count: an integer in every document, equal to the array's length in
            // every document that has not overflowed.
            let count = c
                .anomalies
                .pairs
                .iter()
                .filter(|((n, a), p)| a == array && p.both == c.sampled && p.mismatched <= set && plain(n))
                .find(|((n, _), _)| {
                    c.root.field(n).is_some_and(|n| {
                        n.non_null().keys().all(|k| *k == "int" || *k == "long")
                            && !n.kinds.contains_key("null")
                    })
                })
                .map(|((n, _), _)| n.clone());
            let threshold = node.max_len.max(1);
            let per_doc = o.root.field("items").map_or(0, |n| n.max_len);
            found.push(OutlierFinding {
                array: array.clone(),
                threshold,
                per_doc: (per_doc > threshold).then_some(per_doc),
                overflow: o.name.clone(),
                flag: flag.clone(),
                count,
                overflowed: set,
            });
        }
        if let [one] = &found[..] {
            out.push(one.clone());
        }
    }
    out
}

/// The one kind of a node's values, if it is one of [`SIZED_ITEMS`] and never null.
fn one_kind(node: &super::Node) -> Option<&'static str> {
    let kinds = node.non_null();
    let kind = *kinds.keys().next()?;
    (kinds.len() == 1 && !node.kinds.contains_key("null") && SIZED_ITEMS.contains(&kind)).then_some(kind)
}

/// Whether every document of `o` is an overflow document: `_id: {parent, seq}`, a
/// `parent`, an integer `count` and an `items` array.
fn overflow_shaped(o: &CollectionShape) -> bool {
    let every = |name: &str, kinds: &[&str]| {
        o.root.field(name).is_some_and(|n| n.seen == o.sampled && n.kinds.keys().all(|k| kinds.contains(k)))
    };
    let id = o.root.field("_id");
    o.sampled > 0
        && every("_id", &["object"])
        && id.is_some_and(|n| n.field("parent").is_some() && n.field("seq").is_some())
        && every("parent", &["objectId", "int", "long", "string"])
        && every("count", &["int", "long"])
        && every("items", &["array"])
}

/// The collection `c` is the overflow of, and that array: `(owner, array)`.
pub(super) fn overflow_owner(c: &CollectionShape, all: &[CollectionShape]) -> Option<(String, String)> {
    all.iter().find_map(|owner| {
        outliers(owner, all).into_iter().find(|f| f.overflow == c.name).map(|f| (owner.name.clone(), f.array))
    })
}

/// A collection of bucket documents in docshape's shape, declared `#[bucket(...)]`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct BucketFinding {
    /// The series field (top level, and in the compound `_id`).
    pub(super) series: String,
    /// The series' Rust type.
    pub(super) series_ty: &'static str,
    /// A string series' `max_length`: the longest stored, at least 64.
    pub(super) series_max: Option<usize>,
    /// The period's start (a date, top level and in the `_id`).
    pub(super) period: String,
    /// `"minute"`, `"hour"` or `"day"`.
    pub(super) per: &'static str,
    /// The longest items array stored: the most one bucket holds.
    pub(super) max: usize,
    /// The items array.
    pub(super) items: String,
    /// The items' date field.
    pub(super) time: String,
    /// The count field and its Rust type.
    pub(super) count: String,
    pub(super) count_ty: &'static str,
    /// The `_id`'s `seq` type (`i32` when no stored id holds one).
    pub(super) seq_ty: &'static str,
}

/// Periods docshape's bucket knows, shortest first, in milliseconds.
const PERIODS: &[(&str, i64)] = &[("minute", 60_000), ("hour", 3_600_000), ("day", 86_400_000)];

/// The collection's bucket, when a count field agrees with an array's length (`None`
/// otherwise), declared (`Ok`) when every document is a bucket of docshape's compound
/// shape: `_id: {series, period}` (and `seq`), the same series and period at the top
/// level, the period a date on the minute, hour or day with every item's time inside
/// it, the count equal to the items' length in every document, items of sized scalar
/// fields (the derive bounds a full bucket), a string series bounded by the longest
/// stored (so the collection must be read whole), and no other field (a new bucket
/// holds only what an append writes). `Err` says what is missing.
pub(super) fn bucket(c: &CollectionShape) -> Option<Result<BucketFinding, String>> {
    let (count, items, pair) = c.anomalies.buckets().into_iter().next()?;
    Some(bucket_shape(c, count, items, pair))
}

fn bucket_shape(
    c: &CollectionShape,
    count: &str,
    items: &str,
    pair: &super::CountPair,
) -> Result<BucketFinding, String> {
    let plain = |n: &str| storable(n) && rust_ident(n) == n;
    if pair.mismatched > 0 || pair.both != c.sampled {
        return Err(format!(
            "`{count}` differs from the length of `{items}` in some documents: recount them first"
        ));
    }
    let id = c.root.field("_id").filter(|n| n.is_struct() && n.seen == c.sampled);
    let Some(id) = id else {
        return Err("its `_id` is not docshape's compound bucket id, `{series, period}`".to_owned());
    };
    let seq = id.field("seq");
    let keys: Vec<&String> = id.fields.iter().map(|(f, _)| f).filter(|f| *f != "seq").collect();
    let every = |n: &super::Node, of: u64| n.seen == of && !n.kinds.contains_key("null");
    let [a, b] = keys[..] else {
        return Err("its `_id` is not docshape's compound bucket id, `{series, period}`".to_owned());
    };
    let date =
        |f: &str| c.root.field(f).is_some_and(|n| every(n, c.sampled) && n.kinds.keys().eq(["date"].iter()));
    let (series, period) = if date(b) { (a.clone(), b.clone()) } else { (b.clone(), a.clone()) };
    let names: BTreeSet<&str> = c.root.fields.iter().map(|(f, _)| f.as_str()).collect();
    let expected: BTreeSet<&str> = ["_id", series.as_str(), period.as_str(), count, items].into();
    if names != expected {
        return Err(format!(
            "its documents hold fields besides `_id`, `{series}`, `{period}`, `{count}` and `{items}`, which a new bucket would lack"
        ));
    }
    if ![&series, &period, count, items].iter().all(|f| plain(f)) || !date(&period) {
        return Err(
            "its series and period are not top-level fields named as Rust identifiers, the period a date"
                .to_owned(),
        );
    }
    let s = c.root.field(&series).filter(|n| every(n, c.sampled)).ok_or("a document lacks its series")?;
    let kind = one_kind_of(s, &["string", "int", "long", "objectId"])
        .ok_or("its series is not of one scalar type")?;
    let id_kind = id.field(&series).and_then(|n| one_kind_of(n, &["string", "int", "long", "objectId"]));
    let id_period = id.field(&period).is_some_and(|n| n.kinds.keys().eq(["date"].iter()));
    if id_kind != Some(kind) || !id_period {
        return Err("the `_id`'s series and period are not of the fields' types".to_owned());
    }
    let exact = c.sampled >= c.estimated_count;
    if kind == "string" && !exact {
        return Err(
            "a string series needs a bound the whole collection shows, and only a sample was read".to_owned()
        );
    }
    let seq_ty = match seq.map(|n| n.non_null()) {
        None => "i32",
        Some(k) if k.keys().eq(["int"].iter()) => "i32",
        Some(k) if k.keys().eq(["long"].iter()) => "i64",
        Some(_) => return Err("the `_id`'s `seq` is not an integer".to_owned()),
    };
    let count_node = c.root.field(count).ok_or("no count")?;
    let count_ty = match one_kind_of(count_node, &["int", "long"]) {
        Some("int") => "i32",
        Some(_) => "i64",
        None => return Err(format!("`{count}` is not one integer type")),
    };
    let node = c.root.field(items).and_then(|n| n.items.as_deref()).filter(|n| n.is_struct());
    let Some(node) = node else { return Err(format!("`{items}` does not hold sub-documents")) };
    let held = node.kinds.get("object").copied().unwrap_or(0);
    let sized = node.fields.iter().all(|(f, n)| plain(f) && every(n, held) && one_kind(n).is_some());
    if !sized || node.kinds.len() != 1 {
        return Err(format!(
            "an item of `{items}` holds a field of no bounded size (a string, a sub-document) or not in every item: the derive must bound a full bucket"
        ));
    }
    let gcd = c.anomalies.dates.get(&period).copied().unwrap_or(1);
    let mut found = None;
    for (time, n) in &node.fields {
        if !n.kinds.keys().eq(["date"].iter()) {
            continue;
        }
        let Some((lo, hi)) = c.anomalies.spans.get(&(period.clone(), items.to_owned(), time.clone())) else {
            continue;
        };
        let per = PERIODS.iter().find(|(_, ms)| gcd % ms == 0 && *lo >= 0 && hi < ms);
        if let Some((per, _)) = per {
            found = Some((time.clone(), *per));
            break;
        }
    }
    let Some((time, per)) = found else {
        return Err(format!(
            "`{period}` is not on the minute, hour or day with every item's time within that period"
        ));
    };
    let max = c.anomalies.arrays.get(items).map_or(0, |a| a.max).max(1);
    let series_ty = match kind {
        "string" => "String",
        "int" => "i32",
        "long" => "i64",
        _ => "ObjectId",
    };
    Ok(BucketFinding {
        series_max: (kind == "string").then(|| s.max_chars.max(64)),
        series,
        series_ty,
        period,
        per,
        max,
        items: items.to_owned(),
        time,
        count: count.to_owned(),
        count_ty,
        seq_ty,
    })
}

/// The one kind of a node's values among `kinds`, never null.
fn one_kind_of(node: &super::Node, kinds: &[&'static str]) -> Option<&'static str> {
    let k = node.non_null();
    let kind = *k.keys().next()?;
    let known = kinds.iter().find(|x| **x == kind)?;
    (k.len() == 1 && !node.kinds.contains_key("null")).then_some(*known)
}

impl Gen {
    /// The struct of a bucket model and its id type, after `head` (its attributes
    /// but `#[bucket]`, which this writes).
    pub(super) fn bucket_struct(&mut self, c: &CollectionShape, name: &str, head: String, b: &BucketFinding) {
        let id_name = self.type_name(&format!("{name}Id"));
        let bound = b.series_max.map(|n| format!("    #[validate(max_length = {n})]\n")).unwrap_or_default();
        let items = c.root.field(&b.items).and_then(|n| n.items.as_deref()).cloned().unwrap_or_default();
        let item = self.field_type(&items, &format!("{name}Item"));
        self.imports.insert("DateTime");
        if b.series_ty == "ObjectId" {
            self.imports.insert("oid::ObjectId");
        }
        self.embedded = true;
        let mut id = String::new();
        let _ = writeln!(id, "/// A bucket's id: its series and its period's start, and `seq` on the period's next bucket once one is full.");
        let _ = writeln!(id, "#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]");
        let _ = writeln!(id, "pub struct {id_name} {{");
        let _ =
            write!(id, "{bound}    pub {}: {},\n    pub {}: DateTime,\n", b.series, b.series_ty, b.period);
        let _ = writeln!(
            id,
            "    #[serde(default, skip_serializing_if = \"Option::is_none\")]\n    pub seq: Option<{}>,\n}}",
            b.seq_ty
        );
        self.items.push(id);
        let mut body = head;
        let _ = writeln!(
            body,
            "#[bucket(series = {}, period = {}, per = \"{}\", max = {}, items = {}, time = {}, count = {})]",
            b.series, b.period, b.per, b.max, b.items, b.time, b.count
        );
        let _ = writeln!(body, "pub struct {name} {{");
        let _ = writeln!(body, "    #[serde(rename = \"_id\")]\n    pub id: {id_name},");
        let _ = writeln!(
            body,
            "    // the series: {}",
            distribution(&c.root.field(&b.series).map(|n| n.kinds.clone()).unwrap_or_default())
        );
        let _ = writeln!(body, "{bound}    pub {}: {},", b.series, b.series_ty);
        let _ = writeln!(body, "    // the period's start, on the {}", b.per);
        let _ = writeln!(body, "    pub {}: DateTime,", b.period);
        let _ = writeln!(body, "    // the items' count, equal to their length in every document");
        let _ = writeln!(body, "    pub {}: {},", b.count, b.count_ty);
        let _ = writeln!(
            body,
            "    // the items, at most {} a bucket (the longest stored), each with its time `{}`",
            b.max, b.time
        );
        let _ = writeln!(body, "    pub {}: Vec<{}>,", b.items, item.ty);
        body.push_str("}\n");
        self.items.push(body);
    }
}
