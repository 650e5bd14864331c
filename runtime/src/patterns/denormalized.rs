//! Denormalized copies: a field of one model that copies a field of another
//! (`#[denormalized(from = "User::name", via = "author_id", refresh = ...)]`), and how
//! the copies are kept as fresh as their declared policy says.
//!
//! Every `#[derive(Model)]` with a `#[denormalized]` field submits one [`CopySpec`]
//! per copy to this module's registry (through the linker, like
//! [`crate::registry::models`]), so that the source's update API knows every copy that
//! depends on it without a list kept by hand. A copy inside an `#[derive(Embedded)]`
//! type is registered by each model that holds the type, under the model's collection
//! and the field's path (`comments.author_name`, [`CopySpec::arrays`] naming the arrays
//! on the way); inside arrays, only the elements whose `via` is the source's `_id` are
//! written, through array filters ([`copies`] lists them all).
//!
//! # Updating a source
//!
//! Change a source document with [`update_one`] (or [`update_one_with`]) rather than
//! with the driver, and every copy of a field the update may touch follows its policy:
//!
//! - [`Refresh::Never`]: nothing; the copy is a snapshot.
//! - [`Refresh::Sync`]: `update_many({via: id}, {$set: {field: new value}})` on the
//!   copy's collection, in the same call. The new value comes from the source update
//!   itself (`findAndModify` returning the updated document, projected to the copied
//!   fields), not from another read. It is written as the copy's own type stores it
//!   (see [One refresh path](#one-refresh-path)).
//! - [`Refresh::Async`]: one job in the queue collection [`QUEUE`], drained by a
//!   [`Worker`] within `max_stale`.
//!
//! Which copies an update "may touch" is decided from its paths: a `$set`, `$unset`,
//! `$rename` (either name), `$inc`, ... path equal to the copied field, a prefix of it,
//! or under it, once array positions (`$`, `$[]`, `$[x]`, `0`) are left out of both
//! paths. An update pipeline, or a document that is not all operators, touches every
//! copy.
//!
//! **Ordering and failures.** When the deployment has transactions (a replica set or
//! a sharded cluster), the source write and the sync copies are one transaction: on
//! any error in it nothing is written ([`CopyError::Copy`] with `source_updated:
//! false`), and transient errors (a write conflict with a concurrent update of the
//! same source) retry the whole transaction. A source with a `sync` summary is
//! written in a transaction even when no copy is touched, and its summaries are applied
//! in it (its `async` summaries' jobs queued in it), so they commit with the write or
//! not at all, as for every writer that takes the write pipeline's session step
//! ([`crate::summary`]). The async copies' jobs are enqueued right
//! after the commit, outside the transaction: a worker renewing its lease on the same
//! job would otherwise make the transaction conflict and start over for as long as
//! that worker runs. Without transactions ([`Atomicity::Sequential`], or
//! [`Atomicity::Auto`] on a standalone server) the writes are made one after another,
//! in this order:
//!
//! 1. the source document;
//! 2. each touched async copy's job, in the registry's order (by collection, then
//!    field);
//! 3. each touched sync copy, in the registry's order, and then they are settled: the
//!    source is read again, and a copy whose source value changed meanwhile (a
//!    concurrent update) is written again, until the values agree. Whichever update of
//!    the source is the last, its value is the last one written to the copy: every
//!    call's last copy write comes before a read that shows the value it wrote.
//!    (Writers that never stop would keep this going: [`CopyError::Unsettled`] after
//!    two minutes.)
//!
//! An error at step 2 or 3 (other than a refusal, below), or in enqueueing a job after
//! a commit, is [`CopyError::Copy`] naming the copy that failed, with `source_updated:
//! true`: the source and the copies before it (in that order; after a commit, every
//! sync copy) are updated, that copy and the ones after it are not. Running the same
//! update again (it is applied again to the source, so make it idempotent, like a
//! `$set`), or [`repair`] for that source document, brings every copy in line. A
//! process that dies between the source write (or the commit) and the last copy leaves
//! the same state without an error to see; [`repair`] is the remedy there too.
//!
//! A copy document the server refuses (below) does not stop the sequential order: the
//! others are written, every step runs, and the call ends with [`CopyError::Refused`]
//! naming the refused documents. In a transaction a refusal is an error like any
//! other, and nothing is written ([`CopyError::Copy`] with `source_updated: false`):
//! all or nothing is what the transaction is for.
//!
//! # One refresh path
//!
//! Every docshape writer writes a source's value into its copies the same way (one
//! function, shared with the relation pattern through the core): [`update_one`], the
//! write hook that runs after the versioned writers (`save`, `update_one`, `modify`,
//! backfill) and the access table's write rows, `relation::insert_one` for the copies
//! of the document it inserts, [`repair`], [`reconcile`] and the [`Worker`]. What they
//! share:
//!
//! - **Which documents**: those whose `via` equals the source's `_id`, compared
//!   literally; a `via` that is an array containing it names no one source and is left
//!   alone.
//! - **What is written**: the value as the copy's own type stores it, as serde would
//!   write the copy: an absent or null source value is no field at all (`$unset`) in a
//!   copy whose type omits `None` (`skip_serializing_if`), and `null` in one that
//!   always writes the field; any other value as it is.
//! - **Settling**: a writer that is not in a transaction (the sequential
//!   [`update_one`], the write hook, `relation::insert_one`, [`repair`]) reads the
//!   source again after writing the copies and writes again what moved, as in step 3
//!   above, so concurrent docshape writers of one source leave its copies at its last
//!   value. The [`Worker`] does not need to: a source written again moves its job's
//!   `seq`, and the job runs again (see Convergence); nor does [`reconcile`], whose
//!   watcher's change stream, opened first, catches what it could miss.
//! - **Refused writes**: a copy document the server refuses to write (its validator,
//!   code 121; a duplicate key; any other per-document write error) is left as it is
//!   and reported with its `_id` and the server's reason, and every other document is
//!   still written: a refused batch is written again a document at a time. The
//!   report is [`CopyError::Refused`] from [`update_one`] without a transaction, the
//!   write hook (through the versioned writer's or the write row's error), [`repair`]
//!   and `relation::insert_one`; the job's recorded failure in a [`Worker`] (it fails,
//!   waits a lease and is retried, counted by [`lag`] as failing, until the documents
//!   or the validator are fixed); and [`CopyReconcile::skipped`] in [`reconcile`]. The
//!   server or the network failing stops the write, with the error of the writer.
//!
//! # The refresh queue
//!
//! [`QUEUE`] (`docshape_refresh`) is reserved: one document per copy and source
//! document with a refresh pending, and one per async summary and source document
//! with an application pending (the summary pattern's jobs, keyed
//! `"summary:<collection>"`: see [`crate::summary`]). The queue's mechanics (the
//! job's shape, the upsert, claims and leases, the acknowledgement, the recorded
//! failures) are core's (`core::queue`), shared by both kinds; a copy's job:
//!
//! ```text
//! { _id: { copy: "posts.author_name", id: <the source's _id> },
//!   kind: "copy",
//!   seq: <long: +1 at every enqueue>,
//!   enqueued_at: <date: the first enqueue since the job last completed>,
//!   due: <date: enqueued_at + max_stale>,
//!   lease_until: <date: claimable once past; epoch 0 when released>,
//!   owner: <the worker id holding it, or that held it last>,
//!   claim: <ObjectId: the token of the claim that took it last>,
//!   claimed_at, claims, failures, last_error, failed_at: <bookkeeping> }
//! ```
//!
//! An enqueue is an upsert: `$inc: {seq: 1}`, and `$setOnInsert` for the dates, so
//! several updates of one source before a worker gets to it make one job. The job
//! carries no value: the worker reads the source when it runs, so several renames in a
//! row converge to the last one.
//!
//! # Workers
//!
//! A [`Worker`] is the one worker of the queue: it claims jobs of both kinds by one
//! order (the oldest `due` first, up to [`Worker::jobs_per_claim`] at a time, under
//! one lease), and for each in turn runs it and completes it with
//! `delete_one({_id, seq: <seq read at the claim>, owner: <me>})`. A copy's job reads
//! the source's current value and writes it to the copies that differ in batches; a
//! summary's job is run by the summary pattern's runner, registered with core
//! (a `core::queue::JobRunner`): one transaction that applies the source
//! document's delta against the summary's ledger, so a job run again (a worker that
//! died after the commit and before the completion) finds a delta of zero. A summary
//! job the server refuses (a summary document its validator rejects) fails like a
//! copy's: recorded on the job, retried after a lease, reported. [`lag`] reports
//! both kinds: [`QueueLag::by_copy`] per copy, [`QueueLag::by_summary`] per summary.
//! Any number of workers may run at once, each with its own id, and a worker may be
//! stopped at any point:
//!
//! - A job is claimable when its lease has expired (or is not a date), or its `owner`
//!   is this worker's id (a worker restarted with the same id resumes its jobs at
//!   once), and it has not failed in this run. A claim of up to N jobs is a `find` of
//!   up to N claimable `_id`s (oldest `due` first), one `update` command that stamps
//!   the jobs among them that are still claimable (the condition again, so a job
//!   another worker took in between is left to it; the ids matched literally) with
//!   `owner`, `lease_until` and a new `claim` token, and a `find` of the jobs carrying
//!   the token, which gives each job's `seq`. When the update takes none (other
//!   workers took them all), a `findAndModify` claims one job, or finds none and ends
//!   the run. With N = 1 a claim is that `findAndModify` alone.
//! - A worker restarted with the same id first takes back, with one `find` and no
//!   write, up to N of the jobs it holds with at least two thirds of a lease left; it
//!   renews their lease on the usual schedule. Stamping them again would write each
//!   job at every restart, and every write to a job makes a transaction that queues
//!   the same job (an async summary's) conflict and run again: a worker in a crash
//!   loop would keep such writers conflicting while finishing none of its jobs.
//! - A job queued in a running transaction (an async summary's, queued by a source
//!   write in that transaction) is that transaction's until it commits or aborts: a
//!   claim or renewal that meets it waits for that end (on mongod at most
//!   `transactionLifetimeLimitSeconds`, 60 s by default, for a transaction whose
//!   owner died). The stamp and the renewal are one single-document statement per job
//!   (`multi: false`) in one command, never an `update_many`, so that what waits is
//!   that job's statement alone: a server that holds the collection while a
//!   multi-document update waits would make the transaction's next job wait for the
//!   claim that waits for the transaction.
//! - The jobs of a claim not yet run stay held: before each job, once a third of the
//!   lease has passed since they were last renewed, their lease is renewed (on
//!   `{claim: <its token>, owner: me}`), and the jobs the renewal no longer finds
//!   (another worker took them after their lease expired during a long job) are
//!   dropped from the batch before anything was written for them. A worker that stops
//!   before running them does not release them: a stop may be a crash or an aborted
//!   task, where no release can run, so the lease's expiry is what frees them in
//!   every case (at once for a worker restarted with the same id), and releasing on
//!   the paths that could would add a round trip to a server that has just failed.
//! - Applying is idempotent and resumable: each batch is found with
//!   `{via: id, field: {$ne: value}}` and written with
//!   `update_many({_id: {$in: ids}, via: id}, {$set: {field: value}})`, so after a stop
//!   only the copies still different are visited. The lease is renewed (on
//!   `owner == me`) before every batch, and a worker that finds it lost stops. A copy
//!   document the server refuses is skipped; the others are written, and then the job
//!   fails with [`CopyError::Refused`] naming it.
//! - A completion that deletes nothing means the job changed since the claim: its
//!   `seq` moved on (the source was updated again), and the worker releases it to run
//!   again at once; or it is no longer this worker's (its lease expired and another
//!   worker took it, perhaps finished it, while this one was still writing an older
//!   value), and the worker enqueues it again.
//!
//! **Convergence.** Take the run that deletes a source's job for the last time. Every
//! enqueue came before that run's claim read the job's `seq` (one after it would have
//! moved `seq`, and the delete would have failed), the source is read after that,
//! and every update of the source is enqueued after it is written: so the run read
//! the source's last value. Every other run's writes came before that read of `seq`
//! too: a run that lost the job enqueued it again after its last write (an enqueue,
//! so before the read); a run that still held the job released it after its last
//! write, and nobody claims a held job (stamps it with their token, before reading
//! it back) before its release or its lease's expiry. A job dropped from a batch, or
//! left unrun in one, had no write made for it by that run. So the final run finds every copy that still differs, and the last
//! write to every copy is its own, with the last value. This needs distinct ids among
//! the workers running at once, and, for a worker restarted under its old id, no write
//! of its previous process still in flight (a lease's expiry covers that for the
//! others).
//!
//! Worker clocks should agree to well within the lease (60 s by default): leases and
//! due dates are the workers' clock times.
//!
//! # The watcher
//!
//! [`update_one`], the versioned writers and the write rows keep copies in line only
//! for the writes made through them. A rename from the shell, from another service, or through
//! `Model::collection(db).update_one` reaches the copies through a [`Watcher`]: one
//! change stream per source collection of the refreshed copies, whose changes become
//! jobs in the same queue (an enqueue is an upsert, so a job the watcher enqueues and
//! one [`update_one`] enqueued for the same copy and source are one job):
//!
//! - an `update` enqueues the copies whose field its update description names:
//!   `updatedFields`' dotted paths, `removedFields` and `truncatedArrays`, compared as
//!   [`update_one`] compares an update's paths (equal, prefix or under, array
//!   positions left out); an update that names no copied field enqueues nothing;
//! - a `replace` or an `insert` enqueues every copy of the document (an insert may be
//!   a deleted source come back under the same `_id`);
//! - a `delete` enqueues the copies whose `on_delete` is not `keep`;
//! - a `drop`, `rename` or `dropDatabase` of the source (and the `invalidate` that
//!   follows) ends the stream: the watcher reconciles (below) and watches again.
//!
//! **Positions.** The changes are read in batches (at most [`Watcher::batch`]); the
//! jobs of a batch are enqueued in one `update` command, and only then is the
//! stream's resume token saved, in [`WATCH_POSITIONS`] (`docshape_watch`, one document
//! per watcher name and source: `{_id: {watcher, source}, token, cluster_time,
//! last_change_at, saved_at, caught_up}`). A watcher stopped at any point (a crash,
//! an aborted task) resumes after the last saved batch, so it may enqueue a change
//! twice, never lose one. [`lag`] reports each watcher's position next to the queue.
//!
//! **Reconciles.** A watcher that finds no position (its first start), or one the
//! server cannot resume from (`ChangeStreamHistoryLost` when the oplog has rolled
//! past it, an invalid token), opens its stream first, then [`reconcile`]s every copy
//! of the source (the copy collection read once, in batches, and every copy that
//! differs from its source written), then saves the stream's first position and reads
//! its changes: whatever was written during the reconcile comes after it.
//!
//! **Sync copies** are followed too: a change to a sync copy's source made around
//! docshape enqueues a job due at once, so the copy is stale until a worker runs it:
//! at most the watcher's delay (its last batch's wait, [`Watcher::max_await`], and
//! the batch's enqueue) plus the workers' poll and the job's run. Only writes made
//! through [`update_one`], the versioned writers or the write rows update a sync copy
//! in the same call; every other write needs a watcher and a worker running. A write through
//! docshape is seen by the watcher as well, and costs one more job that finds nothing
//! to write.
//!
//! **Deleted sources.** A copy says what it holds once its source is deleted, with
//! `on_delete` ([`OnDelete`]): `"keep"` (the default: the last value copied stays),
//! `"clear"` (only for an `Option` copy: `$unset` when the field has
//! `skip_serializing_if`, `null` when it is always written, so that the model's
//! validator accepts it either way), or `"report"` (the value stays, and the job
//! fails with [`CopyError::SourceDeleted`], is recorded on the job, and stays in the
//! queue, counted by [`lag`], until no document references the deleted source).
//!
//! **Deployment.** Change streams need a replica set (a single-node one will do) or a
//! sharded cluster; on a standalone server the watcher fails at start with
//! [`CopyError::NoChangeStreams`]. Run at least one watcher (several with different
//! names only enqueue the same jobs more than once) and at least one [`Worker`].

// A `CopyError` names the document (`_id` as `Bson`) and carries the driver's error:
// large, but rare and behind a round trip anyway.
#![allow(clippy::result_large_err)]

mod apply;
mod lag;
mod refresh;
mod repair;
mod spec;
mod update;
mod watch;
mod worker;

pub use crate::core::denormalized::{
    Cleared, CopyError, CopySpec, OnDelete, Refresh, Refusal, QUEUE, WATCH_POSITIONS,
};
pub use lag::{lag, CopyLag, QueueLag, WatcherLag};
pub use repair::{reconcile, repair, CopyReconcile, CopyRepair, SkipReason, Skipped};
pub use spec::{copies, dependents};
pub use update::{
    update_one, update_one_with, Atomicity, CopyAction, CopyUpdate, SourceUpdate, UpdateOptions,
};
pub use watch::{ReconcileReason, Reconciled, WatchReport, Watcher};
pub use worker::{JobFailure, RefreshReport, SkippedJobs, Worker};
