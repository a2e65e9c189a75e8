//! `GridActor`: the one owner of a grid branch's state. Every read and write of the branch's
//! schema, views and records is a message to it; nothing else touches its data.
//!
//! A write is validated whole, turned into ops, appended to the WAL, applied in memory, and
//! answered once the WAL says it is durable. Handlers render replies on their own threads.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::{
    Actor, ActorContext, ActorFutureExt, AsyncContext, Context, Handler, Message, MessageResult,
    ResponseFuture, WrapFuture,
};

use super::history::{EntryRef, ExportFilter, ExportRow, History, HistoryEntry};
use super::merge::{merge_base, plan_merge, plan_restore, MergeCounts, MergeScope};
use super::ops::{GridOp, GridState};
use super::planner::{plan, SchemaChange};
use super::query::{bind_filters, Direction, Filter, QueryEngine, RawFilter, RawSort, Target, Val};
use super::read::{RecordOut, RecordPage};
use super::read_json::{renders_alone, RenderedRecords};
use super::records::{
    locate_by_path, plan_add, plan_delete, plan_import, plan_update, plan_update_one,
    DeleteRecordsInput, RecordInput,
};
use super::references::{reference_columns, writes_references, ReferenceColumns};
use super::schema::{distinct_column_ids, ColumnDef, Schema, ViewDef, PREDEFINED_COLUMNS};
use super::store::{ColumnSlot, ColumnStore, RecordIdentity, RowId, StoreBytes};
use super::value::SourceStatus;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::persist::durability::{Durability, SnapshotFailure, SnapshotPolicy};
use crate::persist::entry::WalEntry;
use crate::persist::wal::Durable;

mod files;
mod heavy;
pub mod reads;

pub use files::{ChangeFiles, FilesChange, HeldFiles, HoldsFile};
pub use heavy::{Staged, MAX_HELD};

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
    /// The view page reads use off this actor (`reads`), withdrawn before every change.
    reads: Arc<reads::ReadViews>,
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
        self.records >= policy.every_records || self.bytes >= policy.every_bytes
    }
}

impl GridActor {
    /// The actor of a branch whose state was created or recovered by the caller.
    pub fn with_state(
        grid_id: &str,
        branch_id: &str,
        state: GridState,
        durability: Arc<Durability>,
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
            reads: Arc::default(),
        }
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
        let fut = self.snapshot_future();
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
    fn commit(&mut self, ops: Vec<GridOp>) -> ApiResult<Durable> {
        self.commit_returning(ops).map(|(durable, _)| durable)
    }

