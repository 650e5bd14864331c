//! The shape of the code, kept by a test: every `crate::...` path in runtime/src and
//! derive/src is read (from `use` trees and from paths written inline) and checked
//! against the layering rules. A failure names the file, the line and the rule.
//!
//! runtime: `core` imports nothing above it; `ops` import `core`; a pattern imports
//! `core`, never another pattern nor `ops`. lib.rs is the map and may name anything;
//! the public facades it defines (`docshape::denormalized`, `docshape::refs`, ...) count as
//! the layer they lead into, so a path through a facade is no way around the rules.
//!
//! derive: the driver (`driver.rs`) names every pattern; the shared layer (`common`),
//! the parsed model (`ast`, `attr`), the facts (`facts`) and the core rules (`model`, `validator`, `index`,
//! `access`, `polymorphic`) import no pattern; a pattern imports those, never another pattern.
//!
//! Inside `derive/src` and inside `runtime/src/core` no two modules import each other,
//! directly or through others (a module and its submodules count as one), and no
//! source file of either crate exceeds 800 lines.
//!
//! The tools (`cli/src`, crate `docshape-cli`; `testkit/src`, crate `docshape-testkit`)
//! stand outside docshape and on top of it: every module of theirs is in their table,
//! every `docshape::...` path they write starts with a name docshape's lib.rs makes
//! public (read from lib.rs itself), and of `docshape::__private` only the items listed
//! in [`TOOLS_PRIVATE`]. docshape does not depend on them: neither its manifest's
//! dependencies nor its or the derive's sources name them, but for the testkit in
//! docshape's `#[cfg(test)]` modules (a dev-dependency).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The layer a module of one crate belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layer {
    /// The crate root: may name anything.
    Root,
    /// The runtime's core, or the derive's shared layer and parsed model.
    Core,
    /// The runtime's operations on a database.
    Ops,
    /// A pattern, by name.
    Pattern(&'static str),
    /// A module of a tool crate (`docshape-cli`, `docshape-testkit`): above all of
    /// docshape, which it reaches through its public paths only.
    Tool,
    /// Not ruled on (tests support, feature-gated helpers outside the layers).
    Free,
}

/// One crate's rules: which layer each top-level name belongs to.
struct Crate {
    src: PathBuf,
    /// The first path segment after `crate::` (or the file's first directory), and its layer.
    layers: BTreeMap<&'static str, Layer>,
}

impl Crate {
    fn layer_of_name(&self, name: &str) -> Option<Layer> {
        self.layers.get(name).copied()
    }

    /// The layer of a file, from where it lives: `core/x.rs` is core,
    /// `patterns/bucket/append.rs` is the bucket pattern.
    fn layer_of_file(&self, file: &Path) -> Layer {
        let rel = file.strip_prefix(&self.src).unwrap();
        let parts: Vec<String> =
            rel.iter().map(|p| p.to_string_lossy().trim_end_matches(".rs").to_owned()).collect();
        if parts == ["lib"] {
            return Layer::Root;
        }
        match parts[0].as_str() {
            "patterns" if parts.len() > 1 => match self.layer_of_name(&parts[1]) {
                Some(l @ Layer::Pattern(_)) => l,
                _ => panic!("{}: a pattern folder with no entry in the layering table", rel.display()),
            },
            first => self
                .layer_of_name(first)
                .unwrap_or_else(|| panic!("{}: a module with no entry in the layering table", rel.display())),
        }
    }

    /// The layer a `crate::...` path leads into: through `crate::patterns::x`, or
    /// through a facade named at the root.
    fn layer_of_path(&self, segments: &[String]) -> Option<Layer> {
        let first = segments.first()?;
        if first == "patterns" {
            return segments.get(1).and_then(|p| self.layer_of_name(p));
        }
        self.layer_of_name(first)
    }
}

