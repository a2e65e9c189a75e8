//! What limits and steers a merge besides its options (decisions.md section 8): the `query`
//! that picks the source records merged, and the per-cell choices of `mergeRecordConflicts`
//! (with `useLastMergeResolve`, the last merge's between the same branches as well: kept in the
//! catalogue, `catalog::model::MergeResolve`).
//!
//! A choice names a record (its id, and its path in a path+id grid when `pathTag` is given)
//! and a column, and decides which side's cell the merge keeps when the source changed that
//! cell since the common point: it replaces the rule of `override` for that cell only.
//! The OpenAPI's option names map to four choices: `child`, `source` and `override` take the
//! source's cell; `parent`, `destination`, `reserve` and `ignore` keep the destination's;
//! `overrideUpToDate` / `overrideOutOfDate` take the source's value with that dependency
//! status (language columns; other columns just take the source's value).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::ops::GridState;
use super::query::{bind_filters, Filter, QueryResult, RawFilter};
use super::schema::ViewDef;
use super::store::RowId;

/// The most cell choices one merge takes; more given in a request is a 400.
pub const MAX_CELL_CHOICES: usize = 10_000;
/// The most records `mergeRecordConflicts` may name (the OpenAPI's `maxItems`).
pub const MAX_CONFLICT_RECORDS: usize = 2_000;

/// Which side's cell a merge keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Choice {
    Source,
    Destination,
    SourceUpToDate,
    SourceOutOfDate,
}

impl Choice {
    /// The choice an OpenAPI `MergeCellConflict.option` names, if any.
    pub fn parse(name: &str) -> Option<Choice> {
        match name {
            "child" | "source" | "override" => Some(Choice::Source),
            "parent" | "destination" | "reserve" | "ignore" => Some(Choice::Destination),
            "overrideUpToDate" => Some(Choice::SourceUpToDate),
            "overrideOutOfDate" => Some(Choice::SourceOutOfDate),
            _ => None,
        }
    }
}

/// One cell's choice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CellChoice {
    pub record_id: String,
    /// The record's path (`pathTag`): the choice then applies only to the record at that path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    pub column_id: String,
    pub choice: Choice,
}

/// A choice and the record path it is limited to (`None`: any path).
type PathChoice = (Option<String>, Choice);

/// The choices of one merge, indexed by record id and column.
#[derive(Debug, Default)]
pub struct Choices {
    by_cell: HashMap<(String, String), Vec<PathChoice>>,
}

impl Choices {
    pub fn new(list: &[CellChoice]) -> Choices {
        let mut by_cell: HashMap<_, Vec<_>> = HashMap::new();
        for c in list {
            let key = (c.record_id.clone(), c.column_id.clone());
            by_cell.entry(key).or_default().push((c.path.clone(), c.choice));
        }
        Choices { by_cell }
    }

    pub fn is_empty(&self) -> bool {
        self.by_cell.is_empty()
    }

    /// The choice for a cell: one naming the record's path wins over one naming no path; the
    /// first given wins among equals.
    pub fn get(&self, id: &str, path: &str, column: &str) -> Option<Choice> {
        let list = self.by_cell.get(&(id.to_owned(), column.to_owned()))?;
        let exact = list.iter().find(|(p, _)| p.as_deref() == Some(path));
        exact.or_else(|| list.iter().find(|(p, _)| p.is_none())).map(|(_, c)| *c)
    }
}

/// A view showing every column of a branch, to bind a merge's query to.
fn every_column() -> ViewDef {
    ViewDef { id: "merge".to_owned(), name: "merge".to_owned(), is_default: true, columns: vec![] }
}

/// Binds a merge's query to a branch's columns (any column of the branch, and the predefined
/// ones): the listing's errors (400 `filterColumnNotFound`, `invalidFilterOperator` ...).
pub fn bind_query(state: &GridState, query: &[RawFilter]) -> QueryResult<Vec<Filter>> {
    bind_filters(state, &every_column(), query)
}

/// A query bound to one side of a merge: `None` when there is no query (every record
/// matches); a query that no longer binds (a column deleted since the request was checked)
/// matches nothing.
pub struct SideQuery(Option<QueryResult<Vec<Filter>>>);

impl SideQuery {
    pub fn new(state: &GridState, query: &[RawFilter]) -> SideQuery {
        SideQuery((!query.is_empty()).then(|| bind_query(state, query)))
    }

    pub fn matches(&self, state: &GridState, row: RowId) -> bool {
        match &self.0 {
            None => true,
            Some(Ok(filters)) => filters.iter().all(|f| f.test(&state.store, row)),
            Some(Err(_)) => false,
        }
    }
}
