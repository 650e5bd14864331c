//! The Rust source: a `#[derive(Model)]` struct per collection, `#[derive(Embedded)]`
//! types for its sub-documents, its indexes as `#[index(...)]`, every name from the
//! database escaped.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use docshape::bson::{Bson, Document};

use super::indexes::indexes;
pub(super) use super::names::{key_path, pascal, raw_string, rust_ident, singular, storable};
use super::patterns;
use super::server;
use super::workload::access_rows;
use super::{distribution, escaped, CollectionShape, Node, LONG_ARRAY, MAX_DEPTH, MAX_FIELDS};

/// The source being written: finished items, the names taken, the bson types used.
#[derive(Default)]
pub(super) struct Gen {
    pub(super) items: Vec<String>,
    taken: BTreeSet<String>,
    pub(super) imports: BTreeSet<&'static str>,
    /// Whether an embedded type was written (and `Embedded` must be imported).
    pub(super) embedded: bool,
    /// The server validator's constraints the last model did not keep, as
    /// `path: value` (for the report).
    pub(super) gaps: Vec<String>,
    /// Keep the plain form (`InferOptions::plain`).
    pub(super) plain: bool,
    /// Whether the model being written read every document of its collection: only
    /// then do the values seen bound the field (`allowed`).
    exact: bool,
    /// Every collection's model name, chosen before any model is written so that a
    /// reference can name a model written later.
    pub(super) models: std::collections::BTreeMap<String, String>,
    /// The model being written's top-level fields that become `Ref<T>`: field, `T`.
    pub(super) refs: std::collections::BTreeMap<String, String>,
    /// Whether a `Ref<T>` was written (and `Ref` must be imported).
    pub(super) uses_ref: bool,
    /// The model being written's copies written as `#[denormalized(...)]`: field, the
    /// attribute's arguments and what the comment above it says of stale copies.
    pub(super) copies: std::collections::BTreeMap<String, (String, String)>,
    /// The model being written's tenant field (stored name), when it declares one: it
    /// stays its plain type, with no `allowed` from the data (a tenant's values grow
    /// with the customers) and no `Ref<T>`.
    pub(super) tenant: Option<String>,
    /// A top-level field the fields being written leave out: a polymorphic model's tag,
    /// which serde writes from the variant.
    pub(super) skip: Option<String>,
    /// The model being written's arrays already in docshape's outlier shape, by field.
    pub(super) outliers: std::collections::BTreeMap<String, patterns::OutlierFinding>,
}

/// Type names the generated file imports or the prelude holds: never a model's name.
pub(super) const RESERVED_TYPES: &[&str] = &[
    "Bson",
    "Document",
    "DateTime",
    "ObjectId",
    "Binary",
    "Timestamp",
    "Decimal128",
    "Serialize",
    "Deserialize",
    "Model",
    "Embedded",
    "Option",
    "Vec",
    "String",
    "Box",
    "Result",
    "Some",
    "None",
    "Ok",
    "Err",
    "Self",
    "Ref",
];

pub(super) const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern", "false",
    "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return",
    "self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where", "while",
    "abstract", "become", "box", "do", "final", "macro", "override", "priv", "typeof", "unsized", "virtual",
    "yield", "try", "gen", "union",
];

/// A field's type as written, and what the reader should know about it.
pub(super) struct Typed {
    pub(super) ty: String,
    /// Holds sub-documents (an embedded type or `Document`): an array of it needs a bound.
    document: bool,
    pub(super) notes: Vec<String>,
}

impl Gen {
    /// A source keeping the plain form or not (`InferOptions::plain`).
    pub(super) fn new(plain: bool) -> Self {
        Gen { plain, ..Gen::default() }
    }

    /// Names every collection's model, in the order they are written.
    pub(super) fn name_models(&mut self, collections: &[CollectionShape]) {
        for c in collections {
            let name = self.type_name(&singular(&pascal(&c.name)));
            self.models.insert(c.name.clone(), name);
        }
    }

