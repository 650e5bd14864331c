//! A deploy tool in one call: `fn main() -> ExitCode { docshape::cli::main() }` in a
//! binary that links the models gives `export`, `verify`, `check` and `sync` for every
//! registered model (feature `cli`).
//!
//! ```text
//! USAGE: <tool> <command> [options]
//!
//!   export [DIR]   write every model's artifacts into DIR (default: schema)
//!   verify [DIR]   exit 1 when the artifacts in DIR differ from the code
//!   check          exit 1 when the database differs from the code (validators,
//!                  validation level and action, indexes, shard key)
//!   sync           make the database match the code
//!       --dry-run                   say what sync would do, change nothing
//!       --drop-extra-indexes        drop indexes the code does not declare
//!       --rebuild-changed-indexes   rebuild indexes whose keys or options changed
//!
//!   check and sync connect with --uri URI (default: $MONGODB_URI) to the database
//!   --db NAME (default: the URI's database), giving up after --timeout SECONDS
//!   (default 5, or the URI's serverSelectionTimeoutMS) when no server answers.
//! ```
//!
//! Exit status: 0 when all is well, 1 on drift, 2 on a usage error or any other
//! failure (no server, a directory that does not exist, a file that cannot be read),
//! with a one-line `error: ...` on stderr that names the cause.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use mongodb::options::ClientOptions;
use mongodb::{Client, Database};

use crate::ops::sync::SyncOptions;

/// Whatever stops a command: docshape's errors, or the tool's own (no URI, say).
type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

const USAGE: &str = "USAGE: <tool> <command> [options]

  export [DIR]   write every model's artifacts into DIR (default: schema)
  verify [DIR]   exit 1 when the artifacts in DIR differ from the code
  check          exit 1 when the database differs from the code
  sync           make the database match the code
      --dry-run                   say what sync would do, change nothing
      --drop-extra-indexes        drop indexes the code does not declare
      --rebuild-changed-indexes   rebuild indexes whose keys or options changed

  check and sync connect with --uri URI (default: $MONGODB_URI) to the database
  --db NAME (default: the URI's database), giving up after --timeout SECONDS
  (default 5, or the URI's serverSelectionTimeoutMS) when no server answers.";

/// How long `check` and `sync` wait for a server by default: a deploy tool should say
/// at once that nothing answers, not after the driver's 30 s.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// Runs the command named by the process's arguments and returns its exit status.
pub fn main() -> ExitCode {
    let mut args = Vec::new();
    for arg in std::env::args_os().skip(1) {
        match arg.into_string() {
            Ok(arg) => args.push(arg),
            Err(arg) => {
                eprintln!("error: argument {arg:?} is not valid UTF-8");
                return ExitCode::from(2);
            }
        }
    }
    run(args)
}

/// Runs one command (the arguments after the program name), printing to stdout and
/// stderr, and returns its exit status: 0 when all is well, 1 on drift, 2 on a usage
/// error or a failure.
pub fn run(args: impl IntoIterator<Item = String>) -> ExitCode {
    match parse(args.into_iter().collect()) {
        Err(usage) => {
            eprintln!("{usage}\n\n{USAGE}");
            ExitCode::from(2)
        }
        Ok(command) => match execute(command) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::from(1),
            Err(e) => {
                eprintln!("error: {}", one_line(&e.to_string()));
                ExitCode::from(2)
            }
        },
    }
}

#[derive(Debug, PartialEq)]
enum Command {
    Export(PathBuf),
    Verify(PathBuf),
    Check(Connection),
    Sync(Connection, SyncOptions, bool),
    Help,
}

#[derive(Debug, Default, PartialEq)]
struct Connection {
    uri: Option<String>,
    db: Option<String>,
    timeout: Option<Duration>,
}

fn parse(args: Vec<String>) -> std::result::Result<Command, String> {
    let mut args = args.into_iter();
    let command = args.next().ok_or("no command given")?;
    let mut positional = Vec::new();
    let mut connection = Connection::default();
    let mut options = SyncOptions::default();
    let mut dry_run = false;
    if matches!(command.as_str(), "help" | "-h" | "--help") {
        return Ok(Command::Help);
    }
    if !["export", "verify", "check", "sync"].contains(&command.as_str()) {
        return Err(format!("unknown command `{command}`"));
    }
    while let Some(arg) = args.next() {
        // `--uri=x` as well as `--uri x`.
        let (arg, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag.to_owned(), Some(value.to_owned())),
            _ => (arg, None),
        };
        let mut value = |flag: &str| {
            inline.clone().or_else(|| args.next()).ok_or_else(|| format!("{flag} needs a value"))
        };
        match arg.as_str() {
            "--uri" => connection.uri = Some(value("--uri")?),
            "--db" => {
                let name = value("--db")?;
                check_db_name(&name)?;
                connection.db = Some(name);
            }
            "--timeout" => {
                let text = value("--timeout")?;
                let seconds: f64 = text
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s > 0.0 && *s <= 3600.0)
                    .ok_or_else(|| {
                        format!("--timeout takes seconds (above 0, at most 3600), not `{text}`")
                    })?;
                connection.timeout = Some(Duration::from_secs_f64(seconds));
            }
            "--dry-run" => dry_run = true,
            "--drop-extra-indexes" => options.drop_extra_indexes = true,
            "--rebuild-changed-indexes" => options.rebuild_changed_indexes = true,
            "-h" | "--help" => return Ok(Command::Help),
            flag if flag.starts_with('-') => return Err(format!("unknown option `{flag}`")),
            _ => positional.push(arg),
        }
    }
    let dir = |positional: &mut Vec<String>| -> std::result::Result<PathBuf, String> {
        match positional.len() {
            0 => Ok(PathBuf::from("schema")),
            1 => Ok(PathBuf::from(positional.remove(0))),
            _ => Err(format!("`{command}` takes one directory, got {}", positional.len())),
        }
    };
    let connection_given = connection != Connection::default();
    let parsed = match command.as_str() {
        "export" => Command::Export(dir(&mut positional)?),
        "verify" => Command::Verify(dir(&mut positional)?),
        "check" => Command::Check(connection),
        "sync" => Command::Sync(connection, options, dry_run),
        other => return Err(format!("unknown command `{other}`")),
    };
    let takes_positional = matches!(parsed, Command::Export(_) | Command::Verify(_));
    if !takes_positional && !positional.is_empty() {
        return Err(format!("`{command}` takes no argument `{}`", positional[0]));
    }
    let sync_only = dry_run || options != SyncOptions::default();
    if sync_only && !matches!(parsed, Command::Sync(..)) {
        return Err(format!("`--dry-run` and the index options belong to `sync`, not `{command}`"));
    }
    if takes_positional && connection_given {
        return Err(format!(
            "`{command}` reads no database: `--uri` and `--db` belong to `check` and `sync`"
        ));
    }
    Ok(parsed)
}