fn allowed(from: Layer, to: Layer) -> Result<(), &'static str> {
    use Layer::*;
    match (from, to) {
        (Root, _) | (Free, _) | (_, Free) | (_, Root) => Ok(()),
        // A tool crate's modules, among themselves; docshape's layers are not in its
        // `crate::` paths, and its `docshape::` paths are checked by `tool_violations`.
        (Tool, _) | (_, Tool) => Ok(()),
        (Core, Core) => Ok(()),
        (Core, Ops) | (Core, Pattern(_)) => Err("core imports nothing above it (ops, patterns)"),
        (Ops, Core) | (Ops, Ops) => Ok(()),
        (Ops, Pattern(_)) => Err("ops import core only; a pattern's descriptors reach ops through core"),
        (Pattern(_), Core) => Ok(()),
        (Pattern(_), Ops) => Err("a pattern imports core only, not ops"),
        (Pattern(a), Pattern(b)) if a == b => Ok(()),
        (Pattern(_), Pattern(_)) => Err(
            "no pattern imports another pattern: cross-pattern effects go through core (hooks, descriptors)",
        ),
    }
}

/// Every `crate::`, `super::` and `self::` path of a source text, with its 1-based
/// line: `use` trees expanded, inline paths (`crate::a::b(...)`) read as they stand;
/// comments and strings skipped. Relative paths keep their first segment (`super`,
/// `self`) for [`absolute`] to resolve.
fn crate_paths(source: &str) -> Vec<(usize, Vec<String>)> {
    paths_after(source, &["crate::", "super::", "self::"])
}

/// Every path of a source text that starts with one of `prefixes` (`crate::`, or
/// `docshape::` for a tool crate's paths into docshape), as [`crate_paths`] reads them:
/// the prefix dropped but for `super` and `self`.
fn paths_after(source: &str, prefixes: &[&'static str]) -> Vec<(usize, Vec<String>)> {
    let code = strip_comments_and_strings(source);
    let mut out = Vec::new();
    let bytes: Vec<char> = code.chars().collect();
    let mut line = 1;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == '\n' {
            line += 1;
            i += 1;
            continue;
        }
        let at_word_start =
            i == 0 || !(bytes[i - 1].is_alphanumeric() || bytes[i - 1] == '_' || bytes[i - 1] == ':');
        let prefix = prefixes.iter().copied().find(|p| code_at(&bytes, i, p));
        if let (true, Some(prefix)) = (at_word_start, prefix) {
            let start_line = line;
            let mut j = i + prefix.len();
            // A path, possibly ending in a `{...}` group (a use tree).
            let mut depth = 0;
            let mut text = String::new();
            while j < bytes.len() {
                let c = bytes[j];
                if c == '{' {
                    depth += 1;
                } else if c == '}' {
                    if depth == 0 {
                        break;
                    }
                    depth -= 1;
                } else if depth == 0 && !(c.is_alphanumeric() || c == '_' || c == ':') {
                    break;
                }
                if c == '\n' {
                    line += 1;
                }
                text.push(c);
                j += 1;
            }
            for mut path in expand_tree(&text) {
                if prefix == "super::" || prefix == "self::" {
                    path.insert(0, prefix.trim_end_matches(':').to_owned());
                }
                if !path.is_empty() {
                    out.push((start_line, path));
                }
            }
            i = j;
            continue;
        }
        i += 1;
    }
    out
}

/// A path as seen from the crate root: `super::x` in `patterns/outlier.rs` is
/// `patterns::x`; `self::x` in `patterns/bucket.rs` is `patterns::bucket::x`.
fn absolute(module: &[String], path: &[String]) -> Vec<String> {
    let mut base: Vec<String> = module.to_vec();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("self") => rest = &rest[1..],
        Some("super") => {
            while rest.first().map(String::as_str) == Some("super") {
                base.pop();
                rest = &rest[1..];
            }
        }
        _ => base.clear(),
    }
    base.extend(rest.iter().cloned());
    base
}

/// The module path of a file: `patterns/bucket/append.rs` is `patterns::bucket::append`;
/// `lib.rs` is the root; `x/mod.rs` is `x`.
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> =
        rel.iter().map(|p| p.to_string_lossy().trim_end_matches(".rs").to_owned()).collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

fn code_at(chars: &[char], i: usize, word: &str) -> bool {
    word.chars().enumerate().all(|(k, w)| chars.get(i + k) == Some(&w))
}

