//! A source document's contribution to its summary: per group key, the values it
//! adds. The one function every maintainer (the write hook, the worker, `reconcile`)
//! computes it with, so that they agree.

use bson::{Bson, Document};

use super::spec::{GroupPart, SummaryOp, SummarySpec};

/// What one source document adds to one group: it counts once, and per field of the
/// spec (in order) a value: the sum's number, the min/max's candidate, `Null` for
/// the count or a missing value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Contribution {
    pub key: Bson,
    pub values: Vec<Bson>,
}

/// A number as the summary adds it: integers stay integers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    pub fn of(b: &Bson) -> Option<Num> {
        match b {
            Bson::Int32(i) => Some(Num::Int(i64::from(*i))),
            Bson::Int64(i) => Some(Num::Int(*i)),
            Bson::Double(f) => Some(Num::Float(*f)),
            _ => None,
        }
    }

    pub fn add(self, other: Num) -> Num {
        match (self, other) {
            (Num::Int(a), Num::Int(b)) => Num::Int(a.wrapping_add(b)),
            (a, b) => Num::Float(a.f() + b.f()),
        }
    }

    pub fn neg(self) -> Num {
        match self {
            Num::Int(a) => Num::Int(a.wrapping_neg()),
            Num::Float(f) => Num::Float(-f),
        }
    }

    pub fn f(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }

    pub fn is_zero(self) -> bool {
        self.f() == 0.0
    }

    pub fn bson(self) -> Bson {
        match self {
            Num::Int(i) => Bson::Int64(i),
            Num::Float(f) => Bson::Double(f),
        }
    }
}

/// The values at `path` under `value`, arrays on the way flattened (as a query
/// reads a path); a missing field is no value.
pub(crate) fn values_at<'a>(value: &'a Bson, path: &[&str], out: &mut Vec<&'a Bson>) {
    match value {
        Bson::Array(items) => items.iter().for_each(|v| values_at(v, path, out)),
        _ if path.is_empty() => out.push(value),
        Bson::Document(d) => {
            if let Some(v) = d.get(path[0]) {
                values_at(v, &path[1..], out)
            }
        }
        _ => {}
    }
}

fn at<'a>(doc: &'a Document, path: &str) -> Vec<&'a Bson> {
    let segments: Vec<&str> = path.split('.').collect();
    let mut out = Vec::new();
    if let Some(v) = doc.get(segments[0]) {
        values_at(v, &segments[1..], &mut out);
    }
    out
}

/// The array the group is taken over: the first segment of a part's path whose
/// value in `doc` is an array, when the path goes on under it.
fn group_array<'a>(spec: &SummarySpec, doc: &'a Document) -> Option<(&'static str, &'a [Bson])> {
    spec.group.iter().find_map(|p| {
        let (first, _) = p.path().split_once('.')?;
        match doc.get(first) {
            Some(Bson::Array(items)) => Some((first, items.as_slice())),
            _ => None,
        }
    })
}

/// One key part's value: the first value found (a missing field is `Null`), a
/// period's date truncated (a part that is not a date is `Null`).
fn part_value(part: &GroupPart, values: Vec<&Bson>) -> Bson {
    let v = values.into_iter().next().cloned().unwrap_or(Bson::Null);
    match (part, v) {
        (GroupPart::Period(_, per), Bson::DateTime(t)) => Bson::DateTime(per.start(t)),
        (GroupPart::Period(..), _) => Bson::Null,
        (_, v) => v,
    }
}

fn key_of(spec: &SummarySpec, parts: Vec<Bson>) -> Bson {
    match parts.len() {
        0 => Bson::String("all".into()),
        1 => parts.into_iter().next().unwrap_or(Bson::Null),
        _ => Bson::Document(spec.group.iter().map(|p| p.name().to_owned()).zip(parts).collect()),
    }
}

/// Folds `values` for one field of `op` into `acc`.
fn fold(op: SummaryOp, acc: &mut Bson, values: &[&Bson]) {
    for v in values {
        match op {
            SummaryOp::Count => {}
            SummaryOp::Sum => {
                if let Some(n) = Num::of(v) {
                    *acc = Num::of(acc).map_or(n, |a| a.add(n)).bson();
                }
            }
            SummaryOp::Min | SummaryOp::Max if matches!(v, Bson::Null) => {}
            SummaryOp::Min | SummaryOp::Max => {
                let better = matches!(acc, Bson::Null)
                    || match op {
                        SummaryOp::Min => compare(v, acc).is_lt(),
                        _ => compare(v, acc).is_gt(),
                    };
                if better {
                    *acc = (*v).clone();
                }
            }
        }
    }
}

