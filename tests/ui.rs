//! Compile-time behaviour: each `ui/fail_<pattern>` case is one mistake whose error
//! must sit under the offending tokens (`.stderr` next to it, checked by
//! `ui/compile_fail.rs`); `ui/pass` cases compile with this binary and run as its tests
//! (see `ui/pass/mod.rs`).
//!
//! The `.stderr` files were made with the toolchain named in CONTRIBUTING.md; regenerate
//! them with `DOCSHAPE_UI=overwrite cargo test -p docshape-tests --test ui` after a
//! compiler upgrade, and review the diff.

#[path = "ui/compile_fail.rs"]
mod compile_fail;
#[path = "ui/pass/mod.rs"]
mod pass;

#[test]
fn ui() {
    let mut t = compile_fail::CompileFail::new();
    // rustc names `Bson` by its short name when one bson crate is compiled and by its
    // path when two are (under `bson-3` the driver still builds bson 2): a case whose
    // message names it has one copy, and one expected output, per feature. Every other
    // case is the derive's own error, which does not depend on the bson crate: those
    // are checked once, under the default features, and a build with `bson-3` checks
    // only its copies.
    if cfg!(feature = "bson-3") {
        t.cases("ui/fail_denormalized/bson3").run();
        return;
    }
    for dir in [
        "ui/fail_validator",
        "ui/fail_index",
        "ui/fail_access",
        "ui/fail_paginate",
        "ui/fail_versioning",
        "ui/fail_keys",
        "ui/fail_bucket",
        "ui/fail_outlier",
        "ui/fail_relation",
        "ui/fail_denormalized",
        "ui/fail_denormalized/bson2",
        "ui/fail_polymorphic",
        "ui/fail_timeseries",
        "ui/fail_stamps",
        "ui/fail_summary",
        "ui/fail_tenant",
    ] {
        t.cases(dir);
    }
    t.run();
}
/// The per-feature copies of a case are one case: only their expected output differs.
#[test]
fn the_per_feature_copies_of_a_case_are_the_same_source() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("ui/fail_denormalized");
    let mut names: Vec<_> = std::fs::read_dir(dir.join("bson2"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().ends_with(".rs"))
        .collect();
    names.sort();
    assert!(!names.is_empty());
    for name in names {
        let two = std::fs::read_to_string(dir.join("bson2").join(&name)).unwrap();
        let three = std::fs::read_to_string(dir.join("bson3").join(&name))
            .unwrap_or_else(|e| panic!("bson3/{} is missing: {e}", name.to_string_lossy()));
        assert_eq!(two, three, "bson2/ and bson3/{} differ", name.to_string_lossy());
    }
}
