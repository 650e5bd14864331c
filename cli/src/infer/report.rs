//! The report, `INFERRED.md`: per collection, the sample, each field's coverage and
//! types, the indexes, the references and copies, the server's validator, the
//! migrations a type needs, and the anti-patterns seen.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use docshape::bson::{Bson, Document};

use super::anomalies::share;
use super::source::Gen;
use super::workload::report_workload;
use super::{anomalies, bytes, distribution, escaped, links, md, thousands, CollectionShape, Node};
use super::{LONG_ARRAY, LONG_NAME, LONG_NAME_SHARE, MANY_INDEXES};

impl CollectionShape {
    /// The anti-patterns seen in the sample, one sentence each.
    pub fn anti_patterns(&self) -> Vec<String> {
        let mut out = Vec::new();
        let exact = self.sampled >= self.estimated_count;
        anomalies::sentences(&self.anomalies, self.sampled, exact, &mut out);
        links::sentences(self, &mut out);
        // Arrays below the top level: counted, without their documents.
        let mut arrays = Vec::new();
        walk(&self.root, "", &mut |path, node| {
            if node.long_arrays > 0 && path.contains('.') {
                arrays.push((path.to_owned(), node.max_len, node.long_arrays));
            }
        });
        for (path, max, count) in arrays {
            out.push(format!(
                "**unbounded array** `{}`: up to {} elements, {} sampled value(s) past {}: a few huge lists \
                 are an `#[outlier]` array; lists that grow with the data belong in a collection of their \
                 own, each element holding a reference to this document",
                md(&path),
                thousands(max as u64),
                count,
                thousands(LONG_ARRAY as u64)
            ));
        }
        for (short, long) in redundant_prefixes(&self.indexes) {
            out.push(format!(
                "**redundant index** `{}` is a prefix of `{}`: every query it serves, the longer one serves too, and each index costs memory and every write; drop it (`db.getCollection({}).dropIndex({})`) unless the longer one is much larger and rarely used",
                md(&short),
                md(&long),
                escaped(&self.name),
                escaped(&short)
            ));
        }
        if self.indexes.len() + 1 > MANY_INDEXES {
            out.push(format!(
                "**too many indexes**: {} (with `_id_`), more than {}: each costs memory and slows every write; \
                 drop those no access pattern needs",
                self.indexes.len() + 1,
                MANY_INDEXES
            ));
        }
        let average = self.total_bytes as f64 / self.sampled.max(1) as f64;
        for (path, name, occurrences) in self.long_names() {
            let saved = (name.len() - 2) as u64 * occurrences;
            let per_document = saved as f64 / self.sampled.max(1) as f64;
            // A name costs something only when it is a real share of what is stored.
            if per_document < average * LONG_NAME_SHARE {
                continue;
            }
            out.push(format!(
                "**long field name** `{}` ({} bytes) at `{}`, {} times in {} sampled documents: a 2-byte name \
                 would save about {:.0} bytes per document ({:.0}% of the average {:.0} bytes), about {} over the estimated {} documents",
                md(&name),
                name.len(),
                md(&path),
                thousands(occurrences),
                thousands(self.sampled),
                per_document,
                per_document * 100.0 / average.max(1.0),
                average,
                bytes((per_document * self.estimated_count as f64) as u64),
                thousands(self.estimated_count)
            ));
        }
        out
    }

    /// Names of at least [`LONG_NAME`] bytes stored at least once per sampled document
    /// on average: (path, name, occurrences).
    fn long_names(&self) -> Vec<(String, String, u64)> {
        let mut found = Vec::new();
        let sampled = self.sampled;
        walk(&self.root, "", &mut |path, node| {
            let name = path.rsplit('.').next().unwrap_or(path);
            if name.len() >= LONG_NAME && node.seen * 2 >= sampled && sampled > 0 {
                found.push((path.to_owned(), name.to_owned(), node.seen));
            }
        });
        found.sort_by_key(|(_, name, n)| std::cmp::Reverse((name.len() - 2) as u64 * n));
        found.truncate(10);
        found
    }
}

