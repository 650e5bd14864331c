//! docshape's tools, apart from the runtime an application links: a deploy tool in one
//! call, `fn main() -> ExitCode { docshape_cli::main() }` in a binary that links the
//! models, gives `export`, `verify`, `check` and `sync` for every registered model, and
//! `infer`, which writes models from a sample of a live database (the `docshape`
//! binary of this crate: `cargo install --path cli`, then `docshape infer --uri ...
//! --db ...`). The library behind them: [`infer`] (models from live data) and
//! [`check`] (the workload against the access tables). The arguments are parsed by clap, and the commands
//! are a [`clap::Subcommand`], [`Commands`], so they can also be one subcommand of a
//! tool of your own, run with [`run_command`]:
//!
//! ```no_run
//! use clap::Parser;
//!
//! #[derive(Parser)]
//! struct Tool {
//!     #[command(subcommand)]
//!     command: Command,
//! }
//!
//! #[derive(clap::Subcommand)]
//! enum Command {
//!     /// Serve the application.
//!     Serve,
//!     /// The schema: export, verify, check, sync.
//!     #[command(subcommand)]
//!     Schema(docshape_cli::Commands),
//! }
//!
//! fn main() -> std::process::ExitCode {
//!     match Tool::parse().command {
//!         Command::Serve => std::process::ExitCode::SUCCESS,
//!         Command::Schema(command) => docshape_cli::run_command(command),
//!     }
//! }
//! ```
//!
//! ```text
//! USAGE: <tool> <command> [options]
//!
//!   export [DIR]   write every model's artifacts into DIR (default: schema)
//!   verify [DIR]   exit 1 when the artifacts in DIR differ from the code
//!   check          exit 1 when the database differs from the code (validators,
//!                  validation level and action, indexes, shard key)
//!       --workload                  also compare each model's access table with the
//!                                   queries in system.profile: exit 1 on a shape no
//!                                   row declares, a row never called, a row that ran
//!                                   without its index, or a rate above twice its freq
//!       --since WHEN                only the profiler's entries since WHEN: a duration
//!                                   back from now (90s, 30min, 12h, 7day) or an
//!                                   RFC 3339 time (default: every entry, at most
//!                                   100,000 per collection)
//!   sync           make the database match the code
//!       --dry-run                   say what sync would do, change nothing; exit 1
//!                                   when anything would change
//!       --drop-extra-indexes        drop indexes the code does not declare
//!       --rebuild-changed-indexes   rebuild indexes whose keys or options changed
//!       --allow-older-schema        install an older schema version's validator
//!       --allow-weaker-validator    replace a validator holding constraints docshape
//!                                   cannot express (they are lost)
//!   infer          write models inferred from live data (models.rs) and a report
//!                  (INFERRED.md) into --out DIR (default: inferred)
//!       --collection NAME           only this collection (repeatable)
//!       --sample N                  documents sampled per collection (default 1000)
//!       --workload                  propose access rows from system.profile
//!       --plain                     keep the plain forms: no `allowed`, `Ref<T>`,
//!                                   `#[denormalized]`, polymorphic enum, tenant,
//!                                   `#[bucket]` or `#[outlier]` from the data
//!
//!   check, sync and infer connect with --uri URI (default: $MONGODB_URI) to the database
//!   --db NAME (default: the URI's database), giving up after --timeout SECONDS
//!   (default 5, or the URI's serverSelectionTimeoutMS) when no server answers.
//! ```
//!
//! Exit status: 0 when all is well (and for `help`), 1 on drift (with `check
//! --workload`, also on any workload finding: see
//! [`WorkloadReport`](crate::check::WorkloadReport)), 2 on a usage error or any other
//! failure (no server, a directory that does not exist, a file that cannot
//! be read or is not a regular file, a program that links no models for `export`,
//! `verify`, `check` or `sync`, an `infer --db` or `--collection` that is not on the
//! server), with an `error: ...` on stderr that names the cause (one line, but for
//! usage errors, which add the usage).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{CommandFactory, FromArgMatches};
use docshape::mongodb::options::ClientOptions;
use docshape::mongodb::{self, Client, Database};

use docshape::bson;
use docshape::sync::SyncOptions;

pub mod check;
pub mod infer;
mod trace;

/// The clap these commands are built with, for a tool that embeds them.
pub use clap;

