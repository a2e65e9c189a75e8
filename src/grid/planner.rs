//! Checks a schema change request against a branch's schema and turns it into `GridOp`s.
//!
//! Pure: reads the schema, returns ops or the `SchemaError` the client gets. Applying is
//! `GridState::apply`'s job.

use serde::Deserialize;
use utoipa::ToSchema;

use super::columns::{build_column, update_column, ColumnRequest};
use super::ops::{apply_schema, GridOp};
use super::schema::{ColumnDef, ColumnType, Dependency, Schema, ViewColumn, ViewDef};
use super::schema_error::{SchemaError, SchemaResult};
use crate::ids;

/// Body of dependency create (both required) and update (both optional).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DependencyRequest {
    pub id: Option<String>,
    pub new_id: Option<String>,
    pub source_column_id: Option<String>,
    pub target_column_id: Option<String>,
}

/// A column to show in a new view.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct ViewColumnRequest {
    pub id: Option<String>,
    pub editable: Option<bool>,
}

/// A requested change to a branch's schema, made through a view.
#[derive(Debug, Clone)]
pub enum SchemaChange {
    CreateColumn(ColumnRequest),
    UpdateColumn {
        column_id: String,
        request: ColumnRequest,
    },
    DeleteColumn {
        column_id: String,
    },
    AddColumnToView {
        column_id: String,
    },
    RemoveColumnFromView {
        column_id: String,
    },
    CreateView {
        id: String,
        name: String,
        columns: Vec<ViewColumnRequest>,
    },
    DeleteView,
    /// The view's new name (1 to 255 characters, trimmed).
    RenameView {
        name: String,
    },
    CreateDependency(DependencyRequest),
    UpdateDependency {
        dependency_id: String,
        request: DependencyRequest,
    },
    DeleteDependency {
        dependency_id: String,
    },
    /// Several columns at once, all or none, each checked against the grid with the ones
    /// before it.
    CreateColumns(Vec<ColumnRequest>),
    /// Several dependencies at once, all or none (each must exist; a repeated id counts once).
    DeleteDependencies {
        ids: Vec<String>,
    },
}

/// The ops of an accepted change and the id of the thing it is about.
#[derive(Debug)]
pub struct Planned {
    pub ops: Vec<GridOp>,
    pub subject: String,
}

/// Plans `change`, made through view `view_id` (or on the branch when creating a view).
pub fn plan(schema: &Schema, view_id: &str, change: SchemaChange) -> SchemaResult<Planned> {
    if let SchemaChange::CreateView { id, name, columns } = change {
        return plan_create_view(schema, id, name, &columns);
    }
    let view = schema
        .view(view_id)
        .ok_or_else(|| SchemaError::ViewNotFound(SchemaError::missing("View", view_id)))?;
    match change {
        SchemaChange::CreateView { .. } => unreachable!("handled above"),
        SchemaChange::CreateColumn(request) => {
            let column = build_column(schema, &request)?;
            let subject = column.id.clone();
            let editable = request.editable.unwrap_or(true);
            let op = GridOp::CreateColumn { column, view_id: Some(view.id.clone()), editable };
            Ok(Planned { ops: vec![op], subject })
        }
        SchemaChange::CreateColumns(requests) => plan_create_columns(schema, view, &requests),
        SchemaChange::UpdateColumn { column_id, request } => {
            plan_update_column(schema, view, column_id, &request)
        }
        SchemaChange::DeleteColumn { column_id } => {
            column_in_view(schema, view, &column_id)?;
            check_not_followed(schema, &column_id, "deleted")?;
            Ok(Planned {
                ops: vec![GridOp::DeleteColumn { id: column_id.clone() }],
                subject: column_id,
            })
        }
        SchemaChange::AddColumnToView { column_id } => plan_add_to_view(schema, view, column_id),
        SchemaChange::RemoveColumnFromView { column_id } => {
            plan_remove_from_view(schema, view, column_id)
        }
        SchemaChange::DeleteView => {
            if view.is_default {
                return Err(SchemaError::invalid(
                    "The default access view of a grid cannot be deleted.",
                ));
            }
            Ok(Planned {
                ops: vec![GridOp::DeleteView { id: view.id.clone() }],
                subject: view.id.clone(),
            })
        }
        SchemaChange::RenameView { name } => {
            let name = name.trim();
            if name.is_empty() || name.chars().count() > 255 {
                return Err(SchemaError::invalid("A view's name has 1 to 255 characters."));
            }
            let op = GridOp::RenameView { id: view.id.clone(), name: name.to_owned() };
            Ok(Planned { ops: vec![op], subject: view.id.clone() })
        }
        SchemaChange::CreateDependency(request) => plan_create_dependency(schema, view, request),
        SchemaChange::UpdateDependency { dependency_id, request } => {
            plan_update_dependency(schema, view, dependency_id, request)
        }
        SchemaChange::DeleteDependency { dependency_id } => {
            find_dependency(schema, view, &dependency_id)?;
            let op = GridOp::DeleteDependency { id: dependency_id.clone() };
            Ok(Planned { ops: vec![op], subject: dependency_id })
        }
        SchemaChange::DeleteDependencies { ids } => plan_delete_dependencies(schema, view, ids),
    }
}

