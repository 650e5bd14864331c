//! The key catalog: every family in one table, and no two families naming one key.

use std::fmt;
use std::fmt::Write as _;

use super::escape::unreserved;
use super::spec::{KeySpec, Segment, Staleness, Ttl};

/// The catalog's note for a family whose TTL is the accepted staleness.
const STALE_UP_TO_TTL: &str = "may be stale up to the TTL after a write (staleness = \"ttl\")";

/// The key catalog in the seed's format (patterns-en, "Redis key catalog"): key
/// pattern, type, TTL, notes. A family that never expires has its reason in the notes;
/// one that accepts values stale up to its TTL after a write (`staleness = "ttl"`) says so
/// there.
///
/// Rows are sorted by pattern (then by the Rust type's name), and a family listed twice appears
/// once, so the table is the same whatever order the families are gathered in.
///
/// ```
/// use docshape::keys::{catalog_markdown, KeyKind, KeySpec, Segment, Staleness, Ttl};
///
/// const QUEUE: KeySpec = KeySpec {
///     name: "mail::EmailQueue",
///     pattern: "queue:emails",
///     segments: &[Segment::Literal("queue"), Segment::Literal("emails")],
///     kind: KeyKind::List,
///     json: false,
///     ttl: Ttl::Never { reason: "durable store elsewhere" },
///     note: "worker queue",
///     staleness: Staleness::Invalidated,
/// };
/// assert_eq!(
///     catalog_markdown(&[&QUEUE]),
///     "| Key pattern | Type | TTL | Notes |\n\
///      |---|---|---|---|\n\
///      | `queue:emails` | list | none | worker queue (durable store elsewhere) |\n"
/// );
/// ```
pub fn catalog_markdown(families: &[&KeySpec]) -> String {
    let mut rows: Vec<&KeySpec> = families.to_vec();
    rows.sort_by(|a, b| (a.pattern, a.name).cmp(&(b.pattern, b.name)));
    rows.dedup();
    let mut out = String::from("| Key pattern | Type | TTL | Notes |\n|---|---|---|---|\n");
    for spec in rows {
        let notes = match (spec.note.trim(), &spec.ttl) {
            (note, Ttl::Never { reason }) if !note.is_empty() => format!("{note} ({reason})"),
            ("", Ttl::Never { reason }) => (*reason).to_owned(),
            (note, _) => note.to_owned(),
        };
        let notes = match (spec.staleness, notes.is_empty()) {
            (Staleness::Ttl, true) => STALE_UP_TO_TTL.to_owned(),
            (Staleness::Ttl, false) => format!("{notes}; {STALE_UP_TO_TTL}"),
            (Staleness::Invalidated, _) => notes,
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} |",
            spec.pattern,
            spec.kind.type_name(spec.json),
            spec.ttl,
            cell(&notes)
        );
    }
    out
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\r', '\n'], " ")
}

/// Two families whose patterns can name the same key, with a key both would claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlap {
    /// One family.
    pub first: KeySpec,
    /// The other.
    pub second: KeySpec,
    /// A key of both families.
    pub example: String,
}

impl fmt::Display for Overlap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` ({}) and `{}` ({}) can name the same key, for example `{}`; give one of them a literal segment of its own",
            self.first.pattern, self.first.name, self.second.pattern, self.second.name, self.example
        )
    }
}

impl std::error::Error for Overlap {}

/// Reports every pair of families whose patterns can name the same key, which would
/// make one family's operations (and its `SCAN`) act on the other's data.
///
/// Placeholder values are escaped, so a value fills exactly one segment and is made of
/// unreserved characters and `%XX` escapes. Two patterns therefore overlap exactly when
/// they have the same number of segments and each pair of segments can hold the same
/// text: two equal literals; a literal and a placeholder when the literal is made of
/// unreserved characters only (a value can be written as it); a literal and a shard
/// range when the literal is a number of the range; two placeholders, or a placeholder
/// and a range, always; two ranges that intersect. A placeholder is taken to accept any
/// text: the check does not know that an integer field refuses `admin`.
///
/// A family listed twice (the same [`KeySpec`]) is not an overlap with itself.
///
/// ```
/// use docshape::keys::{check_catalog, KeyKind, KeySpec, Segment, Staleness, Ttl};
///
/// const TTL: Ttl = Ttl::After { seconds: 60, sliding: false, spelled: "60s" };
/// const SESSION: KeySpec = KeySpec {
///     name: "Session", pattern: "user:{id}:session",
///     segments: &[Segment::Literal("user"), Segment::Placeholder("id"), Segment::Literal("session")],
///     kind: KeyKind::Hash, json: false, ttl: TTL, note: "", staleness: Staleness::Invalidated,
/// };
/// const ANY: KeySpec = KeySpec {
///     name: "UserThing", pattern: "user:{id}:{kind}",
///     segments: &[Segment::Literal("user"), Segment::Placeholder("id"), Segment::Placeholder("kind")],
///     kind: KeyKind::String, json: false, ttl: TTL, note: "", staleness: Staleness::Invalidated,
/// };
/// let overlaps = check_catalog(&[&SESSION, &ANY]).unwrap_err();
/// assert_eq!(overlaps[0].example, "user:x:session");
/// assert!(check_catalog(&[&SESSION]).is_ok());
/// ```
pub fn check_catalog(families: &[&KeySpec]) -> Result<(), Vec<Overlap>> {
    let mut overlaps = Vec::new();
    for (i, a) in families.iter().enumerate() {
        for b in &families[i + 1..] {
            if a == b {
                continue;
            }
            if let Some(example) = shared_key(a, b) {
                overlaps.push(Overlap { first: **a, second: **b, example });
            }
        }
    }
    if overlaps.is_empty() {
        Ok(())
    } else {
        Err(overlaps)
    }
}

/// A key both patterns match, if there is one.
pub(crate) fn shared_key(a: &KeySpec, b: &KeySpec) -> Option<String> {
    if a.segments.len() != b.segments.len() {
        return None;
    }
    let parts: Option<Vec<String>> =
        a.segments.iter().zip(b.segments).map(|(x, y)| shared_segment(x, y)).collect();
    Some(parts?.join(":"))
}

fn shared_segment(a: &Segment, b: &Segment) -> Option<String> {
    use Segment::*;
    match (a, b) {
        (Literal(x), Literal(y)) => (x == y).then(|| (*x).to_owned()),
        (Literal(l), Placeholder(_)) | (Placeholder(_), Literal(l)) => {
            (!l.is_empty() && l.bytes().all(unreserved)).then(|| (*l).to_owned())
        }
        (Literal(l), Shards { first, last }) | (Shards { first, last }, Literal(l)) => {
            let canonical = l.bytes().all(|c| c.is_ascii_digit()) && (l.len() == 1 || !l.starts_with('0'));
            match l.parse::<u32>() {
                Ok(n) if canonical && (*first..=*last).contains(&n) => Some((*l).to_owned()),
                _ => None,
            }
        }
        (Placeholder(_), Placeholder(_)) => Some("x".to_owned()),
        (Placeholder(_), Shards { first, .. }) | (Shards { first, .. }, Placeholder(_)) => {
            Some(first.to_string())
        }
        (Shards { first: f1, last: l1 }, Shards { first: f2, last: l2 }) => {
            let lo = (*f1).max(*f2);
            (lo <= (*l1).min(*l2)).then(|| lo.to_string())
        }
    }
}
