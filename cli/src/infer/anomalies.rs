//! The anomalies of a collection, each named with its documents: the ids and sizes of
//! the largest documents, the documents whose arrays stand out (outliers, with a
//! threshold between the normal maximum and the first outlier), and bucket documents
//! whose stored count disagrees with their array. Bounded memory: a handful of
//! examples per finding, counts for the rest.

use std::collections::BTreeMap;

use docshape::bson::{Bson, Document};

use super::{bytes, md, thousands, LARGE_DOCUMENT, LONG_ARRAY};

/// Examples kept per finding.
const EXAMPLES: usize = 5;

/// A document's `_id` as the report shows it: relaxed extended JSON, cut short.
fn shown_id(document: &Document) -> String {
    let id = document.get("_id").cloned().unwrap_or(Bson::Null);
    let mut text = id.into_relaxed_extjson().to_string();
    if text.len() > 60 {
        let mut end = 57;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("...");
    }
    text
}

/// The lengths of one top-level array field.
#[derive(Debug, Clone, Default)]
pub struct ArrayLengths {
    /// Documents holding the field as an array.
    pub holders: u64,
    /// The longest.
    pub max: usize,
    /// How many documents hold an array of exactly `max` elements.
    pub at_max: u64,
    /// The longest array of at most [`LONG_ARRAY`] elements.
    pub normal_max: usize,
    /// Documents past [`LONG_ARRAY`].
    pub over: u64,
    /// The longest arrays past [`LONG_ARRAY`], with their document's id, longest first.
    pub outliers: Vec<(usize, String)>,
}

/// An integer field and an array field whose values agree in most documents: a
/// bucket's maintained count and its items.
#[derive(Debug, Clone, Default)]
pub struct CountPair {
    /// Documents holding both.
    pub both: u64,
    /// Documents where the count equals the array's length.
    pub agree: u64,
    /// Documents where it does not: how many, and a few (id, count, length).
    pub mismatched: u64,
    /// Examples of mismatches.
    pub examples: Vec<(String, i64, usize)>,
}

/// A boolean field and an array field of the same documents: an outlier's flag and
/// its embedded items, when the flag is set on some.
#[derive(Debug, Clone, Default)]
pub struct FlagPair {
    /// Documents holding both.
    pub both: u64,
    /// Those whose flag is `true`.
    pub set: u64,
}

/// What `Anomalies::fold` saw of a collection's documents.
#[derive(Debug, Clone, Default)]
pub struct Anomalies {
    /// Documents over [`LARGE_DOCUMENT`], and the largest of them (bytes, id).
    pub large: u64,
    /// The largest documents over the threshold, largest first.
    pub large_examples: Vec<(usize, String)>,
    /// Per top-level array field.
    pub arrays: BTreeMap<String, ArrayLengths>,
    /// Per (integer field, array field) of the same document.
    pub pairs: BTreeMap<(String, String), CountPair>,
    /// Per (boolean field, array field) of the same document.
    pub flags: BTreeMap<(String, String), FlagPair>,
    /// Per top-level date field: the greatest common divisor of its values in
    /// milliseconds since the epoch (a multiple of an hour's: every value on the hour).
    pub dates: BTreeMap<String, i64>,
    /// Per (top-level date field, top-level array, date field of its elements): the
    /// least and greatest element time minus the document's date, in milliseconds (a
    /// bucket's items fall within its period).
    pub spans: BTreeMap<(String, String, String), (i64, i64)>,
}