    /// The fields of `c` written as `Ref<T>`: a reference found by looking sampled
    /// values up, whose values are of exactly the kind of the target's `_id` (then
    /// `Ref<T>` stores, reads and validates them as they are). A field whose kind
    /// differs (an `int` field referencing `long` ids) stays as it is: the validator
    /// of `T`'s `_id` would refuse its documents.
    pub(super) fn find_refs(&mut self, c: &CollectionShape, all: &[CollectionShape]) {
        self.refs.clear();
        self.copies.clear();
        if self.plain {
            return;
        }
        for link in &c.links {
            let Some(target) = all.iter().find(|t| t.name == link.target) else { continue };
            let (Some(field), Some(id)) = (c.root.field(&link.field), target.root.field("_id")) else {
                continue;
            };
            let kinds = field.non_null();
            let same = kinds.len() == 1
                && kinds.keys().eq(id.non_null().keys())
                && ["objectId", "int", "long"].iter().any(|k| kinds.contains_key(k));
            if let (true, Some(name)) = (same, self.models.get(&link.target)) {
                self.refs.insert(link.field.clone(), name.clone());
                let name = name.clone();
                self.find_copies(c, target, link, &name);
            }
        }
    }

    /// The copies beside a reference written as `Ref<T>` that become
    /// `#[denormalized(...)]`: a scalar in every document, never null, of the one kind
    /// of a source field in every document of `T` (the derive wants the copy's type to
    /// be exactly the source's). `refresh = "sync"` when an index already leads with
    /// the reference (the derive wants one, so that a refresh finds the copies without
    /// a scan), else `refresh = "never"` and the report says which index to add.
    fn find_copies(&mut self, c: &CollectionShape, target: &CollectionShape, link: &super::Link, name: &str) {
        let complete = |node: &Node, n: u64| {
            let kinds = node.non_null();
            node.seen == n
                && !node.kinds.contains_key("null")
                && kinds.len() == 1
                && ["string", "int", "long", "objectId"].iter().any(|k| kinds.contains_key(k))
        };
        let indexed = c.indexes.iter().any(|i| {
            i.get_document("key").ok().and_then(|k| k.keys().next()).is_some_and(|k| *k == link.field)
                && !i.contains_key("partialFilterExpression")
        });
        for copy in &link.copies {
            let (Some(mine), Some(theirs)) = (c.root.field(&copy.field), target.root.field(&copy.source))
            else {
                continue;
            };
            let plain = |n: &str| storable(n) && rust_ident(n) == n;
            if !complete(mine, c.sampled)
                || !complete(theirs, target.sampled)
                || mine.non_null().keys().ne(theirs.non_null().keys())
                || !plain(&copy.source)
            {
                continue;
            }
            let refresh = if indexed { "sync" } else { "never" };
            let args = format!(
                "from = \"{name}::{}\", via = \"{}\", refresh = \"{refresh}\"",
                copy.source, link.field
            );
            let scope = if copy.exact { "documents" } else { "sampled documents" };
            let stale = if copy.stale > 0 {
                format!(
                    ", stale in {} of {} {scope} (refresh them first: INFERRED.md)",
                    copy.stale, copy.compared
                )
            } else {
                format!(", equal in all {} {scope}", copy.compared)
            };
            self.copies.insert(copy.field.clone(), (args, stale));
        }
    }

    pub(super) fn type_name(&mut self, wanted: &str) -> String {
        let base = if wanted.is_empty() { "Inferred".to_owned() } else { wanted.to_owned() };
        let mut name = base.clone();
        let mut n = 2;
        while self.taken.contains(&name) || RESERVED_TYPES.contains(&name.as_str()) {
            name = format!("{base}{n}");
            n += 1;
        }
        self.taken.insert(name.clone());
        name
    }