/// The copies `models.rs` declares: field, (the attribute's arguments, the stale note).
type Copies = BTreeMap<String, (String, String)>;

/// References to other collections and the copies beside them.
fn report_links(out: &mut String, c: &CollectionShape, refs: &BTreeMap<String, String>, copies: &Copies) {
    if c.links.is_empty() {
        return;
    }
    let _ = writeln!(out, "### References and copies\n");
    for link in &c.links {
        let _ = write!(
            out,
            "- `{}` holds `{}`'s ids: {} of {} distinct sampled values are ids there. ",
            md(&link.field),
            md(&link.target),
            link.found,
            link.checked
        );
        let _ = match refs.get(&link.field) {
            Some(target) => writeln!(
                out,
                "`models.rs` writes it as `Ref<{target}>`: the same stored value, validated as `{target}`'s `_id` and loaded by `Ref::load` (`infer --plain` leaves the raw id)."
            ),
            None => writeln!(
                out,
                "It stays the raw id in `models.rs`: its values are not all of the kind of that `_id`, the server's validator constrains it, or `--plain` was given; `Ref<T>` (or `#[reference(T)]` on the raw id) would say it is a reference."
            ),
        };
        for copy in &link.copies {
            let _ = writeln!(
                out,
                "  - `{}` copies `{}.{}` ({} of {} compared documents equal{}): a denormalized copy. {}",
                md(&copy.field),
                md(&link.target),
                md(&copy.source),
                thousands(copy.compared - copy.stale),
                thousands(copy.compared),
                if copy.stale > 0 { format!("; {} stale, see below", thousands(copy.stale)) } else { String::new() },
                match copies.get(&copy.field) {
                    Some((args, _)) if args.ends_with("\"sync\"") => format!(
                        "`models.rs` declares it `#[denormalized({})]`: an index leads with `{}`, so docshape's writers rewrite the copies in the call that updates the source.",
                        md(args),
                        md(&link.field)
                    ),
                    Some((args, _)) => format!(
                        "`models.rs` declares it `#[denormalized({})]`, a snapshot: no index leads with `{}`, which a refreshed copy needs (each refresh would scan the collection); add `#[index(keys({}))]` and make it `refresh = \"sync\"` for docshape's writers to keep it in step.",
                        md(args),
                        md(&link.field),
                        md(&link.field)
                    ),
                    None => "It stays undeclared in `models.rs`: `--plain` was given, its reference stays a raw id, or it is missing, null or of another kind in some documents (`#[denormalized(...)]` wants exactly the source's type).".to_owned(),
                }
            );
        }
    }
    let _ = writeln!(out);
}

/// The tenant: the field every index leads with, declared `#[model(tenant = ...)]`
/// or why not.
fn report_tenant(out: &mut String, c: &CollectionShape, plain: bool) {
    let polymorphic = !plain && matches!(super::patterns::polymorphic(c), Some(Ok(_)));
    let Some(t) = super::patterns::tenant(c, polymorphic) else { return };
    let _ = writeln!(out, "### Tenant\n");
    let _ = write!(
        out,
        "Every index besides `_id_` ({} of them, TTL indexes aside) leads with `{}`: the collection is partitioned by it, each query scoped to one value. ",
        t.indexes,
        md(&t.field)
    );
    let rows =
        c.workload.as_ref().map_or(0, |w| w.shapes.iter().filter(|s| !s.equality.contains(&t.field)).count());
    let _ = match &t.refused {
        _ if plain => writeln!(out, "`--plain` was given: `models.rs` declares no tenant.\n"),
        Some(why) => writeln!(out, "`models.rs` declares no tenant: {}.\n", md(why)),
        None => writeln!(
            out,
            "`models.rs` declares it `#[model(tenant = {})]`: every access row must filter on it first (a row of the workload that does not, {rows} here, stays a comment), every generated method takes it as its first parameter, every index must lead with it (they do) and a unique index is unique per tenant. `--plain` leaves it off.\n",
            md(&t.field)
        ),
    };
}

