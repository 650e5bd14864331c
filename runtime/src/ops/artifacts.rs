//! A model's artifacts as files, without a database: the validator and index specs as
//! canonical extended JSON, and the access-pattern table as Markdown.
//!
//! | file | contents |
//! |---|---|
//! | `<collection>.validator.json` | exactly the options `createCollection` and `collMod` receive: `validator`, `validationLevel`, `validationAction` |
//! | `<collection>.indexes.json` | the `indexes` array `createIndexes` receives (`_id`'s excepted) |
//! | `<collection>.shard_key.json` | the `key` `shardCollection` receives, when the model declares one |
//! | `<collection>.timeseries.json` | the `timeseries` and `expireAfterSeconds` options `create` receives, for a time-series collection |
//! | `ACCESS_PATTERNS.md` | every model's access-pattern table, in the seed's format |
//! | `KEYS.md` | the Redis key catalog, in the seed's format, when key families exist |
//! | `DESIGN_DECISIONS.md` | per relation and array pattern: embed, reference, copy, outlier or bucket, its bound, its refresh policy and its reason |
//! | `MODEL.md` | the collections as a Mermaid flowchart (GitHub renders it): embedded types inside their collection, references and copies as arrows (a copy's with its refresh policy and `max_stale`), an outlier's overflow, buckets, time-series and polymorphic collections marked |
//!
//! The text is canonical extended JSON (`{"$numberInt": "2"}`), so the BSON types
//! survive any client: `bson.json_util.loads` in Python, `EJSON.parse` in JavaScript or
//! [`CollectionSpec::from_artifacts`] give back the very documents `sync` sends. The
//! output depends only on the code: the same models give byte-identical files.
//!
//! Three ways to get them:
//! - [`registered`] returns every registered model's artifacts as strings;
//! - [`write`](fn@write) puts them in a directory, and [`compare`] says how a directory differs
//!   (a test that fails when committed artifacts drift from the code);
//! - [`build_script`] writes them from a `build.rs` into `OUT_DIR` and generates an
//!   index a crate can `include!`, so a binary carries its schema.
//!
//! ```
//! use docshape::{artifacts, sync::CollectionSpec, Model};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize, Model)]
//! #[model(collection = "usuarios")]
//! #[index(keys(email), unique)]
//! struct Usuario {
//!     #[validate(min_length = 2)]
//!     nombre: String,
//!     email: String,
//! }
//!
//! let spec = CollectionSpec::of::<Usuario>();
//! let json = artifacts::validator_json(&spec);
//! assert!(json.contains(r#""minLength": {"#));
//! let files = artifacts::collection_artifacts(&spec);
//! assert_eq!(CollectionSpec::from_artifacts("usuarios", &files).unwrap(), spec);
//! ```

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use bson::{Bson, Document};

use crate::core::error::{Error, Result};
use crate::core::model::{ValidationAction, ValidationLevel};
use crate::core::spec::CollectionSpec;

/// The access-pattern table's file name.
pub const ACCESS_PATTERNS_FILE: &str = "ACCESS_PATTERNS.md";

pub use crate::core::relation::DESIGN_DECISIONS_FILE;

mod diagram;
pub use diagram::MODEL_FILE;

/// One generated file: its name (no directory) and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Artifact {
    /// The file name, e.g. `orders.validator.json`.
    pub file_name: String,
    /// The file's text, ending in a newline.
    pub contents: String,
}

/// Canonical extended JSON, two-space indented, keys in BSON order, newline-terminated.
fn canonical(value: Bson) -> String {
    let mut text = serde_json::to_string_pretty(&value.into_canonical_extjson())
        // A serde_json::Value always serializes.
        .unwrap_or_default();
    text.push('\n');
    text
}

/// The options `createCollection` and `collMod` receive for `spec`, as canonical
/// extended JSON.
pub fn validator_json(spec: &CollectionSpec) -> String {
    let mut options = Document::new();
    options.insert("validator", spec.validator.clone());
    options.insert("validationLevel", spec.validation_level.as_str());
    options.insert("validationAction", spec.validation_action.as_str());
    canonical(Bson::Document(options))
}

/// The `indexes` array `createIndexes` receives for `spec`, as canonical extended JSON.
pub fn indexes_json(spec: &CollectionSpec) -> String {
    canonical(Bson::Array(spec.indexes.iter().cloned().map(Bson::Document).collect()))
}

