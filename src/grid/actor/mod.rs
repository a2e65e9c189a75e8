//! `GridActor`: the one owner of a grid branch's state. Every read and write of the branch's
//! schema, views and records is a message to it; nothing else touches its data.
//!
//! A write is validated whole, turned into ops, appended to the WAL, applied in memory, and
//! answered once the WAL says it is durable. Handlers render replies on their own threads.
//!
//! A message that can fail answers a `GridError` (`grid::error`), never an HTTP error: the
//! handler that sent it turns it into one with `?`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::{
    Actor, ActorContext, ActorFutureExt, AsyncContext, Context, Handler, Message, ResponseFuture,
    WrapFuture,
};

use super::error::{GridError, GridResult};
use super::ops::{GridOp, GridState};
use super::query::QueryEngine;
use super::schema::ViewDef;
use super::store::RecordIdentity;
use crate::cluster::publisher::BranchPublisher;
use crate::grid::image::PartLimits;
use crate::persist::durability::{Durability, DurabilityError, SnapshotFailure, SnapshotPolicy};
use crate::persist::entry::WalEntry;
use crate::persist::wal::{Durable, WalError};

mod branches;
mod files;
mod heavy;
mod history;
mod paths;
pub mod reads;
mod schema;
mod stats;
mod writes;

pub use branches::{ApplyMerge, BranchCopy, CopyBranch, RestoreRecords};
pub use files::{ChangeFiles, FilesChange, HeldFiles, HoldsFile};
pub use heavy::{CompanyTurns, HeavyTurns, Staged, TurnCounts, MAX_HELD};
pub use history::{ExportHistory, HistoryExport, ReadHistory};
pub use paths::ChangePaths;
pub use reads::{ReadRecord, ReadRecords};
pub use schema::{ChangeSchema, ReadSchema, SchemaChanged};
pub use stats::{BranchStats, ReadStats};
pub use writes::{
    ImportRecords, ImportedReferences, RecordsWrite, WriteAnswer, WriteRecords, WrittenRecords,
};

/// The actor of one branch (the master branch has the grid's id).
pub struct GridActor {
    grid_id: String,
    branch_id: String,
    pub(super) state: GridState,
    /// Query indexes over `state.store`, built on first use.
    query: QueryEngine,
    durability: Arc<Durability>,
    /// What the branch wrote since the last snapshot started.
    since_snapshot: Written,
    last_snapshot: Instant,
    snapshot_running: bool,
    /// After a failed or postponed snapshot: how long the next attempt waits, doubled by each
    /// failure in a row (`SNAPSHOT_RETRY`), and when it may start.
    snapshot_retry: Option<(Duration, Instant)>,
    /// The branch this one was copied from, until this branch's first snapshot is stored: till
    /// then recovery rebuilds it from that branch's state at the fork, so that branch holds
    /// back its own snapshots (`Durability::pin`).
    fork_source: Option<String>,
    /// The heavy write running, if any, and the writes waiting for it (`heavy`).
    gate: heavy::Gate,
    /// The company's turns its heavy writes take (`heavy::HeavyTurns`).
    turns: Arc<CompanyTurns>,
    /// The view page reads use off this actor (`reads`), withdrawn before every change.
    reads: Arc<reads::ReadViews>,
    /// In a cluster: the branch's writer to the cluster's log; every WAL entry is published
    /// through it and acknowledged only once the cluster stored it too.
    publisher: Option<BranchPublisher>,
}

/// The pause before retrying a failed or postponed snapshot: the first, and the most it grows
/// to.
const SNAPSHOT_RETRY: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(64));

/// Records and WAL bytes a branch wrote since its last snapshot (`SnapshotPolicy`).
#[derive(Debug, Clone, Copy, Default)]
struct Written {
    records: u64,
    bytes: u64,
}

impl Written {
    fn add(&mut self, records: u64, bytes: u64) {
        self.records = self.records.saturating_add(records);
        self.bytes = self.bytes.saturating_add(bytes);
    }