    /// `commit`, handing the ops back.
    fn commit_returning(&mut self, ops: Vec<GridOp>) -> ApiResult<(Durable, Vec<GridOp>)> {
        let entry = WalEntry { branch_id: self.branch_id.clone(), ops };
        let payload = entry.encode();
        // Before anything changes: a read that starts once the write is acknowledged must not
        // find the view from before it.
        let _withdrawn = self.reads.withdraw();
        let bytes = payload.len() as u64;
        let appended = self.durability.wal.append(payload).map_err(|err| {
            tracing::error!(error = %err, branch = %self.branch_id, "WAL append refused");
            ApiError::new(
                ErrorCode::ServiceUnavailable,
                format!("The write could not be logged: {err}"),
            )
        })?;
        for op in &entry.ops {
            self.state.apply(op);
        }
        let records = entry.ops.iter().map(GridOp::records_written).sum();
        self.since_snapshot.add(records, bytes);
        Ok((appended.durable, entry.ops))
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

    /// Copies the state and writes it as a snapshot on a blocking thread. The copy is the only
    /// part that holds up this actor's writers.
    fn snapshot_future(
        &mut self,
    ) -> impl std::future::Future<Output = Result<(), String>> + 'static {
        self.snapshot_running = true;
        self.since_snapshot = Written::default();
        self.last_snapshot = Instant::now();
        let lsn = self.durability.wal.last_lsn();
        let copied = Instant::now();
        let state = self.state.clone();
        tracing::debug!(branch = %self.branch_id, copy_ms = copied.elapsed().as_millis() as u64, "snapshot copy taken");
        let durability = self.durability.clone();
        let branch = self.branch_id.clone();
        async move {
            let started = Instant::now();
            // Only what is durable in the WAL may be covered by a snapshot: otherwise a crash
            // could leave the WAL shorter than the snapshot's position and LSNs be reused.
            let synced = durability.wal.sync_now().map_err(|e| format!("WAL sync: {e}"))?;
            synced.await.map_err(|e| format!("WAL sync: {e}"))?;
            // On a thread of its own scheduled as background work: encoding the image takes a
            // core for a while, and the actors and HTTP workers take it back at once when a
            // request comes (an edit inside a snapshot window otherwise waits for the encoder's
            // time slice).
            let (done, written) = tokio::sync::oneshot::channel();
            std::thread::Builder::new()
                .name("snapshot".into())
                .spawn(move || {
                    super::read_pool::background_priority();
                    let written = durability.write_snapshot(&branch, lsn, &state);
                    // The image's buffers and the copy's own chunks were this thread's: give
                    // them back to the OS before it ends. 1.5-23 ms after the snapshots of a
                    // 1M-record load.
                    drop(state);
                    alloc_release::release_freed();
                    let _ = done.send(written);
                })
                .map_err(|e| format!("no snapshot thread: {e}"))?;
            let written = written
                .await
                .map_err(|_| "the snapshot thread stopped".to_owned())?
                .map_err(|failure| {
                    match &failure {
                        SnapshotFailure::Postponed { .. } => {
                            tracing::warn!(lsn, reason = %failure, "snapshot postponed")
                        }
                        SnapshotFailure::Failed(_) => {
                            tracing::error!(lsn, error = %failure, "snapshot failed")
                        }
                    }
                    failure.to_string()
                });
            if written.is_ok() {
                tracing::info!(lsn, ms = started.elapsed().as_millis() as u64, "snapshot written");
            }
            written
        }
    }

    fn view(&self, view_id: &str) -> ApiResult<ViewDef> {
        self.state
            .schema
            .view(view_id)
            .cloned()
            .ok_or_else(|| ApiError::not_found(ErrorCode::ViewIsNotFound, "View", view_id))
    }

    fn by_path(&self) -> bool {
        self.state.store.identity() == RecordIdentity::PathAndId
    }
}

impl Actor for GridActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        tracing::debug!(grid = %self.grid_id, branch = %self.branch_id, "grid actor started");
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

/// Waits for durability, then answers `reply`.
fn when_durable<T: Send + 'static>(durable: Durable, reply: T) -> ResponseFuture<ApiResult<T>> {
    Box::pin(async move {
        durable.await.map_err(|err| {
            ApiError::new(ErrorCode::ServiceUnavailable, format!("The write was not logged: {err}"))
        })?;
        Ok(reply)
    })
}

/// A copy of the branch's schema (columns, dependencies, views).
#[derive(Debug, Message)]
#[rtype(result = "Schema")]
pub struct ReadSchema;

impl Handler<ReadSchema> for GridActor {
    type Result = actix::MessageResult<ReadSchema>;

    fn handle(&mut self, _: ReadSchema, _: &mut Context<Self>) -> Self::Result {
        // The next schema and page reads come from a view until the branch changes.
        let _ = self.reads.publish(&mut self.state, &mut self.query);
        actix::MessageResult(self.state.schema.clone())
    }
}

/// A schema change made through a view (or a new view).
#[derive(Debug, Message)]
#[rtype(result = "ApiResult<SchemaChanged>")]
pub struct ChangeSchema {
    pub view_id: String,
    pub change: SchemaChange,
}

/// The schema after an accepted change and the id of the thing changed.
#[derive(Debug)]
pub struct SchemaChanged {
    pub schema: Schema,
    pub subject: String,
}

impl Handler<ChangeSchema> for GridActor {
    type Result = ResponseFuture<ApiResult<SchemaChanged>>;