    pub(super) fn model(&mut self, c: &CollectionShape, all: &[CollectionShape]) {
        let name = match self.models.get(&c.name) {
            Some(name) => name.clone(),
            None => self.type_name(&singular(&pascal(&c.name))),
        };
        // The patterns written as attributes, unless `--plain`: a polymorphic model
        // when a discriminator's types can be told apart, else a tenant when every
        // index leads with one field.
        let polymorphic = if self.plain { None } else { patterns::polymorphic(c).and_then(Result::ok) };
        let tenant = if self.plain {
            None
        } else {
            patterns::tenant(c, polymorphic.is_some()).filter(|t| t.refused.is_none())
        };
        let bucket =
            if self.plain || polymorphic.is_some() { None } else { patterns::bucket(c).and_then(Result::ok) };
        self.tenant = tenant.as_ref().map(|t| t.field.clone());
        self.outliers = if self.plain || polymorphic.is_some() {
            Default::default()
        } else {
            patterns::outliers(c, all).into_iter().map(|f| (f.array.clone(), f)).collect()
        };
        self.find_refs(c, all);
        if polymorphic.is_some() {
            // A variant's fields stay plain: references and copies are proposed on
            // structs only.
            self.refs.clear();
            self.copies.clear();
        }
        let (index_attrs, index_notes, budget, plain) = indexes(c);
        let mut head = String::new();
        let _ = writeln!(
            head,
            "/// The collection {}: {} of about {} documents sampled.",
            escaped(&c.name),
            c.sampled,
            c.estimated_count
        );
        for note in &index_notes {
            let _ = writeln!(head, "// {note}");
        }
        match (&polymorphic, c.discriminator()) {
            (Some(d), _) => {
                let _ = writeln!(
                    head,
                    "// {} tells {} document types apart (INFERRED.md): one variant per value, each with the fields its documents hold; `infer --plain` writes one struct",
                    escaped(&d.field),
                    d.variants.len()
                );
            }
            (None, Some(d)) => {
                if let Some(Err(why)) = patterns::polymorphic(c).filter(|_| !self.plain) {
                    let _ = writeln!(
                        head,
                        "// not written as a polymorphic model: {}",
                        why.replace(['\n', '\r'], " ")
                    );
                }
                polymorphic_proposal(&mut head, c, &name, &d);
            }
            (None, None) => {}
        }
        if let Some(t) = &tenant {
            let _ = writeln!(
                head,
                "// every index but `_id_` ({} of them, TTL aside) leads with {}: the tenant, which every row filters on first (INFERRED.md); `infer --plain` leaves it off",
                t.indexes,
                escaped(&t.field)
            );
        }
        if bucket.is_some() {
            let _ = writeln!(
                head,
                "// bucket documents in docshape's shape (INFERRED.md): `#[bucket]` appends and reads them; `infer --plain` writes a plain struct"
            );
        }
        let _ = writeln!(head, "#[derive(Debug, Clone, Serialize, Deserialize, Model)]");
        if let Some(d) = &polymorphic {
            let _ = writeln!(head, "#[serde(tag = {})]", escaped(&d.field));
        }
        let mut options = vec![format!("collection = {}", escaped(&c.name))];
        options.extend(tenant.as_ref().map(|t| format!("tenant = {}", t.field)));
        // The server's level and action, kept: a sync must not make them stricter
        // (refusing stored documents) or looser.
        options.extend(server::model_options(c.validation_level.as_deref(), c.validation_action.as_deref()));
        options.extend(budget.map(|n| format!("max_indexes = {n}")));
        let _ = writeln!(head, "#[model({})]", options.join(", "));
        let common = polymorphic.as_ref().map(|d| patterns::common_fields(c, d));
        for row in access_rows(c, &plain, self.tenant.as_deref(), common.as_ref()) {
            match row {
                Ok(attribute) => {
                    let _ = writeln!(head, "{attribute}");
                }
                Err(comment) => {
                    let _ = writeln!(head, "// {comment}");
                }
            }
        }
        for attr in &index_attrs {
            let _ = writeln!(head, "{attr}");
        }
        let schema = c.validator.as_ref().and_then(|v| v.get_document("$jsonSchema").ok());
        let properties = schema.and_then(|s| s.get_document("properties").ok());
        self.gaps.clear();
        self.exact = c.sampled > 0 && c.sampled >= c.estimated_count;
        if let Some(d) = &polymorphic {
            let body = self.variants(c, &name, d);
            self.items.push(head + &body);
        } else if let Some(b) = &bucket {
            self.bucket_struct(c, &name, head, b);
        } else {
            let fields = self.structure(&name, head, &c.root, c.sampled, Some(properties));
            self.top_level_gaps(c, &fields);
        }
        self.tenant = None;
        self.outliers.clear();
    }