/// The files of one collection: `<name>.validator.json`, `<name>.indexes.json`,
/// `<name>.shard_key.json` when a shard key is declared, and `<name>.timeseries.json`
/// for a time-series collection.
pub fn collection_artifacts(spec: &CollectionSpec) -> Vec<Artifact> {
    let mut files = vec![
        Artifact { file_name: format!("{}.validator.json", spec.name), contents: validator_json(spec) },
        Artifact { file_name: format!("{}.indexes.json", spec.name), contents: indexes_json(spec) },
    ];
    if let Some(key) = &spec.shard_key {
        files.push(Artifact {
            file_name: format!("{}.shard_key.json", spec.name),
            contents: canonical(Bson::Document(key.clone())),
        });
    }
    if let Some(options) = &spec.timeseries {
        files.push(Artifact {
            file_name: format!("{}.timeseries.json", spec.name),
            contents: canonical(Bson::Document(options.clone())),
        });
    }
    files
}

/// The largest artifact file read: far above any validator or table docshape writes
/// (the server's own limit on a validator is 16 MB), and small enough that a file
/// that is a link to an endless device (`/dev/zero`) ends in an error, not in memory
/// running out.
pub const MAX_ARTIFACT_BYTES: u64 = 16 * 1024 * 1024;

/// Opens `path` for reading only if it is a regular file (a symbolic link is
/// followed), so that a reader never blocks on what is not one: a FIFO would block
/// `open` until a writer came, a terminal or socket would block the read, a device may
/// never end. The type is checked before opening, and again on the opened file (on
/// Unix the open is non-blocking, so a FIFO swapped in between cannot block it either).
/// The error names the path and what it is (`is a FIFO (named pipe), not a regular
/// file`), with [`io::ErrorKind::InvalidInput`]; a missing file keeps
/// [`io::ErrorKind::NotFound`].
pub fn open_regular_file(path: &Path) -> io::Result<std::fs::File> {
    let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    refuse_unless_regular(path, &std::fs::metadata(path).map_err(named)?.file_type())?;
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        // A regular file reads the same with or without O_NONBLOCK.
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path).map_err(named)?;
    refuse_unless_regular(path, &file.metadata().map_err(named)?.file_type())?;
    Ok(file)
}

/// Whether a file of type `kind` may be read or written as an artifact: an error
/// naming `path` and its kind when it is not a regular file.
fn refuse_unless_regular(path: &Path, kind: &std::fs::FileType) -> io::Result<()> {
    if kind.is_file() {
        return Ok(());
    }
    let what = if kind.is_dir() { "a directory" } else { special_kind(kind) };
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{}: is {what}, not a regular file", path.display()),
    ))
}

#[cfg(unix)]
fn special_kind(kind: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else {
        "a special file"
    }
}

#[cfg(not(unix))]
fn special_kind(_: &std::fs::FileType) -> &'static str {
    "a special file"
}

/// Refuses to write over `path` when it exists and is not a regular file: writing
/// into a FIFO would block until a reader came, into a device would not be a file.
fn writable_artifact(path: &Path) -> io::Result<()> {
    match std::fs::metadata(path) {
        Ok(meta) => refuse_unless_regular(path, &meta.file_type()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
    }
}

/// Reads one artifact file as UTF-8 text, at most [`MAX_ARTIFACT_BYTES`], opened with
/// [`open_regular_file`] (a FIFO, a device or a socket is an error, never a wait);
/// every error names the file (a missing file keeps [`io::ErrorKind::NotFound`]).
pub fn read_artifact(path: &Path) -> io::Result<String> {
    use std::io::Read as _;
    let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    let file = open_regular_file(path)?;
    let mut bytes = Vec::new();
    file.take(MAX_ARTIFACT_BYTES + 1).read_to_end(&mut bytes).map_err(named)?;
    if bytes.len() as u64 > MAX_ARTIFACT_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: larger than {MAX_ARTIFACT_BYTES} bytes, not an artifact", path.display()),
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{}: not UTF-8 text (invalid byte at offset {})",
                path.display(),
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

/// Reads the artifacts in `dir` (the files docshape writes; others are skipped),
/// ordered by file name, each with [`read_artifact`].
pub fn read(dir: &Path) -> io::Result<Vec<Artifact>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let file_name = entry.file_name().to_string_lossy().into_owned();
        if is_artifact_name(&file_name) {
            out.push(Artifact { contents: read_artifact(&entry.path())?, file_name });
        }
    }
    out.sort_by(|a, b| a.file_name.cmp(&b.file_name));
    Ok(out)
}

