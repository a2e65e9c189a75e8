//! What other branches ask of a branch its reference columns point at: which of some record
//! ids it lacks (a write checks its references), and a column's values for some record ids (a
//! read shows referenced values). One message per referenced branch and request, never one per
//! cell.
//!
//! A write's check (`check_written`) runs inside the writing branch's actor, between taking
//! the write and committing it, while the branch holds its other writes back: nothing of the
//! branch changes between the check and the commit, and no caller can skip it. Which branch a
//! reference points at, and whether the writer may read it, is the caller's to say
//! (`ReferenceLookup`): the grid knows neither keys nor the catalogue.

use std::collections::HashMap;

use actix::{Context, Handler, Message};
use futures_util::future::BoxFuture;

use super::actor::GridActor;
use super::error::GridResult;
use super::ops::GridState;
use super::records::{RecordInput, ValueIn};
use super::render::ReferenceTargets;
use super::schema::{ColumnType, ReferenceSetting, Schema};
use super::value::CellValue;
use super::write_error::{At, Problems};
use crate::error::ErrorCode;

/// The values a reference cell shows: the referenced column's type and one value per id.
#[derive(Debug, Clone, PartialEq)]
pub struct Referenced {
    pub column_type: ColumnType,
    pub values: Vec<CellValue>,
}

impl GridState {
    /// The record a reference id names (in a grid identified by path and id: at the root).
    fn referenced_row(&self, id: &str) -> Option<super::store::RowId> {
        self.store.find("", id)
    }

    /// The ids among `ids` that name no record here.
    pub fn missing_ids<'a>(&self, ids: &'a [String]) -> Vec<&'a String> {
        ids.iter().filter(|id| self.referenced_row(id).is_none()).collect()
    }

    /// Column `column_id`'s value for each id (empty for an id with no record); `None` when
    /// the column is gone.
    pub fn referenced_values(&self, column_id: &str, ids: &[String]) -> Option<Referenced> {
        let column = self.schema.column(column_id)?;
        let slot = *self.slots.get(column_id)?;
        let formula = self.formulas.get(column_id);
        let values = ids
            .iter()
            .map(|id| match self.referenced_row(id) {
                None => CellValue::Empty,
                Some(row) => {
                    let stored = self.store.value(row, slot);
                    match formula {
                        Some(f) => super::formula::typed_value(&stored, f),
                        None => stored,
                    }
                }
            })
            .collect();
        Some(Referenced { column_type: column.column_type, values })
    }
}

/// The reference columns of view `view_id`: (column id, what it points at).
pub type ReferenceColumns = Vec<(String, ReferenceSetting)>;

pub fn reference_columns(schema: &Schema, view_id: &str) -> ReferenceColumns {
    let Some(view) = schema.view(view_id) else { return Vec::new() };
    schema
        .view_columns(view)
        .into_iter()
        .filter(|(c, _)| c.column_type == ColumnType::Reference)
        .filter_map(|(c, _)| Some((c.id.clone(), c.reference.clone()?)))
        .collect()
}

/// Whether `inputs` put a value in one of the reference columns `columns`.
pub fn writes_references<'a>(
    columns: &ReferenceColumns,
    inputs: impl IntoIterator<Item = &'a RecordInput>,
) -> bool {
    inputs.into_iter().flat_map(|r| &r.cells).any(|cell| {
        let (Some(column), Some(value)) = (cell.column_id.as_deref(), &cell.value) else {
            return false;
        };
        !value.is_null() && columns.iter().any(|(id, _)| id == column)
    })
}

/// Which of `ids` the branch lacks.
#[derive(Debug, Message)]
#[rtype(result = "Vec<String>")]
pub struct FindMissing {
    pub ids: Vec<String>,
}

impl Handler<FindMissing> for GridActor {
    type Result = Vec<String>;

    fn handle(&mut self, msg: FindMissing, _: &mut Context<Self>) -> Vec<String> {
        self.state.missing_ids(&msg.ids).into_iter().cloned().collect()
    }
}