/// Whatever stops a command: docshape's errors, or the tool's own (no URI, say).
type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// How long `check` and `sync` wait for a server by default: a deploy tool should say
/// at once that nothing answers, not after the driver's 30 s.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

const AFTER_HELP: &str =
    "check, sync and infer connect with --uri URI (default: $MONGODB_URI) to the database \
--db NAME (default: the URI's database), giving up after --timeout SECONDS (default 5, or the \
URI's serverSelectionTimeoutMS) when no server answers.

Exit status: 0 when all is well, 1 on drift, 2 on a usage error or any other failure. \
check --workload's findings are drift.";

/// docshape's commands for every registered model: a [`clap::Subcommand`], to be the
/// whole of a deploy tool ([`main`]) or one subcommand of yours ([`run_command`]).
#[derive(Debug, Clone, PartialEq, clap::Subcommand)]
// More commands may come: a tool that matches on them keeps a `_` arm.
#[non_exhaustive]
pub enum Commands {
    /// Write every model's artifacts into DIR.
    Export {
        /// The directory (created if missing).
        #[arg(default_value = "schema")]
        dir: PathBuf,
    },
    /// Exit 1 when the artifacts in DIR differ from the code.
    Verify {
        /// The directory holding the exported artifacts.
        #[arg(default_value = "schema")]
        dir: PathBuf,
    },
    /// Exit 1 when the database differs from the code (validators, validation level
    /// and action, indexes, shard key).
    Check {
        /// Where to connect.
        #[command(flatten)]
        connection: Connection,
        /// Also compare each model's access table with the queries the profiler
        /// recorded (system.profile): exit 1 on a shape no row declares, a row never
        /// called, a row that ran without its index, or a rate above twice its freq.
        #[arg(long)]
        workload: bool,
        /// With --workload, only the profiler's entries since WHEN: a duration back
        /// from now (90s, 30min, 12h, 7day) or an RFC 3339 time (default: every entry,
        /// at most 100,000 per collection).
        #[arg(long, value_name = "WHEN", requires = "workload", value_parser = since)]
        since: Option<Since>,
    },
    /// Make the database match the code.
    Sync {
        /// Where to connect.
        #[command(flatten)]
        connection: Connection,
        /// Say what sync would do, change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Drop indexes the code does not declare.
        #[arg(long)]
        drop_extra_indexes: bool,
        /// Rebuild indexes whose keys or options changed.
        #[arg(long)]
        rebuild_changed_indexes: bool,
        /// Install the validator even over one of a newer schema version (a
        /// deliberate rollback); without it such a sync changes nothing and exits 2.
        #[arg(long)]
        allow_older_schema: bool,
        /// Replace a validator even when the server's holds constraints docshape cannot
        /// express (they would be lost); without it such a sync changes nothing and
        /// exits 2.
        #[arg(long)]
        allow_weaker_validator: bool,
    },
    /// Write models inferred from a sample of each collection (Rust source) and a
    /// report of what was seen (Markdown) into DIR.
    Infer {
        /// Where to connect.
        #[command(flatten)]
        connection: Connection,
        /// Read only this collection (repeatable; default: every collection).
        #[arg(long, value_name = "NAME")]
        collection: Vec<String>,
        /// Documents sampled per collection (a smaller collection is read whole).
        #[arg(long, value_name = "N", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
        sample: u64,
        /// The directory for models.rs and INFERRED.md (created if missing).
        #[arg(long, value_name = "DIR", default_value = "inferred")]
        out: PathBuf,
        /// Also propose access-pattern rows from the profiler's entries (system.profile).
        #[arg(long)]
        workload: bool,
        /// Keep the plain forms: no `allowed = [...]`, `Ref<T>`, `#[denormalized]`,
        /// polymorphic enum, tenant, `#[bucket]` or `#[outlier]` from the data.
        #[arg(long)]
        plain: bool,
    },
}

/// `check --since`: where the window of profiler entries starts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Since {
    /// This long before the command runs.
    Ago(Duration),
    /// At this time.
    At(bson::DateTime),
}

impl Since {
    /// The time the window starts, for a command run `now`.
    pub fn start(self, now: bson::DateTime) -> bson::DateTime {
        match self {
            Self::At(at) => at,
            Self::Ago(ago) => bson::DateTime::from_millis(
                now.timestamp_millis().saturating_sub(i64::try_from(ago.as_millis()).unwrap_or(i64::MAX)),
            ),
        }
    }
}