/// The arrays already in docshape's outlier shape, declared `#[outlier(...)]`, and the
/// overflow collection of another's.
fn report_outliers(out: &mut String, c: &CollectionShape, all: &[CollectionShape], plain: bool) {
    if plain {
        return;
    }
    let found = super::patterns::outliers(c, all);
    let owner = super::patterns::overflow_owner(c, all);
    if found.is_empty() && owner.is_none() {
        return;
    }
    let _ = writeln!(out, "### Outliers\n");
    for f in found {
        let count = match &f.count {
            Some(n) => format!(", `{}` counting every item", md(n)),
            None => String::new(),
        };
        let _ = writeln!(
            out,
            "- `{a}` is an outlier array in docshape's shape already: at most {t} items embedded (the longest stored), {n} document(s) flagged `{flag}` with the rest in `{o}` (`{{_id: {{parent, seq}}, parent, count, items}}`){count}. `models.rs` declares it `#[outlier(threshold = {t}, ...)]`: the validator's `maxItems: {t}` refuses none of the stored documents, `load_{a}` reads both parts in order and `push_{a}` keeps the shape. `--plain` leaves a plain array.",
            a = md(&f.array),
            t = f.threshold,
            n = thousands(f.overflowed),
            flag = md(&f.flag),
            o = md(&f.overflow),
        );
    }
    if let Some((owner, array)) = owner {
        let _ = writeln!(
            out,
            "- This collection holds the overflow documents of `{}.{}`: `models.rs` writes no model of its own for it; `sync` of that model gives it docshape's validator and `{{parent: 1, \"_id.seq\": 1}}` index.",
            md(&owner),
            md(&array)
        );
    }
    let _ = writeln!(out);
}

/// Bucket documents: declared `#[bucket(...)]`, or why they stay a plain struct.
fn report_bucket(out: &mut String, c: &CollectionShape, plain: bool) {
    let polymorphic = matches!(super::patterns::polymorphic(c), Some(Ok(_)));
    let Some(found) = super::patterns::bucket(c) else { return };
    if polymorphic {
        return;
    }
    let _ = writeln!(out, "### Bucket\n");
    let _ = match found {
        _ if plain => writeln!(out, "`--plain` was given: `models.rs` writes a plain struct.\n"),
        Ok(b) => writeln!(
            out,
            "Every document is a bucket in docshape's shape: `_id: {{{s}, {p}}}`, the series `{s}`, the period's start `{p}` (every value on the {per}, every item's `{t}` within its period), `{c}` equal to the length of `{i}` in every document (at most {m}). `models.rs` declares `#[bucket(series = {s}, period = {p}, per = \"{per}\", max = {m}, items = {i}, time = {t}, count = {c})]`: appends (`append`, `append_many`: one update, guarded so no bucket passes {m}) and range reads (`read_range`) go through it, and the validator bounds the items and the count. `--plain` leaves a plain struct.\n",
            s = md(&b.series),
            p = md(&b.period),
            per = b.per,
            t = md(&b.time),
            c = md(&b.count),
            i = md(&b.items),
            m = b.max
        ),
        Err(why) => writeln!(
            out,
            "A count field agrees with an array's length, as a bucket's does, but `models.rs` writes a plain struct: {}.\n",
            md(&why)
        ),
    };
}