/// `a::{b, c::{d, e}}` -> `[a, b]`, `[a, c, d]`, `[a, c, e]`.
fn expand_tree(text: &str) -> Vec<Vec<String>> {
    let text: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    fn go(prefix: &[String], text: &str, out: &mut Vec<Vec<String>>) {
        match text.find('{') {
            None => {
                let mut p = prefix.to_vec();
                p.extend(
                    text.split("::").filter(|s| !s.is_empty() && *s != "self" && *s != "*").map(String::from),
                );
                out.push(p);
            }
            Some(open) => {
                let mut p = prefix.to_vec();
                p.extend(text[..open].split("::").filter(|s| !s.is_empty()).map(String::from));
                let inner = &text[open + 1..text.rfind('}').unwrap_or(text.len())];
                let mut depth = 0;
                let mut start = 0;
                for (k, c) in inner.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            go(&p, &inner[start..k], out);
                            start = k + 1;
                        }
                        _ => {}
                    }
                }
                if start < inner.len() {
                    go(&p, &inner[start..], out);
                }
            }
        }
    }
    let mut out = Vec::new();
    go(&[], &text, &mut out);
    out
}

/// Blanks comments (line, block and doc), string and char literals, keeping newlines,
/// so that a path in prose or in a generated-code string is not read as an import.
fn strip_comments_and_strings(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && (i == 0 || !is_ident(chars[i - 1]))
        {
            // A raw string: r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let close: String = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
            let rest: String = chars[j + 1..].iter().collect();
            let end =
                rest.find(&close).map_or(chars.len(), |k| j + 1 + rest[..k].chars().count() + close.len());
            for &ch in &chars[i..end.min(chars.len())] {
                out.push(blank(ch));
            }
            i = end;
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < chars.len() {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' && next.is_some() && chars.get(i + 2) == Some(&'\'') {
            out.push_str("   ");
            i += 3;
        } else if c == '\'' && next == Some('\\') {
            // '\n', '\'', '\u{..}'
            let mut j = i + 2;
            while j < chars.len() && chars[j] != '\'' {
                j += 1;
            }
            for _ in i..=j.min(chars.len() - 1) {
                out.push(' ');
            }
            i = j + 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every path that breaks a rule, as `file:line: crate::path: rule`.
fn violations(krate: &Crate) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(&krate.src, &mut files);
    let mut found = Vec::new();
    for file in files {
        let from = krate.layer_of_file(&file);
        let source = fs::read_to_string(&file).unwrap();
        let module = module_of(file.strip_prefix(&krate.src).unwrap());
        for (line, written) in crate_paths(&source) {
            let path = absolute(&module, &written);
            let Some(to) = krate.layer_of_path(&path) else { continue };
            if let Err(rule) = allowed(from, to) {
                let rel = file.strip_prefix(krate.src.parent().unwrap().parent().unwrap()).unwrap();
                let shown = if written[0] == "super" || written[0] == "self" {
                    format!("{} (crate::{})", written.join("::"), path.join("::"))
                } else {
                    format!("crate::{}", path.join("::"))
                };
                found.push(format!("{}:{line}: {shown}: {rule}", rel.display()));
            }
        }
    }
    found
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn runtime() -> Crate {
    use Layer::*;
    let layers = BTreeMap::from([
        ("core", Core),
        // The public facades lib.rs keeps for today's paths, by the layer they lead into.
        ("access", Core),
        ("index", Core),
        ("validator", Core),
        ("size", Core),
        ("registry", Core),
        ("path", Core),
        ("error", Core),
        ("hooks", Core),
        ("model", Core),
        ("stamps", Core),
        // A soft delete is a write of the core's pipeline; every live row's predicate.
        ("soft_delete", Core),
        ("ops", Ops),
        ("sync", Ops),
        ("check", Ops),
        ("artifacts", Ops),
        ("patterns", Free),
        ("paginate", Pattern("paginate")),
        ("versioning", Pattern("versioning")),
        ("bucket", Pattern("bucket")),
        ("outlier", Pattern("outlier")),
        ("relation", Pattern("relation")),
        ("refs", Pattern("relation")),
        ("denormalized", Pattern("denormalized")),
        ("copies", Pattern("denormalized")),
        ("keys", Pattern("keys")),
        ("timeseries", Pattern("timeseries")),
        ("summary", Pattern("summary")),
        // The guide: documentation modules, no code of their own.
        ("guide", Free),
        ("__private", Free),
    ]);
    Crate { src: workspace().join("runtime/src"), layers }
}

fn derive() -> Crate {
    use Layer::*;
    let layers = BTreeMap::from([
        // The entry points and the driver name every pattern, in order.
        ("driver", Root),
        ("common", Core),
        ("ast", Core),
        // The facts every check and expansion reads, found once by the driver's phases.
        ("facts", Core),
        ("attr", Core),
        ("model", Core),
        ("validator", Core),
        ("index", Core),
        ("access", Core),
        ("polymorphic", Core),
        // Stamps are applied by the core's writers: the derive states them as a core fact.
        ("stamps", Core),
        // Tenant and soft-delete predicates are carried by every row: a core rule.
        ("tenant", Core),
        ("paginate", Pattern("paginate")),
        ("versioning", Pattern("versioning")),
        ("bucket", Pattern("bucket")),
        ("outlier", Pattern("outlier")),
        ("relation", Pattern("relation")),
        ("denormalized", Pattern("denormalized")),
        ("keys", Pattern("keys")),
        ("timeseries", Pattern("timeseries")),
        ("summary", Pattern("summary")),
        ("tests", Free),
    ]);
    Crate { src: workspace().join("derive/src"), layers }
}

/// `docshape-cli`: the deploy tool's entry points (lib.rs), `infer` and the workload
/// check, over docshape's public API.
fn cli() -> Crate {
    use Layer::*;
    let layers = BTreeMap::from([
        ("infer", Tool),
        ("check", Tool),
        ("trace", Tool),
        // The `docshape` binary: a user of the library, through its public paths.
        ("main", Free),
    ]);
    Crate { src: workspace().join("cli/src"), layers }
}

/// `docshape-testkit`: servers for tests (lib.rs), Redis, the command log.
fn testkit() -> Crate {
    use Layer::*;
    let layers = BTreeMap::from([("monitor", Tool), ("redis", Tool), ("tests", Free)]);
    Crate { src: workspace().join("testkit/src"), layers }
}

/// The items of `docshape::__private` (what generated code calls, no API) that a tool
/// crate may name, each for a reason: anything else it needs from docshape's insides
/// is either made public API or added here on purpose.
const TOOLS_PRIVATE: &[&str] = &[
    // Whether a program links anything `export` and `verify` work on (the registered
    // files of the artifacts, without building the model-derived ones).
    "generated_files",
    // `{name: {$eq: v}}`, the filter every docshape query writes for an equality.
    "eq_filter",
];

/// The names docshape's lib.rs makes public at its root: `pub use`d items (by their
/// last segment or alias), `pub mod`s and `pub extern crate`s.
fn docshape_public_names(lib_rs: &str) -> Vec<String> {
    let code = strip_comments_and_strings(lib_rs);
    let mut names = Vec::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("pub ") {
        let line_start = rest[..at].rfind('\n').map_or(0, |n| n + 1);
        let at_top = rest[line_start..at].is_empty();
        let statement = &rest[at + 4..];
        rest = statement;
        if !at_top {
            continue;
        }
        if let Some(used) = statement.strip_prefix("use ") {
            let text = used[..used.find(';').unwrap_or(used.len())].replace(" as ", "=>");
            for path in expand_tree(&text) {
                let last = path.last().cloned().unwrap_or_default();
                names.push(last.rsplit("=>").next().unwrap_or_default().to_owned());
            }
        } else if let Some(declared) =
            statement.strip_prefix("mod ").or_else(|| statement.strip_prefix("extern crate "))
        {
            let text = &declared[..declared.find([';', '{']).unwrap_or(declared.len())];
            names.push(text.rsplit(" as ").next().unwrap_or_default().trim().to_owned());
        }
    }
    names
}

/// A tool crate's `docshape::...` paths that are not docshape's public API.
fn tool_violations(krate: &Crate, public: &[String]) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(&krate.src, &mut files);
    let mut found = Vec::new();
    for file in files {
        let rel = file.strip_prefix(krate.src.parent().unwrap().parent().unwrap()).unwrap();
        let source = fs::read_to_string(&file).unwrap();
        for (line, path) in paths_after(&source, &["docshape::"]) {
            let shown = format!("docshape::{}", path.join("::"));
            match path.first().map(String::as_str) {
                Some("__private")
                    if path.get(1).is_some_and(|item| TOOLS_PRIVATE.contains(&item.as_str())) => {}
                Some("__private") => found.push(format!(
                    "{}:{line}: {shown}: a tool names docshape's `__private` items only from TOOLS_PRIVATE",
                    rel.display()
                )),
                Some(first) if public.iter().any(|p| p == first) => {}
                _ => found.push(format!(
                    "{}:{line}: {shown}: a tool reaches docshape through its public paths only",
                    rel.display()
                )),
            }
        }
    }
    found
}

/// Where docshape names its tools: its manifest's dependencies (a dev-dependency on
/// the testkit is its tests' business), and its and the derive's sources, but for
/// `docshape_testkit` inside a `#[cfg(test)]` module.
fn docshape_names_its_tools(manifest: &str, sources: &[(String, String)]) -> Vec<String> {
    let mut found = Vec::new();
    let mut section = String::new();
    for (n, line) in manifest.lines().enumerate() {
        let line = line.trim();
        if line.starts_with('[') {
            section = line.trim_matches(|c| c == '[' || c == ']').to_owned();
            continue;
        }
        let depends = section == "dependencies"
            || section == "build-dependencies"
            || (section.starts_with("target.")
                && section.ends_with("dependencies")
                && !section.ends_with("dev-dependencies"));
        let dev = section == "dev-dependencies" || section.ends_with(".dev-dependencies");
        let names_cli = line.contains("docshape-cli");
        let names_testkit = line.contains("docshape-testkit");
        if (depends && (names_cli || names_testkit)) || (dev && names_cli) {
            found.push(format!(
                "runtime/Cargo.toml:{}: [{section}] {line}: docshape does not depend on its tools",
                n + 1
            ));
        }
    }
    for (file, source) in sources {
        let code = strip_comments_and_strings(source);
        let tests = cfg_test_modules(&code);
        for tool in ["docshape_cli", "docshape_testkit"] {
            for (at, _) in code.match_indices(tool) {
                let in_test = tool == "docshape_testkit" && tests.iter().any(|r| r.contains(&at));
                if !in_test {
                    let line = code[..at].matches('\n').count() + 1;
                    found.push(format!("{file}:{line}: {tool}: docshape does not depend on its tools"));
                }
            }
        }
    }
    found
}

/// The byte ranges of the `#[cfg(test)] mod name { ... }` modules of a source whose
/// comments and strings are blanked.
fn cfg_test_modules(code: &str) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    for (at, attr) in code.match_indices("#[cfg(test)]") {
        let after = code[at + attr.len()..].trim_start();
        let Some(module) = after.strip_prefix("mod ") else { continue };
        let Some(open) = module.find(['{', ';']).filter(|&k| module.as_bytes()[k] == b'{') else {
            continue;
        };
        let start = code.len() - module.len() + open;
        let mut depth = 0;
        for (k, c) in code[start..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        out.push(at..start + k + 1);
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    out
}

#[test]
fn the_tools_keep_their_modules_in_order_and_use_docshape_from_outside() {
    let public = docshape_public_names(&fs::read_to_string(workspace().join("runtime/src/lib.rs")).unwrap());
    for name in ["sync", "check", "artifacts", "registry", "bson", "mongodb", "Model", "access", "__private"]
    {
        assert!(public.iter().any(|p| p == name), "{name} not read as public from lib.rs: {public:?}");
    }
    for krate in [cli(), testkit()] {
        let mut found = violations(&krate);
        found.extend(tool_violations(&krate, &public));
        assert!(found.is_empty(), "imports against the layering:\n{}", found.join("\n"));
    }
}

#[test]
fn docshape_does_not_depend_on_its_tools() {
    let manifest = fs::read_to_string(workspace().join("runtime/Cargo.toml")).unwrap();
    let mut sources = Vec::new();
    for dir in ["runtime/src", "derive/src"] {
        let mut files = Vec::new();
        rust_files(&workspace().join(dir), &mut files);
        for file in files {
            let rel = file.strip_prefix(workspace()).unwrap().display().to_string();
            sources.push((rel, fs::read_to_string(&file).unwrap()));
        }
    }
    let found = docshape_names_its_tools(&manifest, &sources);
    assert!(found.is_empty(), "docshape names its tools:\n{}", found.join("\n"));
}

#[test]
fn a_tool_that_reaches_into_docshape_or_a_docshape_that_needs_a_tool_is_reported() {
    let public =
        docshape_public_names("pub use crate::ops::{artifacts, sync};\npub extern crate bson2 as bson;\npub mod __private {}\n    pub use inner::hidden;\n");
    assert_eq!(public, ["artifacts", "sync", "bson", "__private"]);

    let dir = std::env::temp_dir().join(format!("docshape_layering_tools_{}", std::process::id()));
    let src = dir.join("cli/src");
    fs::create_dir_all(&src).unwrap();
    fs::write(
        src.join("check.rs"),
        "use docshape::sync::plan_spec;\nuse docshape::core::trace;\nfn f() { docshape::__private::eq_filter(x); docshape::__private::Paginator::new(); }\n",
    )
    .unwrap();
    let mut krate = cli();
    krate.src = src;
    let found = tool_violations(&krate, &public);
    let module_found = violations(&krate);
    let _ = fs::remove_dir_all(&dir);
    assert!(module_found.is_empty(), "{module_found:?}");
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].starts_with("cli/src/check.rs:2: docshape::core::trace: a tool reaches docshape through its public paths only"), "{found:?}");
    assert!(
        found[1].starts_with("cli/src/check.rs:3: docshape::__private::Paginator::new: a tool names"),
        "{found:?}"
    );

    let manifest = "[dependencies]\ndocshape-cli = { path = \"../cli\" }\n[dev-dependencies]\ndocshape-testkit = { path = \"../testkit\" }\n";
    let sources = [
        ("runtime/src/ops/sync.rs".to_owned(), "fn f() {}\n#[cfg(test)]\nmod tests {\n    use docshape_testkit::TestServer;\n}\nuse docshape_testkit::database;\n".to_owned()),
    ];
    let found = docshape_names_its_tools(manifest, &sources);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].starts_with("runtime/Cargo.toml:2: [dependencies] docshape-cli"), "{found:?}");
    assert_eq!(
        found[1],
        "runtime/src/ops/sync.rs:6: docshape_testkit: docshape does not depend on its tools"
    );
}

