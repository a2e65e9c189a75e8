//! Reading records out of a branch: owned copies of a page of rows with the requested columns,
//! which handlers render to JSON on their own threads.

use std::sync::Arc;

use super::formula::typed_value;
use super::ops::GridState;
use super::read_json::RenderedRecords;
use super::references::Referenced;
use super::schema::{ColumnDef, ColumnType, ReferenceSetting};
use super::store::RowId;
use super::value::{CellValue, DependencyStatus, SourceStatus};

/// One cell of a record read.
#[derive(Debug, Clone, PartialEq)]
pub struct CellOut {
    /// Shared by the cells of one column in a read (no copy per cell).
    pub column_id: Arc<str>,
    pub column_type: ColumnType,
    pub value: CellValue,
    /// Present for language columns.
    pub statuses: Option<(DependencyStatus, SourceStatus)>,
    pub mt: bool,
    /// For a reference cell: what the column points at (shared by the column's cells).
    pub reference: Option<Arc<ReferenceSetting>>,
    /// For a reference cell: the referenced column's values, filled in by the caller from the
    /// referenced branch (`api::references`).
    pub referenced: Option<Referenced>,
}

/// One record read.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordOut {
    pub id: String,
    pub path: String,
    pub time_ms: i64,
    pub user: String,
    pub cells: Vec<CellOut>,
}

/// A page of records and how many records match in all.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordPage {
    /// The records, unless `rendered` holds them.
    pub records: Vec<RecordOut>,
    /// The records as JSON, when the read asked for that and the columns allow it.
    pub rendered: Option<RenderedRecords>,
    /// The ids of the page's first and last records.
    pub ends: Option<(String, String)>,
    pub total: usize,
    /// A cursor page: whether more matching records lie beyond it in its direction.
    pub more: bool,
}

impl GridState {
    /// Copies the given rows with the given columns.
    pub fn read_rows(
        &self,
        columns: &[&ColumnDef],
        rows: impl Iterator<Item = RowId>,
    ) -> Vec<RecordOut> {
        // A lookup's cells are read from the reference column it follows: its ids, whose
        // records the caller reads the lookup's column of (`api::references`).
        let slots: Vec<_> = columns
            .iter()
            .map(|&c| match c.column_type {
                ColumnType::Lookup => self.schema.lookup_followed(c),
                _ => Some(c),
            })
            .map(|c| self.slots.get(&c?.id).copied())
            .collect();
        let formulas: Vec<_> = columns.iter().map(|c| self.formulas.get(&c.id)).collect();
        let references: Vec<Option<Arc<ReferenceSetting>>> =
            columns.iter().map(|c| c.reference.clone().map(Arc::new)).collect();
        let ids: Vec<Arc<str>> = columns.iter().map(|c| Arc::from(c.id.as_str())).collect();
        rows.map(|row| RecordOut {
            id: self.store.id(row).to_owned(),
            path: self.store.path(row).to_owned(),
            time_ms: self.store.modified_time(row),
            user: self.store.modified_by(row).to_owned(),
            cells: columns
                .iter()
                .zip(&slots)
                .zip(&ids)
                .zip(&formulas)
                .zip(&references)
                .map(|((((column, slot), id), formula), reference)| match slot {
                    Some(slot) => CellOut {
                        column_id: Arc::clone(id),
                        column_type: column.column_type,
                        value: match formula {
                            Some(formula) => typed_value(&self.store.value(row, *slot), formula),
                            None => self.store.value(row, *slot),
                        },
                        statuses: column.is_language().then(|| {
                            (
                                self.store.dependency_status(row, *slot),
                                self.store.source_status(row, *slot),
                            )
                        }),
                        mt: self.store.is_mt(row, *slot),
                        reference: reference.clone(),
                        referenced: None,
                    },
                    None => CellOut {
                        column_id: Arc::clone(id),
                        column_type: column.column_type,
                        value: CellValue::Empty,
                        statuses: None,
                        mt: false,
                        reference: None,
                        referenced: None,
                    },
                })
                .collect(),
        })
        .collect()
    }
}
