//! `GridOp`: every change to a branch as a deterministic operation (ids and times inside), and
//! `GridState::apply`, the one place that changes a branch's state.
//!
//! The grid actor validates a request, turns it into ops, applies them and logs them; recovery
//! applies the same ops again. Nothing here validates client input or does I/O.

use std::collections::HashMap;
use std::sync::Arc;

use compact_str::CompactString;
use serde::{Deserialize, Serialize};

use super::formula::{rename_column, FormulaPlan};
use super::history::History;
use super::schema::{ColumnDef, Dependency, Schema, ViewColumn, ViewDef};
use super::store::{ColumnSlot, ColumnStore, RecordIdentity};
use super::value::{CellValue, DependencyStatus, SourceStatus};

/// One cell of a record write, as validated: `value: None` leaves the value as it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellWrite {
    /// Held inline up to 24 bytes (no allocation for the usual column id): a bulk add carries
    /// twelve thousand.
    pub column_id: CompactString,
    pub value: Option<CellValue>,
    pub dependency_status: Option<DependencyStatus>,
    pub source_status: Option<SourceStatus>,
}

/// One record of an add or update. On update, `id`/`path` name the record and `new_id` /
/// `new_path` rename or move it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordWrite {
    pub id: String,
    pub path: String,
    pub new_id: Option<String>,
    pub new_path: Option<String>,
    pub cells: Vec<CellWrite>,
    pub mark_mt: bool,
}

/// One change to a branch's schema or records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum GridOp {
    /// A new column, added to the grid and, when `view_id` names a non-default view, to it.
    CreateColumn {
        column: ColumnDef,
        view_id: Option<String>,
        editable: bool,
    },
    /// A column's new definition; `old_id` differs from `column.id` on a rename.
    ReplaceColumn {
        old_id: String,
        column: ColumnDef,
    },
    DeleteColumn {
        id: String,
    },
    AddViewColumn {
        view_id: String,
        column: ViewColumn,
    },
    RemoveViewColumn {
        view_id: String,
        column_id: String,
    },
    CreateView(ViewDef),
    DeleteView {
        id: String,
    },
    CreateDependency(Dependency),
    ReplaceDependency {
        old_id: String,
        dependency: Dependency,
    },
    DeleteDependency {
        id: String,
    },
    AddRecords {
        time_ms: i64,
        user: String,
        records: Vec<RecordWrite>,
    },
    UpdateRecords {
        time_ms: i64,
        user: String,
        records: Vec<RecordWrite>,
    },
    /// Records named by (path, id); the path is ignored in grids with unique ids.
    DeleteRecords {
        keys: Vec<(String, String)>,
    },
    /// The end of a merge from `source_branch_id` read at its clock `source_clock`: the common
    /// point of the next merge from that branch is (`source_clock`, this branch's clock now).
    MergeMark {
        source_branch_id: String,
        source_clock: u32,
    },
    /// The branch's kept folders and their order (`Schema::paths`), replaced whole.
    SetPaths {
        paths: Vec<String>,
    },
    /// A view's new name (gridd's `PATCH /v1/views/<id>`).
    RenameView {
        id: String,
        name: String,
    },
}

impl GridOp {
    /// Records the op writes (added, updated or deleted); 1 for any other op. The snapshot
    /// policy counts these.
    pub fn records_written(&self) -> u64 {
        match self {
            GridOp::AddRecords { records, .. } | GridOp::UpdateRecords { records, .. } => {
                records.len() as u64
            }
            GridOp::DeleteRecords { keys } => keys.len() as u64,
            _ => 1,
        }
    }
}

/// The last common point of this branch and a branch merged into it: the clock of each side
/// when they last agreed. A cell changed since then on a side has a version above that side's
/// clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergeBase {
    pub source: u32,
    pub destination: u32,
}

/// Everything one branch holds.
#[derive(Clone)]
pub struct GridState {
    pub schema: Schema,
    pub store: ColumnStore,
    /// Where each column's cells live in the store.
    pub slots: foldhash::HashMap<String, ColumnSlot>,
    pub history: History,
    /// Per branch merged into this one: the common point after the last merge.
    pub merge_bases: HashMap<String, MergeBase>,
    /// The formula columns, compiled; rebuilt after every schema op.
    pub(crate) formulas: Arc<FormulaPlan>,
    /// Dependency targets whose statuses must be recomputed once the schema op is applied.
    pending_recompute: Vec<String>,
}

impl GridState {
    /// A branch with nothing in it, not even a view.
    pub fn empty(identity: RecordIdentity) -> GridState {
        GridState {
            schema: Schema::default(),
            store: ColumnStore::new(identity),
            slots: foldhash::HashMap::default(),
            history: History::default(),
            merge_bases: HashMap::new(),
            formulas: Arc::default(),
            pending_recompute: Vec::new(),
        }
    }

    /// A new branch with one default access view and the given columns.
    pub fn new(
        default_view_id: &str,
        columns: Vec<ColumnDef>,
        identity: RecordIdentity,
    ) -> GridState {
        let mut state = GridState::empty(identity);
        state.apply(&GridOp::CreateView(ViewDef {
            id: default_view_id.to_owned(),
            name: "Default view".to_owned(),
            is_default: true,
            columns: Vec::new(),
        }));
        for column in columns {
            state.apply(&GridOp::CreateColumn { column, view_id: None, editable: true });
        }
        state
    }