/// The order of two values as the summary's `$min`/`$max` see them, for the types a
/// min/max field holds: numbers, dates, strings (others compare equal).
pub(crate) fn compare(a: &Bson, b: &Bson) -> std::cmp::Ordering {
    use std::cmp::Ordering::Equal;
    match (a, b) {
        (Bson::DateTime(x), Bson::DateTime(y)) => x.cmp(y),
        (Bson::String(x), Bson::String(y)) => x.cmp(y),
        _ => match (Num::of(a), Num::of(b)) {
            (Some(x), Some(y)) => x.f().partial_cmp(&y.f()).unwrap_or(Equal),
            _ => Equal,
        },
    }
}

/// Whether `doc` is of the summary's variant (any document, for a summary of a struct
/// model): its tag holds the variant's value, as a string. A document whose tag is
/// missing, of another type, or another variant's contributes nothing, so that a
/// document whose tag is rewritten leaves the summary (and one rewritten to the
/// variant enters it) at its next application.
pub(crate) fn of_variant(spec: &SummarySpec, doc: &Document) -> bool {
    spec.variant.is_none_or(|v| matches!(doc.get(v.tag), Some(Bson::String(s)) if s == v.value))
}

/// The contributions of `doc` (`None`: deleted) to `spec`'s groups, one per key, in
/// the order the keys were met. A soft-deleted document (its source's
/// `#[model(soft_delete = ...)]` date set: anything but `null` or missing, as the
/// source's live rows read it) contributes nothing, like a deleted one; restored, it
/// contributes again. So does a document of another variant than the summary's.
pub(crate) fn contributions(spec: &SummarySpec, doc: Option<&Document>) -> Vec<Contribution> {
    let Some(doc) = doc else { return Vec::new() };
    if !of_variant(spec, doc) {
        return Vec::new();
    }
    if spec.soft_delete.is_some_and(|field| !matches!(doc.get(field), None | Some(Bson::Null))) {
        return Vec::new();
    }
    let mut out: Vec<Contribution> = Vec::new();
    let fresh = |key: Bson| Contribution { key, values: vec![Bson::Null; spec.fields.len()] };
    match group_array(spec, doc) {
        // By elements: each element's key; paths under the array sum that element's
        // values, others the document's, once per group.
        Some((array, items)) => {
            let under = |p: &str| p.split_once('.').is_some_and(|(first, _)| first == array);
            for item in items {
                let parts = spec
                    .group
                    .iter()
                    .map(|p| {
                        let mut vs = Vec::new();
                        match p.path().split_once('.') {
                            Some((first, rest)) if first == array => {
                                values_at(item, &rest.split('.').collect::<Vec<_>>(), &mut vs)
                            }
                            _ => vs = at(doc, p.path()),
                        }
                        part_value(p, vs)
                    })
                    .collect();
                let key = key_of(spec, parts);
                let i = match out.iter().position(|c| c.key == key) {
                    Some(i) => i,
                    None => {
                        let mut c = fresh(key);
                        for (f, acc) in spec.fields.iter().zip(c.values.iter_mut()) {
                            if f.op != SummaryOp::Count && !under(f.path) {
                                fold(f.op, acc, &at(doc, f.path));
                            }
                        }
                        out.push(c);
                        out.len() - 1
                    }
                };
                for (f, acc) in spec.fields.iter().zip(out[i].values.iter_mut()) {
                    if let Some((_, rest)) = f.path.split_once('.').filter(|_| under(f.path)) {
                        let mut vs = Vec::new();
                        values_at(item, &rest.split('.').collect::<Vec<_>>(), &mut vs);
                        fold(f.op, acc, &vs);
                    }
                }
            }
        }
        None => {
            let parts = spec.group.iter().map(|p| part_value(p, at(doc, p.path()))).collect();
            let mut c = fresh(key_of(spec, parts));
            for (f, acc) in spec.fields.iter().zip(c.values.iter_mut()) {
                fold(f.op, acc, &at(doc, f.path));
            }
            out.push(c);
        }
    }
    out
}