/// The server's validator: its level and action, and each constraint the model does not
/// keep (those docshape cannot express at all make `sync` refuse to replace it).
fn report_validator(out: &mut String, c: &CollectionShape) {
    let Some(validator) = &c.validator else { return };
    let _ = writeln!(out, "### Server validator\n");
    let level = c.validation_level.as_deref().unwrap_or("strict");
    let action = c.validation_action.as_deref().unwrap_or("error");
    let _ = writeln!(
        out,
        "`validationLevel: {}`, `validationAction: {}`, kept in `#[model(...)]`. Every `$jsonSchema` keyword a `#[validate]` can say is on its field in `models.rs` (lengths, `pattern`, bounds, `enum`, item counts), and every name in `required` the model always writes stays required.\n",
        md(level),
        md(action)
    );
    let mut g = Gen::default();
    g.model(c, &[]);
    if g.gaps.is_empty() {
        let _ = writeln!(
            out,
            "Nothing of it is lost: a `sync` from the models enforces at least what the server does.\n"
        );
        return;
    }
    let refused = docshape::sync::inexpressible(validator);
    let _ = writeln!(
        out,
        "Not kept by the models ({}): a `sync` from them would no longer enforce these.\n",
        g.gaps.len()
    );
    for gap in &g.gaps {
        let flag = if refused.contains(gap) {
            " — docshape cannot express it: `sync` refuses to replace the validator (`--allow-weaker-validator` to drop it anyway)"
        } else {
            " — add it to the field by hand, or keep the server's validator"
        };
        let _ = writeln!(out, "- `{}`{flag}", md(gap));
    }
    let _ = writeln!(out);
}

/// Fields holding integers and doubles: their count, the wider type the model gives
/// them, and the migration that would allow doubles alone.
fn report_migrations(out: &mut String, c: &CollectionShape) {
    let mut mixed = Vec::new();
    walk(&c.root, "", &mut |path, node| {
        let ints = node.kinds.get("int").copied().unwrap_or(0) + node.kinds.get("long").copied().unwrap_or(0);
        let doubles = node.kinds.get("double").copied().unwrap_or(0);
        let numeric = node.non_null().keys().all(|k| ["int", "long", "double"].contains(k));
        if ints > 0 && doubles > 0 && numeric {
            mixed.push((path.to_owned(), ints, doubles, false));
        }
        if let Some(items) = &node.items {
            let ints =
                items.kinds.get("int").copied().unwrap_or(0) + items.kinds.get("long").copied().unwrap_or(0);
            let doubles = items.kinds.get("double").copied().unwrap_or(0);
            if ints > 0
                && doubles > 0
                && items.non_null().keys().all(|k| ["int", "long", "double"].contains(k))
            {
                mixed.push((path.to_owned(), ints, doubles, true));
            }
        }
    });
    let raw = super::anomalies::raw_outliers(&c.anomalies);
    if mixed.is_empty() && raw.is_empty() {
        return;
    }
    let _ = writeln!(out, "### Migrations\n");
    for (field, lengths) in raw {
        let first = lengths.outliers.last().map_or(lengths.max, |(n, _)| *n);
        let t = super::anomalies::threshold(lengths.normal_max, first);
        let ids: Vec<String> = lengths.outliers.iter().map(|(_, id)| format!("`{}`", md(id))).collect();
        let overflow = format!("{}_overflow", c.name);
        let flag = format!("{field}_overflowed");
        let count = format!("{field}_count");
        let _ = writeln!(
            out,
            "- `{f}`: an outlier array ({n} past {l}: {ids}), but `models.rs` keeps it a plain array: `#[outlier(threshold = {t}, overflow = \"{o}\", flag = {flag}, count = {count})]` would give the validator `maxItems: {t}`, which refuses those documents, and a `bool` flag no stored document holds. Migrate first, then run `infer` again: it writes the attribute once the documents have docshape's outlier shape. The migration: `db.getCollection({oe}).updateMany({{}}, [{{$set: {{{flag}: false, {count}: {{$size: \"${f}\"}}}}}}])`; then for each document holding more than {t}, keep its first {t} items (`$slice`), insert the rest into `{o}` as documents `{{_id: {{parent: <its _id>, seq: 0, 1, ...}}, parent: <its _id>, count: <n>, items: [<at most {t}>]}}` in order, and set `{flag}: true` (its `{count}` stays the full length).",
            f = md(field),
            n = share(lengths.over, lengths.holders, c.sampled >= c.estimated_count),
            l = thousands(super::LONG_ARRAY as u64),
            ids = ids.join(", "),
            o = md(&overflow),
            oe = escaped(&c.name),
            flag = md(&flag),
            count = md(&count),
        );
    }
    if mixed.is_empty() {
        let _ = writeln!(out);
        return;
    }
    let scope = if c.sampled < c.estimated_count {
        format!("in the {} sampled of about {} documents", thousands(c.sampled), thousands(c.estimated_count))
    } else {
        format!("in all {} documents", thousands(c.sampled))
    };
    for (path, ints, doubles, elements) in mixed {
        let what = if elements { "array elements" } else { "values" };
        let share = ints as f64 * 100.0 / (ints + doubles) as f64;
        let convert = format!(
            "`db.getCollection({}).updateMany({{{}: {{$type: [\"int\", \"long\"]}}}}, [{{$set: {{{}: {{$toDouble: \"${}\"}}}}}}])`",
            escaped(&c.name),
            escaped(&path),
            escaped(&path),
            md(&path)
        );
        if elements {
            let _ = writeln!(
                out,
                "- `{}`: {} of {} {what} ({share:.0}%) {scope} are integers, the rest doubles; the model reads them as `f64`, whose validator (`items: {{bsonType: \"double\"}}`) refuses the integers already stored: migrate them before `sync` (convert each element with `$map` and `$toDouble`), or give the elements a type that takes both.",
                md(&path),
                thousands(ints),
                thousands(ints + doubles)
            );
        } else {
            let _ = writeln!(
                out,
                "- `{}`: {} of {} {what} ({share:.0}%) {scope} are integers, the rest doubles. A validator of `bsonType: \"double\"` would refuse every one of those integers, so the model takes the wider type: `f64` with `#[validate(bson_type = \"number\")]` (every numeric type). To keep doubles alone, migrate first ({convert}) and then drop the `bson_type`.",
                md(&path),
                thousands(ints),
                thousands(ints + doubles),
            );
        }
    }
    let _ = writeln!(out);
}