    fn handle(&mut self, msg: ChangeSchema, ctx: &mut Context<Self>) -> Self::Result {
        self.hold(ctx, move |act, ctx| {
            // A new formula column or a type change touches every record: off this thread.
            act.run_heavy(ctx, move |staged| {
                let planned = plan(&staged.state().schema, &msg.view_id, msg.change)?;
                staged.apply(planned.ops);
                Ok(SchemaChanged {
                    schema: staged.state().schema.clone(),
                    subject: planned.subject,
                })
            })
        })
    }
}

/// A write of records through a view.
#[derive(Debug)]
pub enum RecordsWrite {
    Add(Vec<RecordInput>),
    Update(Vec<RecordInput>),
    /// One record by id, and by path when `at_path` is given (`?path=`).
    UpdateOne {
        record_id: String,
        at_path: Option<String>,
        input: RecordInput,
    },
    Delete(DeleteRecordsInput),
}

/// A records write. Unless `references_checked`, a write naming referenced records is handed
/// back (`WriteOutcome::CheckReferences`) for the caller to check them against the referenced
/// branches first: writes without references pay nothing for that check.
#[derive(Debug, Message)]
#[rtype(result = "ApiResult<WriteOutcome>")]
pub struct WriteRecords {
    pub view_id: String,
    pub user: String,
    pub write: RecordsWrite,
    pub references_checked: bool,
    /// The source status of source-language cells an add writes without one (the grid's
    /// settings).
    pub source_default: SourceStatus,
}

/// What became of a `WriteRecords`.
#[derive(Debug)]
pub enum WriteOutcome {
    /// Committed and durable: the written records as the view shows them.
    Written(WrittenRecords),
    /// Not applied: its reference cells must be checked first, against the view's reference
    /// columns given.
    CheckReferences { write: RecordsWrite, columns: ReferenceColumns },
}

/// The records a write leaves, as the view shows them.
#[derive(Debug)]
pub enum WrittenRecords {
    /// Read for the caller to finish (reference cells) and render.
    Read(Vec<RecordOut>),
    /// Rendered to JSON already (a view without reference columns).
    Rendered(RenderedRecords),
}

impl RecordsWrite {
    /// The records the write sends (none for a delete).
    pub fn inputs(&self) -> &[RecordInput] {
        match self {
            RecordsWrite::Add(inputs) | RecordsWrite::Update(inputs) => inputs,
            RecordsWrite::UpdateOne { input, .. } => std::slice::from_ref(input),
            RecordsWrite::Delete(_) => &[],
        }
    }
}

impl GridActor {
    /// Plans and commits a records write; returns the written records as the view shows them.
    fn write_records(&mut self, msg: WriteRecords) -> ApiResult<(Durable, WrittenRecords)> {
        let view = self.view(&msg.view_id)?;
        let now = chrono::Utc::now().timestamp_millis();
        let state = &self.state;
        let (first_row, epoch) = (state.store.rows(), state.store.epoch());
        let (op, keys_before): (GridOp, Vec<(String, String)>) = match msg.write {
            // An add's records are the rows it appends (found by key only after a compaction).
            RecordsWrite::Add(inputs) => {
                (plan_add(state, &view, inputs, &msg.user, now, msg.source_default)?, Vec::new())
            }
            RecordsWrite::Update(inputs) => {
                let op = plan_update(state, &view, inputs, &msg.user, now)?;
                let keys = written_keys(&op);
                (op, keys)
            }
            RecordsWrite::UpdateOne { record_id, at_path, input } => {
                let input = locate_by_path(state, &record_id, at_path, input)?;
                let (op, path, id) =
                    plan_update_one(state, &view, &record_id, input, &msg.user, now)?;
                (op, vec![(path, id)])
            }
            RecordsWrite::Delete(input) => (plan_delete(state, input)?, Vec::new()),
        };
        let added = match &op {
            GridOp::AddRecords { records, .. } => Some(records.len()),
            _ => None,
        };
        let (durable, ops) = self.commit_returning(vec![op])?;
        let store = &self.state.store;
        let columns: Vec<&ColumnDef> =
            self.state.schema.view_columns(&view).into_iter().map(|(c, _)| c).collect();
        let rows: Vec<RowId> = match added {
            // Adds append rows and never compact: the records are the rows past the old end.
            Some(n) if store.epoch() == epoch && store.rows() == first_row + n => {
                (first_row..first_row + n).map(|row| RowId::from_raw(row as u32)).collect()
            }
            _ => {
                let keys = match added {
                    Some(_) => ops.first().map(written_keys).unwrap_or_default(),
                    None => keys_before,
                };
                keys.iter().filter_map(|(path, id)| store.find(path, id)).collect()
            }
        };
        // Rendered here when it can be: straight from the columns, no copy of each cell.
        let records = if renders_alone(&columns) {
            WrittenRecords::Rendered(self.state.render_rows(&columns, rows.into_iter()))
        } else {
            WrittenRecords::Read(self.state.read_rows(&columns, rows.into_iter()))
        };
        Ok((durable, records))
    }
}