/// The collection specs that a set of artifacts describes (every
/// `<name>.validator.json` with its `<name>.indexes.json`), for syncing or checking a
/// database from files alone, without the models' code.
pub fn specs_from(artifacts: &[Artifact]) -> Result<Vec<CollectionSpec>> {
    artifacts
        .iter()
        .filter_map(|a| a.file_name.strip_suffix(".validator.json"))
        .map(|name| CollectionSpec::from_artifacts(name, artifacts))
        .collect()
}

/// Every registered model's artifacts (see [`crate::registry`]), ordered by file name:
/// two files per collection, `ACCESS_PATTERNS.md`, `DESIGN_DECISIONS.md`, `MODEL.md`,
/// and `KEYS.md` when key families are registered. Two models claiming one collection, or two key families whose patterns
/// can match the same key, are an error.
pub fn registered() -> Result<Vec<Artifact>> {
    let specs = crate::core::registry::specs()?;
    let mut out: Vec<Artifact> = specs.iter().flat_map(collection_artifacts).collect();
    let models = crate::core::registry::models();
    // A polymorphic model's rows on one variant say which.
    let tables: Vec<crate::core::access::CollectionRows<'_>> = models
        .iter()
        .filter(|m| !m.access_patterns.is_empty())
        .map(|m| (m.collection, m.access_patterns, m.polymorphic_rows))
        .collect();
    out.push(Artifact {
        file_name: ACCESS_PATTERNS_FILE.to_owned(),
        contents: format!(
            "# Access patterns\n\nEvery query the application runs, and the index that serves it.\n\n{}",
            crate::core::access::access_tables_with_variants(&tables)
        ),
    });
    out.push(Artifact { file_name: MODEL_FILE.to_owned(), contents: model_diagram(&specs, &models) });
    // The design-decision table and the key catalog come from their patterns.
    for (file_name, contents) in crate::core::hooks::generated_files()? {
        out.push(Artifact { file_name: file_name.to_owned(), contents });
    }
    out.sort_by(|a, b| a.file_name.cmp(&b.file_name));
    Ok(out)
}

/// `MODEL.md` of the registered `models`, with the collections of `specs` no model is
/// stored in (an outlier's overflow).
fn model_diagram(
    specs: &[CollectionSpec],
    models: &[&'static crate::core::registry::RegisteredModel],
) -> String {
    let nested = crate::core::denormalized::nested_copies();
    let collections: Vec<diagram::Collection<'static>> = models
        .iter()
        .map(|m| diagram::Collection {
            name: m.collection,
            // The path's last segment: module paths say nothing about the model.
            type_name: (m.type_name)().rsplit("::").next().unwrap_or_default(),
            relations: m.relations,
            nested: m.nested,
            copies: m
                .copies
                .iter()
                .chain(nested.iter().copied().filter(|c| c.collection == m.collection))
                .collect(),
            variants: m.variants,
        })
        .collect();
    let others: Vec<&str> = specs
        .iter()
        .map(|s| s.name.as_str())
        .filter(|name| !models.iter().any(|m| m.collection == *name))
        .collect();
    diagram::model_file(&collections, &others)
}

/// Writes `artifacts` into `dir` (created if missing), rewriting only files whose text
/// differs, and returns the names of the files it wrote.
pub fn write(dir: &Path, artifacts: &[Artifact]) -> io::Result<Vec<String>> {
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    for a in artifacts {
        let path = dir.join(&a.file_name);
        writable_artifact(&path)?;
        if read_artifact(&path).ok().as_deref() != Some(a.contents.as_str()) {
            std::fs::write(&path, &a.contents)?;
            written.push(a.file_name.clone());
        }
    }
    Ok(written)
}

/// How a directory of artifacts differs from the code.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileDrift {
    /// The code produces this file; the directory lacks it.
    Missing {
        /// The file name.
        file_name: String,
    },
    /// The file's text is not what the code produces.
    Differs {
        /// The file name.
        file_name: String,
        /// The first line that differs (1-based), with both versions of it.
        line: usize,
        /// That line in the directory.
        found: String,
        /// That line as the code produces it.
        expected: String,
    },
    /// A file named like an artifact that the code no longer produces (a model that
    /// was removed or renamed).
    Stale {
        /// The file name.
        file_name: String,
    },
}

impl fmt::Display for FileDrift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing { file_name } => write!(f, "{file_name} is missing"),
            Self::Differs { file_name, line, found, expected } => write!(
                f,
                "{file_name} differs from the code at line {line}:\n  file: {found}\n  code: {expected}"
            ),
            Self::Stale { file_name } => write!(f, "{file_name} is not produced by the code any more"),
        }
    }
}

