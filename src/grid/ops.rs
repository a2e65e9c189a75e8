//! `GridOp`: every change to a branch as a deterministic operation (ids and times inside), and
//! `GridState::apply`, the one place that changes a branch's state.
//!
//! The grid actor validates a request, turns it into ops, applies them and logs them; recovery
//! applies the same ops again. Nothing here validates client input or does I/O.

use serde::{Deserialize, Serialize};

use super::schema::{ColumnDef, Dependency, Schema, ViewColumn, ViewDef};

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
}

/// Everything one branch holds.
#[derive(Debug, Clone, Default)]
pub struct GridState {
    pub schema: Schema,
}

impl GridState {
    /// A new branch with one default access view and the given columns.
    pub fn new(default_view_id: &str, columns: Vec<ColumnDef>) -> GridState {
        let mut state = GridState::default();
        state.apply(&GridOp::CreateView(ViewDef {
            id: default_view_id.to_owned(),
            name: "Default view".to_owned(),
            is_default: true,
            columns: Vec::new(),
        }));
        for column in columns {
            state.apply(&GridOp::CreateColumn {
                column,
                view_id: None,
                editable: true,
            });
        }
        state
    }

    /// Applies one op. Ops are validated before they exist, so applying never fails; an op that
    /// names something absent changes nothing.
    pub fn apply(&mut self, op: &GridOp) {
        let schema = &mut self.schema;
        match op {
            GridOp::CreateColumn {
                column,
                view_id,
                editable,
            } => {
                schema.columns.push(column.clone());
                if let Some(view) = view_id.as_ref().and_then(|v| view_mut(schema, v)) {
                    if !view.is_default {
                        view.columns.push(ViewColumn {
                            id: column.id.clone(),
                            editable: *editable,
                        });
                    }
                }
            }
            GridOp::ReplaceColumn { old_id, column } => replace_column(schema, old_id, column),
            GridOp::DeleteColumn { id } => {
                schema.columns.retain(|c| &c.id != id);
                schema
                    .dependencies
                    .retain(|d| &d.source_column_id != id && &d.target_column_id != id);
                for view in &mut schema.views {
                    view.columns.retain(|c| &c.id != id);
                }
            }
            GridOp::AddViewColumn { view_id, column } => {
                if let Some(view) = view_mut(schema, view_id) {
                    if !view.columns.iter().any(|c| c.id == column.id) {
                        view.columns.push(column.clone());
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
            GridOp::CreateDependency(dep) => schema.dependencies.push(dep.clone()),
            GridOp::ReplaceDependency { old_id, dependency } => {
                if let Some(d) = schema.dependencies.iter_mut().find(|d| &d.id == old_id) {
                    *d = dependency.clone();
                }
            }
            GridOp::DeleteDependency { id } => schema.dependencies.retain(|d| &d.id != id),
        }
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
