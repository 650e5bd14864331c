//! Transactions: several writes (and reads) that apply all together or not at all,
//! retried as the driver's transaction rules say. The public items are re-exported at
//! the crate root ([`crate::transaction`]); the retry rules are shared with the
//! patterns that run transactions of their own.

use std::error::Error as StdError;
use std::future::Future;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use futures_util::future::BoxFuture;
use mongodb::error::{
    ErrorKind, WriteFailure, TRANSIENT_TRANSACTION_ERROR, UNKNOWN_TRANSACTION_COMMIT_RESULT,
};
use mongodb::{Client, ClientSession};

use crate::core::descriptor::CopyError;
use crate::core::write::{Deferred, AFTER_COMMIT};

/// How long [`transaction`] keeps running a body that fails with transient errors:
/// the driver's own limit for its `with_transaction`.
pub const TRANSACTION_TIME: Duration = Duration::from_secs(120);

/// How many times [`transaction`] sends a commit whose outcome is unknown.
pub const COMMIT_ATTEMPTS: u32 = 5;

/// Whether the deployment refused a session or a transaction for having none, asked
/// of what **starting** a session, or a transaction on a fresh session, returned: the
/// driver's refusal of a session (`SessionsNotSupported`), or its refusal of a fresh
/// session's transaction (it refuses one there only when the topology it sees, from
/// the servers' `hello`, has no transactions: a standalone server; its other reasons,
/// a running transaction or a snapshot session, a fresh session has not).
///
/// Decided by error kinds, never by the message text, which the driver and the server
/// word differently from one version to the next.
pub fn no_transactions(e: &mongodb::error::Error) -> bool {
    matches!(e.kind.as_ref(), ErrorKind::SessionsNotSupported | ErrorKind::Transaction { .. })
}

/// Whether `session` runs a transaction now (one started with `start_transaction`, by
/// a [`transaction`] or by the caller, and neither committed nor aborted yet), from
/// the session's state, never from an error's text.
///
/// The driver keeps that state but does not show it: the session of a running
/// [`transaction`] is known by its id (no I/O); any other session is asked by
/// starting a transaction on it, which the driver refuses before sending anything
/// when one runs, and otherwise aborts at once (a transaction aborted before its first
/// command sends nothing either). The driver refuses a transaction for two other
/// reasons, which a fresh session of the same client tells apart: the deployment has
/// none (the fresh session is refused too, and that error is returned), or the session
/// reads a snapshot (read as running: docshape's writers are given no snapshot
/// session).
///
/// Asking leaves a session that runs no transaction as after an abort, with its next
/// transaction number taken: a commit whose result was unknown is to be sent again
/// before the session is handed to docshape (the driver then refuses it, rather than
/// commit the wrong transaction).
pub async fn runs_transaction(session: &mut ClientSession) -> mongodb::error::Result<bool> {
    use crate::core::write::TRANSACTION_SESSION;
    if TRANSACTION_SESSION.try_with(|id| id == session.id()).unwrap_or(false) {
        return Ok(true);
    }
    match session.start_transaction().await {
        Ok(()) => {
            session.abort_transaction().await?;
            Ok(false)
        }
        Err(e) if matches!(e.kind.as_ref(), ErrorKind::Transaction { .. }) => {
            let mut fresh = session.client().start_session().await?;
            fresh.start_transaction().await?;
            fresh.abort_transaction().await?;
            Ok(true)
        }
        Err(e) => Err(e),
    }
}

/// Whether a failed transaction is worth running again from its start: the server or
/// the driver labelled the error `TransientTransactionError`.
pub fn is_transient(e: &mongodb::error::Error) -> bool {
    e.contains_label(TRANSIENT_TRANSACTION_ERROR)
}

/// Whether `e` is the network failing (an I/O error, a pool cleared by one, or an
/// error the driver labelled retryable for it): a command that is safe to send twice
/// may be sent again.
pub fn is_network(e: &mongodb::error::Error) -> bool {
    matches!(e.kind.as_ref(), ErrorKind::Io(_) | ErrorKind::ConnectionPoolCleared { .. })
        || e.contains_label("RetryableError")
}

