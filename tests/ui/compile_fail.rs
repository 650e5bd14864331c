//! The compile-fail harness: each case is checked by `rustc` against the very `docshape`
//! and `serde` libraries this crate's own tests link, so no dependency is built a
//! second time for it (a harness with a project of its own, under other compiler flags,
//! rebuilt the driver's whole tree before its first case; that was most of this
//! suite's time).
//!
//! A case is `<dir>/<name>.rs` with its expected diagnostics in `<dir>/<name>.stderr`.
//! The diagnostics are compared after the normalization that keeps them stable across
//! machines and edits elsewhere in the workspace: a path into the workspace outside the
//! cases is `$WORKSPACE/...` without line and column, and the line numbers of the
//! snippet under it are hidden; the standard library is `$RUST/...` and the registry's
//! sources `$CARGO/...`, the same way; a count in "and 12 others" is `$N`; rustc's
//! closing summary ("aborting due to ...", "For more information ...") is left out.
//!
//! `DOCSHAPE_UI=overwrite` writes what rustc printed into the `.stderr` files instead
//! of comparing (after a compiler upgrade: review the diff).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// The crates a case may name, as `--extern` arguments.
const EXTERNS: &[&str] = &["docshape", "serde"];

/// Lints off in every case: a case's types are there to make a model, not to be used.
const ALLOWED_LINTS: &[&str] = &["dead_code"];

/// This crate's folder in the workspace: the cases are named from the workspace's
/// root, and printed without it.
const CASES_PREFIX: &str = "tests";

/// The compiler's line width for its snippets: fixed, so no terminal changes them.
const DIAGNOSTIC_WIDTH: &str = "--diagnostic-width=140";

/// The cases of some folders, checked together.
pub struct CompileFail {
    /// Folders relative to this crate's manifest directory (as the paths in the
    /// expected output are).
    dirs: Vec<&'static str>,
}

impl CompileFail {
    /// No folder yet.
    pub fn new() -> Self {
        CompileFail { dirs: Vec::new() }
    }

    /// Adds the cases `dir/*.rs`.
    pub fn cases(&mut self, dir: &'static str) -> &mut Self {
        self.dirs.push(dir);
        self
    }

    /// Checks every case and panics with every mismatch at once.
    pub fn run(&self) {
        let root = manifest_dir();
        let mut cases = Vec::new();
        for dir in &self.dirs {
            let mut found: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
                .unwrap_or_else(|e| panic!("cannot read {dir}: {e}"))
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|x| x == "rs"))
                .map(|p| Path::new(dir).join(p.file_name().unwrap()))
                .collect();
            assert!(!found.is_empty(), "{dir} has no case");
            orphan_outputs(&root, dir);
            found.sort();
            cases.extend(found);
        }
        let compiler = Compiler::for_this_crate();
        let overwrite = std::env::var("DOCSHAPE_UI").is_ok_and(|v| v == "overwrite");
        let failures = Mutex::new(BTreeMap::new());
        let next = AtomicUsize::new(0);
        let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
        let out_dir = std::env::temp_dir().join(format!("docshape-ui-{}", std::process::id()));
        std::fs::create_dir_all(&out_dir).unwrap();
        std::thread::scope(|s| {
            for _ in 0..workers {
                s.spawn(|| {
                    while let Some(case) = cases.get(next.fetch_add(1, Ordering::Relaxed)) {
                        if let Err(why) = compiler.check(case, &out_dir, overwrite) {
                            failures.lock().unwrap().insert(case.display().to_string(), why);
                        }
                    }
                });
            }
        });
        let _ = std::fs::remove_dir_all(&out_dir);
        let failures = failures.into_inner().unwrap();
        if !failures.is_empty() {
            let mut report = String::new();
            for (case, why) in &failures {
                report.push_str(&format!("\n==== {case}\n{why}\n"));
            }
            panic!(
                "{} of {} compile-fail cases failed (DOCSHAPE_UI=overwrite rewrites the expected \
                 output):\n{report}",
                failures.len(),
                cases.len()
            );
        }
        eprintln!("{} compile-fail cases ok", cases.len());
    }
}