/// (path, id) of each record an add or update leaves behind.
fn written_keys(op: &GridOp) -> Vec<(String, String)> {
    match op {
        GridOp::AddRecords { records, .. } | GridOp::UpdateRecords { records, .. } => records
            .iter()
            .map(|r| {
                let id = r.new_id.clone().unwrap_or_else(|| r.id.clone());
                let path = r.new_path.clone().unwrap_or_else(|| r.path.clone());
                (path, id)
            })
            .collect(),
        _ => Vec::new(),
    }
}

impl Handler<WriteRecords> for GridActor {
    type Result = ResponseFuture<ApiResult<WriteOutcome>>;

    fn handle(&mut self, msg: WriteRecords, ctx: &mut Context<Self>) -> Self::Result {
        self.hold(ctx, move |act, ctx| act.handle_write(msg, ctx))
    }
}

impl GridActor {
    fn handle_write(
        &mut self,
        msg: WriteRecords,
        ctx: &mut Context<Self>,
    ) -> ResponseFuture<ApiResult<WriteOutcome>> {
        if !msg.references_checked {
            let columns = reference_columns(&self.state.schema, &msg.view_id);
            if writes_references(&columns, msg.write.inputs()) {
                let write = msg.write;
                return Box::pin(
                    async move { Ok(WriteOutcome::CheckReferences { write, columns }) },
                );
            }
        }
        let result = self.write_records(msg);
        if self.since_snapshot.is_due(&self.durability.policy) {
            self.maybe_snapshot(ctx);
        }
        match result {
            Ok((durable, records)) => {
                let written = when_durable(durable, records);
                Box::pin(async move { written.await.map(WriteOutcome::Written) })
            }
            Err(err) => Box::pin(async move { Err(err) }),
        }
    }
}

/// Writes a snapshot now (graceful shutdown); resolves when it is stored.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), String>")]
pub struct TakeSnapshot;

impl Handler<TakeSnapshot> for GridActor {
    type Result = ResponseFuture<Result<(), String>>;

    fn handle(&mut self, _: TakeSnapshot, _: &mut Context<Self>) -> Self::Result {
        if self.durability.is_pinned(&self.branch_id) {
            // A branch copied from this one has no snapshot yet and is rebuilt from this one's
            // WAL records: this branch replays them too at the next start.
            tracing::info!(branch = %self.branch_id, "snapshot held back for a new branch");
            return Box::pin(async { Ok(()) });
        }
        Box::pin(self.snapshot_future())
    }
}

/// A page of records in insertion order, with the view's (or the listed) columns.
#[derive(Debug, Message)]
#[rtype(result = "ApiResult<RecordPage>")]
pub struct ReadRecords {
    pub view_id: String,
    pub offset: usize,
    pub limit: usize,
    pub column_ids: Option<Vec<String>>,
    /// Conditions of the `query` parameter, ANDed.
    pub filters: Vec<RawFilter>,
    /// Keys of the `sort` parameter, in order.
    pub sort: Vec<RawSort>,
    /// `afterRecordId` / `beforeRecordId`: the page starts right after (ends right before) this
    /// record in the listing's order; `offset` is then 0.
    pub cursor: Option<(Direction, String)>,
    /// The page wanted as JSON (`RecordPage::rendered`) rather than as records, when the
    /// columns allow it (`renders_alone`).
    pub rendered: bool,
}