/// The top-level fields of a source document that its contribution to `spec` reads:
/// the group's and the fields' paths' first segments, the soft-delete date, the
/// variant's tag.
pub(crate) fn read_fields(spec: &SummarySpec) -> Vec<&'static str> {
    let paths = spec.group.iter().map(GroupPart::path).chain(spec.fields.iter().map(|f| f.path));
    let mut out: Vec<&'static str> = Vec::new();
    for top in paths.filter(|p| !p.is_empty()).map(|p| p.split('.').next().unwrap_or(p)) {
        if !out.contains(&top) {
            out.push(top);
        }
    }
    for f in spec.soft_delete.into_iter().chain(spec.variant.map(|v| v.tag)) {
        if !out.contains(&f) {
            out.push(f);
        }
    }
    out
}

/// The fields `read_fields` of `before` once operator update `update` applied to it,
/// computed here for the operators docshape's write rows send (`$set`, `$unset`,
/// `$inc`, `$min`, `$max`, `$push` with `$each`, `$pull` with `$eq`); `None` when the
/// update touches those fields otherwise (another operator, a positional path, a
/// value of a type the operator refuses, a server-side value such as
/// `$currentDate`). A guess, which the caller has the server confirm.
pub(crate) fn simulate(fields: &[&'static str], before: &Document, update: &Document) -> Option<Document> {
    let mut after = Document::new();
    for f in fields {
        if let Some(v) = before.get(*f) {
            after.insert(*f, v.clone());
        }
    }
    for (op, paths) in update {
        if !op.starts_with('$') {
            return None; // a replacement
        }
        let Bson::Document(paths) = paths else { return None };
        for (path, arg) in paths {
            let segments: Vec<&str> = path.split('.').collect();
            if !fields.contains(&segments[0]) {
                continue;
            }
            if segments.iter().any(|s| s.is_empty() || s.starts_with('$') || s.parse::<usize>().is_ok()) {
                return None;
            }
            let (parent, last) = parent_of(&mut after, &segments)?;
            let current = parent.get(last).cloned();
            let value = match (op.as_str(), current) {
                ("$set", _) => Some(arg.clone()),
                ("$unset", _) => None,
                ("$inc", None) => Some(number(arg)?.clone()),
                ("$inc", Some(v)) => Some(inc(&v, number(arg)?)?),
                ("$min" | "$max", None) => Some(arg.clone()),
                ("$min" | "$max", Some(v)) => {
                    let order = comparable(&v, arg)?;
                    let replace = if op == "$min" { order.is_gt() } else { order.is_lt() };
                    Some(if replace { arg.clone() } else { v })
                }
                ("$push", current) => {
                    let Bson::Document(m) = arg else { return None };
                    let Some(Bson::Array(each)) = m.get("$each").filter(|_| m.len() == 1) else {
                        return None;
                    };
                    let mut items = match current {
                        None => Vec::new(),
                        Some(Bson::Array(items)) => items,
                        Some(_) => return None,
                    };
                    items.extend(each.iter().cloned());
                    Some(Bson::Array(items))
                }
                ("$pull", current) => {
                    let Bson::Document(m) = arg else { return None };
                    let item = m.get("$eq").filter(|_| m.len() == 1)?;
                    // The server's equality is looser on numbers (1 equals 1.0): an
                    // element equal to the item in value but not in type is left to it.
                    match current {
                        None => None,
                        Some(Bson::Array(items)) => {
                            if items.iter().any(|i| i != item && loose_eq(i, item)) {
                                return None;
                            }
                            Some(Bson::Array(items.into_iter().filter(|i| i != item).collect()))
                        }
                        Some(_) => return None,
                    }
                }
                _ => return None,
            };
            match value {
                Some(v) => {
                    parent.insert(last, v);
                }
                None => {
                    parent.remove(last);
                }
            }
        }
    }
    Some(after)
}

/// The document holding the last segment of `segments` under `doc` (documents on
/// the way made, as `$set` makes them), and that segment; `None` through a value that
/// is not a document.
fn parent_of<'a, 'p>(doc: &'a mut Document, segments: &[&'p str]) -> Option<(&'a mut Document, &'p str)> {
    let (last, path) = segments.split_last()?;
    let mut at = doc;
    for s in path {
        if !at.contains_key(*s) {
            at.insert(*s, Document::new());
        }
        at = match at.get_mut(*s) {
            Some(Bson::Document(d)) => d,
            _ => return None,
        };
    }
    Some((at, last))
}

