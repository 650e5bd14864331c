//! Compile-time cost of docshape's derives against serde's alone, and against serde's
//! plus schemars' `JsonSchema`.
//!
//! Writes a standalone workspace (its own `[workspace]`, this repository's
//! `Cargo.lock`, docshape by path) with three crates of the same N models: one deriving
//! `Serialize, Deserialize` plus docshape's `Model`/`Embedded` with their attributes,
//! one deriving `Serialize, Deserialize` only, and one deriving `Serialize,
//! Deserialize, JsonSchema` with the same constraints in schemars' attributes.
//! Dependencies are built first; then each round rewrites the crates' `lib.rs` (a new
//! comment, so cargo must rebuild) and builds them one after the other, the order
//! rotated every round, and the round's ratios are docshape's time over each of the
//! others'. The median ratios are reported, with their spread.
//!
//! It also times a clean build of the proc-macro crates themselves (`cargo clean -p`,
//! then a build of that package alone, its dependencies kept), docshape-derive against
//! serde_derive, interleaved the same way; and, with `--expand`, counts the lines of
//! each crate's macro expansion (`-Zunpretty=expanded` through `RUSTC_BOOTSTRAP`, as
//! `cargo expand` does on a stable toolchain) to show what the derives generate.
//!
//! ```sh
//! cargo run --release -p docshape-benches --bin compile_cost -- 25 100 200
//! cargo run --release -p docshape-benches --bin compile_cost -- --rounds 7 --expand 25
//! cargo run --release -p docshape-benches --bin compile_cost -- --polymorphic --rounds 5 --expand 100
//! ```
//!
//! Options: `--rounds R` (default 5), `--derive-rounds R` (default 5; 0 skips),
//! `--dir PATH` (default: `docshape-compile-cost` in the system's temp dir; kept, so a
//! second run reuses the built dependencies), `--expand`, `--timings` (one
//! `cargo build --timings` of each variant at the largest N, frontend vs codegen split),
//! `--incremental` (time incremental rebuilds after the one-comment change instead),
//! `--repo PATH` (the docshape checkout to measure, default this one: another commit's
//! tree, say, or a copy that does not change while the measurement runs),
//! `--polymorphic` (each model a polymorphic one instead of a struct: an internally
//! tagged enum of four variants over the same fields, with indexes and rows on the
//! enum and on two variants, against the same enum with serde's derives only),
//! `--tenant` (each struct model with `tenant = owner_id` and `soft_delete =
//! deleted_at`, against the same struct with serde's derives only: its ratio beside the
//! default run's is the cost of the tenant and soft-delete predicates).
//! It runs cargo offline, but for one `cargo fetch` at set-up: schemars is not a
//! dependency of this repository, so its packages may have to be downloaded once.

mod generate;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use generate::{Shape, Variant};

struct Options {
    counts: Vec<usize>,
    rounds: usize,
    derive_rounds: usize,
    dir: PathBuf,
    expand: bool,
    timings: bool,
    repo: PathBuf,
    shape: Shape,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        counts: Vec::new(),
        rounds: 5,
        derive_rounds: 5,
        dir: std::env::temp_dir().join("docshape-compile-cost"),
        expand: false,
        timings: false,
        repo: repo_root(),
        shape: Shape::Struct,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--rounds" => o.rounds = value("--rounds")?.parse().map_err(|e| format!("--rounds: {e}"))?,
            "--derive-rounds" => {
                o.derive_rounds =
                    value("--derive-rounds")?.parse().map_err(|e| format!("--derive-rounds: {e}"))?
            }
            "--dir" => o.dir = PathBuf::from(value("--dir")?),
            "--repo" => o.repo = PathBuf::from(value("--repo")?),
            "--expand" => o.expand = true,
            "--timings" => o.timings = true,
            "--polymorphic" => o.shape = Shape::Polymorphic,
            "--tenant" => o.shape = Shape::Tenant,
            "--incremental" => INCREMENTAL.store(true, std::sync::atomic::Ordering::Relaxed),
            // `cargo bench` passes this to every target; nothing to do with it here.
            "--bench" => {}
            n => o.counts.push(n.parse().map_err(|_| format!("not a model count or option: {n}"))?),
        }
    }
    if o.counts.is_empty() {
        o.counts = vec![25, 100, 200];
    }
    o.rounds = o.rounds.max(1);
    Ok(o)
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("benches/ is inside the repository").to_path_buf()
}

/// Set by `--incremental`: time incremental rebuilds instead of whole builds.
static INCREMENTAL: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn cargo(dir: &Path) -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(dir).arg("--offline");
    // Whole builds of the crate by default: an incremental rebuild after a one-comment
    // change reuses much of the last build, which hides part of what the derives cost.
    if !INCREMENTAL.load(std::sync::atomic::Ordering::Relaxed) {
        c.env("CARGO_INCREMENTAL", "0");
    }
    c
}

