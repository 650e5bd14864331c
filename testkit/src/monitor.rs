//! Command monitoring: a client on the test server that records every command it
//! starts, so a test can assert round trips and the exact filters that reach the wire.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use docshape::bson::{doc, Document};
//!
//! let (db, log) = docshape_testkit::monitored("round_trips").await?;
//! db.collection::<Document>("c").insert_one(doc! { "a": 1 }).await?;
//! assert_eq!(log.names(), ["insert"]);
//! log.clear();
//! db.collection::<Document>("c").find_one(doc! { "a": 1 }).await?;
//! assert_eq!(log.named("find")[0].get_document("filter")?, &doc! { "a": 1 });
//! # Ok(()) }
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use docshape::bson::Document;
use docshape::mongodb::event::command::CommandEvent;
use docshape::mongodb::event::EventHandler;
use docshape::mongodb::Client;

use super::{database, server, TestDb, TestkitError};

/// The commands a monitored client has started, in order. Clones share one log.
#[derive(Clone, Debug, Default)]
pub struct CommandLog {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Kept even when the commands are not, so a count costs no allocation.
    started: AtomicUsize,
    /// `None` for a counting-only log.
    commands: Option<Mutex<Vec<(String, Document)>>>,
}

impl CommandLog {
    /// A log that keeps every command's name and body.
    pub fn new() -> Self {
        CommandLog {
            inner: Arc::new(Inner { started: AtomicUsize::new(0), commands: Some(Mutex::default()) }),
        }
    }

    /// A log that only counts commands: for measurements, where copying every command
    /// body would add its own cost to what is measured.
    pub fn counting() -> Self {
        CommandLog { inner: Arc::new(Inner { started: AtomicUsize::new(0), commands: None }) }
    }

    /// The handler to set as `ClientOptions::command_event_handler`.
    pub fn handler(&self) -> EventHandler<CommandEvent> {
        let inner = self.inner.clone();
        EventHandler::callback(move |event: CommandEvent| {
            if let CommandEvent::Started(started) = event {
                inner.started.fetch_add(1, Ordering::SeqCst);
                if let Some(commands) = &inner.commands {
                    lock(commands).push((started.command_name, started.command));
                }
            }
        })
    }

    /// How many commands were started since the log was made (or last cleared).
    pub fn count(&self) -> usize {
        self.inner.started.load(Ordering::SeqCst)
    }

    /// Every command's name, in order.
    pub fn names(&self) -> Vec<String> {
        self.with(|c| c.iter().map(|(n, _)| n.clone()).collect())
    }

    /// Every command, name and body, in order.
    pub fn commands(&self) -> Vec<(String, Document)> {
        self.with(|c| c.clone())
    }

    /// The bodies of the commands with this name (`"find"`, `"update"`, ...), in order.
    pub fn named(&self, name: &str) -> Vec<Document> {
        self.with(|c| c.iter().filter(|(n, _)| n == name).map(|(_, d)| d.clone()).collect())
    }

    /// The commands so far, leaving the log empty.
    pub fn take(&self) -> Vec<(String, Document)> {
        self.inner.started.store(0, Ordering::SeqCst);
        self.with(std::mem::take)
    }

    /// Forgets every command so far.
    pub fn clear(&self) {
        self.take();
    }

    fn with<R: Default>(&self, f: impl FnOnce(&mut Vec<(String, Document)>) -> R) -> R {
        match &self.inner.commands {
            Some(commands) => f(&mut lock(commands)),
            None => R::default(),
        }
    }
}

/// A panic in another test's callback must not hide this test's commands.
fn lock(m: &Mutex<Vec<(String, Document)>>) -> MutexGuard<'_, Vec<(String, Document)>> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A client on the test [`server`](super::server) whose commands go into `log`.
pub async fn monitored_client(log: &CommandLog) -> Result<Client, TestkitError> {
    let handler = log.handler();
    server()?.client_with(|o| o.command_event_handler = Some(handler)).await
}

/// A fresh database of its own, as [`database`](super::database) gives, reached through
/// a client that records every command it sends into the returned [`CommandLog`].
pub async fn monitored(hint: &str) -> Result<(TestDb, CommandLog), TestkitError> {
    let plain = database(hint).await?;
    let log = CommandLog::new();
    let client = monitored_client(&log).await?;
    Ok((plain.with_client(client), log))
}