/// Visits every field under `node` with its dotted path (array elements' fields under
/// the array's path, as MongoDB's queries name them).
pub(super) fn walk(node: &Node, prefix: &str, f: &mut dyn FnMut(&str, &Node)) {
    for (name, child) in &node.fields {
        let path = if prefix.is_empty() { name.clone() } else { format!("{prefix}.{name}") };
        f(&path, child);
        walk(child, &path, f);
        if let Some(items) = &child.items {
            walk(items, &path, f);
        }
    }
}

/// One collection's section; `refs` are its fields `models.rs` writes as `Ref<T>`.
/// `copies` those it declares `#[denormalized(...)]`.
pub(super) fn collection(
    out: &mut String,
    c: &CollectionShape,
    refs: &BTreeMap<String, String>,
    copies: &Copies,
    plain: bool,
    all: &[CollectionShape],
) {
    let _ = writeln!(out, "## `{}`\n", md(&c.name));
    let _ = writeln!(
        out,
        "Sampled {} of about {} documents (`$sample`); the largest was {} bytes.\n",
        thousands(c.sampled),
        thousands(c.estimated_count),
        thousands(c.largest_bytes as u64)
    );
    let _ = writeln!(out, "| field | coverage | types |\n|---|---|---|");
    rows(out, &c.root, "", c.sampled);
    let _ = writeln!(out);
    let _ = writeln!(out, "Indexes besides `_id_`: {}.\n", c.indexes.len());
    for index in &c.indexes {
        let _ =
            writeln!(out, "- `{}`", md(&Bson::Document(index.clone()).into_relaxed_extjson().to_string()));
    }
    if !c.indexes.is_empty() {
        let _ = writeln!(out);
    }
    if let Some(w) = &c.workload {
        report_workload(out, c, w);
    }
    if let Some(d) = c.discriminator() {
        let _ = writeln!(
            out,
            "### Document types
"
        );
        let written = match super::patterns::polymorphic(c) {
            _ if plain => "`--plain` was given: `models.rs` keeps one struct, every field an `Option` where some types lack it, and proposes the enum in a comment.".to_owned(),
            Some(Ok(_)) => format!(
                "`models.rs` writes it: `#[serde(tag = \"{}\")]` on an enum with one variant per value, each with the fields a second sample of its documents held (typed from those documents alone), so each type is validated on its own (one `anyOf` branch per type, its tag pinned) and every stored document reads into its variant. Indexes and rows on the enum name fields every type stores; a row naming another stays a comment until it says its `variant = ...`.",
                md(&d.field)
            ),
            Some(Err(why)) => format!("`models.rs` keeps one struct and proposes the enum in a comment: {}.", md(&why)),
            None => String::new(),
        };
        let _ = writeln!(
            out,
            "`{}` looks like a discriminator: its values tell documents of different shapes apart, a polymorphic model (the guide's chapter `docshape::guide::polymorphic`). {written}\n",
            md(&d.field),
        );
        let _ = writeln!(out, "| `{}` | documents | fields every one has |\n|---|---|---|", md(&d.field));
        for (value, n, own) in &d.variants {
            let own: Vec<String> = own.iter().map(|f| format!("`{}`", md(f))).collect();
            let _ = writeln!(out, "| `{}` | {} | {} |", md(value), thousands(*n), own.join(", "));
        }
        let _ = writeln!(out);
    }
    report_tenant(out, c, plain);
    report_outliers(out, c, all, plain);
    report_bucket(out, c, plain);
    report_links(out, c, refs, copies);
    report_validator(out, c);
    report_migrations(out, c);
    let found = c.anti_patterns();
    let _ = writeln!(out, "### Anti-patterns\n");
    if found.is_empty() {
        let _ = writeln!(out, "None seen in the sample.\n");
    }
    for line in found {
        let _ = writeln!(out, "- {line}");
    }
    let _ = writeln!(out);
}

