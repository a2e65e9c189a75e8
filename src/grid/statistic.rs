//! Translation statistics of a view (`GET /v1/views/<id>/statistic`, the OpenAPI's
//! `ViewStatistic`): for each target language column, how many records and how many source
//! words are up to date, out of date or unset.
//!
//! Works on a copy of the branch's state (the caller reads it off the grid actor); knows
//! nothing of HTTP. Words are counted in the source cell of each record, as runs of
//! characters between Unicode white space (scripts written without spaces count a run as
//! one word).

use indexmap::IndexMap;
use serde::Serialize;
use utoipa::ToSchema;

use super::ops::GridState;
use super::schema::ColumnDef;
use super::store::RowId;
use super::value::{CellValue, DependencyStatus};

/// Counts by dependency status.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TranslationCount {
    pub all: u64,
    pub up_to_date: u64,
    pub out_of_date: u64,
    pub unset: u64,
}

impl TranslationCount {
    fn add(&mut self, status: DependencyStatus, n: u64) {
        self.all += n;
        match status {
            DependencyStatus::UpToDate => self.up_to_date += n,
            DependencyStatus::OutOfDate => self.out_of_date += n,
            DependencyStatus::Unset => self.unset += n,
        }
    }
}

/// The records and source words of one target column, by the target cells' status.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ColumnStatistic {
    pub record_count: TranslationCount,
    pub word_count: TranslationCount,
}

/// The statistic of a view: its records, and per target language column (by id) its counts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ViewStatistic {
    pub record_count: u64,
    #[schema(value_type = std::collections::HashMap<String, ColumnStatistic>)]
    pub translations: IndexMap<String, ColumnStatistic>,
}

/// The statistic of `rows` over `columns` (those that are dependency targets count).
pub fn view_statistic(state: &GridState, columns: &[ColumnDef], rows: &[RowId]) -> ViewStatistic {
    let mut statistic =
        ViewStatistic { record_count: rows.len() as u64, translations: IndexMap::new() };
    for column in columns {
        let Some(dependency) = state.schema.dependency_of_target(&column.id) else { continue };
        let (Some(&target), Some(&source)) =
            (state.slots.get(&column.id), state.slots.get(&dependency.source_column_id))
        else {
            continue;
        };
        let mut counts = ColumnStatistic::default();
        for &row in rows {
            let status = state.store.dependency_status(row, target);
            counts.record_count.add(status, 1);
            counts.word_count.add(status, words(&state.store.value(row, source)));
        }
        statistic.translations.insert(column.id.clone(), counts);
    }
    statistic
}

/// The words of a source cell: runs between white space.
fn words(value: &CellValue) -> u64 {
    match value {
        CellValue::Text(text) => text.split_whitespace().count() as u64,
        CellValue::Empty
        | CellValue::Number(_)
        | CellValue::Boolean(_)
        | CellValue::Datetime(_)
        | CellValue::List(_) => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_runs_between_white_space() {
        assert_eq!(words(&CellValue::Text("  Press  start\tto play\n".into())), 4);
        assert_eq!(words(&CellValue::Text("スタートを押す".into())), 1);
        assert_eq!(words(&CellValue::Empty), 0);
        assert_eq!(words(&CellValue::Number(3.0)), 0);
    }

    #[test]
    fn counts_add_up_by_status() {
        let mut count = TranslationCount::default();
        count.add(DependencyStatus::UpToDate, 3);
        count.add(DependencyStatus::OutOfDate, 2);
        count.add(DependencyStatus::Unset, 1);
        assert_eq!(count, TranslationCount { all: 6, up_to_date: 3, out_of_date: 2, unset: 1 });
    }
}