    /// The server validator's constraints outside its properties that the model does
    /// not keep: other query operators, a `required` name the model may leave out,
    /// object-level keywords.
    fn top_level_gaps(&mut self, c: &CollectionShape, fields: &[(String, bool)]) {
        let Some(validator) = &c.validator else { return };
        for (key, value) in validator {
            let Bson::Document(schema) = value else {
                self.gaps.push(format!("{key}: {value}"));
                continue;
            };
            if key != "$jsonSchema" {
                self.gaps.push(format!("{key}: {value}"));
                continue;
            }
            for (k, v) in schema {
                match (k.as_str(), v) {
                    ("bsonType", Bson::String(s)) if s == "object" => {}
                    ("description" | "title" | "properties", _) => {}
                    ("required", Bson::Array(names)) => {
                        for name in names {
                            let always = fields
                                .iter()
                                .any(|(f, required)| Some(f.as_str()) == name.as_str() && *required);
                            if !always {
                                self.gaps.push(format!(
                                    "$jsonSchema.required: {name} (the model may leave it out)"
                                ));
                            }
                        }
                    }
                    _ => self.gaps.push(format!("$jsonSchema.{k}: {v}")),
                }
            }
            let Ok(properties) = schema.get_document("properties") else { continue };
            for (name, property) in properties {
                if !fields.iter().any(|(f, _)| f == name) {
                    self.gaps.push(format!(
                        "$jsonSchema.properties.{name}: {property} (no sampled document holds `{name}`)"
                    ));
                }
            }
        }
    }

    /// Writes the struct `name` for the fields of `node`, whose values were seen as
    /// sub-documents `parent` times, after `head` (its attributes).
    /// `model`: for a model, the `properties` of the server's `$jsonSchema`, if any
    /// (`None` for an embedded type).
    fn structure(
        &mut self,
        name: &str,
        head: String,
        node: &Node,
        parent: u64,
        model: Option<Option<&Document>>,
    ) -> Vec<(String, bool)> {
        let (lines, written) = self.field_lines(name, node, parent, model);
        let mut body = head;
        let _ = writeln!(body, "pub struct {name} {{");
        body.push_str(&lines);
        body.push_str("}\n");
        self.items.push(body);
        written
    }

