//! `ChangeFiles`: file ids added to, or taken out of, one files column of one or more records,
//! checked whole and committed as one WAL entry (every record or none). Only the ids in the
//! cells change here; the bytes and their metadata belong to `api::files` and the catalogue.
//!
//! `HoldsFile` answers whether a record of the branch holds a file id in a files column a view
//! shows (a download is served only then); `HeldFiles` lists every file id the branch still
//! refers to, in its records and its history, for the file collector (`catalog::collector`).

use std::collections::HashSet;

use actix::{Context, Handler, Message, ResponseFuture};

use super::reads::picked_columns;
use super::GridActor;
use crate::grid::error::{GridError, GridResult};
use crate::grid::ops::GridState;
use crate::grid::read::RecordOut;
use crate::grid::records::{plan_update, CellInput, RecordInput};
use crate::grid::schema::{ColumnDef, ColumnType, ViewDef};
use crate::grid::store::{CellRef, ColumnSlot};
use crate::grid::value::CellValue;
use crate::persist::wal::Durable;

/// The ids one record's files cell gains and loses.
#[derive(Debug, Clone)]
pub struct FilesChange {
    pub record_id: String,
    pub add: Vec<String>,
    pub remove: Vec<String>,
}

/// Changes the files cell of `column_id` in each record of `records`, as one write. `path`
/// finds the records when the grid identifies them by path and id (it never moves a record).
/// With `check_only`, everything is checked (view, column of type files, records, locks) and
/// nothing is written: a zip upload asks this before it extracts a file. Answers each changed
/// record with only that column.
#[derive(Debug, Message)]
#[rtype(result = "GridResult<Vec<RecordOut>>")]
pub struct ChangeFiles {
    pub view_id: String,
    pub path: Option<String>,
    pub column_id: String,
    pub records: Vec<FilesChange>,
    pub user: String,
    pub check_only: bool,
}

impl GridActor {
    /// The files column `column_id` of `view`: 404 when the view does not show it, 400
    /// columnIsNotFilesType when it holds something else.
    fn files_column(&self, view: &ViewDef, column_id: &str) -> GridResult<ColumnDef> {
        let column_ids = [column_id.to_owned()];
        let picked = picked_columns(&self.state.schema, view, Some(&column_ids))?;
        let column = picked[0];
        if column.column_type != ColumnType::Files {
            return Err(GridError::NotFilesColumn(column_id.to_owned()));
        }
        Ok(column.clone())
    }

    /// Each record's whole new list of ids, as an update input. 404 nonexistentRecordId names
    /// every record that does not exist.
    fn files_inputs(&self, msg: &ChangeFiles, column: &ColumnDef) -> GridResult<Vec<RecordInput>> {
        let slot = *self
            .state
            .slots
            .get(&column.id)
            .ok_or(GridError::Internal("a view column has no storage"))?;
        let path = self.by_path().then(|| msg.path.clone().unwrap_or_default());
        let mut missing = Vec::new();
        let mut inputs = Vec::with_capacity(msg.records.len());
        for change in &msg.records {
            let lookup = path.as_deref().unwrap_or_default();
            let Some(row) = self.state.store.find(lookup, &change.record_id) else {
                missing.push(change.record_id.clone());
                continue;
            };
            let mut ids = match self.state.store.value(row, slot) {
                CellValue::List(items) => items,
                _ => Vec::new(),
            };
            ids.retain(|id| !change.remove.contains(id));
            ids.extend(change.add.iter().cloned());
            inputs.push(RecordInput {
                id: Some(change.record_id.clone()),
                path: path.clone(),
                cells: vec![CellInput::new(
                    column.id.as_str(),
                    Some(serde_json::json!(ids)),
                    None,
                    None,
                )],
                mark_mt: None,
                if_match: None,
            });
        }
        match missing.is_empty() {
            true => Ok(inputs),
            false => Err(GridError::NonexistentRecords(missing)),
        }
    }