#[test]
fn the_runtime_keeps_its_layers() {
    let found = violations(&runtime());
    assert!(found.is_empty(), "imports against the layering:\n{}", found.join("\n"));
}

#[test]
fn the_derive_keeps_its_layers() {
    let found = violations(&derive());
    assert!(found.is_empty(), "imports against the layering:\n{}", found.join("\n"));
}

#[test]
fn the_reader_finds_every_kind_of_path() {
    let src = r#"
use crate::core::{model::Model, registry};
use crate::patterns::{bucket::{Bucket, append}, outlier};
// use crate::patterns::keys;  (a comment is not an import)
/// [`crate::copies`] in prose
fn f() { crate::patterns::versioning::decode(); let s = "crate::ops::sync"; }
"#;
    let paths: Vec<(usize, String)> = crate_paths(src).into_iter().map(|(l, p)| (l, p.join("::"))).collect();
    assert_eq!(
        paths,
        [
            (2, "core::model::Model".to_owned()),
            (2, "core::registry".to_owned()),
            (3, "patterns::bucket::Bucket".to_owned()),
            (3, "patterns::bucket::append".to_owned()),
            (3, "patterns::outlier".to_owned()),
            (6, "patterns::versioning::decode".to_owned()),
        ]
    );
    let module = ["patterns".to_owned(), "bucket".to_owned(), "append".to_owned()];
    let rel = |p: &[&str]| absolute(&module, &p.iter().map(|s| s.to_string()).collect::<Vec<_>>()).join("::");
    assert_eq!(rel(&["super", "spec", "X"]), "patterns::bucket::spec::X");
    assert_eq!(rel(&["super", "super", "outlier"]), "patterns::outlier");
    assert_eq!(rel(&["self", "inner"]), "patterns::bucket::append::inner");
    assert_eq!(rel(&["core", "Model"]), "core::Model");
}