/// An expected output without its case is a leftover of a removed or renamed case.
fn orphan_outputs(root: &Path, dir: &str) {
    for entry in std::fs::read_dir(root.join(dir)).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|x| x == "stderr") {
            assert!(path.with_extension("rs").exists(), "{} has no case beside it", path.display());
        }
    }
}

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `rustc` with the `--extern`s of this crate's own build.
struct Compiler {
    rustc: OsString,
    args: Vec<OsString>,
    workspace: String,
}

impl Compiler {
    /// Asks cargo for the libraries this crate's tests were built with. Everything is
    /// fresh when this runs under `cargo test`, so cargo only reports the artifacts (a
    /// lone run of this binary builds what is missing first).
    fn for_this_crate() -> Self {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.current_dir(manifest_dir()).args([
            "test",
            "--no-run",
            "--lib",
            "--quiet",
            "--message-format=json-render-diagnostics",
        ]);
        // The packages of the command that built this binary, so that cargo unifies the
        // same features and reports the libraries already built: README's command
        // (`--workspace`), or CI's bson-3 step. Another selection is still correct, it
        // only builds docshape once more under its features.
        if cfg!(feature = "bson-3") {
            cmd.args(["--package", "docshape", "--package", "docshape-tests"]);
            cmd.args(["--features", "docshape/bson-3,docshape-tests/bson-3"]);
        } else {
            cmd.arg("--workspace");
        }
        let out = cmd.output().expect("cannot run cargo");
        assert!(
            out.status.success(),
            "cargo could not report this crate's libraries:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // A library may be built twice, for this crate and for the build scripts and
        // proc macros (whose features cargo resolves apart): every build is a candidate.
        let mut found: BTreeMap<&str, Vec<(usize, PathBuf)>> = BTreeMap::new();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else { continue };
            if message["reason"] != "compiler-artifact" {
                continue;
            }
            let Some(name) = message["target"]["name"].as_str() else { continue };
            let Some(&wanted) = EXTERNS.iter().find(|n| **n == name) else { continue };
            let kinds = message["target"]["kind"].as_array().cloned().unwrap_or_default();
            if !kinds.iter().any(|k| k == "lib") {
                continue;
            }
            let features = message["features"].as_array().map_or(0, Vec::len);
            let rlib = message["filenames"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|f| f.as_str())
                .find(|f| f.ends_with(".rlib"))
                .map(PathBuf::from);
            if let Some(rlib) = rlib {
                let builds = found.entry(wanted).or_default();
                if !builds.iter().any(|(_, p)| *p == rlib) {
                    builds.push((features, rlib));
                }
            }
        }
        for name in EXTERNS {
            assert!(found.contains_key(name), "cargo reported no `{name}` library");
        }
        // The build for this crate unifies the most features: try that one first.
        for builds in found.values_mut() {
            builds.sort_by_key(|b| std::cmp::Reverse(b.0));
        }
        let mut choices: Vec<Vec<PathBuf>> = vec![Vec::new()];
        for name in EXTERNS {
            choices = choices
                .into_iter()
                .flat_map(|chosen| {
                    found[name].iter().map(move |(_, rlib)| {
                        let mut next = chosen.clone();
                        next.push(rlib.clone());
                        next
                    })
                })
                .collect();
        }
        let workspace = manifest_dir().parent().unwrap().to_str().expect("a UTF-8 workspace path").to_owned();
        let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
        for chosen in &choices {
            let compiler =
                Compiler { rustc: rustc.clone(), args: Self::args(chosen), workspace: workspace.clone() };
            if compiler.compiles_probe() {
                return compiler;
            }
        }
        panic!("no combination of the builds of {EXTERNS:?} cargo reported checks a plain model: {found:?}");
    }

