//! The `docshape` tool: `infer` writes models from a live database; `export`, `verify`,
//! `check` and `sync` work on the models a program links, which this binary has none
//! of, so here they exit 2 saying so (link your models into a binary of your own that
//! calls `docshape_cli::main`).
//!
//! ```text
//! cargo install --path cli
//! docshape infer --uri mongodb://localhost/shop --out inferred
//! ```

fn main() -> std::process::ExitCode {
    docshape_cli::main()
}
