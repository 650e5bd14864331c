//! Models that must compile: each case is a module of the `ui` test binary (a program
//! of its own, as a user's crate would be), and its `main` checks what the derives
//! generated. They are built with the tests, as modules, so that each needs no
//! program of its own to link.

mod bucket;
mod full_model;
mod generics_and_hygiene;
mod indexes_and_waivers;
mod inferred;
mod keys;
mod paginate;
mod public_model_private_parts;
mod relations;
mod versioning;
mod wide_model;

#[test]
fn bucket() {
    bucket::main();
}

#[test]
fn full_model() {
    full_model::main();
}

#[test]
fn generics_and_hygiene() {
    generics_and_hygiene::main();
}

#[test]
fn indexes_and_waivers() {
    indexes_and_waivers::main();
}

#[test]
fn inferred() {
    inferred::main();
}

#[test]
fn keys() {
    keys::main();
}

#[test]
fn paginate() {
    paginate::main();
}

#[test]
fn public_model_private_parts() {
    public_model_private_parts::main();
}

#[test]
fn relations() {
    relations::main();
}

#[test]
fn versioning() {
    versioning::main();
}

#[test]
fn wide_model() {
    wide_model::main();
}