    /// rustc's arguments for a case, with `rlibs` in the order of [`EXTERNS`].
    fn args(rlibs: &[PathBuf]) -> Vec<OsString> {
        let mut args: Vec<OsString> = Vec::new();
        let mut search = Vec::new();
        for (name, rlib) in EXTERNS.iter().zip(rlibs) {
            let dir = rlib.parent().unwrap().to_path_buf();
            if !search.contains(&dir) {
                search.push(dir);
            }
            let mut arg = OsString::from(format!("{name}="));
            arg.push(rlib);
            args.extend(["--extern".into(), arg]);
        }
        for dir in search {
            let mut arg = OsString::from("dependency=");
            arg.push(dir);
            args.extend(["-L".into(), arg]);
        }
        for lint in ALLOWED_LINTS {
            args.extend(["-A".into(), (*lint).into()]);
        }
        args.extend(
            ["--edition=2021", "--crate-type=bin", "--emit=metadata", "--color=never", DIAGNOSTIC_WIDTH]
                .map(OsString::from),
        );
        args
    }

    /// Whether a plain model checks with these libraries: with a `serde` other than
    /// the one `docshape` links, its derives implement the wrong traits.
    fn compiles_probe(&self) -> bool {
        let dir = std::env::temp_dir().join(format!("docshape-ui-probe-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let source = dir.join("probe.rs");
        std::fs::write(
            &source,
            "#[derive(serde::Serialize, serde::Deserialize, docshape::Model)]\n\
             #[model(collection = \"probes\")]\n\
             struct Probe { #[serde(rename = \"_id\")] id: String }\n\
             fn main() {}\n",
        )
        .unwrap();
        let ok = Command::new(&self.rustc)
            .args(&self.args)
            .arg("--crate-name=probe")
            .arg("--out-dir")
            .arg(&dir)
            .arg(&source)
            .output()
            .is_ok_and(|o| o.status.success());
        let _ = std::fs::remove_dir_all(&dir);
        ok
    }
    /// Checks one case; `Err` says what differs.
    fn check(&self, case: &Path, out_dir: &Path, overwrite: bool) -> Result<(), String> {
        let stem = case.file_stem().unwrap().to_str().unwrap();
        let args = self.args.iter();
        // From the workspace's root, as cargo compiled docshape: the paths of its
        // sources in its metadata are relative to it, and rustc reads its snippets
        // from them.
        let out = Command::new(&self.rustc)
            .current_dir(&self.workspace)
            .args(args)
            .arg("--crate-name")
            .arg(stem.replace('-', "_"))
            .arg("--out-dir")
            .arg(out_dir.join(case.parent().unwrap().to_str().unwrap().replace('/', "_")))
            .arg(Path::new(CASES_PREFIX).join(case))
            .output()
            .map_err(|e| format!("cannot run rustc: {e}"))?;
        let actual = normalize(&String::from_utf8_lossy(&out.stderr), &self.workspace);
        if out.status.success() {
            return Err(format!("it compiled; expected an error\n{actual}"));
        }
        let expected_path = manifest_dir().join(case).with_extension("stderr");
        if overwrite {
            std::fs::write(&expected_path, format!("{actual}\n")).unwrap();
            return Ok(());
        }
        let expected = match std::fs::read_to_string(&expected_path) {
            Ok(text) => text.replace("\r\n", "\n"),
            Err(_) => {
                return Err(format!("{} is missing; rustc printed:\n{actual}", expected_path.display()))
            }
        };
        if expected.trim_end() == actual {
            Ok(())
        } else {
            Err(diff(expected.trim_end(), &actual))
        }
    }
}

/// rustc's output as the expected files hold it (see the module docs).
fn normalize(stderr: &str, workspace: &str) -> String {
    let mut lines = Vec::new();
    // Inside a snippet of a file outside the cases, whose line numbers are hidden.
    let mut hiding = false;
    for line in stderr.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("error: aborting due to")
            || trimmed.starts_with("For more information about")
            || trimmed.starts_with("Some errors have detailed explanations")
            || (trimmed.starts_with("warning: ") && trimmed.ends_with(" emitted"))
        {
            continue;
        }
        let mut line = line.trim_end().to_owned();
        if let Some((arrow, path)) = location(&line) {
            let case = path.strip_prefix(CASES_PREFIX).and_then(|p| p.strip_prefix('/'));
            let outside = match case {
                Some(case) if case.starts_with("ui/") => None,
                _ if path.starts_with('/') => {
                    [(workspace, "$WORKSPACE"), ("/rustc/", "$RUST/"), ("/.cargo/registry/src/", "$CARGO/")]
                        .iter()
                        .find_map(|(prefix, name)| shorten(path, prefix, name))
                }
                // cargo compiles the workspace's crates with paths relative to its root.
                _ => shorten(path, "", "$WORKSPACE"),
            };
            hiding = outside.is_some();
            line = match (outside, case) {
                (Some(short), _) => format!("{arrow}{short}"),
                (None, Some(case)) => format!("{arrow}{case}"),
                (None, None) => line,
            };
        } else if hiding {
            if is_snippet(&line) {
                line = hide_gutter_number(&line);
            } else {
                hiding = false;
            }
        }
        lines.push(others_count(&line));
    }
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    lines.join("\n")
}

/// `("  --> ", "path:1:2")` for a location line.
fn location(line: &str) -> Option<(&str, &str)> {
    let trimmed = line.trim_start();
    let arrow = ["--> ", "::: "].into_iter().find(|a| trimmed.starts_with(a))?;
    let at = line.len() - trimmed.len() + arrow.len();
    Some((&line[..at], &line[at..]))
}

/// `path` under `prefix` as `name/...` without its line and column.
fn shorten(path: &str, prefix: &str, name: &str) -> Option<String> {
    let at = path.find(prefix)?;
    let rest = &path[at + prefix.len()..];
    let rest = match name {
        // The registry's folder is named after its index: keep what follows it.
        "$CARGO/" => rest.split_once('/')?.1,
        // The compiler's sources sit under its commit hash.
        "$RUST/" => rest.split_once('/')?.1,
        _ => rest.trim_start_matches('/'),
    };
    let mut parts = rest.rsplitn(3, ':');
    let (col, line, file) = (parts.next()?, parts.next(), parts.next());
    let file = match (line, file) {
        (Some(l), Some(f))
            if l.chars().all(|c| c.is_ascii_digit()) && col.chars().all(|c| c.is_ascii_digit()) =>
        {
            f
        }
        _ => rest,
    };
    Some(format!("{}/{file}", name.trim_end_matches('/')))
}

/// A snippet line: a gutter (`12 |`, `   |`, `...`) then code.
fn is_snippet(line: &str) -> bool {
    let t = line.trim_start();
    let digits = t.trim_start_matches(|c: char| c.is_ascii_digit()).trim_start();
    digits.starts_with('|') || digits.starts_with('=') || t == "..." || t.is_empty()
}

/// A snippet line with its gutter's line number blanked (the code after it unchanged).
fn hide_gutter_number(line: &str) -> String {
    let indent = line.len() - line.trim_start().len();
    let rest = &line[indent..];
    let digits = rest.chars().take_while(|c| c.is_ascii_digit()).count();
    format!("{}{}{}", &line[..indent], " ".repeat(digits), &rest[digits..])
}

/// "and 12 others" as "and $N others".
fn others_count(line: &str) -> String {
    let Some(at) = line.find("and ") else { return line.to_owned() };
    let rest = &line[at + 4..];
    let digits = rest.chars().take_while(|c| c.is_ascii_digit()).count();
    if digits > 0 && rest[digits..].trim() == "others" {
        format!("{}and $N others", &line[..at])
    } else {
        line.to_owned()
    }
}

/// A line diff small enough to read in a panic message.
fn diff(expected: &str, actual: &str) -> String {
    let mut out = String::from("--- expected\n+++ rustc\n");
    let (e, a): (Vec<_>, Vec<_>) = (expected.lines().collect(), actual.lines().collect());
    for i in 0..e.len().max(a.len()) {
        match (e.get(i), a.get(i)) {
            (Some(x), Some(y)) if x == y => {}
            (x, y) => {
                if let Some(x) = x {
                    out.push_str(&format!("-{i:>4}: {x}\n"));
                }
                if let Some(y) = y {
                    out.push_str(&format!("+{i:>4}: {y}\n"));
                }
            }
        }
    }
    out.push_str("\nrustc printed:\n");
    out.push_str(actual);
    out
}