    /// The fields of `node` as a struct's body lines (four spaces in, `pub`), and
    /// which were written (stored name, in every document). A polymorphic model's
    /// variant takes the same lines, indented once more and without `pub`.
    pub(super) fn field_lines(
        &mut self,
        name: &str,
        node: &Node,
        parent: u64,
        model: Option<Option<&Document>>,
    ) -> (String, Vec<(String, bool)>) {
        let properties = model.flatten();
        let mut written = Vec::new();
        let model = model.is_some();
        let mut body = String::new();
        let mut idents = BTreeSet::new();
        if model {
            idents.insert("id".to_owned());
        }
        let mut has_id = false;
        for (field, child) in &node.fields {
            if model && self.skip.as_deref() == Some(field.as_str()) {
                continue;
            }
            let is_tenant = model && self.tenant.as_deref() == Some(field.as_str());
            if !storable(field) {
                let _ = writeln!(
                    body,
                    "    // left out: the field {} ({} values), a name MongoDB cannot query (`.`, a leading `$`, or empty); serde ignores it on read",
                    escaped(field),
                    child.seen
                );
                continue;
            }
            let ident = if model && field == "_id" {
                has_id = true;
                "id".to_owned()
            } else {
                let mut ident = rust_ident(field);
                let base = ident.clone();
                let mut n = 2;
                while idents.contains(&ident) {
                    ident = format!("{base}_{n}");
                    n += 1;
                }
                ident
            };
            idents.insert(ident.clone());
            let hint = format!("{name}{}", pascal(field));
            let mut typed = self.field_type(child, &hint);
            let missing = child.seen < parent;
            let nullable = child.kinds.contains_key("null");
            let share = if parent == 0 { 0.0 } else { child.seen as f64 * 100.0 / parent as f64 };
            let _ = writeln!(
                body,
                "    // {}: in {} of {} ({share:.0}%); {}",
                escaped(field),
                child.seen,
                parent,
                distribution(&child.kinds)
            );
            for note in &typed.notes {
                let _ = writeln!(body, "    // {note}");
            }
            if let Some(proposal) = proposal(child) {
                let _ = writeln!(body, "    // proposed (observed, not enforced): #[validate({proposal})]");
            }
            let declared = properties.and_then(|p| p.get_document(field).ok());
            // Integers and doubles in one field: a validator of doubles would refuse the
            // integers stored, so the field takes any number (INFERRED.md says how many
            // and the migration that would allow `double` alone).
            let kinds = child.non_null();
            let widened = typed.ty == "f64"
                && kinds.contains_key("double")
                && (kinds.contains_key("int") || kinds.contains_key("long"));
            let mut validate = Vec::new();
            if widened {
                validate.push("bson_type = \"number\"".to_owned());
            }
            if let Some(schema) = declared {
                let (parts, kept) = server::from_validator(schema, &typed.ty);
                if let Some(parts) = parts {
                    let _ = writeln!(body, "    // enforced by the server's $jsonSchema validator already");
                    validate.push(parts);
                }
                server::property_gaps(
                    &format!("$jsonSchema.properties.{field}"),
                    schema,
                    &typed.ty,
                    typed.document,
                    widened,
                    &kept,
                    &mut self.gaps,
                );
            }
            // A string of a handful of values, in every document (read whole): the
            // values are the field's domain; `allowed` keeps it so, and every stored
            // document still passes.
            let server_enum = declared.is_some_and(|s| s.contains_key("enum"));
            if is_tenant {
                let _ = writeln!(
                    body,
                    "    // the tenant: every index leads with it (INFERRED.md); no `allowed` from the data, a tenant's values grow with its customers"
                );
            }
            if let (false, true, false, false, Some(values)) =
                (self.plain, self.exact, server_enum, is_tenant, low_cardinality(child))
            {
                let _ = writeln!(
                    body,
                    "    // every stored value is one of these {} (all documents read): `allowed` keeps the domain; `infer --plain` leaves a plain String",
                    values.len()
                );
                validate.push(format!("allowed = [{}]", values.join(", ")));
            }
            // A reference found by looking values up: `Ref<T>` stores the same value and
            // validates it as `T`'s `_id` (a field the server constrains keeps its type).
            let target =
                if model && validate.is_empty() && !is_tenant { self.refs.get(field).cloned() } else { None };
            if let Some(target) = target {
                let _ = writeln!(
                    body,
                    "    // holds `{target}` ids (sampled values looked up there): `Ref<{target}>`; `infer --plain` leaves the raw id"
                );
                typed.ty = format!("Ref<{target}>");
                self.uses_ref = true;
            }
            // A copy of the referenced document's field: declared, so that docshape's
            // writers keep it in step (the stale ones are counted in INFERRED.md).
            let copy = if model && validate.is_empty() { self.copies.get(field).cloned() } else { None };
            if let Some((args, stale)) = copy {
                let _ = writeln!(
                    body,
                    "    // a copy of the referenced document's field{stale}: `#[denormalized]`; `infer --plain` leaves it undeclared"
                );
                let _ = writeln!(body, "    #[denormalized({args})]");
            }
            if !validate.is_empty() {
                let _ = writeln!(body, "    #[validate({})]", validate.join(", "));
            }
            if let Some(o) = self.outliers.get(field).filter(|_| model) {
                let _ = writeln!(
                    body,
                    "    // an outlier array in docshape's shape already: {} document(s) overflowed into {} (flag `{}`); `infer --plain` leaves a plain array",
                    o.overflowed,
                    escaped(&o.overflow),
                    o.flag
                );
                let mut args = vec![
                    format!("threshold = {}", o.threshold),
                    format!("overflow = {}", escaped(&o.overflow)),
                    format!("flag = {}", o.flag),
                ];
                args.extend(o.count.as_ref().map(|c| format!("count = {c}")));
                args.extend(o.per_doc.map(|n| format!("per_doc = {n}")));
                let _ = writeln!(body, "    #[outlier({})]", args.join(", "));
            }
            written.push((field.clone(), !missing));
            if *field != ident {
                let _ = writeln!(body, "    #[serde(rename = {})]", escaped(field));
            }
            if missing {
                let _ = writeln!(body, "    #[serde(default, skip_serializing_if = \"Option::is_none\")]");
            }
            let only_arrays = child.non_null().keys().eq(["array"].iter());
            if let (true, Some(items)) = (only_arrays, &child.items) {
                // docshape refuses an array of sub-documents without a bound.
                if self.element_is_document(items) {
                    let _ = writeln!(
                        body,
                        "    #[embed(max = {}, reason = \"TODO: the longest array sampled; say why it stays this small, or move the elements out\")]",
                        child.max_len.max(1)
                    );
                }
            }
            let ty = if missing || nullable { format!("Option<{}>", typed.ty) } else { typed.ty };
            let _ = writeln!(body, "    pub {ident}: {ty},");
        }
        if model && !has_id {
            // Every stored document has one; an empty sample shows none.
            self.imports.insert("Bson");
            let _ = writeln!(body, "    // no document sampled: the `_id`'s type is unknown");
            let _ = writeln!(body, "    #[serde(rename = \"_id\")]\n    pub id: Bson,");
        }
        (body, written)
    }