#[test]
fn a_forbidden_import_is_reported_with_its_file_and_line() {
    let dir = std::env::temp_dir().join(format!("docshape_layering_{}", std::process::id()));
    let src = dir.join("runtime/src");
    fs::create_dir_all(src.join("core")).unwrap();
    fs::create_dir_all(src.join("patterns/bucket")).unwrap();
    fs::write(src.join("lib.rs"), "pub use crate::patterns::bucket;\n").unwrap();
    fs::write(src.join("core/model.rs"), "use crate::core::path;\n\nuse crate::patterns::outlier::X;\n")
        .unwrap();
    fs::write(
        src.join("patterns/bucket/append.rs"),
        "use crate::core::Model;\nfn f() { crate::copies::update_one(); }\n",
    )
    .unwrap();
    fs::write(
        src.join("patterns/bucket.rs"),
        "mod append;\nuse self::append::f;\nuse super::outlier::Pushed;\n",
    )
    .unwrap();
    let mut krate = runtime();
    krate.src = src;
    let found = violations(&krate);
    let _ = fs::remove_dir_all(&dir);
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(
        found[0]
            .starts_with("runtime/src/core/model.rs:3: crate::patterns::outlier::X: core imports nothing"),
        "{found:?}"
    );
    assert!(
        found[2].starts_with("runtime/src/patterns/bucket.rs:3: super::outlier::Pushed (crate::patterns::outlier::Pushed): no pattern imports another"),
        "{found:?}"
    );
    assert!(
        found[1].starts_with(
            "runtime/src/patterns/bucket/append.rs:2: crate::copies::update_one: no pattern imports another"
        ),
        "{found:?}"
    );
}

