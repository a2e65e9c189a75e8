//! A record's history page and a view's history export, read from the branch's history.

use std::collections::HashMap;

use actix::{Context, Handler, Message};

use super::reads::picked_columns;
use super::GridActor;
use crate::grid::error::{GridError, GridResult};
use crate::grid::history::{EntryRef, ExportFilter, ExportRow, History, HistoryEntry, TooManyRows};
use crate::grid::query::{bind_filters, Filter, RawFilter, Target, Val};
use crate::grid::schema::distinct_column_ids;
use crate::grid::store::ColumnSlot;

/// A page of one record's history, newest first, and how many entries it has.
#[derive(Debug, Message)]
#[rtype(result = "GridResult<(Vec<HistoryEntry>, usize)>")]
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
    type Result = GridResult<(Vec<HistoryEntry>, usize)>;

    fn handle(&mut self, msg: ReadHistory, _: &mut Context<Self>) -> Self::Result {
        let view = self.view(&msg.view_id)?;
        let path = msg.path.unwrap_or_default();
        let Some(row) = self.state.store.find(&path, &msg.record_id) else {
            return Err(GridError::nonexistent(&msg.record_id));
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
        let (mut entries, total) = match self.state.pending_creation(row) {
            // A record unchanged since its add: its one entry is not written yet.
            Some(created) => match keep(&created) {
                true => (vec![created].into_iter().skip(msg.offset).take(msg.limit).collect(), 1),
                false => (Vec::new(), 0),
            },
            None => self.state.history.page_where(head, page, msg.oldest_first, keep),
        };
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
#[rtype(result = "GridResult<HistoryExport>")]
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
    /// The rows to export, at most `max_rows` (reads the whole history: call it on a blocking
    /// thread).
    pub fn rows(&self, max_rows: usize) -> Result<Vec<ExportRow>, TooManyRows> {
        self.history.export_rows(
            &self.heads,
            &ExportFilter {
                from_ms: self.from_ms,
                to_ms: self.to_ms,
                columns: &self.columns,
                users: self.users.as_deref(),
                max_rows,
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
    type Result = GridResult<HistoryExport>;

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
                    return Err(GridError::ColumnNotExported {
                        column_id: unknown.clone(),
                        view_id: msg.view_id,
                    });
                }
                asked
            }
            None => shown,
        };
        // The export reads the log alone: records unchanged since their add get their
        // creation entries written first.
        self.state.settle_creations();
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