fn number(b: &Bson) -> Option<&Bson> {
    matches!(b, Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_)).then_some(b)
}

/// `$inc` as the server computes it: an int32 that overflows becomes an int64, an
/// int64 that overflows is refused, a double makes a double.
fn inc(v: &Bson, by: &Bson) -> Option<Bson> {
    Some(match (v, by) {
        (Bson::Int32(a), Bson::Int32(b)) => {
            a.checked_add(*b).map(Bson::Int32).unwrap_or(Bson::Int64(i64::from(*a) + i64::from(*b)))
        }
        (Bson::Int32(_) | Bson::Int64(_), Bson::Int32(_) | Bson::Int64(_)) => {
            let (Num::Int(a), Num::Int(b)) = (Num::of(v)?, Num::of(by)?) else { return None };
            Bson::Int64(a.checked_add(b)?)
        }
        (Bson::Double(_), _) | (_, Bson::Double(_)) => Bson::Double(Num::of(v)?.f() + Num::of(by)?.f()),
        _ => return None,
    })
}

/// The order of two values of one kind (numbers, dates, strings), as `$min`/`$max`
/// compare them; `None` across kinds, which the server orders by type.
fn comparable(a: &Bson, b: &Bson) -> Option<std::cmp::Ordering> {
    let same = matches!((a, b), (Bson::DateTime(_), Bson::DateTime(_)) | (Bson::String(_), Bson::String(_)))
        || (Num::of(a).is_some() && Num::of(b).is_some());
    same.then(|| compare(a, b))
}