impl Handler<ReadRecords> for GridActor {
    type Result = ApiResult<RecordPage>;

    fn handle(&mut self, msg: ReadRecords, _: &mut Context<Self>) -> Self::Result {
        let view = self.view(&msg.view_id)?;
        self.query.sync(&mut self.state.store);
        let page = reads::read_page(&self.state, &view, &mut self.query, &msg);
        self.query.resume_tracking(&mut self.state.store);
        // The next reads come from a view of this state, with any index this read built, until
        // the branch changes.
        let _replaced = self.reads.republish(&mut self.state, &mut self.query);
        page?.ok_or_else(|| ApiError::internal("the branch's own query engine lacked an index"))
    }
}

/// The row of a cursor record (404 nonexistentRecordId for an unknown one). In a grid whose
/// records are identified by path and id, the first record with that id.
pub(super) fn cursor_row(store: &ColumnStore, id: &str) -> ApiResult<RowId> {
    let found = store.find("", id).or_else(|| match store.identity() {
        RecordIdentity::PathAndId => {
            (store.scan_ids(|x| x == id) & store.live()).min().map(RowId::from_raw)
        }
        RecordIdentity::RecordId => None,
    });
    found.ok_or_else(|| {
        ApiError::new(ErrorCode::NonexistentRecordId, format!("Record \"{id}\" does not exist."))
    })
}

/// The columns a read shows: the view's, or those of `ids` in that order, each once (each must
/// be in the view: 404 `columnNotFoundInView`; the predefined columns are always shown).
pub(super) fn picked_columns<'a>(
    schema: &'a Schema,
    view: &'a ViewDef,
    ids: Option<&[String]>,
) -> ApiResult<Vec<&'a ColumnDef>> {
    let shown = schema.view_columns(view);
    let Some(ids) = ids else { return Ok(shown.into_iter().map(|(c, _)| c).collect()) };
    let ids = distinct_column_ids(ids, shown.len())?;
    let by_id: HashMap<&str, &ColumnDef> = shown.iter().map(|(c, _)| (c.id.as_str(), *c)).collect();
    ids.into_iter()
        .filter(|id| !PREDEFINED_COLUMNS.contains(id))
        .map(|id| {
            by_id.get(id).copied().ok_or_else(|| {
                ApiError::new(
                    ErrorCode::ColumnNotFoundInView,
                    format!("Column \"{id}\" could not be found in view \"{}\".", view.id),
                )
            })
        })
        .collect()
}

/// How many records a branch holds and the bytes its records and query indexes take (for
/// `GET /metrics`).
#[derive(Debug, Message)]
#[rtype(result = "BranchStats")]
pub struct ReadStats;

/// The answer to `ReadStats`.
#[derive(Debug, Clone)]
pub struct BranchStats {
    pub records: usize,
    pub store: StoreBytes,
    pub history_bytes: usize,
    pub index_bytes: usize,
    /// Per column type in use (`ColumnType::as_str`): the heap bytes of its columns' cells and
    /// how many columns have it.
    pub by_type: Vec<(&'static str, usize, usize)>,
}

impl Handler<ReadStats> for GridActor {
    type Result = MessageResult<ReadStats>;