    fn is_empty(&self) -> bool {
        self.records == 0 && self.bytes == 0
    }

    fn is_due(&self, policy: &SnapshotPolicy) -> bool {
        self.spans(policy, 1)
    }

    /// Whether this much written since the last snapshot started is `BEHIND` snapshot
    /// intervals or more: the snapshots are not keeping up.
    fn is_behind(&self, policy: &SnapshotPolicy) -> bool {
        self.spans(policy, BEHIND)
    }

    /// Whether this is `intervals` snapshot intervals of records or of bytes, or more.
    fn spans(&self, policy: &SnapshotPolicy, intervals: u64) -> bool {
        self.records >= policy.every_records.saturating_mul(intervals)
            || self.bytes >= policy.every_bytes.saturating_mul(intervals)
    }
}

/// Snapshot intervals of writes that pile up while one snapshot runs before the next one runs
/// at the server's own priority rather than as background work (`SCHED_IDLE`). A background
/// thread runs only on a core nothing else wants: on a machine kept busy, by requests or by
/// anything else, it would never finish, and the log a restart replays would grow without
/// bound (a 10M-record load beside a compiler left 29 s of replay). A snapshot that keeps up
/// stays in the background, out of the way of edits.
const BEHIND: u64 = 4;

impl GridActor {
    /// The actor of a branch whose state was created or recovered by the caller, its heavy
    /// writes taking `turns` among its company's (`heavy::HeavyTurns`).
    pub fn with_state(
        grid_id: &str,
        branch_id: &str,
        state: GridState,
        durability: Arc<Durability>,
        turns: Arc<CompanyTurns>,
    ) -> Self {
        GridActor {
            grid_id: grid_id.to_owned(),
            branch_id: branch_id.to_owned(),
            state,
            query: QueryEngine::default(),
            durability,
            since_snapshot: Written::default(),
            last_snapshot: Instant::now(),
            snapshot_running: false,
            snapshot_retry: None,
            fork_source: None,
            gate: heavy::Gate::default(),
            turns,
            reads: Arc::default(),
            publisher: None,
        }
    }

    /// The actor of a branch in a cluster, publishing its entries through `publisher`.
    pub fn with_publisher(mut self, publisher: Option<BranchPublisher>) -> Self {
        self.publisher = publisher;
        self
    }

    /// The actor publishing its read views in `reads` (shared with the branch's route).
    pub fn with_reads(mut self, reads: Arc<reads::ReadViews>) -> Self {
        self.reads = reads;
        self
    }

    /// The actor of a branch just copied from `source` (or recovered from that copy), which
    /// `durability` has pinned: it writes its first snapshot at once and then unpins it.
    pub fn forked(mut self, source: &str) -> Self {
        self.fork_source = Some(source.to_owned());
        self
    }

    /// Starts a snapshot now, unless one is running, this branch is pinned or a failed one
    /// waits for its retry. Once stored, a fork's source is released; once it ended, the next
    /// one is started if writes made meanwhile are due. A failed or postponed one gives back
    /// what it was to cover and is tried again after a growing pause.
    fn start_snapshot(&mut self, ctx: &mut Context<Self>) {
        if self.snapshot_running || self.durability.is_pinned(&self.branch_id) {
            return;
        }
        if self.snapshot_retry.is_some_and(|(_, at)| Instant::now() < at) {
            return;
        }
        let covered = self.since_snapshot;
        let behind = self.since_snapshot.is_behind(&self.durability.policy);
        let fut = self.snapshot_future(behind);
        ctx.spawn(fut.into_actor(self).map(move |written, act, ctx| {
            act.snapshot_running = false;
            if written.is_ok() {
                act.snapshot_retry = None;
                if let Some(source) = act.fork_source.take() {
                    act.durability.unpin(&source, &act.branch_id);
                }
            } else {
                act.since_snapshot.add(covered.records, covered.bytes);
                let pause = act
                    .snapshot_retry
                    .map_or(SNAPSHOT_RETRY.0, |(pause, _)| (pause * 2).min(SNAPSHOT_RETRY.1));
                act.snapshot_retry = Some((pause, Instant::now() + pause));
                ctx.run_later(pause, |act, ctx| act.retry_snapshot(ctx));
                return;
            }
            // Writes that came while this one ran saw it running and did not start another.
            if act.since_snapshot.is_due(&act.durability.policy) {
                act.maybe_snapshot(ctx);
            }
        }));
    }

