//! `shopctl`: the shop's deploy tool. `export` and `verify` the artifacts, `check` the
//! database for drift (exit status 1), `sync` it; `shopctl help` for the options.

use std::process::ExitCode;

// Links the models in, so they are registered; nothing else is listed.
use shop_models as _;

fn main() -> ExitCode {
    docshape_cli::main()
}
