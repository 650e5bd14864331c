//! The registry of key families: `#[derive(KeyFamily)]` submits one entry per
//! non-generic struct (through the `inventory` crate, like the model registry). It lives
//! with the keys pattern because its entries are [`KeySpec`]s; the public path is
//! [`crate::registry`], and the catalog reaches the artifacts as a file of
//! [`crate::core::hooks`].

use super::catalog::{catalog_markdown, check_catalog};
use super::spec::KeySpec;
use crate::core::error::Error;
use crate::core::hooks::GeneratedFile;

/// One registered Redis key family (`#[derive(KeyFamily)]` on a non-generic struct).
#[derive(Debug, Clone, Copy)]
pub struct RegisteredKeyFamily {
    /// Its spec: pattern, kind, TTL decision, note.
    pub spec: &'static KeySpec,
}

inventory::collect!(RegisteredKeyFamily);

/// Every registered key family, ordered by pattern and then type name.
pub fn key_families() -> Vec<&'static KeySpec> {
    let mut all: Vec<&'static KeySpec> =
        inventory::iter::<RegisteredKeyFamily>.into_iter().map(|f| f.spec).collect();
    all.sort_by(|a, b| (a.pattern, a.name).cmp(&(b.pattern, b.name)));
    all
}

inventory::submit! { GeneratedFile { file_name: "KEYS.md", build: catalog_file } }

/// `KEYS.md`: the catalog of every registered key family, or an error when two of
/// them can match the same key; nothing without key families.
fn catalog_file() -> Result<Option<String>, Error> {
    let families = key_families();
    if families.is_empty() {
        return Ok(None);
    }
    if let Err(overlaps) = check_catalog(&families) {
        let lines: Vec<String> = overlaps.iter().map(ToString::to_string).collect();
        return Err(Error::Artifacts {
            detail: format!("key families overlap:\n{}", lines.join("\n")),
            source: None,
        });
    }
    Ok(Some(format!(
        "# Redis key catalog\n\nEvery key family, with its TTL decision.\n\n{}",
        catalog_markdown(&families)
    )))
}