/// Whether a write failed on a unique index (`DuplicateKey`, code 11000; 11001 and
/// 12582 are older servers' spellings of it), as an `update` reports it (a write error)
/// or a `findAndModify` (a command error).
pub fn is_duplicate_key(e: &mongodb::error::Error) -> bool {
    let code = match e.kind.as_ref() {
        ErrorKind::Write(WriteFailure::WriteError(w)) => w.code,
        ErrorKind::Command(c) => c.code,
        _ => return false,
    };
    matches!(code, 11000 | 11001 | 12582)
}

/// The wait before another attempt: a random part of `min(5 ms × 1.5^attempt, 500 ms)`,
/// as the driver's `with_transaction` does, so that conflicting writers do not retry in
/// step.
pub fn backoff(attempt: u32) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    let ceiling = (5.0 * 1.5_f64.powi(attempt.min(20) as i32)).min(500.0);
    // A fresh `RandomState` is randomly keyed: enough randomness for a jitter.
    let random = std::collections::hash_map::RandomState::new().build_hasher().finish();
    let fraction = (random % 10_000) as f64 / 10_000.0;
    Duration::from_micros((ceiling * fraction * 1000.0) as u64)
}

/// Sends a driver action in `$session` (an `Option<&mut ClientSession>`) when it holds
/// one, else outside any session: the one spelling of a writer's optional session.
macro_rules! with_session {
    ($action:expr, $session:expr) => {
        match $session.as_deref_mut() {
            Some(session) => $action.session(session).await,
            None => $action.await,
        }
    };
}
pub(crate) use with_session;

/// The driver's error inside `e`: `e` itself, or the first one among its
/// [`source`](StdError::source)s (`UpdateError::Find(FindError::Mongo(..))`, say).
pub fn mongo_error_in<'e>(e: &'e (dyn StdError + 'static)) -> Option<&'e mongodb::error::Error> {
    let mut next = Some(e);
    // A source chain ends; the bound only guards against an error that is its own source.
    for _ in 0..64 {
        let current = next?;
        if let Some(found) = current.downcast_ref::<mongodb::error::Error>() {
            return Some(found);
        }
        next = current.source();
    }
    None
}

/// Whether a command sent in `session` (`None`: outside any) runs in a transaction:
/// [`runs_transaction`], `false` without a session. Inside one the transaction's read
/// and write concerns apply (a command's own would be refused) and an error aborts it
/// (so a writer does not retry on its own).
pub async fn in_transaction(session: Option<&mut ClientSession>) -> mongodb::error::Result<bool> {
    match session {
        Some(session) => runs_transaction(session).await,
        None => Ok(false),
    }
}

/// Why [`transaction`] applied nothing, or what failed after it applied everything.
#[derive(Debug)]
#[non_exhaustive]
pub enum TransactionError<E> {
    /// The deployment has no transactions (a standalone server: transactions need a
    /// replica set or a sharded cluster). Nothing was written.
    Unsupported,
    /// The body returned this error; the transaction was aborted and nothing it wrote
    /// is applied. A transient error that outlived the retries' 120 seconds ends here too.
    Aborted(E),
    /// Starting the session or the transaction failed; nothing was written.
    Start(mongodb::error::Error),
    /// The commit failed; nothing is applied (a transient failure that outlived
    /// 120 seconds of retries, or a final one). After 5 commits with
    /// an unknown result, the outcome is unknown: this error then carries the
    /// `UnknownTransactionCommitResult` label.
    Commit(mongodb::error::Error),
    /// Everything was committed, but bringing what is derived from the written
    /// documents in line (a copy's refresh, a cached key's delete) failed.
    AfterCommit(Box<CopyError>),
}

impl<E: std::fmt::Display> std::fmt::Display for TransactionError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unsupported => write!(
                f,
                "this deployment has no transactions (a standalone server; they need a replica set or a sharded cluster); nothing was written"
            ),
            Self::Aborted(e) => write!(f, "the transaction was aborted, nothing was applied: {e}"),
            Self::Start(e) => write!(f, "starting the transaction: {e}"),
            Self::Commit(e) => write!(f, "committing the transaction: {e}"),
            Self::AfterCommit(e) => {
                write!(f, "the transaction was committed, but what is derived from it is not in line: {e}")
            }
        }
    }
}