/// Where `check`, `sync` and `infer` connect.
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
// More options may come: build it from `Default` and set the fields.
#[non_exhaustive]
pub struct Connection {
    /// The server's URI, `mongodb://` or `mongodb+srv://`.
    // Its value is never shown in the help: a URI may hold a password.
    #[arg(long, value_name = "URI", env = "MONGODB_URI", hide_env_values = true)]
    pub uri: Option<String>,
    /// The database (default: the URI's).
    #[arg(long, value_name = "NAME", value_parser = db_name)]
    pub db: Option<String>,
    /// Give up after SECONDS when no server answers (default 5, or the URI's
    /// serverSelectionTimeoutMS).
    #[arg(long, value_name = "SECONDS", value_parser = timeout)]
    pub timeout: Option<Duration>,
}

/// The tool [`main`] and [`run`] parse: docshape's commands at the top.
#[derive(Debug, clap::Parser)]
#[command(
    about = "export, verify, check and sync the schema of every model this program links; infer models from a database",
    after_help = AFTER_HELP,
    disable_version_flag = true
)]
struct Tool {
    #[command(subcommand)]
    command: Commands,
}

/// Runs the command named by the process's arguments and returns its exit status.
pub fn main() -> ExitCode {
    ExitCode::from(status(std::env::args_os()))
}

/// Runs one command (the arguments after the program name), printing to stdout and
/// stderr, and returns its exit status: 0 when all is well, 1 on drift, 2 on a usage
/// error or a failure.
pub fn run(args: impl IntoIterator<Item = String>) -> ExitCode {
    ExitCode::from(status(std::iter::once("docshape".to_owned()).chain(args)))
}

/// Runs a command parsed elsewhere (a subcommand of your own clap tool) and returns
/// its exit status: 0 when all is well, 1 on drift, 2 on a failure, with an
/// `error: ...` line on stderr.
pub fn run_command(command: Commands) -> ExitCode {
    ExitCode::from(execute_status(command))
}

/// The exit status of the tool run with `args` (program name first).
fn status<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    match parse_args(args) {
        Ok(command) => execute_status(command),
        Err(e) => {
            use clap::error::ErrorKind;
            match e.kind() {
                // `help`, `--help`: printed to stdout, status 0.
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                    let _ = e.print();
                    0
                }
                ErrorKind::InvalidSubcommand => {
                    let name = e.get(clap::error::ContextKind::InvalidSubcommand).map(ToString::to_string);
                    eprintln!("error: unknown command `{}`\n\n{}", name.unwrap_or_default(), usage());
                    2
                }
                ErrorKind::MissingSubcommand | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                    eprintln!("error: no command given\n\n{}", usage());
                    2
                }
                _ => {
                    let _ = e.print();
                    2
                }
            }
        }
    }
}

fn usage() -> String {
    Tool::command().render_help().to_string()
}

fn parse_args<I, T>(args: I) -> std::result::Result<Commands, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let matches = Tool::command().try_get_matches_from(args)?;
    Ok(Tool::from_arg_matches(&matches)?.command)
}

fn execute_status(command: Commands) -> u8 {
    match execute(command.into()) {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(e) => {
            eprintln!("error: {}", one_line(&e.to_string()));
            2
        }
    }
}

/// A command as [`execute`] runs it.
#[derive(Debug, PartialEq)]
enum Command {
    Export(PathBuf),
    Verify(PathBuf),
    Check(Connection, Option<Option<Since>>),
    Sync(Connection, SyncOptions, bool),
    Infer(Connection, crate::infer::InferOptions, PathBuf),
}

impl From<Commands> for Command {
    fn from(c: Commands) -> Self {
        match c {
            Commands::Export { dir } => Command::Export(dir),
            Commands::Verify { dir } => Command::Verify(dir),
            Commands::Check { connection, workload, since } => {
                Command::Check(connection, workload.then_some(since))
            }
            Commands::Sync {
                connection,
                dry_run,
                drop_extra_indexes,
                rebuild_changed_indexes,
                allow_older_schema,
                allow_weaker_validator,
            } => Command::Sync(
                connection,
                SyncOptions::default()
                    .drop_extra_indexes(drop_extra_indexes)
                    .rebuild_changed_indexes(rebuild_changed_indexes)
                    .allow_older_schema(allow_older_schema)
                    .allow_weaker_validator(allow_weaker_validator),
                dry_run,
            ),
            Commands::Infer { connection, collection, sample, out, workload, plain } => Command::Infer(
                connection,
                crate::infer::InferOptions::default()
                    .sample(sample)
                    .collections(collection)
                    .workload(workload)
                    .plain(plain)
                    .progress(true),
                out,
            ),
        }
    }
}