    fn handle(&mut self, _: ReadStats, _: &mut Context<Self>) -> Self::Result {
        MessageResult(BranchStats {
            records: self.state.store.len(),
            store: self.state.store.heap_parts(),
            history_bytes: self.state.history.heap_bytes(),
            index_bytes: self.query.heap_bytes(),
            by_type: self.cell_bytes_by_type(),
        })
    }
}

impl GridActor {
    /// `BranchStats::by_type`, in the order types first appear in the schema.
    fn cell_bytes_by_type(&self) -> Vec<(&'static str, usize, usize)> {
        let mut by_type: Vec<(&'static str, usize, usize)> = Vec::new();
        for column in &self.state.schema.columns {
            let Some(&slot) = self.state.slots.get(&column.id) else { continue };
            let bytes = self.state.store.column_heap_bytes(slot);
            let name = column.column_type.as_str();
            match by_type.iter_mut().find(|(t, _, _)| *t == name) {
                Some(entry) => {
                    entry.1 += bytes;
                    entry.2 += 1;
                }
                None => by_type.push((name, bytes, 1)),
            }
        }
        by_type
    }
}

/// A page of one record's history, newest first, and how many entries it has.
#[derive(Debug, Message)]
#[rtype(result = "ApiResult<(Vec<HistoryEntry>, usize)>")]
pub struct ReadHistory {
    pub view_id: String,
    pub record_id: String,
    pub path: Option<String>,
    pub offset: usize,
    pub limit: usize,
    /// Only these columns' cells (each must be in the view: 404 `columnNotFoundInView`), and
    /// only the entries that changed one of them.
    pub column_ids: Option<Vec<String>>,
    /// Oldest first instead of newest first.
    pub oldest_first: bool,
    /// The listing's conditions, on what each entry recorded (`entry_passes`).
    pub query: Vec<RawFilter>,
}

/// Whether a history entry of record `record_id` passes `filter`: record id and path, the
/// entry's user and time as `_lastModifiedBy` / `_lastModifiedTime`, and a column's value or
/// statuses as the entry wrote them (an entry that did not write that column passes no
/// condition on it). `column_of` names the columns of the slots the filters read.
fn entry_passes(
    filter: &Filter,
    entry: &HistoryEntry,
    record_id: &str,
    column_of: &HashMap<ColumnSlot, String>,
) -> bool {
    let cell = |slot: ColumnSlot| {
        let id = column_of.get(&slot)?;
        entry.cells.iter().find(|c| &c.column_id == id)
    };
    let mut list = String::new();
    let value = match filter.target {
        Target::Cell(slot, _) => match cell(slot) {
            Some(c) => Val::from_value(&c.value, &mut list),
            None => return false,
        },
        Target::RecordId => Val::Text(record_id),
        Target::Path => Val::Text(&entry.path),
        Target::ModifiedBy => Val::Text(&entry.user),
        Target::ModifiedTime => Val::Time(entry.time_ms),
        Target::DependencyStatus(slot) => match cell(slot).and_then(|c| c.statuses) {
            Some((dependency, _)) => Val::Status(dependency as u8),
            None => return false,
        },
        Target::SourceStatus(slot) => match cell(slot).and_then(|c| c.statuses) {
            Some((_, source)) => Val::Status(source as u8),
            None => return false,
        },
    };
    filter.test_value(value)
}

impl Handler<ReadHistory> for GridActor {
    type Result = ApiResult<(Vec<HistoryEntry>, usize)>;