    /// The retry of a failed or postponed snapshot, while there is something to cover: a
    /// fork's first snapshot, or writes.
    fn retry_snapshot(&mut self, ctx: &mut Context<Self>) {
        if self.fork_source.is_some() || !self.since_snapshot.is_empty() {
            self.start_snapshot(ctx);
        }
    }

    /// Logs and applies ops; the returned future resolves when they are durable.
    fn commit(&mut self, ops: Vec<GridOp>) -> GridResult<Durable> {
        self.commit_returning(ops).map(|(durable, _)| durable)
    }

    /// `commit`, handing the entry back (its ops freed by whoever drops it last: the caller,
    /// or the WAL's writer thread once it wrote the entry).
    fn commit_returning(&mut self, ops: Vec<GridOp>) -> GridResult<(Durable, Arc<WalEntry>)> {
        let entry = Arc::new(WalEntry::now(self.branch_id.clone(), ops));
        // Before anything changes: a read that starts once the write is acknowledged must not
        // find the view from before it.
        let _withdrawn = self.reads.withdraw();
        let records = entry.ops.iter().map(GridOp::records_written).sum();
        let durable = self.log_entry(&entry, records)?;
        for op in &entry.ops {
            self.state.apply(op);
        }
        Ok((durable, entry))
    }

    /// Appends `entry`'s WAL record (`records` records written): the actor only sizes it and
    /// the WAL's writer thread writes its bytes straight into the record's frame (a bulk add's
    /// entry is most of a megabyte to copy), unless a cluster publisher needs the bytes too.
    fn log_entry(&mut self, entry: &Arc<WalEntry>, records: u64) -> GridResult<Durable> {
        if self.publisher.is_some() {
            return self.log(entry.encode(), records);
        }
        let len = entry.encoded_len();
        let shared = Arc::clone(entry);
        let write = Box::new(move |out: &mut Vec<u8>| shared.encode_into(out));
        let appended =
            self.durability.wal.append_deferred(len, write).map_err(|err| self.refused(err))?;
        self.since_snapshot.add(records, len as u64);
        Ok(appended.durable)
    }

    /// Appends a write's WAL record (`records` records written) and counts it towards the
    /// next snapshot; 503 when the WAL refuses it.
    fn log(&mut self, payload: Vec<u8>, records: u64) -> GridResult<Durable> {
        let bytes = payload.len() as u64;
        let copy = self.publisher.as_ref().map(|_| payload.clone());
        let appended = self.durability.wal.append(payload).map_err(|err| self.refused(err))?;
        self.since_snapshot.add(records, bytes);
        Ok(match (&self.publisher, copy) {
            (Some(publisher), Some(copy)) => publisher.publish(copy, appended.durable),
            _ => appended.durable,
        })
    }

    /// The error of a write the WAL refused (503), logged.
    fn refused(&self, err: WalError) -> GridError {
        tracing::error!(error = %err, branch = %self.branch_id, "WAL append refused");
        GridError::NotLogged(err)
    }