/// `--db`: a database name by MongoDB's rules.
fn db_name(name: &str) -> std::result::Result<String, String> {
    check_db_name(name)?;
    Ok(name.to_owned())
}

/// `--since`: a duration (a number and `s`, `min`, `h` or `day`, as `freq` spells its
/// units, above 0 and at most 10 years) or an RFC 3339 time.
fn since(text: &str) -> std::result::Result<Since, String> {
    let refuse = || {
        format!(
            "--since takes a duration (90s, 30min, 12h, 7day) or an RFC 3339 time              (2026-01-31T08:00:00Z), not `{text}`"
        )
    };
    if let Ok(at) = bson::DateTime::parse_rfc3339_str(text) {
        return Ok(Since::At(at));
    }
    let at = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(refuse)?;
    let number: f64 = text[..at].parse().map_err(|_| refuse())?;
    let unit = match text[at..].trim() {
        "s" => 1.0,
        "min" => 60.0,
        "h" => 3600.0,
        "day" | "d" => 86_400.0,
        _ => return Err(refuse()),
    };
    let seconds = number * unit;
    if !(seconds.is_finite() && seconds > 0.0 && seconds <= 10.0 * 365.0 * 86_400.0) {
        return Err(refuse());
    }
    Ok(Since::Ago(Duration::from_secs_f64(seconds)))
}

/// `--timeout`: seconds, above 0 and at most an hour.
fn timeout(text: &str) -> std::result::Result<Duration, String> {
    let seconds: f64 = text
        .parse()
        .ok()
        .filter(|s: &f64| s.is_finite() && *s > 0.0 && *s <= 3600.0)
        .ok_or_else(|| format!("--timeout takes seconds (above 0, at most 3600), not `{text}`"))?;
    Ok(Duration::from_secs_f64(seconds))
}

/// `Ok(true)` when all is well, `Ok(false)` on drift.
fn execute(command: Command) -> Result<bool> {
    match command {
        Command::Export(dir) => {
            require_models("export", true)?;
            let artifacts = docshape::artifacts::registered()?;
            let written = docshape::artifacts::write(&dir, &artifacts)
                .map_err(|e| format!("cannot write into {}: {e}", dir.display()))?;
            println!("{} artifacts in {}, {} rewritten", artifacts.len(), dir.display(), written.len());
            for name in written {
                println!("  wrote {name}");
            }
            Ok(true)
        }
        Command::Verify(dir) => {
            // A directory that is not there is a mistake in the command, not drift.
            if !dir.is_dir() {
                return Err(format!("cannot read {}: no such directory", dir.display()).into());
            }
            require_models("verify", true)?;
            let artifacts = docshape::artifacts::registered()?;
            let drift = docshape::artifacts::compare(&dir, &artifacts)
                .map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
            for d in &drift {
                println!("{d}");
            }
            if drift.is_empty() {
                println!("{} artifacts in {} match the code", artifacts.len(), dir.display());
            }
            Ok(drift.is_empty())
        }
        Command::Check(connection, workload) => block_on(async {
            require_models("check", false)?;
            let db = connect(&connection).await?;
            let reports = docshape::check::check_all(&db).await?;
            for report in &reports {
                print!("{report}");
            }
            let mut clean = reports.iter().all(|r| r.is_clean());
            if let Some(since) = workload {
                let options = crate::check::WorkloadOptions::default()
                    .since(since.map(|s| s.start(bson::DateTime::now())));
                for report in crate::check::check_workload_all(&db, &options).await? {
                    print!("{report}");
                    clean &= report.is_clean();
                }
            }
            Ok(clean)
        }),
        Command::Sync(connection, options, dry_run) => block_on(async {
            require_models("sync", false)?;
            let db = connect(&connection).await?;
            // A dry run gates a deploy as `check` does: exit 1 when anything would change.
            let mut unchanged = true;
            for spec in docshape::registry::specs()? {
                if dry_run {
                    let plan = docshape::sync::plan_spec(&db, &spec, options).await?;
                    unchanged &= plan.report.is_unchanged();
                    // The changes in the order they would be applied, and under a
                    // replaced validator each path that differs.
                    println!("would: {}", plan.report);
                    for change in &plan.report.changes {
                        if let docshape::sync::SyncChange::ValidatorChanged { before: Some(server) } = change
                        {
                            for d in docshape::check::validator_differences(server, &spec.validator) {
                                println!("    {d}");
                            }
                        }
                    }
                } else {
                    // sync_spec, not plan + apply: it re-plans when another deploy
                    // creates the collection at the same moment.
                    println!("{}", docshape::sync::sync_spec(&db, &spec, options).await?);
                }
            }
            Ok(unchanged)
        }),
        Command::Infer(connection, options, out) => block_on(async {
            let db = connect(&connection).await?;
            // Before anything is sampled or written: a database or collection that is
            // not there would give empty files that read as an empty schema.
            require_collections(&db, &options.collections).await?;
            let inferred = crate::infer::infer(&db, &options).await?;
            let written =
                inferred.write(&out).map_err(|e| format!("cannot write into {}: {e}", out.display()))?;
            for c in &inferred.collections {
                let found = c.anti_patterns().len();
                println!(
                    "{}: {} of about {} documents sampled, {} indexes, {found} anti-pattern(s)",
                    c.name,
                    c.sampled,
                    c.estimated_count,
                    c.indexes.len() + 1
                );
            }
            for path in written {
                println!("  wrote {}", path.display());
            }
            Ok(true)
        }),
    }
}