    fn element_is_document(&self, items: &Node) -> bool {
        let kinds = items.non_null();
        kinds.len() == 1 && kinds.contains_key("object")
    }

    /// The type of the values of `node` (null aside: the caller makes it an `Option`).
    pub(super) fn field_type(&mut self, node: &Node, hint: &str) -> Typed {
        let kinds = node.non_null();
        let plain = |s: &str| Typed { ty: s.to_owned(), document: false, notes: Vec::new() };
        let only = |k: &str| kinds.len() == 1 && kinds.contains_key(k);
        if kinds.is_empty() {
            self.imports.insert("Bson");
            return Typed {
                ty: "Bson".into(),
                document: false,
                notes: vec!["only null seen: the type is unknown".into()],
            };
        }
        if kinds.keys().all(|k| ["int", "long", "double"].contains(k)) {
            return match (kinds.contains_key("double"), kinds.contains_key("long")) {
                (false, false) => plain("i32"),
                (false, true) => plain("i64"),
                (true, _) if kinds.len() == 1 => plain("f64"),
                (true, _) => Typed {
                    ty: "f64".into(),
                    document: false,
                    notes: vec![format!(
                        "integers and doubles mixed ({}): read as f64, written back as doubles",
                        distribution(&node.kinds)
                    )],
                },
            };
        }
        let simple = [
            ("string", "String", None),
            ("bool", "bool", None),
            ("objectId", "ObjectId", Some("oid::ObjectId")),
            ("date", "DateTime", Some("DateTime")),
            ("decimal", "Decimal128", Some("Decimal128")),
            ("binData", "Binary", Some("Binary")),
            ("timestamp", "Timestamp", Some("Timestamp")),
        ];
        for (kind, ty, import) in simple {
            if only(kind) {
                if let Some(import) = import {
                    self.imports.insert(import);
                }
                return plain(ty);
            }
        }
        if only("object") {
            if node.opaque {
                self.imports.insert("Document");
                return Typed {
                    ty: "Document".into(),
                    document: true,
                    notes: vec![format!(
                        "a plain Document: more than {MAX_FIELDS} distinct names (a map keyed by data) or nested deeper than {MAX_DEPTH}"
                    )],
                };
            }
            let name = self.type_name(hint);
            let mut head = String::new();
            let _ = writeln!(head, "/// A sub-document, seen {} times.", node.kinds["object"]);
            self.embedded = true;
            let _ = writeln!(head, "#[derive(Debug, Clone, Serialize, Deserialize, Embedded)]");
            self.structure(&name, head, node, node.kinds["object"], None);
            return Typed { ty: name, document: true, notes: Vec::new() };
        }
        if only("array") {
            let Some(items) = &node.items else {
                self.imports.insert("Bson");
                return Typed {
                    ty: "Vec<Bson>".into(),
                    document: false,
                    notes: vec!["only empty arrays seen: the elements' type is unknown".into()],
                };
            };
            let element = self.field_type(items, &singular(hint));
            let ty = if items.kinds.contains_key("null") {
                format!("Vec<Option<{}>>", element.ty)
            } else {
                format!("Vec<{}>", element.ty)
            };
            let mut notes: Vec<String> =
                element.notes.into_iter().map(|n| format!("elements: {n}")).collect();
            notes.push(format!("arrays of up to {} elements", node.max_len));
            if node.long_arrays > 0 {
                notes.push(format!(
                    "{} array(s) past {LONG_ARRAY} elements: see INFERRED.md (an outlier array, or the elements in a collection of their own)",
                    node.long_arrays
                ));
            }
            if element.document && !items.is_struct() {
                notes.push("elements are plain Documents".into());
            }
            return Typed { ty, document: false, notes };
        }
        if let Some(mix) = self.scalar_mix(node, hint, &kinds) {
            return mix;
        }
        self.imports.insert("Bson");
        Typed {
            ty: "Bson".into(),
            document: false,
            notes: vec![format!("mixed types: {}", distribution(&node.kinds))],
        }
    }

