//! `MODEL.md`: the collections as a Mermaid flowchart, which GitHub renders in place.
//!
//! Every fact comes from the registry: one cylinder per collection (a model's, or one
//! a model needs besides its own, like an outlier's overflow), its `#[embed]`ded types
//! inside its subgraph, references as solid arrows, `#[denormalized]` copies as dotted
//! arrows labelled with their refresh policy (and `max_stale`), an outlier's overflow as
//! a thick arrow, and buckets, time-series and polymorphic collections marked in their
//! node. Node ids are generated (`c0`, `c0_e1`), never taken from a name, and every
//! label is quoted and escaped ([`label`]), so no model, field or collection name can
//! change the diagram's syntax.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::core::denormalized::{CopySpec, Refresh};
use crate::core::relation::{Nested, Relation, RelationKind, Split, Variant};

/// The diagram's file name, among the artifacts.
pub const MODEL_FILE: &str = "MODEL.md";

/// One collection a model is stored in, as the diagram needs it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Collection<'a> {
    /// The collection's name.
    pub name: &'a str,
    /// The model's type name, without its module path.
    pub type_name: &'a str,
    /// The model's relations ([`crate::Model::RELATIONS`]).
    pub relations: &'a [Relation],
    /// The relations inside its embedded types ([`crate::Model::NESTED`]).
    pub nested: &'a [Nested],
    /// Every copy its documents hold, its own and those inside its embedded types.
    pub copies: Vec<&'a CopySpec>,
    /// A polymorphic model's variants.
    pub variants: &'a [Variant],
}

/// Escapes `text` for a double-quoted Mermaid label: the quote, the characters that
/// start an entity (`#`), HTML (`<`, `>`, `&`), a Markdown string (`` ` ``), a link
/// label (`|`) or a comment (`%`) are written as Mermaid entity codes, and a line
/// break or other control character as a space, so that a label always ends at its
/// closing quote and shows the text as written.
pub(crate) fn label(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '"' => out.push_str("#quot;"),
            '#' => out.push_str("#35;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '&' => out.push_str("#amp;"),
            '`' => out.push_str("#96;"),
            '|' => out.push_str("#124;"),
            '%' => out.push_str("#37;"),
            '\\' => out.push_str("#92;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// `5m`, `2h`, `1d`, `30s`: a duration as the `max_stale` attribute writes it.
fn duration_text(d: std::time::Duration) -> String {
    let s = d.as_secs();
    let ms = d.subsec_millis();
    if ms != 0 {
        format!("{}ms", d.as_millis())
    } else if s != 0 && s.is_multiple_of(86_400) {
        format!("{}d", s / 86_400)
    } else if s != 0 && s.is_multiple_of(3_600) {
        format!("{}h", s / 3_600)
    } else if s != 0 && s.is_multiple_of(60) {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}

/// A copy's refresh policy, as its edge says it.
fn refresh_text(refresh: Refresh) -> String {
    match refresh {
        Refresh::Never => "refresh never (snapshot at write)".to_owned(),
        Refresh::Sync => "refresh sync (same call as the source)".to_owned(),
        Refresh::Async { max_stale } => format!("refresh async, max_stale {}", duration_text(max_stale)),
    }
}

fn variant_text(v: Variant) -> String {
    format!(" ({}: {:?})", v.tag, v.value)
}

/// One relation found under a collection, with its path and the embedded node it
/// hangs from.
struct Placed<'a> {
    /// `items`, `comments.author`, with the variant when one holds it.
    path: String,
    /// The dotted path without the variant: the key of an embedded type's node.
    key: String,
    /// The path of the embedded type holding it (empty: the document itself).
    parent: String,
    relation: &'a Relation,
}

/// Every relation of `c`, its own then those inside its embedded types, depth first.
fn placed<'a>(c: &Collection<'a>) -> Vec<Placed<'a>> {
    fn walk<'a>(prefix: &str, variant: Option<Variant>, nested: &'a [Nested], out: &mut Vec<Placed<'a>>) {
        for n in nested {
            // A flattened sub-document or a variant adds no segment: its fields are
            // the parent's.
            let key = if n.field.is_empty() { prefix.to_owned() } else { join(prefix, n.field) };
            let variant = n.variant.or(variant);
            for r in n.relations {
                let path = join(&key, r.field);
                let shown = match variant {
                    Some(v) => format!("{path}{}", variant_text(v)),
                    None => path.clone(),
                };
                out.push(Placed { path: shown, key: path, parent: key.clone(), relation: r });
            }
            walk(&key, variant, n.nested, out);
        }
    }
    let mut out: Vec<Placed<'a>> = c
        .relations
        .iter()
        .map(|r| Placed {
            path: r.field.to_owned(),
            key: r.field.to_owned(),
            parent: String::new(),
            relation: r,
        })
        .collect();
    walk("", None, c.nested, &mut out);
    out
}