impl<E: StdError + 'static> StdError for TransactionError<E> {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            Self::Aborted(e) => Some(e),
            Self::Start(e) | Self::Commit(e) => Some(e),
            Self::AfterCommit(e) => Some(e.as_ref()),
            Self::Unsupported => None,
        }
    }
}

/// The session of a running [`transaction`]: pass it where a `&mut ClientSession` is
/// taken (`.session(tx)` on a finder or a write row); it dereferences to one.
///
/// `'env` is the lifetime of what the body borrows from its surroundings (a
/// `&Database`, say): the transaction lives no longer than that.
pub struct Transaction<'env> {
    session: Held<'env>,
}

/// The session a [`Transaction`] runs in: its own, or (for one docshape write in a
/// caller's session that runs no transaction, [`for_write`]) the caller's, so that the
/// write stays in that session's causal order.
enum Held<'env> {
    // Boxed: a session is large, a lent one a pointer.
    Own(Box<ClientSession>),
    Lent(&'env mut ClientSession),
}

impl Held<'_> {
    fn get(&self) -> &ClientSession {
        match self {
            Held::Own(s) => s,
            Held::Lent(s) => s,
        }
    }

    fn get_mut(&mut self) -> &mut ClientSession {
        match self {
            Held::Own(s) => s,
            Held::Lent(s) => s,
        }
    }
}

impl std::fmt::Debug for Transaction<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction").field("session", &self.session.get().id()).finish()
    }
}

impl std::ops::Deref for Transaction<'_> {
    type Target = ClientSession;
    fn deref(&self) -> &ClientSession {
        self.session.get()
    }
}

impl std::ops::DerefMut for Transaction<'_> {
    fn deref_mut(&mut self) -> &mut ClientSession {
        self.session.get_mut()
    }
}

/// Runs `body` in a transaction on a session of `client`, and commits: several writes
/// (and reads) that apply all together or not at all. Returns the body's value from
/// the attempt that committed.
///
/// ```no_run
/// # use docshape::Model;
/// # #[derive(serde::Serialize, serde::Deserialize, Model)]
/// # #[model(collection = "items")]
/// # #[access(name = "add_score", filter(_id), update(inc(score)))]
/// # struct Item { #[serde(rename = "_id")] id: String, score: i64 }
/// # async fn run(client: &docshape::mongodb::Client) -> Result<(), Box<dyn std::error::Error>> {
/// let db = client.database("shop");
/// let db = &db;
/// docshape::transaction(client, |tx| {
///     Box::pin(async move {
///         Item::add_score("i1", 1_i64).session(tx).run(db).await?;
///         Item::add_score("i2", -1_i64).session(tx).run(db).await?;
///         Ok::<_, docshape::access::UpdateError>(())
///     })
/// })
/// .await?;
/// # Ok(()) }
/// ```
///
/// It starts a session and a transaction, runs the body with it (finders and write
/// rows join it with `.session(tx)`), and commits, retrying as the driver's
/// transaction rules say:
///
/// - an error labelled `TransientTransactionError` (a write conflict with a concurrent
///   transaction, a primary stepping down), from the body or from the commit, aborts
///   and runs the **whole body again**, after a random backoff, for up to
///   120 seconds (the driver's own limit for its `with_transaction`) in all;
/// - a commit that fails with `UnknownTransactionCommitResult` (the outcome was lost on
///   the way back) is **committed again**, up to 5 times: a commit is
///   idempotent, the body is not run twice for it;
/// - any other error aborts, and nothing the body wrote is applied.
///
/// The body may therefore run more than once: keep effects outside the session (an
/// email, a counter in memory) out of it, or make them idempotent.
///
/// A deployment without transactions (a standalone server: transactions need a
/// replica set or a sharded cluster) is reported as [`TransactionError::Unsupported`],
/// at once: one `hello` before anything is written says whether the server is a
/// replica set member or a `mongos` (the driver's own refusal to start a transaction
/// on such a topology is read the same way). Nothing is retried.
///
/// What other patterns derive from the documents the body's write rows wrote
/// (denormalized copies, cached keys) is brought in line **after the commit**, by the
/// same hooks as after any docshape write: inside the transaction a copy's refresh
/// would read the source outside it and see the old value. A write row or finder in
/// the body without `.session(tx)` is not part of the transaction.
///
/// The body is a closure returning a boxed future (`|tx| Box::pin(async move { .. })`):
/// the future borrows the session for one attempt, and may borrow from the caller's
/// scope (`'env`). Its error type is any error; the driver's error inside it (itself,
/// or among its sources, as in `UpdateError` and `FindError`) decides the retries.
pub async fn transaction<'env, R, E, F>(client: &Client, body: F) -> Result<R, TransactionError<E>>
where
    F: for<'s> FnMut(&'s mut Transaction<'env>) -> BoxFuture<'s, Result<R, E>>,
    E: StdError + 'static,
{
    let started = std::time::Instant::now();
    let may_retry = |e: &mongodb::error::Error| started.elapsed() < TRANSACTION_TIME && is_transient(e);
    run(client, None, body, Deployment::Ask, may_retry).await
}