/// An error when this program links nothing `command` works on, before any server is
/// reached: a command over no models would print nothing and exit 0, which reads as a
/// clean result when nothing was looked at (the `docshape` binary links none).
/// `artifacts`: whether key families alone (their catalog, `KEYS.md`) are enough; the
/// design-decision table comes from the models, and has nothing to say without them.
fn require_models(command: &str, artifacts: bool) -> Result<()> {
    let none = docshape::registry::specs()?.is_empty()
        && (!artifacts
            || docshape::__private::generated_files()?
                .iter()
                .all(|(file, _)| *file == docshape::artifacts::DESIGN_DECISIONS_FILE));
    if none {
        return Err(format!(
            "this program links no models, so `{command}` has nothing to work on: run it from a binary \
             that links your models and calls `docshape_cli::main` (the `docshape` binary links none; \
             it only runs `infer`)"
        )
        .into());
    }
    Ok(())
}

/// An error when `db` does not exist (it holds no collection: MongoDB has no empty
/// databases), naming the databases that do when the server lists them, or when one
/// of `wanted` is not a collection of it, with the closest name.
async fn require_collections(db: &Database, wanted: &[String]) -> Result<()> {
    let mut names: Vec<String> =
        db.list_collection_names().await?.into_iter().filter(|n| !n.starts_with("system.")).collect();
    names.sort();
    if names.is_empty() {
        // listDatabases needs a privilege the user may lack: the list is a help, not
        // a requirement.
        let others = match db.client().list_database_names().await {
            Ok(all) => {
                let all: Vec<String> =
                    all.into_iter().filter(|n| !["admin", "config", "local"].contains(&n.as_str())).collect();
                if all.is_empty() {
                    "; the server holds no other database".to_owned()
                } else {
                    format!("; the databases there: {}", all.join(", "))
                }
            }
            Err(_) => String::new(),
        };
        return Err(format!(
            "database `{}` does not exist on the server (it holds no collections), nothing written{others}",
            db.name()
        )
        .into());
    }
    for name in wanted {
        if !names.contains(name) {
            let hint = match closest(name, &names) {
                Some(close) => format!("; did you mean `{close}`?"),
                None => format!("; its collections: {}", listed(&names)),
            };
            return Err(format!(
                "collection `{name}` does not exist in database `{}`, nothing written{hint}",
                db.name()
            )
            .into());
        }
    }
    Ok(())
}

/// At most ten names, then how many more.
fn listed(names: &[String]) -> String {
    let mut text = names.iter().take(10).map(String::as_str).collect::<Vec<_>>().join(", ");
    if names.len() > 10 {
        text.push_str(&format!(" and {} more", names.len() - 10));
    }
    text
}

/// The name among `names` nearest to `name` (case aside), if it is near enough to
/// be a typo: at most a third of its characters apart, and at least one.
fn closest<'a>(name: &str, names: &'a [String]) -> Option<&'a str> {
    let name = name.to_lowercase();
    names
        .iter()
        .map(|n| (edit_distance(&name, &n.to_lowercase()), n))
        .filter(|(d, _)| *d <= (name.chars().count() / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n.as_str())
}