/// Equal as a query compares them, for the values a pull names: numbers by value.
fn loose_eq(a: &Bson, b: &Bson) -> bool {
    match (a, b) {
        (Bson::Document(x), Bson::Document(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|((kx, vx), (ky, vy))| kx == ky && loose_eq(vx, vy))
        }
        (Bson::Array(x), Bson::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| loose_eq(p, q))
        }
        _ => match (Num::of(a), Num::of(b)) {
            (Some(x), Some(y)) => x.f() == y.f(),
            _ => a == b,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::descriptor::Variant;
    use crate::summary::{SummaryField, SummaryRefresh};
    use bson::doc;

    static FIELDS: [SummaryField; 3] = [
        SummaryField { name: "orders", op: SummaryOp::Count, path: "" },
        SummaryField { name: "units", op: SummaryOp::Sum, path: "items.qty" },
        SummaryField { name: "top", op: SummaryOp::Max, path: "items.qty" },
    ];

    fn spec(group: &'static [GroupPart]) -> SummarySpec {
        SummarySpec {
            collection: "s",
            source: "orders",
            group,
            fields: &FIELDS,
            refresh: SummaryRefresh::Sync,
            soft_delete: Some("deleted_at"),
            variant: None,
        }
    }

    #[test]
    fn by_elements_sums_the_matching_elements_only() {
        static G: [GroupPart; 1] = [GroupPart::Field("items.seller_id")];
        let d = doc! { "items": [
            { "seller_id": "a", "qty": 2 }, { "seller_id": "b", "qty": 5 }, { "seller_id": "a", "qty": 3_i64 },
        ] };
        let c = contributions(&spec(&G), Some(&d));
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].key, Bson::from("a"));
        assert_eq!(c[0].values[1], Bson::Int64(5));
        assert_eq!(c[0].values[2], Bson::Int64(3));
        assert_eq!(c[1].values[1], Bson::Int64(5));
    }

    #[test]
    fn whole_collection_and_hostile_shapes() {
        let d = doc! { "items": { "$gt": 1 } };
        let c = contributions(&spec(&[]), Some(&d));
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].key, Bson::from("all"));
        assert_eq!(c[0].values[1], Bson::Null);
        assert!(contributions(&spec(&[]), None).is_empty());
    }

    #[test]
    fn only_the_variant_contributes() {
        let mut s = spec(&[]);
        s.variant = Some(Variant { tag: "kind", value: "purchase" });
        let of = |kind: Bson| contributions(&s, Some(&doc! { "kind": kind, "items": [{ "qty": 2 }] })).len();
        assert_eq!(of(Bson::from("purchase")), 1);
        assert_eq!(of(Bson::from("click")), 0);
        assert_eq!(of(Bson::Document(doc! { "$eq": "purchase" })), 0);
        assert_eq!(of(Bson::Array(vec![Bson::from("purchase")])), 0);
        assert!(contributions(&s, Some(&doc! { "items": [{ "qty": 2 }] })).is_empty());
    }

    #[test]
    fn a_soft_deleted_document_contributes_nothing() {
        let deleted = doc! { "items": [{ "qty": 2 }], "deleted_at": bson::DateTime::now() };
        assert!(contributions(&spec(&[]), Some(&deleted)).is_empty());
        let live = doc! { "items": [{ "qty": 2 }], "deleted_at": Bson::Null };
        assert_eq!(contributions(&spec(&[]), Some(&live))[0].values[1], Bson::Int64(2));
    }

    #[test]
    fn simulates_the_rows_operators_on_the_fields_read() {
        static G: [GroupPart; 1] = [GroupPart::Field("items.seller_id")];
        let s = spec(&G);
        let fields = read_fields(&s);
        assert_eq!(fields, ["items", "deleted_at"]);
        let before = doc! { "_id": 1, "items": [{ "seller_id": "a", "qty": 2_i64 }], "n": 1 };
        let push = doc! { "$push": { "items": { "$each": [{ "seller_id": "b", "qty": 1_i64 }] } },
        "$currentDate": { "updated_at": true }, "$inc": { "revision": 1 } };
        let after = simulate(&fields, &before, &push).unwrap();
        assert_eq!(after.get_array("items").unwrap().len(), 2);
        let pull = doc! { "$pull": { "items": { "$eq": { "seller_id": "a", "qty": 2_i64 } } } };
        assert!(simulate(&fields, &before, &pull).unwrap().get_array("items").unwrap().is_empty());
        // 2 (an int32) equals 2_i64 for the server: left to it.
        let loose = doc! { "$pull": { "items": { "$eq": { "seller_id": "a", "qty": 2 } } } };
        assert!(simulate(&fields, &before, &loose).is_none());
        assert!(simulate(&fields, &before, &doc! { "$currentDate": { "deleted_at": true } }).is_none());
        assert!(simulate(&fields, &before, &doc! { "$set": { "items.0.qty": 3 } }).is_none());
        assert!(simulate(&fields, &before, &doc! { "$addToSet": { "items": 3 } }).is_none());
        assert!(simulate(&fields, &before, &doc! { "items": [] }).is_none());
        let set =
            simulate(&fields, &before, &doc! { "$set": { "items": [] }, "$unset": { "deleted_at": "" } });
        assert_eq!(set.unwrap(), doc! { "items": [] });
    }

    #[test]
    fn inc_min_and_max_follow_the_servers_types() {
        assert_eq!(inc(&Bson::Int32(i32::MAX), &Bson::Int32(1)), Some(Bson::Int64(i64::from(i32::MAX) + 1)));
        assert_eq!(inc(&Bson::Int32(1), &Bson::Int64(1)), Some(Bson::Int64(2)));
        assert_eq!(inc(&Bson::Int64(i64::MAX), &Bson::Int32(1)), None);
        assert_eq!(inc(&Bson::Int64(1), &Bson::Double(0.5)), Some(Bson::Double(1.5)));
        assert_eq!(inc(&Bson::String("x".into()), &Bson::Int32(1)), None);
        let d = doc! { "m": 5 };
        let f = ["m"];
        assert_eq!(simulate(&f, &d, &doc! { "$max": { "m": 7 } }).unwrap(), doc! { "m": 7 });
        assert_eq!(simulate(&f, &d, &doc! { "$min": { "m": 7 } }).unwrap(), doc! { "m": 5 });
        assert!(simulate(&f, &d, &doc! { "$min": { "m": "a" } }).is_none());
    }
}