/// [`transaction`] for one docshape write whose declared effects must commit with it
/// (a `sync` summary of its model) when its caller gave no transaction: the write and
/// what commits with it are the body, in `session` when the caller gave one that runs
/// no transaction (so the write keeps that session's causal order), else in a session
/// of its own. No `hello` first: the model declares that its
/// writes run in transactions (a `sync` summary is refused at compile time
/// otherwise), and a deployment without them is refused by the driver before anything
/// is sent ([`TransactionError::Unsupported`]), so the one check would be one more
/// command on every such write.
///
/// Returns the body's result (its error as `unwritten` says: the transaction was
/// aborted, so a writer's "written, but its derived data failed" is "nothing was
/// written" here), a failure to start or commit as `mongo` makes it and one of what is
/// derived after the commit as `derived` does; `None` when the deployment has no
/// transactions (nothing was sent: the writer then writes alone).
pub(crate) async fn for_write<'env, R, E, F>(
    client: &Client,
    session: Option<&'env mut ClientSession>,
    body: F,
    unwritten: impl FnOnce(E) -> E,
    mongo: impl FnOnce(mongodb::error::Error) -> E,
    derived: impl FnOnce(Box<CopyError>) -> E,
) -> Option<Result<R, E>>
where
    F: for<'s> FnMut(&'s mut Transaction<'env>) -> BoxFuture<'s, Result<R, E>>,
    E: StdError + 'static,
{
    let started = std::time::Instant::now();
    let may_retry = |e: &mongodb::error::Error| started.elapsed() < TRANSACTION_TIME && is_transient(e);
    match run(client, session, body, Deployment::Trusted, may_retry).await {
        Ok(value) => Some(Ok(value)),
        Err(TransactionError::Unsupported) => None,
        Err(TransactionError::Aborted(e)) => Some(Err(unwritten(e))),
        Err(TransactionError::Start(e) | TransactionError::Commit(e)) => Some(Err(mongo(e))),
        Err(TransactionError::AfterCommit(e)) => Some(Err(derived(e))),
    }
}

/// Whether [`run`] asks the deployment whether it has transactions before starting one.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Deployment {
    /// One `hello` first ([`transaction`]).
    Ask,
    /// The model declares transactions ([`for_write`]).
    Trusted,
}