    fn handle(&mut self, msg: ReadHistory, _: &mut Context<Self>) -> Self::Result {
        let view = self.view(&msg.view_id)?;
        let path = msg.path.unwrap_or_default();
        let Some(row) = self.state.store.find(&path, &msg.record_id) else {
            return Err(ApiError::new(
                ErrorCode::NonexistentRecordId,
                format!("Record \"{}\" does not exist.", msg.record_id),
            ));
        };
        let head = self.state.store.history_head(row);
        let shown: Vec<String> = match &msg.column_ids {
            Some(ids) => picked_columns(&self.state.schema, &view, Some(ids))?
                .into_iter()
                .map(|c| c.id.clone())
                .collect(),
            None => {
                self.state.schema.view_columns(&view).iter().map(|(c, _)| c.id.clone()).collect()
            }
        };
        let narrowed = msg.column_ids.is_some();
        let filters = bind_filters(&self.state, &view, &msg.query)?;
        let column_of: HashMap<ColumnSlot, String> = match filters.is_empty() {
            true => HashMap::new(),
            false => self.state.slots.iter().map(|(id, &slot)| (slot, id.clone())).collect(),
        };
        let record_id = msg.record_id.as_str();
        let keep = |e: &HistoryEntry| {
            (!narrowed || e.cells.iter().any(|c| shown.contains(&c.column_id)))
                && filters.iter().all(|f| entry_passes(f, e, record_id, &column_of))
        };
        let page = (msg.offset, msg.limit);
        let (mut entries, total) =
            self.state.history.page_where(head, page, msg.oldest_first, keep);
        for entry in &mut entries {
            entry.cells.retain(|c| shown.contains(&c.column_id));
        }
        Ok((entries, total))
    }
}

/// The history of a view's columns for an export (`columns` narrows them; unknown ids are
/// refused): a copy of the history, whose rows the caller reads off the actor's thread
/// (`HistoryExport::rows`).
#[derive(Debug, Message)]
#[rtype(result = "ApiResult<HistoryExport>")]
pub struct ExportHistory {
    pub view_id: String,
    pub from_ms: i64,
    pub to_ms: i64,
    pub columns: Option<Vec<String>>,
    pub users: Option<Vec<String>>,
}

/// The answer to `ExportHistory`.
pub struct HistoryExport {
    history: History,
    /// The live records' chain heads.
    heads: Vec<EntryRef>,
    from_ms: i64,
    to_ms: i64,
    columns: Vec<String>,
    users: Option<Vec<String>>,
}

impl HistoryExport {
    /// The rows to export (reads the whole history: call it on a blocking thread).
    pub fn rows(&self) -> Vec<ExportRow> {
        self.history.export_rows(
            &self.heads,
            &ExportFilter {
                from_ms: self.from_ms,
                to_ms: self.to_ms,
                columns: &self.columns,
                users: self.users.as_deref(),
            },
        )
    }
}

impl std::fmt::Debug for HistoryExport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HistoryExport").field("columns", &self.columns).finish_non_exhaustive()
    }
}

impl Handler<ExportHistory> for GridActor {
    type Result = ApiResult<HistoryExport>;

    fn handle(&mut self, msg: ExportHistory, _: &mut Context<Self>) -> Self::Result {
        let view = self.view(&msg.view_id)?;
        let shown: Vec<String> =
            self.state.schema.view_columns(&view).iter().map(|(c, _)| c.id.clone()).collect();
        let columns = match msg.columns {
            Some(asked) => {
                let asked: Vec<String> = distinct_column_ids(&asked, shown.len())?
                    .into_iter()
                    .map(str::to_owned)
                    .collect();
                if let Some(unknown) = asked.iter().find(|c| !shown.contains(c)) {
                    return Err(ApiError::new(
                        ErrorCode::InvalidColumnId,
                        format!("Column \"{unknown}\" is not in view \"{}\".", msg.view_id),
                    ));
                }
                asked
            }
            None => shown,
        };
        Ok(HistoryExport {
            history: self.state.history.clone(),
            heads: self.state.store.live_rows().map(|r| self.state.store.history_head(r)).collect(),
            from_ms: msg.from_ms,
            to_ms: msg.to_ms,
            columns,
            users: msg.users,
        })
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

/// A copy of the branch (its storage chunks are shared until either side changes them) and
/// the WAL position it covers: the start of a new branch, or the source side of a merge.
#[derive(Debug, Message)]
#[rtype(result = "BranchCopy")]
pub struct CopyBranch {
    /// The id of the new branch the copy starts: this branch is pinned for it in the same
    /// step, so no snapshot of it can pass the copy's position before the new branch has its
    /// own (`Durability::pin`).
    pub pin_for: Option<String>,
}

/// The answer to `CopyBranch`.
pub struct BranchCopy {
    pub state: GridState,
    /// The WAL's last position when the copy was taken: the copy holds every record of this
    /// branch up to it (and none after).
    pub wal_lsn: u64,
}

impl std::fmt::Debug for BranchCopy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BranchCopy").field("wal_lsn", &self.wal_lsn).finish_non_exhaustive()
    }
}