/// The module graph of the files under `scope` (a module path inside the crate, empty
/// for the whole crate): an edge from a file's module to every module of the scope one
/// of its `crate::`/`super::`/`self::` paths leads into (the longest module that is a
/// file). A module and its own submodules are one unit (a parent declares its children,
/// a child reads its parent's items), so no edge joins them; nor do a module's
/// `#[cfg(test)]` tests, which may drive the whole pipeline.
fn module_graph(krate: &Crate, scope: &[&str]) -> BTreeMap<Vec<String>, Vec<(Vec<String>, String)>> {
    let mut files = Vec::new();
    rust_files(&krate.src, &mut files);
    let scope: Vec<String> = scope.iter().map(|s| s.to_string()).collect();
    let sources: Vec<(Vec<String>, String, String)> = files
        .iter()
        .map(|f| {
            let rel = f.strip_prefix(&krate.src).unwrap();
            (module_of(rel), rel.display().to_string(), fs::read_to_string(f).unwrap())
        })
        .filter(|(m, _, _)| m.starts_with(&scope) && m.len() > scope.len())
        .collect();
    let modules: Vec<Vec<String>> = sources.iter().map(|(m, _, _)| m.clone()).collect();
    graph_of(&modules, sources.iter().map(|(m, rel, src)| (m.clone(), rel.clone(), src.as_str())))
}