/// [`transaction`] with the retry decision given: `may_retry` is asked about each
/// transient error.
async fn run<'env, R, E, F>(
    client: &Client,
    session: Option<&'env mut ClientSession>,
    mut body: F,
    deployment: Deployment,
    may_retry: impl Fn(&mongodb::error::Error) -> bool,
) -> Result<R, TransactionError<E>>
where
    F: for<'s> FnMut(&'s mut Transaction<'env>) -> BoxFuture<'s, Result<R, E>>,
    E: StdError + 'static,
{
    // A standalone mongod refuses the first command of a transaction (code 20), but a
    // server may take transaction fields without a replica set behind them, and then
    // nothing makes the writes one: ask once, before anything is written.
    if deployment == Deployment::Ask {
        match client.database("admin").run_command(bson::doc! { "hello": 1 }).await {
            Ok(hello) => {
                let replica_set = hello.get_str("setName").is_ok();
                let mongos = hello.get_str("msg").is_ok_and(|m| m == "isdbgrid");
                if !replica_set && !mongos {
                    return Err(TransactionError::Unsupported);
                }
            }
            Err(e) => return Err(TransactionError::Start(e)),
        }
    }
    let session = match session {
        Some(lent) => Held::Lent(lent),
        None => match client.start_session().await {
            Ok(s) => Held::Own(Box::new(s)),
            Err(e) if no_transactions(&e) => return Err(TransactionError::Unsupported),
            Err(e) => return Err(TransactionError::Start(e)),
        },
    };
    let mut tx = Transaction { session };
    let mut attempt = 0;
    'transaction: loop {
        attempt += 1;
        match tx.session.get_mut().start_transaction().await {
            Ok(()) => {}
            Err(e) if no_transactions(&e) => return Err(TransactionError::Unsupported),
            Err(e) => return Err(TransactionError::Start(e)),
        }
        let deferred: Deferred = Arc::default();
        let lsid = tx.session.get().id().clone();
        let done = scoped(deferred.clone(), lsid, body(&mut tx)).await;
        let value = match done {
            Ok(value) => value,
            Err(e) => {
                // The server aborts it anyway once a command failed; the error that
                // matters is the body's.
                let _ = tx.session.get_mut().abort_transaction().await;
                match mongo_error_in(&e) {
                    Some(m) if is_transient(m) && may_retry(m) => {
                        crate::core::trace::event!(
                            DEBUG,
                            attempt,
                            "transient error, running the transaction again"
                        );
                        tokio::time::sleep(backoff(attempt)).await;
                        continue 'transaction;
                    }
                    _ => return Err(TransactionError::Aborted(e)),
                }
            }
        };
        let mut commits = 0;
        loop {
            commits += 1;
            match tx.session.get_mut().commit_transaction().await {
                Ok(()) => break,
                Err(e)
                    if e.contains_label(UNKNOWN_TRANSACTION_COMMIT_RESULT) && commits < COMMIT_ATTEMPTS =>
                {
                    crate::core::trace::event!(DEBUG, commits, "commit result unknown, committing again");
                }
                Err(e) if is_transient(&e) && may_retry(&e) => {
                    tokio::time::sleep(backoff(attempt)).await;
                    continue 'transaction;
                }
                Err(e) => return Err(TransactionError::Commit(e)),
            }
        }
        after_commit(&deferred).await.map_err(|e| TransactionError::AfterCommit(Box::new(e)))?;
        return Ok(value);
    }
}

/// Runs what the writes of a committed transaction deferred to its commit (collected
/// in `deferred` by [`scoped`]): the rest of their step 4, now that they are visible.
pub(crate) async fn after_commit(deferred: &Deferred) -> Result<(), CopyError> {
    let written = std::mem::take(&mut *deferred.lock().unwrap_or_else(PoisonError::into_inner));
    for w in written {
        w.effects.after(&w.db, &w.id, w.update.as_ref(), false).await?;
    }
    Ok(())
}

/// `future` with its write rows' hooks collected in `deferred`, run as the body of
/// the transaction of the session `lsid`: for [`run`], and for a writer that runs its
/// own transaction loop (`denormalized::update_one`), which then calls
/// [`after_commit`] once committed.
pub(crate) fn scoped<T>(
    deferred: Deferred,
    lsid: bson::Document,
    future: impl Future<Output = T>,
) -> impl Future<Output = T> {
    AFTER_COMMIT.scope(deferred, crate::core::write::TRANSACTION_SESSION.scope(lsid, future))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_stays_under_its_ceiling() {
        for attempt in 0..40 {
            assert!(backoff(attempt) <= Duration::from_millis(500), "{attempt}");
        }
    }

    #[test]
    fn the_driver_error_is_found_among_the_sources() {
        #[derive(Debug)]
        struct Outer(mongodb::error::Error);
        impl std::fmt::Display for Outer {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "outer")
            }
        }
        impl StdError for Outer {
            fn source(&self) -> Option<&(dyn StdError + 'static)> {
                Some(&self.0)
            }
        }
        let inner = mongodb::error::Error::custom("x");
        let outer = Outer(inner);
        assert!(mongo_error_in(&outer).is_some());
        let plain = std::io::Error::other("no driver error here");
        assert!(mongo_error_in(&plain).is_none());
    }
}
