//! Validators enforced by a real server: the seed's `usuarios`, soundness over
//! generated values, completeness per constraint, `sync`, and chrono's types.

mod chrono;
mod completeness;
mod soundness;
mod sync;
mod usuarios;

/// Whether a write failed document validation (server code 121).
pub(crate) fn is_validation_failure(e: &mongodb::error::Error) -> bool {
    use mongodb::error::{ErrorKind, WriteFailure};
    match e.kind.as_ref() {
        ErrorKind::Write(WriteFailure::WriteError(w)) => w.code == 121,
        ErrorKind::InsertMany(m) => m.write_errors.as_ref().is_some_and(|w| w.iter().all(|w| w.code == 121)),
        ErrorKind::Command(c) => c.code == 121,
        _ => false,
    }
}
