//! A merge's preview (`POST /v1/branches/diffcheck`, decisions.md section 8): what merging the
//! source branch into the destination would do, per record, without doing it. It is
//! `plan_merge` run twice over copies of both branches, with `add`, `update` and `delete`, once
//! without and once with `override`: the records it adds, updates and deletes, and among the
//! updated cells the conflicts (cells both sides changed since their common point, which only
//! `override` would write). Each cell carries both sides' values and statuses, in the shape of
//! the hosted OpenAPI's `BranchDiffRecord`/`BranchDiffCell`.

use std::collections::HashSet;

use compact_str::CompactString;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::codec::{format_timestamp, render_value};
use super::merge::{plan_merge, MergeOptions, MergeScope};
use super::ops::{GridOp, GridState, MergeBase};
use super::schema::ColumnType;
use super::store::RowId;
use super::value::{DependencyStatus, SourceStatus};

/// The most records a preview lists; a larger difference lists the first ones (its task then
/// says how many it left out).
pub const MAX_DIFF_RECORDS: usize = 10_000;

/// What a merge would do to one record (`BranchDiffRecord`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffRecord {
    pub id: String,
    pub path: String,
    /// `added`, `updated` or `deleted`.
    pub status: String,
    pub cells: Vec<DiffCell>,
    pub last_modified_by: String,
    pub last_modified_time: String,
}

/// What a merge would do to one cell (`BranchDiffCell`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffCell {
    pub column_id: String,
    /// `ahead` (the merge writes the source's cell) or `conflicted` (both sides changed it:
    /// written only with `override`).
    pub status: String,
    pub source_value: Value,
    pub destination_value: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_dependency_status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destination_dependency_status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_source_status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destination_source_status: Option<String>,
}

/// The preview, its records in merge order, at most `MAX_DIFF_RECORDS`, and how many records
/// differ in all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diff {
    pub records: Vec<DiffRecord>,
    pub total: usize,
}

/// Both sides of a merge and its common point.
pub struct Sides<'a> {
    pub source_id: &'a str,
    pub source: &'a GridState,
    pub destination: &'a GridState,
    pub base: MergeBase,
}

/// What merging `sides.source` into `sides.destination` would change (blocking: reads both
/// branches). A cell is a conflict when the merge writes it only when told to override.
pub fn diff(sides: &Sides<'_>, columns: Option<Vec<String>>) -> Diff {
    let plan = |override_| {
        let scope = MergeScope {
            options: MergeOptions { add: true, update: true, delete: true, override_ },
            columns: columns.clone(),
            ..MergeScope::default()
        };
        plan_merge(sides.source_id, sides.source, sides.destination, sides.base, &scope, ("", 0)).0
    };
    let without_conflicts = updated_cells(&plan(false));
    let mut out = Diff { records: Vec::new(), total: 0 };
    let none = HashSet::new();
    for op in plan(true) {
        match op {
            GridOp::AddRecords { records, .. } => {
                for r in records {
                    let row = sides.source.store.find(&r.path, &r.id);
                    let cells = r.cells.iter().map(|c| c.column_id.as_str());
                    push(&mut out, sides, (&r.path, &r.id), "added", row, None, cells, &none);
                }
            }
            GridOp::UpdateRecords { records, .. } => {
                for r in records {
                    let source = sides.source.store.find(&r.path, &r.id);
                    let target = sides.destination.store.find(&r.path, &r.id);
                    let conflicts: HashSet<CompactString> = r
                        .cells
                        .iter()
                        .map(|c| (r.path.clone(), r.id.clone(), c.column_id.clone()))
                        .filter(|cell| !without_conflicts.contains(cell))
                        .map(|(_, _, column)| column)
                        .collect();
                    let cells = r.cells.iter().map(|c| c.column_id.as_str());
                    let key = (r.path.as_str(), r.id.as_str());
                    push(&mut out, sides, key, "updated", source, target, cells, &conflicts);
                }
            }
            GridOp::DeleteRecords { keys } => {
                for (path, id) in keys {
                    let target = sides.destination.store.find(&path, &id);
                    let cells = std::iter::empty();
                    push(&mut out, sides, (&path, &id), "deleted", None, target, cells, &none);
                }
            }
            _ => {}
        }
    }
    out
}

/// (path, id, column) of every cell the updates of `ops` write.
fn updated_cells(ops: &[GridOp]) -> HashSet<(String, String, CompactString)> {
    ops.iter()
        .filter_map(|op| match op {
            GridOp::UpdateRecords { records, .. } => Some(records),
            _ => None,
        })
        .flatten()
        .flat_map(|r| r.cells.iter().map(|c| (r.path.clone(), r.id.clone(), c.column_id.clone())))
        .collect()
}

/// Adds one record to the preview (counts it in `total` past the cap).
#[allow(clippy::too_many_arguments)]
fn push<'c>(
    out: &mut Diff,
    sides: &Sides<'_>,
    (path, id): (&str, &str),
    status: &str,
    source: Option<RowId>,
    target: Option<RowId>,
    columns: impl Iterator<Item = &'c str>,
    conflicts: &HashSet<CompactString>,
) {
    out.total += 1;
    if out.records.len() >= MAX_DIFF_RECORDS {
        return;
    }
    let cells = columns
        .map(|column| {
            let state = if conflicts.contains(column) { "conflicted" } else { "ahead" };
            let (source_value, source_statuses) = side(sides.source, source, column);
            let (destination_value, destination_statuses) = side(sides.destination, target, column);
            DiffCell {
                column_id: column.to_owned(),
                status: state.to_owned(),
                source_value,
                destination_value,
                source_dependency_status: source_statuses.map(|(d, _)| d.as_str().to_owned()),
                destination_dependency_status: destination_statuses
                    .map(|(d, _)| d.as_str().to_owned()),
                source_source_status: source_statuses.map(|(_, s)| s.as_str().to_owned()),
                destination_source_status: destination_statuses.map(|(_, s)| s.as_str().to_owned()),
            }
        })
        .collect();
    // The side whose record the merge reads: the source's, or the destination's for a delete.
    let (state, row) = match (source, target) {
        (Some(row), _) => (sides.source, Some(row)),
        (None, row) => (sides.destination, row),
    };
    let (user, time) = row.map_or((String::new(), 0), |row| {
        (state.store.modified_by(row).to_owned(), state.store.modified_time(row))
    });
    out.records.push(DiffRecord {
        id: id.to_owned(),
        path: path.to_owned(),
        status: status.to_owned(),
        cells,
        last_modified_by: user,
        last_modified_time: format_timestamp(time),
    });
}

/// One side's value of a cell (`null` when the record or column is not there) and, for a
/// language column, its statuses.
fn side(
    state: &GridState,
    row: Option<RowId>,
    column: &str,
) -> (Value, Option<(DependencyStatus, SourceStatus)>) {
    let Some(row) = row else { return (Value::Null, None) };
    let Some(&slot) = state.slots.get(column) else { return (Value::Null, None) };
    let column_type = state.schema.column(column).map_or(ColumnType::SingleLine, |c| c.column_type);
    let value = render_value(column_type, &state.store.value(row, slot));
    let statuses = state
        .store
        .is_localized(slot)
        .then(|| (state.store.dependency_status(row, slot), state.store.source_status(row, slot)));
    (value, statuses)
}
