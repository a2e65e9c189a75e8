//! What other branches ask of a branch its reference columns point at: which of some record
//! ids it lacks (a write checks its references), and a column's values for some record ids (a
//! read shows referenced values). One message per referenced branch and request, never one per
//! cell.

use actix::{Context, Handler, Message};

use super::actor::GridActor;
use super::ops::GridState;
use super::records::RecordInput;
use super::schema::{ColumnType, ReferenceSetting, Schema};
use super::value::CellValue;

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
pub fn writes_references(columns: &ReferenceColumns, inputs: &[RecordInput]) -> bool {
    inputs.iter().flat_map(|r| &r.cells).any(|cell| {
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