/// `Ok(true)` when all is well, `Ok(false)` on drift.
fn execute(command: Command) -> Result<bool> {
    match command {
        Command::Help => {
            println!("{USAGE}");
            Ok(true)
        }
        Command::Export(dir) => {
            let artifacts = crate::ops::artifacts::registered()?;
            let written = crate::ops::artifacts::write(&dir, &artifacts)
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
            let artifacts = crate::ops::artifacts::registered()?;
            let drift = crate::ops::artifacts::compare(&dir, &artifacts)
                .map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
            for d in &drift {
                println!("{d}");
            }
            if drift.is_empty() {
                println!("{} artifacts in {} match the code", artifacts.len(), dir.display());
            }
            Ok(drift.is_empty())
        }
        Command::Check(connection) => block_on(async {
            let db = connect(&connection).await?;
            let reports = crate::ops::check::check_all(&db).await?;
            for report in &reports {
                print!("{report}");
            }
            Ok(reports.iter().all(|r| r.is_clean()))
        }),
        Command::Sync(connection, options, dry_run) => block_on(async {
            let db = connect(&connection).await?;
            for spec in crate::core::registry::specs()? {
                if dry_run {
                    println!("would: {}", crate::ops::sync::plan_spec(&db, &spec, options).await?.report);
                } else {
                    // sync_spec, not plan + apply: it re-plans when another deploy
                    // creates the collection at the same moment.
                    println!("{}", crate::ops::sync::sync_spec(&db, &spec, options).await?);
                }
            }
            Ok(true)
        }),
    }
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

    #[test]
    fn parses_commands_and_refuses_what_does_not_belong() {
        assert_eq!(parse(args("export")), Ok(Command::Export(PathBuf::from("schema"))));
        assert_eq!(parse(args("verify out")), Ok(Command::Verify(PathBuf::from("out"))));
        assert_eq!(
            parse(args("check --uri mongodb://h/db")),
            Ok(Command::Check(Connection { uri: Some("mongodb://h/db".into()), db: None, timeout: None }))
        );
        assert_eq!(
            parse(args("sync --db x --dry-run --drop-extra-indexes")),
            Ok(Command::Sync(
                Connection { uri: None, db: Some("x".into()), timeout: None },
                SyncOptions { drop_extra_indexes: true, rebuild_changed_indexes: false },
                true
            ))
        );
        assert_eq!(
            parse(args("check --timeout 0.5")),
            Ok(Command::Check(Connection {
                timeout: Some(Duration::from_millis(500)),
                ..Connection::default()
            }))
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
        ] {
            assert!(parse(args(bad)).is_err(), "{bad:?} should be refused");
        }
    }
}
