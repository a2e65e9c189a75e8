//! Record writes through a view: add, update, delete, and an import's rows, each committed as
//! one WAL entry and answered once durable.

use std::sync::Arc;

use actix::{Context, Handler, Message, ResponseFuture};

use super::GridActor;
use crate::grid::error::{GridError, GridResult};
use crate::grid::ops::{GridOp, GridState};
use crate::grid::preconditions::{check as check_expected, record_versions, Expected};
use crate::grid::read::RecordOut;
use crate::grid::read_json::{renders_alone, RenderedRecords};
use crate::grid::records::{
    locate_by_path, plan_add, plan_delete, plan_import, plan_update, plan_update_one,
    DeleteRecordsInput, PlanLeftovers, RecordInput,
};
use crate::grid::references::{
    check_written, reference_columns, writes_references, ReferenceLookup,
};
use crate::grid::schema::ColumnDef;
use crate::grid::store::RowId;
use crate::grid::value::SourceStatus;
use crate::persist::entry::WalEntry;
use crate::persist::wal::Durable;

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

/// A records write. One that puts record ids in reference cells has them checked against the
/// referenced branches (`references::check_written`, through `references`) before it is
/// planned, while the branch holds its other writes back; writes without references pay
/// nothing for that check.
#[derive(Message)]
#[rtype(result = "GridResult<WriteAnswer>")]
pub struct WriteRecords {
    pub view_id: String,
    pub user: String,
    pub write: RecordsWrite,
    /// The source status of source-language cells an add writes without one (the grid's
    /// settings).
    pub source_default: SourceStatus,
    /// Where the referenced records are, for the key that writes.
    pub references: Box<dyn ReferenceLookup>,
    /// The records that must still be at the version their writer read (`If-Match`, a bulk
    /// write's `ifMatch`): checked right before the write is planned.
    pub expected: Vec<Expected>,
}

/// What a records write answers: the records it leaves, and the version of each (their
/// `ETag`s), in the same order.
#[derive(Debug)]
pub struct WriteAnswer {
    pub records: WrittenRecords,
    pub versions: Vec<u32>,
    /// The write's ops, handed back so that the caller's thread frees them rather than the
    /// actor's (a bulk add's twelve thousand cells took 6% of the actor's time to free), or
    /// the WAL's writer thread if it writes them last.
    pub spent: Arc<WalEntry>,
    /// What planning an add left (its emptied inputs and the keys it named), freed by the
    /// caller as `spent` is.
    pub leftovers: PlanLeftovers,
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
    fn write_records(&mut self, msg: WriteRecords) -> GridResult<(Durable, WriteAnswer)> {
        let view = self.view(&msg.view_id)?;
        check_expected(&self.state, &msg.expected)?;
        let now = chrono::Utc::now().timestamp_millis();
        let state = &self.state;
        let (first_row, epoch) = (state.store.rows(), state.store.epoch());
        let mut leftovers = PlanLeftovers::default();
        let (op, keys_before): (GridOp, Vec<(String, String)>) = match msg.write {
            // An add's records are the rows it appends (found by key only after a compaction).
            RecordsWrite::Add(inputs) => {
                let (op, left) =
                    plan_add(state, &view, inputs, &msg.user, now, msg.source_default)?;
                leftovers = left;
                (op, Vec::new())
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
        let (durable, entry) = self.commit_returning(vec![op])?;
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
                    Some(_) => entry.ops.first().map(written_keys).unwrap_or_default(),
                    None => keys_before,
                };
                keys.iter().filter_map(|(path, id)| store.find(path, id)).collect()
            }
        };
        let versions = record_versions(&self.state, &rows);
        let records = WrittenRecords::of(&self.state, &columns, rows);
        Ok((durable, WriteAnswer { records, versions, spent: entry, leftovers }))
    }
}