fn gcd(a: i64, b: i64) -> i64 {
    let (mut a, mut b) = (a.unsigned_abs(), b.unsigned_abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    i64::try_from(a).unwrap_or(i64::MAX)
}

/// Keeps the `EXAMPLES` largest.
fn keep_largest(list: &mut Vec<(usize, String)>, entry: (usize, String)) {
    list.push(entry);
    list.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    list.truncate(EXAMPLES);
}

impl Anomalies {
    /// Folds one sampled document of `size` bytes.
    pub(super) fn fold(&mut self, document: &Document, size: usize) {
        if size > LARGE_DOCUMENT {
            self.large += 1;
            keep_largest(&mut self.large_examples, (size, shown_id(document)));
        }
        let mut counts = Vec::new();
        let mut arrays = Vec::new();
        let mut flags = Vec::new();
        let mut dates = Vec::new();
        for (key, value) in document {
            match value {
                Bson::Array(items) if self.arrays.len() < 64 || self.arrays.contains_key(key) => {
                    arrays.push((key, items.len()))
                }
                Bson::Int32(n) => counts.push((key, i64::from(*n))),
                Bson::Int64(n) => counts.push((key, *n)),
                Bson::Boolean(b) => flags.push((key, *b)),
                Bson::DateTime(d) => dates.push((key, d.timestamp_millis())),
                _ => {}
            }
        }
        for (key, len) in &arrays {
            let a = self.arrays.entry((*key).clone()).or_default();
            a.holders += 1;
            match len.cmp(&a.max) {
                std::cmp::Ordering::Greater => {
                    a.max = *len;
                    a.at_max = 1;
                }
                std::cmp::Ordering::Equal => a.at_max += 1,
                std::cmp::Ordering::Less => {}
            }
            if *len > LONG_ARRAY {
                a.over += 1;
                keep_largest(&mut a.outliers, (*len, shown_id(document)));
            } else {
                a.normal_max = a.normal_max.max(*len);
            }
        }
        for (key, ms) in &dates {
            if self.dates.len() < 64 || self.dates.contains_key(*key) {
                let g = self.dates.entry((*key).clone()).or_insert(0);
                *g = gcd(*g, *ms);
            }
            for (array, _) in &arrays {
                let Some(Bson::Array(items)) = document.get(*array) else { continue };
                for item in items {
                    let Bson::Document(item) = item else { continue };
                    for (field, value) in item {
                        let Bson::DateTime(t) = value else { continue };
                        let k = ((*key).clone(), (*array).clone(), field.clone());
                        if !self.spans.contains_key(&k) && self.spans.len() >= 256 {
                            continue;
                        }
                        let span = t.timestamp_millis().saturating_sub(*ms);
                        let e = self.spans.entry(k).or_insert((span, span));
                        *e = (e.0.min(span), e.1.max(span));
                    }
                }
            }
        }
        for (flag, set) in &flags {
            for (array, _) in &arrays {
                let key = ((*flag).clone(), (*array).clone());
                if !self.flags.contains_key(&key) && self.flags.len() >= 256 {
                    continue;
                }
                let pair = self.flags.entry(key).or_default();
                pair.both += 1;
                pair.set += u64::from(*set);
            }
        }
        for (count, n) in &counts {
            for (array, len) in &arrays {
                let key = ((*count).clone(), (*array).clone());
                if !self.pairs.contains_key(&key) && self.pairs.len() >= 256 {
                    continue;
                }
                let pair = self.pairs.entry(key).or_default();
                pair.both += 1;
                if usize::try_from(*n).ok() == Some(*len) {
                    pair.agree += 1;
                } else {
                    pair.mismatched += 1;
                    if pair.examples.len() < EXAMPLES {
                        pair.examples.push((shown_id(document), *n, *len));
                    }
                }
            }
        }
    }

    /// The pairs that look like a bucket's count and items: both in at least five
    /// documents, agreeing in at least 80% of them.
    pub fn buckets(&self) -> Vec<(&str, &str, &CountPair)> {
        self.pairs
            .iter()
            .filter(|(_, p)| p.both >= 5 && p.agree * 5 >= p.both * 4)
            .map(|((c, a), p)| (c.as_str(), a.as_str(), p))
            .collect()
    }

    /// Whether the array field is capped: its longest length is held by at least three
    /// documents and a fifth of those holding it (a bucket's `max`), not by a few.
    pub fn capped(&self, field: &str) -> bool {
        self.arrays.get(field).is_some_and(|a| a.max > 0 && a.at_max >= 3 && a.at_max * 5 >= a.holders)
    }
}

/// The top-level arrays whose few long values make them outliers (at most one holder in
/// ten past [`LONG_ARRAY`]), a bucket's capped items aside.
pub(super) fn raw_outliers(a: &Anomalies) -> Vec<(&String, &ArrayLengths)> {
    let buckets = a.buckets();
    a.arrays
        .iter()
        .filter(|(field, l)| {
            l.over > 0
                && l.over * 10 <= l.holders.max(1)
                && !a.capped(field)
                && !buckets.iter().any(|(_, items, _)| items == *field)
        })
        .collect()
}

/// `3 of 40 documents (7.5%)`, saying whether the count is exact (every document was
/// read) or the sample's.
pub(super) fn share(n: u64, of: u64, exact: bool) -> String {
    let pct = if of == 0 { 0.0 } else { n as f64 * 100.0 / of as f64 };
    let scope = if exact { "documents" } else { "sampled documents" };
    format!("{} of {} {scope} ({pct:.1}%)", thousands(n), thousands(of))
}

/// A threshold between the normal maximum and the first outlier: the normal maximum
/// rounded up to two significant digits, kept below the first outlier.
pub(super) fn threshold(normal_max: usize, first_outlier: usize) -> usize {
    let mut step = 1;
    while normal_max / step >= 100 {
        step *= 10;
    }
    let rounded = normal_max.div_ceil(step).max(1) * step;
    if rounded < first_outlier {
        rounded.max(normal_max)
    } else {
        normal_max
    }
}

/// The anomalies' sentences, each naming its documents and a remedy.
pub(super) fn sentences(a: &Anomalies, sampled: u64, exact: bool, out: &mut Vec<String>) {
    let buckets = a.buckets();
    for (field, lengths) in &a.arrays {
        if lengths.over == 0 {
            continue;
        }
        let bucket = buckets.iter().any(|(_, items, _)| items == field);
        if a.capped(field) || bucket {
            // A capped array (a bucket's items) is long by design, and bounded.
            continue;
        }
        let ids: Vec<String> = lengths
            .outliers
            .iter()
            .map(|(n, id)| format!("`{}` ({})", md(id), thousands(*n as u64)))
            .collect();
        let first = lengths.outliers.last().map_or(lengths.max, |(n, _)| *n);
        if lengths.over * 10 <= lengths.holders.max(1) {
            out.push(format!(
                "**outlier array** `{}`: {} hold more than {} elements: {}; the others hold at most {}. Mark it `#[outlier(threshold = {})]`: a document past the threshold keeps that many embedded and moves the rest to an overflow collection, so every read of a normal document stays small (the stored documents need the migration under Migrations first)",
                md(field),
                share(lengths.over, lengths.holders, exact),
                thousands(LONG_ARRAY as u64),
                ids.join(", "),
                thousands(lengths.normal_max as u64),
                threshold(lengths.normal_max, first),
            ));
        } else {
            out.push(format!(
                "**unbounded array** `{}`: {} hold more than {} elements (longest: {}): the list grows with the data; move its elements to a collection of their own, each holding this document's `_id`",
                md(field),
                share(lengths.over, lengths.holders, exact),
                thousands(LONG_ARRAY as u64),
                ids.join(", "),
            ));
        }
    }
    if a.large > 0 {
        let ids: Vec<String> =
            a.large_examples.iter().map(|(n, id)| format!("`{}` ({})", md(id), bytes(*n as u64))).collect();
        out.push(format!(
            "**large documents**: {} are over {}: {}. Every read of one moves it whole; keep the large payload out of the document: in GridFS (files over 16 MiB, or read in chunks) or in a side collection keyed by this document's `_id`, read only when needed",
            share(a.large, sampled, exact),
            bytes(LARGE_DOCUMENT as u64),
            ids.join(", ")
        ));
    }
    for (count, items, pair) in buckets {
        // An outlier's count: it counts the overflowed items too, so it differs from
        // the embedded array's length exactly where a flag beside it is set.
        let outlier =
            a.flags.iter().any(|((_, array), f)| array == items && f.set > 0 && f.set >= pair.mismatched);
        if pair.mismatched == 0 || outlier {
            continue;
        }
        let examples: Vec<String> = pair
            .examples
            .iter()
            .map(|(id, n, len)| format!("`{}` ({} = {}, {} elements)", md(id), md(count), n, len))
            .collect();
        out.push(format!(
            "**bucket count mismatch**: `{}` is the length of `{}` in {} of {} documents, and differs in {}: {}. A bucket's count is what its readers trust (is it full?); recount them: `updateMany({{$expr: {{$ne: [\"${}\", {{$size: \"${}\"}}]}}}}, [{{$set: {{{}: {{$size: \"${}\"}}}}}}])`, and append with one update that pushes and increments together (`#[bucket]` does)",
            md(count),
            md(items),
            thousands(pair.agree),
            thousands(pair.both),
            share(pair.mismatched, pair.both, exact),
            examples.join(", "),
            md(count),
            md(items),
            md(count),
            md(items),
        ));
    }
}