    /// Applies one op. Ops are validated before they exist, so applying never fails; an op that
    /// names something absent changes nothing.
    pub fn apply(&mut self, op: &GridOp) {
        self.store.tick();
        self.keep_pending_creations(op);
        match op {
            GridOp::AddRecords { time_ms, user, records } => {
                self.add_records(*time_ms, user, records);
                return;
            }
            GridOp::UpdateRecords { time_ms, user, records } => {
                let dependencies = self.dependency_pairs();
                for record in records {
                    self.update_record(*time_ms, user, record, &dependencies);
                }
                return;
            }
            GridOp::DeleteRecords { keys } => {
                self.delete_records(keys);
                return;
            }
            GridOp::MergeMark { source_branch_id, source_clock } => {
                let base = MergeBase { source: *source_clock, destination: self.store.clock() };
                self.merge_bases.insert(source_branch_id.clone(), base);
                return;
            }
            GridOp::CreateColumn { column, .. } => self.add_column_storage(column),
            GridOp::ReplaceColumn { old_id, column } => self.replace_column_storage(old_id, column),
            GridOp::DeleteColumn { id } => self.drop_column_storage(id),
            GridOp::CreateDependency(dep) => {
                self.pending_recompute.push(dep.target_column_id.clone())
            }
            GridOp::ReplaceDependency { old_id, dependency } => {
                self.clear_dependency_of(old_id);
                self.pending_recompute.push(dependency.target_column_id.clone());
            }
            GridOp::DeleteDependency { id } => self.clear_dependency_of(id),
            GridOp::AddViewColumn { .. }
            | GridOp::RemoveViewColumn { .. }
            | GridOp::CreateView(_)
            | GridOp::DeleteView { .. }
            | GridOp::RenameView { .. } => {}
            GridOp::SetPaths { paths } => {
                self.schema.paths.clone_from(paths);
                return;
            }
        }
        apply_schema(&mut self.schema, op);
        self.schema.reindex();
        for target in std::mem::take(&mut self.pending_recompute) {
            self.recompute_dependency_statuses(&target);
        }
        self.refresh_formulas();
    }
}

impl GridState {
    /// Gives the views new ids (`renamed`: old id -> new id), for a branch that starts as a
    /// copy of another: each branch has its own views. Views not named keep their ids.
    pub fn rename_views(&mut self, renamed: &[(String, String)]) {
        for view in &mut self.schema.views {
            if let Some((_, new)) = renamed.iter().find(|(old, _)| *old == view.id) {
                view.id = new.clone();
            }
        }
        self.schema.reindex();
    }
}

/// The schema part of an op.
pub(super) fn apply_schema(schema: &mut Schema, op: &GridOp) {
    match op {
        GridOp::AddRecords { .. }
        | GridOp::UpdateRecords { .. }
        | GridOp::DeleteRecords { .. }
        | GridOp::MergeMark { .. } => {}
        GridOp::SetPaths { paths } => schema.paths.clone_from(paths),
        GridOp::CreateColumn { column, view_id, editable } => {
            schema.columns.push(column.clone());
            if let Some(view) = view_id.as_ref().and_then(|v| view_mut(schema, v)) {
                if !view.is_default {
                    view.columns.push(ViewColumn { id: column.id.clone(), editable: *editable });
                }
            }
        }
        GridOp::ReplaceColumn { old_id, column } => replace_column(schema, old_id, column),
        GridOp::DeleteColumn { id } => {
            schema.columns.retain(|c| &c.id != id);
            schema.dependencies.retain(|d| &d.source_column_id != id && &d.target_column_id != id);
            for view in &mut schema.views {
                view.columns.retain(|c| &c.id != id);
            }
        }
        // A column the view shows already keeps its place and takes the new editable flag (a
        // column's `editable` changed through the view); any other is shown last.
        GridOp::AddViewColumn { view_id, column } => {
            if let Some(view) = view_mut(schema, view_id) {
                match view.columns.iter_mut().find(|c| c.id == column.id) {
                    Some(shown) => shown.editable = column.editable,
                    None => view.columns.push(column.clone()),
                }
            }
        }
        GridOp::RemoveViewColumn { view_id, column_id } => {
            if let Some(view) = view_mut(schema, view_id) {
                view.columns.retain(|c| &c.id != column_id);
            }
        }
        GridOp::CreateView(view) => schema.views.push(view.clone()),
        GridOp::DeleteView { id } => schema.views.retain(|v| &v.id != id),
        GridOp::RenameView { id, name } => {
            if let Some(view) = view_mut(schema, id) {
                view.name.clone_from(name);
            }
        }
        GridOp::CreateDependency(dep) => schema.dependencies.push(dep.clone()),
        GridOp::ReplaceDependency { old_id, dependency } => {
            if let Some(d) = schema.dependencies.iter_mut().find(|d| &d.id == old_id) {
                *d = dependency.clone();
            }
        }
        GridOp::DeleteDependency { id } => schema.dependencies.retain(|d| &d.id != id),
    }
}

fn view_mut<'a>(schema: &'a mut Schema, id: &str) -> Option<&'a mut ViewDef> {
    schema.views.iter_mut().find(|v| v.id == id)
}

fn replace_column(schema: &mut Schema, old_id: &str, column: &ColumnDef) {
    let Some(slot) = schema.columns.iter_mut().find(|c| c.id == old_id) else {
        return;
    };
    *slot = column.clone();
    if old_id == column.id {
        return;
    }
    for formula in schema.columns.iter_mut().filter_map(|c| c.formula.as_mut()) {
        if let Some(text) = rename_column(&formula.formula_text, old_id, &column.id) {
            formula.formula_text = text;
        }
    }
    for dep in &mut schema.dependencies {
        if dep.source_column_id == old_id {
            dep.source_column_id = column.id.clone();
        }
        if dep.target_column_id == old_id {
            dep.target_column_id = column.id.clone();
        }
    }
    for view in &mut schema.views {
        for vc in &mut view.columns {
            if vc.id == old_id {
                vc.id = column.id.clone();
            }
        }
    }
}