    /// A clean mix, two to four kinds of scalars (a string or a number, say): an
    /// untagged enum with one variant per kind, integers and doubles being one number.
    /// serde tries the variants in order, and each takes only its own BSON type, so a
    /// value reads as the variant of its stored type (the validator is their `anyOf`).
    fn scalar_mix(
        &mut self,
        node: &Node,
        hint: &str,
        kinds: &std::collections::BTreeMap<&'static str, u64>,
    ) -> Option<Typed> {
        let number = match (kinds.contains_key("double"), kinds.contains_key("long")) {
            (true, _) => "f64",
            (false, true) => "i64",
            (false, false) => "i32",
        };
        let variants = [
            ("string", "Text", "String", None),
            ("number", "Number", number, None),
            ("bool", "Flag", "bool", None),
            ("objectId", "Id", "ObjectId", Some("oid::ObjectId")),
            ("date", "Date", "DateTime", Some("DateTime")),
            ("decimal", "Decimal", "Decimal128", Some("Decimal128")),
        ];
        let group =
            |k: &str| if ["int", "long", "double"].contains(&k) { "number".to_owned() } else { k.to_owned() };
        let groups: BTreeSet<String> = kinds.keys().map(|k| group(k)).collect();
        if !(2..=4).contains(&groups.len()) || !groups.iter().all(|g| variants.iter().any(|v| v.0 == g)) {
            return None;
        }
        let name = self.type_name(&format!("{hint}Value"));
        let mut body = String::new();
        let _ = writeln!(body, "/// The values of one field, stored as {}.", distribution(&node.kinds));
        let _ = writeln!(body, "#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Embedded)]");
        let _ = writeln!(body, "#[serde(untagged)]");
        let _ = writeln!(body, "pub enum {name} {{");
        for (kind, variant, ty, import) in variants {
            if groups.contains(kind) {
                if let Some(import) = import {
                    self.imports.insert(import);
                }
                let _ = writeln!(body, "    {variant}({ty}),");
            }
        }
        let _ = writeln!(body, "}}");
        self.items.push(body);
        self.embedded = true;
        let mut notes = vec![format!("mixed types ({}): one variant per type", distribution(&node.kinds))];
        if number == "f64" && kinds.keys().any(|k| *k == "int" || *k == "long") {
            notes.push("integers among the numbers are read as f64 and written back as doubles".into());
        }
        Some(Typed { ty: name, document: false, notes })
    }
}

