//! The prefix rule, as mongod applies it: whether an index serves a row (equality fields in any order, then the sort keys in order with matching or fully reversed directions, then the range fields), and the index to propose when none does.

#[allow(unused_imports)]
use super::*;

/// How an index relates to an access pattern.
pub(super) enum Fit {
    Serves,
    /// The index holds the pattern's fields, in an order that does not serve it.
    WrongOrder,
    /// It would serve, but its collation differs from the query's.
    Collation,
    /// The sort keys are there, with directions matching neither the sort nor its reverse.
    Direction,
    No,
}

pub(super) fn fit(a: &Access, index: &IndexDef) -> Fit {
    if index.keys.iter().any(|k| !k.kind.is_ordered())
        && !(index.keys.len() == 1 && index.keys[0].kind == KeyKind::Hashed)
    {
        return Fit::No;
    }
    let equality: BTreeSet<&str> = a.filter.iter().map(|(p, _)| p.as_str()).collect();
    // A sort key also matched by equality is constant, so the index need not order it.
    let sort: Vec<&Key> = a.sort.iter().filter(|k| !equality.contains(k.path.as_str())).collect();
    // A range on a sort key is bounded by that key where the sort reads it (mongod
    // scans the key's bounds in index order): it needs no key of its own after the sort.
    let range: BTreeSet<&str> =
        a.range.iter().map(|(p, _)| p.as_str()).filter(|p| !sort.iter().any(|k| k.path == *p)).collect();
    let needed = equality.len() + sort.len() + range.len();
    if needed == 0 || index.keys.len() < needed {
        return Fit::No;
    }
    let keys = &index.keys;
    if index.keys.iter().any(|k| k.kind == KeyKind::Hashed)
        && (!sort.is_empty() || !range.is_empty() || equality.len() != 1)
    {
        return Fit::No;
    }
    let head: BTreeSet<&str> = keys[..equality.len()].iter().map(|k| k.path.as_str()).collect();
    let mid = &keys[equality.len()..equality.len() + sort.len()];
    let same = mid.iter().zip(&sort).all(|(k, s)| k.path == s.path && k.kind == s.kind);
    let reversed = mid.iter().zip(&sort).all(|(k, s)| k.path == s.path && k.kind != s.kind);
    let tail: BTreeSet<&str> =
        keys[equality.len() + sort.len()..needed].iter().map(|k| k.path.as_str()).collect();
    let serves = head == equality && (sort.is_empty() || same || reversed) && tail == range;
    let collation_ok = index.locale.is_some() == a.case_insensitive;
    let sort_paths_match = mid.iter().zip(&sort).all(|(k, s)| k.path == s.path);
    match (serves, collation_ok) {
        (true, true) => Fit::Serves,
        (true, false) => Fit::Collation,
        (false, _) if head == equality && tail == range && sort_paths_match => Fit::Direction,
        _ => {
            let wanted: BTreeSet<&str> = equality
                .iter()
                .copied()
                .chain(sort.iter().map(|k| k.path.as_str()))
                .chain(range.iter().copied())
                .collect();
            let held: BTreeSet<&str> = keys[..needed].iter().map(|k| k.path.as_str()).collect();
            if wanted == held {
                Fit::WrongOrder
            } else {
                Fit::No
            }
        }
    }
}

/// The index that would serve `a`, as attribute text.
pub(super) fn proposal(a: &Access) -> String {
    let equality: Vec<&str> = a.filter.iter().map(|(p, _)| p.as_str()).collect();
    let mut keys: Vec<String> = equality.iter().map(|p| key_text(p, "")).collect();
    for k in a.sort.iter().filter(|k| !equality.contains(&k.path.as_str())) {
        keys.push(key_text(&k.path, if k.kind == KeyKind::Desc { " = -1" } else { "" }));
    }
    let sorted = |p: &str| a.sort.iter().any(|k| k.path == p);
    keys.extend(
        a.range
            .iter()
            .filter(|(p, _)| !sorted(p) && !equality.contains(&p.as_str()))
            .map(|(p, _)| key_text(p, "")),
    );
    let ci = if a.case_insensitive { ", case_insensitive" } else { "" };
    format!("#[index(keys({}){ci})]", keys.join(", "))
}

pub(super) fn key_text(path: &str, suffix: &str) -> String {
    if path.contains('.') || syn::parse_str::<syn::Ident>(path).is_err() {
        format!("\"{path}\"{suffix}")
    } else {
        format!("{path}{suffix}")
    }
}

pub(super) fn describe(a: &Access) -> String {
    let mut parts = Vec::new();
    if !a.filter.is_empty() {
        parts.push(format!(
            "filter {}",
            a.filter.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>().join(", ")
        ));
    }
    if !a.sort.is_empty() {
        let sort: Vec<String> = a
            .sort
            .iter()
            .map(|k| format!("{} {}", k.path, if k.kind == KeyKind::Desc { "desc" } else { "asc" }))
            .collect();
        parts.push(format!("sort {}", sort.join(", ")));
    }
    if !a.range.is_empty() {
        parts.push(format!(
            "range {}",
            a.range.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>().join(", ")
        ));
    }
    if parts.is_empty() {
        "no filter, sort or range: it reads the whole collection".to_owned()
    } else {
        parts.join("; ")
    }
}