fn join(prefix: &str, field: &str) -> String {
    if prefix.is_empty() {
        field.to_owned()
    } else if field.is_empty() {
        prefix.to_owned()
    } else {
        format!("{prefix}.{field}")
    }
}

/// The array's bound as a label says it: ` ≤ 50`, or nothing.
fn bound_text(r: &Relation) -> String {
    r.bound.map(|b| format!(", ≤ {b}")).unwrap_or_default()
}

/// The Markdown file: a heading, a legend and the ```` ```mermaid ```` block.
pub(crate) fn model_file(collections: &[Collection<'_>], others: &[&str]) -> String {
    format!(
        "# Model\n\n\
         Generated from the models: one cylinder per collection, its `#[embed]`ded types \
         inside it, references as solid arrows, `#[denormalized]` copies as dotted arrows \
         with their refresh policy, an outlier's overflow as a thick arrow; buckets, \
         time-series and polymorphic collections are marked in their node.\n\n\
         ```mermaid\n{}```\n",
        flowchart(collections, others)
    )
}

/// The Mermaid flowchart of `collections` (in the order given) and of the `others`,
/// collections no model is stored in (an outlier's overflow).
pub(crate) fn flowchart(collections: &[Collection<'_>], others: &[&str]) -> String {
    let mut out = String::from("flowchart LR\n");
    // Every collection's node id, by name: the models', then the others', then any
    // collection an edge names that is not registered here.
    let mut ids: BTreeMap<&str, String> = BTreeMap::new();
    for (i, c) in collections.iter().enumerate() {
        ids.entry(c.name).or_insert_with(|| format!("c{i}"));
    }
    let overflow_of: BTreeMap<&str, (String, u64)> = collections
        .iter()
        .flat_map(|c| placed(c).into_iter().map(move |p| (c.name, p)))
        .filter_map(|(name, p)| match p.relation.split {
            Some(Split::Outlier { overflow, per_doc }) => {
                Some((overflow, (format!("{name}.{}", p.path), per_doc)))
            }
            _ => None,
        })
        .collect();
    let mut extra: BTreeSet<&str> = others.iter().copied().collect();
    extra.extend(overflow_of.keys().copied());
    for c in collections {
        for p in placed(c) {
            if p.relation.kind == RelationKind::Reference {
                extra.insert(p.relation.target);
            }
        }
        extra.extend(c.copies.iter().map(|s| s.source));
    }
    // Numbered among themselves only (see `other_id`).
    extra.retain(|name| !ids.contains_key(name));
    let mut classes: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut edges = String::new();
    for (i, c) in collections.iter().enumerate() {
        let id = format!("c{i}");
        let mut text = format!("{}<br/>{}", label(c.name), label(c.type_name));
        let relations = placed(c);
        for p in &relations {
            let r = p.relation;
            match (r.kind, r.split) {
                (RelationKind::Bucket, Some(Split::Bucket { series, per, cap })) => {
                    let mut mark = format!(
                        "bucket: {} per {} per {}{}",
                        p.path,
                        series,
                        per,
                        r.bound.map(|b| format!(", ≤ {b} per bucket")).unwrap_or_default()
                    );
                    if let Some(cap) = cap {
                        let _ = write!(mark, ", cap {cap}");
                    }
                    let _ = write!(text, "<br/>{}", label(&mark));
                    classes.entry("bucket").or_default().push(id.clone());
                }
                (RelationKind::TimeSeries, _) => {
                    let meta =
                        if r.target.is_empty() { String::new() } else { format!(", meta {}", r.target) };
                    let _ = write!(text, "<br/>{}", label(&format!("time-series: time {}{meta}", r.field)));
                    classes.entry("timeseries").or_default().push(id.clone());
                }
                _ => {}
            }
        }
        if let Some(first) = c.variants.first() {
            let values: Vec<&str> = c.variants.iter().map(|v| v.value).collect();
            let mark = format!("polymorphic on {}: {}", first.tag, values.join(", "));
            let _ = write!(text, "<br/>{}", label(&mark));
            classes.entry("polymorphic").or_default().push(id.clone());
        }
        let embeds: Vec<&Placed<'_>> =
            relations.iter().filter(|p| p.relation.kind == RelationKind::Embed).collect();
        if embeds.is_empty() {
            let _ = writeln!(out, "  {id}[(\"{text}\")]");
        } else {
            // The subgraph holds the document and its embedded types.
            let _ = writeln!(out, "  subgraph {id}_g[\"{}\"]", label(c.name));
            let _ = writeln!(out, "    direction TB");
            let _ = writeln!(out, "    {id}[(\"{text}\")]");
        }
        // Each embedded type's node, by the path of the field holding it.
        let mut embedded: BTreeMap<&str, String> = BTreeMap::new();
        for (j, p) in embeds.iter().enumerate() {
            let node = format!("{id}_e{j}");
            let _ = writeln!(out, "    {node}[\"{}\"]", label(p.relation.target));
            let from = embedded.get(p.parent.as_str()).cloned().unwrap_or_else(|| id.clone());
            let many = if p.relation.many { "[]" } else { "" };
            let text = format!("embeds {}{many}{}", p.path, bound_text(p.relation));
            let _ = writeln!(out, "    {from} ---|\"{}\"| {node}", label(&text));
            embedded.insert(p.key.as_str(), node);
        }
        if !embeds.is_empty() {
            let _ = writeln!(out, "  end");
        }
        let from_of = |p: &Placed<'_>| embedded.get(p.parent.as_str()).cloned().unwrap_or_else(|| id.clone());
        for p in &relations {
            let r = p.relation;
            if r.kind == RelationKind::Reference {
                let many = if r.many { "[]" } else { "" };
                let text = format!("references {}{many}{}", p.path, bound_text(r));
                let to = ids.get(r.target).cloned().unwrap_or_else(|| other_id(&extra, r.target));
                let _ = writeln!(edges, "  {} -->|\"{}\"| {to}", from_of(p), label(&text));
            }
            if let Some(Split::Outlier { overflow, per_doc }) = r.split {
                let text = format!(
                    "overflow of {}{}, then ≤ {per_doc} per document",
                    p.path,
                    r.bound.map(|b| format!(" past {b} embedded")).unwrap_or_default()
                );
                let to = ids.get(overflow).cloned().unwrap_or_else(|| other_id(&extra, overflow));
                let _ = writeln!(edges, "  {id} ==>|\"{}\"| {to}", label(&text));
            }
        }
        let mut drawn = BTreeSet::new();
        for s in &c.copies {
            // A copy may reach the list both as the model's and as a variant's.
            if !drawn.insert(s.key()) {
                continue;
            }
            let variant = s.variant.map(variant_text).unwrap_or_default();
            let text =
                format!("copies {}{variant} ← {}, {}", s.field, s.source_field, refresh_text(s.refresh));
            let to = ids.get(s.source).cloned().unwrap_or_else(|| other_id(&extra, s.source));
            let _ = writeln!(edges, "  {id} -.->|\"{}\"| {to}", label(&text));
        }
    }
    // The collections no model here is stored in.
    for name in &extra {
        let id = other_id(&extra, name);
        let text = match overflow_of.get(name) {
            Some((field, per_doc)) => {
                classes.entry("overflow").or_default().push(id.clone());
                format!(
                    "{}<br/>{}",
                    label(name),
                    label(&format!("outlier overflow of {field}, ≤ {per_doc} per document"))
                )
            }
            None if others.contains(name) => label(name),
            None => {
                classes.entry("external").or_default().push(id.clone());
                format!("{}<br/>no model in this program", label(name))
            }
        };
        let _ = writeln!(out, "  {id}[(\"{text}\")]");
    }
    out.push_str(&edges);
    for (class, style) in [
        ("bucket", "stroke-width:3px"),
        ("external", "stroke-dasharray:3 3"),
        ("overflow", "stroke-dasharray:6 3"),
        ("polymorphic", "stroke-width:3px,stroke-dasharray:8 2"),
        ("timeseries", "stroke-width:3px,stroke-dasharray:2 2"),
    ] {
        if let Some(nodes) = classes.get(class) {
            let _ = writeln!(out, "  classDef {class} {style}");
            let _ = writeln!(out, "  class {} {class}", nodes.join(","));
        }
    }
    out
}

/// The node id of a collection no model here is stored in: `x` and its rank among
/// them, so that it depends on the names only, not on the order they were met.
fn other_id(extra: &BTreeSet<&str>, name: &str) -> String {
    format!("x{}", extra.iter().position(|n| *n == name).unwrap_or(extra.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::denormalized::{Cleared, OnDelete};

    const fn relation(field: &'static str, kind: RelationKind, target: &'static str) -> Relation {
        Relation {
            field,
            kind,
            target,
            many: false,
            bound: None,
            refresh: None,
            via: None,
            reason: None,
            split: None,
        }
    }

    const fn copy(
        collection: &'static str,
        field: &'static str,
        source: &'static str,
        refresh: Refresh,
    ) -> CopySpec {
        CopySpec {
            collection,
            field,
            via: "user_id",
            arrays: &[],
            source,
            source_field: "name",
            source_tenant: None,
            refresh,
            reason: None,
            on_delete: OnDelete::Keep,
            null: Cleared::Null,
            variant: None,
        }
    }

    /// What Mermaid's flowchart lexer does with a line: the quoted labels, with the
    /// text between them. A label ends at the first `"`.
    fn split_quotes(line: &str) -> (Vec<&str>, Vec<&str>) {
        let parts: Vec<&str> = line.split('"').collect();
        let labels = parts.iter().skip(1).step_by(2).copied().collect();
        let syntax = parts.iter().step_by(2).copied().collect();
        (labels, syntax)
    }

    /// Undoes [`label`], for the test.
    fn unescape(text: &str) -> String {
        [
            ("#quot;", "\""),
            ("#35;", "#"),
            ("#lt;", "<"),
            ("#gt;", ">"),
            ("#amp;", "&"),
            ("#96;", "`"),
            ("#124;", "|"),
            ("#37;", "%"),
            ("#92;", "\\"),
        ]
        .iter()
        .fold(text.replace("<br/>", "\n"), |t, (code, c)| t.replace(code, c))
    }

    #[test]
    fn a_label_cannot_end_early_nor_hold_markup() {
        let hostile = "a\"] --> x[\"b | c`d` <b>e</b> #35; %% f;\ng\\";
        let escaped = label(hostile);
        for c in ['"', '<', '>', '`', '|', '\n', '%', '\\'] {
            assert!(!escaped.contains(c), "{c:?} in {escaped}");
        }
        assert_eq!(unescape(&escaped), hostile.replace('\n', " "));
        // A `#` of the text does not start an entity: it is one.
        assert_eq!(label("#quot;"), "#35;quot;");
    }

    #[test]
    fn hostile_names_stay_inside_their_labels() {
        const NAME: &str = "or\"ders]) --> z[(\"x`|%%<i>#";
        const TYPE: &str = "Ord<\"er\">";
        static RELATIONS: [Relation; 2] = [
            relation("us\"er", RelationKind::Reference, "cust\"omers\n"),
            Relation { many: true, bound: Some(5), ..relation("it|ems", RelationKind::Embed, "Line\"Item") },
        ];
        static COPY: CopySpec = copy(
            NAME,
            "user_\"name",
            "cust\"omers\n",
            Refresh::Async { max_stale: std::time::Duration::from_secs(300) },
        );
        let collections = [Collection {
            name: NAME,
            type_name: TYPE,
            relations: &RELATIONS,
            copies: vec![&COPY],
            ..Collection::default()
        }];
        let chart = flowchart(&collections, &["ex\"tra"]);
        let mut labels = Vec::new();
        for line in chart.lines() {
            let (found, syntax) = split_quotes(line);
            labels.extend(found.iter().map(|l| unescape(l)));
            // Outside the labels, only generated ids and Mermaid's own syntax.
            for s in syntax {
                assert!(
                    s.chars().all(|c| c.is_ascii_alphanumeric() || " _[]()|-.>=,:;".contains(c)),
                    "{s:?} in {line:?}\n{chart}"
                );
            }
        }
        for expected in [
            format!("{NAME}\n{TYPE}"),
            NAME.to_owned(),
            "Line\"Item".to_owned(),
            "embeds it|ems[], ≤ 5".to_owned(),
            "references us\"er".to_owned(),
            "cust\"omers \nno model in this program".to_owned(),
            "copies user_\"name ← name, refresh async, max_stale 5m".to_owned(),
            "ex\"tra".to_owned(),
        ] {
            assert!(labels.contains(&expected), "{expected:?} not among {labels:#?}");
        }
        // The node ids are generated: the subgraph, the model, its embedded type, the
        // two other collections.
        assert!(chart.contains("  subgraph c0_g[\""), "{chart}");
        assert!(chart.contains("    c0_e0[\"Line#quot;Item\"]"), "{chart}");
        assert!(chart.contains("  c0 -->|\"references us#quot;er\"| x0\n"), "{chart}");
        assert!(
            chart.contains("  c0 -.->|\"copies user_#quot;name ← name, refresh async, max_stale 5m\"| x0\n"),
            "{chart}"
        );
        assert!(chart.contains("  x1[(\"ex#quot;tra\")]\n"), "{chart}");
    }

    #[test]
    fn every_pattern_is_drawn_or_marked() {
        static USERS: [Relation; 1] = [Relation {
            many: true,
            bound: Some(1000),
            split: Some(Split::Outlier { overflow: "users_followers_overflow", per_doc: 500 }),
            ..relation("followers", RelationKind::Outlier, "ObjectId")
        }];
        static READINGS: [Relation; 2] = [
            Relation {
                many: true,
                bound: Some(60),
                split: Some(Split::Bucket { series: "sensor", per: "hour", cap: Some(120) }),
                ..relation("readings", RelationKind::Bucket, "Reading")
            },
            relation("author", RelationKind::Reference, "users"),
        ];
        static METRICS: [Relation; 1] = [relation("ts", RelationKind::TimeSeries, "host")];
        const CLICK: Variant = Variant { tag: "kind", value: "click" };
        static EVENT_NESTED: [Nested; 1] = [Nested {
            field: "",
            many: false,
            relations: &[relation("user", RelationKind::Reference, "users")],
            copies: &[],
            nested: &[],
            variant: Some(CLICK),
        }];
        static EVENT_VARIANTS: [Variant; 2] = [CLICK, Variant { tag: "kind", value: "view" }];
        static NEVER: CopySpec = copy("events", "user_name", "users", Refresh::Never);
        static SYNC: CopySpec = copy("events", "user_email", "users", Refresh::Sync);
        static ORDER_NESTED: [Nested; 1] = [Nested {
            field: "items",
            many: true,
            relations: &[
                relation("product", RelationKind::Reference, "products"),
                relation("gift", RelationKind::Embed, "Gift"),
            ],
            copies: &[],
            nested: &[],
            variant: None,
        }];
        static ORDERS: [Relation; 1] =
            [Relation { many: true, bound: Some(100), ..relation("items", RelationKind::Embed, "LineItem") }];
        let collections = [
            Collection {
                name: "events",
                type_name: "Event",
                nested: &EVENT_NESTED,
                copies: vec![&NEVER, &SYNC, &NEVER],
                variants: &EVENT_VARIANTS,
                ..Collection::default()
            },
            Collection { name: "metrics", type_name: "Metric", relations: &METRICS, ..Collection::default() },
            Collection {
                name: "orders",
                type_name: "Order",
                relations: &ORDERS,
                nested: &ORDER_NESTED,
                ..Collection::default()
            },
            Collection {
                name: "readings",
                type_name: "Series",
                relations: &READINGS,
                ..Collection::default()
            },
            Collection { name: "users", type_name: "User", relations: &USERS, ..Collection::default() },
        ];
        let chart = flowchart(&collections, &["users_followers_overflow"]);
        let expected = r#"flowchart LR
  c0[("events<br/>Event<br/>polymorphic on kind: click, view")]
  c1[("metrics<br/>Metric<br/>time-series: time ts, meta host")]
  subgraph c2_g["orders"]
    direction TB
    c2[("orders<br/>Order")]
    c2_e0["LineItem"]
    c2 ---|"embeds items[], ≤ 100"| c2_e0
    c2_e1["Gift"]
    c2_e0 ---|"embeds items.gift"| c2_e1
  end
  c3[("readings<br/>Series<br/>bucket: readings per sensor per hour, ≤ 60 per bucket, cap 120")]
  c4[("users<br/>User")]
  x0[("products<br/>no model in this program")]
  x1[("users_followers_overflow<br/>outlier overflow of users.followers, ≤ 500 per document")]
  c0 -->|"references user (kind: #quot;click#quot;)"| c4
  c0 -.->|"copies user_name ← name, refresh never (snapshot at write)"| c4
  c0 -.->|"copies user_email ← name, refresh sync (same call as the source)"| c4
  c2_e0 -->|"references items.product"| x0
  c3 -->|"references author"| c4
  c4 ==>|"overflow of followers past 1000 embedded, then ≤ 500 per document"| x1
  classDef bucket stroke-width:3px
  class c3 bucket
  classDef external stroke-dasharray:3 3
  class x0 external
  classDef overflow stroke-dasharray:6 3
  class x1 overflow
  classDef polymorphic stroke-width:3px,stroke-dasharray:8 2
  class c0 polymorphic
  classDef timeseries stroke-width:3px,stroke-dasharray:2 2
  class c1 timeseries
"#;
        assert_eq!(chart, expected, "\n{chart}");
        let file = model_file(&collections, &["users_followers_overflow"]);
        assert!(file.starts_with("# Model\n"), "{file}");
        assert!(file.ends_with(&format!("```mermaid\n{expected}```\n")), "{file}");
    }

    #[test]
    fn staleness_reads_as_the_attribute_writes_it() {
        let text = |s| refresh_text(Refresh::Async { max_stale: std::time::Duration::from_secs(s) });
        assert_eq!(text(30), "refresh async, max_stale 30s");
        assert_eq!(text(300), "refresh async, max_stale 5m");
        assert_eq!(text(7200), "refresh async, max_stale 2h");
        assert_eq!(text(86_400), "refresh async, max_stale 1d");
        assert_eq!(
            refresh_text(Refresh::Async { max_stale: std::time::Duration::from_millis(1500) }),
            "refresh async, max_stale 1500ms"
        );
    }
}