/// The values of a string field of two to five short values, each seen, over ten
/// values at least, as escaped literals.
fn low_cardinality(node: &Node) -> Option<Vec<String>> {
    let kinds = node.non_null();
    let set = node.distinct.as_ref()?;
    let only_strings = kinds.len() == 1 && kinds.contains_key("string");
    (only_strings && node.seen >= 10 && (2..=5).contains(&set.len()))
        .then(|| set.iter().map(|v| escaped(v)).collect())
}

/// A `#[validate(...)]` proposal from what was seen, or `None`.
pub(super) fn proposal(node: &Node) -> Option<String> {
    let kinds = node.non_null();
    if kinds.len() == 1 && kinds.contains_key("string") {
        let mut parts = vec![format!("max_length = {}", node.max_chars)];
        if let Some(set) = node.distinct.as_ref().filter(|s| !s.is_empty() && node.seen >= 10) {
            let values: Vec<String> = set.iter().map(|v| escaped(v)).collect();
            parts.push(format!("allowed = [{}]", values.join(", ")));
        }
        return Some(parts.join(", "));
    }
    let numeric = !kinds.is_empty() && kinds.keys().all(|k| ["int", "long", "double"].contains(k));
    if let (true, Some((lo, hi))) = (numeric, node.range) {
        let show =
            |x: f64| if kinds.contains_key("double") { format!("{x:?}") } else { format!("{}", x as i64) };
        return Some(format!("minimum = {}, maximum = {}", show(lo), show(hi)));
    }
    if kinds.len() == 1 && kinds.contains_key("array") && node.items.is_some() {
        return Some(format!("max_items = {}", node.max_len));
    }
    None
}

/// A polymorphic model proposed in comments: the tag, one variant per value with the
/// fields every document of that value has. A proposal, not code: the struct below it
/// is what compiles, and the user decides (INFERRED.md lists the shapes).
fn polymorphic_proposal(head: &mut String, c: &CollectionShape, name: &str, d: &super::Discriminator) {
    let _ = writeln!(
        head,
        "// `{}` looks like a discriminator ({} values whose documents hold different fields):",
        d.field.replace(['\n', '\r'], " "),
        d.variants.len()
    );
    let _ = writeln!(head, "// a polymorphic model would validate each shape on its own, for example");
    let _ = writeln!(head, "//   #[derive(Debug, Clone, Serialize, Deserialize, Model)]");
    let _ = writeln!(head, "//   #[model(collection = {})]", escaped(&c.name));
    let _ = writeln!(head, "//   #[serde(tag = {})]", escaped(&d.field));
    let _ = writeln!(head, "//   pub enum {name}Kind {{");
    for (value, _, own) in &d.variants {
        let fields: Vec<String> = std::iter::once("_id".to_owned()).chain(own.iter().cloned()).collect();
        let fields: Vec<String> = fields.iter().map(|f| f.replace(['\n', '\r'], " ")).collect();
        let _ = writeln!(head, "//       #[serde(rename = {})]", escaped(value));
        let _ = writeln!(head, "//       {} {{ /* {} */ }},", pascal(value), fields.join(", "));
    }
    let _ = writeln!(head, "//   }}");
}