/// The edges of [`module_graph`], from (module, file name, source) triples.
fn graph_of<'a>(
    modules: &[Vec<String>],
    sources: impl Iterator<Item = (Vec<String>, String, &'a str)>,
) -> BTreeMap<Vec<String>, Vec<(Vec<String>, String)>> {
    let mut graph: BTreeMap<Vec<String>, Vec<(Vec<String>, String)>> = BTreeMap::new();
    for (module, rel, source) in sources {
        let edges = graph.entry(module.clone()).or_default();
        let code = strip_comments_and_strings(source);
        let tests = cfg_test_modules(&code);
        let blanked: String = code
            .char_indices()
            .map(|(i, c)| if c != '\n' && tests.iter().any(|r| r.contains(&i)) { ' ' } else { c })
            .collect();
        for (line, written) in crate_paths(&blanked) {
            let path = absolute(&module, &written);
            let Some(to) = modules.iter().filter(|m| path.starts_with(m)).max_by_key(|m| m.len()) else {
                continue;
            };
            if to.starts_with(&module) || module.starts_with(to) || edges.iter().any(|(t, _)| t == to) {
                continue;
            }
            let shown = match written[0].as_str() {
                "super" | "self" => written.join("::"),
                _ => format!("crate::{}", written.join("::")),
            };
            edges.push((to.clone(), format!("{rel}:{line}: {shown}")));
        }
    }
    graph
}