    /// The end of every write: starts a snapshot if the writes since the last one made it due,
    /// and answers `written`'s reply once its WAL record (if it logged one) is durable, or its
    /// error at once.
    fn reply_when_durable<T: 'static>(
        &mut self,
        ctx: &mut Context<Self>,
        written: GridResult<(Option<Durable>, T)>,
    ) -> ResponseFuture<GridResult<T>> {
        if self.since_snapshot.is_due(&self.durability.policy) {
            self.maybe_snapshot(ctx);
        }
        // Every change so far is stamped at or below the clock: durable once this write is.
        let (clock, reads) = (self.state.store.clock(), self.reads.clone());
        Box::pin(async move {
            let (durable, reply) = written?;
            if let Some(durable) = durable {
                durable.await.map_err(GridError::NotDurable)?;
                reads.note_durable(clock);
            }
            Ok(reply)
        })
    }

    /// Starts a snapshot when one is due: enough records or WAL bytes written, or time passed
    /// with changes or a lagging WAL floor.
    fn maybe_snapshot(&mut self, ctx: &mut Context<Self>) {
        let policy = self.durability.policy;
        // The floor's lag (a listing of the WAL) is looked at only once the interval passed.
        let timely = self.last_snapshot.elapsed() >= policy.every
            && (!self.since_snapshot.is_empty() || self.durability.floor_lags(&self.branch_id));
        if self.since_snapshot.is_due(&policy) || timely {
            self.start_snapshot(ctx);
        }
    }

    /// Copies the state and writes it as a snapshot on a thread of its own, as background work
    /// unless `foreground` (someone waits for it, or the snapshots fell behind). The copy is
    /// the only part that holds up this actor's writers.
    fn snapshot_future(
        &mut self,
        foreground: bool,
    ) -> impl std::future::Future<Output = Result<(), SnapshotFailure>> + 'static {
        self.snapshot_running = true;
        self.since_snapshot = Written::default();
        self.last_snapshot = Instant::now();
        let lsn = self.durability.wal.last_lsn();
        let copied = Instant::now();
        let copied_ms = chrono::Utc::now().timestamp_millis();
        let state = self.state.clone();
        if let Some(publisher) = &self.publisher {
            // The cluster's image: taken after every entry published so far, on its own.
            let image = state.clone();
            let _stored =
                publisher.store_image(Box::new(move || image.encode_image(PartLimits::DEFAULT)));
        }
        tracing::debug!(branch = %self.branch_id, copy_ms = copied.elapsed().as_millis() as u64, "snapshot copy taken");
        let durability = self.durability.clone();
        let branch = self.branch_id.clone();
        async move {
            let started = Instant::now();
            // Only what is durable in the WAL may be covered by a snapshot: otherwise a crash
            // could leave the WAL shorter than the snapshot's position and LSNs be reused.
            let synced = durability.wal.sync_now().map_err(DurabilityError::Wal)?;
            synced.await.map_err(DurabilityError::Wal)?;
            // On a thread of its own scheduled as background work: encoding the image takes a
            // core for a while, and the actors and HTTP workers take it back at once when a
            // request comes (an edit inside a snapshot window otherwise waits for the encoder's
            // time slice).
            let (done, written) = tokio::sync::oneshot::channel();
            std::thread::Builder::new()
                .name("snapshot".into())
                .spawn(move || {
                    if foreground {
                        tracing::debug!(branch = %branch, "snapshot written at the server's priority");
                    } else {
                        super::read_pool::background_priority();
                    }
                    let written =
                        durability.write_snapshot_copied(&branch, (lsn, copied_ms), &state);
                    // The image's buffers and the copy's own chunks were this thread's: give
                    // them back to the OS before it ends. 1.5-23 ms after the snapshots of a
                    // 1M-record load.
                    drop(state);
                    alloc_release::release_freed();
                    let _ = done.send(written);
                })
                .map_err(SnapshotFailure::NoThread)?;
            let written =
                written.await.map_err(|_| SnapshotFailure::ThreadStopped)?.inspect_err(|failure| {
                    match failure {
                        SnapshotFailure::Postponed { .. } => {
                            tracing::warn!(lsn, reason = %failure, "snapshot postponed")
                        }
                        _ => tracing::error!(lsn, error = %failure, "snapshot failed"),
                    }
                });
            if written.is_ok() {
                tracing::info!(lsn, ms = started.elapsed().as_millis() as u64, "snapshot written");
            }
            written
        }
    }

    fn view(&self, view_id: &str) -> GridResult<ViewDef> {
        let view = self.state.schema.view(view_id).cloned();
        view.ok_or_else(|| GridError::ViewNotFound(view_id.to_owned()))
    }

    fn by_path(&self) -> bool {
        self.state.store.identity() == RecordIdentity::PathAndId
    }
}