/// Replaces a column of the view (and, in a view other than the default, its editability).
fn plan_update_column(
    schema: &Schema,
    view: &ViewDef,
    column_id: String,
    request: &ColumnRequest,
) -> SchemaResult<Planned> {
    let (current, _) = column_in_view(schema, view, &column_id)?;
    let column = update_column(schema, current, request)?;
    check_type_change(schema, current, &column)?;
    let still_followed = column.column_type == ColumnType::Reference
        && column
            .reference
            .as_ref()
            .zip(current.reference.as_ref())
            .is_some_and(|(a, b)| a.same_target(b));
    if !still_followed {
        check_not_followed(schema, &column_id, "changed to point elsewhere")?;
    }
    let subject = column.id.clone();
    let mut ops = vec![GridOp::ReplaceColumn { old_id: column_id.clone(), column }];
    // In place: the column keeps its position in the view (logs of earlier versions removed
    // and re-added it, which moved it last; they replay as they ran).
    if let Some(editable) = request.editable.filter(|_| !view.is_default) {
        let vc = ViewColumn { id: subject.clone(), editable };
        ops.push(GridOp::AddViewColumn { view_id: view.id.clone(), column: vc });
    }
    Ok(Planned { ops, subject })
}

/// Takes a column out of a view other than the default (which shows every column).
fn plan_remove_from_view(
    schema: &Schema,
    view: &ViewDef,
    column_id: String,
) -> SchemaResult<Planned> {
    column_in_view(schema, view, &column_id)?;
    if view.is_default {
        return Err(SchemaError::invalid(
            "The default access view shows every column; delete the column instead.",
        ));
    }
    let op = GridOp::RemoveViewColumn { view_id: view.id.clone(), column_id: column_id.clone() };
    Ok(Planned { ops: vec![op], subject: column_id })
}

/// Deletes dependencies by id (each once; every one must exist and be shown by `view`).
fn plan_delete_dependencies(
    schema: &Schema,
    view: &ViewDef,
    mut ids: Vec<String>,
) -> SchemaResult<Planned> {
    let mut seen = std::collections::HashSet::new();
    ids.retain(|id| seen.insert(id.clone()));
    for id in &ids {
        find_dependency(schema, view, id)?;
    }
    let ops = ids.iter().map(|id| GridOp::DeleteDependency { id: id.clone() }).collect();
    Ok(Planned { ops, subject: ids.join(",") })
}