    fn change_files(&mut self, msg: ChangeFiles) -> GridResult<Option<(Durable, Vec<RecordOut>)>> {
        let view = self.view(&msg.view_id)?;
        let column = self.files_column(&view, &msg.column_id)?;
        let inputs = self.files_inputs(&msg, &column)?;
        let now = chrono::Utc::now().timestamp_millis();
        let op = plan_update(&self.state, &view, inputs, &msg.user, now)?;
        if msg.check_only {
            return Ok(None);
        }
        let durable = self.commit(vec![op])?;
        let lookup = if self.by_path() { msg.path.unwrap_or_default() } else { String::new() };
        let rows = msg.records.iter().filter_map(|c| self.state.store.find(&lookup, &c.record_id));
        Ok(Some((durable, self.state.read_rows(&[&column], rows))))
    }
}

impl Handler<ChangeFiles> for GridActor {
    type Result = ResponseFuture<GridResult<Vec<RecordOut>>>;

    fn handle(&mut self, msg: ChangeFiles, ctx: &mut Context<Self>) -> Self::Result {
        self.hold(ctx, move |act, ctx| {
            let written = act.change_files(msg).map(|changed| match changed {
                Some((durable, records)) => (Some(durable), records),
                None => (None, Vec::new()),
            });
            act.reply_when_durable(ctx, written)
        })
    }
}

/// Whether a live record holds `file_id` in a files column that `view_id` shows (404
/// viewIsNotFound for an unknown view). The actor only copies its state (copy-on-write,
/// cheap); the scan of those columns' cells runs on a blocking thread, without copying them.
#[derive(Debug, Message)]
#[rtype(result = "GridResult<bool>")]
pub struct HoldsFile {
    pub view_id: String,
    pub file_id: String,
}

/// Whether a live record of `state` holds `file_id` in one of the columns at `slots`.
fn holds_file(state: &GridState, slots: &[ColumnSlot], file_id: &str) -> bool {
    slots.iter().any(|&slot| {
        state.store.live_rows().any(|row| match state.store.value_ref(row, slot) {
            CellRef::List(mut ids) => ids.any(|id| id == file_id),
            _ => false,
        })
    })
}

impl Handler<HoldsFile> for GridActor {
    type Result = ResponseFuture<GridResult<bool>>;

    fn handle(&mut self, msg: HoldsFile, _: &mut Context<Self>) -> Self::Result {
        let view = match self.view(&msg.view_id) {
            Ok(view) => view,
            Err(err) => return Box::pin(async move { Err(err) }),
        };
        let slots: Vec<ColumnSlot> = self
            .state
            .schema
            .view_columns(&view)
            .into_iter()
            .filter(|(c, _)| c.column_type == ColumnType::Files)
            .filter_map(|(c, _)| self.state.slots.get(&c.id).copied())
            .collect();
        if slots.is_empty() {
            return Box::pin(async { Ok(false) });
        }
        let state = self.state.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || holds_file(&state, &slots, &msg.file_id))
                .await
                .map_err(|source| GridError::TaskStopped { what: "the file check", source })
        })
    }
}

/// Every file id the branch refers to: in the files columns of its live records, and in any
/// list value of its history (a history entry may be restored or exported later). The actor
/// only copies its state (copy-on-write, cheap); the scan runs on a blocking thread.
#[derive(Debug, Message)]
#[rtype(result = "GridResult<HashSet<String>>")]
pub struct HeldFiles;

/// The file ids `state` refers to (see `HeldFiles`).
fn held_files(state: &GridState) -> HashSet<String> {
    let mut held = HashSet::new();
    for column in state.schema.columns.iter().filter(|c| c.column_type == ColumnType::Files) {
        let Some(&slot) = state.slots.get(&column.id) else { continue };
        for row in state.store.live_rows() {
            if let CellRef::List(ids) = state.store.value_ref(row, slot) {
                held.extend(ids.map(str::to_owned));
            }
        }
    }
    for stored in state.history.all() {
        for cell in &stored.entry.cells {
            if let CellValue::List(ids) = &cell.value {
                held.extend(ids.iter().cloned());
            }
        }
    }
    held
}

impl Handler<HeldFiles> for GridActor {
    type Result = ResponseFuture<GridResult<HashSet<String>>>;

    fn handle(&mut self, _: HeldFiles, _: &mut Context<Self>) -> Self::Result {
        let state = self.state.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || held_files(&state))
                .await
                .map_err(|source| GridError::TaskStopped { what: "the file scan", source })
        })
    }
}
