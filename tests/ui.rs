//! Compile-time behaviour: each `ui/fail_<pattern>` case is one mistake whose error
//! must sit under the offending tokens (`.stderr` next to it); `ui/pass` cases compile
//! and run.
//!
//! The `.stderr` files were made with the toolchain named in README.md; regenerate
//! them with `TRYBUILD=overwrite cargo test -p docshape-tests --test ui` after a
//! compiler upgrade, and review the diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("ui/fail_validator/*.rs");
    t.compile_fail("ui/fail_index/*.rs");
    t.compile_fail("ui/fail_access/*.rs");
    t.compile_fail("ui/fail_paginate/*.rs");
    t.compile_fail("ui/fail_versioning/*.rs");
    t.compile_fail("ui/fail_keys/*.rs");
    t.compile_fail("ui/fail_bucket/*.rs");
    t.compile_fail("ui/fail_outlier/*.rs");
    t.compile_fail("ui/fail_relation/*.rs");
    t.compile_fail("ui/fail_denormalized/*.rs");
    t.pass("ui/pass/*.rs");
}