/// Whether `name` is a file docshape writes, so [`compare`] can call it stale.
fn is_artifact_name(name: &str) -> bool {
    name.ends_with(".validator.json")
        || name.ends_with(".indexes.json")
        || name.ends_with(".shard_key.json")
        || name.ends_with(".timeseries.json")
        || [ACCESS_PATTERNS_FILE, DESIGN_DECISIONS_FILE, MODEL_FILE, "KEYS.md"].contains(&name)
}

/// How the files in `dir` differ from `artifacts`: empty when they match byte for byte,
/// except that a checkout's CRLF line endings read as LF. Other files in `dir` (a
/// README, say) are left out of the comparison.
pub fn compare(dir: &Path, artifacts: &[Artifact]) -> io::Result<Vec<FileDrift>> {
    let mut drift = Vec::new();
    for a in artifacts {
        match read_artifact(&dir.join(&a.file_name)) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                drift.push(FileDrift::Missing { file_name: a.file_name.clone() })
            }
            Err(e) => return Err(e),
            Ok(found) if found.replace("\r\n", "\n") != a.contents => {
                let found = found.replace("\r\n", "\n");
                let mut found_lines = found.lines();
                let mut code_lines = a.contents.lines();
                let mut line = 0;
                loop {
                    line += 1;
                    let (f, c) = (found_lines.next(), code_lines.next());
                    if f != c || (f.is_none() && c.is_none()) {
                        drift.push(FileDrift::Differs {
                            file_name: a.file_name.clone(),
                            line,
                            found: f.unwrap_or("(end of file)").to_owned(),
                            expected: c.unwrap_or("(end of file)").to_owned(),
                        });
                        break;
                    }
                }
            }
            Ok(_) => {}
        }
    }
    let mut stale = Vec::new();
    match std::fs::read_dir(dir) {
        Ok(entries) => {
            for entry in entries {
                let name = entry?.file_name().to_string_lossy().into_owned();
                if is_artifact_name(&name) && !artifacts.iter().any(|a| a.file_name == name) {
                    stale.push(FileDrift::Stale { file_name: name });
                }
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    stale.sort_by_key(ToString::to_string);
    drift.extend(stale);
    Ok(drift)
}

/// For a `build.rs` whose crate (or build-dependency) defines the models: writes every
/// registered model's artifacts into `$OUT_DIR/docshape/` and an index of them,
/// `$OUT_DIR/docshape/artifacts.rs`, which the crate can include:
///
/// ```no_run
/// // In build.rs's `main`, with the models' crate as a build-dependency, named so
/// // that it is linked and its models registered (`use my_models as _;`):
/// docshape::artifacts::build_script().unwrap();
/// ```
///
/// and in the crate, `ARTIFACTS: &[(&str, &str)]` (file name and text) comes from
/// `include!(concat!(env!("OUT_DIR"), "/docshape/artifacts.rs"));`.
///
/// Returns the directory written.
pub fn build_script() -> Result<PathBuf> {
    let out = std::env::var_os("OUT_DIR").map(PathBuf::from).ok_or_else(|| Error::Artifacts {
        detail: "OUT_DIR is not set: build_script() runs inside a build script".to_owned(),
        source: None,
    })?;
    let dir = out.join("docshape");
    let artifacts = registered()?;
    let io = |e: io::Error| Error::Artifacts {
        detail: format!("cannot write into {}: {e}", dir.display()),
        source: Some(Box::new(e)),
    };
    write(&dir, &artifacts).map_err(io)?;
    let mut index = String::from(
        "/// Every registered model's artifacts, generated at build time: file name and text.\npub const ARTIFACTS: &[(&str, &str)] = &[\n",
    );
    for a in &artifacts {
        let path = dir.join(&a.file_name);
        index.push_str(&format!(
            "    ({:?}, include_str!({:?})),\n",
            a.file_name,
            path.display().to_string()
        ));
    }
    index.push_str("];\n");
    write(&dir, &[Artifact { file_name: "artifacts.rs".to_owned(), contents: index }]).map_err(io)?;
    Ok(dir)
}

impl CollectionSpec {
    /// The spec that a collection's files describe (`<name>.validator.json`,
    /// `<name>.indexes.json` and, if present, `<name>.shard_key.json`): the inverse of
    /// [`collection_artifacts`].
    pub fn from_artifacts(name: &str, artifacts: &[Artifact]) -> Result<Self> {
        let bad = |file: &str, detail: String| Error::Artifacts {
            detail: format!("{file}: {detail}"),
            source: None,
        };
        // The same, keeping the parser's error as the source.
        let unparsed = |file: &str, e: Box<dyn std::error::Error + Send + Sync>| Error::Artifacts {
            detail: format!("{file}: {e}"),
            source: Some(e),
        };
        let parse = |suffix: &str| -> Result<Option<(String, Bson)>> {
            let file = format!("{name}.{suffix}");
            let Some(a) = artifacts.iter().find(|a| a.file_name == file) else { return Ok(None) };
            let value: serde_json::Value =
                serde_json::from_str(&a.contents).map_err(|e| unparsed(&file, Box::new(e)))?;
            let bson = Bson::try_from(value).map_err(|e| unparsed(&file, Box::new(e)))?;
            Ok(Some((file, bson)))
        };
        let missing = |suffix: &str| bad(&format!("{name}.{suffix}"), "missing".to_owned());
        let (file, options) = parse("validator.json")?.ok_or_else(|| missing("validator.json"))?;
        let Bson::Document(options) = options else { return Err(bad(&file, "not a JSON object".to_owned())) };
        let validator = options
            .get_document("validator")
            .map_err(|_| bad(&file, "no `validator` document".to_owned()))?
            .clone();
        let validation_level = match options.get_str("validationLevel").unwrap_or("strict") {
            "strict" => ValidationLevel::Strict,
            "moderate" => ValidationLevel::Moderate,
            "off" => ValidationLevel::Off,
            other => return Err(bad(&file, format!("unknown validationLevel `{other}`"))),
        };
        let validation_action = match options.get_str("validationAction").unwrap_or("error") {
            "error" => ValidationAction::Error,
            "warn" => ValidationAction::Warn,
            other => return Err(bad(&file, format!("unknown validationAction `{other}`"))),
        };
        let (file, indexes) = parse("indexes.json")?.ok_or_else(|| missing("indexes.json"))?;
        let Bson::Array(indexes) = indexes else { return Err(bad(&file, "not a JSON array".to_owned())) };
        let indexes = indexes
            .into_iter()
            .map(|i| match i {
                Bson::Document(d) => Ok(d),
                other => Err(bad(&file, format!("an index is not an object: {other}"))),
            })
            .collect::<Result<Vec<_>>>()?;
        let shard_key = match parse("shard_key.json")? {
            None => None,
            Some((_, Bson::Document(key))) => Some(key),
            Some((file, _)) => return Err(bad(&file, "not a JSON object".to_owned())),
        };
        let timeseries = match parse("timeseries.json")? {
            None => None,
            Some((_, Bson::Document(options))) => Some(options),
            Some((file, _)) => return Err(bad(&file, "not a JSON object".to_owned())),
        };
        Ok(Self {
            name: name.to_owned(),
            validator,
            validation_level,
            validation_action,
            indexes,
            shard_key,
            timeseries,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_artifact_that_does_not_parse_keeps_the_parser_error_as_its_source() {
        let artifacts = [Artifact { file_name: "x.validator.json".into(), contents: "{not json\n".into() }];
        let e = CollectionSpec::from_artifacts("x", &artifacts).unwrap_err();
        assert!(e.to_string().starts_with("artifacts: x.validator.json: "), "{e}");
        let source = std::error::Error::source(&e).expect("a source");
        let json = source.downcast_ref::<serde_json::Error>().expect("the JSON error");
        assert_eq!((json.line(), json.column()), (1, 2));
        // Extended JSON that is not BSON: the conversion's error.
        let artifacts = [Artifact {
            file_name: "x.validator.json".into(),
            contents: r#"{"validator": {"$date": {"$numberLong": "nope"}}}"#.into(),
        }];
        let e = CollectionSpec::from_artifacts("x", &artifacts).unwrap_err();
        let source = std::error::Error::source(&e).expect("a source");
        #[cfg(not(feature = "bson-3"))]
        type ExtJsonError = bson::extjson::de::Error;
        #[cfg(feature = "bson-3")]
        type ExtJsonError = bson::error::Error;
        assert!(source.downcast_ref::<ExtJsonError>().is_some(), "{source:?}");
        // What docshape finds itself has no source.
        let artifacts = [Artifact { file_name: "x.validator.json".into(), contents: "[]".into() }];
        let e = CollectionSpec::from_artifacts("x", &artifacts).unwrap_err();
        assert!(std::error::Error::source(&e).is_none(), "{e}");
    }
}
