//! Compile-time behaviour: each `ui/fail` case is one mistake whose error must sit
//! under the offending tokens (`.stderr` next to it); `ui/pass` cases compile and run.
//!
//! The `.stderr` files were made with the toolchain named in README.md; regenerate
//! them with `TRYBUILD=overwrite cargo test -p docshape-tests --test ui` after a
//! compiler upgrade, and review the diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("ui/fail/*.rs");
    t.compile_fail("ui/fail_index/*.rs");
    t.compile_fail("ui/fail_paginate/*.rs");
    t.compile_fail("ui/fail_version/*.rs");
    t.compile_fail("ui/fail_keys/*.rs");
    t.compile_fail("ui/fail_bucket/*.rs");
    t.compile_fail("ui/fail_relations/*.rs");
    t.pass("ui/pass/*.rs");
}