/// Levenshtein distance, in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1).min(row[j] + 1).min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

fn block_on<T>(work: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start an async runtime: {e}"))?;
    runtime.block_on(work)
}

async fn connect(connection: &Connection) -> Result<Database> {
    let uri = match &connection.uri {
        Some(uri) => uri.clone(),
        None => std::env::var("MONGODB_URI")
            .map_err(|_| "no database to connect to: pass --uri or set MONGODB_URI")?,
    };
    let mut options = ClientOptions::parse(&uri).await.map_err(|e| format!("bad URI: {}", short(&e)))?;
    // --timeout, else the URI's own, else a short default.
    let timeout = connection.timeout.or(options.server_selection_timeout).unwrap_or(DEFAULT_TIMEOUT);
    options.server_selection_timeout = Some(timeout);
    if options.connect_timeout.is_none() {
        options.connect_timeout = Some(timeout);
    }
    let hosts: Vec<String> = options.hosts.iter().map(ToString::to_string).collect();
    let name = connection
        .db
        .clone()
        .or_else(|| options.default_database.clone())
        .ok_or("no database named: pass --db or put one in the URI (`.../mydb`)")?;
    check_db_name(&name)?;
    let db = Client::with_options(options).map_err(|e| short(&e))?.database(&name);
    // One round trip now, so that an unreachable server is one line, not the first
    // command's error.
    db.run_command(bson::doc! { "ping": 1 }).await.map_err(|e| {
        let cause = match e.kind.as_ref() {
            mongodb::error::ErrorKind::ServerSelection { .. } => {
                let text = e.to_string();
                if text.contains("refused") {
                    "connection refused".to_owned()
                } else if text.contains("timed out") || text.contains("deadline") {
                    "no answer".to_owned()
                } else {
                    "no server available".to_owned()
                }
            }
            _ => short(&e),
        };
        format!("cannot reach {} within {:?}: {cause}", hosts.join(","), timeout)
    })?;
    Ok(db)
}

/// MongoDB's rules for a database name: not empty, under 64 bytes, none of `/\. "$`.
fn check_db_name(name: &str) -> std::result::Result<(), String> {
    if name.is_empty() {
        return Err("the database name is empty".to_owned());
    }
    if name.len() >= 64 || name.chars().any(|c| "/\\. \"$\0".contains(c)) {
        return Err(format!("`{name}` is not a database name (under 64 bytes, none of `/\\. \"$`)"));
    }
    Ok(())
}

/// The first line of a driver error, without its labels and raw reply.
fn short(e: &mongodb::error::Error) -> String {
    one_line(&e.to_string())
}