impl Actor for GridActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        tracing::debug!(grid = %self.grid_id, branch = %self.branch_id, "grid actor started");
        // What the branch starts with was recovered from durable storage (or just logged).
        self.reads.note_durable(self.state.store.clock());
        let check = (self.durability.policy.every / 4).max(std::time::Duration::from_millis(100));
        ctx.run_interval(check, |act, ctx| act.maybe_snapshot(ctx));
        if self.fork_source.is_some() {
            self.start_snapshot(ctx);
        }
    }

    fn stopped(&mut self, _ctx: &mut Context<Self>) {
        tracing::debug!(grid = %self.grid_id, branch = %self.branch_id, "grid actor stopped");
    }
}

/// Writes a snapshot now (graceful shutdown), at the server's priority: a stop waits for it,
/// and a background thread on a busy machine could take minutes. Resolves when it is stored.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), SnapshotFailure>")]
pub struct TakeSnapshot;

impl Handler<TakeSnapshot> for GridActor {
    type Result = ResponseFuture<Result<(), SnapshotFailure>>;

    fn handle(&mut self, _: TakeSnapshot, _: &mut Context<Self>) -> Self::Result {
        if self.durability.is_pinned(&self.branch_id) {
            // A branch copied from this one has no snapshot yet and is rebuilt from this one's
            // WAL records: this branch replays them too at the next start.
            tracing::info!(branch = %self.branch_id, "snapshot held back for a new branch");
            return Box::pin(async { Ok(()) });
        }
        Box::pin(self.snapshot_future(true))
    }
}

/// Stops the actor (its grid or branch was deleted).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Shutdown;

impl Handler<Shutdown> for GridActor {
    type Result = ();

    fn handle(&mut self, _: Shutdown, ctx: &mut Context<Self>) {
        // Freeing a large branch is not bounded work: on a blocking thread, not this one.
        let withdrawn = self.reads.withdraw();
        tokio::task::spawn_blocking(move || drop(withdrawn));
        let empty = GridState::empty(self.state.store.identity());
        let old = std::mem::replace(&mut self.state, empty);
        tokio::task::spawn_blocking(move || drop(old));
        self.query.clear();
        ctx.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::{Written, BEHIND};
    use crate::persist::durability::SnapshotPolicy;
    use std::time::Duration;

    /// Due after one interval of records or bytes; behind after `BEHIND` of either.
    #[test]
    fn writes_are_due_after_one_interval_and_behind_after_several() {
        let policy = SnapshotPolicy {
            every_records: 100,
            every_bytes: 1000,
            every: Duration::from_secs(60),
        };
        let written = |records, bytes| Written { records, bytes };
        assert!(!written(99, 999).is_due(&policy));
        assert!(written(100, 0).is_due(&policy) && written(0, 1000).is_due(&policy));
        assert!(!written(100 * BEHIND - 1, 1000 * BEHIND - 1).is_behind(&policy));
        assert!(written(100 * BEHIND, 0).is_behind(&policy));
        assert!(written(0, 1000 * BEHIND).is_behind(&policy));
        // Counts near the top of the range do not wrap into "not behind".
        let huge = SnapshotPolicy { every_records: u64::MAX, every_bytes: u64::MAX, ..policy };
        assert!(!written(u64::MAX - 1, u64::MAX - 1).is_behind(&huge));
        assert!(written(u64::MAX, 0).is_behind(&huge));
    }
}