/// The columns of a bulk create, each built against the schema with the ones before it (so
/// ids stay unique and formulas may read earlier columns); the first refusal names its index.
fn plan_create_columns(
    schema: &Schema,
    view: &ViewDef,
    requests: &[ColumnRequest],
) -> SchemaResult<Planned> {
    let mut scratch = schema.clone();
    let mut ops = Vec::with_capacity(requests.len());
    let mut ids = Vec::with_capacity(requests.len());
    for (at, request) in requests.iter().enumerate() {
        let column =
            build_column(&scratch, request).map_err(|err| err.at(&format!("columns[{at}]")))?;
        ids.push(column.id.clone());
        let editable = request.editable.unwrap_or(true);
        let op = GridOp::CreateColumn { column, view_id: Some(view.id.clone()), editable };
        apply_schema(&mut scratch, &op);
        scratch.reindex();
        ops.push(op);
    }
    Ok(Planned { ops, subject: ids.join(",") })
}

/// The column with this id if the view shows it, else 404 columnNotFoundInView.
pub fn column_in_view<'a>(
    schema: &'a Schema,
    view: &'a ViewDef,
    column_id: &str,
) -> SchemaResult<(&'a ColumnDef, bool)> {
    schema.view_column(view, column_id).ok_or_else(|| {
        SchemaError::ColumnNotInView(format!(
            "Column \"{column_id}\" could not be found in view \"{}\".",
            view.id
        ))
    })
}

/// Refuses a change that takes reference column `id` from a lookup column following it.
fn check_not_followed(schema: &Schema, id: &str, how: &str) -> SchemaResult<()> {
    match schema.lookup_following(id) {
        Some(lookup) => Err(SchemaError::invalid(format!(
            "Column \"{id}\" cannot be {how}: lookup column \"{}\" follows it; delete the \
             lookup first.",
            lookup.id
        ))),
        None => Ok(()),
    }
}

fn check_type_change(schema: &Schema, before: &ColumnDef, after: &ColumnDef) -> SchemaResult<()> {
    let involved = schema
        .dependencies
        .iter()
        .any(|d| d.source_column_id == before.id || d.target_column_id == before.id);
    if involved && !after.is_language() {
        return Err(SchemaError::invalid(format!(
            "Column \"{}\" is part of a dependency and must stay a language column; delete the \
             dependency first.",
            before.id
        )));
    }
    Ok(())
}

fn plan_create_view(
    schema: &Schema,
    id: String,
    name: String,
    columns: &[ViewColumnRequest],
) -> SchemaResult<Planned> {
    let name = name.trim();
    if name.is_empty() {
        return Err(SchemaError::invalid("The view name is required."));
    }
    let mut shown: Vec<ViewColumn> = Vec::with_capacity(columns.len());
    for (i, c) in columns.iter().enumerate() {
        let column_id =
            c.id.as_deref()
                .ok_or_else(|| SchemaError::invalid(format!("columns[{i}].id is required.")))?;
        if schema.column(column_id).is_none() {
            return Err(SchemaError::invalid(format!(
                "columns[{i}]: column \"{column_id}\" does not exist in this grid."
            )));
        }
        if shown.iter().any(|s| s.id == column_id) {
            return Err(SchemaError::invalid(format!(
                "columns[{i}]: column \"{column_id}\" is listed twice."
            )));
        }
        shown.push(ViewColumn { id: column_id.to_owned(), editable: c.editable.unwrap_or(true) });
    }
    let view = ViewDef { id: id.clone(), name: name.to_owned(), is_default: false, columns: shown };
    Ok(Planned { ops: vec![GridOp::CreateView(view)], subject: id })
}

fn plan_add_to_view(schema: &Schema, view: &ViewDef, column_id: String) -> SchemaResult<Planned> {
    if schema.column(&column_id).is_none() {
        return Err(SchemaError::ColumnNotInView(format!(
            "Column \"{column_id}\" does not exist in this grid."
        )));
    }
    if view.is_default || view.columns.iter().any(|c| c.id == column_id) {
        return Ok(Planned { ops: Vec::new(), subject: column_id });
    }
    let op = GridOp::AddViewColumn {
        view_id: view.id.clone(),
        column: ViewColumn { id: column_id.clone(), editable: true },
    };
    Ok(Planned { ops: vec![op], subject: column_id })
}