/// An error message on one line, at most 300 characters.
fn one_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    match line.char_indices().nth(300) {
        Some((at, _)) => format!("{}...", &line[..at]),
        None => line.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_owned).collect()
    }

    /// The command line alone: `MONGODB_URI` in the test's environment is not read
    /// (the fallback itself is tested through `shopctl`, with the variable set).
    fn parse(args: Vec<String>) -> std::result::Result<Command, String> {
        let tool = Tool::command()
            .mut_subcommand("check", |c| c.mut_arg("uri", |a| a.env(None)))
            .mut_subcommand("sync", |c| c.mut_arg("uri", |a| a.env(None)))
            .mut_subcommand("infer", |c| c.mut_arg("uri", |a| a.env(None)));
        let matches = tool
            .try_get_matches_from(std::iter::once("docshape".to_owned()).chain(args))
            .map_err(|e| e.to_string())?;
        Ok(Tool::from_arg_matches(&matches).map_err(|e| e.to_string())?.command.into())
    }

    /// A user's tool with a command of its own and docshape's as one subcommand.
    #[derive(Debug, clap::Parser)]
    struct UserTool {
        #[command(subcommand)]
        command: UserCommand,
    }

    #[derive(Debug, PartialEq, clap::Subcommand)]
    enum UserCommand {
        /// Serve the application.
        Serve {
            #[arg(long, default_value_t = 8080)]
            port: u16,
        },
        /// The schema.
        #[command(subcommand)]
        Schema(Commands),
    }

    #[test]
    fn the_commands_embed_as_a_subcommand_of_another_tool() {
        use clap::Parser;
        let parse = |line: &str| UserTool::try_parse_from(args(&format!("tool {line}"))).map(|t| t.command);
        assert_eq!(parse("serve").unwrap(), UserCommand::Serve { port: 8080 });
        assert_eq!(
            parse("schema sync --db shop --dry-run --timeout 2").unwrap(),
            UserCommand::Schema(Commands::Sync {
                connection: Connection {
                    db: Some("shop".into()),
                    timeout: Some(Duration::from_secs(2)),
                    // The environment's, if the test runs with one.
                    uri: std::env::var("MONGODB_URI").ok(),
                },
                dry_run: true,
                drop_extra_indexes: false,
                rebuild_changed_indexes: false,
                allow_older_schema: false,
                allow_weaker_validator: false,
            })
        );
        assert_eq!(
            parse("schema export out").unwrap(),
            UserCommand::Schema(Commands::Export { dir: "out".into() })
        );
        assert!(parse("schema check --db a.b").is_err());
        assert!(parse("schema frobnicate").is_err());
        // The user's tool runs the parsed command. This test binary links no models:
        // an export refuses (status 2) and writes nothing, as does verifying a
        // directory that is not there (shopctl's tests run both over models).
        let dir = std::env::temp_dir().join(format!("docshape-cli-embed-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let UserCommand::Schema(export) = parse(&format!("schema export {}", dir.display())).unwrap() else {
            panic!("not the schema command")
        };
        assert_eq!(execute_status(export), 2);
        assert!(!dir.exists());
        let UserCommand::Schema(verify) = parse(&format!("schema verify {}", dir.display())).unwrap() else {
            panic!("not the schema command")
        };
        assert_eq!(execute_status(verify), 2);
        let error = execute(Command::Export(dir.clone())).unwrap_err().to_string();
        assert!(error.starts_with("this program links no models, so `export`"), "{error}");
        // The help of the user's tool lists docshape's commands under its own.
        let help = UserTool::command().find_subcommand_mut("schema").unwrap().render_help().to_string();
        for command in ["export", "verify", "check", "sync"] {
            assert!(help.contains(command), "{help}");
        }
    }

    #[test]
    fn a_missing_collection_is_matched_to_the_closest_name_only_when_near() {
        let names: Vec<String> = ["customers", "orders", "order_items"].map(String::from).to_vec();
        assert_eq!(closest("ordres", &names), Some("orders"));
        assert_eq!(closest("Customer", &names), Some("customers"));
        assert_eq!(closest("order_item", &names), Some("order_items"));
        assert_eq!(closest("invoices", &names), None);
        assert_eq!(closest("x", &names), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        let many: Vec<String> = (0..12).map(|i| format!("c{i}")).collect();
        assert_eq!(listed(&many), "c0, c1, c2, c3, c4, c5, c6, c7, c8, c9 and 2 more");
    }

    #[test]
    fn help_names_every_command_option_default_and_exit_status() {
        let help = Tool::command().render_long_help().to_string();
        for text in
            ["export", "verify", "check", "sync", "infer", "Exit status: 0 when all is well, 1 on drift, 2"]
        {
            assert!(help.contains(text), "{text:?} in {help}");
        }
        let mut tool = Tool::command();
        let sync = tool.find_subcommand_mut("sync").unwrap().render_long_help().to_string();
        for text in [
            "--dry-run",
            "--drop-extra-indexes",
            "--rebuild-changed-indexes",
            "--allow-weaker-validator",
            "--uri <URI>",
            "[env: MONGODB_URI",
            "--db <NAME>",
            "--timeout <SECONDS>",
            "Say what sync would do, change nothing",
        ] {
            assert!(sync.contains(text), "{text:?} in {sync}");
        }
        let export = tool.find_subcommand_mut("export").unwrap().render_long_help().to_string();
        assert!(export.contains("[default: schema]"), "{export}");
        assert!(!export.contains("--uri"), "export reads no database: {export}");
        let check = tool.find_subcommand_mut("check").unwrap().render_long_help().to_string();
        for text in ["--workload", "--since <WHEN>", "a row that ran without its index", "RFC 3339"] {
            assert!(check.contains(text), "{text:?} in {check}");
        }
        let infer = tool.find_subcommand_mut("infer").unwrap().render_long_help().to_string();
        for text in [
            "--uri <URI>",
            "--db <NAME>",
            "--collection <NAME>",
            "--sample <N>",
            "[default: 1000]",
            "--out <DIR>",
            "[default: inferred]",
        ] {
            assert!(infer.contains(text), "{text:?} in {infer}");
        }
    }

    #[test]
    fn exit_status_is_0_for_help_and_2_for_usage_errors() {
        let status = |line: &str| status(args(&format!("docshape {line}")));
        assert_eq!(status("help"), 0);
        assert_eq!(status("--help"), 0);
        assert_eq!(status("sync --help"), 0);
        for bad in ["", "frobnicate", "check --nope", "export a b", "check --timeout 0", "sync --db="] {
            assert_eq!(status(bad), 2, "{bad:?}");
        }
    }

    #[test]
    fn parses_commands_and_refuses_what_does_not_belong() {
        assert_eq!(parse(args("export")), Ok(Command::Export(PathBuf::from("schema"))));
        assert_eq!(parse(args("verify out")), Ok(Command::Verify(PathBuf::from("out"))));
        assert_eq!(
            parse(args("check --uri mongodb://h/db")),
            Ok(Command::Check(
                Connection { uri: Some("mongodb://h/db".into()), db: None, timeout: None },
                None
            ))
        );
        assert_eq!(
            parse(args("sync --db x --dry-run --drop-extra-indexes")),
            Ok(Command::Sync(
                Connection { uri: None, db: Some("x".into()), timeout: None },
                SyncOptions::default().drop_extra_indexes(true),
                true
            ))
        );
        assert_eq!(
            parse(args("sync --allow-older-schema")),
            Ok(Command::Sync(
                Connection { uri: None, db: None, timeout: None },
                SyncOptions::default().allow_older_schema(true),
                false
            ))
        );
        assert_eq!(
            parse(args("sync --allow-weaker-validator")),
            Ok(Command::Sync(
                Connection { uri: None, db: None, timeout: None },
                SyncOptions::default().allow_weaker_validator(true),
                false
            ))
        );
        assert_eq!(
            parse(args("check --timeout 0.5")),
            Ok(Command::Check(
                Connection { timeout: Some(Duration::from_millis(500)), ..Connection::default() },
                None
            ))
        );
        assert_eq!(parse(args("check --workload")), Ok(Command::Check(Connection::default(), Some(None))));
        assert_eq!(
            parse(args("check --workload --since 30min")),
            Ok(Command::Check(Connection::default(), Some(Some(Since::Ago(Duration::from_secs(1800))))))
        );
        assert_eq!(
            parse(args("check --workload --since 1.5h")),
            Ok(Command::Check(Connection::default(), Some(Some(Since::Ago(Duration::from_secs(5400))))))
        );
        let at = bson::DateTime::parse_rfc3339_str("2026-01-31T08:00:00Z").unwrap();
        assert_eq!(
            parse(args("check --workload --since 2026-01-31T08:00:00Z")),
            Ok(Command::Check(Connection::default(), Some(Some(Since::At(at)))))
        );
        assert_eq!(
            Since::Ago(Duration::from_secs(60)).start(bson::DateTime::from_millis(100_000)),
            bson::DateTime::from_millis(40_000)
        );
        assert_eq!(
            parse(args("infer --db shop --collection users --collection orders --sample 50 --out models")),
            Ok(Command::Infer(
                Connection { uri: None, db: Some("shop".into()), timeout: None },
                crate::infer::InferOptions::default()
                    .sample(50)
                    .collections(["users", "orders"])
                    .workload(false)
                    .progress(true),
                PathBuf::from("models")
            ))
        );
        assert_eq!(
            parse(args("infer --workload")),
            Ok(Command::Infer(
                Connection::default(),
                crate::infer::InferOptions::default().workload(true).progress(true),
                PathBuf::from("inferred")
            ))
        );
        assert!(parse(vec!["sync".into(), "--db".into(), String::new()]).is_err(), "an empty name");
        assert!(parse(vec!["sync".into(), "--db=".into()]).is_err(), "an empty name");
        for bad in [
            "",
            "frobnicate",
            "check --dry-run",
            "export a b",
            "check extra",
            "sync --uri",
            "check --nope",
            "check --timeout 0",
            "check --timeout x",
            "check --db a.b",
            "export --timeout 1",
            "infer --sample 0",
            "infer --sample x",
            "infer --dry-run",
            "infer extra",
            "check --since 1h",
            "check --workload --since",
            "check --workload --since 0s",
            "check --workload --since -1h",
            "check --workload --since 3weeks",
            "check --workload --since yesterday",
            "check --workload --since 20000day",
        ] {
            assert!(parse(args(bad)).is_err(), "{bad:?} should be refused");
        }
    }
}