/// Runs `cargo <args>` in the workspace and returns its wall time in milliseconds.
fn timed(dir: &Path, args: &[&str]) -> f64 {
    let start = Instant::now();
    let out = cargo(dir).args(args).stdout(Stdio::null()).output().expect("cargo runs");
    let ms = start.elapsed().as_secs_f64() * 1e3;
    if !out.status.success() {
        eprintln!("{}", String::from_utf8_lossy(&out.stderr));
        panic!("cargo {} failed in {}", args.join(" "), dir.display());
    }
    ms
}

fn write(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("create the directory");
    }
    std::fs::write(path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

fn lib_path(dir: &Path, v: Variant) -> PathBuf {
    dir.join(v.package()).join("src/lib.rs")
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn min_max(v: &[f64]) -> (f64, f64) {
    v.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| (lo.min(*x), hi.max(*x)))
}

const VARIANTS: [Variant; 3] = [Variant::Docshape, Variant::Serde, Variant::Schemars];

fn set_up(o: &Options) {
    let repo = o.repo.to_str().expect("a UTF-8 repository path");
    write(&o.dir.join("Cargo.toml"), &generate::workspace_toml());
    // The repository's lock file, so every version matches what it builds with and
    // nothing has to be fetched; cargo adds the two generated packages to it.
    std::fs::copy(o.repo.join("Cargo.lock"), o.dir.join("Cargo.lock")).expect("copy Cargo.lock");
    for v in VARIANTS {
        write(&o.dir.join(v.package()).join("Cargo.toml"), &generate::package_toml(v, repo));
        write(&lib_path(&o.dir, v), &generate::lib_rs_of(o.shape, v, 1, 0));
    }
    println!("workspace: {}", o.dir.display());
    // The one step that may use the network: schemars' packages, which this
    // repository's lock file does not hold. Everything else is already cached.
    let fetched = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(&o.dir)
        .args(["fetch", "-q"])
        .status()
        .expect("cargo runs");
    assert!(fetched.success(), "cargo fetch failed in {}", o.dir.display());
    let mut args = vec!["build", "-q"];
    for v in VARIANTS {
        args.extend(["-p", v.package()]);
    }
    let ms = timed(&o.dir, &args);
    println!("dependencies built in {:.1} s (once; kept for the next run)", ms / 1e3);
}

/// Interleaved rebuilds of the three crates at `n` models; returns the table row.
fn measure(o: &Options, n: usize, salt: &mut u64) -> String {
    let build = |v: Variant, salt: u64| {
        write(&lib_path(&o.dir, v), &generate::lib_rs_of(o.shape, v, n, salt));
        timed(&o.dir, &["build", "-q", "-p", v.package()])
    };
    // A build of each first, not counted: it is the one that finds nothing cached.
    for v in VARIANTS {
        *salt += 1;
        build(v, *salt);
    }
    let mut times: [Vec<f64>; 3] = Default::default();
    let (mut vs_serde, mut vs_schemars) = (Vec::new(), Vec::new());
    for round in 0..o.rounds {
        *salt += 1;
        // Each variant goes first, second and third in turn, so none always builds
        // while the machine is busiest.
        let mut t = [0.0; 3];
        for k in 0..VARIANTS.len() {
            let i = (round + k) % VARIANTS.len();
            t[i] = build(VARIANTS[i], *salt);
        }
        let [d, s, j] = t;
        println!(
            "  N = {n}, round {}: docshape {d:.0} ms, serde only {s:.0} ms, serde + schemars {j:.0} ms; \
             {:.2}x serde, {:.2}x schemars",
            round + 1,
            d / s,
            d / j
        );
        for (i, x) in t.into_iter().enumerate() {
            times[i].push(x);
        }
        vs_serde.push(d / s);
        vs_schemars.push(d / j);
    }
    let noop = timed(&o.dir, &["build", "-q", "-p", Variant::Serde.package()]);
    let (lo, hi) = min_max(&vs_serde);
    let (jlo, jhi) = min_max(&vs_schemars);
    let [d, s, j] = [median(&times[0]), median(&times[1]), median(&times[2])];
    format!(
        "| {n} | {d:.0} | {s:.0} | {j:.0} | {:.2}x | {lo:.2}x-{hi:.2}x | {:.2}x | {jlo:.2}x-{jhi:.2}x | {:.1} | {:.1} | {:.1} | {noop:.0} |",
        median(&vs_serde),
        median(&vs_schemars),
        d / n as f64,
        s / n as f64,
        j / n as f64,
    )
}

/// Clean builds of the proc-macro crates alone, interleaved.
fn derive_builds(o: &Options) {
    let clean_build = |package: &str| {
        timed(&o.dir, &["clean", "-q", "-p", package]);
        timed(&o.dir, &["build", "-q", "-p", package])
    };
    // One of each first, not counted: building a package alone may first build its
    // dependencies with other features than the models crate needed.
    clean_build("docshape-derive");
    clean_build("serde_derive");
    let (mut ds, mut serde, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..o.derive_rounds {
        let (d, s) = if round % 2 == 0 {
            let d = clean_build("docshape-derive");
            (d, clean_build("serde_derive"))
        } else {
            let s = clean_build("serde_derive");
            (clean_build("docshape-derive"), s)
        };
        println!("  round {}: docshape-derive {d:.0} ms, serde_derive {s:.0} ms, {:.2}x", round + 1, d / s);
        ds.push(d);
        serde.push(s);
        ratios.push(d / s);
    }
    let (lo, hi) = min_max(&ratios);
    println!("| proc-macro crate | clean build, median | rounds |");
    println!("|---|---:|---:|");
    println!("| docshape-derive | {:.0} ms | {} |", median(&ds), o.derive_rounds);
    println!("| serde_derive | {:.0} ms | {} |", median(&serde), o.derive_rounds);
    println!("docshape-derive / serde_derive: {:.2}x (median of rounds; {lo:.2}x-{hi:.2}x)", median(&ratios));
}

/// Lines of each variant's macro expansion at `n` models, and per model.
fn expansion(o: &Options, n: usize) {
    println!("| variant | expanded lines | lines per model | `__ds::` paths per model |");
    println!("|---|---:|---:|---:|");
    for v in VARIANTS {
        write(&lib_path(&o.dir, v), &generate::lib_rs_of(o.shape, v, n, 0));
        let out = cargo(&o.dir)
            .args(["rustc", "-q", "-p", v.package(), "--profile", "check", "--", "-Zunpretty=expanded"])
            // What `cargo expand` does on a stable toolchain: the flag is unstable.
            .env("RUSTC_BOOTSTRAP", "1")
            .output()
            .expect("cargo runs");
        if !out.status.success() {
            eprintln!("{}", String::from_utf8_lossy(&out.stderr));
            panic!("expanding {} failed", v.package());
        }
        let text = String::from_utf8_lossy(&out.stdout);
        write(&o.dir.join(format!("{}.expanded.rs", v.package())), &text);
        let lines = text.lines().filter(|l| !l.trim().is_empty()).count();
        let ds_paths = text.matches("__ds::").count();
        println!(
            "| {} | {lines} | {:.0} | {:.0} |",
            v.package(),
            lines as f64 / n as f64,
            ds_paths as f64 / n as f64
        );
    }
    println!("(expansions written next to the workspace's Cargo.toml)");
}

/// One `cargo build --timings` of each variant: where the crate's time goes, as the
/// report splits it (the front end: parsing, macro expansion, type checking; then
/// code generation).
fn timings(o: &Options, n: usize, salt: &mut u64) {
    println!("| variant | rustc total | front end | codegen |");
    println!("|---|---:|---:|---:|");
    for v in VARIANTS {
        *salt += 1;
        write(&lib_path(&o.dir, v), &generate::lib_rs_of(o.shape, v, n, *salt));
        timed(&o.dir, &["build", "-q", "--timings", "-p", v.package()]);
        let report = o.dir.join("target/cargo-timings/cargo-timing.html");
        let html = std::fs::read_to_string(&report).unwrap_or_default();
        match unit_times(&html, v.package()) {
            Some((total, frontend)) => {
                println!("| {} | {total:.2} s | {frontend:.2} s | {:.2} s |", v.package(), total - frontend)
            }
            None => println!("| {} | (not found in {}) | | |", v.package(), report.display()),
        }
    }
}

/// A unit's `duration` and the end of its `frontend` section, in seconds, from the
/// unit data of a `cargo-timing.html` (pretty-printed JSON inside the page).
fn unit_times(html: &str, package: &str) -> Option<(f64, f64)> {
    let unit = &html[html.find(&format!("\"name\": \"{package}\""))?..];
    let unit = &unit[..unit[1..].find("\"i\":").map_or(unit.len(), |i| i + 1)];
    let number_after = |text: &str, key: &str| -> Option<f64> {
        let rest = text[text.find(key)? + key.len()..].trim_start();
        let end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        rest[..end].parse().ok()
    };
    let duration = number_after(unit, "\"duration\":")?;
    let frontend = &unit[unit.find("\"frontend\"")?..];
    Some((duration, number_after(frontend, "\"end\":")?))
}

fn main() {
    let o = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    set_up(&o);
    let mut salt = 1;
    println!();
    println!("Rebuild of the models crate ({:?} models), {} interleaved rounds each:", o.shape, o.rounds);
    println!();
    let rows: Vec<String> = o.counts.iter().map(|&n| measure(&o, n, &mut salt)).collect();
    println!();
    println!("| models | docshape (median) | serde only (median) | serde + schemars (median) | docshape / serde (median of rounds) | spread | docshape / schemars (median of rounds) | spread | docshape ms per model | serde ms per model | schemars ms per model | no-op build |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for row in rows {
        println!("{row}");
    }
    if o.timings {
        let n = *o.counts.iter().max().unwrap_or(&25);
        println!();
        println!("`cargo build --timings`, N = {n}:");
        timings(&o, n, &mut salt);
    }
    if o.expand {
        let n = o.counts[0];
        println!();
        println!("Macro expansion, N = {n}:");
        expansion(&o, n);
    }
    if o.derive_rounds > 0 {
        println!();
        println!("Clean build of the proc-macro crate alone, dependencies kept, {} rounds:", o.derive_rounds);
        derive_builds(&o);
    }
}