/// The dependency `id` as `view` shows it: one linking a column the view hides is not found.
fn find_dependency<'a>(
    schema: &'a Schema,
    view: &'a ViewDef,
    id: &str,
) -> SchemaResult<&'a Dependency> {
    schema
        .view_dependencies(view)
        .find(|d| d.id == id)
        .ok_or_else(|| SchemaError::DependencyNotFound(SchemaError::missing("Dependency", id)))
}

/// The column `id` of a dependency written through `view`, which must show it.
fn language_column<'a>(
    schema: &'a Schema,
    view: &'a ViewDef,
    id: &str,
    role: &str,
) -> SchemaResult<&'a ColumnDef> {
    let (column, _) = schema.view_column(view, id).ok_or_else(|| {
        SchemaError::ColumnNotInView(format!(
            "The {role} column \"{id}\" could not be found in view \"{}\".",
            view.id
        ))
    })?;
    if !column.is_language() {
        return Err(SchemaError::invalid(format!(
            "The {role} column \"{id}\" is not a language column; dependencies link language columns."
        )));
    }
    Ok(column)
}

/// Checks source -> target against the dependencies other than `ignoring`.
fn check_dependency(
    schema: &Schema,
    view: &ViewDef,
    source: &str,
    target: &str,
    ignoring: Option<&str>,
) -> SchemaResult<()> {
    language_column(schema, view, source, "source")?;
    language_column(schema, view, target, "target")?;
    let mut others = schema.clone();
    others.dependencies.retain(|d| Some(d.id.as_str()) != ignoring);
    if others.dependency_of_target(target).is_some() {
        return Err(SchemaError::DependencyExists(format!(
            "Column \"{target}\" already depends on a source column."
        )));
    }
    if source == target || others.would_cycle(source, target) {
        return Err(SchemaError::Unprocessable(format!(
            "A dependency from \"{source}\" to \"{target}\" would make a cycle."
        )));
    }
    Ok(())
}

fn dependency_id(schema: &Schema, requested: Option<&String>) -> SchemaResult<String> {
    match requested {
        Some(id) if !ids::is_valid_column_id(id) => {
            Err(SchemaError::invalid(format!("Dependency id \"{id}\" is invalid.")))
        }
        Some(id) if schema.dependencies.iter().any(|d| &d.id == id) => {
            Err(SchemaError::invalid(format!("Dependency id \"{id}\" already exists.")))
        }
        Some(id) => Ok(id.clone()),
        None => Ok(ids::generate()),
    }
}

fn plan_create_dependency(
    schema: &Schema,
    view: &ViewDef,
    request: DependencyRequest,
) -> SchemaResult<Planned> {
    let source = request
        .source_column_id
        .as_deref()
        .ok_or_else(|| SchemaError::invalid("sourceColumnId is required."))?;
    let target = request
        .target_column_id
        .as_deref()
        .ok_or_else(|| SchemaError::invalid("targetColumnId is required."))?;
    check_dependency(schema, view, source, target, None)?;
    let id = dependency_id(schema, request.id.as_ref())?;
    let dependency = Dependency {
        id: id.clone(),
        source_column_id: source.to_owned(),
        target_column_id: target.to_owned(),
    };
    Ok(Planned { ops: vec![GridOp::CreateDependency(dependency)], subject: id })
}

fn plan_update_dependency(
    schema: &Schema,
    view: &ViewDef,
    id: String,
    request: DependencyRequest,
) -> SchemaResult<Planned> {
    let current = find_dependency(schema, view, &id)?;
    let source = request.source_column_id.as_deref().unwrap_or(&current.source_column_id);
    let target = request.target_column_id.as_deref().unwrap_or(&current.target_column_id);
    check_dependency(schema, view, source, target, Some(&id))?;
    let new_id = match request.new_id.as_ref().filter(|n| **n != id) {
        Some(n) => dependency_id(schema, Some(n))?,
        None => id.clone(),
    };
    let dependency = Dependency {
        id: new_id.clone(),
        source_column_id: source.to_owned(),
        target_column_id: target.to_owned(),
    };
    Ok(Planned { ops: vec![GridOp::ReplaceDependency { old_id: id, dependency }], subject: new_id })
}