/// Every import cycle of a module graph, each as the chain of imports that closes it
/// (`file:line: path` per step), found by a depth-first search from every module.
fn cycles(graph: &BTreeMap<Vec<String>, Vec<(Vec<String>, String)>>) -> Vec<String> {
    fn visit(
        graph: &BTreeMap<Vec<String>, Vec<(Vec<String>, String)>>,
        node: &Vec<String>,
        stack: &mut Vec<(Vec<String>, String)>,
        done: &mut Vec<Vec<String>>,
        found: &mut Vec<String>,
    ) {
        for (to, why) in graph.get(node).into_iter().flatten() {
            if let Some(at) = stack.iter().position(|(m, _)| m == to) {
                let mut chain: Vec<String> = stack[at + 1..].iter().map(|(_, w)| w.clone()).collect();
                chain.push(why.clone());
                let names: Vec<String> =
                    stack[at..].iter().map(|(m, _)| m.join("::")).chain([to.join("::")]).collect();
                found.push(format!("{}\n    {}", names.join(" -> "), chain.join("\n    ")));
                continue;
            }
            if done.contains(to) {
                continue;
            }
            stack.push((to.clone(), why.clone()));
            visit(graph, to, stack, done, found);
            stack.pop();
        }
        done.push(node.clone());
    }
    let mut found = Vec::new();
    let mut done = Vec::new();
    for node in graph.keys() {
        if !done.contains(node) {
            let mut stack = vec![(node.clone(), String::new())];
            visit(graph, node, &mut stack, &mut done, &mut found);
        }
    }
    found
}

#[test]
fn the_derive_has_no_import_cycle() {
    let found = cycles(&module_graph(&derive(), &[]));
    assert!(found.is_empty(), "import cycles in derive/src:\n{}", found.join("\n"));
}

#[test]
fn the_runtime_core_has_no_import_cycle() {
    let found = cycles(&module_graph(&runtime(), &["core"]));
    assert!(found.is_empty(), "import cycles in runtime/src/core:\n{}", found.join("\n"));
}

#[test]
fn an_import_cycle_is_reported_with_its_chain() {
    let modules: Vec<Vec<String>> =
        ["a", "b", "c", "c::d"].iter().map(|m| m.split("::").map(String::from).collect()).collect();
    let sources = [
        (modules[0].clone(), "a.rs".to_owned(), "use crate::b::X;\n"),
        (modules[1].clone(), "b.rs".to_owned(), "fn f() { crate::c::d::g(); }\n"),
        // A child reading its parent is no cycle.
        (modules[3].clone(), "c/d.rs".to_owned(), "use super::Y;\nuse crate::a::Z;\n"),
        (modules[2].clone(), "c.rs".to_owned(), "pub use d::g;\n"),
    ];
    let found = cycles(&graph_of(&modules, sources.into_iter()));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("a -> b -> c::d -> a"), "{}", found[0]);
    assert!(found[0].contains("c/d.rs:2: crate::a::Z"), "{}", found[0]);
    let acyclic = [(modules[0].clone(), "a.rs".to_owned(), "use crate::b::X;\n")];
    assert!(cycles(&graph_of(&modules, acyclic.into_iter())).is_empty());
}

/// The source files of `dir` longer than `max` lines, as `path: N lines`.
fn longer_than(dir: &Path, max: usize) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    files
        .iter()
        .filter_map(|f| {
            let lines = fs::read_to_string(f).unwrap().lines().count();
            (lines > max)
                .then(|| format!("{}: {lines} lines", f.strip_prefix(workspace()).unwrap().display()))
        })
        .collect()
}

#[test]
fn no_source_file_of_the_derive_or_the_runtime_exceeds_800_lines() {
    let mut found = longer_than(&workspace().join("derive/src"), 800);
    found.extend(longer_than(&workspace().join("runtime/src"), 800));
    assert!(found.is_empty(), "files over 800 lines (split them by job):\n{}", found.join("\n"));
}