/// Values of several columns for several ids: one request per reference column of a page.
#[derive(Debug, Message)]
#[rtype(result = "Vec<Option<Referenced>>")]
pub struct ReadReferenced {
    /// (column id, record ids) per request.
    pub requests: Vec<(String, Vec<String>)>,
}

impl Handler<ReadReferenced> for GridActor {
    type Result = Vec<Option<Referenced>>;

    fn handle(&mut self, msg: ReadReferenced, _: &mut Context<Self>) -> Self::Result {
        msg.requests.iter().map(|(column, ids)| self.state.referenced_values(column, ids)).collect()
    }
}

/// Where a write's referenced records are looked up, for the key that writes.
pub trait ReferenceLookup: Send {
    /// Which of `ids` name no record of the branch `setting` points at: all of them when there
    /// is no such branch (or it is another company's); `GridError::ReferenceUnreadable` (403)
    /// when the writer may not read it. The branch may be served here or by another node.
    fn find_missing(
        &self,
        setting: &ReferenceSetting,
        ids: Vec<String>,
    ) -> BoxFuture<'static, GridResult<Vec<String>>>;
}

/// The record ids a written reference value names (other shapes are left to the value checks).
fn written_ids(value: &ValueIn) -> Vec<String> {
    match value {
        ValueIn::String(id) if !id.is_empty() => vec![id.clone()],
        ValueIn::Array(items) => {
            items.iter().filter_map(|v| v.as_str()).map(str::to_owned).collect()
        }
        _ => Vec::new(),
    }
}

/// A record id a write puts in a reference cell, where (record `records[0]`, cell 1) and in
/// which column.
struct WrittenId<'a> {
    id: String,
    record: &'a str,
    cell: usize,
    column: &'a str,
}

/// Refuses (a `WriteError`, 404 referenceRecordNotFound) a write whose reference cells name a
/// record the referenced branch does not have, and (403) one that writes into a column pointing
/// at a grid the writer may not read. `columns` are the view's reference columns (`reference_columns`);
/// `inputs` the records with where each is in the request (`records[0]`, `row 3`). Asks each
/// referenced branch once.
pub async fn check_written(
    lookup: &dyn ReferenceLookup,
    columns: &ReferenceColumns,
    inputs: &[(String, &RecordInput)],
) -> GridResult<()> {
    // Per referenced branch: what it is asked, and every id written to it.
    let mut asked: HashMap<&str, (&ReferenceSetting, Vec<WrittenId>)> = HashMap::new();
    for (at, record) in inputs {
        for (j, cell) in record.cells.iter().enumerate() {
            let (Some(column), Some(value)) = (cell.column_id.as_deref(), &cell.value) else {
                continue;
            };
            let Some((column, setting)) = columns.iter().find(|(id, _)| id == column) else {
                continue;
            };
            let entry = asked
                .entry(ReferenceTargets::branch_of(setting))
                .or_insert_with(|| (setting, Vec::new()));
            for id in written_ids(value) {
                entry.1.push(WrittenId { id, record: at, cell: j, column });
            }
        }
    }
    for (setting, written) in asked.into_values() {
        if written.is_empty() {
            continue;
        }
        let mut unique: Vec<String> = written.iter().map(|w| w.id.clone()).collect();
        unique.sort();
        unique.dedup();
        let missing = lookup.find_missing(setting, unique).await?;
        if let Some(w) = written.iter().find(|w| missing.contains(&w.id)) {
            let mut problems = Problems::default();
            problems.add(
                ErrorCode::ReferenceRecordNotFound,
                At::cell(w.record, w.cell),
                format!(
                    "record \"{}\" does not exist in grid \"{}\" referenced by column \"{}\".",
                    w.id, setting.grid_id, w.column
                ),
            );
            return Ok(problems.into_result()?);
        }
    }
    Ok(())
}
