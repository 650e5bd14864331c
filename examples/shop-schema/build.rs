//! Writes every shop model's artifacts into `OUT_DIR` at build time, without a
//! database: `src/lib.rs` includes them, and `tests/artifacts.rs` fails when the copy
//! committed in `schema/` drifts from the code.

// The build script names nothing else from the models' crate; this keeps it linked,
// so its models are registered.
use shop_models as _;

fn main() {
    // The artifacts depend only on the code, which cargo already tracks through the
    // build-dependency; nothing in this package's own files feeds them.
    println!("cargo::rerun-if-changed=build.rs");
    if let Err(e) = docshape::artifacts::build_script() {
        println!("cargo::error=cannot write the shop's artifacts: {e}");
    }
}