impl Handler<CopyBranch> for GridActor {
    type Result = MessageResult<CopyBranch>;

    fn handle(&mut self, msg: CopyBranch, _: &mut Context<Self>) -> Self::Result {
        if let Some(branch) = &msg.pin_for {
            self.durability.pin(&self.branch_id, branch);
        }
        MessageResult(BranchCopy {
            state: self.state.clone(),
            wal_lsn: self.durability.wal.last_lsn(),
        })
    }
}

/// Merges a copy of another branch into this one (see `grid::merge`), as one WAL entry.
#[derive(Message)]
#[rtype(result = "ApiResult<MergeCounts>")]
pub struct ApplyMerge {
    pub source_branch_id: String,
    pub source: GridState,
    /// The clock where the two branches' lineages parted, used when they never merged.
    pub fork_clock: u32,
    pub scope: MergeScope,
    pub user: String,
}

impl Handler<ApplyMerge> for GridActor {
    type Result = ResponseFuture<ApiResult<MergeCounts>>;

    fn handle(&mut self, msg: ApplyMerge, ctx: &mut Context<Self>) -> Self::Result {
        self.hold(ctx, move |act, ctx| {
            let branch_id = act.branch_id.clone();
            act.run_heavy(ctx, move |staged| {
                let base = merge_base(
                    &msg.source_branch_id,
                    &msg.source,
                    &branch_id,
                    staged.state(),
                    msg.fork_clock,
                );
                let now = chrono::Utc::now().timestamp_millis();
                let (ops, counts) = plan_merge(
                    &msg.source_branch_id,
                    &msg.source,
                    staged.state(),
                    base,
                    &msg.scope,
                    (&msg.user, now),
                );
                staged.apply(ops);
                Ok(counts)
            })
        })
    }
}

/// The rows of an import through a view (each labelled, e.g. `row 7`), checked together and
/// committed as one WAL entry; answers how many records were written.
#[derive(Debug, Message)]
#[rtype(result = "ApiResult<usize>")]
pub struct ImportRecords {
    pub view_id: String,
    pub rows: Vec<(String, RecordInput)>,
    pub user: String,
    /// The source status of added source-language cells imported without one.
    pub source_default: SourceStatus,
}

impl Handler<ImportRecords> for GridActor {
    type Result = ResponseFuture<ApiResult<usize>>;

    fn handle(&mut self, msg: ImportRecords, ctx: &mut Context<Self>) -> Self::Result {
        self.hold(ctx, move |act, ctx| {
            act.run_heavy(ctx, move |staged| {
                let view = staged.state().schema.view(&msg.view_id).cloned().ok_or_else(|| {
                    ApiError::not_found(ErrorCode::ViewIsNotFound, "View", &msg.view_id)
                })?;
                let count = msg.rows.len();
                let now = chrono::Utc::now().timestamp_millis();
                let ops = plan_import(
                    staged.state(),
                    &view,
                    msg.rows,
                    &msg.user,
                    now,
                    msg.source_default,
                )?;
                let written = if ops.is_empty() { 0 } else { count };
                staged.apply(ops);
                Ok(written)
            })
        })
    }
}

/// Puts the branch's records back as a backup holds them (see `grid::merge::plan_restore`),
/// as one WAL entry; answers how many ops it took.
#[derive(Message)]
#[rtype(result = "ApiResult<usize>")]
pub struct RestoreRecords {
    pub backup: GridState,
    pub user: String,
}

impl Handler<RestoreRecords> for GridActor {
    type Result = ResponseFuture<ApiResult<usize>>;

    fn handle(&mut self, msg: RestoreRecords, ctx: &mut Context<Self>) -> Self::Result {
        self.hold(ctx, move |act, ctx| {
            act.run_heavy(ctx, move |staged| {
                let now = chrono::Utc::now().timestamp_millis();
                let ops = plan_restore(&msg.backup, staged.state(), (&msg.user, now));
                let count = ops.len();
                staged.apply(ops);
                Ok(count)
            })
        })
    }
}