fn rows(out: &mut String, node: &Node, prefix: &str, parent: u64) {
    for (name, child) in &node.fields {
        let path = if prefix.is_empty() { name.clone() } else { format!("{prefix}.{name}") };
        let share = if parent == 0 { 0.0 } else { child.seen as f64 * 100.0 / parent as f64 };
        let mut types = distribution(&child.kinds);
        if let Some(items) = &child.items {
            types.push_str(&format!("; elements: {}", distribution(&items.kinds)));
        }
        if child.opaque {
            types.push_str("; not followed (too many names or too deep)");
        }
        let _ = writeln!(
            out,
            "| `{}` | {:.0}% ({} of {}) | {} |",
            md(&path),
            share,
            child.seen,
            parent,
            md(&types)
        );
        rows(out, child, &path, child.kinds.get("object").copied().unwrap_or(0));
        if let Some(items) = &child.items {
            rows(out, items, &path, items.kinds.get("object").copied().unwrap_or(0));
        }
    }
}

/// Pairs (prefix, longer) of plain indexes (no option that changes what they hold)
/// whose keys are the first keys of another.
fn redundant_prefixes(indexes: &[Document]) -> Vec<(String, String)> {
    let plain = |i: &Document| {
        !["unique", "sparse", "partialFilterExpression", "expireAfterSeconds", "collation"]
            .iter()
            .any(|k| i.get(*k).is_some_and(|v| v != &Bson::Boolean(false)))
    };
    let keys = |i: &Document| -> Vec<(String, String)> {
        i.get_document("key")
            .map(|k| k.iter().map(|(f, d)| (f.clone(), d.to_string())).collect())
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    for a in indexes.iter().filter(|i| plain(i)) {
        let ka = keys(a);
        let longer = indexes.iter().find(|b| {
            let kb = keys(b);
            !ka.is_empty() && ka.len() < kb.len() && kb[..ka.len()] == ka[..]
        });
        if let Some(b) = longer {
            out.push((
                a.get_str("name").unwrap_or("").to_owned(),
                b.get_str("name").unwrap_or("").to_owned(),
            ));
        }
    }
    out
}