impl WrittenRecords {
    /// `rows` of `state` with `columns`: rendered here when the columns allow (straight from
    /// the columns, no copy of each cell), else read for the caller to finish.
    pub fn of(state: &GridState, columns: &[&ColumnDef], rows: Vec<RowId>) -> WrittenRecords {
        if renders_alone(columns) {
            WrittenRecords::Rendered(state.render_rows(columns, rows.into_iter()))
        } else {
            WrittenRecords::Read(state.read_rows(columns, rows.into_iter()))
        }
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
    type Result = ResponseFuture<GridResult<WriteAnswer>>;

    fn handle(&mut self, msg: WriteRecords, ctx: &mut Context<Self>) -> Self::Result {
        self.hold(ctx, move |act, ctx| {
            let columns = reference_columns(&act.state.schema, &msg.view_id);
            if !writes_references(&columns, msg.write.inputs()) {
                return act.write_now(msg, ctx);
            }
            let check = async move {
                let labelled: Vec<(String, &RecordInput)> = msg
                    .write
                    .inputs()
                    .iter()
                    .enumerate()
                    .map(|(i, r)| (format!("records[{i}]"), r))
                    .collect();
                check_written(&*msg.references, &columns, &labelled).await?;
                drop(labelled);
                Ok(msg)
            };
            act.after_check(ctx, check, |act, ctx, msg| act.write_now(msg, ctx))
        })
    }
}

impl GridActor {
    /// Plans, commits and answers a write whose references (if any) are checked.
    fn write_now(
        &mut self,
        msg: WriteRecords,
        ctx: &mut Context<Self>,
    ) -> ResponseFuture<GridResult<WriteAnswer>> {
        let written = self.write_records(msg).map(|(durable, answer)| (Some(durable), answer));
        self.reply_when_durable(ctx, written)
    }
}

/// The rows of an import through a view (each labelled, e.g. `row 7`), their references
/// checked (as a `WriteRecords`'s), then planned together and committed as one WAL entry;
/// answers how many records were written. A refusal of the rows themselves is
/// `GridError::Write`, which an import task renders naming the file's columns.
#[derive(Message)]
#[rtype(result = "GridResult<usize>")]
pub struct ImportRecords {
    pub view_id: String,
    pub rows: Vec<(String, RecordInput)>,
    pub user: String,
    /// The source status of added source-language cells imported without one.
    pub source_default: SourceStatus,
    pub references: ImportedReferences,
}

/// What becomes of the record ids an import puts in reference cells.
pub enum ImportedReferences {
    /// Checked against the referenced branches, found through this lookup for the key that
    /// imports (a client's file).
    Checked(Box<dyn ReferenceLookup>),
    /// Kept as another grid holds them, whatever they name (a grid's duplicate).
    Copied,
}

impl Handler<ImportRecords> for GridActor {
    type Result = ResponseFuture<GridResult<usize>>;

    fn handle(&mut self, msg: ImportRecords, ctx: &mut Context<Self>) -> Self::Result {
        self.hold(ctx, move |act, ctx| {
            let columns = reference_columns(&act.state.schema, &msg.view_id);
            let checked = matches!(msg.references, ImportedReferences::Checked(_));
            if !checked || !writes_references(&columns, msg.rows.iter().map(|(_, r)| r)) {
                return act.import_now(msg, ctx);
            }
            let check = async move {
                let labelled: Vec<(String, &RecordInput)> =
                    msg.rows.iter().map(|(at, r)| (at.clone(), r)).collect();
                if let ImportedReferences::Checked(lookup) = &msg.references {
                    check_written(&**lookup, &columns, &labelled).await?;
                }
                drop(labelled);
                Ok(msg)
            };
            act.after_check(ctx, check, |act, ctx, msg| act.import_now(msg, ctx))
        })
    }
}

impl GridActor {
    /// Runs an import whose references (if any) are checked, as a heavy write.
    fn import_now(
        &mut self,
        msg: ImportRecords,
        ctx: &mut Context<Self>,
    ) -> ResponseFuture<GridResult<usize>> {
        self.run_heavy(ctx, move |staged| {
            let view = staged.state().schema.view(&msg.view_id).cloned();
            let view = view.ok_or_else(|| GridError::ViewNotFound(msg.view_id.clone()))?;
            let count = msg.rows.len();
            let now = chrono::Utc::now().timestamp_millis();
            let ops =
                plan_import(staged.state(), &view, msg.rows, &msg.user, now, msg.source_default)?;
            let written = if ops.is_empty() { 0 } else { count };
            staged.apply(ops);
            Ok(written)
        })
    }
}
